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
# wheels for the base's Python, fetched by this machine's pip; then the base's own pip resolves
# them offline, and what it still asks for is fetched too (markers such as
# python_full_version < "3.11.3" read differently on this machine's 3.11.x)
mapfile -t requirements < <("$PYTHON" -c '
import tomllib
project = tomllib.load(open("pyproject.toml", "rb"))["project"]
extras = project["optional-dependencies"]
print("\n".join(project["dependencies"] + extras["triton"] + extras["postgres"]))')
requirements+=("$TORCH_SPEC" "setuptools>=68" wheel)
rm -f deploy/wheels/*.whl
"$PYTHON" -m pip download -q --dest deploy/wheels --only-binary=:all: "${requirements[@]}"
for _ in 1 2 3 4 5; do
    mapfile -t missing < <(docker run --rm -v "$PWD/deploy/wheels:/wheels:ro" "$BASE" sh -c \
        'python3 -m venv /tmp/v && /tmp/v/bin/pip install -q --dry-run --no-index \
         --find-links /wheels "$@" 2>&1' sh "${requirements[@]}" |
        sed -n 's/.*satisfies the requirement \([^;]*\).*/\1/p' | sed 's/ *$//')
    [ ${#missing[@]} -eq 0 ] && break
    "$PYTHON" -m pip download -q --dest deploy/wheels --only-binary=:all: "${missing[@]}"
done
docker build -q -f deploy/Dockerfile --build-arg BASE="$BASE" --build-arg TORCH_SPEC="$TORCH_SPEC" \
    --build-arg PIP_OFFLINE=--no-index -t "$IMAGE" . >/dev/null
echo "built $IMAGE on $BASE"
