"""A problem folder sent to the server (`kjudge problem sync`): a gzipped tar unpacked aside, its
schema checked, then put in place of the folder of that name. Organizers only (the folder's
reference runs in the judge's process); still, the archive is read as hostile input: regular
files and folders only, every name inside the folder, sizes and counts capped."""

from __future__ import annotations

import contextlib
import io
import shutil
import tarfile
import uuid
from pathlib import Path, PurePosixPath

from judge.problem.scaffold import SLUG
from judge.problem.schema import ProblemError, load_problem
from judge.service.errors import ServiceError

MAX_ARCHIVE_BYTES = 64 << 20  # as sent (gzipped)
MAX_UNPACKED_BYTES = 256 << 20  # what its files hold in all
MAX_MEMBERS = 10_000
ROUTE_SUFFIX = "/folder"  # PUT /api/problems/{slug}/folder (the body limit's one exception)
STAGING = ".uploading"  # beside the problems: where a folder is unpacked and checked first


def install(problems_dir: Path, slug: str, archive: bytes) -> Path:
    """Put the folder `archive` holds at problems_dir/slug, replacing what is there, once it
    unpacks safely and its problem.yaml validates; else a 422 that says why (nothing changed)."""
    if not SLUG.match(slug):
        raise ServiceError(422, f"{slug!r} is no problem slug: lower case letters, digits, _")
    staging = problems_dir / STAGING / f"{slug}-{uuid.uuid4().hex[:8]}"
    staging.mkdir(parents=True)
    try:
        _unpack(archive, staging)
        try:
            load_problem(staging)
        except ProblemError as exc:
            raise ServiceError(422, "the folder does not validate: "
                                    + "; ".join(str(i) for i in exc.issues)) from None
        target = problems_dir / slug
        old = problems_dir / STAGING / f"{slug}-replaced-{uuid.uuid4().hex[:8]}"
        if target.exists():
            target.rename(old)
        staging.rename(target)
        shutil.rmtree(old, ignore_errors=True)
        return target
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        with contextlib.suppress(OSError):  # another upload may still be staging there
            staging.parent.rmdir()  # nothing left beside the problems


def _unpack(archive: bytes, into: Path) -> None:
    try:
        with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
            members = tar.getmembers()
            _check(members)
            tar.extractall(into, members=members, filter="data")
    except (tarfile.TarError, EOFError, OSError, ValueError) as exc:
        raise ServiceError(422, f"the folder's archive cannot be read: {exc}") from None


def _check(members: list[tarfile.TarInfo]) -> None:
    if len(members) > MAX_MEMBERS:
        raise ServiceError(422, f"the archive holds {len(members)} entries, over {MAX_MEMBERS}")
    total = 0
    for member in members:
        name = PurePosixPath(member.name)
        if name.is_absolute() or ".." in name.parts:
            raise ServiceError(422, f"{member.name}: outside the folder")
        if not (member.isfile() or member.isdir()):
            raise ServiceError(422, f"{member.name}: only files and folders (no links, devices)")
        total += member.size
        if total > MAX_UNPACKED_BYTES:
            raise ServiceError(422, f"the folder holds over {MAX_UNPACKED_BYTES >> 20} MiB")
