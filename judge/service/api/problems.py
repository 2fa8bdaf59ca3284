"""The API's problem routes: the list, one problem's statement, signature and templates, and
reloading the problem folders."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from sqlalchemy import select

from judge import signature
from judge.languages import get_language
from judge.problem.schema import ProblemError, load_problem
from judge.service import boards, catalog, contests, errors, uploads
from judge.service.api.views import render_markdown
from judge.service.deps import AuditDep, OptionalUserDep, SessionDep, SettingsDep
from judge.service.models import ProblemRow

router = APIRouter(tags=["problems"])


@router.get("/api/problems")
def problems(s: SessionDep, user: OptionalUserDep = None) -> list[dict]:
    """The active problems (for all but organizers, none that only hidden contests hold)."""
    hidden = set() if user is not None and user.is_admin else contests.hidden_problems(s)
    rows = [p for p in s.scalars(select(ProblemRow).where(ProblemRow.active)
                                 .order_by(ProblemRow.slug)) if p.slug not in hidden]
    stats = boards.problem_stats(s, user)
    return [{"slug": p.slug, "title": p.title, "languages": p.languages,
             "version": p.version, **stats.get(p.slug, {"solvers": 0, "best_score": None})}
            for p in rows]


@router.get("/api/problems/{slug}")
def problem(slug: str, s: SessionDep, user: OptionalUserDep = None) -> dict:
    row = catalog.get_shown_problem(s, slug, user)
    try:
        loaded = load_problem(row.path)
    except ProblemError as exc:
        raise errors.ServiceError(503, f"problem {slug} is being fixed: {exc}") from None
    spec = loaded.spec
    templates = {}
    for language in spec.languages:
        path = loaded.template_path(language)
        templates[language] = {"file": path.name, "source": path.read_text()}
    statement = loaded.path / "statement.md"
    text = statement.read_text() if statement.is_file() else ""
    return {
        "slug": row.slug, "title": spec.title, "version": loaded.version,
        "statement": text, "statement_html": render_markdown(text),
        "languages": spec.languages,
        "lexers": {lang: get_language(lang).lexer for lang in spec.languages},
        "signature": {lang: get_language(lang).declaration(spec.signature)
                      for lang in spec.languages},
        "arguments": signature.describe(spec.signature),
        "tolerance": spec.tolerance.model_dump(), "checker": spec.checker.name,
            "checker_args": spec.checker.args,
        "limits": spec.limits.model_dump(), "scoring": spec.scoring.model_dump(),
        "templates": templates,
        "samples": [{"name": t.name, "params": t.params, "devices": list(t.devices)}
                    for t in loaded.tests if t.sample],
        "test_points": len(loaded.tests),
    }


@router.post("/api/problems/reload")
def reload_problems(s: SessionDep, config: SettingsDep, audit_log: AuditDep) -> dict:
    """Read the problem folders again: a new or changed folder is served from now on."""
    invalid = catalog.sync_problems(s, config)
    loaded = s.scalars(select(ProblemRow.slug).where(ProblemRow.active)).all()
    audit_log("problems.reload", "problems", loaded=sorted(loaded),
              invalid=sorted(invalid) or None)
    return {"loaded": sorted(loaded), "invalid": invalid}


@router.put("/api/problems/{slug}" + uploads.ROUTE_SUFFIX)
async def upload_problem(slug: str, request: Request, s: SessionDep, config: SettingsDep,
                         audit_log: AuditDep) -> dict:
    """A problem folder as a gzipped tar (`kjudge problem sync`; body up to 64 MiB): put in
    place of the folder `slug` once it unpacks safely and validates, then the folders are
    reloaded (as /api/problems/reload answers)."""
    archive = await request.body()
    await run_in_threadpool(uploads.install, config.problems_dir, slug, archive)
    audit_log("problems.upload", slug, bytes=len(archive))
    return await run_in_threadpool(reload_problems, s, config, audit_log)
