"""The serving units and containers run (enabled, from the right image); the stale ones do not."""

import pytest

from llmval.parsers.docker import image_matches

pytestmark = [pytest.mark.hosts, pytest.mark.smoke]


def _state(facts, service):
    if service.kind == "systemd":
        unit = facts.unit(service.name)
        return unit.is_active, unit.properties.get("ActiveState", "?") + "/" + unit.properties.get("SubState", "?")
    container = facts.container(service.name)
    return (False, "no such container") if container is None else (container.is_running, container.describe())


def test_service_running(running_service, facts_of, expect):
    host, service = running_service.host, running_service.item
    running, state = _state(facts_of(host.name), service)
    expect(host.name, f"hosts.service.{service.name}.running", expected="running", observed=state, ok=running,
           hint=f"`systemctl status {service.name}`" if service.kind == "systemd" else f"`docker ps -a`; "
           f"`docker logs --tail 50 {service.name}`")


def test_service_absent(absent_service, facts_of, expect):
    host, service = absent_service.host, absent_service.item
    running, state = _state(facts_of(host.name), service)
    expect(host.name, f"hosts.service.{service.name}.absent", expected="not running", observed=state, ok=not running,
           hint=(service.why + "; " if service.why else "") + (f"`docker stop {service.name}` and remove its restart "
           "policy" if service.kind == "docker" else f"`systemctl disable --now {service.name}`"))


def test_unit_enabled(enabled_unit, facts_of, expect):
    host, service = enabled_unit.host, enabled_unit.item
    unit = facts_of(host.name).unit(service.name)
    expect(host.name, f"hosts.service.{service.name}.enabled", expected="enabled" if service.enabled else "disabled",
           observed=unit.properties.get("UnitFileState", "?"), ok=unit.is_enabled == service.enabled,
           hint=f"`systemctl enable {service.name}` so it starts after a reboot")


def test_container_image(imaged_container, facts_of, expect):
    host, service = imaged_container.host, imaged_container.item
    container = facts_of(host.name).container(service.name)
    observed = "no such container" if container is None else container.image
    expect(host.name, f"hosts.service.{service.name}.image", expected=service.image, observed=observed,
           ok=container is not None and image_matches(service.image, container.image),
           hint="recreate the container from the declared image")
