#!/usr/bin/env bash
# The device self-test, one command on a GPU machine (at most 7 minutes, so that a second try
# fits in a 15-minute device lease): first the GPU tests (`pytest -m gpu`: timing accuracy, CUDA
# errors as RE, L2 reset, NVML, GPU memory, the spread of five judgings), then the table: every
# problem validated on the device, each AC self-test judged three times (problem, language,
# verdict, speedup, spread, judge overhead), cut at its budget. Results go to $OUT when set (the
# device tool's output folder), else build/gpu-selftest/.
#
# The machine needs python3 with torch (CUDA), triton and nvcc. The judge's other packages
# (pydantic, tilelang, z3, ...) can come as .whl/site-packages.tar.xz (deploy/fetch-gpu-wheels.sh),
# unpacked into a venv by deploy/gpu-env.sh (see deploy/README.md, "GPU self-test").
set -uo pipefail
cd "$(dirname "$0")/.."
. deploy/gpu-env.sh
PY=$(kjudge_gpu_python) || exit 2
OUT_DIR=${OUT:-build/gpu-selftest}
mkdir -p "$OUT_DIR"
export PYTHONUNBUFFERED=1 KJUDGE_CACHE_DIR=${KJUDGE_CACHE_DIR:-/tmp/kjudge-cache}

# as the harness starts Python (-E -s): every package a judging needs must import so
$PY -E -s -c 'import torch, triton, tilelang, pydantic, yaml' || exit 2
$PY -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else "no CUDA device visible")' || exit 2
status=0
timeout 180 $PY -m pytest -q -p no:cacheprovider -m gpu tests/gpu -rs --durations=0 2>&1 \
    | tee "$OUT_DIR/pytest-gpu.log" || status=1
cp build/gpu-timing.json "$OUT_DIR/" 2>/dev/null || true
timeout 220 $PY bench/gpu_selftest.py --device cuda --repeats "${REPEATS:-3}" --budget-s 170 \
    --markdown "$OUT_DIR/selftest.md" "$@" 2>&1 | tee "$OUT_DIR/selftest.log" || status=1
exit $status
