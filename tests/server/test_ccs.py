"""The ICPC CCS Contest API (2023-06) over a contest with results, questions and a pending
submission: each endpoint's objects carry what the specification requires, in its formats,
refer to one another consistently, and the event feed sends them in its order and then what
changes. (`bench/ccs_conformance.py` checks the same against the specification's own JSON
schemas, fetched apart: BENCHMARKS.md.)"""

from __future__ import annotations

import base64
import json
import re
import threading
import time
from datetime import timedelta

import pytest

from judge.service.models import utcnow
from tests.server.conftest import PASSWORD
from tests.server.test_api import auth, finish, post_submission

ABSTIME = re.compile(r"^[12][0-9]{3}-[01][0-9]-[0-3][0-9]T[0-2][0-9]:[0-6][0-9]:[0-6][0-9]"
                     r"(\.[0-9]{3})?([+-][0-1][0-9](:[0-5][0-9])?|Z)$")
RELTIME = re.compile(r"^-?([1-9][0-9]*)?[0-9]:[0-5][0-9]:[0-5][0-9](\.[0-9]{3})?$")
IDENTIFIER = re.compile(r"^[A-Za-z0-9_]([A-Za-z0-9_.-]{0,34}[A-Za-z0-9_-]|)$")
# the specification's required fields per endpoint (2023-06)
REQUIRED = {"contest": {"id", "name", "duration", "scoreboard_type"},
            "judgement-types": {"id", "name", "solved"},
            "languages": {"id", "name", "entry_point_required", "extensions"},
            "problems": {"id", "label", "name", "ordinal", "test_data_count"},
            "teams": {"id", "name", "label"},
            "submissions": {"id", "language_id", "problem_id", "team_id", "time",
                            "contest_time", "files"},
            "judgements": {"id", "submission_id", "start_time", "start_contest_time"},
            "clarifications": {"id", "text", "time", "contest_time"}}
TIMES = {"time", "start_time", "end_time", "scoreboard_thaw_time"}
RELTIMES = {"contest_time", "start_contest_time", "end_contest_time", "duration",
            "scoreboard_freeze_duration"}


def check(kind: str, obj: dict) -> None:
    assert REQUIRED[kind] <= set(obj), (kind, obj)
    for key, value in obj.items():
        if value is None:
            continue
        if key in TIMES:
            assert ABSTIME.match(value), (kind, key, value)
        if key in RELTIMES:
            assert RELTIME.match(value), (kind, key, value)
        if key == "id" or key.endswith("_id"):
            assert IDENTIFIER.match(value), (kind, key, value)


@pytest.fixture
def contest(api):
    admin = auth(api, "admin")
    now = utcnow()
    made = api.post("/api/contests", json={
        "slug": "wf", "title": "World Final", "problems": ["vector_add", "softmax"],
        "starts_at": (now - timedelta(hours=1)).isoformat(),
        "freeze_at": (now + timedelta(hours=1)).isoformat(),
        "ends_at": (now + timedelta(hours=2)).isoformat()}, headers=admin)
    assert made.status_code == 201, made.text
    ids = {}
    for name, who, score, verdict in (("a1", "alice", 100.0, "AC"), ("a2", "alice", 0.0, "WA"),
                                      ("b1", "bob", 150.0, "AC")):
        sent = post_submission(api, who=who, contest="wf").json()
        finish(api, sent["judging_id"], verdict=verdict, score=score)
        ids[name] = sent["id"]
    ids["pending"] = post_submission(api, who="bob", contest="wf").json()["id"]
    post_submission(api, who="bob", contest="wf", mode="test")  # not a CCS submission
    question = api.post("/api/clarifications", json={
        "text": "Is n odd?", "problem": "vector_add", "contest": "wf"},
        headers=auth(api, "alice")).json()
    api.post(f"/api/clarifications/{question['id']}/answer", json={"text": "Sometimes."},
             headers=admin)
    api.post("/api/announcements", json={"text": "Welcome.", "contest": "wf"}, headers=admin)
    ids["question"] = question["id"]
    return ids


def test_each_endpoint_holds_what_the_specification_requires(api, contest):
    admin = auth(api, "admin")
    assert api.get("/api/ccs/contests/wf", headers=auth(api, "alice")).status_code == 403
    info = api.get("/api/ccs", headers=admin).json()
    assert info["version"] == "2023-06" and info["provider"]["name"] == "kernel-judge"
    base = "/api/ccs/contests/wf"
    check("contest", api.get(base, headers=admin).json())
    assert api.get(base, headers=admin).json()["duration"] == "3:00:00.000"
    found = {kind: api.get(f"{base}/{kind}", headers=admin).json() for kind in REQUIRED
             if kind != "contest"}
    for kind, objects in found.items():
        for obj in objects:
            check(kind, obj)
    assert [(p["id"], p["label"], p["ordinal"]) for p in found["problems"]] == [
        ("vector_add", "A", 0), ("softmax", "B", 1)]
    assert {t["id"] for t in found["teams"]} == {"alice", "bob"}
    submissions = {s["id"]: s for s in found["submissions"]}
    assert set(submissions) == {str(contest[k]) for k in ("a1", "a2", "b1", "pending")}
    problems, teams = {p["id"] for p in found["problems"]}, {t["id"] for t in found["teams"]}
    languages = {x["id"] for x in found["languages"]}
    types = {x["id"] for x in found["judgement-types"]}
    for s in submissions.values():
        assert s["problem_id"] in problems and s["team_id"] in teams
        assert s["language_id"] in languages
    judgements = found["judgements"]
    assert {j["submission_id"] for j in judgements} == {str(contest[k]) for k in
                                                       ("a1", "a2", "b1")}
    assert {j["judgement_type_id"] for j in judgements} <= types
    assert {(j["submission_id"], j["judgement_type_id"]) for j in judgements} >= {
        (str(contest["a2"]), "WA")}
    clars = {c["id"]: c for c in found["clarifications"]}
    question = str(contest["question"])
    assert clars[question]["from_team_id"] == "alice"
    assert clars[f"{question}-answer"]["reply_to_id"] == question
    assert clars[f"{question}-answer"]["to_team_id"] == "alice"  # a private answer
    assert api.get(f"{base}/submissions/{contest['b1']}", headers=admin).json()[
        "team_id"] == "bob"
    assert api.get(f"{base}/runs", headers=admin).status_code == 404
    zipped = api.get(f"{base}/submissions/{contest['b1']}/files", headers=admin)
    assert zipped.status_code == 200 and zipped.content[:2] == b"PK"
    state = api.get(f"{base}/state", headers=admin).json()
    assert state["started"] and state["frozen"] is None and state["ended"] is None
    board = api.get(f"{base}/scoreboard", headers=admin).json()
    assert [(r["rank"], r["team_id"], r["score"]["score"]) for r in board["rows"]] == [
        (1, "bob", 150.0), (2, "alice", 100.0)]
    assert all(RELTIME.match(r["score"]["time"]) for r in board["rows"])
    bob = board["rows"][0]["problems"][0]
    assert (bob["problem_id"], bob["num_judged"], bob["num_pending"], bob["score"]) == (
        "vector_add", 1, 1, 150.0)
    assert RELTIME.match(bob["time"]) and not bob["time"].startswith("-")


def test_the_event_feed_sends_objects_in_order_then_what_changes(api, contest):
    admin = auth(api, "admin")
    lines = api.get("/api/ccs/contests/wf/event-feed", headers=admin).text.splitlines()
    events = [json.loads(line) for line in lines]
    kinds = [e["type"] for e in events]
    assert kinds[0] == "contest" and events[0]["id"] is None
    first = {kind: kinds.index(kind) for kind in dict.fromkeys(kinds)}
    assert first["judgement-types"] < first["languages"] < first["problems"] < first[
        "teams"] < first["state"] < first["submissions"] < first["judgements"]
    for event in events:
        assert set(event) == {"type", "id", "data"}
        if event["type"] in REQUIRED and event["type"] != "contest":
            check(event["type"], event["data"])
            assert event["id"] == event["data"]["id"]
    # a judgement comes after its submission
    at = {(e["type"], e["id"]): i for i, e in enumerate(events)}
    for e in events:
        if e["type"] == "judgements":
            assert at["submissions", e["data"]["submission_id"]] < at["judgements", e["id"]]
    assert api.get("/api/contests/wf/event-feed", headers=admin).text.splitlines() == lines
    # streaming: the pending submission's judging ends while the feed is open
    pending = api.get(f"/api/submissions/{contest['pending']}/judgings",
                      headers=admin).json()[-1]

    def finish_soon():
        time.sleep(1.5)
        finish(api, pending["judging_id"], score=120.0)
    threading.Thread(target=finish_soon).start()
    streamed = api.get("/api/ccs/contests/wf/event-feed?stream=true&timeout_s=4",
                       headers=admin).text.splitlines()
    new = [json.loads(line) for line in streamed[len(lines):]]
    assert ("judgements", str(pending["judging_id"])) in {(e["type"], e["id"]) for e in new}


def test_a_streaming_feed_ends_when_its_token_is_revoked(api, contest):
    """Issue 44: a revoked token's stream kept delivering (checked once, then polled up to a
    day). The stream checks its credential again as it polls and ends without it."""
    made = api.post("/api/me/tokens", json={"name": "feed"}, headers=auth(api, "admin")).json()
    feed = {"Authorization": f"Bearer {made['token']}"}

    def revoke_soon():
        time.sleep(1.5)
        api.delete(f"/api/me/tokens/{made['id']}", headers=auth(api, "admin"))
    threading.Thread(target=revoke_soon).start()
    started = time.monotonic()
    streamed = api.get("/api/ccs/contests/wf/event-feed?stream=true&timeout_s=30", headers=feed)
    assert streamed.status_code == 200 and streamed.text
    assert time.monotonic() - started < 15


def test_the_ccs_tools_sign_in_with_http_basic(api):
    def basic(name, secret):
        return {"Authorization": "Basic " + base64.b64encode(f"{name}:{secret}".encode())
                .decode()}
    assert api.get("/api/ccs", headers=basic("root", api.tokens["admin"])).status_code == 200
    assert api.get("/api/ccs", headers=basic("alice", PASSWORD)).status_code == 403
    assert api.get("/api/ccs", headers=basic("alice", "wrong password")).status_code == 401
    assert api.get("/api/ccs", headers=basic("bob", api.tokens["admin"])).status_code == 401
    assert api.get("/api/ccs", headers={"Authorization": "Basic %%%"}).status_code == 401
