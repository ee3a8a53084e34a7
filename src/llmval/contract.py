"""How a broken contract is reported: one message shape for every check, with secrets removed."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

# Values of these environment variables never appear in a message or report, whatever they hold.
SECRET_ENV_NAME_RE = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL)", re.I)
# Shapes of secrets that may arrive inside host or engine output.
SECRET_SHAPE_RES = (
    re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._~+/=-]{8,}"),
    re.compile(r"(?i)((?:api[_-]?key|token|password|passwd|secret)\s*[=:]\s*['\"]?)[^\s'\",}]{4,}"),
    re.compile(r"\b(hf_)[A-Za-z0-9]{20,}"),
    re.compile(r"\b(sk-)[A-Za-z0-9_-]{16,}"),
)
REDACTED = "***"


def secret_values(extra: Iterable[str] = ()) -> list[str]:
    """Values to scrub: secret-named environment variables plus any given explicitly."""
    values = [v for k, v in os.environ.items() if SECRET_ENV_NAME_RE.search(k) and len(v) >= 4]
    values += [v for v in extra if v and len(v) >= 4]
    return sorted(set(values), key=len, reverse=True)


def redact(text: str, extra_secrets: Iterable[str] = ()) -> str:
    """Remove secret values and secret-shaped substrings from `text`."""
    for value in secret_values(extra_secrets):
        text = text.replace(value, REDACTED)
    for pattern in SECRET_SHAPE_RES:
        text = pattern.sub(lambda m: m.group(1) + REDACTED, text)
    return text


def shorten(value: object, limit: int = 400) -> str:
    """One-line-ish text of `value`, cut to `limit` characters with the cut said."""
    text = value if isinstance(value, str) else repr(value)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [{len(text) - limit} more characters]"


def mismatch(
    host: str,
    check: str,
    expected: object,
    observed: object,
    *,
    hint: str = "",
    evidence: str = "",
) -> str:
    """The failure message of a broken contract: host, check, expected, observed, hint, evidence.

    >>> print(mismatch("kpro6-ct129", "hosts.gpu.count", 4, 3, hint="nvidia-smi -L"))
    [kpro6-ct129] hosts.gpu.count
      expected: 4
      observed: 3
      hint: nvidia-smi -L
    """
    lines = [f"[{host}] {check}", f"  expected: {shorten(expected)}", f"  observed: {shorten(observed)}"]
    if hint:
        lines.append(f"  hint: {hint}")
    if evidence:
        lines.append(f"  evidence: {shorten(evidence, 800)}")
    return redact("\n".join(lines))
