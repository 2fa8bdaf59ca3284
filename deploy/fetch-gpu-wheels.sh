#!/usr/bin/env bash
# Download, on a machine with network, the wheels deploy/gpu-selftest.sh installs on a GPU machine
# that has python3 (3.12), torch, triton and nvcc but not the judge's own dependencies.
# Writes .whl/ (git-ignored). About 56 MB; z3-solver (38 MB) is left out: TileLang runs without it
# (its Z3 scheduling is off).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
PYVER=${PYVER:-3.12}
platforms=()
for p in manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_24_x86_64 manylinux_2_17_x86_64 \
         manylinux2014_x86_64 manylinux1_x86_64; do platforms+=(--platform "$p"); done
$PY -m pip download -q --no-deps --only-binary=:all: --python-version "$PYVER" --implementation cp \
    "${platforms[@]}" -d .whl \
    pydantic==2.14.4 pydantic-core==2.50.5 annotated-types==0.8.0 typing-inspection==0.4.5 \
    tilelang==0.1.15 apache-tvm-ffi==0.1.12 torch-c-dlpack-ext==0.1.5
du -sh .whl
