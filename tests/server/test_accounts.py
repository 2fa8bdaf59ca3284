"""Accounts and the public board, through the API in-process (FastAPI's TestClient) over real
SQLite and PostgreSQL: passwords, sessions, sign-in limits, tokens, CSV import, resets, teams,
and a frozen contest seen by a visitor, a contestant and an organizer."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from datetime import timedelta, timezone

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select, update

from judge.service import accounts, audit, contests, db
from judge.service.deps import SESSION_COOKIE
from judge.service.models import Submission, User, utcnow
from tests.conftest import ROOT
from tests.server.conftest import PASSWORD
from tests.server.test_api import LOOP, finish
from tests.server.test_api import auth as bearer


def sign_in(api, name="alice", password=PASSWORD):
    return api.post("/api/session", json={"name": name, "password": password})


def test_a_password_opens_a_session_that_sign_out_ends(api):
    assert sign_in(api, password="wrong password").status_code == 401
    assert api.get("/api/me").status_code == 401
    signed = sign_in(api)
    assert signed.status_code == 200 and signed.json()["name"] == "alice"
    cookie = signed.headers["set-cookie"]
    assert cookie.startswith(SESSION_COOKIE + "=") and "HttpOnly" in cookie
    assert "SameSite=strict" in cookie and "Max-Age=43200" in cookie
    assert api.get("/api/me").json()["name"] == "alice"
    # the session is usable for changes from the site's own pages
    assert api.post("/api/me/tokens", json={"name": "laptop"}).status_code == 201
    assert api.delete("/api/session").status_code == 200
    assert api.get("/api/me").status_code == 401
    # only the secret's hash is stored: the cookie's value is in no row
    with db.session(api.config.database_url) as s:
        assert s.scalar(select(User.password_hash).where(User.name == "alice")).startswith(
            "$argon2id$v=19$m=19456,t=2,p=1$")


def test_a_session_expires(api):
    sign_in(api)
    with db.session(api.config.database_url) as s:
        from judge.service.models import WebSession

        s.execute(update(WebSession).values(expires_at=utcnow() - timedelta(seconds=1)))
    assert api.get("/api/me").status_code == 401


def test_a_token_opens_a_browser_session_too(api):
    assert api.post("/api/session", json={"token": "kj_nope"}).status_code == 401
    signed = api.post("/api/session", json={"token": api.tokens["bob"]})
    assert signed.status_code == 200 and api.get("/api/me").json()["name"] == "bob"
    assert api.post("/api/session", json={}).status_code == 422


def test_failed_sign_ins_are_limited_per_name_then_per_address(api):
    attempts = api.config.login_attempts
    for _ in range(attempts):
        assert sign_in(api, password="not it at all").status_code == 401
    refused = sign_in(api)  # the right password, too late, from this client
    assert refused.status_code == 429 and "reset" in refused.json()["error"]
    # another client signs in as alice: one client's failures refuse that client only
    elsewhere = TestClient(api.app, client=("10.0.0.7", 50000))
    assert sign_in(elsewhere).status_code == 200
    # another name from the same address still signs in, until the address's own limit
    with db.session(api.config.database_url) as s:
        accounts.create_user(s, "carol", password=PASSWORD)
    assert sign_in(api, "carol").status_code == 200
    for i in range(3 * attempts):
        assert sign_in(api, f"ghost{i % 4}", "guessing!").status_code in (401, 429)
    assert sign_in(api, "carol").status_code == 429
    # the window passes: the failures no longer count
    with db.session(api.config.database_url) as s:
        from judge.service.models import LoginFailure

        s.execute(update(LoginFailure).values(at=utcnow() - timedelta(hours=1)))
    assert sign_in(api).status_code == 200


def test_nobody_locks_an_organizer_out_and_a_reset_clears_the_failures(api):
    """Issue 44: five wrong passwords for `root` by name, from anywhere, refused root itself;
    an organizer's reset, the remedy the 429 names, did not clear the count."""
    from judge.service.models import LoginFailure

    with db.session(api.config.database_url) as s:
        root = accounts.get_user(s, "root")
        root.password_hash = accounts.hash_password(PASSWORD)
    stranger = TestClient(api.app, client=("203.0.113.9", 50000))
    for _ in range(api.config.login_attempts + 2):
        assert sign_in(stranger, "root", "guessing still").status_code in (401, 429)
    assert sign_in(stranger, "root").status_code == 429  # the guesser is refused
    assert sign_in(api, "root").status_code == 200  # the organizer is not
    for _ in range(api.config.login_attempts):
        sign_in(api, "alice", "wrong again!")
    assert sign_in(api, "alice").status_code == 429
    reset = api.post("/api/users/alice/password", headers=bearer(api, "admin"))
    assert reset.status_code == 200
    with db.session(api.config.database_url) as s:
        assert s.query(LoginFailure).filter_by(name="alice").count() == 0
    assert sign_in(api, "alice", reset.json()["password"]).status_code == 200


def test_a_password_change_or_reset_revokes_every_api_token(api):
    """Issue 44: tokens outlived a password change and a reset, so a stolen session minted
    a token that stayed. Both now revoke every token of the user (and say how many)."""
    sign_in(api)
    minted = api.post("/api/me/tokens", json={"name": "thief"}).json()["token"]
    assert api.get("/api/me", headers={"Authorization": f"Bearer {minted}"}).status_code == 200
    changed = api.post("/api/me/password", json={"current": PASSWORD, "new": "a new secret"})
    assert changed.status_code == 200 and changed.json()["tokens_revoked"] == 2
    for token in (minted, api.tokens["alice"]):
        assert api.get("/api/me", headers={"Authorization": f"Bearer {token}"}).status_code == 401
    bob = bearer(api, "bob")
    assert api.get("/api/me", headers=bob).status_code == 200
    reset = api.post("/api/users/bob/password", headers=bearer(api, "admin"))
    assert reset.status_code == 200 and reset.json()["tokens_revoked"] == 1
    assert api.get("/api/me", headers=bob).status_code == 401


def test_a_password_change_or_reset_ends_every_session(api):
    sign_in(api)
    other = TestClient(api.app)
    assert sign_in(other).status_code == 200
    wrong = api.post("/api/me/password", json={"current": "nope nope", "new": "a new secret"})
    assert wrong.status_code == 403
    short = api.post("/api/me/password", json={"current": PASSWORD, "new": "short"})
    assert short.status_code == 422
    assert api.post("/api/me/password", json={"current": PASSWORD,
                                              "new": "a new secret"}).status_code == 200
    assert other.get("/api/me").status_code == 401 and api.get("/api/me").status_code == 401
    assert sign_in(api, password="a new secret").status_code == 200
    reset = api.post("/api/users/alice/password", headers=bearer(api, "admin"))
    assert reset.status_code == 200 and len(reset.json()["password"]) == 14
    assert api.get("/api/me").status_code == 401
    assert sign_in(api, password=reset.json()["password"]).status_code == 200
    assert api.post("/api/users/alice/password", headers=bearer(api, "bob")).status_code == 403
    # and her API tokens with them (test_a_password_change_or_reset_revokes_every_api_token)
    assert api.get("/api/me", headers=bearer(api, "alice")).status_code == 401


def test_tokens_are_made_listed_and_revoked_by_their_owner(api):
    made = api.post("/api/me/tokens", json={"name": "ci"}, headers=bearer(api, "bob"))
    assert made.status_code == 201 and made.json()["token"].startswith("kj_")
    new = {"Authorization": f"Bearer {made.json()['token']}"}
    assert api.get("/api/me", headers=new).json()["name"] == "bob"
    listed = api.get("/api/me/tokens", headers=bearer(api, "bob")).json()
    assert [t["name"] for t in listed] == ["default", "ci"]
    assert all("token" not in t for t in listed) and listed[0]["last_used_at"] is not None
    stranger = api.delete(f"/api/me/tokens/{made.json()['id']}", headers=bearer(api, "alice"))
    assert stranger.status_code == 404
    assert api.delete(f"/api/me/tokens/{made.json()['id']}",
                      headers=bearer(api, "bob")).status_code == 200
    assert api.get("/api/me", headers=new).status_code == 401
    assert api.get("/api/me", headers=bearer(api, "bob")).status_code == 200


def test_a_cookie_change_from_another_site_is_refused(api):
    sign_in(api)
    for headers in ({"Sec-Fetch-Site": "cross-site"}, {"Origin": "https://evil.example"}):
        forged = api.post("/api/me/tokens", json={"name": "evil"}, headers=headers)
        assert forged.status_code == 403, headers
    same = api.post("/api/me/tokens", json={"name": "mine"},
                    headers={"Sec-Fetch-Site": "same-origin", "Origin": "http://testserver"})
    assert same.status_code == 201
    assert api.get("/api/me", headers={"Sec-Fetch-Site": "cross-site"}).status_code == 200


def test_a_nul_in_a_body_is_a_422_not_a_500(api):
    response = api.post("/api/submissions", headers=bearer(api, "bob"), json={
        "problem": "vector_add", "language": "cpp", "source": "int x;\u0000"})
    assert response.status_code == 422 and "NUL" in response.json()["error"]


CSV = """name,team,role,password
dave,red,,
erin,red,,her own pass
frank,,admin,
"""


def test_a_csv_import_is_all_or_nothing_and_its_users_sign_in(api):
    admin = bearer(api, "admin")
    broken = api.post("/api/users/import", headers=admin, json={
        "csv": "name,team,role\nok_one,,\nbad name!,,\nok_one,,\nx,,boss\n"})
    assert broken.status_code == 422
    error = broken.json()["error"]
    assert "line 3: name 'bad name!'" in error and "line 4: name 'ok_one' is also on line 2" \
        in error and "line 5: role 'boss'" in error
    assert api.post("/api/users/import", headers=admin,
                    json={"csv": "who\nx\n"}).status_code == 422
    assert "ok_one" not in {u["name"] for u in api.get("/api/users", headers=admin).json()}
    done = api.post("/api/users/import", headers=admin, json={"csv": CSV})
    assert done.status_code == 201
    created = {c["name"]: c for c in done.json()["created"]}
    assert created["erin"]["password"] == "her own pass" and len(created["dave"]["password"]) == 14
    assert created["frank"]["role"] == "admin" and created["dave"]["team"] == "red"
    assert done.json()["passwords_csv"].splitlines()[1].startswith("dave,red,")
    assert sign_in(api, "dave", created["dave"]["password"]).status_code == 200
    again = api.post("/api/users/import", headers=admin, json={"csv": CSV + "gina,,,\n"})
    assert again.status_code == 409 and "dave (line 2)" in again.json()["error"]
    skipped = api.post("/api/users/import", headers=admin,
                       json={"csv": CSV + "gina,,,\n", "skip_existing": True})
    assert [c["name"] for c in skipped.json()["created"]] == ["gina"]
    assert api.post("/api/users/import", headers=bearer(api, "bob"),
                    json={"csv": CSV}).status_code == 403


def contest(api, slug="final", **fields):
    now = utcnow()
    body = {"slug": slug, "title": "Final", "problems": ["vector_add"],
            "starts_at": (now - timedelta(hours=2)).isoformat(),
            "ends_at": (now + timedelta(hours=1)).isoformat(), **fields}
    made = api.post("/api/contests", json=body, headers=bearer(api, "admin"))
    assert made.status_code == 201, made.text
    return now


def submit(api, who, score, minutes_ago=0, slug="final", verdict="AC"):
    made = api.post("/api/submissions", headers=bearer(api, who), json={
        "problem": "vector_add", "language": "cpp", "source": LOOP, "contest": slug})
    assert made.status_code == 202, made.text
    finish(api, made.json()["judging_id"], verdict, score)
    with db.session(api.config.database_url) as s:
        s.execute(update(Submission).where(Submission.id == made.json()["id"]).values(
            created_at=utcnow() - timedelta(minutes=minutes_ago)))
    return made.json()["id"]


def board(api, headers=None, slug="final"):
    response = api.get("/api/leaderboard", params={"contest": slug}, headers=headers or {})
    assert response.status_code == 200, response.text
    return response.json()


def test_contest_times_must_come_in_order(api):
    admin = bearer(api, "admin")
    now = contest(api)
    wrong = api.patch("/api/contests/final", headers=admin, json={
        "freeze_at": (now + timedelta(hours=2)).isoformat()})
    assert wrong.status_code == 422 and "ends_at must come after freeze_at" in wrong.json()["error"]
    thaw = api.patch("/api/contests/final", headers=admin, json={"thaw_after_end_s": 600})
    assert thaw.status_code == 200
    assert thaw.json()["thaw_at"].startswith((now + timedelta(hours=1, minutes=10)).isoformat()[:16])
    # a time with an offset is that moment (SQLite keeps none: stored in UTC)
    east = timezone(timedelta(hours=2))
    frozen = api.patch("/api/contests/final", headers=admin, json={
        "freeze_at": (now - timedelta(minutes=30)).astimezone(east).isoformat()})
    assert frozen.status_code == 200, frozen.text
    assert [c["frozen"] for c in api.get("/api/contests").json()] == [True]
    assert api.patch("/api/contests/final", headers=admin,
                     json={"public": None}).status_code == 422
    assert api.patch("/api/contests/final", headers=bearer(api, "bob"),
                     json={"public": True}).status_code == 403


def test_a_frozen_public_board_for_visitors_contestants_and_organizers(api):
    now = contest(api, public=True)
    assert api.patch("/api/contests/final", headers=bearer(api, "admin"), json={
        "freeze_at": (now - timedelta(minutes=30)).isoformat()}).status_code == 200
    submit(api, "alice", 100, minutes_ago=60)
    submit(api, "bob", 50, minutes_ago=50)
    submit(api, "bob", 150)  # after the freeze
    with db.session(api.config.database_url) as s:
        _, carol = accounts.create_user(s, "carol")
    api.tokens["carol"] = carol
    submit(api, "carol", 10, verdict="WA")  # only after the freeze
    seen = board(api)  # a visitor, signed out
    assert seen["shown"] == "frozen" and seen["me"] is None and seen["frozen_at"]
    assert [(r["name"], r["rank"], r["total"]) for r in seen["rows"]] == [
        ("alice", 1, 100), ("bob", 2, 50), ("carol", None, 0)]
    assert [r["pending"] for r in seen["rows"]] == [{}, {"vector_add": 1}, {"vector_add": 1}]
    assert [point[1] for point in seen["rows"][1]["series"]] == [50]
    mine = board(api, bearer(api, "bob"))
    assert mine["me"]["rank"] == 2 and mine["me"]["live"]["total"] == 150
    organizer = board(api, bearer(api, "admin"))
    assert organizer["shown"] == "live"
    assert [(r["name"], r["total"]) for r in organizer["rows"]] == [("bob", 150), ("alice", 100)]
    assert [point[1] for point in organizer["rows"][0]["series"]] == [50, 150]
    # the board of every submission and the solver counts keep the freeze for contestants
    everything = api.get("/api/leaderboard", headers=bearer(api, "alice")).json()
    assert {r["name"]: r["total"] for r in everything["rows"]} == {"alice": 100, "bob": 50}
    problems = {p["slug"]: p for p in api.get("/api/problems", headers=bearer(api, "bob")).json()}
    assert problems["vector_add"]["best_score"] == 150  # bob's own, live for him
    assert problems["vector_add"]["solvers"] == 2
    assert api.get("/api/leaderboard").status_code == 401
    # publishing the final board
    assert api.post("/api/contests/final/unfreeze", headers=bearer(api, "bob")).status_code == 403
    published = api.post("/api/contests/final/unfreeze", headers=bearer(api, "admin"))
    assert published.status_code == 200 and published.json()["frozen"] is False
    final = board(api)
    assert final["shown"] == "live" and final["rows"][0]["name"] == "bob"
    # a new freeze time freezes the published board again
    refrozen = api.patch("/api/contests/final", headers=bearer(api, "admin"), json={
        "freeze_at": (now - timedelta(minutes=20)).isoformat()})
    assert refrozen.json()["frozen"] is True and board(api)["shown"] == "frozen"


def test_a_private_contest_board_needs_a_sign_in_and_thaws_at_its_time(api):
    now = contest(api, freeze_at=(utcnow() - timedelta(minutes=30)).isoformat())
    assert api.get("/api/leaderboard", params={"contest": "final"}).status_code == 401
    submit(api, "alice", 100)
    frozen = board(api, bearer(api, "bob"))["rows"]
    assert [(r["name"], r["rank"], r["total"], r["pending"]) for r in frozen] == [
        ("alice", None, 0, {"vector_add": 1})]
    with db.session(api.config.database_url) as s:
        contests.get_contest(s, "final").thaw_at = now - timedelta(minutes=1)
    thawed = board(api, bearer(api, "bob"))["rows"]
    assert [(r["name"], r["rank"], r["total"]) for r in thawed] == [("alice", 1, 100)]


def test_teams_share_a_row_and_their_contest_submissions(api):
    with db.session(api.config.database_url) as s:
        for name in ("alice", "bob"):
            s.scalar(select(User).where(User.name == name)).team = "red"
        _, carol = accounts.create_user(s, "carol", team="blue")
        _, loner = accounts.create_user(s, "blue")  # a user without a team, named as one
    api.tokens.update(carol=carol, loner=loner)
    contest(api, teams=True)
    shared = submit(api, "alice", 100)
    submit(api, "bob", 120)
    submit(api, "carol", 90)
    submit(api, "loner", 50)
    outside = api.post("/api/submissions", headers=bearer(api, "alice"), json={
        "problem": "vector_add", "language": "cpp", "source": LOOP}).json()["id"]
    rows = board(api, bearer(api, "alice"))["rows"]
    assert [(r["name"], r["team"], r["total"], r["members"]) for r in rows] == [
        ("red", True, 120, ["alice", "bob"]), ("blue", True, 90, ["carol"]),
        ("blue", False, 50, ["blue"])]
    assert board(api, bearer(api, "bob"))["me"]["name"] == "red"
    assert board(api, bearer(api, "loner"))["me"] == {"name": "blue", "team": False, "rank": 3,
                                                      "total": 50}
    assert api.get(f"/api/submissions/{shared}", headers=bearer(api, "bob")).json()["source"]
    assert api.get(f"/api/submissions/{shared}", headers=bearer(api, "carol")).status_code == 404
    assert api.get(f"/api/submissions/{outside}", headers=bearer(api, "bob")).status_code == 404
    listed = {r["id"] for r in api.get("/api/submissions", headers=bearer(api, "bob")).json()}
    assert shared in listed and outside not in listed


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_the_user_commands_import_reset_and_unfreeze(config, tmp_path):
    env = {**os.environ, "KJUDGE_DATABASE_URL": config.database_url,
           "KJUDGE_DATA_DIR": str(tmp_path), "KJUDGE_PROBLEMS": str(tmp_path / "none")}

    def kjudge(*args):
        return subprocess.run([sys.executable, "-m", "judge.cli", *args], env=env, cwd=ROOT,
                              capture_output=True, text=True, timeout=120)

    (tmp_path / "users.csv").write_text(CSV)
    out = tmp_path / "passwords.csv"
    made = kjudge("user", "import", str(tmp_path / "users.csv"), "--out", str(out))
    assert made.returncode == 0 and "created 3 users" in made.stdout, made.stderr
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    assert out.read_text().splitlines()[2] == "erin,red,her own pass"
    again = kjudge("user", "import", str(tmp_path / "users.csv"))
    assert again.returncode == 2 and "dave (line 2)" in again.stderr
    (tmp_path / "bad.csv").write_text("name\nno way\n")
    bad = kjudge("user", "import", str(tmp_path / "bad.csv"))
    assert bad.returncode == 2 and "bad.csv: " in bad.stderr and "line 2" in bad.stderr
    reset = kjudge("user", "reset", "dave")
    assert reset.returncode == 0 and len(reset.stdout.strip()) == 14
    assert "1 API token(s) of dave revoked" in reset.stderr
    with db.session(config.database_url) as s:
        user = s.scalar(select(User).where(User.name == "dave"))
        assert accounts.password_matches(s, user, reset.stdout.strip())
    added = kjudge("user", "add", "hal", "--team", "green", "--password")
    assert added.returncode == 0 and "password: " in added.stdout
    assert kjudge("contest", "unfreeze", "nope").returncode == 2
    # each is in the organizers' audit log, made on the server's host (no organizer); the
    # refused unfreeze wrote nothing
    with db.session(config.database_url) as s:
        logged = [(e["actor"], e["action"], e["target"]) for e in map(
            audit.view, reversed(audit.entries(s)))]
    assert logged == [(audit.ON_THE_HOST, "user.import", "3 users"),
                      (audit.ON_THE_HOST, "user.password_reset", "dave"),
                      (audit.ON_THE_HOST, "user.create", "hal")]


@pytest.mark.parametrize("trusted,other_client", [("", 200), ("10.9.9.9", 429)])
def test_a_trusted_proxy_gives_each_forwarded_address_its_own_limit(tmp_path, trusted,
                                                                      other_client):
    """A real `kjudge serve`: a trusted proxy (this host, by default) names the client in
    X-Forwarded-For, and one client's failures refuse that client, not the others behind it;
    from a proxy not in KJUDGE_FORWARDED_ALLOW_IPS the header is not believed (a client could
    name a new address per guess): every attempt counts for the peer."""
    import httpx

    from tests.server.stack import Stack

    env = {"KJUDGE_LOGIN_ATTEMPTS": "2", "KJUDGE_FORWARDED_ALLOW_IPS": trusted}
    stack = Stack(tmp_path, None, "embedded", extra_env=env)
    stack.serve("--no-worker")
    try:
        made = stack.call("POST", "/api/users", stack.admin,
                          json={"name": "dora", "password": PASSWORD})
        assert made.status_code == 201, made.text

        def attempt(address, name="dora", password=PASSWORD):
            return httpx.post(stack.url + "/api/session", timeout=30,
                              json={"name": name, "password": password},
                              headers={"X-Forwarded-For": address}).status_code

        for i in range(8):  # 4 x 2: the per-address limit, one failure per name
            assert attempt("10.0.0.1", f"ghost{i}", "wrong guess") == 401
        assert attempt("10.0.0.1") == 429
        assert attempt("10.0.0.2") == other_client
    finally:
        stack.close()
