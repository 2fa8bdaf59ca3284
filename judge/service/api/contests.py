"""The API's contest routes: create and change (organizers), unfreeze, system tests, one's own time
window, participants' extra time, quotas, the list."""

from __future__ import annotations

from datetime import datetime

from fastapi import APIRouter
from pydantic import Field
from sqlalchemy import select
from sqlalchemy.orm import Session

from judge.service import (
    accounts,
    broker,
    catalog,
    contests,
    counters,
    errors,
    submissions,
    system_tests,
    windows,
)
from judge.service.api.views import contest_view
from judge.service.deps import (
    AdminDep,
    AuditDep,
    Body,
    Mode,
    OptionalUserDep,
    SessionDep,
    SettingsDep,
    UserDep,
)
from judge.service.models import Contest, Participation

router = APIRouter(tags=["contests"])


class Quota(Body):
    per_hour: int | None = Field(None, ge=0, description="per user and problem, in any hour")
    per_contest: int | None = Field(None, ge=0, description="per user and problem, in all")


# bounds on what a contest's lists and title hold: the work of checking them grows with them
MAX_CONTEST_PROBLEMS, MAX_LANGUAGES, MAX_TITLE = 500, 32, 200


class ContestFields(Body):
    """What an organizer sets of a contest (every field optional in a PATCH)."""

    title: str | None = Field(None, max_length=MAX_TITLE)
    problems: list[str] | None = Field(None, max_length=MAX_CONTEST_PROBLEMS)
    starts_at: datetime | None = None
    ends_at: datetime | None = None
    languages: list[str] | None = Field(None, max_length=MAX_LANGUAGES)
    device: str | None = None
    public: bool | None = Field(None, description="its board is readable without signing "
                                "in, and it is listed (with its problems) before it starts; "
                                "a contest not public is not there for contestants until then")
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


class ContestIn(ContestFields):
    slug: str = Field(pattern=r"^[a-z0-9_-]{1,64}$")
    title: str = Field(max_length=MAX_TITLE)
    problems: list[str] = Field(max_length=MAX_CONTEST_PROBLEMS)
    device: str = "cpu"


class SystemTestIn(Body):
    reason: str = Field("", max_length=2000)


class ExtraTimeIn(Body):
    extra_s: int = Field(ge=0, le=7 * 24 * 3600, description="set, not added: 0 takes it away")


def _configure(s: Session, contest: Contest, fields: dict) -> None:
    if fields.keys() & {"device", "languages", "problems"}:  # what runs where, as it will be
        def after(name: str):
            return fields[name] if name in fields else getattr(contest, name)
        contests.check_runnable(after("device"), after("languages"),
                                [catalog.get_problem(s, slug) for slug in after("problems") or []])
    contests.configure_contest(contest, fields)
    windows.refresh(s, contest)  # its times or window moved every participant's end
    counters.results_changed(s)  # e.g. `hold_flagged`: the board outside contests counts it too


@router.post("/api/contests", status_code=201)
def add_contest(body: ContestIn, s: SessionDep, audit_log: AuditDep) -> dict:
    if s.scalar(select(Contest).where(Contest.slug == body.slug)):
        raise errors.ServiceError(409, f"contest {body.slug} exists")
    contest = Contest(slug=body.slug)
    fields = body.model_dump(exclude={"slug"}, exclude_none=True)
    _configure(s, contest, dict(fields))
    s.add(contest)
    audit_log("contest.create", body.slug, **fields)
    return {"slug": body.slug}


@router.patch("/api/contests/{slug}")
def change_contest(slug: str, body: ContestFields, s: SessionDep,
                   audit_log: AuditDep) -> dict:
    """Change the fields sent; a time sent as null is cleared."""
    contest = contests.get_contest(s, slug)
    sent = body.model_dump(exclude_unset=True)
    clearable = {c.name for c in Contest.__table__.columns if c.nullable}
    for name, value in sent.items():
        if value is None and name not in clearable:
            raise errors.ServiceError(422, f"{name} cannot be cleared")
    before = contest_view(contest)
    _configure(s, contest, dict(sent))
    after = contest_view(contest)
    audit_log("contest.change", slug, sent=sent, changed={
        name: [before[name], after[name]] for name in after
        if name in before and before[name] != after[name]})
    return after


@router.post("/api/contests/{slug}/unfreeze")
def unfreeze_contest(slug: str, s: SessionDep, audit_log: AuditDep) -> dict:
    """Publish the final board now (before its thaw time)."""
    contest = contests.get_contest(s, slug)
    contests.unfreeze(contest)
    audit_log("contest.unfreeze", slug)
    return contest_view(contest)


@router.post("/api/contests/{slug}/system-test", status_code=201)
def start_system_test(slug: str, s: SessionDep, config: SettingsDep, audit_log: AuditDep,
                      body: SystemTestIn | None = None) -> dict:
    """Judge every row's counted submissions again on fresh secret seeds now (the server
    starts one by itself when a contest with `system_test` ends); the latest counts."""
    contest = contests.get_contest(s, slug)
    reason = body.reason if body else ""
    record, work = system_tests.system_test(s, config, contest, audit_log.admin, reason)
    audit_log("contest.system_test", slug, reason=record.reason, judgings=len(work))
    s.commit()
    broker.publish(config, work)
    return system_tests.system_test_report(s, contest)


@router.get("/api/contests/{slug}/system-test")
def system_test(slug: str, s: SessionDep, _admin: AdminDep) -> dict:
    """The latest system test: progress, and per board row rank, total and each problem's
    score before and after."""
    return system_tests.system_test_report(s, contests.get_contest(s, slug))


@router.get("/api/contests/{slug}/me")
def my_time(slug: str, s: SessionDep, user: UserDep) -> dict:
    """This user's time in the contest: their window (started or to start), extra time,
    end, and its state (not_started, to_start, running, ended)."""
    contest = contests.visible_contest(s, slug, user)
    return windows.view(contest, windows.get(s, contest, user), user)


@router.post("/api/contests/{slug}/start")
def start_my_time(slug: str, s: SessionDep, user: UserDep) -> dict:
    """Start this user's window in a contest with per-user windows (once)."""
    contest = contests.visible_contest(s, slug, user)
    return windows.view(contest, windows.start(s, contest, user), user)


@router.get("/api/contests/{slug}/participants")
def participants(slug: str, s: SessionDep, _admin: AdminDep) -> list[dict]:
    """Everyone with a time of their own: a started window, or extra time."""
    contest = contests.get_contest(s, slug)
    rows = s.scalars(select(Participation).where(Participation.contest_id == contest.id)
                     .order_by(Participation.user_id))
    return [windows.view(contest, p, p.user) for p in rows]


@router.put("/api/contests/{slug}/participants/{name}")
def extra_time(slug: str, name: str, body: ExtraTimeIn, s: SessionDep,
               audit_log: AuditDep) -> dict:
    """A user's extra time in the contest (their end moves past the contest's)."""
    contest, user = contests.get_contest(s, slug), accounts.get_user(s, name)
    p = windows.give_extra(s, contest, user, body.extra_s)
    audit_log("contest.extra_time", f"{slug} {name}", extra_s=body.extra_s)
    return windows.view(contest, p, user)


@router.get("/api/contests/{slug}/quota/{problem}")
def quota(slug: str, problem: str, s: SessionDep, user: UserDep) -> dict:
    """What this user has left per capped submission mode on this problem of the contest
    (this hour, and in the contest)."""
    contest = contests.visible_contest(s, slug, user)
    return {"quotas": contest.quotas or {}, "left": submissions.quota_left(
        s, user, contest, catalog.get_problem(s, problem))}


@router.get("/api/contests/{slug}")
def contest_one(slug: str, s: SessionDep, user: OptionalUserDep = None) -> dict:
    """One contest's fields (as the list shows them)."""
    return contest_view(contests.visible_contest(s, slug, user))


@router.get("/api/contests")
def contest_list(s: SessionDep, user: OptionalUserDep = None) -> list[dict]:
    """Every contest (organizers), or every one that has started or is public."""
    admin = user is not None and user.is_admin
    return [contest_view(c) for c in s.scalars(select(Contest).order_by(Contest.id))
            if admin or not contests.hidden(c)]
