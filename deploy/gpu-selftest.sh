#!/usr/bin/env bash
# The device self-test, one command on a GPU machine, within bench/gpu_selftest.py's ALLOWANCE_S
# (8 minutes, set-up included) by its own accounting. Its stages run most valuable first, each
# under a budget of its own (their sum and a set-up reserve fit the allowance: the script refuses
# to start otherwise), and every row and figure is written as it finishes, so a run that is cut
# still leaves its table. Results go to $OUT when set, else build/gpu-selftest/: selftest.md
# (the table), figures.jsonl, selftest.log (everything printed), pytest-gpu.log, gpu-timing.json.
#
#   bash deploy/gpu-selftest.sh                      # every stage
#   bash deploy/gpu-selftest.sh --resume figures.jsonl   # only what an earlier run did not finish
#
# The machine needs python3 with torch (CUDA) and nvcc; triton comes with torch. The judge's other
# packages (pydantic, tilelang, z3, ...) come as .whl/site-packages.tar.xz
# (deploy/fetch-gpu-wheels.sh), unpacked into a venv by deploy/gpu-env.sh; tools it lacks
# (bubblewrap) as .whl/bin. Nothing is fetched there. Optional parts (TileLang, Nsight Compute,
# NVML) that are missing or do not load are skipped rows, not a stop.
# Exit: 0 what ran passed (the last row names stages left for lack of time and how to resume),
# 1 a row failed or a stage was cut, 2 the environment is incomplete, 3 no GPU.
# `DEVICE=cpu` rehearses the stages on the CPU (tests/test_gpu_rehearsal.py does, in a
# container laid out like a bare GPU machine). Extra arguments go to bench/gpu_selftest.py.
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
# as the harness starts Python (-E -s): what every judging needs must import so (TileLang is a
# language of its own: its stage row says when it does not load)
if ! $PY -E -s -c 'import torch, pydantic, yaml, judge.judging.pipeline'; then
    echo "gpu-selftest: a package is missing; carry .whl/site-packages.tar.xz" \
         "(deploy/fetch-gpu-wheels.sh) with the command"
    exit 2
fi
allowance=$("$PY" bench/gpu_selftest.py --print-allowance "$@") || exit 2
timeout $((allowance - (SECONDS - started) + 15)) "$PY" bench/gpu_selftest.py \
    --device "${DEVICE:-cuda}" --out "$OUT_DIR" --setup-s $((SECONDS - started)) "$@"
