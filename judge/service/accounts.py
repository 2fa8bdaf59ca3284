"""Accounts: users, their passwords, API tokens, browser sessions, sign-in limits and bulk import.

Passwords are argon2id hashes made by argon2-cffi with OWASP's parameters (19 MiB, 2 passes, one
lane: ~45 ms a check on a 2-core VM, where the library's defaults took ~200 ms and let four
contestants sign in per second); a hash made with other parameters is renewed at its next
sign-in. API tokens and session secrets are random and stored as SHA-256 only: a stolen
database signs nobody in. Failed sign-ins are rows, so every API process counts the same ones.
"""

from __future__ import annotations

import csv
import hashlib
import io
import re
import secrets
from dataclasses import dataclass
from datetime import timedelta
from functools import cache

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session, joinedload

from judge.service.errors import ServiceError
from judge.service.models import ApiToken, LoginFailure, User, WebSession, utcnow
from judge.service.times import aware
from judge.settings import Settings

HASHER = PasswordHasher(time_cost=2, memory_cost=19456, parallelism=1)
NAME_RULE = r"^[A-Za-z0-9_.-]{1,64}$"
NAME_HELP = "1-64 letters, digits, '_', '.' or '-'"
TEAM_RULE = r"^[^\x00-\x1f]{1,64}$"
MIN_PASSWORD = 8
PASSWORD_ALPHABET = "abcdefghijkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no look-alikes
TOKEN_TOUCH = timedelta(minutes=1)  # a token's last_used_at is written at most this often
ROLES = ("contestant", "admin")


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def generate_password(length: int = 14) -> str:
    return "".join(secrets.choice(PASSWORD_ALPHABET) for _ in range(length))


def hash_password(password: str) -> str:
    if len(password) < MIN_PASSWORD:
        raise ServiceError(422, f"a password needs at least {MIN_PASSWORD} characters")
    return HASHER.hash(password)


@cache
def _dummy_hash() -> str:
    """What an unknown name's password is checked against: the same cost as a real user's, so
    that timing does not tell which names exist (made at the first use, not at import)."""
    return HASHER.hash(secrets.token_urlsafe(16))


def password_matches(s: Session, user: User | None, password: str) -> bool:
    """Check a password (an unknown user costs a check too); a match renews an outdated hash."""
    stored = user.password_hash if user is not None else None
    try:
        HASHER.verify(stored or _dummy_hash(), password)
    except (VerificationError, InvalidHashError):
        return False
    if stored is None:
        return False
    if HASHER.check_needs_rehash(stored):
        user.password_hash = HASHER.hash(password)
    return True


# -- users --------------------------------------------------------------------------------------
def get_user(s: Session, name: str) -> User:
    user = s.scalar(select(User).where(User.name == name))
    if user is None:
        raise ServiceError(404, f"no user {name!r}")
    return user


def create_user(s: Session, name: str, admin: bool = False, team: str | None = None,
                password: str | None = None) -> tuple[User, str]:
    """A new user with one API token ("default"), returned with it; `password` optional."""
    if s.scalar(select(User).where(User.name == name)):
        raise ServiceError(409, f"user {name!r} already exists")
    user = User(name=name, role="admin" if admin else "contestant", team=team or None,
                password_hash=hash_password(password) if password else None)
    s.add(user)
    s.flush()
    _, token = create_token(s, user, "default")
    return user, token


def set_password(s: Session, user: User, password: str) -> int:
    """A new password; every browser session and every API token of the user ends (a token
    minted from a stolen session must not outlive the password that let it in). How many
    tokens were revoked."""
    user.password_hash = hash_password(password)
    end_sessions(s, user)
    return s.execute(delete(ApiToken).where(ApiToken.user_id == user.id)).rowcount


@dataclass(frozen=True)
class Reset:
    password: str
    tokens_revoked: int


def reset_password(s: Session, user: User) -> Reset:
    """An organizer's reset: a generated password (`set_password`), and the name's failed
    sign-ins forgotten, so that the remedy a 429 names works at once."""
    password = generate_password()
    revoked = set_password(s, user, password)
    s.execute(delete(LoginFailure).where(LoginFailure.name == user.name))
    return Reset(password, revoked)


# -- API tokens -----------------------------------------------------------------------------------
def create_token(s: Session, user: User, name: str) -> tuple[ApiToken, str]:
    token = "kj_" + secrets.token_urlsafe(24)
    row = ApiToken(user_id=user.id, name=name, token_hash=digest(token))
    s.add(row)
    s.flush()
    return row, token


def user_by_token(s: Session, token: str | None) -> User | None:
    if not token:
        return None
    # the token with its user in one query: every request signed by a token asks this
    row = s.scalar(select(ApiToken).options(joinedload(ApiToken.user))
                   .where(ApiToken.token_hash == digest(token)))
    if row is None:
        return None
    now = utcnow()
    if row.last_used_at is None or now - aware(row.last_used_at) >= TOKEN_TOUCH:
        row.last_used_at = now  # not every request: a write per poll would cost more than it
    return row.user


def tokens_of(s: Session, user: User) -> list[ApiToken]:
    return list(s.scalars(select(ApiToken).where(ApiToken.user_id == user.id)
                          .order_by(ApiToken.id)))


def revoke_token(s: Session, user: User, token_id: int) -> None:
    row = s.get(ApiToken, token_id)
    if row is None or row.user_id != user.id:
        raise ServiceError(404, f"no token {token_id} of yours")
    s.delete(row)


def replace_tokens(s: Session, user: User) -> str:
    """`kjudge user add --new-token`: every token of the user revoked, one new one made."""
    s.execute(delete(ApiToken).where(ApiToken.user_id == user.id))
    return create_token(s, user, "default")[1]


# -- browser sessions ------------------------------------------------------------------------------
def open_session(s: Session, user: User, config: Settings) -> str:
    secret = secrets.token_urlsafe(32)
    now = utcnow()
    s.add(WebSession(user_id=user.id, secret_hash=digest(secret), created_at=now,
                     expires_at=now + timedelta(hours=config.session_hours)))
    s.execute(delete(WebSession).where(WebSession.expires_at < now))  # the expired go
    return secret


def user_by_session(s: Session, secret: str | None) -> User | None:
    if not secret:
        return None
    row = s.scalar(select(WebSession).options(joinedload(WebSession.user))
                   .where(WebSession.secret_hash == digest(secret)))
    if row is None or aware(row.expires_at) <= utcnow():
        return None
    return row.user


def close_session(s: Session, secret: str | None) -> None:
    if secret:
        s.execute(delete(WebSession).where(WebSession.secret_hash == digest(secret)))


def end_sessions(s: Session, user: User) -> None:
    s.execute(delete(WebSession).where(WebSession.user_id == user.id))


# -- signing in -------------------------------------------------------------------------------------
def sign_in(s: Session, config: Settings, name: str, password: str, address: str) -> User:
    """The user whose name and password these are, or a 401; a 429 (even for the right
    password) once this client (`address`) has failed `login_attempts` times for this name in
    the window, or four times that for any names. Counted per client, not per name: failures
    from elsewhere refuse nobody else, so no guesser can lock a user (an organizer included)
    out; a distributed guesser gets `login_attempts` guesses per address and window, each an
    argon2 check. A failure is recorded in its own transaction, so it counts whatever the
    request does next."""
    since = utcnow() - timedelta(seconds=config.login_window_s)
    by_name, by_address = s.execute(select(
        func.count(LoginFailure.id).filter(LoginFailure.name == name), func.count(LoginFailure.id))
        .where(LoginFailure.at >= since, LoginFailure.address == address)).one()
    if by_name >= config.login_attempts or by_address >= 4 * config.login_attempts:
        minutes = max(1, config.login_window_s // 60)
        raise ServiceError(429, f"too many failed sign-ins from here; try again in {minutes} "
                                "minutes or ask an organizer to reset the password")
    user = s.scalar(select(User).where(User.name == name))
    if not password_matches(s, user, password):
        s.add(LoginFailure(name=name[:64], address=address[:64]))
        s.execute(delete(LoginFailure).where(LoginFailure.at < since))
        s.commit()
        raise ServiceError(401, "wrong name or password")
    return user


# -- bulk import --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class NewUser:
    line: int
    name: str
    team: str | None
    role: str
    password: str | None


@dataclass(frozen=True)
class Created:
    name: str
    team: str | None
    role: str
    password: str  # as given in the file, or generated


COLUMNS = ("name", "team", "role", "password")


def parse_users_csv(text: str) -> list[NewUser]:
    """Rows of a users CSV: a header naming `name` and any of `team`, `role`, `password`. Every
    problem in the file is reported (by line) at once, before anything is created."""
    reader = csv.DictReader(io.StringIO(text.lstrip("\ufeff")))
    reader.fieldnames = _users_header(reader.fieldnames)
    rows, problems, seen = [], [], {}
    for record in reader:
        line = reader.line_num
        cells = {k: (v or "").strip() for k, v in record.items() if k is not None}
        if None in record:
            problems.append(f"line {line}: more cells than the header has columns")
        name, role = cells.get("name", ""), cells.get("role") or "contestant"
        team, password = cells.get("team") or None, cells.get("password") or None
        if not name and not any(cells.values()):
            continue  # a blank line
        problems += [f"line {line}: {problem}"
                     for problem in _user_problems(name, role, team, password, seen)]
        seen.setdefault(name, line)
        rows.append(NewUser(line, name, team, role, password))
    if problems:
        raise ServiceError(422, "the file has problems, nothing was created:\n"
                           + "\n".join(problems))
    if not rows:
        raise ServiceError(422, "the file names no users")
    return rows


def _users_header(fieldnames) -> list[str]:
    header = [h.strip() for h in fieldnames or []]
    if "name" not in header:
        raise ServiceError(422, "line 1: the header must name a `name` column (and any of "
                                "team, role, password)")
    unknown = [h for h in header if h not in COLUMNS]
    if unknown:
        raise ServiceError(422, f"line 1: unknown columns {unknown}; the columns are "
                                f"{', '.join(COLUMNS)}")
    return header


def _user_problems(name: str, role: str, team: str | None, password: str | None,
                   seen: dict[str, int]) -> list[str]:
    """What is wrong with one row (`seen`: the names of the rows above, by line)."""
    problems = []
    if not re.fullmatch(NAME_RULE, name):
        problems.append(f"name {name!r} must be {NAME_HELP}")
    elif name in seen:
        problems.append(f"name {name!r} is also on line {seen[name]}")
    if role not in ROLES:
        problems.append(f"role {role!r} must be one of {', '.join(ROLES)}")
    if team is not None and not re.fullmatch(TEAM_RULE, team):
        problems.append("team must be 1-64 printable characters")
    if password is not None and len(password) < MIN_PASSWORD:
        problems.append(f"password needs at least {MIN_PASSWORD} characters "
                        "(leave it empty to have one generated)")
    return problems


def import_users(s: Session, rows: list[NewUser], skip_existing: bool = False) -> list[Created]:
    """Create the users of `parse_users_csv`, all or none: names that exist are a 409 naming
    them, unless `skip_existing` (then they are left as they are)."""
    names = [r.name for r in rows]
    existing = set(s.scalars(select(User.name).where(User.name.in_(names))))
    if existing and not skip_existing:
        clash = [f"{r.name} (line {r.line})" for r in rows if r.name in existing]
        raise ServiceError(409, f"these users exist already: {', '.join(clash)}; nothing was "
                                "created (skip them with --skip-existing / skip_existing)")
    created = []
    for row in rows:
        if row.name in existing:
            continue
        password = row.password or generate_password()
        user, _ = create_user(s, row.name, row.role == "admin", row.team, password)
        created.append(Created(user.name, user.team, user.role, password))
    return created


def passwords_csv(created: list[Created]) -> str:
    """What the organizer hands out: name, team, password (tokens stay for `kjudge user add`)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["name", "team", "password"])
    for c in created:
        writer.writerow([c.name, c.team or "", c.password])
    return buffer.getvalue()
