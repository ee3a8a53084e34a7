"""Write the SYNTHESIZED kpro6 SGLang and Spark vLLM replays: the real smoke contract run against fake_sglang.py /
fake_vllm.py (built from engine.md, not from a server) with --record.
`python -m selftest.engines.synthesize` (about 10 s a variant)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VARIANTS = {"kpro6-sglang": ("kpro6", "sglang", ("healthy", "fp8-kv", "steps5", "flashinfer")),
            "spark-vllm": ("spark", "vllm", ("healthy", "glm"))}
README = """SYNTHESIZED replay (not a recording of a real server): the smoke serving contract of
inventories/{inventory}.toml run against selftest/engines/fake_{engine}.py variant `{variant}` ({engine} {version}
answers and startup log lines built from ../shared/reference/engine.md), written by
`python -m selftest.engines.synthesize`.
"""


def synthesize(name: str, variant: str) -> Path:
    from selftest.engines import fake_sglang, fake_vllm

    inventory, engine, _ = VARIANTS[name]
    version = {"sglang": fake_sglang.VERSION, "vllm": fake_vllm.VERSION}[engine]
    target = ROOT / "selftest" / "data" / "replays" / f"SYNTHESIZED-{name}-{variant}"
    target.mkdir(parents=True, exist_ok=True)
    for old in target.glob("*.jsonl"):
        old.unlink()
    reports = Path("/tmp") / f"llmval-synth-{name}-{variant}"
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                    "-p", "selftest.engines.synth_plugin", str(ROOT / "tests" / "serving"), "-m", "smoke",
                    "--inventory", str(ROOT / "inventories" / f"{inventory}.toml"), "--record", str(target),
                    "--reports", str(reports)], cwd=ROOT, check=False,
                   env={**os.environ, "LLMVAL_SYNTH_SGLANG_VARIANT": f"{engine}:{variant}"})
    for index, path in enumerate(sorted(target.glob("*-[0-9]*.jsonl"))):
        path.rename(target / f"{path.name.split('-')[0]}-synth{index}.jsonl")
    results = json.loads((reports / "results.json").read_text())
    (target / "results-synth.json").write_text(json.dumps(
        {t["nodeid"]: t["outcome"] for t in results["tests"]}, indent=1, sort_keys=True) + "\n")
    (target / "README.md").write_text(README.format(inventory=inventory, engine=engine, variant=variant,
                                                    version=version))
    return target


if __name__ == "__main__":
    for name, (_, _, variants) in VARIANTS.items():
        for variant in variants:
            print(synthesize(name, variant))
