"""Write the SYNTHESIZED kpro6 SGLang replays: the real smoke contract run against fake_sglang.py (built from
engine.md, not from a server) with --record.  `python -m selftest.engines.synthesize` (about 10 s a variant)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VARIANTS = ("healthy", "fp8-kv", "steps5", "flashinfer")
README = """SYNTHESIZED replay (not a recording of a real server): the smoke serving contract of inventories/kpro6.toml
run against selftest/engines/fake_sglang.py variant `{variant}` (SGLang {version} /server_info, /v1/models, /metrics
and journal lines built from ../shared/reference/engine.md §1), written by `python -m selftest.engines.synthesize`.
"""


def synthesize(variant: str) -> Path:
    from selftest.engines.fake_sglang import VERSION

    target = ROOT / "selftest" / "data" / "replays" / f"SYNTHESIZED-kpro6-sglang-{variant}"
    target.mkdir(parents=True, exist_ok=True)
    for old in target.glob("*.jsonl"):
        old.unlink()
    reports = Path("/tmp") / f"llmval-synth-{variant}"
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                    "-p", "selftest.engines.synth_plugin", str(ROOT / "tests" / "serving"), "-m", "smoke",
                    "--inventory", str(ROOT / "inventories" / "kpro6.toml"), "--record", str(target),
                    "--reports", str(reports)], cwd=ROOT, check=False,
                   env={**os.environ, "LLMVAL_SYNTH_SGLANG_VARIANT": variant})
    for index, path in enumerate(sorted(target.glob("*-[0-9]*.jsonl"))):
        path.rename(target / f"{path.name.split('-')[0]}-synth{index}.jsonl")
    results = json.loads((reports / "results.json").read_text())
    (target / "results-synth.json").write_text(json.dumps(
        {t["nodeid"]: t["outcome"] for t in results["tests"]}, indent=1, sort_keys=True) + "\n")
    (target / "README.md").write_text(README.format(variant=variant, version=VERSION))
    return target


if __name__ == "__main__":
    for name in sys.argv[1:] or VARIANTS:
        print(synthesize(name))
