"""`GET /metrics` for operators: Prometheus' text format, read after real judgings by a real
Celery worker (the figures must move), and with its token when one is set."""

from __future__ import annotations

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import PROBLEMS
from tests.server.stack import Stack, wait_for

pytestmark = pytest.mark.slow
AC = PROBLEMS / "vector_add/solutions/AC/loop.cpp"
WA = PROBLEMS / "vector_add/solutions/WA/off_by_one.cpp"
TOKEN = "scrape-me"


def scrape(stack: Stack) -> dict[tuple[str, tuple], float]:
    response = httpx.get(stack.url + "/metrics", headers={"Authorization": f"Bearer {TOKEN}"},
                         timeout=30)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(response.text)
            for sample in family.samples}


def value(samples, name: str, **labels) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def test_metrics_move_with_real_judgings(tmp_path):
    stack = Stack(tmp_path, None, "redis", extra_env={"KJUDGE_METRICS_TOKEN": TOKEN})
    try:
        stack.serve("--no-worker")
        refused = httpx.get(stack.url + "/metrics", timeout=30)
        assert refused.status_code == 401 and "metrics token" in refused.json()["error"]
        before = scrape(stack)
        assert value(before, "kjudge_judgings_total", verdict="AC") == 0
        alice = stack.token_for("alice")
        good, bad = stack.submit(alice, AC.read_text()), stack.submit(alice, WA.read_text())
        queue = next(q for (name, labels), v in scrape(stack).items()
                     if name == "kjudge_queue_depth" and v == 2
                     for key, q in labels if key == "queue")
        stack.worker()
        assert stack.verdict(alice, good)["verdict"] == "AC"
        assert stack.verdict(alice, bad)["verdict"] == "WA"
        after = wait_for(lambda: (s := scrape(stack)) and value(
            s, "kjudge_judging_phase_seconds_count", phase="store") == 2 and s, 30,
            "the store phase of both judgings")
    finally:
        stack.close()
        print(stack.logs())
    assert value(after, "kjudge_judgings_total", verdict="AC") == 1
    assert value(after, "kjudge_judgings_total", verdict="WA") == 1
    assert value(after, "kjudge_queue_depth", queue=queue, state="queued") == 0
    assert value(after, "kjudge_judging_seconds_count") == 2
    assert value(after, "kjudge_judging_seconds_bucket", le="+Inf") == 2
    assert value(after, "kjudge_judging_seconds_sum") > 0
    for phase in ("queue_wait", "sandbox_start", "correctness"):
        assert value(after, "kjudge_judging_phase_seconds_count", phase=phase) == 2, phase
    beats = [v for (name, _), v in after.items()
             if name == "kjudge_worker_last_heartbeat_timestamp_seconds"]
    assert len(beats) == 1 and beats[0] > 0
    posted = value(after, "kjudge_api_request_seconds_count", method="POST",
                   route="/api/submissions", status="202")
    assert posted == 2


def test_histograms_count_in_both_databases_and_the_dashboard_reads_only_what_is_there(config):
    """The store's bucket counters on SQLite and PostgreSQL (rows made on first use, moved in
    the judging's own transaction), read back as histograms; every series the Grafana dashboard
    asks for is one the endpoint exposes."""
    import json
    import re

    from fastapi.testclient import TestClient

    from judge.judging.record import JudgeResult
    from judge.service import accounts, catalog, claims, db, submissions
    from judge.service.api import create_app
    from judge.verdicts import Verdict
    from tests.conftest import ROOT

    with db.session(config.database_url) as s:
        catalog.sync_problems(s, config)
        user, _ = accounts.create_user(s, "carol")
        _, work = submissions.submit(s, config, user, "vector_add", "cpp", AC.read_text())
        judging = work.judging_id
    with db.session(config.database_url) as s:
        token = claims.claim(s, judging, "metrics-test-worker")
        result = JudgeResult("vector_add", verdict=Verdict.AC, wall_s=3.0,
                             phases={"sandbox_start": 0.3, "correctness": 2.0})
        assert claims.finish(s, judging, token, result)
    client = TestClient(create_app(config, janitor=False))
    families = list(text_string_to_metric_families(client.get("/metrics").text))
    samples = {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
               for family in families for sample in family.samples}
    assert value(samples, "kjudge_judging_seconds_bucket", le="2.5") == 0
    assert value(samples, "kjudge_judging_seconds_bucket", le="5") == 1
    assert value(samples, "kjudge_judging_seconds_sum") == pytest.approx(3.0)
    assert value(samples, "kjudge_judging_phase_seconds_bucket", phase="sandbox_start",
                 le="0.5") == 1
    assert value(samples, "kjudge_judgings_total", verdict="AC") == 1
    suffixes = {"histogram": ("_bucket", "_sum", "_count"), "counter": ("_total",)}
    exposed = {family.name + suffix for family in families
               for suffix in ("", *suffixes.get(family.type, ()))}
    dashboard = (ROOT / "deploy" / "monitoring" / "grafana-dashboard.json").read_text()
    asked = set(re.findall(r"kjudge_[a-z_]+", json.dumps(json.loads(dashboard))))
    assert asked and asked <= exposed, asked - exposed



def test_several_api_processes_answer_with_the_sum_of_their_requests(tmp_path):
    # a route that starting the stack never asks: its health checks, each with a 1 s timeout,
    # may be answered and counted after a client gave up on them (a loaded host counted 31)
    route = "/api/contests"

    def count() -> float:
        text = httpx.get(stack.url + "/metrics", timeout=30).text
        samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
                   for f in text_string_to_metric_families(text) for s in f.samples}
        return value(samples, "kjudge_api_request_seconds_count", method="GET",
                     route=route, status="200")

    stack = Stack(tmp_path, None, "embedded")
    try:
        stack.serve("--no-worker", "--api-processes", "2")
        before = count()
        for _ in range(30):  # a connection each: the kernel spreads them over the processes
            assert httpx.get(stack.url + route, timeout=30).status_code == 200
        counts = [count() for _ in range(8)]  # answered by either process
    finally:
        stack.close()
        print(stack.logs())
    assert before == 0 and counts == [30] * 8, (before, counts)
