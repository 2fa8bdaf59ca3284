"""The counter that moves with every change of what the boards count (a judging's end, a
decision, a sanction, a contest's settings): the leaderboard's cache key (boards.results)."""

from __future__ import annotations

import secrets

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from judge.service.models import Counter

RESULTS = "results"


def results_changed(s: Session) -> None:
    """What the boards count changed (in this transaction): the results' version moves with it."""
    bumped = s.execute(update(Counter).where(Counter.name == RESULTS)
                       .values(value=Counter.value + 1))
    if bumped.rowcount == 0:  # a database that lost the row: any new value is a change
        s.add(Counter(name=RESULTS, value=secrets.randbits(62)))


def results_version(s: Session) -> int | None:
    return s.scalar(select(Counter.value).where(Counter.name == RESULTS))
