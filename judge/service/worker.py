"""The worker: the one Celery task (judge one judging by id) and this process's warm slots.

Trusted side. The task is idempotent: a finished judging is skipped, a judging held by a live
worker is skipped, and a judging whose worker died is requeued by the janitor
(judge/service/broker.py) and claimed afresh. `main` starts a worker (`kjudge worker`, and the
workers `kjudge serve` embeds); nothing is built when this module is imported.
"""

from __future__ import annotations

import logging
import os
import shutil
import socket
import sys
import tempfile
import threading
import time
from functools import cache
from pathlib import Path

from celery import Celery
from celery.exceptions import SoftTimeLimitExceeded
from celery.signals import (
    worker_init,
    worker_process_init,
    worker_process_shutdown,
    worker_shutting_down,
)
from sqlalchemy.exc import DBAPIError

from judge.host import processes
from judge.host.device import DeviceUnavailable, detect
from judge.host.sandbox import sandbox_config, sandbox_for
from judge.judging import profiling
from judge.judging.admission import SubmissionRejected
from judge.judging.record import JudgeResult
from judge.judging.warm import SlotPool, startup_env
from judge.problem.schema import ProblemError, load_problem
from judge.service import claims, db, metrics, queueing, times
from judge.service.broker import TASK_NAME, celery_app, publish
from judge.service.models import JudgingRow, ProfileReport
from judge.settings import Settings, settings
from judge.verdicts import PROFILE, TEST, State
from sandbox import NoSandbox, choose

log = logging.getLogger("kjudge.worker")


def worker_app(config: Settings) -> Celery:
    """The Celery app of these settings with the judging task registered."""
    app = celery_app(config)
    if TASK_NAME not in app.tasks:
        app.task(name=TASK_NAME, bind=True)(judge_task)
    return app


def main(argv: list[str] | None = None) -> None:
    """Run a Celery worker with these arguments (queues, concurrency, name, ...)."""
    try:
        worker_app(settings()).worker_main(["worker", *(sys.argv[1:] if argv is None else argv)])
    finally:  # the pool has ended (Celery's cold stop sends no signal of its own at the end)
        _hand_back()


@worker_init.connect
def _remove_leftover_containers(**_kwargs) -> None:
    """A worker that died mid-judging may have left runs behind (containers): its backend
    removes them before this one starts."""
    config = settings()
    built_from = sandbox_config(config)
    try:
        backend = choose(config.sandbox, built_from)
    except NoSandbox:
        return  # the worker's first judging says why
    removed = backend.remove_leftovers(built_from)
    if removed:
        log.warning("removed %d leftover %s sandbox run(s) of %s", removed, backend.name,
                    built_from.owner)


def worker_name(pid: int | None = None) -> str:
    """The name a pool process's claims carry (`JudgingRow.worker`)."""
    return f"{socket.gethostname()}:{pid or os.getpid()}:{settings().worker_device or 'cpu'}"


_pool_at_stop: set[int] = set()
_stopping = {"cold": False}


@worker_shutting_down.connect
def _note_pool(how: str = "", **_kwargs) -> None:
    """The pool processes this worker had when its stop began (in the main process: a cold
    stop may end them before it tells), and whether the stop went cold."""
    _stopping["cold"] |= how == "Cold"
    _pool_at_stop.update(processes.children(os.getpid()))


def _hand_back() -> None:
    """A warm stop lets the running judging finish; a cold one (SIGQUIT, a second Ctrl-C, the
    grace of `kjudge serve` run out) ends the pool mid-judging: hand those judgings back now,
    instead of after the janitor's KJUDGE_STALE_AFTER_S."""
    gone = [pid for pid in _pool_at_stop if processes.ended(pid)]
    if not gone or not _stopping["cold"]:  # a warm stop's pool finished what it held
        return
    config = settings()
    try:
        with db.session(config.database_url) as s:
            work = queueing.hand_back(s, [worker_name(pid) for pid in gone])
        if work:
            log.warning("handing back judging(s) %s", [w.judging_id for w in work])
            publish(config, work)
    except Exception as exc:  # the janitor requeues them once their heartbeats are missed
        log.warning("could not hand back the judgings of a cold stop: %s", exc)


def judge_task(task, judging_id: int) -> str:
    config = settings()
    token, outcome = _claim(config, judging_id)
    if token is None:
        return outcome
    result, report = _judge(config, judging_id, token)
    return _store(config, judging_id, token, result, report)


def _claim(config: Settings, judging_id: int) -> tuple[str | None, str]:
    """The claim on a judging that waits for a worker (its token), else why there is none."""
    with db.session(config.database_url) as s:
        judging = s.get(JudgingRow, judging_id)
        if judging is None:
            return None, "unknown"
        if judging.state == State.DONE.value:
            return None, "already done"
        if judging.rejudge_id is not None and queueing.live_work_waiting(s, judging.queue):
            # live submissions go first: put the rejudge back behind them
            celery_app(config).send_task(TASK_NAME, args=[judging_id], queue=judging.queue)
            return None, "deferred"
        token = claims.claim(s, judging_id, worker_name())
    return token, "held elsewhere"


def _judge(config: Settings, judging_id: int, token: str) -> tuple[JudgeResult, bytes | None]:
    """The judging's record, its heart beating meanwhile; a judge's failure is an SE."""
    stop = threading.Event()
    beat = threading.Thread(target=_heartbeat, args=(config, judging_id, token, stop), daemon=True)
    beat.start()
    try:
        return run_judging(config, judging_id, token)
    except SoftTimeLimitExceeded:
        return _system_error(config, judging_id, "the judging ran past the worker's time limit",
                             "worker time limit"), None
    except Exception as exc:  # a judge bug must not leave the judging hanging
        log.exception("judging %s failed", judging_id)
        return _system_error(config, judging_id, repr(exc),
                             "judge error; see the worker log"), None
    finally:
        stop.set()


def _store(config: Settings, judging_id: int, token: str, result: JudgeResult,
           report: bytes | None) -> str:
    """Finish the judging with its record (and a profile's report) while the claim holds."""
    try:
        started = time.monotonic()
        if not _finish(config, judging_id, token, result):
            return "claim lost"
        if report is not None:
            _store_report(config, judging_id, report)
        _record_store(config, judging_id, time.monotonic() - started)
        return "finished"
    except DBAPIError as exc:
        if not db.unreachable(exc):
            raise
        # the record is sound, the database is gone: the janitor gives the judging to a worker
        # again once its heartbeats are missed (an SE here would be the judge's fault)
        log.error("judging %s: the database stayed unreachable, its result is dropped: %s",
                  judging_id, exc)
        return "database unreachable"
    except Exception as exc:  # the record could not be stored: end the judging as SE
        log.exception("storing judging %s failed", judging_id)
        failed = _system_error(config, judging_id,
                               f"the result could not be stored: {exc!r}"[:2000],
                               "result not stored; rejudge after fixing the judge")
        with db.session(config.database_url) as s:
            claims.finish(s, judging_id, token, failed)
        return "stored as SE"


def _finish(config: Settings, judging_id: int, token: str, result: JudgeResult) -> bool:
    """claims.finish, riding out a database that restarts or drops off the network for up to
    KJUDGE_STALE_AFTER_S (by then the janitor may have given the judging away, and the new
    claim would refuse this result anyway); False when the claim was lost."""
    deadline = time.monotonic() + config.stale_after_s
    while True:
        try:
            with db.session(config.database_url) as s:
                return claims.finish(s, judging_id, token, result)
        except DBAPIError as exc:
            if not db.unreachable(exc) or time.monotonic() >= deadline:
                raise
            log.warning("storing judging %s: database unreachable, retrying: %s", judging_id,
                        str(exc).splitlines()[0])
            time.sleep(1)


def _system_error(config: Settings, judging_id: int, message: str, flag: str) -> JudgeResult:
    with db.session(config.database_url) as s:
        return queueing.system_error(s.get(JudgingRow, judging_id).submission, message, flag)


def _record_store(config: Settings, judging_id: int, seconds: float) -> None:
    """The last phase, known only once the record is stored: added to it afterwards."""
    try:
        with db.session(config.database_url) as s:
            judging = s.get(JudgingRow, judging_id)
            record = dict(judging.record or {})
            if record.get("phases"):
                record["phases"] = {**record["phases"], "store": round(seconds, 3)}
                judging.record = record
                metrics.observe(s, {"store": seconds}, None)
    except Exception as exc:  # the verdict is stored; only this figure is missing
        log.warning("could not record the store time of judging %s: %s", judging_id, exc)


def _heartbeat(config: Settings, judging_id: int, token: str, stop: threading.Event) -> None:
    interval = max(config.stale_after_s / 4, 0.5)  # several beats before a claim looks stale
    while not stop.wait(interval):
        try:
            with db.session(config.database_url) as s:
                if not claims.holds(s, judging_id, token):
                    return
        except Exception as exc:
            log.warning("heartbeat of judging %s failed: %s", judging_id, exc)


def _store_report(config: Settings, judging_id: int, report: bytes) -> None:
    """A profile judging's report file, kept beside its record (a second judging of the same
    row, after a lost worker, replaces the first's)."""
    with db.session(config.database_url) as s:
        s.merge(ProfileReport(judging_id=judging_id, filename=profiling.REPORT, data=report))


def run_judging(config: Settings, judging_id: int,
                token: str) -> tuple[JudgeResult, bytes | None]:
    """Judge with the same pipeline as `kjudge judge`; the record to store, and a profile
    judging's report file."""
    from judge.judging.pipeline import JudgeOptions, NotRunnable, judge_source

    with db.session(config.database_url) as s:
        judging = s.get(JudgingRow, judging_id)
        submission = judging.submission
        source, language, mode = submission.source, submission.language, submission.mode
        problem_path = submission.problem.path
        waited = times.seconds_between(judging.queued_at, judging.started_at)
        requested = {"language": language, "queue": judging.queue, "mode": mode}

    def on_state(state: State) -> None:
        with db.session(config.database_url) as s:
            claims.holds(s, judging_id, token, state=state.value)

    out = Path(tempfile.mkdtemp(prefix="kjudge-profile-"))
    try:
        problem = load_problem(problem_path)
        device, pool = worker_pool()
        options = JudgeOptions(on_state=on_state, pool=pool)
        samples = [t.name for t in problem.tests_for(device.kind) if t.sample]
        if mode == TEST:  # its sample points, correctness only
            options.tests, options.timing = samples, False
        elif mode == PROFILE:  # the last sample point, its call under Nsight Compute
            options.tests, options.timing = samples[-1:], False
            options.profile = profiling.Profiling(
                ncu=_ncu(config), out_dir=out, timeout_s=config.profile_timeout_s,
                max_report_bytes=config.profile_report_mb * 2**20)
        result = judge_source(problem, source, language=language, device=device,
                              sandbox=pool.sandbox, options=options)
        found = out / profiling.REPORT
        report = found.read_bytes() if found.is_file() else None
    except (ProblemError, DeviceUnavailable, NotRunnable, SubmissionRejected,
            NotProfilable) as exc:
        return _system_error(config, judging_id, f"not runnable on this worker: {exc}",
                             "route this judging to a worker that can run it"), None
    finally:
        shutil.rmtree(out, ignore_errors=True)
    result.requested = requested
    # where the time went: the queue wait, then the judging's own phases
    result.phases = {name: round(seconds, 3) for name, seconds in
                     {"queue_wait": waited, **result.phases}.items() if seconds is not None}
    return result, report


def _ncu(config: Settings) -> str:
    """Nsight Compute's command, as a path the sandbox sees (it must be under a folder the
    sandbox binds: CUDA_HOME, /usr or KJUDGE_SANDBOX_PATHS)."""
    found = shutil.which(config.ncu)
    if found is None:
        raise NotProfilable(f"profile submissions need Nsight Compute: {config.ncu!r} is not "
                            "on this worker (set KJUDGE_NCU)")
    return found


class NotProfilable(Exception):
    pass


@cache
def worker_pool():
    """This worker process's device and its pool of warm slots (the next judging's harnesses,
    started ahead: judge/judging/warm.py), made at the first judging or when the worker starts."""
    import atexit


    device = detect(settings().worker_device or None)
    sandbox = sandbox_for(device)
    pool = SlotPool(sandbox)
    atexit.register(pool.close)
    pool.prepare(startup_env(sandbox, device))
    return device, pool


@worker_process_shutdown.connect
def _close_pool(**_kwargs) -> None:
    """A pool process that stops removes its warm slot (harnesses, job folder, cgroups): the
    atexit hook does not run in a prefork child, and each stop left two cgroups behind."""
    if worker_pool.cache_info().currsize:
        worker_pool()[1].close()


@worker_process_init.connect
def _warm_up(**_kwargs) -> None:
    """Each pool process starts its first judging's harnesses as soon as it is up."""
    try:
        worker_pool()
    except Exception as exc:  # the first judging reports it (e.g. no sandbox on this host)
        log.warning("no warm slot at start: %s", exc)


