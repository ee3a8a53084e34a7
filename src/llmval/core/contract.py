"""How a broken contract is reported: one message shape for every check, with secrets removed."""

from __future__ import annotations

import base64
import functools
import json
import os
import re
import urllib.parse
from collections.abc import Iterable

# Values of these environment variables never appear in a message or report, whatever they hold.
SECRET_ENV_NAME_RE = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL)", re.I)
# Shapes of secrets that may arrive inside host or engine output. Each pattern can start only where its shape
# starts (a lookbehind, not `\b`, before a repeated class): a run of 64 KiB of '-' or of 'a.' is scanned once, not
# once from each of its characters (it was quadratic: 20,000 dashes took 10.7 s; 1 MiB of each worst case is timed
# by selftest/hostile/test_redaction_time.py).
SECRET_SHAPE_RES = (
    re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._~+/=-]{8,}"),
    re.compile(r"(?i)(authorization['\"]?\s*[:=]\s*['\"]?(?:basic|digest|token)?\s*)[^\s'\",}\]]{4,}"),
    # (but not a position the text names after such a word: bash's `/opt/x/refresh-token: line 542: ...`; nor a word
    # that only ends in one: SGLang's process title `sglang::detoken: allowed as ...`; a camelCase name, `authToken:`,
    # still is one)
    re.compile(r"((?:(?<![A-Za-z0-9])(?i:api[_-]?key|token|password|passwd|secret)"
               r"|(?<=[a-z0-9])(?:Api[_-]?[Kk]ey|API[_-]?KEY|Token|TOKEN|Password|PASSWORD|Passwd|Secret|SECRET))"
               r"\s*[=:]\s*['\"]?)(?!(?i:line|column|col|char|row|offset|position)\s+\d)[^\s'\",}]{4,}"),
    # vLLM's non-default args: 'api_key': ['sk-...'] (a list), and a dict repr 'api_key': 'sk-...'
    re.compile(r"(?i)(['\"](?:api[_-]?key|token|password|secret)['\"]\s*:\s*\[?\s*['\"])[^'\"]{4,}"),
    # a command line: --api-key X, --api-key=X, --hf-token X, --password X
    re.compile(r"(?i)((?<![\w-])--[a-z0-9-]*(?:api-key|token|password|passwd|secret)(?:=|\s+))(?!-)\S{4,}"),
    # URL userinfo: scheme://user:password@host, and scheme://:password@host (no user name)
    re.compile(r"(?i)((?<![a-z0-9+.-])[a-z][a-z0-9+.-]*://)[^\s/@:'\"]*:[^\s/@'\"]*(?=@)"),
    re.compile(r"\b(hf_)[A-Za-z0-9]{20,}"),
    re.compile(r"\b(sk-)[A-Za-z0-9_-]{16,}"),
)
# Lists of secrets: vLLM's --api-key takes several keys (nargs='+'), in its argv and in its non-default args log line.
# Each match runs to the list's end and never fails after it (no backtracking), and every item in it is redacted.
SECRET_LIST_RES = (
    (re.compile(r"(?i)((?<![\w-])['\"]api[_-]?keys?['\"]\s*:\s*\[)([^\]]*)"),
     re.compile(r"(?<=['\"])[^'\",\s][^'\"]{3,}")),
    (re.compile(r"(?i)((?<![\w-])--[a-z0-9-]*api-keys?(?:=|\s+))((?!-)\S+(?:\s+(?!-)\S+)*)"), re.compile(r"\S{4,}")),
)
REDACTED = "***"
MIN_SECRET_LENGTH = 8
"""The shortest secret an inventory may name (`*_env`): a shorter one cannot be told from ordinary text (a 3-letter
key would blank every word holding it), so it is refused at load (`secret_problems`)."""
FRAGMENT = 8
"""A cut (`text[:300]`) can leave a secret's start or end: any 8 characters that begin or end a registered secret
(in any of its encoded forms), and any 15 in a row of it, are redacted with the text around them that continues
the secret."""
_REGISTERED: set[str] = set()
"""Values registered by the run (the inventory's `*_env` secrets, llmval.core.contract.add_secrets): redact() cannot
be handed the inventory at every call site (launch logs, recordings, transports), so the run registers them once."""


def add_secrets(values: Iterable[str]) -> None:
    """Register secret values (the inventory's api_key_env / password_env values) for every later redact()."""
    _REGISTERED.update(v for v in values if v and len(v) >= 4)
    _fragment_forms.cache_clear()
    _redacted.cache_clear()


@functools.lru_cache(maxsize=1024)
def _encoded_forms(value: str) -> tuple[str, ...]:
    return tuple(_forms(value))


def encoded_forms(value: str) -> list[str]:
    """`value` as it may appear in a file: itself, URL-quoted, JSON-escaped, and the parts of its base64
    (standard and URL-safe, at each of the three alignments) that do not depend on the bytes around it."""
    return list(_encoded_forms(value))


def _forms(value: str) -> list[str]:
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
    return _secret_values(_env_secrets(), tuple(extra))


def _secret_values(env_values: tuple[str, ...], extra: tuple[str, ...]) -> list[str]:
    values = [*env_values, *(v for v in [*_REGISTERED, *extra] if v and len(v) >= 4)]
    return sorted(set(values), key=len, reverse=True)


def _env_secrets() -> tuple[str, ...]:
    """Secret-named environment variables' values, recomputed only when one of them changed: redact() runs for
    every verdict and report field, and decoding os.environ item by item each time cost a third of a 64-host smoke
    run (issue 24.7). Only the secret-named items are the cache key: pytest sets PYTEST_CURRENT_TEST at every
    test phase, which made a key of the whole environment miss once per phase. The secret-named keys themselves are
    found once per set of keys (`_secret_names`): testing every name on every call was 0.29 of 31 profiled seconds
    of a 256-host smoke's main thread (15,902 calls, issue 35)."""
    data = getattr(os.environ, "_data", None)  # the raw (bytes) mapping behind os.environ on POSIX
    if not isinstance(data, dict):
        data = dict(os.environ)
    return _env_secret_values(tuple((k, data[k]) for k in _secret_names(frozenset(data))))


@functools.lru_cache(maxsize=8)
def _secret_names(names: frozenset[str | bytes]) -> tuple[str | bytes, ...]:
    return tuple(sorted((n for n in names if _is_secret_name(n)), key=os.fsdecode))


@functools.lru_cache(maxsize=1024)
def _is_secret_name(name: str | bytes) -> bool:
    return SECRET_ENV_NAME_RE.search(os.fsdecode(name)) is not None


@functools.lru_cache(maxsize=8)
def _env_secret_values(items: tuple[tuple[str | bytes, str | bytes], ...]) -> tuple[str, ...]:
    decoded = ((os.fsdecode(k), os.fsdecode(v)) for k, v in items)
    return tuple(v for k, v in decoded if len(v) >= 4)


@functools.lru_cache(maxsize=64)
def _fragment_forms(extra: tuple[str, ...]) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """(form, offsets of its 8-character windows to look for) of every encoded form of the registered and
    given secrets: windows at 0, 8, 16, ... and the last one, so a prefix or suffix of 8 and any run of 15
    contains one."""
    forms = {form for value in {*_REGISTERED, *extra} if len(value) >= 4 for form in encoded_forms(value)}
    out = []
    for form in sorted(forms, key=len, reverse=True):
        if len(form) >= FRAGMENT:
            out.append((form, tuple(sorted({*range(0, len(form) - FRAGMENT + 1, FRAGMENT), len(form) - FRAGMENT}))))
    return tuple(out)


def _fragment_spans(text: str, extra: tuple[str, ...]) -> list[tuple[int, int]]:
    """Spans of `text` that continue an 8-character window of a secret's form as far as the form goes."""
    spans = []
    for form, offsets in _fragment_forms(extra):
        for offset in offsets:
            window = form[offset:offset + FRAGMENT]
            at = text.find(window)
            while at >= 0:
                start, end, left, right = at, at + FRAGMENT, offset, offset + FRAGMENT
                while start > 0 and left > 0 and text[start - 1] == form[left - 1]:
                    start, left = start - 1, left - 1
                while end < len(text) and right < len(form) and text[end] == form[right]:
                    end, right = end + 1, right + 1
                spans.append((start, end))
                at = text.find(window, at + 1)
    return spans


def redact(text: str, extra_secrets: Iterable[str] = ()) -> str:
    """Remove secret values (and their URL, JSON and base64 encodings), the fragments of the registered and given
    ones that a cut can leave (`FRAGMENT`), and secret-shaped substrings."""
    return _redacted(text, tuple(sorted({v for v in extra_secrets if v})), _env_secrets())


@functools.lru_cache(maxsize=8192)
def _redacted(text: str, extra: tuple[str, ...], env_values: tuple[str, ...]) -> str:
    """`redact`, remembered for the same text under the same secrets: a host smoke run redacts the same hints,
    expectations and skip reasons once per host (23,075 calls at 256 hosts, 4% of the main thread's samples).
    Its key is everything the result depends on: the text, the given secrets and the secret-named environment
    values (`env_values`); registering secrets (`add_secrets`) clears it."""
    for value in _secret_values(env_values, extra):
        for form in _encoded_forms(value):
            text = text.replace(form, REDACTED)
    spans = _fragment_spans(text, extra)
    if spans:
        merged: list[list[int]] = []
        for start, end in sorted(spans):
            if merged and start <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], end)
            else:
                merged.append([start, end])
        for start, end in reversed(merged):
            text = text[:start] + REDACTED + text[end:]
    for pattern in SECRET_SHAPE_RES:
        text = pattern.sub(lambda m: m.group(1) + REDACTED, text)
    for pattern, item in SECRET_LIST_RES:
        text = pattern.sub(lambda m, item=item: m.group(1) + item.sub(REDACTED, m.group(2)), text)
    return text


def shorten(value: object, limit: int = 400) -> str:
    """One-line-ish text of `value`, redacted, then cut to `limit` characters with the cut said (redacting first:
    a cut secret is no longer the secret `redact` looks for)."""
    return cut(redact(value if isinstance(value, str) else repr(value)), limit)


def cut(text: str, limit: int) -> str:
    """`text` cut to `limit` characters with the cut said; for text already redacted (a verdict's fields)."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [{len(text) - limit} more characters]"


def excerpt(text: str, limit: int = 300) -> str:
    """A server's or a command's words in a message: redacted, cut to `limit`, quoted (its repr)."""
    return repr(shorten(text, limit))


CONTROL_RE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
                        "\ud800-\udfff]")
"""Characters that act instead of showing: C0 controls but tab and newline (NUL, BEL, ESC, CR), DEL, C1 controls,
zero-width and bidirectional marks, line and paragraph separators; and lone surrogates (a server's JSON may hold
`\\ud800`), which no encoder writes."""


def visible(text: str) -> str:
    """`text` with every `CONTROL_RE` character written as its escape (ESC becomes the four characters `\\x1b`):
    what a server or host said can then neither move a terminal's cursor, ring its bell, reorder a line, nor end
    an XML or HTML file early. Tab and newline stay."""
    return CONTROL_RE.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


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
