#!/bin/bash
# scripts/gpu/build_bundle.sh [OUTDIR] [PART]: build the bundle setup.sh installs on the lent H200 (Python 3.12,
# torch 2.11.0+cu130, transformers 5.17, no network). Run it where pip reaches the package index (any x86-64 Linux,
# any Python >= 3.8 with pip, zstd, split): nothing is compiled, the cp312 wheels are only downloaded and unpacked.
#   - vLLM 0.24.0 (the last release pinned to torch==2.11.0), stripped of its FA2 kernels (FA3 serves Hopper), the
#     Rust frontend, DeepGEMM's builds for other Pythons and the CUDA headers (340 MB -> 148 MB zstd), as one tar.zst;
#   - the wheels in deps-pins.txt (what the serving path imports and the image lacks, SmolLM2's GGUF among them);
# then splits it all into OUTDIR/.dv1..N/bundle.part?? of PART (default 40M): one part plus the tree that travels
# with each command must stay under 64 MiB. OUTDIR defaults to this checkout's root, the folder that travels with
# every device command (its .dv* folders are what `carry` names; keep them out of git, e.g. in .git/info/exclude).
# The suite is not in the bundle: setup.sh installs the checkout that travels (install_suite.sh).
# Adapted from ../shared/gpu-kit/build_bundle.sh (measured there); this one travels with the checkout.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$(cd "$here/../.." && pwd)}; part=${2:-40M}
w=$(mktemp -d); trap 'rm -rf "$w"' EXIT
plat="--only-binary=:all: --python-version 3.12 --implementation cp --abi cp312 --abi abi3 --abi none"
for n in 31 28 27 26 17 5; do plat="$plat --platform manylinux_2_${n}_x86_64"; done
plat="$plat --platform manylinux2014_x86_64 --platform manylinux1_x86_64"
pins=$(grep -v '^\s*#' "$here/deps-pins.txt" | grep -v '^\s*$')
python3 -m pip download -q --no-deps $plat -d "$w/v" vllm==0.24.0
mkdir -p "$w/bundle/whl" "$w/x" && (cd "$w/x" && python3 -m zipfile -e "$w"/v/vllm-*.whl .)
rm -f "$w/x/vllm/vllm_flash_attn/_vllm_fa2_C.abi3.so" "$w/x/vllm/vllm-rs" "$w"/x/vllm/third_party/deep_gemm/_C.cpython-31[0134]-*.so
find "$w/x/vllm/third_party" \( -name '*.hpp' -o -name '*.h' -o -name '*.cuh' -o -name '*.cu' -o -name '*.inl' \
  -o -name '*.cpp' \) -delete
tar cf - -C "$w/x" vllm vllm-0.24.0.dist-info | zstd -q -T2 -12 -o "$w/bundle/vllm024.tar.zst"
python3 -m pip download -q --no-deps $plat -d "$w/bundle/whl" $pins
tar cf "$w/bundle.tar" -C "$w" bundle && (cd "$w" && split -b "$part" -a 2 bundle.tar bundle.part)
mkdir -p "$out"; rm -rf "$out"/.dv[0-9]*
i=1; for p in "$w"/bundle.part*; do mkdir -p "$out/.dv$i"; mv "$p" "$out/.dv$i/"; i=$((i+1)); done
echo "[build] bundle.tar md5 $(md5sum < "$w/bundle.tar" | cut -d' ' -f1), $(( $(stat -c %s "$w/bundle.tar") / 1048576 )) MiB in $((i-1)) parts:"
ls -l "$out"/.dv*/
