"""Nsight Compute over one call of a submission: a `profile` submission (where a contest allows
them) runs one sample point's call under `ncu` and gets its summary and report file back.

The submission's harness is started under ncu with profiling off (`--profile-from-start off`);
after the point is checked, one more call runs between cudaProfilerStart and cudaProfilerStop
(the harness's `profile` request), the harness exits and ncu writes its report and its
per-kernel summary (CSV, in its log file) into the run's scratch folder. Both are read from
there as what they are: files the contestant's process could have written. They go back only
to their submitter (and organizers), size-capped, read without following links.
"""

from __future__ import annotations

import csv
import io
import os
import stat
from dataclasses import dataclass
from pathlib import Path

REPORT = "profile.ncu-rep"  # ncu's --export appends the suffix to the name it is given
LOG = "ncu.log"
MAX_ROWS = 500  # summary rows kept in the record


@dataclass
class Profiling:
    """What a profile judging asks for: ncu's command, where the report goes on the host, how
    long ncu may take, and how large a report may be."""

    ncu: str
    out_dir: Path
    timeout_s: float = 300.0
    max_report_bytes: int = 32 * 2**20


def folders(ncu: str, keep_out: Path) -> list[Path]:
    """The folders the sandbox must show for ncu to run: its own, and where its link leads
    (CUDA's bin/ncu points into the nsight-compute install, with its libraries and sections).
    None may hold `keep_out` (the problem's folder, its secret tests): an ncu set up at the
    root, or beside the problems, is refused rather than shown to the contestant's run."""
    found = list(dict.fromkeys([Path(ncu).parent, Path(ncu).resolve().parent]))
    guarded = Path(keep_out).resolve()
    for folder in found:
        if folder == guarded or folder.resolve() in guarded.parents:
            raise ValueError(f"Nsight Compute's folder {folder} holds the problem's files: "
                             "install ncu apart (KJUDGE_NCU) to profile")
    return found


def wrapper(ncu: str, scratch: str) -> list[str]:
    """The argv prefix that runs the harness under ncu, its files in `scratch` (the sandbox's
    path of the run's scratch folder)."""
    return [ncu, "--profile-from-start", "off", "--target-processes", "all",
            "--export", f"{scratch}/{REPORT.removesuffix('.ncu-rep')}", "--force-overwrite",
            "--log-file", f"{scratch}/{LOG}", "--csv", "--print-summary", "per-kernel"]


def read_file(path: Path, limit: int) -> bytes | None:
    """A regular file of at most `limit` bytes, not through a link nor a FIFO; None
    otherwise."""
    try:  # not blocking: a FIFO the run left there must not hold the judge
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
            return None
        return handle.read(limit + 1)[:limit]


def summary(log: str) -> list[dict]:
    """ncu's per-kernel summary (CSV with a "Kernel Name" and a "Metric Name" column) as rows;
    the lines around it (ncu's ==PROF== notes, the program's) are skipped."""
    lines = log.splitlines()
    start = next((i for i, line in enumerate(lines)
                  if '"Kernel Name"' in line and '"Metric Name"' in line), None)
    if start is None:
        return []
    block = []
    for line in lines[start:]:
        if not line.startswith('"'):
            break
        block.append(line)
    rows = list(csv.DictReader(io.StringIO("\n".join(block))))
    return [{key: value for key, value in row.items() if key} for row in rows[:MAX_ROWS]]


def collect(scratch: Path, profiling: Profiling, point: str) -> dict:
    """After the harness exited: the summary for the record, the report copied to `out_dir`."""
    log = read_file(scratch / LOG, 4 * 2**20)
    report = read_file(scratch / REPORT, profiling.max_report_bytes)
    found = {"point": point, "tool": "ncu", "kernels": summary(log.decode(errors="replace"))
             if log else [], "report": None, "report_bytes": 0}
    if report is not None:
        profiling.out_dir.mkdir(parents=True, exist_ok=True)
        (profiling.out_dir / REPORT).write_bytes(report)
        found.update(report=REPORT, report_bytes=len(report))
    if not found["kernels"]:
        found["note"] = ("Nsight Compute wrote no summary" + (
            f": {log.decode(errors='replace').strip()[-500:]}" if log else ""))
    return found
