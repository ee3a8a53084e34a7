"""NCCL's INFO log proves the transport: IB/RoCE via IBext on Spark, SHM with P2P disabled on kpro6."""

import pytest

pytestmark = [pytest.mark.hosts, pytest.mark.smoke, pytest.mark.needs("nccl")]

NCCL_HINT = "run the stack with NCCL_DEBUG=INFO (NCCL_DEBUG_SUBSYS=INIT,NET,P2P,SHM) so the log shows its channels"


def test_nccl_transport_as_expected(host, facts, expect):
    spec = host.nccl
    log = facts.nccl_log(spec.log)
    seen = sorted(log.transports)
    forbidden = sorted(set(seen) & set(spec.forbid))
    rdma = [f"{dev}/{link}" for dev, link in log.ib_devices if link in ("IB", "RoCE")]
    ok = spec.expect_transport in seen and not forbidden and (spec.expect_transport != "ib" or bool(rdma))
    bad = next((c.line for t in forbidden for c in [log.first_channel(t)] if c), "")
    observed = {"channels": seen or "none", "forbidden seen": forbidden}
    if spec.expect_transport == "ib":
        observed["RDMA devices"] = rdma or "none (NET/IB found no device)"
        if log.ibext_disabled:
            observed["IBext plugin"] = "disabled (NCCL_IBEXT_DISABLE set by environment to 1)"
    hint = ("socket/P2P where IB/SHM was declared: check NCCL_SOCKET_IFNAME, the IBext plugin, NCCL_P2P_DISABLE"
            + ("; NCCL_IBEXT_DISABLE=1 turns the IBext plugin off: unset it" if log.ibext_disabled else ""))
    evidence = bad or next((c.line for c in log.channels), f"{log.lines} NCCL lines in {spec.log}")
    if not ok and log.warnings:
        evidence += "\nNCCL WARN: " + "\nNCCL WARN: ".join(log.warnings[:3])
    expect(host.name, "hosts.nccl.transport",
           expected={"channels": spec.expect_transport, "never": sorted(spec.forbid)}, observed=observed, ok=ok,
           hint=NCCL_HINT if not log.lines else hint, evidence=evidence)


def test_nccl_p2p_disabled_by_environment(host, facts, expect):
    if not host.nccl.p2p_disabled:
        pytest.skip(f"[{host.name}] the inventory does not require NCCL_P2P_DISABLE")
    log = facts.nccl_log(host.nccl.log)
    expect(host.name, "hosts.nccl.p2p_disabled", expected="NCCL_P2P_DISABLE set by environment to 1",
           observed=log.env.get("NCCL_P2P_DISABLE", "no such line"), ok=log.env.get("NCCL_P2P_DISABLE") == "1",
           hint=NCCL_HINT if not log.lines else "the inventory requires P2P off on this host: Environment="
           "NCCL_P2P_DISABLE=1 in the serving unit (-e NCCL_P2P_DISABLE=1 for a container)")
