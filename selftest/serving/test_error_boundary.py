"""One error boundary per foreign library (issue 22.2), as httpx maps httpcore's errors (`map_httpcore_exceptions`):
httpx errors become ours in `llmval.io.http` only, most specific first, chained `from exc`; the error
tree in `llmval.core.errors` lists every error class of the suite, and every one is exported."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import re

import httpx
import pytest

import llmval
from llmval.core import errors
from llmval.core.errors import EndpointError, EndpointProtocolError, EndpointTimeout, EndpointUnreachable, LlmvalError
from llmval.io.http import HTTPX_ERRORS, get_json, httpx_errors, make_client
from selftest.strategies import ROOT


def _httpx_error_classes() -> list[type[Exception]]:
    return sorted({obj for obj in vars(httpx).values() if inspect.isclass(obj) and issubclass(obj, Exception)},
                  key=lambda c: c.__name__)


@pytest.mark.parametrize("foreign", _httpx_error_classes(), ids=lambda c: c.__name__)
def test_every_httpx_error_class_maps_to_ours_by_its_most_specific_entry(foreign):
    matches = [(theirs, ours) for theirs, ours in HTTPX_ERRORS if issubclass(foreign, theirs)]
    assert matches, f"{foreign.__name__} is not translated"
    first_theirs, ours = matches[0]
    assert issubclass(ours, EndpointError)
    assert all(issubclass(first_theirs, theirs) for theirs, _ in matches), \
        f"{foreign.__name__}: {first_theirs.__name__} is listed after a more general entry"


@pytest.mark.parametrize(("raised", "expected"), [
    (httpx.ConnectError("[Errno 111] Connection refused"), EndpointUnreachable),
    (httpx.ReadTimeout("timed out"), EndpointTimeout),
    (httpx.ConnectTimeout("timed out"), EndpointTimeout),
    (httpx.RemoteProtocolError("peer closed connection without sending complete message body"),
     EndpointProtocolError),
    (httpx.ReadError("reset by peer"), EndpointUnreachable),
])
def test_a_foreign_error_is_translated_chained_and_named(raised, expected):
    with pytest.raises(expected) as caught, httpx_errors("[ep] GET http://x/health"):
        raise raised
    assert caught.value.__cause__ is raised
    assert caught.value.kind == type(raised).__name__ and caught.value.detail == str(raised)
    said = "no answer within the timeout (" + type(raised).__name__ + ")" if expected is EndpointTimeout \
        else f"{type(raised).__name__}: {raised}"
    assert str(caught.value) == f"[ep] GET http://x/health: {said}"


def test_get_json_says_what_came_back_through_the_boundary():
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/down":
            raise httpx.ConnectError("refused", request=request)
        return httpx.Response(500 if request.url.path == "/bad" else 200, text="oops")

    client = make_client("http://ep", timeout_s=1)
    client._transport = httpx.MockTransport(handler)
    with pytest.raises(EndpointUnreachable, match=r"\[ep\] GET http://ep/down: ConnectError: refused"):
        get_json(client, "/down", endpoint="ep")
    with pytest.raises(EndpointError, match=r"HTTP 500: 'oops'"):
        get_json(client, "/bad", endpoint="ep")
    with pytest.raises(EndpointError, match=r"HTTP 200: not JSON"):
        get_json(client, "/ok", endpoint="ep")


def test_no_module_but_the_boundary_catches_httpx_errors():
    """`except httpx.HTTPError` (or any httpx error) appears in `llmval.io.http` only; the h11 transport
    raises httpx's errors (it is below the boundary: a transport), and catches none but its own read's."""
    offenders = []
    for path in sorted([*(ROOT / "src" / "llmval").rglob("*.py"), *(ROOT / "fixtures").rglob("*.py")]):
        if path.name == "http.py" and path.parent.name == "io":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ExceptHandler) and node.type is not None:
                names = ast.unparse(node.type)
                if re.search(r"\bhttpx(_sse)?\.", names) and path.name != "h11transport.py":
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}: except {names}")
    assert offenders == []


def _all_error_classes() -> set[type[LlmvalError]]:
    for module in pkgutil.walk_packages(llmval.__path__, "llmval."):
        if not module.name.endswith("__main__"):
            importlib.import_module(module.name)
    found, todo = set(), [LlmvalError]
    while todo:
        cls = todo.pop()
        found.add(cls)
        todo += cls.__subclasses__()
    return {c for c in found if c.__module__.startswith("llmval.") and not c.__name__.startswith("_")}


def _tree() -> dict[str, str]:
    """{class: parent} as drawn in the errors module docstring (indentation = nesting)."""
    parents: dict[str, str] = {}
    stack: list[tuple[int, str]] = []
    for line in errors.__doc__.splitlines():
        m = re.match(r"^(?P<pad>[ │]*)(?:[├└]── )?(?P<name>[A-Z]\w+)\b", line)
        if m is None or not line.startswith("    "):
            continue
        depth = len(m["pad"])
        while stack and stack[-1][0] >= depth:
            stack.pop()
        parents[m["name"]] = stack[-1][1] if stack else ""
        stack.append((depth, m["name"]))
    return parents


def test_the_error_tree_lists_every_error_class_under_its_real_parent():
    tree = _tree()
    classes = _all_error_classes()
    assert {c.__name__ for c in classes} == set(tree)
    for cls in classes:
        parent = cls.__mro__[1].__name__
        assert tree[cls.__name__] == ("" if cls is LlmvalError else parent), cls.__name__


def test_every_error_class_is_exported_by_its_package():
    """`llmval` exports the classes of `llmval.core.errors`; each other one its own area
    (`llmval.hostfacts.GpusLost`)."""
    missing = []
    for cls in _all_error_classes():
        area = cls.__module__.split(".")[1]
        namespace = llmval if cls.__module__ == errors.__name__ else importlib.import_module(f"llmval.{area}")
        exported = getattr(namespace, "__all__", None)  # a package without one exports every name
        if (exported is not None and cls.__name__ not in exported) or getattr(namespace, cls.__name__, None) is not cls:
            missing.append(f"{namespace.__name__}.{cls.__name__}")
    assert missing == []


@pytest.mark.parametrize("path", ["/health", "/v1/models"])
def test_a_recorded_timeout_replays_as_the_live_timeout_in_the_live_words(tmp_path, path):
    """Issue 31.4: a REAL ReadTimeout (a socket that accepts and never answers, on loopback), recorded, then
    replayed: the same error class (EndpointTimeout, not EndpointUnreachable; for /v1/models the first /health
    probe's timeout makes it "not sent", live and replayed alike) and the same words (`no answer
    within 0.5 s (the whole request's time; nothing came): the server is hung ...`), not `ConnectError: (replayed)
    ReadTimeout(...)`."""
    import socket

    from llmval.engines import adapter_for
    from llmval.inventory import EndpointSpec
    from llmval.io.recording import Recorder, Replay

    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)  # connections complete in the backlog; nothing ever reads or answers them
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        spec = EndpointSpec(name="ep", platform="p", base_url=url, engine="vllm", model="m", health_timeout_s=0.5,
                            request_timeout_s=0.5)
        live_client = make_client(url, timeout_s=0.5, recorder=Recorder(tmp_path / "rec"))
        with pytest.raises(EndpointError) as live:
            adapter_for(spec, live_client).request("GET", path)
    recorded = (tmp_path / "rec").glob("http-*.jsonl")
    assert any('"error": "ReadTimeout(' in f.read_text() for f in recorded)
    replayed_client = make_client(url, timeout_s=0.5, replay=Replay(tmp_path / "rec"))
    with pytest.raises(EndpointError) as replayed:
        adapter_for(spec, replayed_client).request("GET", path)
    assert type(live.value) is type(replayed.value)
    assert path != "/health" or type(replayed.value) is EndpointTimeout  # not EndpointUnreachable
    assert str(replayed.value) == str(live.value), (str(live.value), str(replayed.value))
    assert "no answer within 0.5 s" in str(replayed.value) and "(replayed)" not in str(replayed.value)


def test_a_recorded_reset_replays_in_its_own_words():
    """The REAL ReadError of REAL-local-fault-killed (the engine's group SIGKILLed mid-answer) replays as the live
    error said it: `ReadError: [Errno 104] Connection reset by peer`, EndpointUnreachable."""
    from llmval.io.http import recorded_error

    request = httpx.Request("GET", "http://127.0.0.1:8346/health")
    error = recorded_error("ReadError('[Errno 104] Connection reset by peer')", request)
    with pytest.raises(EndpointUnreachable, match=r": ReadError: \[Errno 104\] Connection reset by peer$"), \
            httpx_errors("[ep] GET http://127.0.0.1:8346/health"):
        raise error
    assert str(recorded_error("not a repr", request)) == "(replayed) not a repr"
