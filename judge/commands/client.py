"""Client commands of `kjudge` over the REST API: submit, status, rejudge, review, sanction,
audit, clar, window, system-test, leaderboard, export.

The standard library's HTTP client: `kjudge status` starts in a fraction of what importing an
HTTP package (or torch) costs.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from judge.settings import settings
from judge.verdicts import RANKED, SUBMISSION_MODES

EXIT_OK, EXIT_FAIL, EXIT_BAD_INPUT = 0, 1, 2


class CommandError(Exception):
    def __init__(self, message: str, code: int = EXIT_BAD_INPUT):
        super().__init__(message)
        self.code = code


class Client:
    def __init__(self, server: str | None, token: str | None):
        config = settings()
        saved_file = config.client_config
        saved = json.loads(saved_file.read_text()) if saved_file.is_file() else {}
        self.server = (server or config.server or saved.get("server")
                       or "http://127.0.0.1:8000").rstrip("/")
        self.token = token or config.token or saved.get("token")

    def call(self, method: str, path: str, body: dict | None = None,
             params: dict | None = None, raw: tuple[bytes, str] | None = None) -> Reply:
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
        if raw is not None:  # (bytes, their content type)
            data, headers["Content-Type"] = raw
        request = urllib.request.Request(url, data=data, headers=headers, method=method)
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return Reply(response.status, response.read())
        except urllib.error.HTTPError as exc:
            reply = Reply(exc.code, exc.read())
        except (urllib.error.URLError, OSError) as exc:
            raise CommandError(f"cannot reach {self.server}: {exc}") from None
        try:
            message = reply.json().get("error", reply.text)
        except (ValueError, AttributeError):
            message = reply.text
        raise CommandError(f"{reply.status_code}: {message}")


class Reply:
    def __init__(self, status_code: int, body: bytes):
        self.status_code, self.body = status_code, body

    @property
    def text(self) -> str:
        return self.body.decode(errors="replace")

    def json(self):
        return json.loads(self.text)


def make_client(args: argparse.Namespace) -> Client:
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
    client = make_client(args)
    contest = None if args.practice else args.contest or running_contest(client, args.problem)
    body = {"problem": args.problem, "language": language, "source": source,
            "contest": contest, "mode": args.mode}
    created = client.call("POST", "/api/submissions", body=body).json()
    where = f"in contest {contest}" if contest else (
        "practice: outside any contest" if args.practice else
        f"practice: no running contest holds {args.problem}")
    print(f"submission {created['id']} queued ({args.mode}) {where}")
    if not args.wait:
        return EXIT_OK
    return _wait_and_show(client, created["id"], args.timeout)


def running_contest(client: Client, problem: str) -> str | None:
    """The one running contest that holds `problem` (None: none does); several: ask which."""
    running = [c["slug"] for c in client.call("GET", "/api/contests").json()
               if c["state"] == "running" and problem in c["problems"]]
    if len(running) > 1:
        raise CommandError(f"{problem} is in {len(running)} running contests "
                           f"({', '.join(running)}): say which with --contest SLUG, or "
                           "--practice for none")
    return running[0] if running else None


def _wait_and_show(client: Client, submission_id: int, timeout: float) -> int:
    deadline = time.monotonic() + timeout
    last = None
    while True:
        record = client.call("GET", f"/api/submissions/{submission_id}").json()
        if progress(record) != last:
            last = progress(record)
            print(f"  {last}", file=sys.stderr)
        if record["state"] == "DONE" and record["verdict"]:
            print(_record_table(record))
            return EXIT_OK if record["verdict"] == "AC" else EXIT_FAIL
        if time.monotonic() > deadline:
            raise CommandError(f"no verdict within {timeout:g} s; see kjudge status "
                               f"{submission_id}", EXIT_FAIL)
        time.sleep(0.5)


def progress(record: dict) -> str:
    """A submission's state, and where it waits when queued: `QUEUED: 3rd in judge.cpu (1
    running), about 20 s to its verdict`."""
    place = record.get("queue")
    if record["state"] != "QUEUED" or not place:
        return record["state"]
    n = place["position"]
    nth = f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"
    wait = (f", about {place['estimate_s']:.0f} s to its verdict"
            if place.get("estimate_s") is not None else "")
    return f"QUEUED: {nth} in {place['queue']} ({place['running']} running){wait}"


def _record_table(record: dict) -> str:
    from judge.judging import report
    from judge.judging.record import JudgeResult

    table = report.table(JudgeResult.from_dict(record)) + profile_text(record.get("profile"))
    mode = record.get("mode", RANKED)
    if mode == RANKED:
        return table
    unranked = {"test": "a test submission: its sample points only, correctness only, "
                        "counted nowhere",
                "benchmark": "a benchmark submission: judged and timed, counted nowhere",
                "profile": "a profile submission: one sample point's call under Nsight Compute, "
                           "counted nowhere"}
    return f"{unranked.get(mode, mode)}\n{table}"


def profile_text(profile: dict | None) -> str:
    """A profile judging's Nsight Compute summary: per kernel, each metric's average."""
    if not profile:
        return ""
    lines = ["", f"Nsight Compute, test point {profile['point']}"
             + (f" (report: {profile['report_bytes']} bytes, `kjudge status ID --profile "
                "FILE`)" if profile.get("report") else "")]
    for row in profile.get("kernels", []):
        lines.append(f"  {row.get('Kernel Name', '?')[:40]:<40} {row.get('Metric Name', ''):<32}"
                     f" {row.get('Average', '')} {row.get('Metric Unit', '')}")
    if profile.get("note"):
        lines.append(f"  {profile['note']}")
    return "\n".join(lines)


def cmd_status(args: argparse.Namespace) -> int:
    client = make_client(args)
    if args.profile:
        reply = client.call("GET", f"/api/submissions/{args.id}/profile.ncu-rep")
        Path(args.profile).write_bytes(reply.body)
        print(f"submission {args.id}: Nsight Compute report -> {args.profile}")
        return EXIT_OK
    if args.csv:
        text = client.call("GET", f"/api/submissions/{args.id}/results.csv").text
        Path(args.csv).write_text(text)
        print(f"submission {args.id}: {max(len(text.splitlines()) - 1, 0)} test points -> "
              f"{args.csv}")
        return EXIT_OK
    record = client.call("GET", f"/api/submissions/{args.id}").json()
    if args.compare is not None:
        from judge.judging import report

        other = client.call("GET", f"/api/submissions/{args.compare}").json()
        print(report.side_by_side(record, other))
    elif args.json:
        print(json.dumps(record, indent=2, default=str))
    elif record["verdict"]:
        print(_record_table(record))
    else:
        print(f"submission {args.id}: {progress(record)}")
    return EXIT_OK


def cmd_rejudge(args: argparse.Namespace) -> int:
    """Start a rejudge (`--stage`: judged aside), or read a rejudge's diff, apply or cancel a
    staged one."""
    client = make_client(args)
    settle = "apply" if args.apply else "cancel" if args.cancel else None
    if settle:
        done = client.call("POST", f"/api/rejudge/{args.apply or args.cancel}/{settle}").json()
        print(f"rejudge {done['id']}: {done['state']}")
        return EXIT_OK
    if args.diff:
        print(diff_text(client.call("GET", f"/api/rejudge/{args.diff}/diff").json()))
        return EXIT_OK
    if not args.reason:
        raise CommandError("say why: --reason (or read a rejudge with --diff ID)")
    body = {"reason": args.reason, "submission_ids": args.submission, "problem": args.problem,
            "user": args.user, "verdict": args.verdict, "since": args.since,
            "staged": args.stage}
    created = client.call("POST", "/api/rejudge", body=body).json()
    staged = (f"; staged: nothing counts until `kjudge rejudge --apply {created['id']}` "
              f"(read `--diff {created['id']}` first)") if args.stage else ""
    print(f"rejudge {created['id']}: {created['total']} judging(s) queued{staged}")
    return EXIT_OK


def diff_text(diff: dict) -> str:
    """A rejudge's diff: the submissions it changes, then the board rows it moves."""
    def result(r: dict | None) -> str:
        return f"{r['verdict'] or '-'} {r['score']:.2f}" if r else "none"

    lines = [f"rejudge {diff['id']} ({diff['state']}: {diff['reason']}): {len(diff['changed'])} "
             f"changed, {diff['unchanged']} unchanged, {diff['pending']} still judging"
             + (f", {diff['dropped']} dropped" if diff["dropped"] else "")]
    for c in diff["changed"]:
        lines.append(f"  submission {c['submission']}  {c['user']}  {c['problem']}  "
                     f"{result(c['before'])} -> {result(c['after'])}")
    for board in diff["boards"]:
        lines.append(f"board {board['contest'] or '(all submissions)'}: "
                     + ("no row moves" if not board["rows"] else ""))
        for row in board["rows"]:
            b, a = row["before"], row["after"]
            lines.append(f"  {row['name'][:16]:<16} rank {b['rank'] or '-'} -> {a['rank'] or '-'}"
                         f"  total {b['total']:.2f} -> {a['total']:.2f}")
    return "\n".join(lines)


def cmd_review(args: argparse.Namespace) -> int:
    """The review list, or a decision on one of its judgings (`--clear`/`--disqualify ID`)."""
    client = make_client(args)
    if args.clear or args.disqualify:
        decision, judging = ("cleared", args.clear) if args.clear else ("disqualified",
                                                                         args.disqualify)
        done = client.call("POST", f"/api/review/{judging}",
                           body={"decision": decision, "note": args.note}).json()
        print(f"judging {done['judging_id']} of submission {done['submission_id']}: "
              f"{done['decision']}")
        return EXIT_OK
    rows = client.call("GET", "/api/review", params={"undecided": args.undecided}).json()
    if not rows:
        print("nothing to review")
    for row in rows:
        print(f"judging {row['judging_id']}  submission {row['submission_id']}  {row['user']}  "
              f"{row['problem']}  {row['verdict'] or '-'}  {row['decision'] or 'held'}")
        for hold in row["holds"]:
            where = (f"line {hold['line']}" if hold.get("line") else
                     f"test {hold['test']}" if hold.get("test") else "")
            print(f"    {hold['by']}{' ' + where if where else ''}: {hold['what']}")
    return EXIT_OK


def cmd_sanction(args: argparse.Namespace) -> int:
    """Impose a sanction (ignore, disqualify, ban), lift one, or list them."""
    client = make_client(args)
    if args.action == "list":
        rows = client.call("GET", "/api/sanctions", params={"everything": args.all}).json()
        print("no sanctions" if not rows else "\n".join(_sanction_line(row) for row in rows))
        return EXIT_OK
    if args.action == "lift":
        done = client.call("POST", f"/api/sanctions/{args.id}/lift",
                           body={"reason": args.reason}).json()
        print(f"lifted: {_sanction_line(done)}")
        return EXIT_OK
    body = {"kind": args.action, "reason": args.reason, "submission": args.submission,
            "user": args.user, "team": args.team, "contest": args.contest}
    done = client.call("POST", "/api/sanctions", body={k: v for k, v in body.items()
                                                       if v is not None}).json()
    print(_sanction_line(done))
    return EXIT_OK


def _sanction_line(row: dict) -> str:
    target = (f"submission {row['submission']}" if row["submission"] else
              f"team {row['team']}" if row["team"] else f"user {row['user']}")
    where = f" from {row['contest']}" if row["contest"] else ""
    lifted = "" if row["active"] else f"  (lifted {row['lifted_at'][:16]}: {row['lift_reason']})"
    return f"sanction {row['id']}: {row['kind']} {target}{where}: {row['reason']}{lifted}"


def cmd_audit(args: argparse.Namespace) -> int:
    params = {"limit": args.limit, "action": args.action, "actor": args.actor}
    rows = make_client(args).call("GET", "/api/audit", params={k: v for k, v in params.items()
                                                           if v is not None}).json()
    if args.json:
        print(json.dumps(rows, indent=2))
        return EXIT_OK
    if not rows:
        print("no entries")
    for row in rows:
        details = " ".join(f"{k}={json.dumps(v)}" for k, v in row["details"].items())
        print(f"{row['at'][:19]}  {row['actor']:<12} {row['action']:<20} {row['target']}"
              + (f"  {details}" if details else ""))
    return EXIT_OK


def cmd_clar(args: argparse.Namespace) -> int:
    """Clarifications: read them (and mark them read), ask, answer, announce."""
    client = make_client(args)
    if args.action == "ask":
        made = client.call("POST", "/api/clarifications", body={
            "text": args.text, "problem": args.problem, "contest": args.contest}).json()
        print(f"question {made['id']} sent; its answer shows in `kjudge clar`")
    elif args.action == "answer":
        client.call("POST", f"/api/clarifications/{args.id}/answer",
                    body={"text": args.text, "public": args.public})
        print(f"question {args.id} answered" + (" to everyone" if args.public else ""))
    elif args.action == "announce":
        made = client.call("POST", "/api/announcements", body={
            "text": args.text, "problem": args.problem, "contest": args.contest}).json()
        print(f"announcement {made['id']} sent")
    else:
        params = {"unread": args.unread, **({"contest": args.contest} if args.contest else {})}
        rows = client.call("GET", "/api/clarifications", params=params).json()
        print("\n".join(clar_text(row) for row in rows) if rows else "no clarifications")
        if rows:
            client.call("POST", "/api/clarifications/read", body={"ids": [r["id"] for r in rows]})
    return EXIT_OK


def clar_text(row: dict) -> str:
    """One clarification: `*` when unread, what it is about, the question, the answer."""
    about = " ".join(x for x in (row["contest"], row["problem"]) if x) or "general"
    kind = ("announcement" if row["announcement"] else
            "answered to everyone" if row["public"] else
            "answered" if row["answer"] else "not answered yet")
    who = f" from {row['asked_by']}" if row.get("asked_by") else ""
    lines = [f"{'*' if row['unread'] else ' '} #{row['id']}  "
             f"{(row['answered_at'] or row['created_at'])[:16]}  {about}  ({kind}{who})"]
    if row["question"]:
        lines.append(f"    Q: {row['question']}")
    if row["answer"]:
        lines.append(f"    A: {row['answer']}")
    return "\n".join(lines)


def cmd_window(args: argparse.Namespace) -> int:
    """My time in a contest (`--start`: start my window), or an organizer gives a user extra
    time (`--extra USER SECONDS`)."""
    client, path = make_client(args), f"/api/contests/{args.contest}"
    if args.extra:
        name, seconds = args.extra
        if not seconds.isdigit():
            raise CommandError(f"--extra takes a user and whole seconds, not {seconds!r}")
        mine = client.call("PUT", f"{path}/participants/{name}",
                           body={"extra_s": int(seconds)}).json()
    elif args.start:
        mine = client.call("POST", f"{path}/start").json()
    else:
        mine = client.call("GET", f"{path}/me").json()
    print(window_text(mine))
    return EXIT_OK


def window_text(mine: dict) -> str:
    what = {"not_started": "the contest has not started", "to_start": "not started yet: "
            f"`kjudge window {mine['contest']} --start` gives you "
            f"{(mine['window_s'] or 0) // 60} min", "running": "running", "ended": "ended"}
    lines = [f"{mine['user']} in {mine['contest']}: {what[mine['state']]}"]
    if mine["started_at"]:
        lines.append(f"  started {mine['started_at'][:19]}")
    if mine["ends_at"]:
        lines.append(f"  ends    {mine['ends_at'][:19]}")
    if mine["extra_s"]:
        lines.append(f"  extra   {mine['extra_s']} s")
    return "\n".join(lines)


def cmd_system_test(args: argparse.Namespace) -> int:
    """A contest's system test: start one (`--start`), or its progress and each row before and
    after."""
    client, path = make_client(args), f"/api/contests/{args.contest}/system-test"
    report = (client.call("POST", path, body={"reason": args.reason or ""}) if args.start
              else client.call("GET", path)).json()
    print(f"system test {report['id']} ({report['reason']}): {report['done']} of "
          f"{report['total']} judgings done")
    print(f"{'before':>6} {'after':>6} {'row':<16} {'total before':>12} {'total after':>12}")
    for row in report["rows"]:
        before, after = row["before"], row["after"]
        print(f"{before['rank'] or '-':>6} {after['rank'] or '-':>6} {row['name'][:16]:<16} "
              f"{before['total']:>12.2f} {after['total']:>12.2f}")
    return EXIT_OK


def cmd_leaderboard(args: argparse.Namespace) -> int:
    params = {"contest": args.contest} if args.contest else {}
    board = make_client(args).call("GET", "/api/leaderboard", params=params).json()
    if board.get("frozen_at"):
        print(f"frozen at {board['frozen_at']}: the board as it stood then")
    me = board.get("me")
    if me and me.get("rank") is not None:  # (an organizer has no row)
        live = f"  (now {me['live']['total']:.2f})" if me.get("live") else ""
        print(f"my rank {me['rank']}  my total {me['total']:.2f}{live}")
    print(board_text(board))
    if any(row.get("pending") for row in board["rows"]):
        print("+N?: submissions since the freeze, their results shown at the thaw")
    return EXIT_OK


def board_text(board: dict) -> str:
    """The board as a table: '–' where a row has not solved a problem, '+N?' beside a cell
    for its submissions since the freeze."""
    problems = board["problems"]
    who = "team" if board.get("teams") else "user"
    lines = [f"{'rank':>4} {who:<16} {'total':>9} " + " ".join(f"{p[:12]:>12}" for p in problems)]
    for row in board["rows"]:
        pending = row.get("pending") or {}
        cells = []
        for p in problems:
            score = row["problems"].get(p)
            cell = "–" if score is None else f"{score:.2f}"
            cells.append(f"{cell + (f' +{pending[p]}?' if pending.get(p) else ''):>12}")
        lines.append(f"{row['rank'] or '-':>4} {row['name'][:16]:<16} {row['total']:>9.2f} "
                     + " ".join(cells))
    return "\n".join(lines)


def cmd_problem_reload(args: argparse.Namespace) -> int:
    """The server reads its problem folders again: a new or changed folder is served only
    then. Exit 1 when a folder there does not validate (it is not served)."""
    return _served(make_client(args).call("POST", "/api/problems/reload").json())


def _served(reply: dict) -> int:
    """A reload's answer: what is served, and each folder that is not, with why (exit 1)."""
    print(f"{len(reply['loaded'])} problems served: {', '.join(reply['loaded']) or '-'}")
    for folder, issues in reply["invalid"].items():
        print(f"not served: {folder}: " + "; ".join(issues))
    return EXIT_FAIL if reply["invalid"] else EXIT_OK


def cmd_problem_sync(args: argparse.Namespace) -> int:
    """Send a problem folder to the server (a remote one: no shell on its host needed), which
    puts it in place of its folder of that name once it validates, and reloads."""
    import io
    import tarfile

    folder = Path(args.folder)
    if not (folder / "problem.yaml").is_file():
        raise CommandError(f"{folder} holds no problem.yaml: a problem folder is needed")
    slug = args.slug or folder.resolve().name
    packed = io.BytesIO()
    with tarfile.open(fileobj=packed, mode="w:gz") as tar:
        for path in sorted(folder.rglob("*")):
            if "__pycache__" in path.parts or path.is_symlink():
                continue
            tar.add(path, arcname=str(path.relative_to(folder)), recursive=False)
    reply = make_client(args).call("PUT", f"/api/problems/{slug}/folder",
                                   raw=(packed.getvalue(), "application/gzip")).json()
    print(f"{slug}: sent ({len(packed.getvalue()) // 1024} KiB) and served")
    return _served(reply)


def cmd_export(args: argparse.Namespace) -> int:
    if args.format == "event-feed":  # the CCS event feed: what the ICPC resolver reads
        if not args.contest:
            raise CommandError("--format event-feed needs --contest SLUG")
        print(make_client(args).call("GET", f"/api/ccs/contests/{args.contest}/event-feed").text,
              end="")
        return EXIT_OK
    response = make_client(args).call("GET", "/api/export", params={"format": args.format})
    print(response.text if args.format == "csv" else json.dumps(response.json(), indent=2))
    return EXIT_OK


def register(sub) -> None:
    """Add the client commands to the `kjudge` parser."""
    for add in (_submit_parser, _status_parser, _rejudge_parser, _review_parser,
                _sanction_parser, _audit_parser, _clar_parser, _window_parser,
                _system_test_parser, _leaderboard_parser, _export_parser):
        add(sub)


def client_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--server", help="default: $KJUDGE_SERVER or the client config")
    p.add_argument("--token", help="default: $KJUDGE_TOKEN or the client config")


def _submit_parser(sub) -> None:
    sm = sub.add_parser("submit", help="submit a source to the server")
    sm.add_argument("problem")
    sm.add_argument("file")
    sm.add_argument("--lang")
    where = sm.add_mutually_exclusive_group()
    where.add_argument("--contest", help="default: the one running contest that holds the "
                       "problem (asked for when several do)")
    where.add_argument("--practice", action="store_true",
                       help="outside any contest (counted on the practice board only)")
    sm.add_argument("--mode", choices=SUBMISSION_MODES, default=RANKED,
                    help="ranked (default): counts; benchmark: timed, counted nowhere; test: "
                    "the sample points only, correctness only, fast")
    sm.add_argument("--wait", action="store_true", help="show progress until the verdict")
    sm.add_argument("--timeout", type=float, default=600)
    client_args(sm)
    sm.set_defaults(func=cmd_submit)


def _status_parser(sub) -> None:
    st = sub.add_parser("status", help="a submission's record")
    st.add_argument("id", type=int)
    shown = st.add_mutually_exclusive_group()
    shown.add_argument("--json", action="store_true")
    shown.add_argument("--compare", type=int, metavar="OTHER",
                       help="per test point beside another submission: verdicts, ms, speedups")
    shown.add_argument("--csv", metavar="FILE", help="its results per test point as CSV")
    shown.add_argument("--profile", metavar="FILE", help="a profile submission's Nsight Compute "
                       "report (.ncu-rep)")
    client_args(st)
    st.set_defaults(func=cmd_status)


def _rejudge_parser(sub) -> None:
    rj = sub.add_parser("rejudge", help="rejudge submissions (admin)")
    rj.add_argument("--submission", type=int, nargs="+")
    rj.add_argument("--problem")
    rj.add_argument("--user")
    rj.add_argument("--verdict")
    rj.add_argument("--since", help="ISO time, e.g. 2026-11-30T10:00:00Z")
    rj.add_argument("--reason", help="why (needed to start one)")
    rj.add_argument("--stage", action="store_true",
                    help="judge aside: nothing counts until you apply it, after its --diff")
    settle = rj.add_mutually_exclusive_group()
    settle.add_argument("--diff", type=int, metavar="ID",
                        help="what a rejudge changes (would, if staged): submissions, board rows")
    settle.add_argument("--apply", type=int, metavar="ID", help="a staged rejudge counts")
    settle.add_argument("--cancel", type=int, metavar="ID", help="a staged rejudge never counts")
    client_args(rj)
    rj.set_defaults(func=cmd_rejudge)


def _review_parser(sub) -> None:
    rv = sub.add_parser("review", help="results held for review; clear or disqualify (admin)")
    decide = rv.add_mutually_exclusive_group()
    decide.add_argument("--clear", type=int, metavar="JUDGING", help="it counts as judged")
    decide.add_argument("--disqualify", type=int, metavar="JUDGING", help="it counts nowhere")
    rv.add_argument("--note", default="", help="why (with --clear or --disqualify)")
    rv.add_argument("--undecided", action="store_true", help="only those not decided yet")
    client_args(rv)
    rv.set_defaults(func=cmd_review)


def _sanction_parser(sub) -> None:
    sc = sub.add_parser("sanction", help="ignore a submission, disqualify a user or team "
                        "from a contest, ban a user; lift or list sanctions (admin)")
    kinds = sc.add_subparsers(dest="action", required=True)
    ig = kinds.add_parser("ignore", help="a submission counts nowhere (it stays in the history)")
    ig.add_argument("submission", type=int)
    dq = kinds.add_parser("disqualify", help="a user's or team's results in a contest count "
                          "nowhere; they submit there no more")
    dq.add_argument("--contest", required=True)
    who = dq.add_mutually_exclusive_group(required=True)
    who.add_argument("--user")
    who.add_argument("--team")
    bn = kinds.add_parser("ban", help="a user submits no more (anywhere)")
    bn.add_argument("user")
    lf = kinds.add_parser("lift", help="end a sanction (it stays in the history)")
    lf.add_argument("id", type=int)
    for p in (ig, dq, bn, lf):
        p.add_argument("--reason", required=True, help="the one sanctioned reads it")
    ls = kinds.add_parser("list", help="sanctions in force")
    ls.add_argument("--all", action="store_true", help="lifted ones too")
    for p in (ig, dq, bn, lf, ls):
        client_args(p)
        p.set_defaults(func=cmd_sanction, submission=None, user=None, team=None,
                       contest=None)


def _audit_parser(sub) -> None:
    au = sub.add_parser("audit", help="the organizers' audit log, newest first (admin)")
    au.add_argument("--action", help="by its start: sanction, rejudge, contest.change, …")
    au.add_argument("--actor", help="an organizer's name")
    au.add_argument("--limit", type=int, default=50)
    au.add_argument("--json", action="store_true")
    client_args(au)
    au.set_defaults(func=cmd_audit)


def _clar_parser(sub) -> None:
    cl = sub.add_parser("clar", help="clarifications and announcements: read them (marked * "
                        "when unread), ask; answer and announce (admin)")
    cl.add_argument("--contest", help="with ask/announce: about this contest; listing: its own "
                    "and the general ones")
    cl.add_argument("--unread", action="store_true", help="only unread ones")
    client_args(cl)
    cl.set_defaults(func=cmd_clar, action="list")
    clar_actions = cl.add_subparsers(dest="action")
    ask = clar_actions.add_parser("ask", help="a question to the organizers")
    ann = clar_actions.add_parser("announce", help="to every contestant (admin)")
    for p in (ask, ann):
        p.add_argument("text")
        p.add_argument("--problem")
        p.add_argument("--contest")
    ans = clar_actions.add_parser("answer", help="answer a question (admin)")
    ans.add_argument("id", type=int)
    ans.add_argument("text")
    ans.add_argument("--public", action="store_true", help="to everyone, not only the asker")
    for p in (ask, ann, ans):
        client_args(p)
        p.set_defaults(func=cmd_clar, problem=None, contest=None)


def _window_parser(sub) -> None:
    wn = sub.add_parser("window", help="my time in a contest (--start my window); admin: "
                        "--extra USER SECONDS")
    wn.add_argument("contest")
    how = wn.add_mutually_exclusive_group()
    how.add_argument("--start", action="store_true", help="start my window (once)")
    how.add_argument("--extra", nargs=2, metavar=("USER", "SECONDS"),
                     help="set a user's extra time (admin; 0 takes it away)")
    client_args(wn)
    wn.set_defaults(func=cmd_window)


def _system_test_parser(sub) -> None:
    sy = sub.add_parser("system-test", help="a contest's system test: before and after per row; "
                        "--start one now (admin)")
    sy.add_argument("contest")
    sy.add_argument("--start", action="store_true", help="judge the leaders again now (the "
                    "server starts one by itself when a contest ends)")
    sy.add_argument("--reason")
    client_args(sy)
    sy.set_defaults(func=cmd_system_test)


def _leaderboard_parser(sub) -> None:
    lb = sub.add_parser("leaderboard", help="the leaderboard")
    lb.add_argument("--contest")
    client_args(lb)
    lb.set_defaults(func=cmd_leaderboard)


def _export_parser(sub) -> None:
    ex = sub.add_parser("export", help="export current results, or the whole database (admin)")
    ex.add_argument("--format", choices=["csv", "json", "clarifications", "event-feed", "dump"],
                    default="csv", help="dump: every table, for `kjudge db import` on a new "
                    "database; event-feed: a contest's CCS event feed (NDJSON, for the ICPC "
                    "resolver's contest folder)")
    ex.add_argument("--contest", help="with --format event-feed")
    client_args(ex)
    ex.set_defaults(func=cmd_export)
