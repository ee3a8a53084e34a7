"""Host command output is bounded as it is read (issue 45.2, `llmval.io.transport.MAX_OUTPUT_BYTES`/`_LINES`).

Before: a command printing 1.5 GB took 2,955 MiB RSS and ended in `MemoryError` (`communicate()` kept it all). Now
each stream keeps its first and last 8 MiB and 100,000 lines, with one line saying what was cut and how much was
printed. ssh, docker-over-ssh and pct are local `ssh` processes read by the same `run_local`, so one bound holds
for every transport.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from llmval.hostfacts import UNAME
from llmval.inventory import HostSpec
from llmval.inventory.hosts import LocalTransport
from llmval.io.transport import MAX_OUTPUT_BYTES, MAX_OUTPUT_LINES, _Kept, connect


def _fake_uname(tmp_path, body: str):
    fake = tmp_path / "uname"
    fake.write_text("#!/bin/sh\n" + body + "\n")
    fake.chmod(0o755)
    return connect(HostSpec(name="me", platform="p", transport=LocalTransport(path_prepend=[str(tmp_path)])))


def test_output_within_the_caps_is_kept_whole(tmp_path):
    conn = _fake_uname(tmp_path, "head -c 3000000 /dev/zero | tr '\\0' 'x'; echo; echo err >&2")
    result = conn.run(UNAME.render())
    assert result.rc == 0 and len(result.stdout) == 3_000_001 and result.stderr == "err\n"
    assert "llmval:" not in result.stdout


@pytest.mark.parametrize("stream", ["stdout", "stderr"])
def test_a_stream_over_the_bytes_cap_keeps_its_head_and_tail_and_says_it_was_cut(tmp_path, stream):
    redirect = "" if stream == "stdout" else " >&2"
    conn = _fake_uname(tmp_path, f"(echo FIRST; head -c 40000000 /dev/zero | tr '\\0' 'x'; echo; echo LAST){redirect}")
    result = conn.run(UNAME.render(), timeout_s=60)
    text = getattr(result, stream)
    assert result.rc == 0 and text.startswith("FIRST\n") and text.endswith("LAST\n")
    assert len(text) < MAX_OUTPUT_BYTES + 300
    assert f"bytes of this output cut here: it printed {40_000_000 + 12} bytes" in text, text[8 * 2**20 - 10:][:300]


def test_a_stream_over_the_lines_cap_keeps_its_first_and_last_lines(tmp_path):
    conn = _fake_uname(tmp_path, "seq 1 1000000")  # 6.9 MB: within the bytes, over the lines
    result = conn.run(UNAME.render(), timeout_s=60)
    head, _, tail = result.stdout.partition("\n[llmval: ")
    assert head.splitlines() == [str(n) for n in range(1, MAX_OUTPUT_LINES // 2 + 1)]
    assert tail.splitlines()[1:] == [str(n) for n in range(1_000_001 - MAX_OUTPUT_LINES // 2, 1_000_001)]
    assert "it printed 6888896 bytes" in tail.splitlines()[0]


def test_the_kept_stream_is_exact_at_the_caps():
    kept = _Kept()
    for _ in range(MAX_OUTPUT_BYTES // 2**16):
        kept.write(b"y" * 2**16)
    assert kept.value() == b"y" * MAX_OUTPUT_BYTES  # at the cap: whole
    kept.write(b"z")
    value = kept.value()
    half = MAX_OUTPUT_BYTES // 2
    assert value.startswith(b"y" * half) and value.endswith(b"y" * (half - 1) + b"z")
    assert b"[llmval: 1 bytes of this output cut here" in value


@pytest.mark.subprocess
@pytest.mark.slow
def test_a_command_printing_1_5_gb_stays_small_and_ends(tmp_path):
    """The issue's case, in a child whose peak RSS is its own: 1.5 GB printed, the run adds under 160 MiB to it."""
    script = textwrap.dedent(f"""
        import resource, time
        from llmval.hostfacts import UNAME
        from llmval.inventory import HostSpec
        from llmval.inventory.hosts import LocalTransport
        from llmval.io.transport import connect
        conn = connect(HostSpec(name="me", platform="p", transport=LocalTransport(path_prepend=[{str(tmp_path)!r}])))
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
        started = time.monotonic()
        result = conn.run(UNAME.render(), timeout_s=120)
        took = time.monotonic() - started
        print(result.rc, len(result.stdout), round(took, 1), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
              before)
        print(result.stdout[8 * 2**20:8 * 2**20 + 200])
    """)
    _fake_uname(tmp_path, "head -c 1500000000 /dev/zero | tr '\\0' 'x'")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    rc, kept, took, peak_mib, before_mib = done.stdout.split("\n")[0].split()
    print(f"1.5 GB printed: kept {kept} characters, {took} s, peak RSS {peak_mib} MiB ({before_mib} before it ran)")
    assert rc == "0" and int(kept) < MAX_OUTPUT_BYTES + 300 and int(peak_mib) - int(before_mib) < 160, done.stdout[:500]
    assert "it printed 1500000000 bytes" in done.stdout
