"""SQLAlchemy models. The schema itself is created by the Alembic migrations in migrations/.

A submission's current result is its latest finished valid judging; older judgings are kept
(history), so a rejudge never wipes anything.
"""

from __future__ import annotations

import math
from datetime import datetime, timezone

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    false,
    true,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

from judge.judging.admission import Terms
from judge.judging.record import JudgeResult


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


class Base(DeclarativeBase):
    pass


class User(Base):
    __tablename__ = "users"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(64), unique=True)
    role: Mapped[str] = mapped_column(String(16), default="contestant")  # contestant | admin
    # argon2id (judge/service/accounts.py); None: no password set, only API tokens sign in
    password_hash: Mapped[str | None] = mapped_column(String(200), nullable=True)
    # teammates share submissions and one row on the board of a contest with `teams`
    team: Mapped[str | None] = mapped_column(String(64), nullable=True, index=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)

    @property
    def is_admin(self) -> bool:
        return self.role == "admin"


class ApiToken(Base):
    """A user's API token for the CLI and scripts (several per user, each revocable); only its
    SHA-256 is stored."""

    __tablename__ = "api_tokens"

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"), index=True)
    name: Mapped[str] = mapped_column(String(64))
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    last_used_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)

    user: Mapped[User] = relationship()


class WebSession(Base):
    """A browser's signed-in session (the `kj_session` cookie); only its SHA-256 is stored."""

    __tablename__ = "sessions"

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"), index=True)
    secret_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))

    user: Mapped[User] = relationship()


class LoginFailure(Base):
    """A failed sign-in, kept for the rate limit (rows: every API process sees them)."""

    __tablename__ = "login_failures"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(64), index=True)
    address: Mapped[str] = mapped_column(String(64), index=True)
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, index=True)


class ProblemRow(Base):
    __tablename__ = "problems"

    id: Mapped[int] = mapped_column(primary_key=True)
    slug: Mapped[str] = mapped_column(String(64), unique=True)
    title: Mapped[str] = mapped_column(String(200))
    version: Mapped[str] = mapped_column(String(32))  # content hash of the folder
    path: Mapped[str] = mapped_column(String(500))
    languages: Mapped[list] = mapped_column(JSON, default=list)
    # what it admits besides its languages (judge/judging/admission.py)
    source_kb: Mapped[int] = mapped_column(Integer, default=256)
    devices: Mapped[list | None] = mapped_column(JSON, nullable=True)  # device kinds tested
    active: Mapped[bool] = mapped_column(Boolean, default=True)  # False: folder gone or invalid
    loaded_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)

    def terms(self) -> Terms:
        return Terms(self.slug, tuple(self.languages), self.source_kb,
                     tuple(self.devices) if self.devices is not None else None)


class Contest(Base):
    __tablename__ = "contests"

    id: Mapped[int] = mapped_column(primary_key=True)
    slug: Mapped[str] = mapped_column(String(64), unique=True)
    title: Mapped[str] = mapped_column(String(200))
    starts_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    ends_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    problems: Mapped[list] = mapped_column(JSON, default=list)  # problem slugs, in order
    languages: Mapped[list | None] = mapped_column(JSON, nullable=True)  # None: the problem's
    device: Mapped[str] = mapped_column(String(64), default="cpu")  # queue: cpu, cuda.h100, …
    public: Mapped[bool] = mapped_column(Boolean, default=False)  # board readable signed out
    teams: Mapped[bool] = mapped_column(Boolean, default=False)  # ranked by users' teams
    # from freeze_at, all but organizers see the board as it stood; it thaws at thaw_at, or when
    # an organizer publishes it (unfrozen_at)
    freeze_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    thaw_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    unfrozen_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    # a result on the review list (`JudgingRow.review`) counts on no board until an organizer
    # clears it
    hold_flagged: Mapped[bool] = mapped_column(Boolean, default=True, server_default=true())
    # at its end the janitor judges every row's counted submissions again on fresh secret seeds
    # (its system test, a Rejudge of kind "system_test"), and the final board counts those
    system_test: Mapped[bool] = mapped_column(Boolean, default=True, server_default=true())
    # per submission mode, caps per user and problem: {"ranked": {"per_hour": 10,
    # "per_contest": 100}, ...}; a mode absent is not capped, a cap of 0 refuses the mode
    quotas: Mapped[dict | None] = mapped_column(JSON, nullable=True)
    # per-user windows (CMS's per_user_time): each contestant starts when they choose, between
    # starts_at and ends_at, and has this long (ending by ends_at); None: one window for all
    window_s: Mapped[int | None] = mapped_column(Integer, nullable=True)
    # profile submissions taken (an NVIDIA device: Nsight Compute over one sample point's call)
    profile: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())


class Rejudge(Base):
    __tablename__ = "rejudges"

    id: Mapped[int] = mapped_column(primary_key=True)
    reason: Mapped[str] = mapped_column(Text)
    filters: Mapped[dict] = mapped_column(JSON, default=dict)
    created_by: Mapped[int] = mapped_column(ForeignKey("users.id"))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    kind: Mapped[str] = mapped_column(String(16), default="rejudge", server_default="rejudge")
    # a system test's: its contest, the board before it (rows as `results` shows them) and
    # what it judged again ([row is a team, row name, problem, submission id] each)
    contest_id: Mapped[int | None] = mapped_column(ForeignKey("contests.id"), nullable=True,
                                                   index=True)
    before: Mapped[dict | None] = mapped_column(JSON, nullable=True)
    covered: Mapped[list | None] = mapped_column(JSON, nullable=True)
    # a staged rejudge's judgings are judged aside (`JudgingRow.valid` false) until an organizer
    # applies it ("staged" -> "applied") or cancels it ("cancelled"); None: counted as they end
    state: Mapped[str | None] = mapped_column(String(16), nullable=True)
    settled_by: Mapped[int | None] = mapped_column(ForeignKey("users.id"), nullable=True)
    settled_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)


class Submission(Base):
    __tablename__ = "submissions"

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"), index=True)
    problem_id: Mapped[int] = mapped_column(ForeignKey("problems.id"), index=True)
    contest_id: Mapped[int | None] = mapped_column(ForeignKey("contests.id"), nullable=True)
    language: Mapped[str] = mapped_column(String(16))
    source: Mapped[str] = mapped_column(Text)
    # ranked: counts on the boards; benchmark: judged and timed, counted nowhere; test: its
    # sample points only, correctness only (no timing), counted nowhere
    mode: Mapped[str] = mapped_column(String(16), default="ranked", server_default="ranked")
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow,
                                                 index=True)

    user: Mapped[User] = relationship()
    problem: Mapped[ProblemRow] = relationship()
    contest: Mapped[Contest | None] = relationship()
    judgings: Mapped[list[JudgingRow]] = relationship(back_populates="submission",
                                                   order_by="JudgingRow.id")


class JudgingRow(Base):
    __tablename__ = "judgings"
    __table_args__ = (Index("ix_judgings_state_queue", "state", "queue"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    submission_id: Mapped[int] = mapped_column(ForeignKey("submissions.id"), index=True)
    rejudge_id: Mapped[int | None] = mapped_column(ForeignKey("rejudges.id"), nullable=True)
    # False: a staged rejudge's judging not applied (yet, or ever): it is no submission's result
    valid: Mapped[bool] = mapped_column(Boolean, default=True, server_default=true())
    queue: Mapped[str] = mapped_column(String(100))
    state: Mapped[str] = mapped_column(String(16), default="QUEUED")  # QUEUED … DONE
    # the judging's record (judge/judging/record.py, `JudgeResult.to_dict()`), None until it ends
    record: Mapped[dict | None] = mapped_column(JSON, nullable=True)
    # the record's fields that queries filter and rank on, copied from it (`record_columns`)
    verdict: Mapped[str | None] = mapped_column(String(8), nullable=True)
    score: Mapped[float] = mapped_column(Float, default=0.0)
    speedup: Mapped[float | None] = mapped_column(Float, nullable=True)
    time_ms: Mapped[float | None] = mapped_column(Float, nullable=True)
    review: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false(),
                                         index=True)  # on the organizers' review list
    # an organizer's decision on a judging on the review list: "cleared" (it counts) or
    # "disqualified" (it counts nowhere); None: not decided (held where its contest holds)
    decision: Mapped[str | None] = mapped_column(String(16), nullable=True)
    decided_by: Mapped[int | None] = mapped_column(ForeignKey("users.id"), nullable=True)
    decided_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    decision_note: Mapped[str | None] = mapped_column(Text, nullable=True)
    worker: Mapped[str | None] = mapped_column(String(200), nullable=True)
    claim: Mapped[str | None] = mapped_column(String(32), nullable=True)  # token of the holder
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    queued_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    enqueued_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    heartbeat_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)

    submission: Mapped[Submission] = relationship(back_populates="judgings")

    def result(self) -> JudgeResult | None:
        return JudgeResult.from_dict(self.record) if self.record is not None else None


def record_columns(result: JudgeResult) -> dict:
    """The one mapping from a judging's record to its row: the record whole, and the fields
    queries rank and filter on as columns (a non-finite number is no figure there)."""
    return {"record": result.to_dict(), "verdict": result.verdict.value,
            "score": _finite(result.score) or 0.0, "speedup": _finite(result.speedup),
            "time_ms": _finite(result.time_ms), "review": result.needs_review}


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


class Sanction(Base):
    """An organizer's sanction, with its reason: `ignore` one submission (it stays in the
    history and counts nowhere), `disqualify` a user or a team from a contest (their submissions
    there count on no board, and they submit there no more), `ban` a user (no new submissions
    anywhere). Lifted, not deleted: the history stays (`lifted_at`)."""

    __tablename__ = "sanctions"

    id: Mapped[int] = mapped_column(primary_key=True)
    kind: Mapped[str] = mapped_column(String(16), index=True)  # ignore | disqualify | ban
    submission_id: Mapped[int | None] = mapped_column(ForeignKey("submissions.id"),
                                                      nullable=True, index=True)
    user_id: Mapped[int | None] = mapped_column(ForeignKey("users.id"), nullable=True,
                                                index=True)
    team: Mapped[str | None] = mapped_column(String(64), nullable=True)
    contest_id: Mapped[int | None] = mapped_column(ForeignKey("contests.id"), nullable=True)
    reason: Mapped[str] = mapped_column(Text)
    created_by: Mapped[int | None] = mapped_column(ForeignKey("users.id"), nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    lifted_by: Mapped[int | None] = mapped_column(ForeignKey("users.id"), nullable=True)
    lifted_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    lift_reason: Mapped[str | None] = mapped_column(Text, nullable=True)

    user: Mapped[User | None] = relationship(foreign_keys=[user_id])
    contest: Mapped[Contest | None] = relationship()


class AuditEntry(Base):
    """One organizer's action (a sanction, a rejudge, a decision, a setting changed), as it was
    asked: who (None: a command run on the server's host), what, on what, with which details."""

    __tablename__ = "audit_log"

    id: Mapped[int] = mapped_column(primary_key=True)
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, index=True)
    actor_id: Mapped[int | None] = mapped_column(ForeignKey("users.id"), nullable=True)
    action: Mapped[str] = mapped_column(String(64), index=True)
    target: Mapped[str] = mapped_column(String(200))
    details: Mapped[dict] = mapped_column(JSON, default=dict)

    actor: Mapped[User | None] = relationship()


class Participation(Base):
    """A user's own time in a contest: when they started their window (a contest with
    `window_s`), the extra time an organizer gave them, and the end those make (`ends_at`,
    kept by `windows.refresh`: what the submit check and the boards compare with)."""

    __tablename__ = "participations"

    contest_id: Mapped[int] = mapped_column(ForeignKey("contests.id"), primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"), primary_key=True)
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    extra_s: Mapped[int] = mapped_column(Integer, default=0)
    ends_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)

    user: Mapped[User] = relationship()


class ProfileReport(Base):
    """A profile judging's Nsight Compute report file, for its submitter and organizers (its
    summary is in the judging's record)."""

    __tablename__ = "profile_reports"

    judging_id: Mapped[int] = mapped_column(ForeignKey("judgings.id"), primary_key=True)
    filename: Mapped[str] = mapped_column(String(100))
    data: Mapped[bytes] = mapped_column(LargeBinary)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class Clarification(Base):
    """A contestant's question and the organizers' answer (to the asker, or `public`: to
    everyone), or an organizer's announcement (no asker, no question, public)."""

    __tablename__ = "clarifications"

    id: Mapped[int] = mapped_column(primary_key=True)
    contest_id: Mapped[int | None] = mapped_column(ForeignKey("contests.id"), nullable=True,
                                                   index=True)
    problem: Mapped[str | None] = mapped_column(String(64), nullable=True)  # its slug
    asked_by: Mapped[int | None] = mapped_column(ForeignKey("users.id"), nullable=True,
                                                 index=True)
    question: Mapped[str | None] = mapped_column(Text, nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    answer: Mapped[str | None] = mapped_column(Text, nullable=True)
    answered_by: Mapped[int | None] = mapped_column(ForeignKey("users.id"), nullable=True)
    answered_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    public: Mapped[bool] = mapped_column(Boolean, default=False)

    asker: Mapped[User | None] = relationship(foreign_keys=[asked_by])
    contest: Mapped[Contest | None] = relationship()


class ClarificationRead(Base):
    """When a user last read a clarification: it is unread again once answered after that."""

    __tablename__ = "clarification_reads"

    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"), primary_key=True)
    clarification_id: Mapped[int] = mapped_column(ForeignKey("clarifications.id"),
                                                  primary_key=True)
    read_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class Counter(Base):
    """Named counters; `results` moves with every judging that ends (the leaderboard's cache
    key, see service.results)."""

    __tablename__ = "counters"

    name: Mapped[str] = mapped_column(String(32), primary_key=True)
    value: Mapped[int] = mapped_column(BigInteger, default=0)
