#!/usr/bin/env bash
# On a machine with network: pack what deploy/gpu-selftest.sh adds on a GPU machine that has
# python3 (3.12), torch, triton and nvcc but not the judge's own dependencies (the device
# machines' image: /work/.library/device/KINDS.md lists its packages).
# Writes .whl/site-packages.tar.xz (git-ignored, ~40 MB, under the 64 MiB a device call carries):
# the wheels unpacked (pip is not needed there), with z3-solver's library once (tilelang's
# libtvm_compiler.so links libz3.so.4.15: without it `import tilelang` fails) and without its
# command-line z3; and .whl/bin/bwrap, this machine's bubblewrap (a static-enough binary: it
# needs libc, libcap and libselinux, which that image has), tried there before any fallback.
# deploy/gpu-env.sh unpacks the bundle into a --system-site-packages venv.
# PYVER (default 3.12) picks the wheels' Python; BUNDLE the archive's path; XZ_LEVEL (9) its
# compression.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
PYVER=${PYVER:-3.12}
BUNDLE=${BUNDLE:-.whl/site-packages.tar.xz}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
platforms=()
for p in manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_24_x86_64 manylinux_2_17_x86_64 \
         manylinux2014_x86_64 manylinux1_x86_64; do platforms+=(--platform "$p"); done
$PY -m pip download -q --no-deps --only-binary=:all: --python-version "$PYVER" --implementation cp \
    "${platforms[@]}" -d "$work/wheels" \
    pydantic==2.14.4 pydantic-core==2.50.5 annotated-types==0.8.0 typing-inspection==0.4.5 \
    tilelang==0.1.15 apache-tvm-ffi==0.1.12 torch-c-dlpack-ext==0.1.5 z3-solver==4.15.4.0
mkdir -p "$work/site" "$(dirname "$BUNDLE")"
for wheel in "$work"/wheels/*.whl; do $PY -m zipfile -e "$wheel" "$work/site"; done
rm -rf "$work"/site/z3_solver-*.data                      # the z3 executable
ln -sf libz3.so.4.15 "$work/site/z3/lib/libz3.so"         # the same library, shipped twice
tar -C "$work/site" -cf - . | xz -T0 "-${XZ_LEVEL:-9}" > "$BUNDLE"
if command -v bwrap >/dev/null; then
    mkdir -p "$(dirname "$BUNDLE")/bin"
    cp "$(command -v bwrap)" "$(dirname "$BUNDLE")/bin/bwrap"
fi
du -h "$BUNDLE"
