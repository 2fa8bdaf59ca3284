"""docs/api.md, made from the OpenAPI document the server serves: every route with what it does,
its parameters and its body's fields. `python -m judge.service.api.reference >
docs/api.md` writes it; a test fails when the file and the routes disagree."""

from __future__ import annotations

from judge.service.api import create_app

HEADER = """# The REST API

Every route the server serves, made from its OpenAPI document (`GET /openapi.json`; the pages
at `/docs`) by `python -m judge.service.api.reference > docs/api.md`; a test fails when this file
and the routes disagree. Send a token as `Authorization: Bearer TOKEN` (or sign in with
`POST /api/session` for a cookie). Errors are `{"error": "…what to fix…"}` with 400, 401, 403,
404, 405, 409, 413, 422 or 429, and 503 with `Retry-After` while the database is unreachable;
request bodies over 6 × a problem's source limit are refused unread (a problem folder's upload:
64 MiB).
"""
METHODS = ("get", "post", "put", "patch", "delete")
CREDENTIALS = ("header", "cookie")  # every route reads them: said once, above


def markdown(document: dict) -> str:
    lines = [HEADER]
    by_tag: dict[str, list[tuple[str, str, dict]]] = {}
    for path, item in document["paths"].items():
        for method in METHODS:
            if method in item:
                tag = (item[method].get("tags") or ["other"])[0]
                by_tag.setdefault(tag, []).append((path, method, item[method]))
    schemas = document.get("components", {}).get("schemas", {})
    for tag in sorted(by_tag):
        lines.append(f"## {tag}\n")
        for path, method, op in by_tag[tag]:
            lines.append(f"### `{method.upper()} {path}`\n")
            if text := (op.get("description") or op.get("summary") or "").strip():
                lines.append(" ".join(text.split()) + "\n")
            params = [f"`{p['name']}` ({p['in']}{', required' if p.get('required') else ''})"
                      for p in op.get("parameters", []) if p["in"] not in CREDENTIALS]
            if params:
                lines.append("Parameters: " + ", ".join(params) + ".\n")
            if fields := _body_fields(op, schemas):
                lines.append("Body: " + "; ".join(fields) + ".\n")
    return "\n".join(lines).rstrip() + "\n"


def _body_fields(op: dict, schemas: dict) -> list[str]:
    content = op.get("requestBody", {}).get("content", {})
    schema = next(iter(content.values()), {}).get("schema", {})
    schema = _resolve(schema, schemas)
    required = set(schema.get("required", []))
    fields = []
    for name, spec in schema.get("properties", {}).items():
        about = " ".join((spec.get("description") or "").split())
        fields.append(f"`{name}`{' (required)' if name in required else ''}"
                      + (f": {about}" if about else ""))
    return fields


def _resolve(schema: dict, schemas: dict) -> dict:
    for option in schema.get("anyOf", []):  # an optional body: the object, not its null
        if "$ref" in option:
            schema = option
    if "$ref" in schema:
        return schemas.get(schema["$ref"].rsplit("/", 1)[-1], {})
    return schema


def current() -> str:
    return markdown(create_app(janitor=False).openapi())


if __name__ == "__main__":
    print(current(), end="")
