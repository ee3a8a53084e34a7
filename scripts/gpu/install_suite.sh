#!/bin/bash
# scripts/gpu/install_suite.sh: install THIS checkout (the copy that travels with every device command) into
# /tmp/llmval-site, with the suite's own wheels (LLMVAL_SUITE_WHEELS, or .sgw/ and .flw/ when those folders
# travelled: the SGLang kit carries .sgw/, its engine site lacks pytest-testinfra, pytest-html, tomli-w,
# tomlkit; fleet_wheels.sh makes .flw/ for fleet_measure.sh on the bare image; kept in /tmp/suite-wheels for the
# lease's later commands), then name any module the suite needs that is not importable.
# Called by setup.sh (vLLM), sglang/setup.sh and fleet_measure.sh, every time.
set -u
source "$(dirname "$0")/common.sh"
# built from a copy, so the checkout itself is never written (no build/ or egg-info left in it)
rm -rf $SUITE $T/llmval-src && mkdir -p $T/llmval-src && \
  tar -C "$REPO" --exclude='./.dv*' --exclude='./.sg*' --exclude='./.venv*' --exclude='./.cache' --exclude='./.git' \
    --exclude='./build' --exclude='*.egg-info' --exclude='./reports' -cf - . | tar -C $T/llmval-src -xf - || exit 1
if ! python3 -m pip install -q --no-index --no-deps --no-build-isolation --no-cache-dir --target $SUITE $T/llmval-src \
    > $T/suite-install.log 2>&1; then
  # an old setuptools without bdist_wheel (and no `wheel`): lay out what setup.py declares, by hand
  log "pip could not build the suite ($(grep -m1 -o 'error: .*' $T/suite-install.log)): copying it in place"
  rm -rf $SUITE && mkdir -p $SUITE/llmval-0.1.0.dist-info && cp -r $T/llmval-src/src/llmval $SUITE/llmval && \
    cp -r $T/llmval-src/fixtures $SUITE/llmval/pytest_plugin && cp -r $T/llmval-src/tests $SUITE/llmval/contract_tests \
    || exit 1
  printf 'Metadata-Version: 2.1\nName: llmval\nVersion: 0.1.0\n' > $SUITE/llmval-0.1.0.dist-info/METADATA
  printf '[pytest11]\nllmval = llmval.pytest_plugin\n' > $SUITE/llmval-0.1.0.dist-info/entry_points.txt
fi
# The suite's wheels: from LLMVAL_SUITE_WHEELS (folders, ':'-separated: wherever the kit was built), the
# checkout's .sgw/ and .flw/ when they travelled, and $T/suite-wheels, where the wheels of an earlier command of
# this lease were kept (a later command carries no wheels and still finds them).
IFS=: read -r -a extra <<< "${LLMVAL_SUITE_WHEELS:-}"
found=0
for wheels in "${extra[@]}" "$REPO"/.sgw "$REPO"/.flw $T/suite-wheels; do
  [ -n "$wheels" ] && ls "$wheels"/*.whl > /dev/null 2>&1 || continue
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target $SUITE "$wheels"/*.whl \
    || exit 1
  [ "$wheels" = $T/suite-wheels ] || { mkdir -p $T/suite-wheels && cp "$wheels"/*.whl $T/suite-wheels/; }
  found=$((found + 1))
done
[ $found -gt 0 ] || log "no suite wheels (LLMVAL_SUITE_WHEELS, .sgw/, .flw/, $T/suite-wheels): the image's own packages must do"
# importlib.util is a submodule: `import importlib` alone does not bind it on Python 3.11 (it did by accident on
# 3.12, through another import); a dotted name whose parent is missing is missing too
missing=$(PYTHONPATH=$SUITE:$SITE python3 -c "
import importlib.util
def missing(name):
    try:
        return importlib.util.find_spec(name) is None
    except ImportError:
        return True
mods = 'pytest xdist pytest_benchmark pytest_html testinfra pydantic httpx h11 jsonschema prometheus_client matplotlib numpy tomli_w tomlkit markdown_it llmval.pytest_plugin'.split()
print(' '.join(m for m in mods if missing(m)))" 2>&1)
[ -n "$missing" ] && log "WARNING: not importable here: $missing"
exit 0
