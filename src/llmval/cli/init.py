"""`llmval init [DIR] --platform <engine kind>`: scaffold an ops repo that uses llmval.

Writes `inventory.toml` (a valid minimal inventory, every other key commented), `.github/workflows/llmval.yml`
(smoke on push, the full contract nightly, from a self-hosted runner) and `systemd/llmval-smoke@.{service,timer}`
(smoke after every boot, waiting for the stack with `--wait-ready`; template units whose instance is the repo's
path, so nothing of the writing machine is hard-coded). It never overwrites a file.

    >>> sorted(PLATFORMS)
    ['openai', 'sglang', 'vllm']
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from ..engines import ADAPTERS


@dataclass(frozen=True)
class Platform:
    engine: str
    base_url: str
    model: str


PLATFORMS: dict[str, Platform] = {kind: Platform(kind, f"http://127.0.0.1:{adapter.default_port}", "your-model")
                                  for kind, adapter in ADAPTERS.items()}
"""One per engine of the adapter registry, at the engine's default port."""

FILES: dict[str, str] = {
    "inventory.toml": "inventory.toml",
    ".github/workflows/llmval.yml": "workflow.yml",
    "systemd/llmval-smoke@.service": "llmval-smoke@.service",
    "systemd/llmval-smoke@.timer": "llmval-smoke@.timer",
}
"""Written path (relative to DIR) -> template (package data `llmval/templates/`)."""


class InitRefused(Exception):
    """`llmval init` would overwrite a file, or got a name it cannot use."""


def deployment_name(folder: Path) -> str:
    """The deployment's name from the folder's name, as the inventory allows it (`ops repo` -> `ops-repo`)."""
    name = re.sub(r"[^A-Za-z0-9_-]+", "-", folder.resolve().name).strip("-_")[:64]
    return name or "deployment"


def render(template: str, platform: str, folder: Path) -> str:
    """One template filled in (`$name`, `$engine`, `$model`, `$base_url`; GitHub's `${{ }}` kept). No absolute path
    of `folder` goes in: the files are committed and used on other machines."""
    chosen = PLATFORMS[platform]
    text = (resources.files("llmval") / "templates" / template).read_text(encoding="utf-8")
    return string.Template(text).safe_substitute(name=deployment_name(folder), engine=chosen.engine,
                                                 model=chosen.model, base_url=chosen.base_url)


def scaffold(folder: Path, platform: str) -> list[Path]:
    """Write the ops-repo files into `folder`; InitRefused (nothing written) if any of them exists."""
    if platform not in PLATFORMS:
        raise InitRefused(f"unknown platform {platform!r}; valid: {sorted(PLATFORMS)}")
    targets = {folder / rel: template for rel, template in FILES.items()}
    existing = [str(p) for p in targets if p.exists()]
    if existing:
        raise InitRefused(f"llmval init never overwrites: {', '.join(existing)} already exist(s)")
    for path, template in targets.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(render(template, platform, folder), encoding="utf-8")
    return list(targets)
