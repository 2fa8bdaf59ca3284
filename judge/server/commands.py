"""Service commands of `kjudge`: serve, worker, db, user, contest (admin, on the server host) and
submit, status, rejudge, leaderboard, export (clients of the REST API)."""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

EXIT_OK, EXIT_FAIL, EXIT_BAD_INPUT = 0, 1, 2
CLIENT_CONFIG = Path(os.environ.get("KJUDGE_CLIENT_CONFIG",
                                    Path.home() / ".config" / "kjudge" / "client.json"))


class CommandError(Exception):
    def __init__(self, message: str, code: int = EXIT_BAD_INPUT):
        super().__init__(message)
        self.code = code


# -- server side -------------------------------------------------------------------------------
def worker_argv(queues: list[str], concurrency: int, name: str) -> list[str]:
    return [sys.executable, "-m", "celery", "-A", "judge.server.tasks:app", "worker",
            "-Q", ",".join(queues), "-c", str(concurrency), "--pool", "prefork",
            "-n", name, "--without-gossip", "--without-mingle", "--loglevel", "INFO"]


def queues_for(config, queue: str | None, device: str | None) -> list[str]:
    """The worker's queue (default: from its device, e.g. judge.cpu, judge.cuda.h200) and the
    `.rejudge` twin it also drains."""
    if queue is None:
        from judge.device import detect, queue_device

        kind, _, model = queue_device(detect(device)).partition(".")
        queue = config.queue_for(kind, model)
    return [queue, queue + ".rejudge"]


def embedded_device(config) -> str:
    """The embedded worker judges what submissions outside contests are routed to."""
    return "cpu" if config.default_device == "cpu" else config.default_device.split(".")[0]


def cmd_db_upgrade(args: argparse.Namespace) -> int:
    from judge.server import db
    from judge.server.config import settings

    config = settings()
    db.upgrade(config.database_url)
    print(f"database at head: {config.database_url}")
    return EXIT_OK


def _prepare(config) -> None:
    """Migrations, problems, and a first admin on an empty database."""
    from judge.server import db, service
    from judge.server.models import User

    db.upgrade(config.database_url)
    with db.session(config.database_url) as s:
        invalid = service.sync_problems(s, config)
        for slug, issues in invalid.items():
            print(f"problem {slug} not loaded:\n  " + "\n  ".join(issues), file=sys.stderr)
        if s.query(User).count() == 0:
            _, token = service.create_user(s, "admin", admin=True)
            token_file = config.data_dir / "admin-token"
            token_file.parent.mkdir(parents=True, exist_ok=True)
            token_file.write_text(token + "\n")
            token_file.chmod(0o600)
            print(f"created user admin; its token is in {token_file}")


def require_isolation(insecure: bool) -> None:
    """Workers run untrusted code: one starts only with a sandbox that hides the host from it,
    unless told `--insecure` (then the `process` backend, which still keeps the run out of the
    host's other processes and off the network, and flags every judging)."""
    from sandbox import BACKENDS, ISOLATED, NO_ISOLATION

    name = os.environ.get("KJUDGE_SANDBOX", "auto")
    if name == "auto" and not any(BACKENDS[n].available() for n in ISOLATED):
        if not insecure:
            raise SystemExit(f"kjudge: {NO_ISOLATION}; or start with --insecure")
        name = os.environ["KJUDGE_SANDBOX"] = "process"
    if name == "process" and not insecure:
        raise SystemExit("kjudge: KJUDGE_SANDBOX=process does not isolate submissions from the "
                         "host's files: start with --insecure to judge with it anyway")
    if name in BACKENDS and not BACKENDS[name].available():
        raise SystemExit(f"kjudge: the {name} sandbox (KJUDGE_SANDBOX) is not available here")


def cmd_serve(args: argparse.Namespace) -> int:
    import uvicorn

    from judge.server.api import create_app
    from judge.server.config import settings

    config = settings()
    if not args.no_worker:
        require_isolation(args.insecure)
    _prepare(config)
    workers = []
    if not args.no_worker:
        device = args.device or embedded_device(config)
        env = {**os.environ, "KJUDGE_WORKER_DEVICE": device,
               "KJUDGE_SANDBOX_OWNER": f"worker-{device}-embedded"}
        for i in range(args.workers):
            argv = worker_argv(queues_for(config, None, device), 1, f"embedded{i}@%h")
            workers.append(subprocess.Popen(argv, env=env))
    log_level = "warning" if args.quiet else "info"
    try:
        if args.api_processes > 1:  # each process builds its app from the same settings
            serve_processes(args.api_processes, args.host, args.port, log_level)
        else:
            uvicorn.run(create_app(config), host=args.host, port=args.port, log_level=log_level)
    finally:
        for proc in workers:
            proc.send_signal(signal.SIGTERM)
        for proc in workers:
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
    return EXIT_OK


def serve_processes(count: int, host: str, port: int, log_level: str) -> None:
    """The API in `count` processes, each with a listening socket of its own on the port
    (SO_REUSEPORT: the kernel spreads new connections over them evenly; one shared socket let
    the first process to wake take nearly every keep-alive connection). Ends when any of them
    ends, or on SIGTERM / Ctrl-C, taking the others with it."""
    import multiprocessing

    context = multiprocessing.get_context("spawn")  # fresh interpreters: no state forked
    children = [context.Process(target=_serve_one, args=(host, port, log_level), daemon=True)
                for _ in range(count)]
    for child in children:
        child.start()
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    try:
        while not stop.wait(0.5) and all(child.is_alive() for child in children):
            pass
    finally:
        for child in children:
            child.terminate()  # uvicorn shuts down gracefully on SIGTERM
        for child in children:
            child.join(30)


def _serve_one(host: str, port: int, log_level: str) -> None:
    import socket

    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    # inherited by every accepted connection: replies are not held back for the client's ACK
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind((host, port))
    sock.listen(2048)
    config = uvicorn.Config("judge.server.api:create_app", factory=True, log_level=log_level)
    uvicorn.Server(config).run(sockets=[sock])


def cmd_worker(args: argparse.Namespace) -> int:
    from judge.server.config import settings

    config = settings()
    require_isolation(args.insecure)
    os.environ["KJUDGE_WORKER_DEVICE"] = args.device or ""
    os.environ["KJUDGE_SANDBOX_OWNER"] = f"worker-{args.device or 'auto'}"
    queues = queues_for(config, args.queue, args.device)
    name = f"{(args.device or 'cpu').replace(':', '')}@%h"
    os.execv(sys.executable, worker_argv(queues, args.concurrency, name))
    return EXIT_OK  # not reached


def cmd_user_add(args: argparse.Namespace) -> int:
    from judge.server import db, service
    from judge.server.config import settings

    config = settings()
    db.upgrade(config.database_url)
    try:
        with db.session(config.database_url) as s:
            if args.new_token:
                token = service.new_token(s, args.name)
            else:
                _, token = service.create_user(s, args.name, args.admin)
    except service.ServiceError as exc:
        raise CommandError(exc.message) from None
    print(token)
    return EXIT_OK


# -- client side -------------------------------------------------------------------------------
class Client:
    def __init__(self, server: str | None, token: str | None):
        saved = json.loads(CLIENT_CONFIG.read_text()) if CLIENT_CONFIG.is_file() else {}
        self.server = (server or os.environ.get("KJUDGE_SERVER") or saved.get("server")
                       or "http://127.0.0.1:8000").rstrip("/")
        self.token = token or os.environ.get("KJUDGE_TOKEN") or saved.get("token")

    def call(self, method: str, path: str, body: dict | None = None,
             params: dict | None = None) -> Reply:
        """One API request (the standard library's client: `kjudge status` starts in a fraction
        of what importing an HTTP package costs); a 4xx/5xx is a CommandError with its text."""
        import urllib.error
        import urllib.parse
        import urllib.request

        url = self.server + path + (f"?{urllib.parse.urlencode(params)}" if params else "")
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        data = None
        if body is not None:
            data, headers["Content-Type"] = json.dumps(body).encode(), "application/json"
        request = urllib.request.Request(url, data=data, headers=headers, method=method)
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return Reply(response.status, response.read().decode())
        except urllib.error.HTTPError as exc:
            reply = Reply(exc.code, exc.read().decode(errors="replace"))
        except (urllib.error.URLError, OSError) as exc:
            raise CommandError(f"cannot reach {self.server}: {exc}") from None
        try:
            message = reply.json().get("error", reply.text)
        except (ValueError, AttributeError):
            message = reply.text
        raise CommandError(f"{reply.status_code}: {message}")


class Reply:
    def __init__(self, status_code: int, text: str):
        self.status_code, self.text = status_code, text

    def json(self):
        return json.loads(self.text)


def _client(args: argparse.Namespace) -> Client:
    return Client(args.server, args.token)


def cmd_submit(args: argparse.Namespace) -> int:
    from judge.languages import UnknownLanguage, infer_language

    path = Path(args.file)
    if not path.is_file():
        raise CommandError(f"no such file: {path}")
    source = path.read_text(errors="replace")
    try:
        language = args.lang or infer_language(path, source).name
    except UnknownLanguage as exc:
        raise CommandError(str(exc)) from None
    client = _client(args)
    body = {"problem": args.problem, "language": language, "source": source,
            "contest": args.contest}
    created = client.call("POST", "/api/submissions", body=body).json()
    print(f"submission {created['id']} queued")
    if not args.wait:
        return EXIT_OK
    return _wait_and_show(client, created["id"], args.timeout)


def _wait_and_show(client: Client, submission_id: int, timeout: float) -> int:
    deadline = time.monotonic() + timeout
    last = None
    while True:
        record = client.call("GET", f"/api/submissions/{submission_id}").json()
        if record["state"] != last:
            print(f"  {record['state']}", file=sys.stderr)
            last = record["state"]
        if record["state"] == "DONE" and record["verdict"]:
            print(_record_table(record))
            return EXIT_OK if record["verdict"] == "AC" else EXIT_FAIL
        if time.monotonic() > deadline:
            raise CommandError(f"no verdict within {timeout:g} s; see kjudge status "
                               f"{submission_id}", EXIT_FAIL)
        time.sleep(0.5)


def _record_table(record: dict) -> str:
    from judge import report
    from judge.result import JudgeResult, TestReport
    from judge.verdicts import Verdict

    fields = set(TestReport.__dataclass_fields__)
    tests = []
    for t in record["tests"]:
        data = {k: v for k, v in t.items() if k in fields}
        data.setdefault("sample", False)
        data["verdict"] = Verdict(t["verdict"]) if t.get("verdict") else None
        tests.append(TestReport(**data))
    result = JudgeResult(record["problem"], record.get("problem_version") or "",
                         record["language"], Verdict(record["verdict"]),
                         score=record["score"] or 0.0, speedup=record["speedup"],
                         time_ms=record["time_ms"], peak_memory_mb=record["peak_memory_mb"],
                         compile_log=record.get("compile_log") or "",
                         message=record.get("message") or "", tests=tests)
    return report.table(result)


def cmd_status(args: argparse.Namespace) -> int:
    client = _client(args)
    record = client.call("GET", f"/api/submissions/{args.id}").json()
    if args.json:
        print(json.dumps(record, indent=2, default=str))
    elif record["verdict"]:
        print(_record_table(record))
    else:
        print(f"submission {args.id}: {record['state']}")
    return EXIT_OK


def cmd_rejudge(args: argparse.Namespace) -> int:
    body = {"reason": args.reason, "submission_ids": args.submission, "problem": args.problem,
            "user": args.user, "verdict": args.verdict, "since": args.since}
    created = _client(args).call("POST", "/api/rejudge", body=body).json()
    print(f"rejudge {created['id']}: {created['total']} judging(s) queued")
    return EXIT_OK


def cmd_leaderboard(args: argparse.Namespace) -> int:
    params = {"contest": args.contest} if args.contest else {}
    board = _client(args).call("GET", "/api/leaderboard", params=params).json()
    problems = board["problems"]
    if board.get("me"):
        print(f"my rank {board['me']['rank']}  my total {board['me']['total']:.2f}")
    print(f"{'rank':>4} {'user':<16} {'total':>9} " + " ".join(f"{p[:12]:>12}" for p in problems))
    for row in board["rows"]:
        cells = " ".join(f"{row['problems'].get(p, 0):>12.2f}" for p in problems)
        print(f"{row['rank']:>4} {row['user'][:16]:<16} {row['total']:>9.2f} {cells}")
    return EXIT_OK


def cmd_export(args: argparse.Namespace) -> int:
    response = _client(args).call("GET", "/api/export", params={"format": args.format})
    print(response.text if args.format == "csv" else json.dumps(response.json(), indent=2))
    return EXIT_OK


def register(sub) -> None:
    """Add the service commands to the `kjudge` parser."""
    s = sub.add_parser("serve", help="run the API (and by default one embedded worker)")
    s.add_argument("--host", default="127.0.0.1")
    s.add_argument("--port", type=int, default=8000)
    s.add_argument("--no-worker", action="store_true", help="production: workers run apart")
    s.add_argument("--workers", type=int, default=1, help="embedded workers")
    s.add_argument("--api-processes", type=int, default=1,
                   help="API processes on the port (uvicorn workers; the API is stateless)")
    s.add_argument("--device", help="device of the embedded workers (default: that of "
                                    "KJUDGE_DEFAULT_DEVICE, itself the GPU if visible)")
    s.add_argument("--quiet", action="store_true")
    s.add_argument("--insecure", action="store_true",
                   help="judge without bubblewrap or Docker (process sandbox: development only)")
    s.set_defaults(func=cmd_serve)

    w = sub.add_parser("worker", help="a Celery worker pinned to one device")
    w.add_argument("--device", help="cpu, cuda:N (default: the GPU if visible)")
    w.add_argument("--queue", help="e.g. judge.cuda.h100 (its .rejudge twin is added)")
    w.add_argument("--concurrency", type=int, default=1)
    w.add_argument("--insecure", action="store_true",
                   help="judge without bubblewrap or Docker (process sandbox: development only)")
    w.set_defaults(func=cmd_worker)

    d = sub.add_parser("db", help="database").add_subparsers(dest="action", required=True)
    d.add_parser("upgrade", help="apply migrations").set_defaults(func=cmd_db_upgrade)

    u = sub.add_parser("user", help="users").add_subparsers(dest="action", required=True)
    ua = u.add_parser("add", help="create a user and print its token")
    ua.add_argument("name")
    ua.add_argument("--admin", action="store_true")
    ua.add_argument("--new-token", action="store_true", help="replace an existing user's token")
    ua.set_defaults(func=cmd_user_add)

    def client_args(p: argparse.ArgumentParser) -> None:
        p.add_argument("--server", help="default: $KJUDGE_SERVER or the client config")
        p.add_argument("--token", help="default: $KJUDGE_TOKEN or the client config")

    sm = sub.add_parser("submit", help="submit a source to the server")
    sm.add_argument("problem")
    sm.add_argument("file")
    sm.add_argument("--lang")
    sm.add_argument("--contest")
    sm.add_argument("--wait", action="store_true", help="show progress until the verdict")
    sm.add_argument("--timeout", type=float, default=600)
    client_args(sm)
    sm.set_defaults(func=cmd_submit)

    st = sub.add_parser("status", help="a submission's record")
    st.add_argument("id", type=int)
    st.add_argument("--json", action="store_true")
    client_args(st)
    st.set_defaults(func=cmd_status)

    rj = sub.add_parser("rejudge", help="rejudge submissions (admin)")
    rj.add_argument("--submission", type=int, nargs="+")
    rj.add_argument("--problem")
    rj.add_argument("--user")
    rj.add_argument("--verdict")
    rj.add_argument("--since", help="ISO time, e.g. 2026-11-30T10:00:00Z")
    rj.add_argument("--reason", required=True)
    client_args(rj)
    rj.set_defaults(func=cmd_rejudge)

    lb = sub.add_parser("leaderboard", help="the leaderboard")
    lb.add_argument("--contest")
    client_args(lb)
    lb.set_defaults(func=cmd_leaderboard)

    ex = sub.add_parser("export", help="export current results (admin)")
    ex.add_argument("--format", choices=["csv", "json"], default="csv")
    client_args(ex)
    ex.set_defaults(func=cmd_export)
