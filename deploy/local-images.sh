#!/usr/bin/env bash
# The images deploy/compose.yaml needs, made without a registry: a Debian base by debootstrap
# and `docker import` (Python with venv, g++, bubblewrap, and Debian's PostgreSQL and Redis for
# deploy/compose.local.yaml), then the service image built on it from deploy/Dockerfile with
# wheels that this machine's pip provides (no network inside the build).
#
#   deploy/local-images.sh      # kjudge-base:bookworm (kept once made) and kjudge:local
#
# Needs root, debootstrap, a running dockerd, a Debian mirror and pip's index (PyPI, a mirror or
# local wheels). The base's Python (bookworm: 3.11) must be the one of the pip that makes the
# wheels (PYTHON, default python3).
set -euo pipefail
cd "$(dirname "$0")/.."

BASE=${KJUDGE_BASE_IMAGE:-kjudge-base:bookworm}
IMAGE=${KJUDGE_IMAGE:-kjudge:local}
SUITE=${KJUDGE_BASE_SUITE:-bookworm}
MIRROR=${KJUDGE_DEBIAN_MIRROR:-http://deb.debian.org/debian}
TORCH_SPEC=${KJUDGE_TORCH_SPEC:-torch==2.13.0}
PYTHON=${PYTHON:-python3}

if ! docker image inspect "$BASE" >/dev/null 2>&1; then
    root=$(mktemp -d /tmp/kjudge-base-XXXXXX)
    trap 'rm -rf "$root"' EXIT
    debootstrap --variant=minbase \
        --include=python3,python3-venv,g++,bubblewrap,ca-certificates,postgresql,redis-server \
        "$SUITE" "$root" "$MIRROR" >/dev/null
    rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
    tar -C "$root" -c . | docker import \
        --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        --change 'CMD ["/bin/bash"]' - "$BASE" >/dev/null
    echo "made $BASE ($SUITE from $MIRROR)"
fi
want=$(docker run --rm "$BASE" python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')
have=$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
[ "$want" = "$have" ] || { echo "the base has Python $want, $PYTHON is $have" >&2; exit 1; }

"$PYTHON" -m pip wheel -q --wheel-dir deploy/wheels "$TORCH_SPEC" '.[triton,postgres]' \
    'setuptools>=68' wheel
docker build -q -f deploy/Dockerfile --build-arg BASE="$BASE" --build-arg TORCH_SPEC="$TORCH_SPEC" \
    --build-arg PIP_OFFLINE=--no-index -t "$IMAGE" . >/dev/null
echo "built $IMAGE on $BASE"
