"""Redaction in linear time (issue 32.3), and the secret shapes it missed (issue 32.1).

`/health` answering 503 with 64 KiB of '-' hung a run past 120 s: the command-line pattern (`--...api-key...`)
started again at each dash and scanned the rest of the run (20,000 dashes: 10.7 s; 1 MiB would be hours), the
URL-userinfo pattern did the same on 'a.a.a.' (20,000 characters: 0.9 s). Each pattern now starts only where its
shape starts, so every worst case below is one scan: 1 MiB of each is timed.
"""

from __future__ import annotations

import time

import pytest

from llmval.core.contract import redact

MIB = 2**20
WORST = {
    "dashes": "-" * MIB,
    "dash-letter": "-a" * (MIB // 2),
    "option-runs": "--x" * (MIB // 3),
    "a.a.": "a." * (MIB // 2),
    "a.a.-then-scheme": "a." * (MIB // 2) + "://",
    "userinfo-colons": "http://" + "a:" * (MIB // 2),
    "schemes": "http://a" * (MIB // 8),
    "spaces-after-token": "token" + " " * MIB,
    "bearers": "bearer " * (MIB // 7),
    "api-key-options": "--api-key " * (MIB // 10),
    "api-key-lists": "'api_key': [" * (MIB // 12),
    "api-key-list-items": "'api_key': [" + "'abcdef', " * (MIB // 10),
}


@pytest.mark.parametrize("case", sorted(WORST))
def test_one_mib_of_each_worst_case_is_redacted_in_linear_time(case):
    text = WORST[case]
    started = time.process_time()
    redact(text)
    spent = time.process_time() - started
    assert spent < 3.0, f"{case}: {spent:.2f} s CPU for {len(text)} characters"  # linear: ~0.3 s here


@pytest.mark.parametrize(("said", "expected"), [
    ("vllm serve m --api-key K1first001 K2second02 K3third003 --port 8000",
     "vllm serve m --api-key *** *** *** --port 8000"),
    ("vllm serve m --api-key=K1first001 --port 8000", "vllm serve m --api-key=*** --port 8000"),
    ("non-default args: {'model': 'm', 'api_key': ['K1first001', 'K2second02'], 'port': 8000}",
     "non-default args: {'model': 'm', 'api_key': ['***', '***'], 'port': 8000}"),
    ("DATABASE_URL=postgresql://:pw-Secret9@db:5432/app", "DATABASE_URL=postgresql://***@db:5432/app"),
    ("https://user:pw-Secret9@host/x", "https://***@host/x"),
    ("http://10.1.2.3:8000/v1/models", "http://10.1.2.3:8000/v1/models"),
], ids=["argv-key-list", "argv-key-equals", "log-key-list", "userinfo-without-user", "userinfo", "no-userinfo"])
def test_every_key_of_a_list_and_userinfo_without_a_user_are_redacted(said, expected):
    assert redact(said) == expected
