"""`kjudge contest` over the REST API (organizers): create, edit, list, show, unfreeze.

Every field the API takes has an option; times are ISO 8601 (a time without an offset is this
machine's local time) or relative to now (`now`, `+30m`, `+2h`, `+1d2h`, `-1h` for an hour
ago), `none` clears one.
The server checks what is sent and names the field that is wrong (a freeze after the end, a
language the contest's device cannot run).
"""

from __future__ import annotations

import argparse
import re
from datetime import datetime, timedelta, timezone

from judge.commands.client import EXIT_OK, CommandError, client_args, make_client
from judge.verdicts import SUBMISSION_MODES

DURATION = re.compile(r"^(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$")
CLEAR = "none"  # a time option's value that clears the time (edit)
TIMES = {"start": "starts_at", "end": "ends_at", "freeze": "freeze_at", "thaw": "thaw_at"}
SWITCHES = {  # option -> the API's field (a --no- form sets it false)
    "public": "public", "teams": "teams", "hold_flagged": "hold_flagged",
    "system_test": "system_test", "profile": "profile"}


def seconds(text: str) -> int:
    """A duration: 90s, 30m, 2h, 1d, 1h30m (a bare number is seconds)."""
    if text.isdigit():
        return int(text)
    found = DURATION.match(text)
    if not text or not found or not any(found.groups()):
        raise argparse.ArgumentTypeError(f"{text!r} is no duration: say 90s, 30m, 2h, 1d, 1h30m")
    days, hours, minutes, secs = (int(g or 0) for g in found.groups())
    return int(timedelta(days=days, hours=hours, minutes=minutes, seconds=secs).total_seconds())


def when(text: str, now: datetime | None = None) -> str | None:
    """A time as the API takes it (ISO 8601 with its offset): `now`, `+DURATION` from now
    (`-DURATION`: ago), an ISO time (local when it names no offset), or `none` (None: clear
    it)."""
    now = now or datetime.now(timezone.utc)
    if text == CLEAR:
        return None
    if text == "now":
        return now.isoformat()
    if text[:1] in "+-" and text[1:2].isdigit():
        sign = 1 if text[0] == "+" else -1
        return (now + sign * timedelta(seconds=seconds(text[1:]))).isoformat()
    try:
        return parse(text).astimezone().isoformat()
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is no time: say an ISO time (2026-12-24T18:00, +01:00 for an offset), "
            f"now, +2h (from now) or {CLEAR}") from None


def parse(iso: str) -> datetime:
    """An ISO time, `Z` for UTC included (the API's; Python before 3.11 reads no `Z`)."""
    return datetime.fromisoformat(iso[:-1] + "+00:00" if iso.endswith("Z") else iso)


def names(text: str) -> list[str]:
    return [name.strip() for name in text.split(",") if name.strip()]


def quota(text: str) -> tuple[str, str, int]:
    """MODE=N/h (per hour) or MODE=N (in the whole contest), per user and problem."""
    mode, _, cap = text.partition("=")
    per_hour = cap.endswith("/h")
    cap = cap.removesuffix("/h")
    if mode not in SUBMISSION_MODES or not cap.isdigit():
        raise argparse.ArgumentTypeError(
            f"{text!r}: say MODE=N/h or MODE=N (per user and problem, in an hour or in all), "
            f"MODE one of {', '.join(SUBMISSION_MODES)}; 0 refuses the mode")
    return mode, "per_hour" if per_hour else "per_contest", int(cap)


def fields(args: argparse.Namespace, stored=lambda: {}) -> dict:
    """The fields the options set (only those given: an edit changes nothing else);
    `stored()`: the contest as it is, for what counts from a time the options do not give."""
    body = {name: getattr(args, name) for name in ("title", "problems", "languages", "device")
            if getattr(args, name) is not None}
    body.update({TIMES[option]: getattr(args, option) for option in TIMES
                 if getattr(args, option) is not ...})
    body.update({field: getattr(args, option) for option, field in SWITCHES.items()
                 if getattr(args, option) is not None})
    if args.duration is not None:
        start = body.get("starts_at") or stored().get("starts_at")
        if start is None:
            raise CommandError("--duration counts from --start: give --start too")
        body["ends_at"] = (parse(start)
                           + timedelta(seconds=args.duration)).isoformat()
    if args.freeze_before_end is not None:
        end = body.get("ends_at") or stored().get("ends_at")
        if end is None:
            raise CommandError("--freeze-before-end counts back from the end: give --end or "
                               "--duration too")
        body["freeze_at"] = (parse(end)
                             - timedelta(seconds=args.freeze_before_end)).isoformat()
    if args.window is not None:
        body["window_s"] = args.window
    if args.thaw_after_end is not None:
        body["thaw_after_end_s"] = args.thaw_after_end
    if args.quota:
        quotas: dict[str, dict] = {}
        for mode, cap, value in args.quota:
            quotas.setdefault(mode, {})[cap] = value
        body["quotas"] = quotas
    return body


def cmd_create(args: argparse.Namespace) -> int:
    if not args.problems:
        raise CommandError("a contest needs its problems: --problems a,b")
    body = {"slug": args.slug, "title": args.title or args.slug, **fields(args)}
    client = make_client(args)
    client.call("POST", "/api/contests", body=body)
    print(f"contest {args.slug} created")
    return show(client.call("GET", f"/api/contests/{args.slug}").json())


def cmd_edit(args: argparse.Namespace) -> int:
    client = make_client(args)
    body = fields(args, lambda: client.call("GET", f"/api/contests/{args.slug}").json())
    if not body:
        raise CommandError("nothing to change: give the options to set (kjudge contest edit -h)")
    return show(client.call("PATCH", f"/api/contests/{args.slug}", body=body).json())


def cmd_list(args: argparse.Namespace) -> int:
    rows = make_client(args).call("GET", "/api/contests").json()
    if not rows:
        print("no contests")
        return EXIT_OK
    print(f"{'slug':<16} {'state':<12} {'starts (UTC)':<17} {'ends (UTC)':<17} {'device':<10} "
          "problems")
    for c in rows:
        print(f"{c['slug'][:16]:<16} {c['state']:<12} {_short(c['starts_at']):<17} "
              f"{_short(c['ends_at']):<17} {c['device'][:10]:<10} {', '.join(c['problems'])}")
    return EXIT_OK


def cmd_show(args: argparse.Namespace) -> int:
    return show(make_client(args).call("GET", f"/api/contests/{args.slug}").json())


def cmd_unfreeze(args: argparse.Namespace) -> int:
    make_client(args).call("POST", f"/api/contests/{args.slug}/unfreeze")
    print(f"contest {args.slug}: the final board is published")
    return EXIT_OK


def show(contest: dict) -> int:
    """A contest's fields, one a line."""
    print(f"{contest['slug']}: {contest['title']} ({contest['state'].replace('_', ' ')}"
          f"{', frozen' if contest.get('frozen') else ''})")
    for name, value in contest.items():
        if name not in ("slug", "title", "state", "frozen"):
            shown = ", ".join(value) if isinstance(value, list) else (
                "-" if value is None else value)
            print(f"  {name:<14} {shown}")
    return EXIT_OK


def _short(iso: str | None) -> str:
    return "-" if not iso else parse(iso).astimezone(
        timezone.utc).strftime("%Y-%m-%d %H:%M")


def register(sub) -> None:
    c = sub.add_parser("contest", help="contests: create, edit, list, show, unfreeze "
                       "(organizers)").add_subparsers(dest="action", required=True)
    create = c.add_parser("create", help="a new contest (its problems are required)",
                          description=__doc__)
    create.add_argument("slug")
    edit = c.add_parser("edit", help="change what the options give (nothing else)",
                        description=__doc__)
    edit.add_argument("slug")
    for p, func in ((create, cmd_create), (edit, cmd_edit)):
        _field_options(p)
        p.set_defaults(func=func)
    listed = c.add_parser("list", help="every contest you can see, with its state")
    listed.set_defaults(func=cmd_list)
    shown = c.add_parser("show", help="one contest's fields")
    shown.add_argument("slug")
    shown.set_defaults(func=cmd_show)
    unfreeze = c.add_parser("unfreeze", help="publish a frozen contest's final board now")
    unfreeze.add_argument("slug")
    unfreeze.set_defaults(func=cmd_unfreeze)
    for p in (create, edit, listed, shown, unfreeze):
        client_args(p)


def _field_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--title")
    p.add_argument("--problems", type=names, help="problem slugs, in order: a,b,c")
    p.add_argument("--languages", type=names,
                   help="allowed languages (default: each problem's own): triton,cuda")
    p.add_argument("--device", help="where it is judged: cpu, cuda, maca, or a model after a "
                   "dot where workers are per model (cuda.h100); default cpu")
    for option in TIMES:
        p.add_argument(f"--{option}", type=when, default=...,
                       help=f"its {option} time: ISO, now, +2h, or {CLEAR}")
    p.add_argument("--duration", type=seconds, help="the end as --start plus this: 2h, 90m")
    p.add_argument("--freeze-before-end", type=seconds,
                   help="the freeze as the end less this: 1h freezes the last hour")
    p.add_argument("--thaw-after-end", type=seconds, help="the thaw as the end plus this")
    p.add_argument("--window", type=seconds, help="per-user windows of this length: each "
                   "contestant starts when they choose (by the end)")
    p.add_argument("--quota", type=quota, action="append",
                   help="MODE=N/h or MODE=N, per user and problem (repeat for more)")
    for option in SWITCHES:
        p.add_argument(f"--{option.replace('_', '-')}", dest=option,
                       action=argparse.BooleanOptionalAction, default=None)
