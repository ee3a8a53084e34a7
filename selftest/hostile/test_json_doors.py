"""Every JSON the suite reads goes through one bounded reader (issue 45.1, `llmval.core.jsontext.read_json`).

Before: SGLang `/server_info` of 100,000 nested `[` was a `RecursionError` traceback in smoke and perf (four checks
FAILED on it), a 5,000-digit integer `ValueError: Exceeds the limit (4300 digits)`, and `ray list nodes` whose
`resources_total` is a string an `AttributeError`. Now each is one ParseError/EndpointError naming its source, and
a scan of the package finds no other JSON decoder, so a reader added later cannot skip the bounds.
"""

from __future__ import annotations

import ast
import asyncio
import resource
import time
from pathlib import Path

import pytest

from llmval.core.errors import EndpointError, ParseError
from llmval.core.jsontext import MAX_JSON_CHARS, MAX_JSON_DEPTH, MAX_JSON_INT_DIGITS, MAX_JSON_VALUES, read_json
from selftest.hostile.server import HostileServer, answer
from selftest.strategies import ROOT

JSON_ONLY_HERE = Path("src/llmval/core/jsontext.py")
DECODERS = {"loads", "load", "raw_decode", "model_validate_json", "validate_json", "from_json"}
"""The calls that decode JSON: `json.loads`/`json.load`, a decoder's `raw_decode`, pydantic's `*_json`."""


def _decoders_in(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        name, owner = node.func.attr, node.func.value
        is_json_module = isinstance(owner, ast.Name) and owner.id in ("json", "orjson", "ujson", "simplejson")
        if (name in ("loads", "load") and is_json_module) or name in DECODERS - {"loads", "load"} or \
                (name == "json" and not node.args and not node.keywords):  # httpx's response.json()
            found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node)[:80]}")
        if isinstance(node.func, ast.Attribute) and name == "JSONDecoder":
            found.append(f"{path.relative_to(ROOT)}:{node.lineno}: JSONDecoder")
    return found


def test_no_json_is_decoded_outside_the_one_reader():
    """src/, fixtures/ and tests/: every JSON decode is `read_json` (or `parse_json`, which calls it)."""
    files = [p for folder in ("src", "fixtures", "tests") for p in (ROOT / folder).rglob("*.py")]
    assert len(files) > 100  # the scan saw the package
    found = [hit for path in files if path.relative_to(ROOT) != JSON_ONLY_HERE for hit in _decoders_in(path)]
    assert not found, "decode JSON through llmval.core.jsontext.read_json (llmval.io.answers.parse_json for an " \
                      "HTTP answer), not:\n" + "\n".join(found)


def test_the_scan_finds_each_kind_of_decoder(tmp_path):
    """The scan is not blind: each way of decoding it forbids is found in a planted file."""
    planted = ROOT / "selftest" / "hostile" / "_planted_decoders.py"
    planted.write_text("import json\nimport httpx\n"
                       "def f(r, m, t):\n    json.loads(t)\n    json.load(open(t))\n    r.json()\n"
                       "    m.model_validate_json(t)\n    json.JSONDecoder().raw_decode(t)\n")
    try:
        assert {int(hit.split(":")[1]) for hit in _decoders_in(planted)} == {4, 5, 6, 7, 8}
    finally:
        planted.unlink()


# ---- the bounds -------------------------------------------------------------------------------------------------

HOSTILE = {
    "100000-deep-list": ("[" * 100_000 + "]" * 100_000, "nested too deep"),
    "100000-deep-object": ('{"a":' * 100_000 + "1" + "}" * 100_000, "nested too deep"),
    "65-deep": ("[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1), "nested too deep"),
    "unclosed-100000": ("[" * 100_000, "nested too deep"),
    "5000-digit-int": ('{"version": ' + "9" * 5000 + "}", "an integer of 5000 digits"),
    "41-digit-negative": ("[-" + "1" * (MAX_JSON_INT_DIGITS + 1) + "]", f"{MAX_JSON_INT_DIGITS + 1} digits"),
    "float-overflow": ('{"x": 1e999}', "overflows a float"),
    "nan": ('{"x": NaN}', "NaN is not JSON"),
    "over-16-mi": (lambda: '"' + "a" * MAX_JSON_CHARS + '"', "over the 16 Mi"),  # built when asked: 16 and 64 MiB
    "over-16-mi-bytes": (lambda: b'"' + b"a" * (4 * MAX_JSON_CHARS) + b'"', "over the 16 Mi"),
    "not-json": ("<html>oops</html>", "not JSON"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_each_hostile_json_is_one_parse_error_naming_its_source(case):
    text, said = HOSTILE[case]
    with pytest.raises(ParseError) as raised:
        read_json(text() if callable(text) else text, "GET /server_info")
    assert str(raised.value).startswith("cannot parse GET /server_info: ") and said in str(raised.value), \
        str(raised.value)[:300]


def test_brackets_inside_strings_and_the_deepest_allowed_are_read():
    deepest = "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH
    assert read_json(deepest, "t") is not None
    assert read_json('{"content": "' + "[" * 5000 + '\\"{"}', "t") == {"content": "[" * 5000 + '"{'}
    assert read_json('{"n": ' + "9" * MAX_JSON_INT_DIGITS + ', "f": 1.5e300}', "t")["f"] == 1.5e300


def _filled(unit: str, tail: str, times: int | None = None) -> str:
    """A JSON list of `unit` repeated `times` (to the size cap when None), `tail` its last item; built when a test
    asks (held by the module, 16 MiB texts would stay in the self-test process and in each child it forks)."""
    return "[" + unit * (times or (MAX_JSON_CHARS - len(tail) - 2) // len(unit)) + tail + "]"


WORST = {
    # the most values of each kind under the size cap: parsed, 16 Mi characters of `{},` were 5.6 M dicts, 412 MiB
    "empty-objects": (("{},", "{}"), "about 5592406 values, over the 1000000"),
    "empty-lists": (("[],", "[]"), "values, over the 1000000"),
    "empty-strings": (('"",', '""'), "values, over the 1000000"),
    "ones": (("1,", "1"), "values, over the 1000000"),
    # the deepest under the values cap: brackets 64 deep, then one 65 deep, every level counted
    "64-deep-chains": (("[" * 64 + "]" * 64 + ",", "[" * 65 + "]" * 65, 7000), "nested too deep: 66 levels"),
}


@pytest.mark.parametrize("case", sorted(WORST))
def test_the_worst_texts_under_the_size_cap_are_refused_fast_and_small(case):
    """Each refused before parsing, under 3 s (0.1-1.3 s on the 2-core box) and under 1 GiB."""
    shape, said = WORST[case]
    text = _filled(*shape)
    started = time.monotonic()
    with pytest.raises(ParseError, match=said):
        read_json(text, "worst")
    took = time.monotonic() - started
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    assert took < 3 and peak_mib < 1024, (took, peak_mib)


def test_a_million_values_are_read_and_one_more_is_refused():
    assert len(read_json("[" + ",".join(["1"] * (MAX_JSON_VALUES - 1)) + "]", "t")) == MAX_JSON_VALUES - 1
    with pytest.raises(ParseError, match="over the 1000000"):
        read_json("[" + ",".join(["1"] * MAX_JSON_VALUES) + "]", "t")


# ---- each door of the issue ----------------------------------------------------------------------------------

BOMBS = {"deep": "[" * 100_000 + "]" * 100_000, "bigint": '{"version": ' + "9" * 5000 + ', "model_path": "m"}',
         "list": "[1, 2]"}


def _sglang(server):
    from llmval.engines import adapter_for
    from llmval.inventory import EndpointSpec
    from llmval.io.http import endpoint_client

    spec = EndpointSpec(name="hostile", platform="local", base_url=server.base_url, engine="sglang",
                        model="smollm2", request_timeout_s=5)
    return adapter_for(spec, endpoint_client(spec))


@pytest.mark.parametrize("bomb", sorted(BOMBS))
def test_sglang_server_info_that_nests_or_overflows_is_an_endpoint_error_naming_it(bomb):
    with HostileServer({"/server_info": answer(BOMBS[bomb]), "/get_server_info": answer(BOMBS[bomb])}) as server:
        adapter = _sglang(server)
        with pytest.raises(EndpointError, match=r"\[hostile\] GET /server_info: ") as raised:
            adapter.server_info  # noqa: B018  (the property reads it)
        assert "Traceback" not in str(raised.value)
        assert type(adapter).detect(adapter, []) is None  # not SGLang's ServerArgs: no claim, no traceback


@pytest.mark.parametrize("bomb", sorted(BOMBS))
def test_load_server_identity_that_nests_or_overflows_is_an_endpoint_error_naming_it(bomb):
    from llmval.engines import SglangAdapter
    from llmval.io.http import make_async_client
    from llmval.load import server_identity

    async def identity(base_url: str) -> dict:
        async with make_async_client(base_url, timeout_s=5) as client:
            return await server_identity(client, endpoint="hostile", engine=SglangAdapter, base_url=base_url)

    routes = {"/server_info": answer(BOMBS[bomb]), "/metrics": answer("", status=404)}
    with HostileServer(routes) as server, pytest.raises(EndpointError, match=r"\[hostile\] GET /server_info: "):
        asyncio.run(identity(server.base_url))
    with HostileServer({"/v1/models": answer(BOMBS[bomb])}) as server, \
            pytest.raises(EndpointError, match=r"\[hostile\] GET /v1/models: "):
        asyncio.run(identity(server.base_url))


RAY_NODES = {
    "deep": "[" * 100_000 + "]" * 100_000,
    "bigint": '[{"node_id": "a", "state": "ALIVE", "resources_total": {"GPU": ' + "9" * 5000 + "}}]",
    "resources-string": '[{"node_id": "a", "state": "ALIVE", "resources_total": "abc"}]',
    "resources-list": '[{"node_id": "a", "state": "ALIVE", "resources_total": [1]}]',
    "gpu-string": '[{"node_id": "a", "state": "ALIVE", "resources_total": {"GPU": "one"}}]',
    "legacy-resources-string": '[{"NodeID": "a", "Alive": true, "Resources": "abc"}]',
    "envelope-data-string": '{"data": "abc"}',
    "envelope-result-list": '{"data": {"result": [1]}}',
}


@pytest.mark.parametrize("case", sorted(RAY_NODES))
def test_ray_list_json_of_a_bad_shape_or_over_a_bound_is_a_parse_error(case):
    from llmval.parsers.ray import parse_ray_actors, parse_ray_jobs, parse_ray_nodes

    with pytest.raises(ParseError, match=r"cannot parse ray nodes JSON: "):
        parse_ray_nodes(RAY_NODES[case])
    for parse in (parse_ray_actors, parse_ray_jobs):  # the same text to the other lists: parsed or refused
        try:
            parse(RAY_NODES[case])
        except ParseError:
            pass


def test_a_recording_line_that_nests_too_deep_is_a_recording_error_naming_the_line(tmp_path):
    from llmval.core.errors import RecordingError
    from llmval.io.recording import Replay

    (tmp_path / "commands-1.jsonl").write_text('{"host": "h", "command": "uname -a", "rc": 0, "stdout": '
                                               + "[" * 100_000 + "]" * 100_000 + ', "stderr": ""}\n')
    with pytest.raises(RecordingError, match=r"commands-1.jsonl:1: JSON nested too deep"):
        Replay(tmp_path)


def test_the_suites_own_results_and_baselines_read_back_their_nan_and_infinity(tmp_path):
    """results.json and baselines are written by Python's json (a measured value may be NaN): read with
    `allow_nan`, while every other source refuses NaN (`HOSTILE["nan"]`)."""
    from llmval.report.results import document_bytes, load_results

    path = tmp_path / "results.json"
    path.write_bytes(document_bytes({"deployment": "d", "tests": [{"x": float("nan"), "y": float("inf")}]}))
    test = load_results(path)["tests"][0]
    assert test["x"] != test["x"] and test["y"] == float("inf")
