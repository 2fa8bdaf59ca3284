"""Publishing judgings to the broker, and the janitor that makes sure none is lost.

Trusted side, in the API processes. The Celery app here only sends: it knows the task by name
(`TASK_NAME`); the task itself is registered by the worker (judge/service/worker.py). Settings fit
long, exclusive GPU tasks: late acks, prefetch 1, soft and hard time limits, a visibility timeout
above the hard limit, requeue on worker loss.
"""

from __future__ import annotations

import logging
import queue
import threading
from functools import cache

from celery import Celery
from sqlalchemy import select

from judge.host.device import default_queue_device
from judge.service import db, queueing, system_tests
from judge.service.models import JudgingRow
from judge.settings import Settings
from judge.verdicts import State

log = logging.getLogger("kjudge.broker")
TASK_NAME = "kjudge.judge"
EMBEDDED_POLL_S = 0.1  # how often a worker on the embedded broker (SQLite) looks for work


def race_tolerant(get_or_create):
    """kombu's SQLAlchemy transport makes a queue's row on first use under a lock of its own
    process only: the API publishing and a worker starting to consume at the same moment both
    insert it, and the loser's IntegrityError ended the embedded worker's consumer (a judging
    then waited for the janitor, 180 s in a test). The loser reads the winner's row instead."""
    from sqlalchemy.exc import IntegrityError

    def tolerant(self, queue):
        try:
            return get_or_create(self, queue)
        except IntegrityError:
            self.session.rollback()
            return self.session.query(self.queue_cls).filter(self.queue_cls.name == queue).one()

    tolerant.race_tolerant = True
    return tolerant


@cache
def _make_app(broker_url: str, hard_limit_s: int, soft_limit_s: int, default_queue: str) -> Celery:
    app = Celery("kjudge", broker=broker_url, set_as_current=True)
    # kombu's SQLAlchemy transport hands its options to create_engine: give it none, and its
    # polling interval (1 s by default: up to a second of every judging's queue wait) thus here
    transport = {} if broker_url.startswith("sqla+") else {"visibility_timeout": hard_limit_s + 600}
    if broker_url.startswith("sqla+"):
        from kombu.transport import sqlalchemy as sqla_transport

        sqla_transport.Transport.polling_interval = EMBEDDED_POLL_S
        channel = sqla_transport.Channel
        if not getattr(channel._get_or_create, "race_tolerant", False):
            channel._get_or_create = race_tolerant(channel._get_or_create)
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
    return app


def celery_app(config: Settings) -> Celery:
    """The app for these settings (one per process and settings; built on first use, never at
    import)."""
    return _make_app(config.broker_url, config.hard_time_limit_s, config.soft_time_limit_s,
                    config.queue_for(default_queue_device(config)))


def publish(config: Settings, work: list[queueing.Enqueue]) -> list[int]:
    """Send judgings to their queues; returns the ids sent. A failure leaves the rest QUEUED
    with no `enqueued_at`, and the janitor sends them later: nothing accepted is lost."""
    app = celery_app(config)
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
            queueing.mark_enqueued(s, sent)
    return sent


class Publisher:
    """Sends stored judgings to the broker from a thread of this API process, in batches: a
    submission's request ends once the submission is stored, without waiting for the broker
    (~1 ms) and the `enqueued_at` update (a second transaction). What this thread has not sent
    when the process dies stays QUEUED without `enqueued_at`, and the janitor sends it."""

    BATCH = 200

    def __init__(self, config: Settings):
        self.config = config
        self._work: queue.Queue[queueing.Enqueue | None] = queue.Queue()
        self._thread = threading.Thread(target=self._run, daemon=True, name="kjudge-publish")
        self._thread.start()

    def send(self, work: list[queueing.Enqueue]) -> None:
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
    with celery_app(config).connection_for_write() as conn:
        channel = conn.default_channel
        for queue in queues:
            try:
                counts[queue] = channel.queue_declare(queue=queue, passive=True).message_count
            except Exception:  # the queue does not exist (yet, or any more)
                counts[queue] = 0
                channel = conn.channel()
    return counts


def sweep(config: Settings) -> dict:
    """The janitor: requeue judgings of dead workers and messages the broker lost, and start
    the system tests of contests that ended."""
    with db.session(config.database_url) as s:
        requeue, failed = queueing.stale_claims(s, config)
        started = system_tests.start_due_system_tests(s, config)
        queues = set(s.scalars(select(JudgingRow.queue).distinct()
                               .where(JudgingRow.state == State.QUEUED.value)))
    try:
        counts = broker_counts(config, queues) if queues else {}
    except Exception as exc:
        log.warning("broker unreachable during sweep: %s", exc)
        return {"requeued": [], "failed": failed, "resent": [], "system_tests": []}
    with db.session(config.database_url) as s:
        missing = queueing.unpublished(s, config, counts)
    ids = {w.judging_id for w in requeue + started}
    work = requeue + started + [w for w in missing if w.judging_id not in ids]
    sent = publish(config, work)
    return {"requeued": [w.judging_id for w in requeue], "failed": failed, "resent": sent,
            "system_tests": [w.judging_id for w in started]}
