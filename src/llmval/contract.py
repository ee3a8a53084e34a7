"""How a broken contract is reported: one message shape for every check, with secrets removed."""

from __future__ import annotations

import base64
import json
import os
import re
import urllib.parse
from collections.abc import Iterable

# Values of these environment variables never appear in a message or report, whatever they hold.
SECRET_ENV_NAME_RE = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL)", re.I)
# Shapes of secrets that may arrive inside host or engine output.
SECRET_SHAPE_RES = (
    re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._~+/=-]{8,}"),
    re.compile(r"(?i)(authorization['\"]?\s*[:=]\s*['\"]?(?:basic|digest|token)?\s*)[^\s'\",}\]]{4,}"),
    # (but not a position the text names after such a word: bash's `/opt/x/refresh-token: line 542: ...`)
    re.compile(r"(?i)((?:api[_-]?key|token|password|passwd|secret)\s*[=:]\s*['\"]?)"
               r"(?!(?:line|column|col|char|row|offset|position)\s+\d)[^\s'\",}]{4,}"),
    # vLLM's non-default args: 'api_key': ['sk-...'] (a list), and a dict repr 'api_key': 'sk-...'
    re.compile(r"(?i)(['\"](?:api[_-]?key|token|password|secret)['\"]\s*:\s*\[?\s*['\"])[^'\"]{4,}"),
    # a command line: --api-key X, --api-key=X, --hf-token X, --password X
    re.compile(r"(?i)(--[a-z0-9-]*(?:api-key|token|password|passwd|secret)(?:=|\s+))(?!-)\S{4,}"),
    # URL userinfo: scheme://user:password@host
    re.compile(r"(?i)(\b[a-z][a-z0-9+.-]*://)[^\s/@:'\"]+:[^\s/@'\"]*(?=@)"),
    re.compile(r"\b(hf_)[A-Za-z0-9]{20,}"),
    re.compile(r"\b(sk-)[A-Za-z0-9_-]{16,}"),
)
REDACTED = "***"
_REGISTERED: set[str] = set()
"""Values registered by the run (the inventory's `*_env` secrets, llmval.contract.add_secrets): redact() cannot
be handed the inventory at every call site (launch logs, recordings, transports), so the run registers them once."""


def add_secrets(values: Iterable[str]) -> None:
    """Register secret values (the inventory's api_key_env / password_env values) for every later redact()."""
    _REGISTERED.update(v for v in values if v and len(v) >= 4)


def encoded_forms(value: str) -> list[str]:
    """`value` as it may appear in a file: itself, URL-quoted, JSON-escaped, and the parts of its base64
    (standard and URL-safe, at each of the three alignments) that do not depend on the bytes around it."""
    raw = value.encode("utf-8")
    forms = {value, urllib.parse.quote(value, safe=""), json.dumps(value)[1:-1]}
    for shift in range(3):
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            encoded = encode(b"\0" * shift + raw).decode("ascii")
            start, end = (0, 2, 3)[shift], 4 * ((len(raw) + shift) // 3)
            if end - start >= 8:
                forms.add(encoded[start:end])
    return sorted(forms, key=len, reverse=True)


def secret_values(extra: Iterable[str] = ()) -> list[str]:
    """Values to scrub: secret-named environment variables, registered secrets, plus any given explicitly."""
    values = [v for k, v in os.environ.items() if SECRET_ENV_NAME_RE.search(k) and len(v) >= 4]
    values += [v for v in [*_REGISTERED, *extra] if v and len(v) >= 4]
    return sorted(set(values), key=len, reverse=True)


def redact(text: str, extra_secrets: Iterable[str] = ()) -> str:
    """Remove secret values (and their URL, JSON and base64 encodings) and secret-shaped substrings."""
    for value in secret_values(extra_secrets):
        for form in encoded_forms(value):
            text = text.replace(form, REDACTED)
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
