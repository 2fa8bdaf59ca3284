"""The boards: from the judgings they count (judge/service/counting.py), each row's best
scores, total and rank, frozen boards and the pending submissions since their freeze, the board
after a system test, and the problem list's solver counts; computed once per change of the
results (`results`).
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from judge.service import sanctions
from judge.service.contests import frozen_cuts
from judge.service.counters import results_version
from judge.service.counting import SYSTEM_TEST, current_accepted, in_contest
from judge.service.models import Contest, ProblemRow, Rejudge, Submission, User
from judge.service.times import aware
from judge.verdicts import RANKED


def latest_system_test(s: Session, contest: Contest) -> Rejudge | None:
    return s.scalar(select(Rejudge).where(Rejudge.kind == SYSTEM_TEST,
                                          Rejudge.contest_id == contest.id)
                    .order_by(Rejudge.id.desc()).limit(1))


def pending_since(s: Session, contest: Contest) -> dict[RowKey, dict]:
    """Per board row (user, or team): the submissions made since the freeze, per problem, whose
    results the frozen board does not show, and who made them."""
    query = in_contest(select(User.name, User.team, ProblemRow.slug, func.count(Submission.id))
                        .join(User, User.id == Submission.user_id)
                        .join(ProblemRow, ProblemRow.id == Submission.problem_id), contest)
    query = query.where(Submission.created_at >= contest.freeze_at, Submission.mode == RANKED,
                        sanctions.counted()).group_by(
        User.name, User.team, ProblemRow.slug)
    pending: dict[RowKey, dict] = {}
    for name, team, slug, count in s.execute(query):
        row = pending.setdefault(row_key(contest, name, team), {"problems": {}, "members": set()})
        row["problems"][slug] = row["problems"].get(slug, 0) + count
        row["members"].add(name)
    return pending


RowKey = tuple[bool, str]  # (a team's row, its name): a team and a user may share a name


def row_key(contest: Contest | None, name: str, team: str | None) -> RowKey:
    """The board row a user's results count in: the team's in a contest ranked by teams."""
    if contest is not None and contest.teams and team:
        return True, team
    return False, name


def key_of(row: dict) -> RowKey:
    return row.get("team", False), row["name"]


def find_row(rows: list[dict], key: RowKey) -> dict | None:
    return next((row for row in rows if key_of(row) == key), None)


SERIES_ROWS = 10  # the leading rows whose total over time the board carries (the page's chart)


@dataclass
class Results:
    """What the leaderboard and the problem list show, computed from `current_accepted` once per
    change of the results (see `results`)."""

    key: tuple
    board: dict  # problems, rows (see _compute_results)
    solvers: dict[str, int]  # problem slug -> users with an accepted submission
    best: dict[int, dict[str, float]]  # user id -> problem slug -> best score

    @cached_property
    def board_json(self) -> bytes:
        """The board as JSON, encoded once (~3 ms for 200 teams here, more than the rest of a
        request); the API adds each reader's own part in front."""
        return json.dumps(self.board, separators=(",", ":"), allow_nan=False).encode()


_RESULTS: dict[tuple, Results] = {}  # (database, contest id, view) -> the latest computed


_RESULTS_LOCK = threading.Lock()


def results(s: Session, contest: Contest | None = None, live: bool = True) -> Results:
    """The results as they stand, recomputed only when they changed: every page polls the
    leaderboard, which costs one aggregate over all judgings (~80 ms at 10,000 submissions on
    a 2-core host) against one counter row that every judging's end moves in its own transaction
    (`results_changed`); the problem set and the contest's own settings are part of the key.

    `live=False` is what all but organizers see: a frozen contest's board as it stood at its
    freeze (with the submissions pending since), and no board or count showing what frozen
    contests' submissions did since their freeze, nor what their system tests judged (it picks
    what the live board counts, post-freeze submissions included: the final board's alone)."""
    problems = board_problems(s, contest)
    window = (contest.id, contest.starts_at, contest.ends_at, contest.teams,
              contest.hold_flagged) if contest else None
    cuts = () if live else frozen_cuts(s)
    live = not cuts  # nothing frozen: everyone's results are the live ones (one cache entry)
    frozen = contest is not None and any(cid == contest.id for cid, _ in cuts)
    # a frozen board counts the submissions pending since the freeze: new ones change it too
    newest = s.scalar(select(func.max(Submission.id))) if frozen else None
    tested = latest_system_test(s, contest) if contest is not None else None
    key = (results_version(s), problems, window, cuts, newest, tested.id if tested else None)
    cache_key = (str(s.get_bind().url), contest.id if contest else None, live)
    with _RESULTS_LOCK:
        cached = _RESULTS.get(cache_key)
    if cached is not None and cached.key == key:
        return cached
    accepted = current_accepted(s, contest, cuts=() if frozen else cuts,
                                before=aware(contest.freeze_at) if frozen else None,
                                untested=tuple(cid for cid, _ in cuts))
    computed = _compute_results(key, contest, list(problems), accepted,
                                None if frozen else _covered(tested))
    if frozen:
        computed.board["frozen_at"] = aware(contest.freeze_at).isoformat()
        pending = pending_since(s, contest)
        rows = computed.board["rows"]
        for row in rows:
            row["pending"] = pending.pop(key_of(row), {"problems": {}})["problems"]
        # who has submitted only since the freeze is on the board too, unranked, so that
        # their pending submissions show
        for (is_team, name), since in sorted(pending.items(), key=lambda item: item[0][1]):
            row = {"name": name, "total": 0.0, "reached_at": None, "problems": {},
                   "rank": None, "pending": since["problems"]}
            if contest.teams:
                row.update(team=is_team, members=sorted(since["members"]))
            rows.append(row)
    with _RESULTS_LOCK:
        _RESULTS[cache_key] = computed
    return computed


def board_problems(s: Session, contest: Contest | None) -> tuple[str, ...]:
    return tuple(contest.problems if contest else sorted(
        s.scalars(select(ProblemRow.slug).where(ProblemRow.active)).all()))


def _covered(tested: Rejudge | None) -> dict | None:
    """A system test's (row is a team, row name, problem) -> the submission it judged again."""
    return ({(bool(is_team), name, slug): submission_id
             for is_team, name, slug, submission_id in tested.covered} if tested else None)


def board_as_if(s: Session, contest: Contest | None, rejudge: tuple[int, bool]) -> dict:
    """The live board as if a rejudge's judgings counted, or as if it had never run (`rejudge`:
    (id, counted)); computed afresh, not cached: a rejudge's diff."""
    tested = latest_system_test(s, contest) if contest is not None else None
    accepted = current_accepted(s, contest, rejudge=rejudge)
    return _compute_results((), contest, list(board_problems(s, contest)), accepted,
                            _covered(tested)).board


def _compute_results(key: tuple, contest: Contest | None, problems: list[str],
                     accepted, covered: dict | None = None) -> Results:
    """Per row (a user, or a team in a contest ranked by teams): best valid AC score per
    problem (across languages and members), total, rank, and for the leading rows the total
    over time.

    Correctness is a hard gate: only AC judgings count. Ties on the total are broken by the time
    the total was first reached (the latest of the per-problem first-best times). After a
    system test (`covered`: (row is a team, row name, problem) -> the submission it judged
    again), a row's problem counts that submission only.
    """
    best: dict[RowKey, dict[str, tuple[float, datetime]]] = {}
    members: dict[RowKey, set[str]] = {}
    series: dict[RowKey, list] = {}
    solvers: dict[str, set[int]] = {}
    by_user: dict[int, dict[str, float]] = {}
    for user_id, name, team, slug, score, created_at, submission_id in accepted:
        row = row_key(contest, name, team)
        if covered is not None and covered.get((*row, slug), submission_id) != submission_id:
            continue
        solvers.setdefault(slug, set()).add(user_id)
        mine = by_user.setdefault(user_id, {})
        mine[slug] = max(mine.get(slug, 0.0), score)
        if slug not in problems:
            continue
        members.setdefault(row, set()).add(name)
        per_row = best.setdefault(row, {})
        previous = per_row.get(slug)
        if previous is None or score > previous[0]:
            per_row[slug] = (score, aware(created_at))
            total = sum(score for score, _ in per_row.values())
            series.setdefault(row, []).append([aware(created_at).isoformat(), total])
    rows = []
    for (is_team, name), scores in best.items():
        total = sum(score for score, _ in scores.values())
        reached = max(moment for _, moment in scores.values())
        row = {"name": name, "total": total, "reached_at": reached,
               "problems": {p: scores[p][0] for p in problems if p in scores},
               # when each problem's best was first reached (the CCS scoreboard's times)
               "times": {p: scores[p][1].isoformat() for p in problems if p in scores}}
        if contest is not None and contest.teams:
            row.update(team=is_team, members=sorted(members[is_team, name]))
        rows.append(row)
    rows.sort(key=lambda r: (-r["total"], r["reached_at"], r["name"]))
    for rank, row in enumerate(rows, 1):
        row["rank"] = rank
        row["reached_at"] = row["reached_at"].isoformat()  # ready for json.dumps as it is
        if rank <= SERIES_ROWS:
            row["series"] = series[key_of(row)]
    board = {"problems": problems, "rows": rows, "teams": bool(contest and contest.teams)}
    return Results(key, board, {slug: len(users) for slug, users in solvers.items()}, by_user)


def problem_stats(s: Session, user: User | None) -> dict[str, dict]:
    """Per problem: how many users have an accepted submission, and this user's best score."""
    found = results(s, live=user is not None and user.is_admin)
    # one's own results are never frozen for oneself
    mine = results(s, live=True).best.get(user.id, {}) if user is not None else {}
    return {slug: {"solvers": found.solvers.get(slug, 0), "best_score": mine.get(slug)}
            for slug in found.solvers.keys() | mine.keys()}
