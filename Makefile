# Two entry points (see README "Quick start"):
#   make smoke     set everything up, then bring the local engine up, run the smoke contract, tear it down
#   make selftest  set everything up, then run the suite's own tests (what CI runs)
# While you work: `make check`, the fast tier of the self-tests (no engine, no Python child, no namespaces, nothing
# slow; docs/ci.md "Self-tests by cost"). CI still runs everything.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: setup engine smoke nightly selftest check lint schema

$(VENV)/.ready: pyproject.toml setup.py
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip uninstall -q -y llmval 2>/dev/null || true   # the distribution was called llmval before pytest-llmval
	$(PY) -m pip install -q --disable-pip-version-check -e '.[dev]'
	touch $@

engine:
	bash scripts/setup_local_engine.sh

setup: $(VENV)/.ready engine

smoke: setup
	$(PY) -m pytest -m smoke --launch

nightly: setup
	$(PY) -m pytest --launch

selftest: setup
	$(VENV)/bin/lint-imports   # the layers of pyproject.toml [tool.importlinter]
	$(PY) -m pytest selftest --durations=25   # the slowest self-tests named in every CI log (the 30-minute budget)

FAST := not (engine or subprocess or netns or slow)
check: $(VENV)/.ready
	$(VENV)/bin/lint-imports   # the layers of pyproject.toml [tool.importlinter]
	$(PY) -m pytest selftest -q -m "$(FAST)"

lint: $(VENV)/.ready
	$(VENV)/bin/ruff check src fixtures tests selftest scripts

schema: $(VENV)/.ready   # generated, never edited: selftest/inventory fails while the committed file is stale
	$(PY) -m llmval schema > inventories/inventory.schema.json.new
	mv inventories/inventory.schema.json.new inventories/inventory.schema.json
