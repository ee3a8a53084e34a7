#!/bin/bash
# scripts/gpu/ray/build_bundle.sh OUTDIR [PART]: the Ray bundle for the lent H200 (Python 3.12, no network), built
# where pip reaches the package index: the cp312/manylinux wheels of ray-pins.txt (Ray 2.60.0 and what its
# dashboard needs that the image lacks, ~90 MB), as one tar split into OUTDIR/.ry1..N/ray.part?? of PART (default
# 30M: a part plus the checkout, ~27 MiB, must stay under the 64 MiB a device command carries). It travels after
# the vLLM kit's parts (README.md: the batch); setup.sh installs it into /tmp/raysite.
set -euo pipefail
out=${1:?usage: build_bundle.sh OUTDIR [PART]}; part=${2:-30M}; here=$(cd "$(dirname "$0")" && pwd)
w=$(mktemp -d); trap 'rm -rf "$w"' EXIT
plat="--only-binary=:all: --python-version 3.12 --implementation cp --abi cp312 --abi abi3 --abi none"
for n in 28 17 5; do plat="$plat --platform manylinux_2_${n}_x86_64"; done
plat="$plat --platform manylinux2014_x86_64 --platform manylinux1_x86_64"
mkdir -p "$w/ray/whl"
python3 -m pip download -q --no-deps $plat -d "$w/ray/whl" $(grep -v '^\s*#' "$here/ray-pins.txt" | grep -v '^\s*$')
(cd "$w/ray/whl" && ls -la *.whl | awk '{s+=$5; print $5, $9} END {print s, "bytes in all"}') > "$w/ray/SIZES.txt"
tar cf "$w/ray.tar" -C "$w" ray && (cd "$w" && split -b "$part" -a 2 ray.tar ray.part)
rm -rf "$out"/.ry[0-9]*
i=1; for p in "$w"/ray.part*; do mkdir -p "$out/.ry$i"; mv "$p" "$out/.ry$i/"; i=$((i+1)); done
cat "$w/ray/SIZES.txt" | tail -1; md5sum "$w/ray.tar"; ls -d "$out"/.ry*
