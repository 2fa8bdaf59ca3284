"""A pytest plugin for the device self-test's `gputests` stage (`-p bench.selftest_rows`): each
test's outcome becomes a row of the self-test's table as soon as the test ends, so a stage cut
at its budget still shows which device tests passed (and `--resume` skips those). Writes into
KJUDGE_SELFTEST_OUT; does nothing without it."""

from __future__ import annotations

import os
from pathlib import Path

from bench.gpu_selftest import Status, write_row


def pytest_runtest_logreport(report) -> None:
    out = os.environ.get("KJUDGE_SELFTEST_OUT")
    if not out or not (report.when == "call" or report.failed or report.skipped):
        return
    status = (Status.FAIL if report.failed else Status.SKIP if report.skipped else Status.OK)
    detail = ""
    if report.skipped and isinstance(report.longrepr, tuple):
        detail = str(report.longrepr[2])
    elif report.failed:
        detail = str(report.longrepr).strip().splitlines()[-1][:300] if report.longrepr else ""
    write_row(Path(out), "gputests", report.nodeid, status,
              f"{report.when}: {detail}" if detail else "",
              {}, getattr(report, "duration", None))
