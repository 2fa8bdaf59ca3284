"""`kjudge`'s local commands, run on this machine with the server's own harness: judge a source,
compare two records, validate, list, scaffold and import problems, check a sandbox image, show
the settings.

Exit codes: 0 accepted / fine, 1 any other verdict / a failure or regression, 2 bad input.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from judge.settings import settings

# The judging, problem and sandbox modules are imported by the commands that use them: the
# client commands (status, submit, leaderboard, ...) start without them (~0.2 s of imports
# here, torch's 2 s aside), and an unknown language or sandbox is named by the registry itself.

EXIT_OK, EXIT_FAIL, EXIT_BAD_INPUT = 0, 1, 2


class BadInput(Exception):
    pass


def problems_root() -> Path:
    return settings().problems_dir


def _load(path: str):
    from judge.problem.schema import ProblemError, load_problem

    try:
        return load_problem(path)
    except ProblemError as exc:
        issues = "\n".join(f"  {i}" for i in exc.issues)
        raise BadInput(f"invalid problem {exc.path}:\n{issues}") from None


def cmd_judge(args: argparse.Namespace) -> int:
    from judge.host.device import DeviceUnavailable, detect
    from judge.host.sandbox import sandbox_for
    from judge.judging import report
    from judge.judging.warm import Slot, startup_env
    from judge.languages import UnknownLanguage, get_language, infer_language

    problem = _load(args.problem)
    source_path = Path(args.source)
    if not source_path.is_file():
        raise BadInput(f"no such file: {source_path}")
    source = source_path.read_text(errors="replace")
    try:
        language = get_language(args.lang) if args.lang else infer_language(source_path, source)
        device = detect(args.device)
        sandbox = sandbox_for(device, args.sandbox)
    except (UnknownLanguage, DeviceUnavailable, ValueError) as exc:
        raise BadInput(str(exc)) from None
    # the harnesses import torch while this process does the same (~2 s each)
    slot = Slot.start(sandbox, startup_env(sandbox, device))
    try:
        # here, not at the top: the judging imports torch, which commands that do not judge
        # (status, submit, leaderboard, ...) never need
        from judge.judging.admission import SubmissionRejected
        from judge.judging.pipeline import JudgeOptions, NotRunnable, judge_source

        options = JudgeOptions(seed=args.seed, timing=not args.no_timing, slot=slot)
        result = judge_source(problem, source, language=language, device=device,
                              sandbox=sandbox, options=options)
    except (SubmissionRejected, NotRunnable, ValueError) as exc:
        raise BadInput(str(exc)) from None
    finally:
        if not slot.taken:
            slot.close()
    result.requested = {"language": args.lang or "inferred", "device": args.device or "auto",
                        "sandbox": args.sandbox or settings().sandbox}
    if args.csv:
        report.write_csv(result, Path(args.csv))
    print(report.to_json(result) if args.json else report.table(result))
    return EXIT_OK if result.accepted else EXIT_FAIL


def cmd_validate(args: argparse.Namespace) -> int:
    from judge.host.device import DeviceUnavailable, detect
    from judge.host.sandbox import sandbox_for
    from judge.problem.schema import ProblemError, load_problem
    from judge.tooling.selftest import run_self_tests

    failed = False
    try:
        device = detect(args.device)
        sandbox = sandbox_for(device, args.sandbox)
    except (DeviceUnavailable, ValueError) as exc:
        raise BadInput(str(exc)) from None
    for path in args.paths:
        try:
            problem = load_problem(path)
        except ProblemError as exc:
            print(f"{exc.path}: INVALID")
            for issue in exc.issues:
                print(f"  {issue}")
            failed = True
            continue
        print(f"{problem.path}: schema ok ({len(problem.tests)} test points, version "
              f"{problem.version}); self-tests on {device.torch_name}:")
        if args.schema_only:
            continue
        for outcome in run_self_tests(problem, device, sandbox):
            got = outcome.got.value if outcome.got else "-"
            print(f"  {outcome.status:<4} expected {outcome.expected.value:<3} got {got:<3} "
                  f"{outcome.path}  {outcome.wall_s:.1f} s  {outcome.detail}".rstrip())
            failed = failed or outcome.status == "FAIL"
    return EXIT_FAIL if failed else EXIT_OK


def cmd_list(args: argparse.Namespace) -> int:
    from judge.problem.schema import ProblemError, load_problem, problem_folders

    print(f"{'slug':<20} {'title':<28} {'tests':>5}  languages")
    for folder in problem_folders(Path(args.dir)):
        try:
            problem = load_problem(folder)
        except ProblemError as exc:
            print(f"{folder.name:<20} INVALID: {len(exc.issues)} issue(s); run kjudge problem "
                  "validate")
            continue
        print(f"{problem.slug:<20} {problem.spec.title[:28]:<28} {len(problem.tests):>5}  "
              f"{', '.join(problem.spec.languages)}")
    return EXIT_OK


def cmd_new(args: argparse.Namespace) -> int:
    from judge.problem.scaffold import new_problem

    try:
        path = new_problem(args.slug, Path(args.dir))
    except ValueError as exc:
        raise BadInput(str(exc)) from None
    print(f"created {path}; edit problem.yaml, then run: kjudge problem validate {path}")
    return EXIT_OK


def cmd_import(args: argparse.Namespace) -> int:
    from judge.problem.importers import discover
    from judge.problem.importers.draft import ImportFailure
    from judge.tooling.importing import ImportRequest, import_many, import_one, report, summary

    source = Path(args.source)
    request = ImportRequest(args.format, Path(args.dir), Path(args.out) if args.out else None,
                            force=args.force, draft=args.draft, check=not args.no_check,
                            sandbox=args.sandbox)
    try:
        sources = discover(args.format, source)
    except ImportFailure as exc:
        raise BadInput(f"cannot import {args.source}: {exc}") from None
    if sources == [source]:
        outcome = import_one(request, source)
        if outcome.status == "refused":
            raise BadInput(f"cannot import {args.source}: {outcome.detail}")
        print(outcome.line())
        for note in outcome.notes:
            print(f"  note: {note}")
        if outcome.status == "imported":
            print(f"next: kjudge problem validate {outcome.path}")
        return EXIT_OK
    if request.out is not None:
        raise BadInput(f"{args.source} holds {len(sources)} problems: --out names one folder; "
                       "use --dir")
    outcomes = report(import_many(request, sources, jobs=args.jobs), print)
    print(f"{len(outcomes)} problems: {summary(outcomes)}")
    return EXIT_FAIL if any(o.status == "refused" for o in outcomes) else EXIT_OK


def cmd_compare(args: argparse.Namespace) -> int:
    from judge.judging import report

    try:
        base = json.loads(Path(args.baseline).read_text())
        cand = json.loads(Path(args.candidate).read_text())
        rows = report.compare(base, cand, args.fail_on_regression)
    except (OSError, ValueError) as exc:
        raise BadInput(f"cannot compare: {exc}") from None
    print(report.compare_markdown(rows))
    return report.compare_exit_code(rows)


def cmd_image_check(args: argparse.Namespace) -> int:
    from judge.languages import LANGUAGES
    from sandbox.docker import ImageNotPinned, check_image

    packages = image_packages(Path(args.problems))
    tools = [x.default_compiler for x in LANGUAGES.values() if not x.is_python]
    try:
        found = check_image(args.image, packages, tools, host_python=args.host_python)
    except (ImageNotPinned, RuntimeError) as exc:
        raise BadInput(str(exc)) from None
    except Exception as exc:  # engine unreachable, image missing
        raise BadInput(f"cannot inspect {args.image}: {exc}") from None
    for key, value in found.items():
        print(f"{key:<10} {value}")
    return EXIT_OK


def image_packages(problems: Path) -> list[str]:
    """What a contest image must hold: torch, every language's package, and the packages the
    problems under `problems` declare."""
    from judge.languages import LANGUAGES

    return ["torch", *(x.packages[0] for x in LANGUAGES.values() if x.packages),
            *_declared_packages(problems)]


def _declared_packages(root: Path) -> list[str]:
    """The packages the problems under `root` declare (their references import them)."""
    from judge.problem.schema import ProblemError, load_problem, problem_folders

    found: set[str] = set()
    for folder in problem_folders(root):
        try:
            found.update(load_problem(folder).spec.packages)
        except ProblemError:
            continue  # `kjudge problem validate` says why
    return sorted(found)


def cmd_settings(args: argparse.Namespace) -> int:
    from dataclasses import fields

    from judge import settings as settings_module

    if args.markdown:
        print(settings_module.markdown_table(), end="")
        return EXIT_OK
    current = settings()
    for f in fields(current):
        print(f"{f.metadata['env']:<30} {getattr(current, f.name)}")
    return EXIT_OK


def device_and_sandbox(p: argparse.ArgumentParser) -> None:
    p.add_argument("--device", help="cpu, cuda or cuda:N (default: the GPU if visible)")
    p.add_argument("--sandbox", help="a backend of sandbox/, or auto: the strongest one "
                                     "available (default: KJUDGE_SANDBOX, else auto)")


def register(sub) -> None:
    """The local commands' parsers, under `kjudge`'s subcommands."""
    for add in (_judge_parser, _compare_parser, _problem_parser, _image_parser,
                _settings_parser):
        add(sub)


def _judge_parser(sub) -> None:
    j = sub.add_parser("judge", help="judge a source against a problem folder")
    j.add_argument("problem", help="problem folder")
    j.add_argument("source", help="the run_kernel source file")
    j.add_argument("--lang", help="a language of judge/languages (default: inferred from the "
                                  "file; an unknown name is told the known ones)")
    j.add_argument("--json", action="store_true", help="print the full record as JSON")
    j.add_argument("--csv", metavar="FILE", help="write schema-v1 CSV rows")
    j.add_argument("--no-timing", action="store_true", help="check correctness only")
    j.add_argument("--seed", type=int, help=argparse.SUPPRESS)  # reproduce a judging locally
    device_and_sandbox(j)
    j.set_defaults(func=cmd_judge)


def _compare_parser(sub) -> None:
    c = sub.add_parser("compare", help="compare two `kjudge judge --json` records")
    c.add_argument("baseline")
    c.add_argument("candidate")
    c.add_argument("--fail-on-regression", type=float, default=5.0, metavar="PCT")
    c.set_defaults(func=cmd_compare)


def _problem_parser(sub) -> None:
    p = sub.add_parser("problem", help="problem folders").add_subparsers(dest="action",
                                                                         required=True)
    v = p.add_parser("validate", help="check schema and self-test submissions")
    v.add_argument("paths", nargs="+")
    v.add_argument("--schema-only", action="store_true")
    device_and_sandbox(v)
    v.set_defaults(func=cmd_validate)
    ls = p.add_parser("list", help="list the problems in a folder")
    ls.add_argument("--dir", default=str(problems_root()))
    ls.set_defaults(func=cmd_list)
    n = p.add_parser("new", help="scaffold a problem folder")
    n.add_argument("slug")
    n.add_argument("--dir", default=str(problems_root()))
    n.set_defaults(func=cmd_new)
    from judge.problem.importers import FORMATS
    im = p.add_parser("import", help="a problem folder from another format")
    im.add_argument("--from", dest="format", required=True, choices=FORMATS)
    im.add_argument("source", help="the format's file or folder (see docs/problems.md, 'Adding a problem')")
    im.add_argument("--out", help="the folder to write (default: --dir/<the problem's name>)")
    im.add_argument("--dir", default=str(problems_root()))
    im.add_argument("--draft", action="store_true",
                    help="keep a folder that does not validate yet, to finish by hand")
    im.add_argument("--force", action="store_true", help="import again what is already there")
    im.add_argument("--no-check", action="store_true",
                    help="do not judge the baseline on the CPU before keeping the folder")
    im.add_argument("--jobs", type=int, help="problems imported at once (a folder of them)")
    im.add_argument("--sandbox", help="the backend the baseline is judged in (default: the "
                    "setting)")
    im.set_defaults(func=cmd_import)
    from judge.commands import client
    rl = p.add_parser("reload", help="the server reads its problem folders again: a new or "
                      "changed folder is served only then (admin, over the API)")
    client.client_args(rl)
    rl.set_defaults(func=client.cmd_problem_reload)
    sy = p.add_parser("sync", help="send a problem folder to the server, which serves it once "
                      "it validates (admin, over the API; for a server on another host)")
    sy.add_argument("folder")
    sy.add_argument("--slug", help="the problem's name there (default: the folder's)")
    client.client_args(sy)
    sy.set_defaults(func=client.cmd_problem_sync)


def _image_parser(sub) -> None:
    img = sub.add_parser("image", help="sandbox images").add_subparsers(dest="action",
                                                                         required=True)
    ic = img.add_parser("check", help="versions inside an image (pinned by digest)")
    ic.add_argument("image", help="name@sha256:… or sha256:…")
    ic.add_argument("--problems", default=str(problems_root()),
                    help="the packages these problems declare are checked too")
    ic.add_argument("--host-python", action="store_true",
                    help="bind the host's Python (test images made with docker import)")
    ic.set_defaults(func=cmd_image_check)


def _settings_parser(sub) -> None:
    st = sub.add_parser("settings", help="the settings in effect (KJUDGE_* variables)")
    st.add_argument("--markdown", action="store_true", help="the table of deploy/README.md")
    st.set_defaults(func=cmd_settings)
