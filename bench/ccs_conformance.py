"""The CCS Contest API checked against the specification's own JSON schemas: a contest with
results, a wrong answer, a pending submission, a question with its answer and an announcement
is served in-process, and every object of every endpoint, and every line of the event feed, is
validated against icpc/ccs-specs' json-schema/ (Draft 2020-12, by `jsonschema`).

    git clone https://github.com/icpc/ccs-specs /tmp/ccs-specs
    pip install 'jsonschema>=4.18'   # or: pip install -e '.[bench]'
    python bench/ccs_conformance.py --specs /tmp/ccs-specs [--write]

The schemas stay outside the repository. They describe the specification's draft, whose
api_information holds `version: "draft"`: this API says "2023-06" (the version the ICPC tools
read), and that one field is reported apart, not counted as a failure.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import uuid
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.benchmarks_md import report_section  # noqa: E402
from judge.judging.record import JudgeResult  # noqa: E402
from judge.service import accounts, catalog, claims, db  # noqa: E402
from judge.service.models import utcnow  # noqa: E402
from judge.settings import Settings  # noqa: E402
from judge.verdicts import Verdict  # noqa: E402

ENDPOINTS = {"contest": "", "state": "/state", "judgement-types": "/judgement-types",
             "languages": "/languages", "problems": "/problems", "groups": "/groups",
             "organizations": "/organizations", "teams": "/teams",
             "submissions": "/submissions", "judgements": "/judgements",
             "clarifications": "/clarifications", "scoreboard": "/scoreboard"}
SCHEMA_OF = {"contest": "contest.json", "state": "state.json", "scoreboard": "scoreboard.json",
             "judgement-types": "judgement-types.json", "languages": "languages.json",
             "problems": "problems.json", "groups": "groups.json",
             "organizations": "organizations.json", "teams": "teams.json",
             "submissions": "submissions.json", "judgements": "judgements.json",
             "clarifications": "clarifications.json"}


def validator_for(specs: Path):
    from jsonschema import Draft202012Validator
    from referencing import Registry, Resource

    folder = specs / "json-schema"
    resources = []
    for path in sorted(folder.glob("*.json")):
        schema = json.loads(path.read_text())
        resource = Resource.from_contents(schema)
        resources += [(path.name, resource), (schema.get("$id", path.name), resource)]
    registry = Registry().with_resources(resources)

    def errors(name: str, instance) -> list[str]:
        schema = json.loads((folder / name).read_text())
        found = Draft202012Validator(schema, registry=registry).iter_errors(instance)
        return [f"{'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message[:160]}"
                for e in found]
    return errors


def serve(tmp: Path):
    """The app over a fresh database with a contest worth checking; an organizer's headers."""
    from fastapi.testclient import TestClient

    from judge.service.api import create_app

    config = Settings(data_dir=tmp, database_url=f"sqlite:///{tmp}/ccs.db",
                      broker_url=f"sqla+sqlite:///{tmp}/broker.db",
                      problems_dir=ROOT / "problems", queue_prefix=f"c{uuid.uuid4().hex[:6]}")
    db.upgrade(config.database_url)
    with db.session(config.database_url) as s:
        catalog.sync_problems(s, config)
        _, admin = accounts.create_user(s, "root", admin=True)
        tokens = {name: accounts.create_user(s, name, team=team)[1]
                  for name, team in (("alice", None), ("bob", None))}
    client = TestClient(create_app(config, janitor=False))
    organizer = {"Authorization": f"Bearer {admin}"}
    now = utcnow()
    client.post("/api/contests", headers=organizer, json={
        "slug": "wf", "title": "World Final", "problems": ["vector_add", "softmax"],
        "starts_at": (now - timedelta(hours=1)).isoformat(),
        "freeze_at": (now + timedelta(hours=1)).isoformat(),
        "ends_at": (now + timedelta(hours=2)).isoformat()}).raise_for_status()

    def send(who: str, problem: str = "vector_add") -> int:
        made = client.post("/api/submissions", headers={"Authorization": f"Bearer {tokens[who]}"},
                           json={"problem": problem, "language": "cpp", "contest": "wf",
                                 "source": 'extern "C" void run_kernel() {}'})
        made.raise_for_status()
        return made.json()["judging_id"]

    for who, problem, verdict, score in (("alice", "vector_add", Verdict.AC, 100.0),
                                         ("alice", "softmax", Verdict.WA, 0.0),
                                         ("bob", "vector_add", Verdict.AC, 150.0)):
        judging = send(who, problem)
        with db.session(config.database_url) as s:
            token = claims.claim(s, judging, "bench")
            claims.finish(s, judging, token, JudgeResult(problem, verdict=verdict, score=score))
    send("bob")  # pending
    question = client.post("/api/clarifications", json={"text": "Is n odd?", "contest": "wf",
                                                        "problem": "vector_add"},
                           headers={"Authorization": f"Bearer {tokens['alice']}"}).json()
    client.post(f"/api/clarifications/{question['id']}/answer", headers=organizer,
                json={"text": "Sometimes.", "public": True})
    client.post("/api/announcements", headers=organizer, json={"text": "Welcome.",
                                                               "contest": "wf"})
    return client, organizer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--specs", type=Path, required=True, help="a ccs-specs checkout")
    parser.add_argument("--write", action="store_true", help="update BENCHMARKS.md")
    args = parser.parse_args()
    errors = validator_for(args.specs)
    with tempfile.TemporaryDirectory() as tmp:
        client, organizer = serve(Path(tmp))
        base = "/api/ccs/contests/wf"
        rows, failures = [], []
        info = client.get("/api/ccs", headers=organizer).json()
        info_errors = [e for e in errors("api_information.json", info)
                       if not e.startswith("version:")]
        failures += [f"api_information: {e}" for e in info_errors]
        rows.append(("api information", 1, len(info_errors)))
        for name, path in ENDPOINTS.items():
            body = client.get(base + path, headers=organizer).json()
            found = errors(SCHEMA_OF[name], body)
            failures += [f"{name}: {e}" for e in found]
            count = len(body) if isinstance(body, list) else 1
            rows.append((name, count, len(found)))
        lines = client.get(base + "/event-feed", headers=organizer).text.splitlines()
        feed_errors = 0
        for number, line in enumerate(lines, 1):
            found = errors("event-feed.json", json.loads(line))
            feed_errors += bool(found)
            failures += [f"event-feed line {number}: {e}" for e in found]
        rows.append(("event-feed lines", len(lines), feed_errors))
    import subprocess

    commit = subprocess.run(["git", "-C", str(args.specs), "rev-parse", "--short=12", "HEAD"],
                            capture_output=True, text=True).stdout.strip() or "(not a git checkout)"
    table = ["| endpoint | objects | failing |", "|---|---:|---:|"]
    table += [f"| {name} | {count} | {bad} |" for name, count, bad in rows]
    block = "\n".join([
        f"`python bench/ccs_conformance.py --specs ccs-specs --write` (icpc/ccs-specs {commit},"
        " json-schema/, Draft 2020-12 with `jsonschema`): every object of every endpoint of a"
        " contest with results, a wrong answer, a pending submission, a question answered to"
        " everyone and an announcement, and every line of its event feed.", "", *table, "",
        ("All valid." if not failures else "Failures:\n\n" + "\n".join(
            f"- {f}" for f in failures[:40])),
        "", "api_information's `version` says \"2023-06\" (the schemas' draft says \"draft\"):"
        " not counted."])
    report_section("ccs_conformance", "The CCS Contest API against the specification's schemas "
                   "(issue 30)", block, args.write)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
