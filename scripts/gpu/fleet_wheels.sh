#!/bin/bash
# fleet_wheels.sh OUTDIR: the wheels fleet_measure.sh needs on the lent machine without the vLLM kit (~4 MB, one
# carry): the suite's runtime dependencies the image lacks, and pytest, pluggy, pytest-xdist and execnet at the
# versions this checkout's venv holds, so the 16-CPU numbers are made by the same pytest machinery as the 2-core
# ones. Run here, where pip reaches the index; cp312 wheels for the image's Python 3.12 go to OUTDIR/.flw/
# (install_suite.sh installs them into the suite's site, ahead of the image's own copies).
set -euo pipefail
out=${1:?usage: fleet_wheels.sh OUTDIR}
plat="--only-binary=:all: --python-version 3.12 --implementation cp --abi cp312 --abi abi3 --abi none"
for n in 34 31 28 27 26 24 17 5; do plat="$plat --platform manylinux_2_${n}_x86_64"; done
plat="$plat --platform manylinux2014_x86_64 --platform manylinux1_x86_64"
WHEELS=${WHEELS:-"pytest==9.2.0 pluggy==1.7.0 iniconfig==2.3.1 packaging==26.4 pytest-xdist==3.8.0 execnet==2.1.2
  pydantic==2.14.4 pydantic-core==2.50.5 annotated-types==0.8.0 typing-inspection==0.4.5 typing-extensions==4.16.0
  jsonschema==4.26.0 jsonschema-specifications==2025.9.1 referencing==0.37.0 rpds-py==2026.9.1 attrs==26.1.0
  pytest-testinfra==10.2.2 pytest-html==4.2.0 pytest-metadata==3.1.1 pytest-benchmark==5.3.1 py-cpuinfo2==10.1.1
  tomli-w==1.2.0 tomlkit==0.15.2"}
rm -rf "$out/.flw" && mkdir -p "$out/.flw"
# shellcheck disable=SC2086  # word splitting of the lists is meant
python3 -m pip download -q --no-deps $plat -d "$out/.flw" $WHEELS
du -sh "$out/.flw"; ls "$out/.flw"
