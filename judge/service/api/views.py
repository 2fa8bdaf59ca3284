"""How the API shows its rows: a judging's record (secret test points reduced for contestants,
organizers' fields for organizers), a submission, a review entry, a rejudge, a contest; and the
rendering of statements and sources."""

from __future__ import annotations

from sqlalchemy.orm import Session, object_session

from judge.judging.guard import GuardReport
from judge.languages import get_language
from judge.service import contests, rejudges, reviews, sanctions, submissions
from judge.service.models import Contest, JudgingRow, Rejudge, Sanction, Submission, User
from judge.service.times import aware
from judge.verdicts import State


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
    current = submissions.current_judging(submission)
    latest = submissions.latest_judging(submission)
    view = {
        "id": submission.id, "user": submission.user.name, "problem": submission.problem.slug,
        "contest": submission.contest.slug if submission.contest else None,
        "language": submission.language, "mode": submission.mode,
        "created_at": submission.created_at,
        "verdict": None, "score": 0.0, "speedup": None, "time_ms": None, "memory_mb": None,
        "tests": [],
    }
    view.update(judging_view(current, show_secret=user.is_admin, admin=user.is_admin))
    view["language"] = submission.language  # the submission's own, whatever a record says
    # off the boards until an organizer decides (a contest may count flagged results)
    view["held"] = current is not None and reviews.held(object_session(submission), current)
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
            **rejudges.rejudge_progress(s, record.id)}


def contest_view(contest: Contest) -> dict:
    """Times with their offset (UTC): a page's clock reads a time without one as local."""
    times = {name: aware(getattr(contest, name))
             for name in (*contests.CONTEST_TIMES, "unfrozen_at")}
    return {"slug": contest.slug, "title": contest.title, "problems": contest.problems,
            "languages": contest.languages, "device": contest.device, "public": contest.public,
            "teams": contest.teams, "hold_flagged": contest.hold_flagged,
            "quotas": contest.quotas, "window_s": contest.window_s, "profile": contest.profile,
            "system_test": contest.system_test, **times,
            "frozen": contests.contest_frozen(contest), "state": contests.contest_state(contest)}
