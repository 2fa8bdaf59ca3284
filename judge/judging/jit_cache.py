"""JIT caches that persist between judgings of one source, and reach no other.

Trusted side. Triton and TileLang compile a kernel at its first call and keep what they built in
a cache folder (TRITON_CACHE_DIR, TILELANG_CACHE_DIR); on a GPU that first compile takes seconds.
A run's folder is in its own scratch directory, so it is gone with the judging. This module
keeps a copy on the host between judgings, keyed by everything the artifacts depend on — the
source text, the language, its toolchain version, the device kind and architecture — so that a
rejudge, or the same source submitted again, starts with its kernels built. A run writes into its
copy, so what comes back is treated as the run's own output: only regular files are kept (no
links, no devices), up to `MAX_BYTES`, and only ever handed to runs of that same source, never to
another one's. Stale entries cannot change a verdict: the JITs key their own entries by kernel
source and options, and the key here changes with the toolchain.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import uuid
from pathlib import Path

from judge.host.device import DeviceInfo
from judge.languages.base import Language, cache_root
from sandbox import Sandbox

MAX_BYTES = 256 * 2**20
FOLDER = "jit-cache"  # in a run's scratch directory


def root() -> Path:
    return cache_root().parent / "jit"


def key(language: Language, source: str, device: DeviceInfo,
        sandbox: Sandbox | None = None) -> str:
    material = json.dumps([language.name, language.toolchain_version(sandbox), device.kind,
                           device.arch, source])
    return hashlib.sha256(material.encode()).hexdigest()[:24]


def entry(language: Language, source: str, device: DeviceInfo,
          sandbox: Sandbox | None = None) -> Path:
    return root() / key(language, source, device, sandbox)


def restore(cached: Path, scratch: Path) -> Path:
    """The run's cache folder in its scratch directory, filled from `cached` if it exists."""
    target = scratch / FOLDER
    if cached.is_dir():
        _copy_files(cached, target)
    target.mkdir(exist_ok=True)
    for folder in (target, *(p for p in target.rglob("*") if p.is_dir())):
        folder.chmod(0o777)  # the run's user writes there
    return target


def keep(used: Path, cached: Path) -> None:
    """After the run (dead, so nothing moves under us): what it left in its cache folder becomes
    the entry, replacing the old one at once."""
    if not used.is_dir() or used.is_symlink():
        return
    fresh = cached.with_name(f"{cached.name}.tmp-{uuid.uuid4().hex[:8]}")
    try:
        if _copy_files(used, fresh) == 0:
            return
        old = cached.with_name(f"{cached.name}.old-{uuid.uuid4().hex[:8]}")
        if cached.exists():
            cached.rename(old)
        fresh.rename(cached)
        shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(fresh, ignore_errors=True)


def _copy_files(source: Path, target: Path) -> int:
    """Copy the regular files under `source` (links and special files skipped, never followed),
    at most MAX_BYTES of them; returns how many were copied."""
    copied, total = 0, 0
    target.mkdir(parents=True, exist_ok=True)
    for folder, dirs, files in os.walk(source, followlinks=False):
        here = Path(folder)
        dirs[:] = [d for d in dirs if not (here / d).is_symlink()]
        out = target / here.relative_to(source)
        out.mkdir(parents=True, exist_ok=True)
        for name in files:
            path = here / name
            info = path.lstat()
            if not stat.S_ISREG(info.st_mode) or total + info.st_size > MAX_BYTES:
                continue
            try:
                fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
            except OSError:
                continue
            with os.fdopen(fd, "rb") as src, open(out / name, "wb") as dst:
                shutil.copyfileobj(src, dst)
            total += info.st_size
            copied += 1
    return copied
