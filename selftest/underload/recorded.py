"""A correctness-under-load run's JSON (reports/perf/<label>-correctness-c<C>.json, or a REAL recording of one)
read back into the probe samples the gates judge."""

from __future__ import annotations

from llmval.underload import ProbeAnswer, ProbeSample


def _answer(data: dict) -> ProbeAnswer:
    assert data["text_chars"] == len(data["text"])  # every recorded text is whole (under the 2,000-character cut)
    return ProbeAnswer(data["probe"], data["text"], data["is_valid"], data["is_correct"], data["judged"],
                       data["elapsed_s"], data["error"])


def recorded_samples(document: dict) -> list[ProbeSample]:
    return [ProbeSample(s["probe"], s["kind"], s["concurrency"], _answer(s["idle"]), _answer(s["loaded"]),
                        _answer(s["idle_after"]) if s["idle_after"] else None, in_flight=s["in_flight"],
                        load_failures=tuple(s["load_failures"]), engine_busy=s["engine_busy"])
            for s in document["samples"]]
