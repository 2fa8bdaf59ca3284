#!/usr/bin/env bash
# Build the local test image for the docker sandbox (no registry here): a minimal root made with
# `docker import`; the host's /usr and Python environment are bind-mounted read-only at run time
# (KJUDGE_DOCKER_HOST_PYTHON=1). Prints the image id, which pins it by digest.
set -euo pipefail
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root"/{etc,tmp,kj,proc,dev,sys,usr,root,work,run}
chmod 1777 "$root/tmp"
for d in bin lib lib64 sbin; do ln -s "usr/$d" "$root/$d"; done
echo "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin" > "$root/etc/passwd"
echo "nogroup:x:65534:" > "$root/etc/group"
cp /etc/ld.so.cache "$root/etc/" 2>/dev/null || true
tar -C "$root" --owner=0 --group=0 -c . | docker import - kjudge-test:latest
