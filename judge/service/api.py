"""The REST API (FastAPI; OpenAPI at /docs). Stateless: any number of these behind a proxy.

Errors are JSON objects {"error": "what is wrong and how to fix it"} with a 4xx status.
"""

from __future__ import annotations

import csv
import hmac
import io
import json
import logging
import threading
import time
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Annotated, Literal

from fastapi import FastAPI, Header, HTTPException, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST
from pydantic import BaseModel, Field
from sqlalchemy import func, select
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session, object_session
from starlette.exceptions import HTTPException as StarletteHTTPException

from judge.judging import report
from judge.judging.guard import GuardReport
from judge.judging.record import JudgeResult
from judge.languages import get_language
from judge.problem import signature
from judge.problem.schema import ProblemError, load_problem
from judge.service import (
    accounts,
    api_accounts,
    api_ccs,
    audit,
    broker,
    clarifications,
    contests,
    db,
    dump,
    metrics,
    rejudges,
    sanctions,
    store,
    windows,
)
from judge.service.deps import (
    AdminDep,
    AuditDep,
    Body,
    IdInPath,
    OptionalUserDep,
    RowId,
    SessionDep,
    SettingsDep,
    UserDep,
)
from judge.service.models import (
    Contest,
    JudgingRow,
    Participation,
    ProblemRow,
    ProfileReport,
    Rejudge,
    Sanction,
    Submission,
    User,
)
from judge.settings import Settings, settings
from judge.verdicts import SUBMISSION_MODES, State

log = logging.getLogger("kjudge.api")
JANITOR_INTERVAL_S = 5.0


# -- request bodies --------------------------------------------------------------------------
Mode = Literal[SUBMISSION_MODES]  # a submission's mode
class SubmissionIn(Body):
    problem: str
    language: str
    source: str
    contest: str | None = None
    mode: Mode = Field(
        "ranked", description="ranked: counts on the boards; benchmark: judged and timed, "
        "counted nowhere; test: the sample points only, correctness only, counted nowhere; "
        "profile: a sample point's call under Nsight Compute (a contest that takes them)")


class Quota(Body):
    per_hour: int | None = Field(None, ge=0, description="per user and problem, in any hour")
    per_contest: int | None = Field(None, ge=0, description="per user and problem, in all")


class RejudgeIn(Body):
    reason: str
    submission_ids: list[RowId] | None = None
    problem: str | None = None
    user: str | None = None
    verdict: str | None = None
    since: datetime | None = None
    staged: bool = Field(False, description="judge aside: nothing counts until it is applied "
                         "(POST /api/rejudge/{id}/apply) after reading its diff")


class ContestFields(Body):
    """What an organizer sets of a contest (every field optional in a PATCH)."""

    title: str | None = None
    problems: list[str] | None = None
    starts_at: datetime | None = None
    ends_at: datetime | None = None
    languages: list[str] | None = None
    device: str | None = None
    public: bool | None = Field(None, description="its board is readable without signing in")
    hold_flagged: bool | None = Field(None, description="results on the review list count on "
                                      "its board only once an organizer clears them (default)")
    system_test: bool | None = Field(None, description="when it ends, its leaders are judged "
                                     "again on fresh seeds and the final board counts those "
                                     "(default)")
    teams: bool | None = Field(None, description="ranked by the users' teams")
    profile: bool | None = Field(None, description="takes profile submissions (Nsight Compute "
                                 "over one sample point's call; an NVIDIA device)")
    window_s: int | None = Field(None, ge=60, description="per-user windows: each contestant "
                                 "starts when they choose and has this long (by ends_at)")
    quotas: dict[Mode, Quota] | None = Field(
        None, description="caps per submission mode (0: the mode is refused)")
    freeze_at: datetime | None = Field(None, description="from then, all but organizers see "
                                       "the board as it stood")
    thaw_at: datetime | None = Field(None, description="when the final board is published")
    thaw_after_end_s: int | None = Field(None, ge=0, description="thaw_at = ends_at + this")


class SystemTestIn(Body):
    reason: str = Field("", max_length=2000)


class DecisionIn(Body):
    decision: str = Field(description="`cleared` (it counts) or `disqualified` (it counts nowhere)")
    note: str = Field("", max_length=2000, description="why, for the other organizers")


class SanctionIn(Body):
    kind: str = Field(description="`ignore` a submission, `disqualify` a user or team from a "
                      "contest, `ban` a user from submitting")
    reason: str = Field(max_length=2000, description="shown to the one sanctioned")
    submission: RowId | None = None
    user: str | None = None
    team: str | None = None
    contest: str | None = None


class LiftIn(Body):
    reason: str = Field(max_length=2000)


class QuestionIn(Body):
    text: str = Field(max_length=clarifications.MAX_TEXT)
    problem: str | None = None
    contest: str | None = None


class AnswerIn(Body):
    text: str = Field(max_length=clarifications.MAX_TEXT)
    public: bool = Field(False, description="to everyone (the asker's name is not shown)")


class AnnouncementIn(QuestionIn):
    pass


class ReadIn(Body):
    ids: list[RowId] | None = Field(None, description="none: everything this user reads")


class ExtraTimeIn(Body):
    extra_s: int = Field(ge=0, le=7 * 24 * 3600, description="set, not added: 0 takes it away")


class ContestIn(ContestFields):
    slug: str = Field(pattern=r"^[a-z0-9_-]{1,64}$")
    title: str
    problems: list[str]
    device: str = "cpu"


class ErrorOut(BaseModel):
    """Every error answer's body (4xx, and the 503 of an unreachable database)."""

    error: str = Field(description="what is wrong and how to fix it")


# the answers any route may give besides its own (documented in the OpenAPI document)
ERRORS = {status: {"model": ErrorOut, "description": what} for status, what in {
    400: "the body is not JSON", 401: "no valid token", 403: "not allowed for this user",
    404: "no such thing", 409: "conflicts with what exists", 413: "source or body over the limit",
    422: "malformed request, or a submission this problem or contest cannot take",
    429: "over a rate or a quota: the message says when the next is taken (Retry-After)",
    503: "the database is unreachable for a moment (Retry-After)"}.items()}


# -- plumbing ---------------------------------------------------------------------------------
def body_limit(config: Settings) -> int:
    """The largest request body taken: the largest source, JSON-escaped at worst (six bytes a
    character: \\u0001), and room for the other fields."""
    return config.max_source_kb * 1024 * 6 + 64 * 1024


class BodyLimit:
    """ASGI middleware: a body over `limit` bytes is a 413 before it is read whole (by its
    Content-Length, or while it streams in without one); the server would hold it all in
    memory otherwise."""

    def __init__(self, app, limit: int):
        self.app, self.limit = app, limit

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        length = dict(scope["headers"]).get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > self.limit):
            status = 400 if not length.isdigit() else 413
            return await JSONResponse({"error": self._message(length)},
                                      status_code=status)(scope, receive, send)
        seen = 0

        async def counted():
            nonlocal seen
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > self.limit:  # FastAPI passes an HTTPException out of its body reading
                raise HTTPException(413, self._message(None))
            return message
        return await self.app(scope, counted, send)

    def _message(self, length: bytes | None) -> str:
        if length is not None and not length.isdigit():
            return "Content-Length is not a number of bytes"
        return f"the request body is over {self.limit // 1024} KiB"


def _janitor(app: FastAPI, stop: threading.Event) -> None:
    """Sweeps every few seconds, in one API process of the host: the others wait on its lock
    (a sweep reads every queued judging: once per host is enough, the sweep is idempotent)."""
    import fcntl

    config = app.state.settings
    config.data_dir.mkdir(parents=True, exist_ok=True)
    with open(config.data_dir / "janitor.lock", "w") as lock:
        while not stop.is_set():
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError:
                stop.wait(JANITOR_INTERVAL_S)
        _sweep_until(app, stop)


def _sweep_until(app: FastAPI, stop: threading.Event) -> None:
    while not stop.wait(JANITOR_INTERVAL_S):
        try:
            broker.sweep(app.state.settings)
        except Exception as exc:
            log.warning("janitor sweep failed: %s", exc)


@asynccontextmanager
async def lifespan(app: FastAPI):
    stop = threading.Event()
    if app.state.janitor:
        threading.Thread(target=_janitor, args=(app, stop), daemon=True).start()
    yield
    stop.set()
    app.state.publisher.close()


def create_app(config: Settings | None = None, janitor: bool = True) -> FastAPI:
    app = FastAPI(title="kernel-judge", version="0.1.0", lifespan=lifespan, responses=ERRORS)
    app.state.settings = config or settings()
    app.state.janitor = janitor
    app.state.publisher = broker.Publisher(app.state.settings)
    app.add_middleware(BodyLimit, limit=body_limit(app.state.settings))

    @app.middleware("http")
    async def _latency(request: Request, call_next):
        """Each request's time, by its route's template (not its path: ids would make a series
        each) for the operators' metrics."""
        started = time.perf_counter()
        response = await call_next(request)
        route = request.scope.get("route")
        metrics.REQUEST_SECONDS.labels(request.method, getattr(route, "path", "unmatched"),
                                       str(response.status_code)).observe(
            time.perf_counter() - started)
        return response

    @app.exception_handler(store.ServiceError)
    async def _service_error(_request: Request, exc: store.ServiceError):
        headers = ({"Retry-After": str(max(round(exc.retry_after_s), 1))}
                   if exc.retry_after_s is not None else None)
        return JSONResponse({"error": exc.message}, status_code=exc.status, headers=headers)

    @app.exception_handler(DBAPIError)
    async def _database_error(_request: Request, exc: DBAPIError):
        if not db.unreachable(exc):
            raise exc  # a query the database refused: a bug, the 500 it is
        log.warning("database unreachable: %s", str(exc).splitlines()[0])
        return JSONResponse({"error": "the database is unreachable for a moment; try again"},
                            status_code=503, headers={"Retry-After": "2"})

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(_request: Request, exc: StarletteHTTPException):
        # Starlette's own 404 (no route) and 405 (wrong method), in this API's shape
        return JSONResponse({"error": str(exc.detail)}, status_code=exc.status_code,
                            headers=exc.headers)

    @app.exception_handler(RequestValidationError)
    async def _bad_request(_request: Request, exc: RequestValidationError):
        parts = []
        for err in exc.errors():
            where = ".".join(str(p) for p in err["loc"] if p != "body") or "body"
            parts.append(f"{where}: {err['msg']}")
        return JSONResponse({"error": "malformed request: " + "; ".join(parts)},
                            status_code=422)

    _routes(app)
    from judge import web

    web.mount(app)
    return app


# -- views ----------------------------------------------------------------------------------
def render_markdown(text: str) -> str:
    """Statements are written by organizers (trusted): Markdown with code blocks and tables."""
    import markdown

    return markdown.markdown(text, extensions=["fenced_code", "tables"])


def highlight_source(source: str, language: str) -> str:
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import get_lexer_by_name

    lexer = get_lexer_by_name(get_language(language).lexer)
    return highlight(source, lexer, HtmlFormatter(noclasses=True, nowrap=False))


# what only organizers see of a record: the judge's own notes and what ran where
ORGANIZER_FIELDS = ("flags", "holds", "guard", "applied", "requested")


def judging_view(judging: JudgingRow | None, show_secret: bool, admin: bool) -> dict:
    """A judging as the API shows it: its record (judge/judging/record.py), secret test points
    reduced to their verdicts unless `show_secret`, organizers' fields only for `admin`, and the
    row's own state and times."""
    if judging is None:
        return {}
    record = dict(judging.record or {})
    record["tests"] = [t if show_secret or t.get("sample") else
                       {"name": t["name"], "verdict": t.get("verdict"), "sample": False}
                       for t in record.get("tests") or []]
    applied = record.get("applied") or {}
    view = {key: value for key, value in record.items()
            if admin or key not in ORGANIZER_FIELDS}
    view.update({
        "judging_id": judging.id, "state": judging.state, "verdict": judging.verdict,
        "score": judging.score, "speedup": judging.speedup, "time_ms": judging.time_ms,
        "worker": judging.worker, "queued_at": judging.queued_at,
        "started_at": judging.started_at, "finished_at": judging.finished_at,
        "rejudge_id": judging.rejudge_id, "sandbox": applied.get("sandbox"),
        "judge_version": applied.get("judge"),
        # on the review list: held off the boards until an organizer decides (what was
        # flagged is the organizers' to read)
        "review": judging.review, "decision": judging.decision,
    })
    if admin:
        view["attempts"] = judging.attempts
        view["decision_note"] = judging.decision_note
    return view


def submission_view(submission: Submission, user: User, with_source: bool = True,
                    sanction: Sanction | None = None) -> dict:
    """`sanction`: the one in force that keeps it off the boards (`sanctions.affecting`)."""
    current = store.current_judging(submission)
    latest = store.latest_judging(submission)
    view = {
        "id": submission.id, "user": submission.user.name, "problem": submission.problem.slug,
        "language": submission.language, "mode": submission.mode,
        "created_at": submission.created_at,
        "verdict": None, "score": 0.0, "speedup": None, "time_ms": None, "memory_mb": None,
        "tests": [],
    }
    view.update(judging_view(current, show_secret=user.is_admin, admin=user.is_admin))
    view["language"] = submission.language  # the submission's own, whatever a record says
    # off the boards until an organizer decides (a contest may count flagged results)
    view["held"] = current is not None and store.held(object_session(submission), current)
    view["state"] = latest.state if latest else State.QUEUED.value
    view["sanction"] = sanctions.brief(sanction) if sanction else None
    if with_source:
        view["source"] = submission.source
    return view


def review_view(submission: Submission, judging: JudgingRow) -> dict:
    record = judging.record or {}
    holds = record.get("holds") or (  # records from before holds: KernelGuard's hard hits
        GuardReport.from_dict(record["guard"]).holds(submission.source)
        if record.get("guard") else [])
    return {"submission_id": submission.id, "user": submission.user.name,
            "problem": submission.problem.slug, "language": submission.language,
            "judging_id": judging.id, "verdict": judging.verdict, "score": judging.score,
            "finished_at": judging.finished_at, "holds": holds,
            "decision": judging.decision, "decided_at": judging.decided_at,
            "decision_note": judging.decision_note}


def rejudge_view(s: Session, record: Rejudge) -> dict:
    return {"id": record.id, "reason": record.reason, "filters": record.filters,
            "kind": record.kind, "state": rejudges.state_of(record),
            "created_at": record.created_at, "settled_at": record.settled_at,
            **store.rejudge_progress(s, record.id)}


def contest_view(contest: Contest) -> dict:
    """Times with their offset (UTC): a page's clock reads a time without one as local."""
    times = {name: store.aware(getattr(contest, name))
             for name in (*store.CONTEST_TIMES, "unfrozen_at")}
    return {"slug": contest.slug, "title": contest.title, "problems": contest.problems,
            "languages": contest.languages, "device": contest.device, "public": contest.public,
            "teams": contest.teams, "hold_flagged": contest.hold_flagged,
            "quotas": contest.quotas, "window_s": contest.window_s, "profile": contest.profile,
            "system_test": contest.system_test, **times,
            "frozen": store.contest_frozen(contest), "state": contests.contest_state(contest)}


def _configure(s: Session, contest: Contest, fields: dict) -> None:
    for slug in fields.get("problems") or []:
        store.get_problem(s, slug)
    store.configure_contest(contest, fields)
    windows.refresh(s, contest)  # its times or window moved every participant's end
    store.results_changed(s)  # e.g. `hold_flagged`: the board outside contests counts it too


def _routes(app: FastAPI) -> None:
    api_accounts.register(app)
    api_ccs.register(app)
    @app.get("/metrics", include_in_schema=False)
    def prometheus_metrics(config: SettingsDep,
                           authorization: Annotated[str | None, Header()] = None) -> Response:
        """Prometheus' text format (judge/service/metrics.py); with KJUDGE_METRICS_TOKEN set,
        only for `Authorization: Bearer <that token>`."""
        wanted = config.metrics_token
        if wanted and not hmac.compare_digest(authorization or "", f"Bearer {wanted}"):
            raise store.ServiceError(401, "send the metrics token: Authorization: Bearer "
                                          "<KJUDGE_METRICS_TOKEN>")
        body = metrics.exposition(lambda: db.session(config.database_url))
        return Response(body, media_type=CONTENT_TYPE_LATEST)

    @app.get("/api/health")
    def health() -> dict:
        return {"ok": True}

    @app.get("/api/problems")
    def problems(s: SessionDep, user: OptionalUserDep = None) -> list[dict]:
        rows = s.scalars(select(ProblemRow).where(ProblemRow.active).order_by(ProblemRow.slug))
        stats = store.problem_stats(s, user)
        return [{"slug": p.slug, "title": p.title, "languages": p.languages,
                 "version": p.version, **stats.get(p.slug, {"solvers": 0, "best_score": None})}
                for p in rows]

    @app.get("/api/problems/{slug}")
    def problem(slug: str, s: SessionDep) -> dict:
        row = store.get_problem(s, slug)
        try:
            loaded = load_problem(row.path)
        except ProblemError as exc:
            raise store.ServiceError(503, f"problem {slug} is being fixed: {exc}") from None
        spec = loaded.spec
        templates = {}
        for language in spec.languages:
            path = loaded.template_path(language)
            templates[language] = {"file": path.name, "source": path.read_text()}
        statement = loaded.path / "statement.md"
        text = statement.read_text() if statement.is_file() else ""
        return {
            "slug": row.slug, "title": spec.title, "version": loaded.version,
            "statement": text, "statement_html": render_markdown(text),
            "languages": spec.languages,
            "lexers": {lang: get_language(lang).lexer for lang in spec.languages},
            "signature": {lang: get_language(lang).declaration(spec.signature)
                          for lang in spec.languages},
            "arguments": signature.describe(spec.signature),
            "tolerance": spec.tolerance.model_dump(), "checker": spec.checker,
            "limits": spec.limits.model_dump(), "scoring": spec.scoring.model_dump(),
            "templates": templates,
            "samples": [{"name": t.name, "params": t.params, "devices": list(t.devices)}
                        for t in loaded.tests if t.sample],
            "test_points": len(loaded.tests),
        }

    @app.post("/api/problems/reload")
    def reload_problems(s: SessionDep, config: SettingsDep, audit_log: AuditDep) -> dict:
        invalid = store.sync_problems(s, config)
        loaded = s.scalars(select(ProblemRow.slug).where(ProblemRow.active)).all()
        audit_log("problems.reload", "problems", loaded=sorted(loaded),
                  invalid=sorted(invalid) or None)
        return {"loaded": sorted(loaded), "invalid": invalid}

    @app.post("/api/submissions", status_code=202)
    def create_submission(body: SubmissionIn, s: SessionDep, config: SettingsDep,
                          user: UserDep, request: Request) -> dict:
        submission, work = store.submit(s, config, user, body.problem, body.language,
                                        body.source, body.contest, body.mode)
        s.commit()  # stored before it is published: a broker failure loses nothing
        request.app.state.publisher.send([work])
        return {"id": submission.id, "judging_id": work.judging_id, "state": "QUEUED"}

    @app.get("/api/submissions/{submission_id}")
    def get_submission(submission_id: IdInPath, s: SessionDep, user: UserDep,
                       highlight: bool = False) -> dict:
        submission = store.get_submission(s, user, submission_id)
        view = submission_view(submission, user, sanction=sanctions.affecting(
            s, [submission]).get(submission.id))
        latest = store.latest_judging(submission)
        view["queue"] = store.queue_place(s, latest) if latest else None
        if highlight:
            view["source_html"] = highlight_source(view["source"], view["language"])
        return view

    @app.get("/api/submissions/{submission_id}/results.csv")
    def submission_csv(submission_id: IdInPath, s: SessionDep, user: UserDep) -> Response:
        """The current result per test point, in `kjudge judge --csv`'s schema, made from the
        view the submission's page shows (a contestant's secret points: name and verdict)."""
        view = submission_view(store.get_submission(s, user, submission_id), user,
                               with_source=False)
        return Response(report.csv_text(JudgeResult.from_dict(view)), media_type="text/csv",
                        headers={"Content-Disposition":
                                 f'attachment; filename="submission-{submission_id}.csv"'})

    @app.get("/api/submissions/{submission_id}/profile.ncu-rep")
    def profile_report(submission_id: IdInPath, s: SessionDep, user: UserDep) -> Response:
        """A profile submission's Nsight Compute report (open it in Nsight Compute's UI)."""
        current = store.current_judging(store.get_submission(s, user, submission_id))
        found = s.get(ProfileReport, current.id) if current is not None else None
        if found is None:
            raise store.ServiceError(404, f"submission {submission_id} has no profile report "
                                          "(only a profile submission has one, once judged)")
        return Response(found.data, media_type="application/octet-stream", headers={
            "Content-Disposition": f'attachment; filename="submission-{submission_id}.ncu-rep"'})

    @app.get("/api/submissions")
    def list_submissions(s: SessionDep, user: UserDep, problem: str | None = None,
                         verdict: str | None = None, user_name: Annotated[
                             str | None, Query(alias="user")] = None,
                         limit: int = Query(100, ge=1, le=1000)) -> list[dict]:
        query = store.with_results(select(Submission)).order_by(Submission.id.desc())
        if not user.is_admin:
            query = query.where(store.readable_by(user))
        elif user_name:
            query = query.join(User).where(User.name == user_name)
        if problem:
            query = query.where(Submission.problem_id == store.get_problem(s, problem).id)
        found = list(s.scalars(query).unique())
        held_off = sanctions.affecting(s, found)
        rows = [submission_view(x, user, with_source=False, sanction=held_off.get(x.id))
                for x in found]
        if verdict:
            rows = [r for r in rows if r["verdict"] == verdict]
        return rows[:limit]

    @app.get("/api/submissions/{submission_id}/judgings")
    def judgings(submission_id: IdInPath, s: SessionDep, user: UserDep) -> list[dict]:
        """Its judgings, oldest first, with their rejudges' reasons; a staged rejudge's (not
        applied) only for organizers, marked `valid: false`."""
        submission = store.get_submission(s, user, submission_id)
        shown = [j for j in submission.judgings if j.valid or user.is_admin]
        reasons = {r.id: r for r in s.scalars(select(Rejudge).where(
            Rejudge.id.in_([j.rejudge_id for j in shown if j.rejudge_id])))}
        return [{**judging_view(j, user.is_admin, user.is_admin), "valid": j.valid,
                 "rejudge_reason": reasons[j.rejudge_id].reason if j.rejudge_id else None,
                 "rejudge_state": rejudges.state_of(reasons[j.rejudge_id])
                 if j.rejudge_id else None} for j in shown]

    @app.get("/api/review")
    def review(s: SessionDep, _admin: AdminDep, limit: int = Query(200, ge=1, le=1000),
               undecided: bool = False) -> list[dict]:
        """Submissions on the review list (a charged forgery, a time under physics, a
        hard-tier KernelGuard hit: `holds`, each with its test point or source line), held off
        the boards until an organizer decides (POST /api/review/{judging_id})."""
        return [review_view(sub, judging) for sub, judging in store.review_list(s, limit,
                                                                                undecided)]

    @app.post("/api/review/{judging_id}")
    def decide(judging_id: IdInPath, body: DecisionIn, s: SessionDep,
               audit_log: AuditDep) -> dict:
        """Clear a held result (it counts as judged) or disqualify it (it counts nowhere)."""
        judging = store.decide(s, audit_log.admin, judging_id, body.decision, body.note)
        audit_log("review.decide", f"judging {judging_id}", decision=body.decision,
                  submission=judging.submission_id, note=body.note or None)
        s.commit()
        return review_view(judging.submission, judging)

    @app.get("/api/sanctions")
    def list_sanctions(s: SessionDep, _admin: AdminDep, everything: bool = False) -> list[dict]:
        """Sanctions in force, newest first; `everything`: lifted ones too."""
        found = sanctions.listing(s, everything)
        people = {x for sanction in found for x in (sanction.created_by, sanction.lifted_by)}
        names = dict(s.execute(select(User.id, User.name).where(User.id.in_(people))).all())
        return [sanctions.view(sanction, names) for sanction in found]

    @app.post("/api/sanctions", status_code=201)
    def impose(body: SanctionIn, s: SessionDep, audit_log: AuditDep) -> dict:
        """Ignore a submission (it counts nowhere), disqualify a user or team from a contest
        (their results there count nowhere, they submit there no more) or ban a user (no new
        submissions), with a reason the one sanctioned reads."""
        sanction = sanctions.impose(s, audit_log.admin, body.kind, body.reason,
                                    submission_id=body.submission, user=body.user,
                                    team=body.team, contest=body.contest)
        shown = sanctions.view(sanction, {audit_log.admin.id: audit_log.admin.name})
        target = {key: shown[key] for key in ("submission", "user", "team", "contest")
                  if shown[key] is not None}
        audit_log(f"sanction.{body.kind}", " ".join(f"{k} {v}" for k, v in target.items()),
                  sanction=sanction.id, reason=sanction.reason)
        return shown

    @app.post("/api/sanctions/{sanction_id}/lift")
    def lift(sanction_id: IdInPath, body: LiftIn, s: SessionDep, audit_log: AuditDep) -> dict:
        """End a sanction (it stays in the history): what it kept off counts again."""
        sanction = sanctions.lift(s, audit_log.admin, sanction_id, body.reason)
        audit_log("sanction.lift", f"sanction {sanction_id}", kind=sanction.kind,
                  reason=body.reason)
        return sanctions.view(sanction)

    @app.get("/api/audit")
    def audit_entries(s: SessionDep, _admin: AdminDep, limit: int = Query(200, ge=1, le=1000),
                      action: str | None = None, actor: str | None = None,
                      before: int | None = Query(None, ge=1)) -> list[dict]:
        """Organizers' actions, newest first: `action` by its start (`sanction`), `actor` by
        name, `before` an entry id (the next page)."""
        return [audit.view(e) for e in audit.entries(s, limit, action, actor, before)]

    @app.get("/api/clarifications")
    def clarification_list(s: SessionDep, user: UserDep, contest: str | None = None,
                           unread: bool = False) -> list[dict]:
        """Newest first: announcements, public answers and one's own questions (organizers:
        all); `unread`: only those answered or announced since one last read them (organizers:
        questions not answered yet)."""
        return [clarifications.view(clar, is_unread, user.is_admin)
                for clar, is_unread in clarifications.listing(s, user, contest, unread)]

    @app.post("/api/clarifications", status_code=201)
    def ask(body: QuestionIn, s: SessionDep, config: SettingsDep, user: UserDep) -> dict:
        """A question to the organizers, about a problem or a contest or neither."""
        clar = clarifications.ask(s, config, user, body.text, body.problem, body.contest)
        return clarifications.view(clar, False, user.is_admin)

    @app.post("/api/clarifications/read")
    def read_clarifications(body: ReadIn, s: SessionDep, user: UserDep) -> dict:
        return {"read": clarifications.mark_read(s, user, body.ids)}

    @app.post("/api/clarifications/{clarification_id}/answer")
    def answer(clarification_id: IdInPath, body: AnswerIn, s: SessionDep,
               audit_log: AuditDep) -> dict:
        clar = clarifications.answer(s, audit_log.admin, clarification_id, body.text,
                                     body.public)
        audit_log("clarification.answer", f"clarification {clar.id}", public=body.public,
                  text=body.text)
        return clarifications.view(clar, False, True)

    @app.post("/api/announcements", status_code=201)
    def announce(body: AnnouncementIn, s: SessionDep, audit_log: AuditDep) -> dict:
        """To every contestant (of the contest, if one is named: it shows in its lists)."""
        clar = clarifications.announce(s, audit_log.admin, body.text, body.contest,
                                       body.problem)
        audit_log("announcement", f"clarification {clar.id}", contest=body.contest,
                  text=body.text)
        return clarifications.view(clar, False, True)

    @app.get("/api/leaderboard")
    def leaderboard(s: SessionDep, contest: str | None = None,
                    user: OptionalUserDep = None) -> Response:
        """A contest's board (readable signed out when the contest is public), or without
        `contest` every submission's (signed-in users). While a contest is frozen, all but
        organizers get it as it stood at the freeze, with the submissions pending since, and
        their own current results in `me.live`."""
        chosen = store.get_contest(s, contest) if contest else None
        if user is None and not (chosen is not None and chosen.public):
            raise store.ServiceError(401, "sign in to see this board (only public contests' "
                                          "boards are open to visitors)")
        admin = user is not None and user.is_admin
        found = store.results(s, chosen, live=admin)
        shown = "frozen" if "frozen_at" in found.board else "live"
        me = None
        if user is not None:
            key = store.row_key(chosen, user.name, user.team)
            mine = store.find_row(found.board["rows"], key)
            me = {"name": key[1], "team": key[0], "rank": mine["rank"] if mine else None,
                  "total": mine["total"] if mine else 0.0}
            if shown == "frozen":
                now = store.find_row(store.results(s, chosen, live=True).board["rows"], key)
                me["live"] = {"total": now["total"] if now else 0.0,
                              "problems": now["problems"] if now else {}}
        head = {"me": me, "shown": shown, "contest": contest}
        # the board encoded once per change of the results, this reader's part in front
        body = json.dumps(head).encode()[:-1] + b"," + found.board_json[1:]
        return Response(body, media_type="application/json")

    @app.post("/api/rejudge", status_code=202)
    def rejudge(body: RejudgeIn, s: SessionDep, config: SettingsDep,
                audit_log: AuditDep) -> dict:
        filters = body.model_dump(exclude={"reason", "staged"})
        record, work = store.rejudge(s, audit_log.admin, filters, body.reason, body.staged)
        audit_log("rejudge", f"rejudge {record.id}", reason=body.reason, judgings=len(work),
                  filters=record.filters, staged=body.staged or None)
        s.commit()
        broker.publish(config, work)
        return rejudge_view(s, record)

    @app.get("/api/rejudge/{rejudge_id}")
    def rejudge_status(rejudge_id: IdInPath, s: SessionDep, _admin: AdminDep) -> dict:
        return rejudge_view(s, rejudges.get(s, rejudge_id))

    @app.get("/api/rejudges")
    def rejudge_list(s: SessionDep, _admin: AdminDep,
                     limit: int = Query(50, ge=1, le=500)) -> list[dict]:
        """Rejudges and system tests, newest first, with their progress and state."""
        found = s.scalars(select(Rejudge).order_by(Rejudge.id.desc()).limit(limit))
        return [rejudge_view(s, record) for record in found]

    @app.get("/api/rejudge/{rejudge_id}/diff")
    def rejudge_diff(rejudge_id: IdInPath, s: SessionDep, _admin: AdminDep) -> dict:
        """What it changes (a staged one: would change): submissions whose verdict or score
        differ, and per board the rows whose rank or total move."""
        return rejudges.diff(s, rejudges.get(s, rejudge_id))

    @app.post("/api/rejudge/{rejudge_id}/apply")
    def apply_rejudge(rejudge_id: IdInPath, s: SessionDep, audit_log: AuditDep) -> dict:
        """A staged rejudge's judgings become the results, together (once all have ended)."""
        record = rejudges.get(s, rejudge_id)
        summary = rejudges.diff(s, record)
        rejudges.apply(s, audit_log.admin, record)
        audit_log("rejudge.apply", f"rejudge {rejudge_id}", changed=len(summary["changed"]),
                  unchanged=summary["unchanged"])
        return rejudge_view(s, record)

    @app.post("/api/rejudge/{rejudge_id}/cancel")
    def cancel_rejudge(rejudge_id: IdInPath, s: SessionDep, audit_log: AuditDep) -> dict:
        """A staged rejudge's judgings never count; those not judged yet are dropped."""
        record = rejudges.get(s, rejudge_id)
        dropped = rejudges.cancel(s, audit_log.admin, record)
        audit_log("rejudge.cancel", f"rejudge {rejudge_id}", dropped=dropped)
        return rejudge_view(s, record)

    @app.get("/api/queue")
    def queue(s: SessionDep, config: SettingsDep, _admin: AdminDep) -> dict:
        queues = store.queue_summary(s)
        workers = s.execute(select(JudgingRow.worker, func.max(JudgingRow.heartbeat_at))
                            .where(JudgingRow.worker.is_not(None))
                            .group_by(JudgingRow.worker)).all()
        return {"queues": queues,
                "workers": [{"name": w, "last_seen": seen} for w, seen in workers]}

    @app.post("/api/contests", status_code=201)
    def add_contest(body: ContestIn, s: SessionDep, audit_log: AuditDep) -> dict:
        if s.scalar(select(Contest).where(Contest.slug == body.slug)):
            raise store.ServiceError(409, f"contest {body.slug} exists")
        contest = Contest(slug=body.slug)
        fields = body.model_dump(exclude={"slug"}, exclude_none=True)
        _configure(s, contest, dict(fields))
        s.add(contest)
        audit_log("contest.create", body.slug, **fields)
        return {"slug": body.slug}

    @app.patch("/api/contests/{slug}")
    def change_contest(slug: str, body: ContestFields, s: SessionDep,
                       audit_log: AuditDep) -> dict:
        """Change the fields sent; a time sent as null is cleared."""
        contest = store.get_contest(s, slug)
        sent = body.model_dump(exclude_unset=True)
        clearable = {c.name for c in Contest.__table__.columns if c.nullable}
        for name, value in sent.items():
            if value is None and name not in clearable:
                raise store.ServiceError(422, f"{name} cannot be cleared")
        before = contest_view(contest)
        _configure(s, contest, dict(sent))
        after = contest_view(contest)
        audit_log("contest.change", slug, sent=sent, changed={
            name: [before[name], after[name]] for name in after
            if name in before and before[name] != after[name]})
        return after

    @app.post("/api/contests/{slug}/unfreeze")
    def unfreeze_contest(slug: str, s: SessionDep, audit_log: AuditDep) -> dict:
        """Publish the final board now (before its thaw time)."""
        contest = store.get_contest(s, slug)
        store.unfreeze(contest)
        audit_log("contest.unfreeze", slug)
        return contest_view(contest)

    @app.post("/api/contests/{slug}/system-test", status_code=201)
    def start_system_test(slug: str, s: SessionDep, config: SettingsDep, audit_log: AuditDep,
                          body: SystemTestIn | None = None) -> dict:
        """Judge every row's counted submissions again on fresh secret seeds now (the server
        starts one by itself when a contest with `system_test` ends); the latest counts."""
        contest = store.get_contest(s, slug)
        reason = body.reason if body else ""
        record, work = store.system_test(s, config, contest, audit_log.admin, reason)
        audit_log("contest.system_test", slug, reason=record.reason, judgings=len(work))
        s.commit()
        broker.publish(config, work)
        return store.system_test_report(s, contest)

    @app.get("/api/contests/{slug}/system-test")
    def system_test(slug: str, s: SessionDep, _admin: AdminDep) -> dict:
        """The latest system test: progress, and per board row rank, total and each problem's
        score before and after."""
        return store.system_test_report(s, store.get_contest(s, slug))

    @app.get("/api/contests/{slug}/me")
    def my_time(slug: str, s: SessionDep, user: UserDep) -> dict:
        """This user's time in the contest: their window (started or to start), extra time,
        end, and its state (not_started, to_start, running, ended)."""
        contest = store.get_contest(s, slug)
        return windows.view(contest, windows.get(s, contest, user), user)

    @app.post("/api/contests/{slug}/start")
    def start_my_time(slug: str, s: SessionDep, user: UserDep) -> dict:
        """Start this user's window in a contest with per-user windows (once)."""
        contest = store.get_contest(s, slug)
        return windows.view(contest, windows.start(s, contest, user), user)

    @app.get("/api/contests/{slug}/participants")
    def participants(slug: str, s: SessionDep, _admin: AdminDep) -> list[dict]:
        """Everyone with a time of their own: a started window, or extra time."""
        contest = store.get_contest(s, slug)
        rows = s.scalars(select(Participation).where(Participation.contest_id == contest.id)
                         .order_by(Participation.user_id))
        return [windows.view(contest, p, p.user) for p in rows]

    @app.put("/api/contests/{slug}/participants/{name}")
    def extra_time(slug: str, name: str, body: ExtraTimeIn, s: SessionDep,
                   audit_log: AuditDep) -> dict:
        """A user's extra time in the contest (their end moves past the contest's)."""
        contest, user = store.get_contest(s, slug), accounts.get_user(s, name)
        p = windows.give_extra(s, contest, user, body.extra_s)
        audit_log("contest.extra_time", f"{slug} {name}", extra_s=body.extra_s)
        return windows.view(contest, p, user)

    @app.get("/api/contests/{slug}/quota/{problem}")
    def quota(slug: str, problem: str, s: SessionDep, user: UserDep) -> dict:
        """What this user has left per capped submission mode on this problem of the contest
        (this hour, and in the contest)."""
        contest = store.get_contest(s, slug)
        return {"quotas": contest.quotas or {}, "left": store.quota_left(
            s, user, contest, store.get_problem(s, problem))}

    @app.get("/api/contests")
    def contest_list(s: SessionDep) -> list[dict]:
        return [contest_view(c) for c in s.scalars(select(Contest).order_by(Contest.id))]

    @app.get("/api/export")
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
            current = store.current_judging(submission)
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
            raise store.ServiceError(422, "format must be csv, json, clarifications or dump")
        return rows
