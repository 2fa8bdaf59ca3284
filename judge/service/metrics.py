"""Prometheus metrics for operators: `GET /metrics` in the text format (prometheus-client).

What all the service's processes share lives in the database and is read at scrape time, so any
API process answers for the whole deployment: queue depth per queue and state, the oldest waiting
judging, judgings by verdict, judging wall time and its phases as histograms (bucket counters the
store moves in the same transaction that ends a judging: judge/service/claims.py), each worker's
last heartbeat and the GPU state (clocks, temperature, power) it recorded with its latest
judging. The API's own request latency is kept in each API process (with `kjudge serve
--api-processes N`, prometheus-client's multiprocess mode: every process's share is summed).
"""

from __future__ import annotations

import math
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

from prometheus_client import CollectorRegistry, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from judge.service import queueing
from judge.service.models import Counter, JudgingRow
from judge.verdicts import State

BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 900.0)
WALL = "judging"  # the histogram of whole judgings; phases are histograms of their own
PREFIX = "hist:"  # counter rows: hist:<histogram>:<le | count | sum_ms>
GPU_FIELDS = {"sm_clock_mhz": ("kjudge_gpu_sm_clock_mhz", "SM clock after timing"),
              "memory_clock_mhz": ("kjudge_gpu_memory_clock_mhz", "memory clock after timing"),
              "temperature_c": ("kjudge_gpu_temperature_celsius", "temperature after timing"),
              "power_w": ("kjudge_gpu_power_watts", "power draw after timing")}
MULTIPROCESS_ENV = "PROMETHEUS_MULTIPROC_DIR"  # prometheus-client's own variable

_REQUESTS = CollectorRegistry(auto_describe=True)
REQUEST_SECONDS = Histogram("kjudge_api_request_seconds", "API request latency",
                            ["method", "route", "status"], registry=_REQUESTS,
                            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0))


# -- what the store records when a judging ends --------------------------------------------
def _rows(histogram: str, seconds: float) -> tuple[list[str], int]:
    """The counter rows one observation moves by one, and its sum's increment in ms."""
    les = [f"{le:g}" for le in BUCKETS if seconds <= le] + ["+Inf"]
    return [f"{PREFIX}{histogram}:{le}" for le in les] + [f"{PREFIX}{histogram}:count"], \
        round(seconds * 1000)


def observe(s: Session, phases: dict[str, float], wall_s: float | None) -> None:
    """Count a judging's wall time and phases into the histograms (in the caller's transaction).
    Rows are made on first use and moved in name order (no two transactions lock in opposite
    orders)."""
    moves: dict[str, int] = {}
    observations = {f"phase.{k}": v for k, v in phases.items() if v is not None}
    if wall_s:
        observations[WALL] = wall_s
    for histogram, seconds in observations.items():
        names, ms = _rows(histogram, max(float(seconds), 0.0))
        for name in names:
            moves[name] = moves.get(name, 0) + 1
        moves[f"{PREFIX}{histogram}:sum_ms"] = moves.get(f"{PREFIX}{histogram}:sum_ms", 0) + ms
    if not moves:
        return
    _ensure(s, sorted(moves))
    for name in sorted(moves):
        s.execute(update(Counter).where(Counter.name == name)
                  .values(value=Counter.value + moves[name]))


def _ensure(s: Session, names: list[str]) -> None:
    dialect = s.get_bind().dialect.name
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        from sqlalchemy.dialects.sqlite import insert
    s.execute(insert(Counter).values([{"name": n, "value": 0} for n in names])
              .on_conflict_do_nothing(index_elements=["name"]))


# -- what a scrape reads -------------------------------------------------------------------
class DatabaseCollector:
    """The deployment's figures, read from the database at each scrape."""

    def __init__(self, session_factory):
        self.session_factory = session_factory

    def collect(self) -> Iterator:
        with self.session_factory() as s:
            yield from _queues(s)
            yield _verdicts(s)
            yield from _histograms(s)
            yield from _workers(s)


def _queues(s: Session) -> Iterator:
    depth = GaugeMetricFamily("kjudge_queue_depth", "judgings waiting or running, per queue",
                              labels=["queue", "state"])
    oldest = GaugeMetricFamily("kjudge_queue_oldest_waiting_seconds", "age of the oldest "
                               "waiting judging, per queue", labels=["queue"])
    now = time.time()
    for name, entry in queueing.queue_summary(s).items():
        depth.add_metric([name, "queued"], entry["queued"])
        depth.add_metric([name, "running"], entry["running"])
        waiting = entry["oldest_waiting"]
        oldest.add_metric([name], max(now - waiting.timestamp(), 0.0) if waiting else 0.0)
    yield depth
    yield oldest


def _verdicts(s: Session) -> CounterMetricFamily:
    family = CounterMetricFamily("kjudge_judgings", "judgings ended, by verdict",
                                 labels=["verdict"])
    rows = s.execute(select(JudgingRow.verdict, func.count(JudgingRow.id))
                     .where(JudgingRow.state == State.DONE.value)
                     .group_by(JudgingRow.verdict)).all()
    for verdict, count in rows:
        family.add_metric([verdict or "none"], count)
    return family


def _histograms(s: Session) -> Iterator:
    values = dict(s.execute(select(Counter.name, Counter.value)
                            .where(Counter.name.startswith(PREFIX))).all())
    wall = HistogramMetricFamily("kjudge_judging_seconds", "wall time of a judging")
    phases = HistogramMetricFamily("kjudge_judging_phase_seconds", "a judging's phases "
                                   "(queue_wait, sandbox_start, compile, reference, "
                                   "correctness, timing, store)", labels=["phase"])
    names = sorted({n[len(PREFIX):].rsplit(":", 1)[0] for n in values})
    for histogram in names:
        buckets = [(f"{le:g}", values.get(f"{PREFIX}{histogram}:{le:g}", 0)) for le in BUCKETS]
        buckets.append(("+Inf", values.get(f"{PREFIX}{histogram}:+Inf", 0)))
        total = values.get(f"{PREFIX}{histogram}:sum_ms", 0) / 1000
        if histogram == WALL:
            wall.add_metric([], buckets, total)
        else:
            phases.add_metric([histogram.removeprefix("phase.")], buckets, total)
    yield wall
    yield phases


def _workers(s: Session) -> Iterator:
    beats = GaugeMetricFamily("kjudge_worker_last_heartbeat_timestamp_seconds", "a worker's "
                              "last heartbeat (Unix time)", labels=["worker"])
    latest = s.execute(select(JudgingRow.worker, func.max(JudgingRow.heartbeat_at),
                              func.max(JudgingRow.id))
                       .where(JudgingRow.worker.is_not(None))
                       .group_by(JudgingRow.worker)).all()
    gpus = {field: GaugeMetricFamily(name, f"a worker's GPU: {doc}",
                                     labels=["worker", "device"])
            for field, (name, doc) in GPU_FIELDS.items()}
    for worker, beat, _ in latest:
        if beat is not None:
            beats.add_metric([worker], beat.timestamp())
    newest = s.execute(select(JudgingRow.worker, JudgingRow.record)
                       .where(JudgingRow.id.in_(
                           select(func.max(JudgingRow.id))
                           .where(JudgingRow.worker.is_not(None),
                                  JudgingRow.state == State.DONE.value)
                           .group_by(JudgingRow.worker)))).all()
    for worker, record in newest:
        applied = (record or {}).get("applied") or {}
        state = (applied.get("gpu_state") or {}).get("after") or {}
        for field, family in gpus.items():
            value = state.get(field)
            if isinstance(value, (int, float)) and math.isfinite(value):
                family.add_metric([worker, str(applied.get("device", ""))], value)
    yield beats
    yield from gpus.values()


def share_between_processes(folder: Path) -> None:
    """Before starting several API processes: their request figures go to files in `folder`
    (emptied now) and every scrape sums them (prometheus-client's multiprocess mode; the
    variable must be set before those processes import the library). An operator's own
    PROMETHEUS_MULTIPROC_DIR is kept."""
    if os.environ.get(MULTIPROCESS_ENV):
        return
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    os.environ[MULTIPROCESS_ENV] = str(folder)


def exposition(session_factory) -> bytes:
    """The text a scrape gets: the database's figures and the API's request latency."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(DatabaseCollector(session_factory))
    text = generate_latest(registry)
    if os.environ.get(MULTIPROCESS_ENV):
        from prometheus_client import multiprocess

        shared = CollectorRegistry()
        multiprocess.MultiProcessCollector(shared)
        return text + generate_latest(shared)
    return text + generate_latest(_REQUESTS)
