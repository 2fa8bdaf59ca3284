# Sourced by deploy/gpu-selftest.sh (and by hand on a GPU host): `kjudge_gpu_python` prints the
# Python that the judge and its sandboxed harness run with.
#
# A machine that has python3 with torch, triton and nvcc but not the judge's other packages gets
# them from .whl/site-packages.tar.xz (deploy/fetch-gpu-wheels.sh), unpacked into a virtual
# environment made with --system-site-packages: the harness starts Python with -E -s, which
# ignores PYTHONPATH and the user's site, but finds a venv from the interpreter's own path, and
# the sandboxes bind the venv beside the base installation.
#
# The base may itself be a venv (the device machines' python3 is /opt/torch/.venv/bin/python3):
# a venv made from it sees only the base *interpreter's* packages, not that venv's, so torch would
# vanish. Its site-packages folders are then named in a .pth file of the new venv, after the
# bundle's own (the bundle's packages win; the base venv's fill in the rest).
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
    # the base venv's own site-packages (nothing when the base is a plain installation)
    "$base" -c 'import site, sys
if sys.prefix != sys.base_prefix:
    print("\n".join(p for p in site.getsitepackages() if p.startswith(sys.prefix)))' \
        > "$site/kjudge-base-venv.pth" || return 1
    echo "$PWD" > "$site/kjudge-repo.pth"  # the judge itself (the harness does not need it)
    echo "$venv/bin/python"
}
