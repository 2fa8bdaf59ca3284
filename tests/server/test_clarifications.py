"""Clarifications and announcements against real SQLite and PostgreSQL: who reads what, what is
unread for whom, and the refusals; the API, the CLI's text and the audit log in test_api.py."""

from __future__ import annotations

from dataclasses import replace

from judge.service import clarifications as clar
from judge.service.models import Contest
from tests.server.conftest import refused


def seen(s, user, **kw) -> dict[int, bool]:
    return {c.id: unread for c, unread in clar.listing(s, user, **kw)}


def test_answers_reach_the_asker_or_everyone_and_are_unread_until_read(s, config, world):
    admin, alice, bob = world["admin"], world["alice"], world["bob"]
    mine = clar.ask(s, config, alice, "Is n always a multiple of 4?", problem="vector_add")
    theirs = clar.ask(s, config, bob, "May I use shared memory?")
    s.commit()
    # asked, not answered: nothing to read yet for them; the organizers' to-do
    assert seen(s, alice) == {mine.id: False} and seen(s, bob) == {theirs.id: False}
    assert seen(s, admin) == {theirs.id: True, mine.id: True}
    clar.answer(s, admin, mine.id, "No: see the n100003 test point.", public=False)
    clar.answer(s, admin, theirs.id, "Yes.", public=True)
    note = clar.announce(s, admin, "The softmax baseline was fixed.")
    s.commit()
    assert seen(s, admin, unread_only=True) == {}
    assert seen(s, alice) == {note.id: True, theirs.id: True, mine.id: True}
    assert seen(s, bob) == {note.id: True, theirs.id: True}  # not alice's private answer
    shown = clar.view(next(c for c, _ in clar.listing(s, bob) if c.id == theirs.id), True, False)
    assert "asked_by" not in shown and shown["question"] == "May I use shared memory?"
    assert clar.mark_read(s, alice, [mine.id, theirs.id, 999]) == 2
    s.commit()
    assert seen(s, alice, unread_only=True) == {note.id: True}
    clar.answer(s, admin, mine.id, "No: n100003 is odd.", public=False)  # answered again
    s.commit()
    assert seen(s, alice, unread_only=True) == {mine.id: True, note.id: True}
    assert clar.mark_read(s, alice) == 3
    s.commit()
    assert seen(s, alice, unread_only=True) == {}


def test_a_contests_list_holds_its_own_and_the_general_ones(s, config, world):
    s.add(Contest(slug="cup", title="Cup", problems=["vector_add"]))
    s.add(Contest(slug="other", title="Other", problems=["softmax"]))
    s.commit()
    general = clar.announce(s, world["admin"], "Welcome.")
    in_cup = clar.announce(s, world["admin"], "Cup starts late.", contest="cup")
    clar.announce(s, world["admin"], "Other news.", contest="other")
    s.commit()
    assert set(seen(s, world["alice"], contest="cup")) == {general.id, in_cup.id}


def test_questions_are_refused_when_empty_misplaced_or_too_many(s, config, world):
    s.add(Contest(slug="cup", title="Cup", problems=["vector_add"]))
    s.commit()
    alice = world["alice"]
    with refused(422, "the question is empty"):
        clar.ask(s, config, alice, "   ")
    with refused(404, "softmax is not part of cup"):
        clar.ask(s, config, alice, "?", problem="softmax", contest="cup")
    with refused(404, "no problem 'nope'"):
        clar.ask(s, config, alice, "?", problem="nope")
    with refused(404, "no contest 'nope'"):
        clar.ask(s, config, alice, "?", contest="nope")
    with refused(404, "no question"):
        clar.answer(s, world["admin"], clar.announce(s, world["admin"], "x").id, "y", False)
    few = replace(config, questions_per_hour=2)
    for _ in range(2):
        clar.ask(s, few, alice, "?")
    with refused(429, "at most 2 questions an hour; the next at 20"):
        clar.ask(s, few, alice, "?")
    clar.ask(s, few, world["admin"], "organizers are not limited")
