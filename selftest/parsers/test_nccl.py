"""NCCL INFO log parsing on the REAL H200 all-reduce logs and the public real lines quoted in infra.md §4."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from llmval.parsers.nccl import classify_via, parse_nccl_log
from selftest.strategies import ROOT

REAL = ROOT / "selftest" / "data" / "real" / "h200x2"


@pytest.mark.parametrize(("name", "transport", "p2p_env"), [
    ("nccl-allreduce-default.log", "p2p", None),
    ("nccl-allreduce-default-plain-info.log", "p2p", None),
    ("nccl-allreduce-p2p-disabled.log", "shm", "1"),
    ("nccl-allreduce-p2p-shm-disabled.log", "socket", "1"),
    ("nccl-debugfile/nccl.vm.1109.log", "p2p", None),
])
def test_real_logs_show_the_transport_they_used(name, transport, p2p_env):
    log = parse_nccl_log((REAL / name).read_text())
    assert log.transports == {transport}
    assert log.versions == {"2.28.9"}
    assert log.env.get("NCCL_P2P_DISABLE") == p2p_env
    assert log.networks == {"Socket"}  # "Using network Socket" even when the data went P2P/SHM
    assert log.ib_devices == []  # `NET/IB : Using [RO]; OOB eth0...` after "No device found" lists no HCA


def test_real_shm_disable_line_keeps_its_period_off_the_value():
    log = parse_nccl_log((REAL / "nccl-allreduce-p2p-shm-disabled.log").read_text())
    assert log.env["NCCL_SHM_DISABLE"] == "1"
    assert log.first_channel("socket").line.endswith("via NET/Socket/0")


# real lines from public logs, quoted in infra.md §4.3 (issue links there)
PUBLIC = [
    ("x:1:1 [0] NCCL INFO Channel 01/0 : 6[4f000] -> 3[9d000] [receive] via NET/IBext_v6/1", "ib", "IBext_v6", False),
    ("x:1:1 [0] NCCL INFO Channel 03/0 : 47[7] -> 39[7] [receive] via NET/IBext_v8/2", "ib", "IBext_v8", False),
    ("spark:1:1 [0] NCCL INFO Channel 10/0 : 1[0] -> 0[0] [send] via NET/IBext_v10/0", "ib", "IBext_v10", False),
    ("x:1:1 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [send] via NET/IBext/1/GDRDMA", "ib", "IBext", True),
    ("x:1:1 [0] NCCL INFO Channel 02/0 : 0[0] -> 8[0] [send] via NET/IBext/0(8)/GDRDMA", "ib", "IBext", True),
    ("x:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/NCCL RDMA Plugin v9/3/GDRDMA", "ib",
     "NCCL RDMA Plugin v9", True),
    ("x:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IBext_v11/0", "ib", "IBext_v11", False),
    ("x:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] [send] via NET/Socket/0", "socket", "Socket", False),
    ("x:1:1 [0] NCCL INFO Channel 00 : 0[1] -> 1[2] via SHM/direct/direct", "shm", None, False),
]


@pytest.mark.parametrize(("line", "transport", "net", "gdr"), PUBLIC, ids=[p[0].split(" via ")[1] for p in PUBLIC])
def test_public_channel_lines_classify(line, transport, net, gdr):
    (channel,) = parse_nccl_log(line).channels
    assert (channel.transport, channel.net, channel.gdr) == (transport, net, gdr)


def test_public_ib_device_line_lists_roce_devices():
    log = parse_nccl_log("h:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_10:1/RoCE [1]mlx5_11:1/RoCE [RO]; "
                         "OOB enp220s0np0:11.1.128.136<0>")
    assert log.ib_devices == [("mlx5_10", "RoCE"), ("mlx5_11", "RoCE")]


def test_plugin_self_name_and_p2p_disable_lines():
    log = parse_nccl_log("h:1:1 [0] NCCL INFO P2P plugin v11 IBext_v11\n"
                         "h:1:1 [0] NCCL INFO NCCL_P2P_DISABLE set by environment to 1\n")
    assert log.plugin_names == {"IBext_v11"} and log.env == {"NCCL_P2P_DISABLE": "1"}


def test_ray_prefixed_and_glued_lines_are_found():
    text = ("(RayWorkerWrapper pid=3377, ip=192.168.200.2) spark2:3377:3377 [0] NCCL INFO Channel 00/0 : 0[0] -> "
            "1[0] [receive] via NET/IBext_v11/0\n"
            "rank 1 ok=Truevm:844:844 [1] NCCL INFO Channel 00/0 : 1[1] -> 0[0] via P2P/CUMEM\n")
    log = parse_nccl_log(text)
    assert [c.transport for c in log.channels] == ["ib", "p2p"]
    assert log.channels[0].host == "spark2"


def test_unknown_via_is_other_not_ib():
    assert classify_via("NET/UCX/0")[0] == "other"


@given(prefix=st.text(alphabet=st.characters(blacklist_characters="\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"),
                      max_size=30).filter(lambda s: "NCCL" not in s and ":" not in s))
def test_a_prefix_before_the_envelope_does_not_change_the_parse(prefix):
    line = "vm:977:977 [1] NCCL INFO Channel 00 : 1[1] -> 0[0] via SHM/direct/direct"
    assert parse_nccl_log(prefix + line).transports == {"shm"}


# REAL (public NCCL issue, RoCE HCAs timing out): NCCL's own WARN shape names its source file and line.
WARN_REAL = ("node-2:5776:5902 [0] transport/net_ib.cc:1296 NCCL WARN NET/IB : Got completion from peer "
             "10.2.0.5<33092> with error 12, opcode 0, len")
INFO_REAL = ("node-2:5776:5898 [0] NCCL INFO NET/IB : Using [0]ibP111p0s0:1/IB [1]rdmaP1111p0s2:1/RoCE [RO]; "
             "OOB eth0:10.2.0.4<0>")


def test_real_warn_lines_with_their_source_are_read():
    log = parse_nccl_log(f"{INFO_REAL}\n\n{WARN_REAL}\n")  # debug.cc prints a newline before each WARN
    assert log.lines == 2
    assert log.warnings == ["transport/net_ib.cc:1296 NET/IB : Got completion from peer 10.2.0.5<33092> with "
                            "error 12, opcode 0, len"]
    assert log.ib_devices == [("ibP111p0s0", "IB"), ("rdmaP1111p0s2", "RoCE")]
    glued = parse_nccl_log(INFO_REAL + WARN_REAL)  # two writers on one line: both envelopes found
    assert glued.lines == 2 and len(glued.warnings) == 1


def test_ibext_loaded_but_disabled_by_environment_is_not_listed():
    # REAL line shapes: `NCCL_IBEXT_DISABLE set by environment to 1.` (a public vLLM multi-node guide) and the
    # plugin's own `P2P plugin v10 IBext_v10` / `Using network IBext` (infra.md §4.3).
    log = parse_nccl_log("h:1:1 [0] NCCL INFO NCCL_IBEXT_DISABLE set by environment to 1.\n"
                         "h:1:1 [0] NCCL INFO P2P plugin v10 IBext_v10\n"
                         "h:1:1 [0] NCCL INFO Using network IBext\n"
                         "h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/Socket/0\n")
    assert log.ibext_disabled and log.plugin_names == set() and log.networks == set()
    assert log.transports == {"socket"}
    enabled = parse_nccl_log("h:1:1 [0] NCCL INFO P2P plugin v10 IBext_v10\n")
    assert not enabled.ibext_disabled and enabled.plugin_names == {"IBext_v10"}
