"""junit for CI: the testsuite named after the deployment, could-not-check as <error>, suite properties.

pytest's junitxml writes the file; `finish_junit` rewrites it from the run's typed results (`RunResults`):

- the `<testsuite>` is named after the deployment and carries `inventory`, `mode`, `engine.<endpoint>`
  (kind and, when this run read it, version) as properties;
- a test whose deciding verdict is could-not-check becomes `<error type="ModelNotServed" message=...>`
  instead of `<failure>` (CI can tell a broken probe from a broken contract), and the counts follow;
- every `<failure>` and `<error>` has a `type` (CI dashboards group by it): `ContractBroken`, a could-not-check's
  error, `BlockerLifted`, else the exception's class (`TestResult.error_type`);
- every value written here passes `llmval.report.escape.xml_text` (a `/version` holding ESC or NUL would
  otherwise make the file unparseable for CI).

Each `<testcase>` already carries `host`, `check`, `expected`, `observed`, `hint` (fixtures/evidence.py).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

from ..core.contract import cut
from ..core.verdict import Cause
from ..inventory import Inventory
from .escape import xml_text
from .files import write_bytes
from .results import RunResults

ENGINE_VERSION_MEASURE = "serving.engine.version"


def junit_names(nodeid: str) -> tuple[str, str]:
    """(classname, name) pytest's junitxml gives a test id: `tests/x/test_a.py::t[p]` → (`tests.x.test_a`, `t[p]`)."""
    path, bracket, params = nodeid.partition("[")
    names = path.split("::")
    names[0] = re.sub(r"\.py$", "", names[0].replace("/", "."))
    names[-1] += bracket + params
    return ".".join(names[:-1]), names[-1]


def suite_properties(results: RunResults, inventory: Inventory) -> dict[str, str]:
    """`inventory`, `mode` and one `engine.<endpoint>` property per endpoint (kind, version when measured)."""
    versions = {m.target: str(m.value) for t in results.tests for m in t.measured if m.name == ENGINE_VERSION_MEASURE}
    properties = {"deployment": results.deployment, "inventory": results.inventory, "mode": results.mode}
    if results.markexpr:
        properties["markexpr"] = results.markexpr
    for endpoint in inventory.endpoints:
        version = versions.get(endpoint.name)
        properties[f"engine.{endpoint.name}"] = endpoint.engine + (f" {version}" if version else "")
    return properties


def finish_junit(path: Path, results: RunResults, inventory: Inventory) -> None:
    """Rewrite pytest's junit XML at `path` as described in the module docstring (no-op if it is missing)."""
    path = Path(path)
    if not path.is_file():
        return
    tree = ET.parse(path)
    root = tree.getroot()
    suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
    errored = {junit_names(t.nodeid): t for t in results.tests if t.outcome == "error"}
    typed = {junit_names(t.nodeid): t.error_type for t in results.tests if t.error_type}
    for suite in suites:
        suite.set("name", xml_text(results.deployment or suite.get("name", "pytest")))
        old = suite.find("properties")
        if old is not None:
            suite.remove(old)
        properties = ET.Element("properties")
        for name, value in suite_properties(results, inventory).items():
            ET.SubElement(properties, "property", name=xml_text(name), value=xml_text(value))
        suite.insert(0, properties)
        moved = 0
        for case in suite.iter("testcase"):
            names = (case.get("classname", ""), case.get("name", ""))
            for element in (*case.findall("failure"), *case.findall("error")):
                if not element.get("type"):  # pytest's junitxml writes none: every one gets the run's type
                    element.set("type", xml_text(typed.get(names, "") or element.tag.capitalize()))
            test = errored.get(names)
            failure = case.find("failure")
            if test is None or failure is None:
                continue
            verdict = test.failing
            failure.tag = "error"
            if verdict is not None and verdict.cause == Cause.COULD_NOT_CHECK:
                failure.set("type", xml_text(verdict.error))
                failure.set("message", xml_text(f"could not check ({verdict.error}): {cut(verdict.observed, 300)}"))
            moved += 1
        if moved:
            suite.set("failures", str(int(suite.get("failures", "0")) - moved))
            suite.set("errors", str(int(suite.get("errors", "0")) + moved))
    write_bytes(path, ET.tostring(root, encoding="utf-8", xml_declaration=True))
