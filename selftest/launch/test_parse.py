"""Parsers of the launch sequence: alive Ray nodes across `ray status` versions, idle GPUs, the error line."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from llmval.core.errors import ParseError
from llmval.launch import error_line, parse_gpu_memory_used_mib, parse_ray_alive_nodes

# Ray >= 2.8 layout: the real 2-node output quoted in /work/shared/reference/infra.md §6.1 (public code hit).
RAY_ACTIVE = """======== Autoscaler status: 2026-02-24 08:04:03.547705 ========
Node status
---------------------------------------------------------------
Active:
 1 node_32769bb197cd085bf0cef7dbd30da9efb95b13a065da6b91a75f6e18
 1 node_7cae9434ee30d1fcb0aefdf27b18659ef9713160666974e5818e28a0
Pending:
 (no pending nodes)
Recent failures:
 (no failures)

Resources
---------------------------------------------------------------
Total Usage:
 0.0/576.0 CPU
 0.0/8.0 GPU
"""
# Older layout (`Healthy:`), SYNTHESIZED from format_info_string in python/ray/autoscaler/_private/util.py.
RAY_HEALTHY_OLD = """======== Autoscaler status: 2023-05-01 10:00:00.000000 ========
Node status
---------------------------------------------------------------
Healthy:
 1 node_aaaa
Pending:
 (no pending nodes)
Recent failures:
 1 node_bbbb
"""


@pytest.mark.parametrize(("text", "alive"), [(RAY_ACTIVE, 2), (RAY_HEALTHY_OLD, 1),
                                             (RAY_ACTIVE.replace("Active:", "Idle:"), 2)],
                         ids=["active", "healthy-old", "idle"])
def test_ray_alive_nodes_counts_only_live_sections(text, alive):
    assert parse_ray_alive_nodes(text) == alive


def test_ray_status_without_a_node_section_is_a_parse_error():
    with pytest.raises(ParseError, match="ray status"):
        parse_ray_alive_nodes("ConnectionError: Could not find any running Ray instance.")


@given(st.dictionaries(st.integers(0, 7), st.integers(0, 200_000), min_size=1))
def test_gpu_memory_rows_roundtrip(used):
    text = "".join(f"{i}, {mib}\n" for i, mib in used.items())
    assert parse_gpu_memory_used_mib(text) == used


def test_gpu_memory_not_reported_is_none_and_garbage_is_an_error():
    assert parse_gpu_memory_used_mib("0, [N/A]\n") == {0: None}
    with pytest.raises(ParseError):
        parse_gpu_memory_used_mib("No devices were found\n")


def test_error_line_is_the_last_line_that_reads_like_an_error():
    tail = "INFO loading\nValueError: bad\nINFO retrying\nRuntimeError: Engine core initialization failed\nbye"
    assert error_line(tail) == "RuntimeError: Engine core initialization failed"
    assert error_line("INFO all good") == ""
