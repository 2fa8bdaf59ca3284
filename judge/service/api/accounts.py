"""The API's account routes: signing in and out, the user's own page (password, API tokens), and
organizers' users (create, bulk import from CSV, password reset). The rules are
judge/service/accounts.py's; this module is their HTTP side.
"""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from pydantic import Field
from sqlalchemy import select

from judge.service import accounts
from judge.service.deps import (
    SESSION_COOKIE,
    AdminDep,
    AuditDep,
    Body,
    IdInPath,
    SessionDep,
    SettingsDep,
    UserDep,
)
from judge.service.errors import ServiceError
from judge.service.models import User

Name = Field(pattern=accounts.NAME_RULE, description=accounts.NAME_HELP)


class SignIn(Body):
    """A name and password, or an API token (a browser session opened from a token)."""

    name: str | None = Field(None, max_length=64)
    password: str | None = Field(None, max_length=1024)
    token: str | None = Field(None, max_length=200)


class PasswordChange(Body):
    current: str = Field(max_length=1024)
    new: str = Field(min_length=accounts.MIN_PASSWORD, max_length=1024)


class TokenIn(Body):
    name: str = Field(min_length=1, max_length=64)


class UserIn(Body):
    name: str = Name
    admin: bool = False
    team: str | None = Field(None, pattern=accounts.TEAM_RULE)
    password: str | None = Field(None, min_length=accounts.MIN_PASSWORD, max_length=1024,
                                 description="empty: one is generated and returned")


class UsersImport(Body):
    csv: str = Field(max_length=2 * 1024 * 1024, description="header: name[,team][,role]"
                     "[,password]; empty passwords are generated")
    skip_existing: bool = False


def user_view(user: User) -> dict:
    return {"name": user.name, "role": user.role, "team": user.team,
            "has_password": user.password_hash is not None, "created_at": user.created_at}


def token_view(row) -> dict:
    return {"id": row.id, "name": row.name, "created_at": row.created_at,
            "last_used_at": row.last_used_at}

router = APIRouter(tags=["accounts"])


@router.post("/api/session")
def sign_in(body: SignIn, request: Request, response: Response, s: SessionDep,
            config: SettingsDep) -> dict:
    """Sets the HttpOnly session cookie (SameSite=Strict) for `KJUDGE_SESSION_HOURS`."""
    if body.token:
        user = accounts.user_by_token(s, body.token)
        if user is None:
            raise ServiceError(401, "that token is not valid")
    elif body.name and body.password:
        address = request.client.host if request.client else "unknown"
        user = accounts.sign_in(s, config, body.name, body.password, address)
    else:
        raise ServiceError(422, "send a name and password, or a token")
    secret = accounts.open_session(s, user, config)
    response.set_cookie(SESSION_COOKIE, secret, max_age=config.session_hours * 3600,
                        httponly=True, samesite="strict", secure=config.secure_cookies,
                        path="/")
    return user_view(user)

@router.delete("/api/session")
def sign_out(request: Request, response: Response, s: SessionDep) -> dict:
    accounts.close_session(s, request.cookies.get(SESSION_COOKIE))
    response.delete_cookie(SESSION_COOKIE, path="/")
    return {"signed_out": True}

@router.get("/api/me")
def me(user: UserDep) -> dict:
    return user_view(user)

@router.post("/api/me/password")
def change_password(body: PasswordChange, s: SessionDep, user: UserDep) -> dict:
    """Every browser session of the user ends, this one too: sign in again. Every API token
    is revoked too (`tokens_revoked`: how many): make new ones."""
    if user.password_hash is not None and not accounts.password_matches(s, user,
                                                                        body.current):
        raise ServiceError(403, "the current password is not right")
    return {"changed": True, "tokens_revoked": accounts.set_password(s, user, body.new)}

@router.get("/api/me/tokens")
def my_tokens(s: SessionDep, user: UserDep) -> list[dict]:
    return [token_view(row) for row in accounts.tokens_of(s, user)]

@router.post("/api/me/tokens", status_code=201)
def new_token(body: TokenIn, s: SessionDep, user: UserDep) -> dict:
    """The token is shown this once; only its hash is kept."""
    row, token = accounts.create_token(s, user, body.name)
    return {**token_view(row), "token": token}

@router.delete("/api/me/tokens/{token_id}")
def revoke_token(token_id: IdInPath, s: SessionDep, user: UserDep) -> dict:
    accounts.revoke_token(s, user, token_id)
    return {"revoked": token_id}

@router.post("/api/users", status_code=201)
def add_user(body: UserIn, s: SessionDep, audit_log: AuditDep) -> dict:
    password = body.password or accounts.generate_password()
    user, token = accounts.create_user(s, body.name, body.admin, body.team, password)
    audit_log("user.create", user.name, role=user.role, team=user.team)
    return {**user_view(user), "token": token, "password": password}

@router.get("/api/users")
def users(s: SessionDep, _admin: AdminDep) -> list[dict]:
    return [user_view(u) for u in s.scalars(select(User).order_by(User.id))]

@router.post("/api/users/import", status_code=201)
def import_users(body: UsersImport, s: SessionDep, audit_log: AuditDep) -> dict:
    """All or nothing; every problem of the file named by line (422), existing names
    refused (409) unless `skip_existing`."""
    created = accounts.import_users(s, accounts.parse_users_csv(body.csv),
                                    body.skip_existing)
    audit_log("user.import", f"{len(created)} users", users=[c.name for c in created])
    return {"created": [{"name": c.name, "team": c.team, "role": c.role,
                         "password": c.password} for c in created],
            "passwords_csv": accounts.passwords_csv(created)}

@router.post("/api/users/{name}/password")
def reset_password(name: str, s: SessionDep, audit_log: AuditDep) -> dict:
    """A new generated password; the user's browser sessions and API tokens end
    (`tokens_revoked`: how many), and the name's failed sign-ins are forgotten."""
    user = accounts.get_user(s, name)
    reset = accounts.reset_password(s, user)
    audit_log("user.password_reset", user.name, tokens_revoked=reset.tokens_revoked)
    return {"name": user.name, "password": reset.password,
            "tokens_revoked": reset.tokens_revoked}
