"""`kjudge`: judge locally with the server's own harness, validate and scaffold problems, compare.

Also: run the server, and use it. The commands live in judge/commands/, one module per place they run:
local.py (this machine), server.py (the server's host: serve, worker, db, user),
client.py (over the REST API: submit, status, rejudge, ...), contest.py (contests, over the API).

Exit codes: 0 accepted / fine, 1 any other verdict / a failure or regression, 2 bad input.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

from judge import commands
from judge.commands import client, local


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kjudge", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for info in pkgutil.iter_modules(commands.__path__):  # each module adds its own
        importlib.import_module(f"{commands.__name__}.{info.name}").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except local.BadInput as exc:
        print(f"kjudge: {exc}", file=sys.stderr)
        return local.EXIT_BAD_INPUT
    except client.CommandError as exc:
        print(f"kjudge: {exc}", file=sys.stderr)
        return exc.code


if __name__ == "__main__":
    sys.exit(main())


def run() -> None:
    sys.exit(main())
