"""The owners' workload as load: agent sessions whose context grows turn by turn on a shared prefix.

A session replays one seeded agent transcript (`llmval.agentic.build_transcript`, the transcripts of the agentic
grid): turn 1 sends the system prompt, the agent's tools and the task; each later turn sends all of that plus the
transcript's next prior step (the assistant's tool call and the tool's result), as an agent client does after each
tool result. So every turn's prompt extends the previous turn's prompt, and every session starts with the same
system prompt and tools: the prefix cache can serve the earlier turns of a session and the shared start across
sessions. What the model answers is not fed back: the next turn appends the transcript's recorded step, so every
run sends the same conversations and the context grows by known steps. One run nonce opens the system prompt, so a
run never hits what an earlier run left in the cache.

`concurrency` sessions run at once (closed loop: a session keeps its slot for all its turns, `think_s` apart);
the turns stream `/v1/chat/completions` over the wire client, timed as every perf request (`_request`: TTFT at the
first chunk with choices, tokens from `usage`). A session ends early when its next prompt would pass
`max_context_tokens` (estimated from this turn's tokens per character). Around the window the engine's counters
give the prefix-cache hit rate (the adapter's `prefix_cache_hits`: vLLM Δhits/Δqueries, in tokens), and the
sampler (`_sampler`) records queue, KV usage and preemptions through it. `AgenticRun` reports TTFT against
context length (prompt tokens from `usage`, in power-of-two buckets) and against the turn, goodput under the
SLOs (`_rate.Slo`), and `reusable_share`: the share of prompt tokens a session had already sent in its previous
turn (what a perfect per-session cache would hit, before block rounding and without the shared start).

    run = await run_agentic(client, streamer, AgenticProfile(model="smollm2", sessions=4, turns=6, concurrency=2,
                                                             output_len=16), endpoint="local-vllm", engine=VllmAdapter)
    run.cache_hits.rate, run.by_context(), run.goodput(Slo(ttft_ms=1500))
"""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field, replace

import httpx

from ..agentic.transcript import AGENT_TOOLS, NEEDLE_KINDS, build_transcript
from ..engines import EngineAdapter
from ..engines.base import CacheHits
from ._engine import read_counters
from ._rate import Goodput, Slo
from ._request import Clock, RequestRecord, WireClient, unverified_counts
from ._sampler import EngineSamples, MetricsSampler
from ._stats import percentile

CHAT_PATH = "/v1/chat/completions"
NONCE_LINE = "Agent run {nonce}."


@dataclass(frozen=True)
class AgenticProfile:
    """The shape of an agentic load run; equal profiles are comparable runs."""

    model: str
    sessions: int
    turns: int
    """Turns per session (turn 1: the task alone; turn k: the task and k - 1 prior steps)."""
    concurrency: int
    """Sessions in flight at once."""
    output_len: int = 32
    think_s: float = 0.0
    """Pause between a turn's answer and the session's next turn (the tool running)."""
    seed: int = 0
    temperature: float = 0.0
    ignore_eos: bool = True
    tools: bool = True
    """Send the agent's tool definitions (`tool_choice="auto"`), as the owners' agents do."""
    max_context_tokens: int | None = None
    """End a session before a turn whose prompt would pass this many tokens (None: every turn is sent)."""

    def key(self) -> str:
        return (f"agentic-s{self.sessions}-t{self.turns}-c{self.concurrency}-out{self.output_len}"
                f"-think{self.think_s:g}-seed{self.seed}")


@dataclass(frozen=True)
class Session:
    """One agent session: the shared system prompt, its task, and the prior steps its turns add one by one."""

    index: int
    system: str
    task: str
    steps: tuple[list[dict], ...]
    """Per step, the messages it adds (an assistant tool call and the tool's result)."""

    def messages(self, turn: int) -> list[dict]:
        """The chat messages of turn `turn` (1-based): the task and the first `turn - 1` steps."""
        out = [{"role": "system", "content": self.system}, {"role": "user", "content": self.task}]
        for step in self.steps[:turn - 1]:
            out += step
        return out


def build_sessions(profile: AgenticProfile, nonce: str) -> list[Session]:
    """The run's sessions, from seeds `profile.seed + i`; every one opens with session 0's system prompt behind
    the run's nonce (the shared prefix), then its own task and steps."""
    sessions = []
    system = ""
    for i in range(profile.sessions):
        transcript = build_transcript(profile.seed + i, NEEDLE_KINDS[i % len(NEEDLE_KINDS)], depth=0.5,
                                      stream_steps=max(profile.turns, 1))
        if i == 0:
            system = f"{NONCE_LINE.format(nonce=nonce)} {transcript.system}"
        steps = tuple(step.messages(f"call_{i:03d}_{k:03d}")
                      for k, (_, step) in enumerate(transcript.ordered_steps(max(profile.turns, 1))))
        sessions.append(Session(i, system, transcript.task, steps[:max(profile.turns - 1, 0)]))
    return sessions


def chat_payload(profile: AgenticProfile, messages: list[dict], *, ignore_eos: bool) -> bytes:
    """The streamed chat request of one turn (usage asked for, temperature pinned)."""
    body: dict = {"model": profile.model, "messages": messages, "max_tokens": profile.output_len,
                  "temperature": profile.temperature, "stream": True, "stream_options": {"include_usage": True}}
    if profile.tools:
        body["tools"] = list(AGENT_TOOLS)
        body["tool_choice"] = "auto"
    if ignore_eos:
        body["ignore_eos"] = True
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()


@dataclass
class Turn:
    """One measured turn of one session."""

    session: int
    turn: int
    prompt_chars: int
    record: RequestRecord


def context_bucket(tokens: int) -> str:
    """The power-of-two bucket of a prompt length: `0-511` for under 512, then `512-1023`, `1024-2047`, ..."""
    low = 512
    if tokens < low:
        return f"0-{low - 1}"
    while tokens >= low * 2:
        low *= 2
    return f"{low}-{low * 2 - 1}"


def _ms(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"median": None, "p90": None, "p99": None}
    ms = [v * 1000 for v in values]
    return {"median": round(percentile(ms, 50), 2), "p90": round(percentile(ms, 90), 2),
            "p99": round(percentile(ms, 99), 2)}


@dataclass
class AgenticRun:
    """A finished agentic run: every turn, the window's prefix-cache hits and engine samples."""

    endpoint: str
    profile: AgenticProfile
    nonce: str
    turns: list[Turn]
    duration_s: float
    cache_hits: CacheHits | None = None
    engine_samples: EngineSamples | None = None
    warmup_errors: list[str] = field(default_factory=list)

    @property
    def failed(self) -> list[Turn]:
        return [t for t in self.turns if not t.record.success]

    @property
    def completed(self) -> list[Turn]:
        return [t for t in self.turns if t.record.success]

    @property
    def reusable_share(self) -> float | None:
        """Σ previous turn's prompt tokens / Σ prompt tokens over the completed turns of each session: the
        share a perfect per-session cache would serve (block rounding and the shared start aside)."""
        by_session: dict[int, dict[int, int]] = {}
        for t in self.completed:
            if t.record.prompt_tokens:
                by_session.setdefault(t.session, {})[t.turn] = t.record.prompt_tokens
        total = sum(n for turns in by_session.values() for n in turns.values())
        seen = sum(turns.get(k - 1, 0) for turns in by_session.values() for k in turns)
        return seen / total if total else None

    def prefix_cache_share(self) -> tuple[float | None, str]:
        """The run's prefix-cache hit rate and how it reads: None when it cannot be told (no counters); 0 when the
        engine looked up none of the prompt tokens the run sent (vLLM with prefix caching off counts no query)."""
        hits = self.cache_hits
        if hits is None:
            return None, "no /metrics scrapes around the run"
        if hits.missing:
            return None, hits.missing
        if hits.impossible:
            return None, f"no measurement: {hits.impossible} (from {hits.source})"
        sent = sum(t.record.prompt_tokens or 0 for t in self.completed)
        if hits.rate is None:
            if not sent:
                return None, "the run sent no prompt token"
            return 0.0, (f"0 % (the engine looked up none of the {sent} prompt tokens sent: {hits.source} did not "
                         "grow, prefix caching is off)")
        if hits.queried_tokens is None:
            return hits.rate, f"{hits.rate:.1%} ({hits.source})"
        return hits.rate, f"{hits.rate:.1%} ({hits.hit_tokens:.0f} of {hits.queried_tokens:.0f} tokens)"

    def by_context(self) -> list[dict]:
        """TTFT per power-of-two prompt-length bucket (prompt tokens from `usage`), shortest first."""
        groups: dict[str, list[Turn]] = {}
        for t in self.completed:
            groups.setdefault(context_bucket(t.record.prompt_tokens or 0), []).append(t)
        rows = []
        for bucket, turns in sorted(groups.items(), key=lambda kv: int(kv[0].split("-")[0])):
            rows.append({"context_tokens": bucket, "turns": len(turns),
                         "prompt_tokens_mean": round(sum(t.record.prompt_tokens or 0 for t in turns) / len(turns), 1),
                         "ttft_ms": _ms([t.record.ttft_s for t in turns])})
        return rows

    def describe_by_context(self) -> str:
        """`0-511: TTFT p50 605 ms (n=8); 512-1023: ...`: the by-context table in one line."""
        return "; ".join(f"{r['context_tokens']} tokens: TTFT p50 {r['ttft_ms']['median']:.0f} ms, p90 "
                         f"{r['ttft_ms']['p90']:.0f} ms (n={r['turns']})" for r in self.by_context()) or "no turn"

    def by_turn(self) -> list[dict]:
        """TTFT per turn number (turn 1 has only the shared start to reuse; later turns their own history)."""
        groups: dict[int, list[Turn]] = {}
        for t in self.completed:
            groups.setdefault(t.turn, []).append(t)
        return [{"turn": k, "turns": len(v),
                 "prompt_tokens_mean": round(sum(t.record.prompt_tokens or 0 for t in v) / len(v), 1),
                 "ttft_ms": _ms([t.record.ttft_s for t in v])} for k, v in sorted(groups.items())]

    def goodput(self, slo: Slo) -> Goodput:
        """Turns within the SLOs (DistServe's goodput, as the rate sweep's), of all turns sent."""
        return Goodput(met=sum(slo.is_met(t.record) for t in self.turns), total=len(self.turns),
                       duration_s=self.duration_s)

    def as_json(self, slo: Slo | None = None) -> dict:
        ok = self.completed
        out_tokens = sum(t.record.output_tokens or 0 for t in ok)
        body = {
            "endpoint": self.endpoint, "profile": asdict(self.profile), "key": self.profile.key(), "nonce": self.nonce,
            "duration_s": round(self.duration_s, 3), "turns_sent": len(self.turns), "completed": len(ok),
            "failed": len(self.failed), "sessions": len({t.session for t in self.turns}),
            "output_throughput": round(out_tokens / self.duration_s, 3) if self.duration_s > 0 else None,
            "turn_throughput": round(len(ok) / self.duration_s, 4) if self.duration_s > 0 else None,
            "prompt_tokens_total": sum(t.record.prompt_tokens or 0 for t in ok),
            "max_prompt_tokens": max((t.record.prompt_tokens or 0 for t in ok), default=0),
            "prefix_cache": None if self.cache_hits is None else asdict(self.cache_hits),
            "reusable_share": None if self.reusable_share is None else round(self.reusable_share, 4),
            "ttft_ms": _ms([t.record.ttft_s for t in ok]),
            "tpot_ms": _ms([t.record.tpot_s for t in ok if t.record.tpot_s is not None]),
            "by_context": self.by_context(), "by_turn": self.by_turn(),
            "errors": sorted({t.record.error for t in self.failed})[:10], "warmup_errors": self.warmup_errors[:5],
            "engine_samples": self.engine_samples.as_json() if self.engine_samples is not None else None,
            "turn_records": [{"session": t.session, "turn": t.turn, "prompt_tokens": t.record.prompt_tokens,
                              "prompt_chars": t.prompt_chars, "output_tokens": t.record.output_tokens,
                              "ttft_s": t.record.ttft_s, "tpot_s": t.record.tpot_s, "latency_s": t.record.latency_s,
                              "start_time": t.record.start_time, "error": t.record.error} for t in self.turns],
        }
        if slo is not None:
            good = self.goodput(slo)
            body["goodput"] = {"slo": slo.describe(), "ttft_ms": slo.ttft_ms, "tpot_ms": slo.tpot_ms,
                               "met": good.met, "total": good.total, "share": round(good.share, 4),
                               "request_goodput": round(good.request_goodput, 4)}
        return body


def _chars(messages: list[dict]) -> int:
    """Characters of the messages' contents and tool calls (the part of a prompt that grows)."""
    return sum(len(str(m.get("content") or "")) + len(json.dumps(m.get("tool_calls", ""))) for m in messages)


async def _session(streamer: WireClient, profile: AgenticProfile, session: Session, slots: asyncio.Semaphore,
                   ignore_eos: bool, sink: list[Turn]) -> None:
    async with slots:
        for turn in range(1, profile.turns + 1):
            messages = session.messages(turn)
            payload = chat_payload(profile, messages, ignore_eos=ignore_eos)
            chars = _chars(messages)
            record = await streamer.stream(payload, path=CHAT_PATH)
            sink.append(Turn(session.index, turn, chars, record))
            if not record.success:
                return  # an agent whose request failed stops; the failure is counted, never retried
            if profile.max_context_tokens is not None and turn < profile.turns and record.prompt_tokens:
                estimate = record.prompt_tokens * (chars + _chars(session.steps[turn - 1])) / max(chars, 1)
                if estimate + profile.output_len > profile.max_context_tokens:
                    return
            if profile.think_s:
                await asyncio.sleep(profile.think_s)


async def run_agentic(client: httpx.AsyncClient, streamer: WireClient, profile: AgenticProfile, *, endpoint: str,
                      engine: type[EngineAdapter], nonce: str | None = None,
                      before_window: Callable[[], Awaitable[None]] | None = None,
                      sample_interval_s: float | None = 1.0, clock: Clock = time.perf_counter) -> AgenticRun:
    """Run the profile's sessions against the server; `client` reads /metrics, `streamer` sends the turns.

    One unmeasured warmup turn (another nonce, so it leaves nothing this run can hit) opens the connections and
    the chat path; then `before_window`, the counters, the sessions, the counters again."""
    nonce = nonce or secrets.token_hex(4)
    ignore_eos = profile.ignore_eos and engine.honours_ignore_eos
    sessions = build_sessions(profile, nonce)
    await streamer.warm(profile.concurrency)
    warm_profile = replace(profile, output_len=2)
    warm = build_sessions(replace(profile, sessions=1, turns=1), f"warm-{nonce}")[0]
    warmup = await streamer.stream(chat_payload(warm_profile, warm.messages(1), ignore_eos=ignore_eos),
                                   path=CHAT_PATH)
    if before_window is not None:
        await before_window()
    before = await read_counters(client, endpoint, engine)
    sampler = MetricsSampler(client, endpoint, engine, interval_s=sample_interval_s, clock=clock) \
        if sample_interval_s else None
    turns: list[Turn] = []
    slots = asyncio.Semaphore(profile.concurrency)
    if sampler is not None:
        await sampler.start()
    started = clock()
    try:
        await asyncio.gather(*(_session(streamer, profile, s, slots, ignore_eos, turns) for s in sessions))
        duration = clock() - started
    finally:
        samples = await sampler.stop() if sampler is not None else None
    unverified_counts([t.record for t in turns], f"[{endpoint}] the agentic load ({profile.key()})")
    after = await read_counters(client, endpoint, engine)
    hits = engine.prefix_cache_hits(before.metrics, after.metrics) if before is not None and after is not None \
        else None
    turns.sort(key=lambda t: (t.session, t.turn))
    return AgenticRun(endpoint=endpoint, profile=profile, nonce=nonce, turns=turns, duration_s=duration,
                      cache_hits=hits, engine_samples=samples,
                      warmup_errors=[] if warmup.success else [warmup.error])


def plot_agentic(runs: list[AgenticRun], path, *, title: str, slo: Slo | None = None):
    """TTFT against context length (every turn, and the median per bucket) and per turn, one colour per run."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ._plot import save_figure

    fig, axes = plt.subplots(1, 2, figsize=(13, 4.4))
    for run in runs:
        label = f"C={run.profile.concurrency}"
        hits = run.cache_hits.rate if run.cache_hits is not None and not run.cache_hits.impossible else None
        label += f", prefix hits {hits:.0%}" if hits is not None else ""
        ok = run.completed
        dots = axes[0].plot([t.record.prompt_tokens or 0 for t in ok], [t.record.ttft_s * 1000 for t in ok], ".",
                            alpha=0.4)
        rows = run.by_context()
        axes[0].plot([r["prompt_tokens_mean"] for r in rows], [r["ttft_ms"]["median"] for r in rows], "o-",
                     color=dots[0].get_color(), label=label)
        turns = run.by_turn()
        axes[1].plot([r["turn"] for r in turns], [r["ttft_ms"]["median"] for r in turns], "o-", label=label)
        axes[1].plot([r["turn"] for r in turns], [r["ttft_ms"]["p90"] for r in turns], "--",
                     color=dots[0].get_color(), alpha=0.6)
    for ax in axes:
        if slo is not None and slo.ttft_ms is not None:
            ax.axhline(slo.ttft_ms, color="#cc0000", linewidth=0.8, linestyle=":")
        ax.set_ylabel("TTFT (ms)")
        ax.legend(fontsize=8)
    axes[0].set_xlabel("prompt tokens (usage)")
    axes[0].set_title("TTFT against context length (dots: turns; line: bucket medians)", fontsize=9)
    axes[1].set_xlabel("turn of the session")
    axes[1].set_title("TTFT per turn (median; dashed p90)", fontsize=9)
    return save_figure(fig, path, title)
