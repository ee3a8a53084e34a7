"""The log envelope stage: every parser's REAL lines, wrapped in each envelope the suite meets (journald, docker
logs -t, ANSI colour, Ray's process tags and its dedup suffix/notice), give the same facts as the bare lines.

The real lines: NCCL INFO of the lent H200 x2 (selftest/data/real/h200x2), vLLM 0.32.0's CPU startup
(selftest/data/engines/REAL-vllm-0.32.0-cpu-*.log), SGLang 0.5.17 on the lent H200
(selftest/data/replays/REAL-h200-sglang-0.5.17-contract/sglang.log). The envelopes are SYNTHESIZED in their tools'
formats: Ray's `print_worker_logs` (ray/_private/worker.py: `({actor or task} pid={pid}, ip={ip})`, no `ip=` on
the driver's node, colorama DIM+CYAN around the tag), its `LogDeduplicator` (ray/_private/ray_logging:
` [repeated Nx across cluster]` in green, the `(Ray deduplicates logs by default. ...)` notice on the first one),
journald `short`/`short-iso`, moby's `docker logs -t` RFC 3339 nanosecond timestamps.
"""

from __future__ import annotations

import dataclasses

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llmval.engines.logs import parse_sglang_log, parse_vllm_log
from llmval.parsers.envelope import ProcessTag, unwrap_line, unwrap_log
from llmval.parsers.nccl import parse_nccl_log
from selftest.strategies import ROOT

DATA = ROOT / "selftest" / "data"
REAL_NCCL = [(DATA / "real" / "h200x2" / name).read_text() for name in (
    "nccl-allreduce-default.log", "nccl-allreduce-p2p-disabled.log", "nccl-allreduce-p2p-shm-disabled.log")]
REAL_VLLM = [(DATA / "engines" / name).read_text() for name in (
    "REAL-vllm-0.32.0-cpu-bf16.log", "REAL-vllm-0.32.0-cpu-fp8-kv.log")]
_SGLANG_LOG = (DATA / "replays" / "REAL-h200-sglang-0.5.17-contract" / "sglang.log").read_text().splitlines()
REAL_SGLANG = "\n".join(_SGLANG_LOG[:60] + [line for line in _SGLANG_LOG[60:] if any(
    marker in line for marker in ("server_args=", "KV Cache", "KV cache", "max_total_num_tokens"))]
    + [line for line in _SGLANG_LOG if "Decode batch" in line][-30:])
"""The REAL log's first 60 lines, every later startup line the SGLang parser reads and its last 30 decode lines (the
whole log, 3,238 lines, took 8 s a run)."""

DEDUP_NOTICE = ("(Ray deduplicates logs by default. Set RAY_DEDUP_LOGS=0 to disable log deduplication, or see "
                "https://docs.ray.io/en/master/ray-observability/user-guides/configure-logging.html#log-deduplication "
                "for more options.)")
ACTORS = ("RayWorkerWrapper", "RayWorkerProc", "RayWorker", "RayWorkerVllm", "EngineCore_DP0", "APIServer",
          "VllmWorker rank=0", "VllmWorker TP1",
          "VllmAsyncGenerationWorker", "")
IPS = st.one_of(st.none(), st.ip_addresses(v=4).map(str))


@st.composite
def process_tags(draw) -> ProcessTag:
    return ProcessTag(draw(st.sampled_from(ACTORS)), draw(st.integers(1, 4_194_304)), draw(IPS))


def render_tag(tag: ProcessTag) -> str:
    name = f"{tag.name} " if tag.name else ""
    return f"({name}pid={tag.pid}" + (f", ip={tag.ip}" if tag.ip else "") + ")"


@dataclasses.dataclass(frozen=True)
class Wrapping:
    """One envelope combination, applied to a line."""

    outer: str
    tags: tuple[ProcessTag, ...]
    coloured: bool
    repeated: int | None
    notice: bool

    def wrap(self, message: str) -> str:
        tags = " ".join(render_tag(t) for t in self.tags)
        if tags and self.coloured:
            tags = f"\x1b[2m\x1b[36m{tags}\x1b[0m"
        line = f"{tags} {message}" if tags else message
        if self.repeated is not None:
            line += f" \x1b[32m[repeated {self.repeated}x across cluster]\x1b[0m" if self.coloured else \
                f" [repeated {self.repeated}x across cluster]"
            if self.notice:
                line += " " + DEDUP_NOTICE
        return self.outer + line


@st.composite
def wrappings(draw) -> Wrapping:
    outer = draw(st.sampled_from([
        "", "2026-12-06T23:44:05.123456789Z ", "Dec  6 23:44:05 spark1 vllm[64835]: ",
        "Aug 18 19:02:31 sys0 python3: ", "2026-12-06T23:44:05+0000 kpro6 sglang[2211]: "]))
    return Wrapping(outer, tuple(draw(st.lists(process_tags(), max_size=3))), draw(st.booleans()),
                    draw(st.one_of(st.none(), st.integers(2, 999))), draw(st.booleans()))


def wrap_log(text: str, envelopes: list[Wrapping]) -> str:
    return "\n".join(envelopes[i % len(envelopes)].wrap(line) for i, line in enumerate(text.splitlines()))


FAST = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=60).map(str.strip), wrappings())
def test_any_message_comes_back_with_its_tags(message, wrapping):
    if message.startswith("("):  # a message that itself opens with a tag would be read as one: not a log line
        message = "x" + message
    envelope = unwrap_line(wrapping.wrap(message))
    assert envelope.message == message
    assert envelope.tags == wrapping.tags
    assert envelope.repeated == wrapping.repeated
    assert envelope.dedup_notice == (wrapping.repeated is not None and wrapping.notice)


def nccl_facts(text: str) -> tuple:
    log = parse_nccl_log(text)
    channels = [(c.host, c.src, c.dst, c.direction, c.via, c.transport, c.net, c.gdr, c.line) for c in log.channels]
    return (log.lines, log.versions, channels, log.networks, log.ib_devices, log.plugin_names, log.env, log.warnings)


@FAST
@given(st.sampled_from(REAL_NCCL), st.lists(wrappings(), min_size=1, max_size=4))
def test_real_nccl_lines_in_any_envelope_give_the_same_facts(text, envelopes):
    assert nccl_facts(wrap_log(text, envelopes)) == nccl_facts(text)


def vllm_facts(text: str) -> tuple:
    facts = parse_vllm_log(text)
    return (facts.version, facts.model_dtype, facts.kv_cache_dtype, facts.tensor_parallel_size,
            facts.served_model_name, facts.non_default_args, facts.fp8_kv_quotes,
            [b.value for b in facts.attention_backends], facts.world_size, facts.cross_node_quote)


@FAST
@given(st.sampled_from(REAL_VLLM), st.lists(wrappings(), min_size=1, max_size=4))
def test_real_vllm_lines_in_any_envelope_give_the_same_facts(text, envelopes):
    assert vllm_facts(wrap_log(text, envelopes)) == vllm_facts(text)


def sglang_facts(text: str) -> tuple:
    facts = parse_sglang_log(text)
    return (facts.kv_dtypes, facts.kv_allocations, facts.server_args, facts.accept_lengths, facts.context_len,
            facts.fp8_kv_quotes)


@FAST
@given(st.lists(wrappings(), min_size=1, max_size=4))
def test_real_sglang_lines_in_any_envelope_give_the_same_facts(envelopes):
    assert sglang_facts(wrap_log(REAL_SGLANG, envelopes)) == sglang_facts(REAL_SGLANG)


def test_rays_dedup_suffix_does_not_flip_p2p_disabled():
    """Issue 44.1: the Sparks' Ray log folds the workers' identical env lines into one with Ray's suffix."""
    line = ("(RayWorkerWrapper pid=3377, ip=192.168.200.2) spark2:3377:3377 [0] NCCL INFO NCCL_P2P_DISABLE set by "
            "environment to 1. [repeated 15x across cluster]\n"
            "(pid=3378, ip=192.168.200.2) spark2:3378:3378 [0] NCCL INFO NCCL_IBEXT_DISABLE set by environment to 0. "
            "[repeated 3x across cluster] " + DEDUP_NOTICE)
    log = parse_nccl_log(line)
    assert log.env == {"NCCL_P2P_DISABLE": "1", "NCCL_IBEXT_DISABLE": "0"} and not log.ibext_disabled
    assert ProcessTag("RayWorkerWrapper", 3377, "192.168.200.2") in log.senders


def test_two_records_on_one_line_each_keep_their_own_via_and_node():
    """Two workers' writes merged into one line: the first record's `via` stops where the second's tags begin."""
    text = ("(RayWorkerWrapper pid=11, ip=10.0.0.1) a:11:11 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via "
            "NET/IBext_v10/0(RayWorkerWrapper pid=12, ip=10.0.0.2) b:12:12 [0] NCCL INFO Channel 00/0 : 1[0] -> "
            "0[0] [receive] via NET/IBext_v10/0/GDRDMA")
    first, second = parse_nccl_log(text).channels
    assert (first.via, first.ip, first.gdr) == ("NET/IBext_v10/0", "10.0.0.1", False)
    assert (second.via, second.ip, second.gdr) == ("NET/IBext_v10/0/GDRDMA", "10.0.0.2", True)
    assert first.line.endswith("via NET/IBext_v10/0")


def test_journald_prefix_keeps_its_node_and_older_worker_names_count_as_ray_workers():
    log = unwrap_log("Dec  6 23:44:05 spark2 vllm[811]: (RayWorkerVllm pid=90, ip=192.168.200.2) INFO loading\n"
                     "(raylet, ip=192.168.200.2) [2026-12-06 23:44:06,001 E 77 77] file_system_monitor.cc:111: full")
    first, second = log.lines
    assert (first.node, first.ident, first.ident_pid, first.ray_worker.ip) == ("spark2", "vllm", 811, "192.168.200.2")
    assert second.tags == (ProcessTag("raylet", None, "192.168.200.2"),) and second.ray_worker is None
    assert second.message.startswith("[2026-12-06 23:44:06,001 E 77 77]")
