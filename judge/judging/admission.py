"""Admission: whether a submission may be judged at all, decided in one place before anything is
queued or compiled. The API (judge/service/submissions.py) and `kjudge judge` (pipeline.judge_source)
both ask `admit`; what it refuses is the submitter's mistake (a 4xx, or bad input), never a
judge's failure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from judge.languages import Language, UnknownLanguage, get_language, infer_language
from judge.problem.schema import Problem


class SubmissionRejected(ValueError):
    """The request itself is wrong; `status` is the HTTP status that says why."""

    def __init__(self, message: str, status: int = 422):
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Terms:
    """What a problem admits (the service keeps these on its problem rows)."""

    slug: str
    languages: tuple[str, ...]
    source_kb: int
    devices: tuple[str, ...] | None  # device kinds with test points; None: not known

    @classmethod
    def of(cls, problem: Problem) -> Terms:
        return cls(problem.slug, tuple(problem.spec.languages), problem.spec.limits.source_kb,
                   device_kinds(problem))


def device_kinds(problem: Problem) -> tuple[str, ...]:
    return tuple(sorted({kind for test in problem.tests for kind in test.devices}))


@dataclass(frozen=True)
class Admission:
    language: Language
    # whether it can run on the device at hand; a compile check (`kjudge judge` on a host
    # without the language's device) still compiles what cannot run
    runnable: bool = True
    why_not: str = ""


def admit(terms: Terms, language: str | Language | None, source: str, device_kind: str, *,
          filename: str = "submission", allowed: Sequence[str] | None = None,
          max_source_kb: int | None = None, compile_check: bool = False) -> Admission:
    """Admit a source for a problem judged on `device_kind` (cpu, cuda, maca); `allowed` narrows
    the languages (a contest's), `max_source_kb` is the server's own cap. Raises
    SubmissionRejected; with `compile_check` a device mismatch is reported, not raised."""
    chosen = _language(language, filename, source)
    permitted = [x for x in terms.languages if allowed is None or x in allowed]
    if chosen.name not in permitted:
        raise SubmissionRejected(f"{chosen.name} is not allowed for {terms.slug}; allowed: "
                                 f"{', '.join(permitted) or 'none'}")
    if not source.strip():
        raise SubmissionRejected("the source is empty")
    size_kb = len(source.encode()) / 1024
    limit = min(terms.source_kb, max_source_kb or terms.source_kb)
    if size_kb > limit:
        raise SubmissionRejected(f"the source is {size_kb:.0f} KiB; the limit for {terms.slug} "
                                 f"is {limit} KiB", status=413)
    why_not = ""
    if device_kind not in chosen.devices:
        why_not = (f"{chosen.name} submissions run on {' or '.join(chosen.devices)}; "
                   f"{terms.slug} is judged on the {device_kind} device here")
    elif terms.devices is not None and device_kind not in terms.devices:
        why_not = f"{terms.slug} has no test point for the {device_kind} device"
    if why_not and not compile_check:
        raise SubmissionRejected(why_not)
    return Admission(chosen, not why_not, why_not)


def _language(language: str | Language | None, filename: str, source: str) -> Language:
    try:
        if isinstance(language, Language):
            return language
        if language:
            return get_language(language)
        return infer_language(Path(filename), source)
    except UnknownLanguage as exc:
        raise SubmissionRejected(str(exc)) from None
