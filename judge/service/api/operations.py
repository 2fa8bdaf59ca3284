"""The API's operations routes: health, Prometheus metrics, the queue and its workers."""

from __future__ import annotations

import hmac
from typing import Annotated

from fastapi import APIRouter, Header
from fastapi.responses import Response
from prometheus_client import CONTENT_TYPE_LATEST
from sqlalchemy import func, select

from judge.service import db, errors, metrics, queueing
from judge.service.deps import AdminDep, SessionDep, SettingsDep
from judge.service.models import JudgingRow

router = APIRouter(tags=["operations"])


@router.get("/metrics", include_in_schema=False)
def prometheus_metrics(config: SettingsDep,
                       authorization: Annotated[str | None, Header()] = None) -> Response:
    """Prometheus' text format (judge/service/metrics.py); with KJUDGE_METRICS_TOKEN set,
    only for `Authorization: Bearer <that token>`."""
    wanted = config.metrics_token
    if wanted and not hmac.compare_digest(authorization or "", f"Bearer {wanted}"):
        raise errors.ServiceError(401, "send the metrics token: Authorization: Bearer "
                                      "<KJUDGE_METRICS_TOKEN>")
    body = metrics.exposition(lambda: db.session(config.database_url))
    return Response(body, media_type=CONTENT_TYPE_LATEST)


@router.get("/api/health")
def health() -> dict:
    return {"ok": True}


@router.get("/api/queue")
def queue(s: SessionDep, config: SettingsDep, _admin: AdminDep) -> dict:
    queues = queueing.queue_summary(s)
    workers = s.execute(select(JudgingRow.worker, func.max(JudgingRow.heartbeat_at))
                        .where(JudgingRow.worker.is_not(None))
                        .group_by(JudgingRow.worker)).all()
    return {"queues": queues,
            "workers": [{"name": w, "last_seen": seen} for w, seen in workers]}
