"""Rendering a judging: the readable table, schema-v1 CSV rows, and the comparison of two judgings."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass
from pathlib import Path

from judge.judging.record import JudgeResult

CSV_SCHEMA_VERSION = 1


def _num(value: float | None, digits: int = 4) -> str:
    if value is None:
        return "-"
    return f"{value:.{digits}g}"


def table(result: JudgeResult) -> str:
    head = f"{'test':<16} {'verdict':<7} {'matched':>9} {'max_abs':>9} {'time_ms':>10} " \
           f"{'base_ms':>10} {'speedup':>8} {'floor_us':>8} {'spread':>7} {'GB/s':>8}"
    lines = [head, "-" * len(head)]
    for t in result.tests:
        lines.append(
            f"{t.name[:16]:<16} {str(t.verdict or '-'):<7} {_num(t.matched_ratio, 6):>9} "
            f"{_num(t.max_abs_err, 3):>9} {_num(t.time_ms):>10} {_num(t.baseline_ms):>10} "
            f"{_num(t.speedup, 3):>8} "
            f"{_num(t.floor_ms * 1000 if t.floor_ms is not None else None, 3):>8} "
            f"{(f'{t.rel_spread:.1%}' if t.rel_spread is not None else '-'):>7} "
            f"{_num(t.gbps, 4):>8}"
        )
        if t.resolvable is False:
            lines.append(f"    not resolvable: the harness's own work ({_num(t.harness_ms * 1000, 3)} "
                         f"us a call) does not fit in the judge's resolution of these calls "
                         f"(from {_num(t.resolvable_from_ms * 1000, 3)} us); "
                         + ("counted at the baseline's time" if t.counted_speedup
                            is not None else "not counted in the score"))
        elif t.counted_speedup is not None:
            lines.append(f"    counted as {_num(t.counted_speedup, 3)}x, the next best point's: "
                         "no single point carries the aggregate")
        if t.verdict is not None and t.verdict.value != "AC" and t.message:
            lines.append("    " + t.message.strip().splitlines()[-1][:200])
    lines.append("")
    lines.append(
        f"verdict {result.verdict}  score {result.score:.2f}  speedup {_num(result.speedup, 4)}  "
        f"time {_num(result.time_ms)} ms  language {result.language}  "
        f"wall {result.wall_s:.1f} s"
    )
    if result.memory_mb is not None:
        lines.append(f"memory {_num(result.memory_mb)} MB ({result.memory_measure})")
    if result.phases:
        lines.append("phases: " + ", ".join(f"{name} {seconds:.2f} s"
                                            for name, seconds in result.phases.items())
                     + f"; judge overhead {result.overhead_s:.2f} s of {result.wall_s:.2f} s")
    if result.message:
        lines.append(result.message.strip())
    if result.verdict.value == "CE" and result.compile_log:
        lines.append(result.compile_log.strip())
    lines.extend(f"flag: {flag}" for flag in result.flags)
    lines.extend(_applied_lines(result.applied))
    return "\n".join(lines)


def _gpu_state(state: dict | None) -> str:
    if not state:
        return "-"
    text = (f"SM {state.get('sm_clock_mhz')} MHz, memory {state.get('memory_clock_mhz')} MHz, "
            f"{state.get('temperature_c')} C, {state.get('power_w')} W")
    throttled = state.get("throttle_reasons")
    return text + (f", throttled: {', '.join(throttled)}" if throttled else "")


def _applied_lines(applied: dict) -> list[str]:
    """What actually ran: device and sandbox, and on a GPU the card's state around the timing."""
    if not applied:
        return []
    lines = [f"ran on {applied.get('device_model')} ({applied.get('device')}), "
             f"sandbox {applied.get('sandbox')}, {applied.get('toolchain')}"]
    setup = applied.get("timing_setup") or {}
    if setup.get("empty_call_ms") is not None:
        lines.append(f"clock overhead (a warm empty call): {setup['empty_call_ms'] * 1000:.2f} us")
    for role, memory in (applied.get("gpu_memory") or {}).items():
        limit = f" (limit {memory['limit_mb']} MiB)" if memory.get("limit_mb") else ""
        lines.append(f"gpu memory of the {role}: peak {memory['peak_mb']} MiB{limit}")
    gpu = applied.get("gpu_state")
    if gpu:
        lines.append(f"gpu before timing: {_gpu_state(gpu.get('before'))}")
        lines.append(f"gpu after timing:  {_gpu_state(gpu.get('after'))}")
    return lines


def to_json(result: JudgeResult) -> str:
    return json.dumps(result.to_dict(), indent=2, default=str)


def csv_rows(result: JudgeResult) -> list[dict]:
    """Schema v1 (SPEC §3): one row per test point; a failing point is recorded, not dropped."""
    params = sorted({k for t in result.tests for k in t.params})
    rows = []
    for t in result.tests:
        ok = t.verdict is not None and t.verdict.value == "AC"
        row = {"schema_version": CSV_SCHEMA_VERSION, "api": result.problem,
               "language": result.language, "case": t.name}
        row.update({p: t.params.get(p, "") for p in params})
        row.update({
            "status": "ok" if ok else "failed",
            "time_ms": t.time_ms if t.time_ms is not None else "",
            "baseline_ms": t.baseline_ms if t.baseline_ms is not None else "",
            "speedup": t.speedup if t.speedup is not None else "",
            "bandwidth_GB_s": t.gbps if t.gbps is not None else "",
            "tflops": t.tflops if t.tflops is not None else "",
            "error_type": "" if ok else str(t.verdict or "not_run"),
            "error": "" if ok else (t.message.strip().splitlines() or [""])[-1][:300],
        })
        rows.append(row)
    return rows


def csv_text(result: JudgeResult) -> str:
    rows = csv_rows(result)
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(rows[0]) if rows else ["schema_version"])
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()


def write_csv(result: JudgeResult, path: Path) -> None:
    path.write_text(csv_text(result))


# -- comparison of two judgings ------------------------------------------------------------
class InvalidInput(ValueError):
    pass


@dataclass
class Row:
    name: str
    status: str  # compared | regression | candidate_failed | recovered | both_failed | missing | new
    base_ms: float | None = None
    cand_ms: float | None = None

    @property
    def change(self) -> float | None:
        if self.base_ms and self.cand_ms:
            return self.cand_ms / self.base_ms - 1
        return None


def _tests(data: dict, label: str) -> dict[str, dict]:
    if not isinstance(data, dict) or not isinstance(data.get("tests"), list):
        raise InvalidInput(f"{label}: not a judging JSON (expected a `tests` list)")
    names = [t.get("name") for t in data["tests"]]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise InvalidInput(f"{label}: duplicate test point(s) {', '.join(duplicates)}")
    return {t["name"]: t for t in data["tests"]}


def compare(base: dict, cand: dict, threshold_pct: float) -> list[Row]:
    a, b = _tests(base, "baseline"), _tests(cand, "candidate")
    rows = []
    for name in [*a, *(n for n in b if n not in a)]:
        if name not in b:
            rows.append(Row(name, "missing", a[name].get("time_ms")))
            continue
        if name not in a:
            rows.append(Row(name, "new", None, b[name].get("time_ms")))
            continue
        ok_a, ok_b = a[name].get("verdict") == "AC", b[name].get("verdict") == "AC"
        row = Row(name, "compared", a[name].get("time_ms"), b[name].get("time_ms"))
        if not ok_a and not ok_b:
            row.status = "both_failed"
        elif not ok_b:
            row.status = "candidate_failed"
        elif not ok_a:
            row.status = "recovered"
        elif row.change is not None and row.change * 100 > threshold_pct:
            row.status = "regression"
        rows.append(row)
    return rows


def compare_markdown(rows: list[Row]) -> str:
    lines = ["| test point | status | baseline ms | candidate ms | change |",
             "| --- | --- | ---: | ---: | ---: |"]
    for r in rows:
        change = f"{r.change:+.1%}" if r.change is not None else "-"
        lines.append(f"| {r.name} | {r.status} | {_num(r.base_ms)} | {_num(r.cand_ms)} | {change} |")
    counts = {s: sum(r.status == s for r in rows) for s in dict.fromkeys(r.status for r in rows)}
    lines.append("")
    lines.append(", ".join(f"{n} {s}" for s, n in counts.items()))
    return "\n".join(lines)


def compare_exit_code(rows: list[Row]) -> int:
    return 1 if any(r.status in ("regression", "candidate_failed") for r in rows) else 0


def side_by_side(first: dict, second: dict) -> str:
    """Two submission records per test point: verdicts, times and speedups side by side, the
    change in time, and their totals (what the compare page shows)."""
    a, b = ({t["name"]: t for t in record.get("tests") or []} for record in (first, second))
    x, y = f"#{first.get('id')}", f"#{second.get('id')}"
    lines = [f"| test point | {x} | {x} ms | {x} speedup | {y} | {y} ms | {y} speedup | change |",
             "| --- | --- | ---: | ---: | --- | ---: | ---: | ---: |"]

    def cells(point: dict) -> str:
        return (f"{point.get('verdict') or '-'} | {_num(point.get('time_ms'))} | "
                f"{_num(point.get('speedup'))}")

    for name in [*a, *(n for n in b if n not in a)]:
        p, q = a.get(name, {}), b.get(name, {})
        change = Row(name, "", p.get("time_ms"), q.get("time_ms")).change
        lines.append(f"| {name} | {cells(p)} | {cells(q)} | "
                     f"{f'{change:+.1%}' if change is not None else '-'} |")
    lines.append(f"| total | {cells(first)} | {cells(second)} | |")
    return "\n".join(lines)
