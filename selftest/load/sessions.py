"""A perf session against a fake server (fakes.FakeServer over httpx.MockTransport) with scripted client-host
windows (ScriptedProbe), and the perf sections of local.toml it measures: what the session, host-load,
calibration and machine-baseline self-tests share."""

from __future__ import annotations

import httpx

from llmval.inventory import MachineScale, load_inventory
from llmval.load import BaselineStore, HostWindow, PerfSession
from selftest.strategies import ROOT

from .fakes import FakeServer

INVENTORY = load_inventory(ROOT / "inventories" / "local.toml")


SPEC = INVENTORY.perf[0].model_copy(update={"machine": None})  # absolute: no calibration against a fake server
# the same section relative to the machine, at a SYNTHESIZED reference score
RELATIVE = SPEC.model_copy(update={"machine": MachineScale(reference_steps_s=20.0, reference="SYNTHESIZED")})


def window(other_cores: float, engine_cores: float = 1.8) -> HostWindow:
    return HostWindow(cpus=2, wall_s=5.0, load_avg=(1.0 + other_cores * 2, 1.0, 1.0), pressure_some_avg10=None,
                      steal_share=0.0, suite_cores=0.1, engine_cores=engine_cores, other_cores=other_cores,
                      engine_pids=(4242,), engine_note="on this host: pid 4242 listens on port 8321")


class ScriptedProbe:
    """Stands in for HostLoadProbe: each window it is asked for is the next of `others` (cores used by others);
    the engine uses `engine_cores` in each (1.8: decoding on both CPUs; an idle engine uses next to none)."""

    def __init__(self, others: list[float], engine_cpus: set[int] | None = None, engine_cores: float = 1.8):
        self.others = others
        self.engine_cores = engine_cores
        self.windows: list[HostWindow] = []
        self.cpus = {0, 1} if engine_cpus is None else engine_cpus
        self.engine_note = "on this host: pid 4242 listens on port 8321" if self.cpus else "on another host"

    def engine_cpus(self) -> set[int]:
        return self.cpus

    def __call__(self, endpoint) -> ScriptedProbe:
        return self

    def start(self) -> None:
        pass

    def stop(self) -> HostWindow:
        self.windows.append(window(self.others.pop(0) if len(self.others) > 1 else self.others[0], self.engine_cores))
        return self.windows[-1]


def session(tmp_path, server: FakeServer, probe: ScriptedProbe, **kwargs) -> tuple[PerfSession, list[str]]:
    said: list[str] = []

    def handle(request: httpx.Request) -> httpx.Response:
        if request.method == "GET" and request.url.path != "/metrics":
            return httpx.Response(404)
        return server.handle(request)

    def connect(endpoint, max_connections):
        return httpx.AsyncClient(base_url=str(endpoint.base_url), transport=httpx.MockTransport(handle))

    return PerfSession(INVENTORY, reports_dir=tmp_path / "reports", lock_path=tmp_path / "perf.lock",
                       baselines=BaselineStore(tmp_path / "baselines"), progress=said.append, connect=connect,
                       host_probe=probe, **kwargs), said
