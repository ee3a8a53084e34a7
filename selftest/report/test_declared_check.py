"""A test that raises before `expect` still names the check it states (issue 21.5), not its function name.

The end-to-end case is the REAL killed-engine replay (selftest/serving/test_faults.py); these cover the three ways
the id is found: a literal, an f-string filled from the parametrization (or `*` where a value is computed), and the
`check` marker for tests whose ids all come from a judge at run time (tests/hosts/test_gpu_health.py).
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from fixtures.evidence import _expect_check_ids, _rendered


def _speculative(endpoint, engine, expect, setting):  # the shape of tests/serving/test_engine_flags.py
    engine.speculative()
    expect(endpoint.name, f"serving.speculative.{setting}", expected=1, observed=2)


def _service(host, expect, service):  # the shape of tests/hosts/test_services.py
    expect(host.name, f"hosts.service.{service.name}.running", expected="running", observed="dead")


def _env(host, expect, name):  # the shape of tests/hosts/test_env.py: a computed part
    expect(host.name, f"hosts.env.{name.lower()}", expected="1", observed="0")


def _literal(endpoint, expect):
    expect(endpoint.name, "serving.kv_cache.dtype.no_fp8", expected="none", observed="none")


@pytest.mark.parametrize(("function", "params", "check"), [
    (_literal, {}, "serving.kv_cache.dtype.no_fp8"),
    (_speculative, {"setting": "num_steps"}, "serving.speculative.num_steps"),
    (_service, {"service": SimpleNamespace(name="sglang")}, "hosts.service.sglang.running"),
    (_service, {}, "hosts.service.*.running"),
    (_env, {"name": "NCCL_P2P_DISABLE"}, "hosts.env.*"),
])
def test_the_check_id_a_test_states_is_read_from_its_expect_call(function, params, check):
    assert [_rendered(arg, params) for arg in _expect_check_ids(function)] == [check]
