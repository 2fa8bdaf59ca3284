"""The API's clarification routes: questions, answers, announcements and what one has not read
(judge/service/clarifications.py)."""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import Field

from judge.service import clarifications
from judge.service.deps import AuditDep, Body, IdInPath, RowId, SessionDep, SettingsDep, UserDep

router = APIRouter(tags=["clarifications"])


class QuestionIn(Body):
    text: str = Field(max_length=clarifications.MAX_TEXT)
    problem: str | None = None
    contest: str | None = None


class AnswerIn(Body):
    text: str = Field(max_length=clarifications.MAX_TEXT)
    public: bool = Field(False, description="to everyone (the asker's name is not shown)")


class AnnouncementIn(QuestionIn):
    pass


# what one reader marks read at once: far more than a contest's clarifications, and the
# request's work bounded (200,000 ids took 0.25 s of the API's CPU a request)
MAX_READ_IDS = 1000


class ReadIn(Body):
    ids: list[RowId] | None = Field(None, max_length=MAX_READ_IDS,
                                    description="none: everything this user reads")


@router.get("/api/clarifications")
def clarification_list(s: SessionDep, user: UserDep, contest: str | None = None,
                       unread: bool = False) -> list[dict]:
    """Newest first: announcements, public answers and one's own questions (organizers:
    all); `unread`: only those answered or announced since one last read them (organizers:
    questions not answered yet)."""
    return [clarifications.view(clar, is_unread, user.is_admin)
            for clar, is_unread in clarifications.listing(s, user, contest, unread)]


@router.post("/api/clarifications", status_code=201)
def ask(body: QuestionIn, s: SessionDep, config: SettingsDep, user: UserDep) -> dict:
    """A question to the organizers, about a problem or a contest or neither."""
    clar = clarifications.ask(s, config, user, body.text, body.problem, body.contest)
    return clarifications.view(clar, False, user.is_admin)


@router.post("/api/clarifications/read")
def read_clarifications(body: ReadIn, s: SessionDep, user: UserDep) -> dict:
    return {"read": clarifications.mark_read(s, user, body.ids)}


@router.post("/api/clarifications/{clarification_id}/answer")
def answer(clarification_id: IdInPath, body: AnswerIn, s: SessionDep,
           audit_log: AuditDep) -> dict:
    clar = clarifications.answer(s, audit_log.admin, clarification_id, body.text,
                                 body.public)
    audit_log("clarification.answer", f"clarification {clar.id}", public=body.public,
              text=body.text)
    return clarifications.view(clar, False, True)


@router.post("/api/announcements", status_code=201)
def announce(body: AnnouncementIn, s: SessionDep, audit_log: AuditDep) -> dict:
    """To every contestant (of the contest, if one is named: it shows in its lists)."""
    clar = clarifications.announce(s, audit_log.admin, body.text, body.contest,
                                   body.problem)
    audit_log("announcement", f"clarification {clar.id}", contest=body.contest,
              text=body.text)
    return clarifications.view(clar, False, True)
