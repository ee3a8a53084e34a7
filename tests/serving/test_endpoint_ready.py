"""With `--wait-ready`, the endpoint became ready (health 200 and its model listed) within the wait: one verdict,
with the engine log's tail when it did not (its other checks are then could-not-check, not failures)."""

import pytest

# the first check of an endpoint: every other one waits on it (NotReady), so it waits on none of theirs, only on
# its host's readiness
pytestmark = [pytest.mark.serving, pytest.mark.smoke, pytest.mark.depends_on()]


def test_endpoint_ready_within_wait(endpoint, readiness, expect):
    outcome = readiness[endpoint.name]
    expect(endpoint.name, "serving.ready",
           expected=f"ready within {outcome.deadline_s:g} s (GET /health 200, /v1/models lists {endpoint.model!r})",
           observed=f"ready after {outcome.waited_s:g} s" if outcome.ready
           else f"not ready after {outcome.deadline_s:g} s: {outcome.last_reason}",
           ok=outcome.ready, hint=outcome.endpoint_hint(),
           evidence=outcome.verdict(), depends_on=(f"hosts.ready@{endpoint.host}",) if endpoint.host else ())
