# Sourced by deploy/gpu-selftest.sh (and by hand on a GPU host): `kjudge_gpu_python` prints the
# Python that the judge and its sandboxed harness run with.
#
# A machine that has python3 with torch, triton and nvcc but not the judge's other packages gets
# them from .whl/site-packages.tar.xz (deploy/fetch-gpu-wheels.sh), unpacked into a virtual
# environment made with --system-site-packages: the harness starts Python with -E -s, which
# ignores PYTHONPATH and the user's site, but finds a venv from the interpreter's own path, and
# the sandboxes bind the venv beside the base installation.
kjudge_gpu_python() {
    local base=${PYTHON:-python3} bundle=${1:-.whl/site-packages.tar.xz}
    local venv=${KJUDGE_GPU_VENV:-$PWD/build/gpu-venv} site
    if [ ! -f "$bundle" ]; then
        command -v "$base"
        return
    fi
    if [ ! -x "$venv/bin/python" ]; then
        "$base" -m venv --system-site-packages --without-pip "$venv" >&2 || return 1
    fi
    site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])') \
        || return 1
    tar -C "$site" -xJf "$bundle" >&2 || return 1
    echo "$PWD" > "$site/kjudge-repo.pth"  # the judge itself (the harness does not need it)
    echo "$venv/bin/python"
}
