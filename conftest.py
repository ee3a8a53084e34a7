"""The suite's plugins are registered by the `pytest11` entry point `llmval` (fixtures/, installed as
`llmval.pytest_plugin`), in this checkout through its editable install, as in any repository that installs llmval.
Logic lives in src/llmval. A venv installed before the entry point existed would load no plugin at all: say so."""

from importlib.metadata import entry_points

if not any(entry.name == "llmval" for entry in entry_points(group="pytest11")):
    raise ImportError("llmval's pytest plugin is not installed in this environment (no pytest11 entry point "
                      "'llmval'): run `make setup` or `.venv/bin/pip install -e '.[dev]'` in the checkout")
