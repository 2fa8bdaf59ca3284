"""What every API route stands on: request bodies' base, the settings and database session of a
request, and who is asking (an API token, or a browser's session cookie)."""

from __future__ import annotations

import base64
from typing import Annotated, Literal
from urllib.parse import urlsplit

from fastapi import Depends, Header, Request
from fastapi import Path as PathParam
from pydantic import BaseModel, Field, field_validator
from sqlalchemy.orm import Session

from judge.service import accounts, audit, db
from judge.service.errors import ServiceError
from judge.service.models import User
from judge.settings import Settings
from judge.verdicts import SUBMISSION_MODES

MAX_ID = 2**31 - 1  # the id columns are 32-bit integers: a larger id is a 422, not a 500
RowId = Annotated[int, Field(ge=1, le=MAX_ID)]
IdInPath = Annotated[int, PathParam(ge=1, le=MAX_ID)]
SESSION_COOKIE = "kj_session"
Mode = Literal[SUBMISSION_MODES]  # a submission's mode (judge/verdicts.py)
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")


def answers(media_type: str) -> dict:
    """A route's `responses`: its 200 is `media_type`, not JSON (a response class of that type
    would document the app's JSON errors as that type too, which is not what they are)."""
    return {200: {"content": {media_type: {}}}}


class Body(BaseModel):
    """A request body. Its text is text: JSON's escapes can spell a lone UTF-16 surrogate
    ("\\ud800") or a NUL ("\\u0000"), which the databases cannot store (each was a 500)."""

    @field_validator("*", mode="after")
    @classmethod
    def _storable(cls, value):
        for text in value if isinstance(value, list) else [value]:
            if isinstance(text, str):
                try:
                    text.encode("utf-8")
                except UnicodeEncodeError:
                    raise ValueError("text must be valid Unicode (a lone surrogate is not)") \
                        from None
                if "\x00" in text:
                    raise ValueError("text must not hold a NUL character")
        return value


# Dependencies that do no I/O are coroutines: FastAPI runs each plain function dependency in its
# thread pool, a hop that costs more than these bodies under load.
async def get_settings(request: Request) -> Settings:
    return request.app.state.settings


def get_session(config: Annotated[Settings, Depends(get_settings)]):
    with db.session(config.database_url) as s:
        yield s


# scope="function": the session commits when the route returns, before its answer is sent (the
# default ends a yield dependency after the response: a client acting on the answer, e.g. with a
# token just made, could find nothing stored yet, and a failed commit followed a 2xx)
SessionDep = Annotated[Session, Depends(get_session, scope="function")]
SettingsDep = Annotated[Settings, Depends(get_settings)]


def bearer(authorization: str | None) -> str | None:
    return authorization.removeprefix("Bearer ").strip() if authorization else None


def optional_user(request: Request, s: SessionDep,
                  authorization: Annotated[str | None, Header()] = None) -> User | None:
    """An `Authorization: Bearer` API token, else the browser's session cookie. A change asked
    for with the cookie from another site's page is refused (the cookie is SameSite=Strict
    already; this holds for browsers that send it anyway)."""
    if authorization and authorization.startswith("Basic "):
        return basic_user(s, request, authorization)
    token = bearer(authorization)
    if token:
        return accounts.user_by_token(s, token)
    user = accounts.user_by_session(s, request.cookies.get(SESSION_COOKIE))
    if user is not None and request.method not in SAFE_METHODS and cross_site(request):
        raise ServiceError(403, "a change signed in by cookie must come from this site's pages")
    return user


def basic_user(s: Session, request: Request, authorization: str) -> User | None:
    """HTTP Basic, as the ICPC tools sign in to the CCS API: a name and its password (the
    sign-in limits apply), or a name and one of its API tokens."""
    try:
        name, _, secret = base64.b64decode(authorization[6:], validate=True).decode().partition(":")
    except (ValueError, UnicodeDecodeError):
        raise ServiceError(401, "Basic credentials must be base64 of name:password") from None
    by_token = accounts.user_by_token(s, secret)
    if by_token is not None:
        return by_token if by_token.name == name else None
    address = request.client.host if request.client else "unknown"
    return accounts.sign_in(s, request.app.state.settings, name, secret, address)


def cross_site(request: Request) -> bool:
    site = request.headers.get("sec-fetch-site")
    if site is not None:
        return site not in ("same-origin", "none")
    origin = request.headers.get("origin")
    return origin is not None and urlsplit(origin).netloc != request.headers.get("host")


async def current_user(user: Annotated[User | None, Depends(optional_user)]) -> User:
    if user is None:
        raise ServiceError(401, "sign in, or send a valid token: Authorization: Bearer <token> "
                                "(kjudge user add NAME prints one)")
    return user


async def admin_user(user: Annotated[User, Depends(current_user)]) -> User:
    if not user.is_admin:
        raise ServiceError(403, "this needs an organizer's (admin) account")
    return user


OptionalUserDep = Annotated[User | None, Depends(optional_user)]
UserDep = Annotated[User, Depends(current_user)]
AdminDep = Annotated[User, Depends(admin_user)]


class Auditor:
    """An organizer's route's pen on the audit log: `audit(action, target, **details)`."""

    def __init__(self, s: Session, admin: User):
        self.s, self.admin, self.written = s, admin, 0

    def __call__(self, action: str, target: object, **details) -> None:
        audit.record(self.s, self.admin, action, str(target), **details)
        self.written += 1


def auditor(s: SessionDep, admin: AdminDep):
    """An organizer, and the audit log their action goes to: a route that takes it and returns
    without writing an entry fails (500) before its change commits, so no action goes unlogged
    by a forgotten line (a refused request raises and writes none)."""
    pen = Auditor(s, admin)
    yield pen
    if not pen.written:
        raise RuntimeError("this organizer's route wrote nothing to the audit log")


# scope="function": the entry is written before the session commits (its teardown runs first)
AuditDep = Annotated[Auditor, Depends(auditor, scope="function")]
