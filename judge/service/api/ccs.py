"""The ICPC CCS Contest API's HTTP side (judge/service/ccs.py holds the mapping): organizers
only, read-only, base URL /api/ccs."""

from __future__ import annotations

import asyncio
import time

from fastapi import APIRouter, Request
from fastapi.responses import Response, StreamingResponse
from sqlalchemy import select
from starlette.concurrency import run_in_threadpool

from judge.service import ccs, db
from judge.service.deps import AdminDep, IdInPath, SessionDep, optional_user
from judge.service.errors import ServiceError
from judge.service.models import Contest, Submission, User

NDJSON = "application/x-ndjson"

router = APIRouter(tags=["ICPC CCS Contest API"])


@router.get("/api/ccs")
def api_information(_admin: AdminDep) -> dict:
    return ccs.api_information()

@router.get("/api/ccs/contests")
def ccs_contests(s: SessionDep, admin: AdminDep) -> list[dict]:
    return [ccs.Feed(s, c, admin).contest_object()
            for c in s.scalars(select(Contest).order_by(Contest.id))]

@router.get("/api/ccs/contests/{cid}")
def ccs_contest(cid: str, s: SessionDep, admin: AdminDep) -> dict:
    return ccs.Feed(s, ccs.get_contest(s, cid), admin).contest_object()

@router.get("/api/ccs/contests/{cid}/state")
def ccs_state(cid: str, s: SessionDep, admin: AdminDep) -> dict:
    return ccs.Feed(s, ccs.get_contest(s, cid), admin).state()

@router.get("/api/ccs/contests/{cid}/scoreboard")
def ccs_scoreboard(cid: str, s: SessionDep, admin: AdminDep) -> dict:
    return ccs.Feed(s, ccs.get_contest(s, cid), admin).scoreboard()

@router.get("/api/ccs/contests/{cid}/submissions/{sid}/files")
def ccs_files(cid: str, sid: IdInPath, s: SessionDep, _admin: AdminDep) -> Response:
    contest = ccs.get_contest(s, cid)
    submission = s.get(Submission, sid)
    if submission is None or submission.contest_id != contest.id:
        raise ServiceError(404, f"no submission {sid} in {cid}")
    return Response(ccs.files_zip(submission), media_type="application/zip")

@router.get("/api/ccs/contests/{cid}/event-feed")
async def ccs_event_feed(cid: str, request: Request, admin: AdminDep,
                         stream: bool = False, timeout_s: float | None = None):
    """NDJSON: every object as an event; `stream=true`: then each one that appears or
    changes, until the client leaves (or `timeout_s`, or a day), or its credential no longer
    signs in this organizer (looked at again every CREDENTIAL_RECHECK_S)."""
    config, reader = request.app.state.settings, admin.id
    checked = time.monotonic()

    def snapshot() -> list | None:
        nonlocal checked
        with db.session(config.database_url) as s:
            if time.monotonic() - checked >= CREDENTIAL_RECHECK_S:
                if not _still_signed_in(request, s, reader):
                    return None
                checked = time.monotonic()
            return ccs.Feed(s, ccs.get_contest(s, cid), s.get(User, reader)).events()

    first = await run_in_threadpool(snapshot)  # a wrong contest is a 404, not a stream
    limit = min(timeout_s if timeout_s is not None else float("inf"),
                ccs.EVENT_FEED_LIMIT.total_seconds())

    async def lines():
        seen: dict = {}
        for line in ccs.changes(seen, first):
            yield line
        ends = time.monotonic() + limit
        while stream and time.monotonic() < ends and not await request.is_disconnected():
            await asyncio.sleep(ccs.POLL_S)
            events = await run_in_threadpool(snapshot)
            if events is None:
                return
            for line in ccs.changes(seen, events):
                yield line
    return StreamingResponse(lines(), media_type=NDJSON)


# A stream lasts up to a day on the credential it opened with: a token revoked, a password
# changed or a role taken away ends it within this many seconds (a Basic password's check
# costs an argon2 hash, hence not at every poll).
CREDENTIAL_RECHECK_S = 5.0


def _still_signed_in(request: Request, s, reader: int) -> bool:
    """Whether the request's credential (token, cookie or Basic) still signs in organizer
    `reader`."""
    try:
        user = optional_user(request, s, request.headers.get("authorization"))
    except ServiceError:
        return False
    return user is not None and user.id == reader and user.is_admin

@router.get("/api/ccs/contests/{cid}/{collection}")
def ccs_collection(cid: str, collection: str, s: SessionDep, admin: AdminDep) -> list[dict]:
    return ccs.Feed(s, ccs.get_contest(s, cid), admin).collection(_known(collection))

@router.get("/api/ccs/contests/{cid}/{collection}/{oid}")
def ccs_object(cid: str, collection: str, oid: str, s: SessionDep, admin: AdminDep) -> dict:
    found = ccs.Feed(s, ccs.get_contest(s, cid), admin).collection(_known(collection))
    for obj in found:
        if obj["id"] == oid:
            return obj
    raise ServiceError(404, f"no {collection} {oid!r} in {cid}")

# the name for the feed, beside the CCS base URL
router.add_api_route("/api/contests/{cid}/event-feed", ccs_event_feed, methods=["GET"])


def _known(collection: str) -> str:
    if collection not in ccs.COLLECTIONS:
        raise ServiceError(404, f"no endpoint {collection!r}: {', '.join(ccs.COLLECTIONS)}, "
                                "state, scoreboard, event-feed")
    return collection
