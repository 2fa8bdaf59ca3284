"""The REST API (FastAPI; OpenAPI at /docs). Stateless: any number of these behind a proxy.

One router per resource, one module each in this folder (submissions.py, problems.py,
contests.py, boards.py, accounts.py, clarifications.py, rejudges.py, sanctions.py, export.py,
operations.py, ccs.py): the app includes every module here that has a `router`, so a new
resource is a new file. What they show of their rows is views.py's; the rules are the service's
modules (judge/service/submissions.py, boards.py and the others), which know nothing of HTTP.

Errors are JSON objects {"error": "what is wrong and how to fix it"} with a 4xx status.
"""

from __future__ import annotations

import importlib
import logging
import pkgutil
import threading
import time
from contextlib import asynccontextmanager
from types import ModuleType

from fastapi import FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from pydantic import BaseModel, Field
from sqlalchemy.exc import DBAPIError
from starlette.exceptions import HTTPException as StarletteHTTPException

from judge import web
from judge.service import broker, db, metrics, uploads
from judge.service.errors import ServiceError
from judge.settings import Settings, settings

log = logging.getLogger("kjudge.api")
JANITOR_INTERVAL_S = 5.0


class ErrorOut(BaseModel):
    """Every error answer's body (4xx, and the 503 of an unreachable database)."""

    error: str = Field(description="what is wrong and how to fix it")


# the answers any route may give besides its own (documented in the OpenAPI document)
ERRORS = {status: {"model": ErrorOut, "description": what} for status, what in {
    400: "the body is not JSON", 401: "no valid token", 403: "not allowed for this user",
    404: "no such thing", 409: "conflicts with what exists", 413: "source or body over the limit",
    422: "malformed request, or a submission this problem or contest cannot take",
    429: "over a rate or a quota: the message says when the next is taken (Retry-After)",
    503: "the database is unreachable for a moment (Retry-After)"}.items()}


# -- plumbing ---------------------------------------------------------------------------------
def body_limit(config: Settings) -> int:
    """The largest request body taken: the largest source, JSON-escaped at worst (six bytes a
    character: \\u0001), and room for the other fields."""
    return config.max_source_kb * 1024 * 6 + 64 * 1024


class BodyLimit:
    """ASGI middleware: a body over `limit` bytes is a 413 before it is read whole (by its
    Content-Length, or while it streams in without one); the server would hold it all in
    memory otherwise."""

    def __init__(self, app, limit: int):
        self.app, self.limit = app, limit

    def limit_for(self, scope) -> int:
        """A problem folder's upload (an organizer's, checked before it is read) may be larger."""
        if scope["method"] == "PUT" and scope["path"].endswith(uploads.ROUTE_SUFFIX):
            return uploads.MAX_ARCHIVE_BYTES
        return self.limit

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        limit = self.limit_for(scope)
        length = dict(scope["headers"]).get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > limit):
            status = 400 if not length.isdigit() else 413
            return await JSONResponse({"error": self._message(length, limit)},
                                      status_code=status)(scope, receive, send)
        seen = 0

        async def counted():
            nonlocal seen
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > limit:  # FastAPI passes an HTTPException out of its body reading
                raise HTTPException(413, self._message(None, limit))
            return message
        return await self.app(scope, counted, send)

    @staticmethod
    def _message(length: bytes | None, limit: int) -> str:
        if length is not None and not length.isdigit():
            return "Content-Length is not a number of bytes"
        return f"the request body is over {limit // 1024} KiB"


def _janitor(app: FastAPI, stop: threading.Event) -> None:
    """Sweeps every few seconds, in one API process of the host: the others wait on its lock
    (a sweep reads every queued judging: once per host is enough, the sweep is idempotent)."""
    import fcntl

    config = app.state.settings
    config.data_dir.mkdir(parents=True, exist_ok=True)
    with open(config.data_dir / "janitor.lock", "w") as lock:
        while not stop.is_set():
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError:
                stop.wait(JANITOR_INTERVAL_S)
        _sweep_until(app, stop)


def _sweep_until(app: FastAPI, stop: threading.Event) -> None:
    while not stop.wait(JANITOR_INTERVAL_S):
        try:
            broker.sweep(app.state.settings)
        except Exception as exc:
            log.warning("janitor sweep failed: %s", exc)


@asynccontextmanager
async def lifespan(app: FastAPI):
    stop = threading.Event()
    if app.state.janitor:
        threading.Thread(target=_janitor, args=(app, stop), daemon=True).start()
    yield
    stop.set()
    app.state.publisher.close()


def create_app(config: Settings | None = None, janitor: bool = True) -> FastAPI:
    app = FastAPI(title="kernel-judge", version="0.1.0", lifespan=lifespan, responses=ERRORS)
    app.state.settings = config or settings()
    app.state.janitor = janitor
    app.state.publisher = broker.Publisher(app.state.settings)
    app.add_middleware(BodyLimit, limit=body_limit(app.state.settings))
    app.middleware("http")(_latency)
    for error, handler in ((ServiceError, _service_error), (DBAPIError, _database_error),
                           (StarletteHTTPException, _http_error),
                           (RequestValidationError, _bad_request)):
        app.add_exception_handler(error, handler)
    for resource in resources():
        app.include_router(resource.router)
    web.mount(app)
    return app


async def _latency(request: Request, call_next):
    """Each request's time, by its route's template (not its path: ids would make a series
    each) for the operators' metrics."""
    started = time.perf_counter()
    response = await call_next(request)
    route = request.scope.get("route")
    metrics.REQUEST_SECONDS.labels(request.method, getattr(route, "path", "unmatched"),
                                   str(response.status_code)).observe(
        time.perf_counter() - started)
    return response


async def _service_error(_request: Request, exc: ServiceError):
    headers = ({"Retry-After": str(max(round(exc.retry_after_s), 1))}
               if exc.retry_after_s is not None else None)
    return JSONResponse({"error": exc.message}, status_code=exc.status, headers=headers)


async def _database_error(_request: Request, exc: DBAPIError):
    if not db.unreachable(exc):
        raise exc  # a query the database refused: a bug, the 500 it is
    log.warning("database unreachable: %s", str(exc).splitlines()[0])
    return JSONResponse({"error": "the database is unreachable for a moment; try again"},
                        status_code=503, headers={"Retry-After": "2"})


async def _http_error(_request: Request, exc: StarletteHTTPException):
    # Starlette's own 404 (no route) and 405 (wrong method), in this API's shape
    return JSONResponse({"error": str(exc.detail)}, status_code=exc.status_code,
                        headers=exc.headers)


async def _bad_request(_request: Request, exc: RequestValidationError):
    parts = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"] if p != "body") or "body"
        parts.append(f"{where}: {err['msg']}")
    return JSONResponse({"error": "malformed request: " + "; ".join(parts)}, status_code=422)


def resources() -> list[ModuleType]:
    """This folder's modules that hold a router, by name: the API's resources."""
    found = (importlib.import_module(f"{__name__}.{info.name}")
             for info in pkgutil.iter_modules(__path__))
    return [module for module in found if hasattr(module, "router")]


def api_routes() -> list[APIRoute]:
    """Every route of every resource (what tests walk: an included router's routes are not
    listed one by one in `app.routes` on every FastAPI)."""
    return [route for module in resources() for route in module.router.routes
            if isinstance(route, APIRoute)]
