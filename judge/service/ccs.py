"""The ICPC CCS Contest API (https://ccs-specs.icpc.io/2023-06/contest_api), read-only, for the
tools that speak it: the ICPC resolver at the award ceremony, shadowing judges, the Contest Data
Server, external scoreboards. Base URL `/api/ccs`; organizers only (an API token, or HTTP Basic
with a name and password or token, as those tools sign in): it shows every judgement, frozen
or not.

How this judge's things map onto the specification's:
- a contest is a contest (`scoreboard_type` "score": boards rank by score); its problems keep
  their slugs as ids, labelled A, B, … in the contest's order;
- a team is a board row: a team in a contest ranked by teams, else a user (organizers are not
  teams); a team's id is its name made an identifier;
- submissions are the contest's ranked ones that count (not test or benchmark runs, not
  ignored ones); their judgements are their valid judgings (a staged rejudge's, not applied,
  are not); verdicts map to judgement types (RV is SV, a security violation; SE, the judge's
  own error, is JE);
- a question and its answer are two clarifications (the answer replies to the question and is
  sent to its asker, or to everyone); an announcement is one from nobody to everyone.

The event feed (NDJSON, 2023-06's form without tokens) sends the current state as events, in
the order the specification asks (contest, judgement types, languages, problems, teams, state,
then submissions, judgements and clarifications as they happened); with `stream=true` it then
sends each object that appears or changes, polling once a second.
"""

from __future__ import annotations

import functools
import io
import json
import re
import zipfile
from datetime import datetime, timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session, joinedload, selectinload

from judge.languages import LANGUAGES, get_language
from judge.problem.schema import ProblemError, load_problem
from judge.service import boards, clarifications, queueing, sanctions, submissions, windows
from judge.service.errors import ServiceError
from judge.service.models import Contest, JudgingRow, ProblemRow, Submission, User, utcnow
from judge.service.times import aware
from judge.verdicts import RANKED, Verdict

VERSION = "2023-06"
VERSION_URL = "https://ccs-specs.icpc.io/2023-06/contest_api"
# this judge's verdicts as the specification's judgement types: (id, name, penalty, solved)
JUDGEMENT_TYPES = {
    Verdict.AC: ("AC", "Accepted", False, True),
    Verdict.WA: ("WA", "Wrong Answer", True, False),
    Verdict.CE: ("CE", "Compile Error", False, False),
    Verdict.RE: ("RTE", "Run-Time Error", True, False),
    Verdict.TLE: ("TLE", "Time Limit Exceeded", True, False),
    Verdict.MLE: ("MLE", "Memory Limit Exceeded", True, False),
    Verdict.OLE: ("OLE", "Output Limit Exceeded", True, False),
    Verdict.RV: ("SV", "Security Violation (a rule of the problem)", True, False),
    Verdict.SE: ("JE", "Judging Error", False, False),
}
COLLECTIONS = ("judgement-types", "languages", "problems", "groups", "organizations", "teams",
               "submissions", "judgements", "clarifications")
POLL_S = 1.0  # how often a streaming event feed looks for changes
EVENT_FEED_LIMIT = timedelta(hours=24)  # a stream ends after this, whatever it waits for


def abstime(moment: datetime | None) -> str | None:
    return aware(moment).isoformat(timespec="milliseconds") if moment is not None else None


def reltime(seconds: float) -> str:
    sign, seconds = ("-" if seconds < 0 else ""), abs(seconds)
    ms = round(seconds * 1000)
    h, rest = divmod(ms, 3_600_000)
    m, rest = divmod(rest, 60_000)
    s, ms = divmod(rest, 1000)
    return f"{sign}{h}:{m:02d}:{s:02d}.{ms:03d}"


def identifier(name: str) -> str:
    """A name as the specification's identifier (letters, digits, _ . -, at most 36)."""
    made = re.sub(r"[^A-Za-z0-9_.-]", "_", name)[:36]
    return made if re.match(r"[A-Za-z0-9_]", made) else f"_{made[:35]}"


class Feed:
    """One contest's objects in the specification's shapes, read once from the database."""

    def __init__(self, s: Session, contest: Contest, reader: User):
        self.s, self.contest, self.reader = s, contest, reader
        self.start = aware(contest.starts_at) if contest.starts_at else None

    def contest_time(self, moment: datetime | None, clamp: bool = False) -> str | None:
        """Since the contest's start (`clamp`: not before it)."""
        if moment is None:
            return None
        since = (aware(moment) - self.start).total_seconds() if self.start else 0.0
        return reltime(max(since, 0.0) if clamp else since)

    def team_id(self, key: boards.RowKey) -> str:
        """A board row's team id: a team's name, or a user's, made an identifier."""
        is_team, name = key
        return identifier(f"team-{name}") if is_team else identifier(name)

    def team_of(self, user: User) -> str:
        return self.team_id(boards.row_key(self.contest, user.name, user.team))

    # -- the objects ------------------------------------------------------------------------
    def contest_object(self) -> dict:
        c = self.contest
        obj = {"id": identifier(c.slug), "name": c.title, "formal_name": c.title,
               "start_time": abstime(c.starts_at), "scoreboard_type": "score",
               "duration": reltime((aware(c.ends_at) - aware(c.starts_at)).total_seconds()
                                   if c.starts_at and c.ends_at else 0.0)}
        if c.freeze_at and c.ends_at:
            obj["scoreboard_freeze_duration"] = reltime(
                (aware(c.ends_at) - aware(c.freeze_at)).total_seconds())
        if c.thaw_at:
            obj["scoreboard_thaw_time"] = abstime(c.thaw_at)
        return obj

    def state(self) -> dict:
        c, now = self.contest, utcnow()

        def past(moment: datetime | None) -> str | None:
            return abstime(moment) if moment is not None and aware(moment) <= now else None

        ended = past(windows.latest_end(self.s, c))
        thawed = past(c.unfrozen_at) or past(c.thaw_at) if c.freeze_at else None
        pending = bool(self.s.scalar(select(JudgingRow.id).join(Submission).where(
            Submission.contest_id == c.id, JudgingRow.valid,
            JudgingRow.state != queueing.DONE).limit(1)))
        finalized = ended if ended and not pending and (not c.freeze_at or thawed) else None
        return {"started": past(c.starts_at), "frozen": past(c.freeze_at), "ended": ended, "thawed": thawed,
                "finalized": finalized, "end_of_updates": finalized}

    def judgement_types(self) -> list[dict]:
        return [{"id": jid, "name": name, "penalty": penalty, "solved": solved}
                for jid, name, penalty, solved in JUDGEMENT_TYPES.values()]

    def languages(self) -> list[dict]:
        allowed = self.contest.languages or sorted({x for slug in self.contest.problems
                                                    for x in self._problem_row(slug).languages})
        return [{"id": name, "name": name, "entry_point_required": False,
                 "extensions": [e.lstrip(".") for e in get_language(name).extensions]}
                for name in allowed if name in LANGUAGES]

    def _problem_row(self, slug: str) -> ProblemRow:
        return self.s.scalar(select(ProblemRow).where(ProblemRow.slug == slug))

    def problems(self) -> list[dict]:
        found = []
        for ordinal, slug in enumerate(self.contest.problems):
            row = self._problem_row(slug)
            obj = {"id": identifier(slug), "label": _label(ordinal),
                   "name": row.title if row else slug, "ordinal": ordinal, "test_data_count": 0}
            obj.update(_problem_facts(row.path, row.version) if row else {})
            found.append(obj)
        return found

    def teams(self) -> list[dict]:
        users = self.s.scalars(select(User).where(User.role != "admin").order_by(User.id))
        teams: dict[str, dict] = {}
        for user in users:
            is_team, name = boards.row_key(self.contest, user.name, user.team)
            tid = self.team_of(user)
            teams.setdefault(tid, {"id": tid, "name": name, "label": tid,
                                   "display_name": name, "group_ids": [],
                                   "hidden": False})
        return list(teams.values())

    def _submissions(self) -> list[Submission]:
        query = (select(Submission)
                 .options(selectinload(Submission.judgings), joinedload(Submission.user),
                          joinedload(Submission.problem))
                 .where(Submission.contest_id == self.contest.id, Submission.mode == RANKED,
                        sanctions.counted())
                 .order_by(Submission.id))
        return list(self.s.scalars(query).unique())

    def submissions(self) -> list[dict]:
        return [self.submission(x) for x in self._submissions()]

    def submission(self, x: Submission) -> dict:
        cid = identifier(self.contest.slug)
        return {"id": str(x.id), "language_id": x.language, "problem_id": identifier(
                    x.problem.slug), "team_id": self.team_of(x.user),
                "time": abstime(x.created_at), "contest_time": self.contest_time(x.created_at),
                "entry_point": None,
                "files": [{"href": f"contests/{cid}/submissions/{x.id}/files",
                           "filename": "files.zip", "mime": "application/zip"}]}

    def judgements(self) -> list[dict]:
        found = []
        for x in self._submissions():
            current = submissions.current_judging(x)
            for j in x.judgings:
                if not j.valid or (j.started_at is None and j.state != queueing.DONE):
                    continue  # a staged rejudge's, or one not started yet
                started = j.started_at or j.queued_at
                verdict = JUDGEMENT_TYPES.get(Verdict(j.verdict))[0] if j.verdict else None
                obj = {"id": str(j.id), "submission_id": str(x.id),
                       "judgement_type_id": verdict if j.state == queueing.DONE else None,
                       "current": j is current, "start_time": abstime(started),
                       "start_contest_time": self.contest_time(started),
                       "end_time": abstime(j.finished_at) if j.state == queueing.DONE else None,
                       "end_contest_time": self.contest_time(j.finished_at)
                       if j.state == queueing.DONE else None, "max_run_time": None}
                if j.state == queueing.DONE:
                    obj["score"] = max(j.score or 0.0, 0.0)
                found.append(obj)
        return found

    def clarifications(self) -> list[dict]:
        found = []
        for clar, _ in reversed(clarifications.listing(self.s, self.reader,
                                                       self.contest.slug)):
            asker = self.team_of(clar.asker) if clar.asker else None
            problem = identifier(clar.problem) if clar.problem else None
            if clar.question is not None:
                found.append({"id": str(clar.id), "from_team_id": asker, "to_team_id": None,
                              "reply_to_id": None, "problem_id": problem,
                              "text": clar.question, "time": abstime(clar.created_at),
                              "contest_time": self.contest_time(clar.created_at)})
            if clar.answer is not None:
                found.append({"id": f"{clar.id}-answer" if clar.question is not None
                              else str(clar.id), "from_team_id": None,
                              "to_team_id": None if clar.public else asker,
                              "reply_to_id": str(clar.id) if clar.question is not None
                              else None, "problem_id": problem, "text": clar.answer,
                              "time": abstime(clar.answered_at),
                              "contest_time": self.contest_time(clar.answered_at)})
        return found

    def collection(self, name: str) -> list[dict]:
        if name in ("groups", "organizations"):
            return []  # this judge has neither
        return getattr(self, name.replace("-", "_"))()

    def scoreboard(self) -> dict:
        board = boards.results(self.s, self.contest, live=True).board
        counts = self._counts()
        ranked = [row for row in board["rows"] if row.get("rank")]
        last = len(ranked) + 1
        rows = []
        for row in board["rows"]:
            key = boards.key_of(row)
            problems = []
            for slug in self.contest.problems:
                judged, pending = counts.get((key, slug), (0, 0))
                entry = {"problem_id": identifier(slug), "num_judged": judged,
                         "num_pending": pending, "score": row["problems"].get(slug, 0.0)}
                if entry["score"]:
                    entry["time"] = self.contest_time(
                        datetime.fromisoformat(row["times"][slug]), clamp=True)
                problems.append(entry)
            reached = row.get("reached_at")  # when the total was reached (ties break on it)
            rows.append({"rank": row.get("rank") or last, "team_id": self.team_id(key),
                         "score": {"score": row["total"], "time": self.contest_time(
                             datetime.fromisoformat(reached), clamp=True) if reached else None},
                         "problems": problems})
        now = utcnow()
        return {"time": abstime(now), "contest_time": self.contest_time(now),
                "state": self.state(), "rows": rows}

    def _counts(self) -> dict:
        """Per (board row, problem): submissions judged and pending."""
        counts: dict = {}
        for x in self._submissions():
            key = boards.row_key(self.contest, x.user.name, x.user.team)
            judged, pending = counts.get((key, x.problem.slug), (0, 0))
            done = submissions.current_judging(x) is not None
            counts[key, x.problem.slug] = (judged + done, pending + (not done))
        return counts

    # -- the event feed ---------------------------------------------------------------------
    def events(self) -> list[tuple[str, str | None, dict]]:
        """(type, id, data) of every object, in the specification's order."""
        out = [("contest", None, self.contest_object())]
        for kind in ("judgement-types", "languages", "problems", "groups", "organizations",
                     "teams"):
            out += [(kind, obj["id"], obj) for obj in self.collection(kind)]
        out.append(("state", None, self.state()))
        timed = [(obj["time"], 0, "submissions", obj) for obj in self.submissions()]
        timed += [(obj["start_time"], 1, "judgements", obj) for obj in self.judgements()]
        timed += [(obj["time"], 2, "clarifications", obj) for obj in self.clarifications()]
        out += [(kind, obj["id"], obj) for _, _, kind, obj in sorted(
            timed, key=lambda t: (t[0], t[1], int(re.sub(r"\D", "", t[3]["id"]) or 0)))]
        return out


@functools.lru_cache(maxsize=256)
def _problem_facts(path: str, version: str) -> dict:
    """Test points and limits of a problem folder at a version (a streaming feed asks every
    second: read once per version)."""
    try:
        loaded = load_problem(path)
    except ProblemError:
        return {}
    return {"test_data_count": len(loaded.tests),
            "time_limit": round(loaded.spec.limits.run_s, 3),
            "memory_limit": int(loaded.spec.limits.memory_mb)}


def _label(ordinal: int) -> str:
    letters = ""
    ordinal += 1
    while ordinal:
        ordinal, rest = divmod(ordinal - 1, 26)
        letters = chr(ord("A") + rest) + letters
    return letters


def event_line(kind: str, oid: str | None, data) -> bytes:
    return json.dumps({"type": kind, "id": oid, "data": data},
                      separators=(",", ":")).encode() + b"\n"


def changes(seen: dict, events) -> list[bytes]:
    """The events not sent yet, or changed since: `seen` ((type, id) -> data) is updated."""
    out = []
    for kind, oid, data in events:
        if seen.get((kind, oid)) != data:
            seen[kind, oid] = data
            out.append(event_line(kind, oid, data))
    return out


def get_contest(s: Session, cid: str) -> Contest:
    for contest in s.scalars(select(Contest)):
        if identifier(contest.slug) == cid:
            return contest
    raise ServiceError(404, f"no contest {cid!r} (GET /api/ccs/contests lists them)")


def files_zip(submission: Submission) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(get_language(submission.language).source_name, submission.source)
    return buffer.getvalue()


def api_information() -> dict:
    import judge

    return {"version": VERSION, "version_url": VERSION_URL,
            "provider": {"name": "kernel-judge", "version": judge.__version__}}

