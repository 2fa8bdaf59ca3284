"""The API's submission routes: submit, one submission (its result, queue place, CSV, profile
report), the list, a submission's judgings."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response
from pydantic import Field
from sqlalchemy import select

from judge.judging import report
from judge.judging.record import JudgeResult
from judge.service import catalog, errors, queueing, rejudges, sanctions, submissions
from judge.service.api.views import highlight_source, judging_view, submission_view
from judge.service.deps import Body, IdInPath, Mode, SessionDep, SettingsDep, UserDep, answers
from judge.service.models import ProfileReport, Rejudge, Submission, User

router = APIRouter(tags=["submissions"])


class SubmissionIn(Body):
    problem: str
    language: str
    source: str
    contest: str | None = None
    mode: Mode = Field(
        "ranked", description="ranked: counts on the boards; benchmark: judged and timed, "
        "counted nowhere; test: the sample points only, correctness only, counted nowhere; "
        "profile: a sample point's call under Nsight Compute (a contest that takes them)")


@router.post("/api/submissions", status_code=202)
def create_submission(body: SubmissionIn, s: SessionDep, config: SettingsDep,
                      user: UserDep, request: Request) -> dict:
    submission, work = submissions.submit(s, config, user, body.problem, body.language,
                                    body.source, body.contest, body.mode)
    s.commit()  # stored before it is published: a broker failure loses nothing
    request.app.state.publisher.send([work])
    return {"id": submission.id, "judging_id": work.judging_id, "state": "QUEUED"}


@router.get("/api/submissions/{submission_id}")
def get_submission(submission_id: IdInPath, s: SessionDep, user: UserDep,
                   highlight: bool = False) -> dict:
    submission = submissions.get_submission(s, user, submission_id)
    view = submission_view(submission, user, sanction=sanctions.affecting(
        s, [submission]).get(submission.id))
    latest = submissions.latest_judging(submission)
    view["queue"] = queueing.queue_place(s, latest) if latest else None
    if highlight:
        view["source_html"] = highlight_source(view["source"], view["language"])
    return view


@router.get("/api/submissions/{submission_id}/results.csv", responses=answers("text/csv"))
def submission_csv(submission_id: IdInPath, s: SessionDep, user: UserDep) -> Response:
    """The current result per test point, in `kjudge judge --csv`'s schema, made from the
    view the submission's page shows (a contestant's secret points: name and verdict)."""
    view = submission_view(submissions.get_submission(s, user, submission_id), user,
                           with_source=False)
    return Response(report.csv_text(JudgeResult.from_dict(view)), media_type="text/csv",
                    headers={"Content-Disposition":
                             f'attachment; filename="submission-{submission_id}.csv"'})


@router.get("/api/submissions/{submission_id}/profile.ncu-rep",
            responses=answers("application/octet-stream"))
def profile_report(submission_id: IdInPath, s: SessionDep, user: UserDep) -> Response:
    """A profile submission's Nsight Compute report (open it in Nsight Compute's UI)."""
    current = submissions.current_judging(submissions.get_submission(s, user, submission_id))
    found = s.get(ProfileReport, current.id) if current is not None else None
    if found is None:
        raise errors.ServiceError(404, f"submission {submission_id} has no profile report "
                                      "(only a profile submission has one, once judged)")
    return Response(found.data, media_type="application/octet-stream", headers={
        "Content-Disposition": f'attachment; filename="submission-{submission_id}.ncu-rep"'})


@router.get("/api/submissions")
def list_submissions(s: SessionDep, user: UserDep, problem: str | None = None,
                     verdict: str | None = None, user_name: Annotated[
                         str | None, Query(alias="user")] = None,
                     limit: int = Query(100, ge=1, le=1000)) -> list[dict]:
    query = submissions.with_results(select(Submission)).order_by(Submission.id.desc())
    if not user.is_admin:
        query = query.where(submissions.readable_by(user))
    elif user_name:
        query = query.join(User).where(User.name == user_name)
    if problem:
        query = query.where(Submission.problem_id == catalog.get_problem(s, problem).id)
    found = list(s.scalars(query).unique())
    held_off = sanctions.affecting(s, found)
    rows = [submission_view(x, user, with_source=False, sanction=held_off.get(x.id))
            for x in found]
    if verdict:
        rows = [r for r in rows if r["verdict"] == verdict]
    return rows[:limit]


@router.get("/api/submissions/{submission_id}/judgings")
def judgings(submission_id: IdInPath, s: SessionDep, user: UserDep) -> list[dict]:
    """Its judgings, oldest first, with their rejudges' reasons; a staged rejudge's (not
    applied) only for organizers, marked `valid: false`."""
    submission = submissions.get_submission(s, user, submission_id)
    shown = [j for j in submission.judgings if j.valid or user.is_admin]
    reasons = {r.id: r for r in s.scalars(select(Rejudge).where(
        Rejudge.id.in_([j.rejudge_id for j in shown if j.rejudge_id])))}
    return [{**judging_view(j, user.is_admin, user.is_admin), "valid": j.valid,
             "rejudge_reason": reasons[j.rejudge_id].reason if j.rejudge_id else None,
             "rejudge_state": rejudges.state_of(reasons[j.rejudge_id])
             if j.rejudge_id else None} for j in shown]
