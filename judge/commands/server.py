"""Server-side commands of `kjudge`, run on the server's host: serve, worker, db, user."""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import signal
import subprocess
import sys
import time
from functools import partial
from pathlib import Path

from judge.commands.client import EXIT_OK, CommandError


def worker_argv(queues: list[str], concurrency: int, name: str) -> list[str]:
    """A Celery worker process (judge/service/worker.py: the app is built there, not at import)."""
    return [sys.executable, "-c", "from judge.service.worker import main; main()", "-Q",
            ",".join(queues), "-c", str(concurrency), "--pool", "prefork", "-n", name,
            "--without-gossip", "--without-mingle", "--loglevel", "INFO"]


def queues_for(config, queue: str | None, device: str | None,
               system_tests: bool = False) -> list[str]:
    """The worker's queue (default: from its device, e.g. judge.cpu, judge.cuda.h200) and the
    `.rejudge` twin it also drains; with `system_tests`, the `.systest` twin too (one worker
    per device kind drains it, so that a contest's leaders are timed on one machine)."""
    if queue is None:
        from judge.host.device import detect, queue_device

        kind, _, model = queue_device(detect(device)).partition(".")
        queue = config.queue_for(kind, model)
    from judge.service.queueing import REJUDGE_QUEUE, SYSTEM_TEST_QUEUE

    return [queue, queue + REJUDGE_QUEUE] + ([queue + SYSTEM_TEST_QUEUE] if system_tests else [])


def embedded_device(config) -> str:
    """The embedded worker judges what submissions outside contests are routed to."""
    from judge.host.device import default_queue_device

    device = default_queue_device(config)
    return "cpu" if device == "cpu" else device.split(".")[0]


def cmd_db_upgrade(args: argparse.Namespace) -> int:
    from judge.service import db
    from judge.settings import settings

    config = settings()
    db.upgrade(config.database_url)
    print(f"database at head: {config.database_url}")
    return EXIT_OK


def cmd_db_export(args: argparse.Namespace) -> int:
    from judge.service import db, dump
    from judge.settings import settings

    with db.session(settings().database_url) as s:
        text = json.dumps(dump.export_dump(s))
    if args.out:
        Path(args.out).write_text(text)
    else:
        print(text)
    return EXIT_OK


def cmd_db_import(args: argparse.Namespace) -> int:
    from judge.service import db, dump
    from judge.settings import settings

    config = settings()
    try:
        document = json.loads(Path(args.file).read_text())
    except (OSError, ValueError) as exc:
        raise CommandError(f"cannot read {args.file}: {exc}") from None
    db.upgrade(config.database_url)
    try:
        with db.session(config.database_url) as s:
            loaded = dump.import_dump(s, document)
    except dump.DumpError as exc:
        raise CommandError(f"{args.file}: {exc}") from None
    print(", ".join(f"{count} {table}" for table, count in loaded.items() if count))
    return EXIT_OK


def _prepare(config) -> None:
    """Migrations, problems, and a first admin on an empty database."""
    from judge.service import accounts, catalog, db
    from judge.service.models import User

    db.upgrade(config.database_url)
    with db.session(config.database_url) as s:
        invalid = catalog.sync_problems(s, config)
        for slug, issues in invalid.items():
            print(f"problem {slug} not loaded:\n  " + "\n  ".join(issues), file=sys.stderr)
        if s.query(User).count() == 0:
            password = accounts.generate_password()
            _, token = accounts.create_user(s, "admin", admin=True, password=password)
            for name, secret in (("admin-token", token), ("admin-password", password)):
                owner_only(config.data_dir / name, secret + "\n")
            print(f"created user admin; its password is in {config.data_dir / 'admin-password'}"
                  f", its API token in {config.data_dir / 'admin-token'}")


def owner_only(path: Path, text: str) -> None:
    """Write a secret readable by its owner alone, never over an existing file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise CommandError(f"{path} exists: not overwritten (move it away first)") from None
    with os.fdopen(fd, "w") as file:
        file.write(text)


def require_isolation(insecure: bool) -> None:
    """Workers run untrusted code: one starts only with a sandbox that hides the host from it,
    unless told `--insecure` (then the `process` backend, which still keeps the run out of the
    host's other processes and off the network, and flags every judging)."""
    from judge.host.sandbox import sandbox_config
    from judge.settings import settings
    from sandbox import NO_ISOLATION, NoSandbox, choose

    config = settings()
    name, built_from = config.sandbox, sandbox_config(config)
    try:
        backend = choose(name, built_from)
    except NoSandbox as exc:
        if name != "auto":
            raise SystemExit(f"kjudge: the {name} sandbox (KJUDGE_SANDBOX) is not available "
                             f"here: {exc}") from None
        if not insecure:
            raise SystemExit(f"kjudge: {NO_ISOLATION}; or start with --insecure") from None
        name = os.environ["KJUDGE_SANDBOX"] = "process"
        backend = choose(name, built_from)
    if not backend.isolates_filesystem and not insecure:
        raise SystemExit(f"kjudge: KJUDGE_SANDBOX={name} does not isolate submissions from "
                         "the host's files: start with --insecure to judge with it anyway")


def cmd_serve(args: argparse.Namespace) -> int:
    import uvicorn

    from judge.service.api import create_app
    from judge.settings import settings

    config = settings()
    if not args.no_worker:
        require_isolation(args.insecure)
    _prepare(config)
    stops = StopSignals()  # installed before the workers start: no signal goes unseen
    workers = []
    if not args.no_worker:
        device = args.device or embedded_device(config)
        env = {**os.environ, "KJUDGE_WORKER_DEVICE": device,
               "KJUDGE_SANDBOX_OWNER": f"worker-{device}-embedded"}
        for i in range(args.workers):
            # the first embedded worker runs the system tests
            argv = worker_argv(queues_for(config, None, device, system_tests=i == 0), 1,
                               f"embedded{i}@%h")
            workers.append(subprocess.Popen(argv, env=env,
                                            preexec_fn=partial(die_with_parent, os.getpid())))
    log_level = "warning" if args.quiet else "info"
    try:
        if args.api_processes > 1:  # each process builds its app from the same settings
            from judge.service import metrics

            metrics.share_between_processes(config.data_dir / "prometheus")
            serve_processes(args.api_processes, args.host, args.port, log_level, stops)
        elif not stops.count:
            # uvicorn takes SIGTERM/SIGINT while it serves and raises it again once it has
            # stopped, to the handler it found: ours, so that the workers are stopped next
            uvicorn.run(create_app(config), host=args.host, port=args.port, log_level=log_level,
                        forwarded_allow_ips=config.forwarded_allow_ips)
    finally:
        stop_workers(workers, stops)
    return EXIT_OK


STOP_GRACE_S = 60  # a stopping worker's time to finish its running judging, then it stops cold


class StopSignals:
    """Counts SIGTERM and SIGINT from now on: the first stops the server warm, a second one
    (a second Ctrl-C) makes the workers stop cold."""

    def __init__(self):
        self.count = 0
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, self._seen)

    def _seen(self, *_) -> None:
        self.count += 1


def die_with_parent(parent: int) -> None:
    """In a child of `parent`: SIGTERM (a warm stop) comes when the parent dies, even by
    SIGKILL (Linux's parent-death signal); a parent already gone stops the child at once."""
    pr_set_pdeathsig = 1
    ctypes.CDLL(None).prctl(pr_set_pdeathsig, signal.SIGTERM, 0, 0, 0)
    if os.getppid() != parent:
        os.kill(os.getpid(), signal.SIGTERM)


def stop_workers(workers: list[subprocess.Popen], stops: StopSignals) -> None:
    """Warm stop (SIGTERM: Celery lets the running judging finish) for up to STOP_GRACE_S,
    cold (SIGQUIT: the worker hands its judging back) on a second signal or after that; what
    is still there 10 s later is killed."""
    for proc in workers:
        proc.send_signal(signal.SIGTERM)
    warm_until = time.monotonic() + STOP_GRACE_S
    while any(p.poll() is None for p in workers) and time.monotonic() < warm_until \
            and stops.count < 2:
        time.sleep(0.2)
    cold = [p for p in workers if p.poll() is None]
    for proc in cold:
        print(f"kjudge: worker {proc.pid} stops cold", file=sys.stderr)
        proc.send_signal(signal.SIGQUIT)
    for proc in cold:
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def serve_processes(count: int, host: str, port: int, log_level: str,
                    stops: StopSignals) -> None:
    """The API in `count` processes, each with a listening socket of its own on the port
    (SO_REUSEPORT: the kernel spreads new connections over them evenly; one shared socket let
    the first process to wake take nearly every keep-alive connection). Ends when any of them
    ends, or on SIGTERM / Ctrl-C, taking the others with it."""
    import multiprocessing

    context = multiprocessing.get_context("spawn")  # fresh interpreters: no state forked
    children = [context.Process(target=_serve_one, args=(host, port, log_level, os.getpid()),
                                daemon=True) for _ in range(count)]
    for child in children:
        child.start()
    try:
        while not stops.count and all(child.is_alive() for child in children):
            time.sleep(0.2)
    finally:
        for child in children:
            child.terminate()  # uvicorn shuts down gracefully on SIGTERM
        for child in children:
            child.join(30)


def _serve_one(host: str, port: int, log_level: str, parent: int) -> None:
    import socket

    import uvicorn

    die_with_parent(parent)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    # inherited by every accepted connection: replies are not held back for the client's ACK
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind((host, port))
    sock.listen(2048)
    from judge.settings import settings

    config = uvicorn.Config("judge.service.api:create_app", factory=True, log_level=log_level,
                            forwarded_allow_ips=settings().forwarded_allow_ips)
    uvicorn.Server(config).run(sockets=[sock])


def cmd_worker(args: argparse.Namespace) -> int:
    from judge.settings import settings

    config = settings()
    require_isolation(args.insecure)
    os.environ["KJUDGE_WORKER_DEVICE"] = args.device or ""
    os.environ["KJUDGE_SANDBOX_OWNER"] = f"worker-{args.device or 'auto'}"
    queues = queues_for(config, args.queue, args.device, args.system_tests)
    name = f"{(args.device or 'cpu').replace(':', '')}@%h"
    os.execv(sys.executable, worker_argv(queues, args.concurrency, name))
    return EXIT_OK  # not reached


def _accounts(action):
    """Run `action(session)` on the server's database, its refusals as the command's error."""
    from judge.service import db, errors
    from judge.settings import settings

    config = settings()
    db.upgrade(config.database_url)
    try:
        with db.session(config.database_url) as s:
            return action(s)
    except errors.ServiceError as exc:
        raise CommandError(exc.message) from None


def cmd_user_add(args: argparse.Namespace) -> int:
    from judge.service import accounts, audit

    def add(s) -> str:
        if args.new_token:
            audit.record(s, None, "user.new_token", args.name)
            return accounts.replace_tokens(s, accounts.get_user(s, args.name))
        password = accounts.generate_password() if args.password else None
        user, token = accounts.create_user(s, args.name, args.admin, args.team, password)
        audit.record(s, None, "user.create", user.name, role=user.role, team=user.team)
        return token + (f"\npassword: {password}" if password else "")

    print(_accounts(add))
    return EXIT_OK


def cmd_user_import(args: argparse.Namespace) -> int:
    from judge.service import accounts, audit, errors

    try:
        text = Path(args.file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CommandError(f"cannot read {args.file}: {exc}") from None
    if args.out and Path(args.out).exists():
        raise CommandError(f"{args.out} exists: not overwritten (move it away first)")

    def run_import(s):
        try:
            rows = accounts.parse_users_csv(text)
        except errors.ServiceError as exc:
            raise CommandError(f"{args.file}: {exc.message}") from None
        created = accounts.import_users(s, rows, args.skip_existing)
        audit.record(s, None, "user.import", f"{len(created)} users",
                     users=[c.name for c in created])
        return created

    created = _accounts(run_import)
    table = accounts.passwords_csv(created)
    if args.out:
        owner_only(Path(args.out), table)
        print(f"created {len(created)} users; their passwords are in {args.out}")
    else:
        print(table, end="")
    return EXIT_OK


def cmd_user_reset(args: argparse.Namespace) -> int:
    from judge.service import accounts, audit

    def reset(s) -> accounts.Reset:
        done = accounts.reset_password(s, accounts.get_user(s, args.name))
        audit.record(s, None, "user.password_reset", args.name,
                     tokens_revoked=done.tokens_revoked)
        return done

    done = _accounts(reset)
    print(done.password)
    print(f"{done.tokens_revoked} API token(s) of {args.name} revoked (`kjudge user add "
          f"{args.name} --new-token` makes one)", file=sys.stderr)
    return EXIT_OK


def register(sub) -> None:
    """Add the server-side commands to the `kjudge` parser."""
    for add in (_serve_parser, _worker_parser, _db_parser, _user_parser):
        add(sub)


def _serve_parser(sub) -> None:
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


def _worker_parser(sub) -> None:
    w = sub.add_parser("worker", help="a Celery worker pinned to one device")
    w.add_argument("--device", help="cpu, cuda:N (default: the GPU if visible)")
    w.add_argument("--queue", help="e.g. judge.cuda.h100 (its .rejudge twin is added)")
    w.add_argument("--concurrency", type=int, default=1)
    w.add_argument("--system-tests", action="store_true",
                   help="also run contests' system tests (one such worker per device kind)")
    w.add_argument("--insecure", action="store_true",
                   help="judge without bubblewrap or Docker (process sandbox: development only)")
    w.set_defaults(func=cmd_worker)


def _db_parser(sub) -> None:
    d = sub.add_parser("db", help="database").add_subparsers(dest="action", required=True)
    d.add_parser("upgrade", help="apply migrations").set_defaults(func=cmd_db_upgrade)
    de = d.add_parser("export", help="the whole database as one JSON document")
    de.add_argument("--out", help="a file (default: standard output)")
    de.set_defaults(func=cmd_db_export)
    di = d.add_parser("import", help="load a dump into a new, empty database")
    di.add_argument("file")
    di.set_defaults(func=cmd_db_import)


def _user_parser(sub) -> None:
    u = sub.add_parser("user", help="users").add_subparsers(dest="action", required=True)
    ua = u.add_parser("add", help="create a user and print its token")
    ua.add_argument("name")
    ua.add_argument("--admin", action="store_true")
    ua.add_argument("--team", help="the user's team (one board row in a contest with teams)")
    ua.add_argument("--password", action="store_true", help="also give a generated password")
    ua.add_argument("--new-token", action="store_true",
                    help="revoke an existing user's tokens and print a new one")
    ua.set_defaults(func=cmd_user_add)
    ui = u.add_parser("import", help="create users from a CSV (name[,team][,role][,password]) "
                                     "and print their passwords")
    ui.add_argument("file")
    ui.add_argument("--out", help="write the passwords CSV here (owner-only) instead")
    ui.add_argument("--skip-existing", action="store_true",
                    help="leave users that exist as they are (else nothing is created)")
    ui.set_defaults(func=cmd_user_import)
    ur = u.add_parser("reset", help="give a user a new generated password (ends its sessions)")
    ur.add_argument("name")
    ur.set_defaults(func=cmd_user_reset)
