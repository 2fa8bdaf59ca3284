"""The API's export: every submission's current result (CSV or JSON), the clarifications, or the
whole database (`kjudge db import`)."""

from __future__ import annotations

import csv
import io

from fastapi import APIRouter
from fastapi.responses import PlainTextResponse
from sqlalchemy import select

from judge.service import clarifications, dump, errors, sanctions, submissions
from judge.service.deps import AdminDep, SessionDep, answers
from judge.service.models import Submission

router = APIRouter(tags=["export"])


@router.get("/api/export", responses=answers("text/csv"))  # format=csv
def export(s: SessionDep, admin: AdminDep, format: str = "json"):
    if format == "dump":  # the whole database, for `kjudge db import`
        return dump.export_dump(s)
    if format == "clarifications":  # every question, answer and announcement
        return [clarifications.view(clar, False, True)
                for clar, _ in reversed(clarifications.listing(s, admin))]
    rows = []
    every = list(s.scalars(select(Submission).order_by(Submission.id)))
    held_off = sanctions.affecting(s, every)
    for submission in every:
        current = submissions.current_judging(submission)
        rows.append({
            "submission": submission.id, "user": submission.user.name,
            "problem": submission.problem.slug, "language": submission.language,
            "mode": submission.mode, "created_at": submission.created_at.isoformat(),
            "verdict": current.verdict if current else None,
            "score": current.score if current else None,
            "speedup": current.speedup if current else None,
            "time_ms": current.time_ms if current else None,
            "judging": current.id if current else None,
            # on the review list, and the organizers' decision (None: held, if flagged)
            "review": current.review if current else None,
            "decision": current.decision if current else None,
            # an organizer's sanction in force that keeps it off the boards
            "sanction": held_off[submission.id].kind if submission.id in held_off else None,
        })
    if format == "csv":
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=list(rows[0]) if rows else ["submission"])
        writer.writeheader()
        writer.writerows(rows)
        return PlainTextResponse(buffer.getvalue(), media_type="text/csv")
    if format != "json":
        raise errors.ServiceError(422, "format must be csv, json, clarifications or dump")
    return rows
