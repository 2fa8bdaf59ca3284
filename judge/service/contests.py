"""A contest found by its slug, and its own state in time (whatever anyone's window)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from sqlalchemy import select
from sqlalchemy.orm import Session

from judge.host.device import DEVICE_KINDS
from judge.languages import LANGUAGES
from judge.service.errors import ServiceError
from judge.service.models import Contest, ProblemRow, User, utcnow
from judge.service.times import aware


def get_contest(s: Session, slug: str) -> Contest:
    contest = s.scalar(select(Contest).where(Contest.slug == slug))
    if contest is None:
        raise ServiceError(404, f"no contest {slug!r}")
    return contest


def visible_contest(s: Session, slug: str, reader: User | None) -> Contest:
    """`get_contest`, as `reader` (None: a visitor) may see it: a hidden contest is not there
    for all but organizers (a 404 like a slug that names none)."""
    contest = get_contest(s, slug)
    if hidden(contest) and not (reader is not None and reader.is_admin):
        raise ServiceError(404, f"no contest {slug!r}")
    return contest


def hidden(contest: Contest, now: datetime | None = None) -> bool:
    """Whether all but organizers do not see the contest at all: not public and not started
    (its problems, quotas and times would tell what is coming)."""
    return not contest.public and contest_state(contest, now) == "not_started"


def hidden_problems(s: Session) -> set[str]:
    """The problems that only hidden contests hold (a problem in no contest is practice)."""
    held, shown = set(), set()
    for contest in s.scalars(select(Contest)):
        (held if hidden(contest) else shown).update(contest.problems or [])
    return held - shown


def contest_state(contest: Contest, now: datetime | None = None) -> str:
    """The contest's own state (not_started, running, ended), whatever anyone's window."""
    now = now or utcnow()
    if contest.starts_at and now < aware(contest.starts_at):
        return "not_started"
    if contest.ends_at and now >= aware(contest.ends_at):
        return "ended"
    return "running"


CONTEST_TIMES = ("starts_at", "freeze_at", "ends_at", "thaw_at")  # in the order they must come


def check_runnable(device: str, languages: list[str] | None,
                   problems: list[ProblemRow]) -> None:
    """A 422 naming the field and the fix where the contest's device is no device kind, a
    language is unknown or cannot run on it, or a problem has no test point for it."""
    kind = device.partition(".")[0]
    if kind not in DEVICE_KINDS:
        raise ServiceError(422, f"device: {device!r} is no device kind; use one of "
                                f"{', '.join(DEVICE_KINDS)}, a model after a dot where workers "
                                "are per model (cuda.h100)")
    for name in languages or []:
        language = LANGUAGES.get(name)
        if language is None:
            raise ServiceError(422, f"languages: unknown language {name!r}; known: "
                                    f"{', '.join(LANGUAGES)}")
        if kind not in language.devices:
            raise ServiceError(422, f"languages: {name} runs on {'/'.join(language.devices)}, "
                                    f"not on this contest's device ({device}): leave it out or "
                                    "change the device")
    for problem in problems:
        if problem.devices is not None and kind not in problem.devices:
            raise ServiceError(422, f"problems: {problem.slug} has no test point for the {kind} "
                                    f"device (it has {', '.join(problem.devices) or 'none'}): "
                                    "leave it out, change the device or add a point to its "
                                    "problem.yaml")


def configure_contest(contest: Contest, fields: dict) -> None:
    """Set a contest's fields (a new one's, or a PATCH's); `thaw_after_end_s` sets `thaw_at`
    from the end. Its times must come in order: start < freeze < end <= thaw."""
    thaw_after = fields.pop("thaw_after_end_s", None)
    if fields.get("quotas") is not None:  # a cap sent as null is no cap: stored as none at all
        fields["quotas"] = {mode: {cap: n for cap, n in caps.items() if n is not None}
                            for mode, caps in fields["quotas"].items()}
        fields["quotas"] = {mode: caps for mode, caps in fields["quotas"].items() if caps}
    if fields.get("freeze_at") is not None:
        contest.unfrozen_at = None  # a new freeze: the board published before freezes again
    for name, value in fields.items():
        if name in CONTEST_TIMES and value is not None:  # stored in UTC (SQLite keeps no offset)
            value = aware(value).astimezone(timezone.utc)
        setattr(contest, name, value)
    if thaw_after is not None:
        if contest.ends_at is None:
            raise ServiceError(422, "thaw_after_end_s counts from ends_at: set ends_at too")
        contest.thaw_at = aware(contest.ends_at) + timedelta(seconds=thaw_after)
    times = [(name, aware(getattr(contest, name))) for name in CONTEST_TIMES
             if getattr(contest, name) is not None]
    for (first, a), (then, b) in zip(times, times[1:]):
        if b < a or (b == a and then != "thaw_at"):
            raise ServiceError(422, f"{then} must come after {first}: the times go "
                                    + " < ".join(CONTEST_TIMES).replace("< thaw", "<= thaw"))


def contest_frozen(contest: Contest, now: datetime | None = None) -> bool:
    """Whether all but organizers see the contest's board as it stood at its freeze: from
    `freeze_at` until `thaw_at` or until an organizer publishes it (`unfreeze`)."""
    now = now or utcnow()
    return (contest.freeze_at is not None and now >= aware(contest.freeze_at)
            and contest.unfrozen_at is None
            and (contest.thaw_at is None or now < aware(contest.thaw_at)))


def frozen_cuts(s: Session) -> tuple[tuple[int, datetime], ...]:
    """(contest id, freeze time) of every contest frozen now: what boards and solver counts
    leave out for all but organizers, whichever board they read."""
    contests = s.scalars(select(Contest).where(Contest.freeze_at.is_not(None),
                                               Contest.unfrozen_at.is_(None))).all()
    return tuple((c.id, aware(c.freeze_at)) for c in contests if contest_frozen(c))


def unfreeze(contest: Contest) -> None:
    """Publish the final board now."""
    if contest.freeze_at is None:
        raise ServiceError(409, f"contest {contest.slug} has no freeze")
    contest.unfrozen_at = utcnow()
