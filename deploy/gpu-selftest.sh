#!/usr/bin/env bash
# The device self-test, one command on a lent GPU machine: at most 6 minutes (set-up included),
# so that a second try fits in a 15-minute device lease. bench/gpu_selftest.py runs its stages
# (device, languages, spread, clock, floor, l2, selftests, gputests), each under its own budget,
# most valuable first, and writes every row as it finishes: a run that is cut still leaves its
# table. Results go to $OUT when set (the device tool's output folder), else build/gpu-selftest/:
# selftest.md (the table), figures.jsonl, selftest.log (everything printed), pytest-gpu.log.
#
# The machine needs python3 with torch (CUDA), triton and nvcc. The judge's other packages
# (pydantic, tilelang, z3, ...) come as .whl/site-packages.tar.xz (deploy/fetch-gpu-wheels.sh),
# unpacked into a venv by deploy/gpu-env.sh; tools it lacks (bubblewrap) as .whl/bin. Nothing is
# fetched there. Exit: 0 all fine, 1 a row failed, 2 the environment is incomplete, 3 no GPU.
# `DEVICE=cpu` rehearses the stages on the CPU (tests/test_gpu_rehearsal.py does, in a
# container laid out like the lent machine). Extra arguments go to bench/gpu_selftest.py.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT_DIR=${OUT:-build/gpu-selftest}
mkdir -p "$OUT_DIR"
exec > >(tee "$OUT_DIR/selftest.log") 2>&1
started=$SECONDS
. deploy/gpu-env.sh
if [ -d .whl/bin ]; then export PATH="$PATH:$PWD/.whl/bin"; fi  # only where the machine lacks one
PY=$(kjudge_gpu_python) || { echo "gpu-selftest: no Python environment for the judge"; exit 2; }
export PYTHONUNBUFFERED=1 KJUDGE_CACHE_DIR=${KJUDGE_CACHE_DIR:-/tmp/kjudge-cache}
echo "gpu-selftest: $PY ($("$PY" --version 2>&1)), set up in $((SECONDS - started)) s"
# as the harness starts Python (-E -s): every package a judging needs must import so
if ! $PY -E -s -c 'import torch, triton, tilelang, pydantic, yaml, judge.judging.pipeline'; then
    echo "gpu-selftest: a package is missing; carry .whl/site-packages.tar.xz" \
         "(deploy/fetch-gpu-wheels.sh) with the command"
    exit 2
fi
# 6 minutes in all: what the set-up took comes off the stages' budget
budget=$((330 - (SECONDS - started)))
timeout $((budget + 20)) "$PY" bench/gpu_selftest.py --device "${DEVICE:-cuda}" --out "$OUT_DIR" \
    --budget-s "$budget" "$@"
