"""The Celery app, the one task (judge one judging by id), publishing and the janitor.

Settings fit long, exclusive GPU tasks: late acks, prefetch 1, one task at a time per worker,
soft and hard time limits, a visibility timeout above the hard limit, requeue on worker loss.
The task is idempotent: a finished judging is skipped, a judging held by a live worker is
skipped, and a judging whose worker died is requeued by the janitor and claimed afresh.
"""

from __future__ import annotations

import logging
import math
import os
import queue
import socket
import threading
import time
from functools import cache

from celery import Celery
from celery.exceptions import SoftTimeLimitExceeded
from celery.signals import worker_init, worker_process_init
from sqlalchemy import select

from judge.server import db, service
from judge.server.config import Settings, settings
from judge.server.models import Judging
from judge.verdicts import State

log = logging.getLogger("kjudge.tasks")
TASK_NAME = "kjudge.judge"
EMBEDDED_POLL_S = 0.1  # how often a worker on the embedded broker (SQLite) looks for work


@cache
def make_app(broker_url: str, hard_limit_s: int, soft_limit_s: int, default_queue: str) -> Celery:
    app = Celery("kjudge", broker=broker_url, set_as_current=True)
    # kombu's SQLAlchemy transport hands its options to create_engine: give it none, and its
    # polling interval (1 s by default: up to a second of every judging's queue wait) thus here
    transport = {} if broker_url.startswith("sqla+") else {"visibility_timeout": hard_limit_s + 600}
    if broker_url.startswith("sqla+"):
        from kombu.transport import sqlalchemy as sqla_transport

        sqla_transport.Transport.polling_interval = EMBEDDED_POLL_S
    app.conf.update(
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        task_soft_time_limit=soft_limit_s,
        task_time_limit=hard_limit_s,
        broker_transport_options=transport,
        broker_connection_retry_on_startup=True,
        task_ignore_result=True,
        task_default_queue=default_queue,
        worker_hijack_root_logger=False,
        worker_send_task_events=False,
    )
    app.task(name=TASK_NAME, bind=True)(judge_task)
    return app


def app_for(config: Settings) -> Celery:
    return make_app(config.broker_url, config.hard_time_limit_s, config.soft_time_limit_s,
                    config.queue_for(config.default_device))


def publish(config: Settings, work: list[service.Enqueue]) -> list[int]:
    """Send judgings to their queues; returns the ids sent. A failure leaves the rest QUEUED
    with no `enqueued_at`, and the janitor sends them later: nothing accepted is lost."""
    app = app_for(config)
    sent = []
    with app.producer_or_acquire() as producer:  # one broker connection for the batch
        for item in work:
            try:
                app.send_task(TASK_NAME, args=[item.judging_id], queue=item.queue,
                              producer=producer, retry=True,
                              retry_policy={"max_retries": 2, "interval_start": 0.2})
                sent.append(item.judging_id)
            except Exception as exc:  # broker down: keep going, the janitor resends
                log.warning("could not publish judging %s to %s: %s", item.judging_id,
                            item.queue, exc)
                break
    if sent:
        with db.session(config.database_url) as s:
            service.mark_enqueued(s, sent)
    return sent


class Publisher:
    """Sends stored judgings to the broker from a thread of this API process, in batches: a
    submission's request ends once the submission is stored, without waiting for the broker
    (~1 ms) and the `enqueued_at` update (a second transaction). What this thread has not sent
    when the process dies stays QUEUED without `enqueued_at`, and the janitor sends it."""

    BATCH = 200

    def __init__(self, config: Settings):
        self.config = config
        self._work: queue.Queue[service.Enqueue | None] = queue.Queue()
        self._thread = threading.Thread(target=self._run, daemon=True, name="kjudge-publish")
        self._thread.start()

    def send(self, work: list[service.Enqueue]) -> None:
        for item in work:
            self._work.put(item)

    def _run(self) -> None:
        while (first := self._work.get()) is not None:
            batch = [first]
            while len(batch) < self.BATCH:
                try:
                    item = self._work.get_nowait()
                except queue.Empty:
                    break
                if item is None:
                    self._work.put(None)
                    break
                batch.append(item)
            try:
                publish(self.config, batch)
            except Exception as exc:  # the janitor sends what is left
                log.warning("publishing %d judging(s) failed: %s", len(batch), exc)

    def close(self, timeout: float = 5.0) -> None:
        """Send what is held (within `timeout`), then stop."""
        self._work.put(None)
        self._thread.join(timeout)


def broker_counts(config: Settings, queues: set[str]) -> dict[str, int]:
    """Messages waiting in each queue, as the broker reports them."""
    counts = {}
    with app_for(config).connection_for_write() as conn:
        channel = conn.default_channel
        for queue in queues:
            try:
                counts[queue] = channel.queue_declare(queue=queue, passive=True).message_count
            except Exception:  # the queue does not exist (yet, or any more)
                counts[queue] = 0
                channel = conn.channel()
    return counts


def sweep(config: Settings) -> dict:
    """The janitor: requeue judgings of dead workers and messages the broker lost."""
    with db.session(config.database_url) as s:
        requeue, failed = service.stale_claims(s, config)
        queues = set(s.scalars(select(Judging.queue).distinct()
                               .where(Judging.state == State.QUEUED.value)))
    try:
        counts = broker_counts(config, queues) if queues else {}
    except Exception as exc:
        log.warning("broker unreachable during sweep: %s", exc)
        return {"requeued": [], "failed": failed, "resent": []}
    with db.session(config.database_url) as s:
        missing = service.unpublished(s, config, counts)
    ids = {w.judging_id for w in requeue}
    work = requeue + [w for w in missing if w.judging_id not in ids]
    sent = publish(config, work)
    return {"requeued": [w.judging_id for w in requeue], "failed": failed, "resent": sent}


# -- the worker side --------------------------------------------------------------------------
@worker_init.connect
def _remove_leftover_containers(**_kwargs) -> None:
    """A worker that died mid-judging may have left containers: remove them before starting."""
    from sandbox.docker import DockerSandbox, remove_leftovers

    if os.environ.get("KJUDGE_SANDBOX", "auto") in ("auto", "docker") and \
            DockerSandbox.available():
        owner = os.environ.get("KJUDGE_SANDBOX_OWNER", "")
        if not owner:
            return
        removed = remove_leftovers(owner)
        if removed:
            log.warning("removed %d leftover sandbox container(s) of %s", removed, owner)


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{os.environ.get('KJUDGE_WORKER_DEVICE', 'cpu')}"


def judge_task(task, judging_id: int) -> str:
    config = settings()
    with db.session(config.database_url) as s:
        judging = s.get(Judging, judging_id)
        if judging is None:
            return "unknown"
        if judging.state == State.DONE.value:
            return "already done"
        if judging.rejudge_id is not None and service.live_work_waiting(s, judging.queue):
            # live submissions go first: put the rejudge back behind them
            app_for(config).send_task(TASK_NAME, args=[judging_id], queue=judging.queue)
            return "deferred"
        token = service.claim(s, judging_id, worker_name())
    if token is None:
        return "held elsewhere"
    stop = threading.Event()
    beat = threading.Thread(target=_heartbeat, args=(config, judging_id, token, stop), daemon=True)
    beat.start()
    try:
        values = run_judging(config, judging_id, token)
    except SoftTimeLimitExceeded:
        values = {"verdict": "SE", "message": "system error: the judging ran past the worker's "
                                              "time limit", "flags": ["worker time limit"]}
    except Exception as exc:  # a judge bug must not leave the judging hanging
        log.exception("judging %s failed", judging_id)
        values = {"verdict": "SE", "message": f"system error: {exc!r}",
                  "flags": ["judge error; see the worker log"]}
    finally:
        stop.set()
    try:
        started = time.monotonic()
        with db.session(config.database_url) as s:
            if not service.finish(s, judging_id, token, **values):
                return "claim lost"
        _record_store(config, judging_id, time.monotonic() - started)
        return "finished"
    except Exception as exc:  # the record could not be stored: end the judging as SE
        log.exception("storing judging %s failed", judging_id)
        with db.session(config.database_url) as s:
            service.finish(s, judging_id, token, verdict="SE",
                           message=f"system error: the result could not be stored: {exc!r}"[:2000],
                           flags=["result not stored; rejudge after fixing the judge"])
        return "stored as SE"


def _record_store(config: Settings, judging_id: int, seconds: float) -> None:
    """The last phase, known only once the record is stored: added to it afterwards."""
    try:
        with db.session(config.database_url) as s:
            judging = s.get(Judging, judging_id)
            applied = dict(judging.applied or {})
            if "phases" in applied:
                applied["phases"] = {**applied["phases"], "store": round(seconds, 3)}
                judging.applied = applied
    except Exception as exc:  # the verdict is stored; only this figure is missing
        log.warning("could not record the store time of judging %s: %s", judging_id, exc)


def _heartbeat(config: Settings, judging_id: int, token: str, stop: threading.Event) -> None:
    interval = max(config.stale_after_s / 4, 0.5)  # several beats before a claim looks stale
    while not stop.wait(interval):
        try:
            with db.session(config.database_url) as s:
                if not service.holds(s, judging_id, token):
                    return
        except Exception as exc:
            log.warning("heartbeat of judging %s failed: %s", judging_id, exc)


def run_judging(config: Settings, judging_id: int, token: str) -> dict:
    """Judge with the same pipeline as `kjudge judge`; returns the columns to store."""
    from judge import __version__
    from judge.device import DeviceUnavailable
    from judge.pipeline import JudgeOptions, NotRunnable, SubmissionRejected, judge_source
    from judge.problem import ProblemError, load_problem

    with db.session(config.database_url) as s:
        judging = s.get(Judging, judging_id)
        submission = judging.submission
        source, language = submission.source, submission.language
        problem_path = submission.problem.path
        waited = service.seconds_between(judging.queued_at, judging.started_at)

    def on_state(state: State) -> None:
        with db.session(config.database_url) as s:
            service.holds(s, judging_id, token, state=state.value)

    try:
        problem = load_problem(problem_path)
        device, pool = worker_pool()
        result = judge_source(problem, source, language=language, device=device,
                              sandbox=pool.sandbox,
                              options=JudgeOptions(on_state=on_state, pool=pool))
    except (ProblemError, DeviceUnavailable, NotRunnable, SubmissionRejected) as exc:
        return {"verdict": "SE", "message": f"not runnable on this worker: {exc}",
                "flags": ["route this judging to a worker that can run it"],
                "judge_version": __version__}
    data = result.to_dict()  # non-finite floats inside are strings now (standard JSON)
    return {
        "verdict": data["verdict"], "score": _number(result.score),
        "speedup": _number(result.speedup), "time_ms": _number(result.time_ms),
        "peak_memory_mb": _number(result.peak_memory_mb),
        "tests": data["tests"], "compile_log": data["compile_log"], "message": data["message"],
        "flags": data["flags"],
        # where the time went (queue wait, then the judging's own phases), for organizers
        "applied": {**data["applied"], "overhead_s": round(result.overhead_s, 3),
                    "phases": {name: round(seconds, 3) for name, seconds in
                               {"queue_wait": waited, **result.phases}.items()
                               if seconds is not None}},
        "problem_version": result.problem_version, "judge_version": __version__,
    }


@cache
def worker_pool():
    """This worker process's device and its pool of warm slots (the next judging's harnesses,
    started ahead: judge/warm.py), made at the first judging or when the worker starts."""
    import atexit

    from judge.device import detect, device_nodes
    from judge.warm import SlotPool, startup_env
    from sandbox import get_sandbox

    device = detect(os.environ.get("KJUDGE_WORKER_DEVICE") or None)
    sandbox = get_sandbox(os.environ.get("KJUDGE_SANDBOX", "auto"),
                          devices=device_nodes(device), gpu_uuid=device.uuid)
    pool = SlotPool(sandbox)
    atexit.register(pool.close)
    pool.prepare(startup_env(sandbox, device))
    return device, pool


@worker_process_init.connect
def _warm_up(**_kwargs) -> None:
    """Each pool process starts its first judging's harnesses as soon as it is up."""
    try:
        worker_pool()
    except Exception as exc:  # the first judging reports it (e.g. no sandbox on this host)
        log.warning("no warm slot at start: %s", exc)


def _number(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


app = app_for(settings())
