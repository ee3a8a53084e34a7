"""The transcript builder: deterministic from its seed, one needle where asked, distractors present once."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from hypothesis import example, given, note
from hypothesis import strategies as st

from llmval.agentic.transcript import NEEDLE_KINDS, build_transcript, occurrences

seeds = st.integers(min_value=0, max_value=2**63)
kinds = st.sampled_from(NEEDLE_KINDS)
depths = st.floats(min_value=0, max_value=1, allow_nan=False)


@st.composite
def prefix_sizes(draw) -> tuple[int, int]:
    """(stream steps, steps used): a prompt uses a prefix of the filler stream."""
    stream = draw(st.integers(min_value=0, max_value=40))
    return stream, draw(st.integers(min_value=0, max_value=stream))


@given(seeds, kinds, depths, prefix_sizes())
@example(0, "config", 0.0, (0, 0)).via("no filler at all")
@example(0, "signature", 1.0, (10, 10)).via("needle after the last step")
def test_value_and_each_distractor_occur_exactly_once(seed, kind, depth, sizes):
    stream, n = sizes
    transcript = build_transcript(seed, kind, depth, stream)
    messages = transcript.messages(n)
    needle = transcript.needle
    note(f"value={needle.value!r} distractors={needle.distractors!r}")
    assert occurrences(messages, needle.value) == 1
    assert [occurrences(messages, d) for d in needle.distractors] == [1, 1]
    assert needle.value not in needle.distractors and len(set(needle.distractors)) == 2


@given(seeds, kinds, depths, prefix_sizes())
def test_needle_step_sits_at_the_step_nearest_its_depth(seed, kind, depth, sizes):
    stream, n = sizes
    transcript = build_transcript(seed, kind, depth, stream)
    order = transcript.ordered_steps(n)
    fillers_before = [role for role, _ in order[:[r for r, _ in order].index("needle")]].count("filler")
    assert fillers_before == round(depth * n)
    assert len(order) == n + 3 and [r for r, _ in order].count("filler") == n


@given(seeds, kinds, depths, prefix_sizes())
def test_a_shorter_prompt_is_a_prefix_of_the_stream(seed, kind, depth, sizes):
    stream, n = sizes
    transcript = build_transcript(seed, kind, depth, stream)
    fillers = [step for role, step in transcript.ordered_steps(n) if role == "filler"]
    assert fillers == list(transcript.steps[:n])
    assert transcript.messages(n)[-1] == {"role": "user", "content": transcript.needle.question}


@given(seeds, kinds)
def test_every_prior_call_is_answered_by_its_tool_result(seed, kind):
    messages = build_transcript(seed, kind, 0.5, 12).messages(12)
    calls = [m["tool_calls"][0] for m in messages if m["role"] == "assistant"]
    results = [m for m in messages if m["role"] == "tool"]
    assert [c["id"] for c in calls] == [r["tool_call_id"] for r in results]
    assert all(json.loads(c["function"]["arguments"]) for c in calls)
    assert all(isinstance(m["content"], str) for m in messages)  # plain templates concatenate content


@pytest.mark.subprocess
def test_same_seed_gives_byte_identical_messages_in_a_fresh_process():
    code = ("import json; from llmval.agentic.transcript import build_transcript as b; "
            "print(json.dumps([b(11, k, 0.3, 25).messages(20) for k in ('config', 'signature', 'error_code')]))")
    fresh = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env={"PYTHONHASHSEED": "12345"}).stdout
    here = json.dumps([build_transcript(11, k, 0.3, 25).messages(20) for k in ("config", "signature", "error_code")])
    assert fresh.strip() == here


def test_the_question_names_the_source_but_not_the_value():
    for kind in NEEDLE_KINDS:
        needle = build_transcript(5, kind, 0.5, 0).needle
        assert needle.source in needle.question
        assert needle.value not in needle.question
        assert needle.tool_name in needle.question


def test_agentic_exports_are_curated_and_sorted():
    import llmval.agentic as agentic

    public = sorted(n for n in vars(agentic) if not n.startswith("_") and n not in {
        "annotations", "grid", "kind", "runner", "scorer", "transcript"})
    assert sorted(agentic.__all__) == public and len(set(agentic.__all__)) == len(public)  # order: ruff RUF022
