"""The tree's rooms and their imports: no import circle among the judge's own modules (counting
imports inside functions and under TYPE_CHECKING: a circle hidden that way is still one), and
imports of the judge's own modules inside functions only where they keep a heavy import off a
path that does not need it."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("judge", "sandbox", "checkers")
# modules that import the judge's own modules inside functions, and why
LAZY = {
    "judge.commands.local": "`kjudge`'s client commands start without the judging's imports",
    "judge.commands.server": "the server's commands import the service (SQLAlchemy, FastAPI) "
                             "only when run",
    "judge.commands.client": "`kjudge status` starts in a fraction of the record's imports",
    "judge.tooling.importing": "the reference and the self-tests import torch",
    "judge.service.worker": "a worker's parent process never imports torch (the pipeline)",
}


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _imports(modules: dict[str, Path]) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """Each module's imports of the others (all of them), and those made inside functions."""
    def owner(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    every, inside = defaultdict(set), defaultdict(set)
    for module, path in modules.items():
        tree = ast.parse(path.read_text())
        in_functions = {id(node) for f in ast.walk(tree)
                        if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                        for node in ast.walk(f)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [f"{node.module}.{a.name}" for a in node.names]
            else:
                continue
            for name in names:
                target = owner(name)
                if target and target != module and not module.startswith(target + "."):
                    every[module].add(target)
                    if id(node) in in_functions:
                        inside[module].add(target)
    return every, inside


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The groups of modules that reach each other through their imports."""
    reach = {v: _reachable(graph, v) for v in graph}
    cyclic = {v for v in graph if v in reach[v]}
    groups = {frozenset(w for w in cyclic if w in reach[v] and v in reach[w]) for v in cyclic}
    return sorted(sorted(group) for group in groups)


def _reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), list(graph.get(start, ()))
    while todo:
        v = todo.pop()
        if v not in seen:
            seen.add(v)
            todo.extend(graph.get(v, ()))
    return seen


def test_no_import_circle():
    every, _ = _imports(_modules())
    assert _circles(every) == []


def test_the_circle_finder_finds_one():
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_imports_inside_functions_only_where_they_keep_a_heavy_one_off():
    _, inside = _imports(_modules())
    assert sorted(set(inside) - set(LAZY)) == [], (
        "import these at the top (or say in LAZY why they must wait): "
        + ", ".join(f"{m} -> {sorted(inside[m])}" for m in sorted(set(inside) - set(LAZY))))


def test_every_module_is_named_in_the_readmes_table():
    """ARCHITECTURE.md's "Where things are" names every module of the judge (its migrations and the
    problem template's files aside), so that a newcomer finds each room from there."""
    readme = (ROOT / "ARCHITECTURE.md").read_text()
    section = readme.split("## Where things are", 1)[1].split("\n## ", 1)[0]
    unnamed = [str(path.relative_to(ROOT)) for path in _modules().values()
               if path.name != "__init__.py" and "migrations" not in path.parts
               and "template" not in path.parts
               and path.name not in section and f"`{path.stem}`" not in section]
    assert unnamed == []
