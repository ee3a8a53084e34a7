# Two entry points (see README "Quick start"):
#   make smoke     set everything up, then bring the local engine up, run the smoke contract, tear it down
#   make selftest  set everything up, then run the suite's own tests (what CI runs)
# While you work: `make check`, the fast tier of the self-tests (no engine, no Python child, no namespaces, nothing
# slow; docs/ci.md "Self-tests by cost"). CI still runs everything.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# Python writes its bytecode caches (and pytest its assertion-rewritten modules) even where the environment says not
# to: without them every Python process of the self-tests compiles llmval and rewrites hypothesis again, ~1.3 CPU-s
# each (a 1-host smoke: 3.1 against 1.8 user-seconds), and CI starts some hundreds (__pycache__/ is git-ignored)
unexport PYTHONDONTWRITEBYTECODE

.PHONY: setup engine smoke nightly selftest selftest-machine check lint schema

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

# CI's two phases (docs/ci.md "What CI runs"): what needs no engine on two xdist workers (netns, launch-stub and
# ops-repo tests kept on one worker each: selftest/conftest.py ONE_WORKER), then the engine's tests alone, one at
# a time, on a quiet host; both always run, and either failing fails. The 25 slowest of each are named in the
# log (the 30-minute budget).
selftest: setup
	$(VENV)/bin/lint-imports   # the layers of pyproject.toml [tool.importlinter]
	status=0; \
	$(PY) -m pytest selftest -m "not engine and not machine" -n 2 --dist loadgroup --durations=25 || status=$$?; \
	$(PY) -m pytest selftest -m "engine and not machine" --durations=25 || status=$$?; \
	exit $$status

# The machine-scaled perf acceptances of the real engine (selftest/load/test_honest_engine.py, marked `machine`):
# their verdict is this machine's speed against gates, so they are a benchmark that prints its numbers, not CI's
selftest-machine: setup
	$(PY) -m pytest selftest -m machine -s

FAST := not (engine or subprocess or netns or slow)
check: $(VENV)/.ready
	$(VENV)/bin/lint-imports   # the layers of pyproject.toml [tool.importlinter]
	$(PY) -m pytest selftest -q -m "$(FAST)"

lint: $(VENV)/.ready
	$(VENV)/bin/ruff check src fixtures tests selftest scripts

schema: $(VENV)/.ready   # generated, never edited: selftest/inventory fails while the committed file is stale
	$(PY) -m llmval schema > inventories/inventory.schema.json.new
	mv inventories/inventory.schema.json.new inventories/inventory.schema.json
