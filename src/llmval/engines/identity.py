"""Which model is served, from two kinds of source: the name it is served under, and the weights the engine loaded.

A served name is a label anyone can give (`--served-model-name qwen3.5-122b` over GLM-4.7-Flash's weights: the
Sparks' stale container behind the declared alias). So identity, like the KV dtype, is proven by independent
sources: the name (`/v1/models`; SGLang's `/server_info served_model_name`; vLLM's logged `served_model_name`) and the
weights' path (vLLM's `/v1/models root` and logged `model`; SGLang's `/server_info` and `/model_info` `model_path`).
Each adapter lists what its engine says (`EngineAdapter.model_evidence`); `contradictions` compares them:

- every name source serves the declared model;
- every path source names the same weights (one path, or a path and its tail: `/models/Qwen/Qwen3-8B` and
  `Qwen/Qwen3-8B`; a Hugging Face cache folder `models--Qwen--Qwen3-8B/snapshots/<hash>` reads `Qwen/Qwen3-8B`);
- the weights are those the inventory declares (`expect.model_path`), or, where it declares none, of no other model
  family than the served name (`MODEL_FAMILIES`: a name that says qwen over a path that says glm is a contradiction;
  a path that names no family, such as `/tmp/model`, contradicts nothing: declare `expect.model_path` to judge it).

    >>> name = ModelEvidence("/v1/models", served_names=("qwen3.5-122b",))
    >>> path = ModelEvidence("/server_info model_path", path="/models/zai-org/GLM-4.7-Flash")
    >>> contradictions("qwen3.5-122b", None, [name, path])
    ["/server_info model_path loaded '/models/zai-org/GLM-4.7-Flash' (glm), not the served name 'qwen3.5-122b' (qwen)"]
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class ModelEvidence:
    """One source's word on the model served: the names it serves under and/or the weights' path it loaded."""

    source: str
    served_names: tuple[str, ...] = ()
    path: str | None = None
    quote: str = ""


MODEL_FAMILIES: dict[str, str] = {
    "qwen": "qwen", "qwq": "qwen", "glm": "glm", "chatglm": "glm", "llama": "llama", "mistral": "mistral",
    "mixtral": "mistral", "ministral": "mistral", "magistral": "mistral", "devstral": "mistral",
    "codestral": "mistral", "pixtral": "mistral", "gemma": "gemma", "phi": "phi", "deepseek": "deepseek",
    "smollm": "smollm", "gpt": "gpt", "kimi": "kimi", "minimax": "minimax", "falcon": "falcon", "granite": "granite",
    "olmo": "olmo", "internlm": "internlm", "baichuan": "baichuan", "nemotron": "nemotron", "exaone": "exaone",
    "ernie": "ernie", "hunyuan": "hunyuan", "starcoder": "starcoder", "jamba": "jamba", "dbrx": "dbrx",
    "c4ai": "cohere", "aya": "cohere", "bloom": "bloom", "yi": "yi",
}
"""A word (or the start of one) in a model's name -> its family. Short ones (<= 3 letters: glm, phi, gpt, yi, aya)
must start a word (`glm-4.7`, `phi3`); longer ones may sit inside one (`codellama`, `tinyllama`)."""

_WORD_RE = re.compile(r"[a-z0-9]+")


def families(text: str) -> set[str]:
    """The model families `text` (a served name or a path) names.

    >>> sorted(families("/models/meta-llama/Llama-3.1-8B")), sorted(families("/tmp/model"))
    (['llama'], [])
    """
    words = _WORD_RE.findall(text.lower())
    return {family for key, family in MODEL_FAMILIES.items()
            if any(w.startswith(key) if len(key) <= 3 else key in w for w in words)}


def path_parts(path: str) -> tuple[str, ...]:
    """A weights' path as comparable components, lowercased: `.` dropped, `..` taken back, a Hugging Face cache
    folder read as its repository id (`.../models--Qwen--Qwen3-8B/snapshots/ab12` -> `qwen/qwen3-8b`)."""
    parts: list[str] = []
    for part in path.strip().lower().replace("\\", "/").split("/"):
        if part == "..":  # `/models/Qwen/Qwen3-8B/../../zai-org/GLM-4.7-Flash` is GLM's folder, whatever it passed
            if parts:
                parts.pop()
        elif part not in ("", "."):
            parts.append(part)
    for part in parts:
        if part.startswith("models--"):
            return tuple(p for p in part.removeprefix("models--").split("--") if p)
    return tuple(parts)


def same_weights(a: str, b: str) -> bool:
    """One path is the other, or its tail (`/models/Qwen/Qwen3-8B` and `Qwen/Qwen3-8B`)."""
    x, y = path_parts(a), path_parts(b)
    if not x or not y:
        return False
    short, long = sorted((x, y), key=len)
    return long[len(long) - len(short):] == short


def contradictions(model: str, declared_path: str | None, evidence: list[ModelEvidence],
                   aliases: tuple[str, ...] | list[str] = ()) -> list[str]:
    """What the sources say against each other or against the inventory (`model`: the declared served name,
    `aliases`: its other served names, `declared_path`: its declared weights, or None); [] when they agree."""
    found: list[str] = []
    names = {model, *aliases}
    for e in evidence:
        if e.served_names and not names & set(e.served_names):
            found.append(f"{e.source} serves {list(e.served_names)}, not the declared {model!r}")
    paths = [e for e in evidence if e.path]
    for i, e in enumerate(paths):
        for other in paths[:i]:
            if not same_weights(e.path or "", other.path or ""):
                found.append(f"{e.source} loaded {e.path!r} but {other.source} {other.path!r}")
    for e in paths:
        if declared_path is not None:
            if not same_weights(e.path or "", declared_path):
                found.append(f"{e.source} loaded {e.path!r}, not the declared model_path {declared_path!r}")
            continue
        named, loaded = families(model), families("/".join(path_parts(e.path or "")))
        if named and loaded and not named & loaded:
            found.append(f"{e.source} loaded {e.path!r} ({', '.join(sorted(loaded))}), not the served name "
                         f"{model!r} ({', '.join(sorted(named))})")
    return list(dict.fromkeys(found))
