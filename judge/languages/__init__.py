"""One module per language, all with the interface of `judge.languages.base.Language`."""

from __future__ import annotations

from pathlib import Path

from judge.languages import cpp, cuda, maca, tilelang, torch, triton
from judge.languages.base import CompileResult, Language

LANGUAGES: dict[str, Language] = {
    m.LANGUAGE.name: m.LANGUAGE for m in (cpp, cuda, maca, triton, tilelang, torch)
}
# Python sources are told apart by their imports, most specific first.
_PYTHON_ORDER = ("tilelang", "triton", "torch")


class UnknownLanguage(ValueError):
    pass


def get_language(name: str) -> Language:
    try:
        return LANGUAGES[name]
    except KeyError:
        raise UnknownLanguage(
            f"unknown language {name!r}; known: {', '.join(LANGUAGES)}"
        ) from None


def infer_language(path: Path, source: str) -> Language:
    """From the file extension, and for .py files from what the source imports."""
    suffix = path.suffix.lower()
    if suffix == ".py":
        return next(LANGUAGES[n] for n in _PYTHON_ORDER if LANGUAGES[n].detects(source))
    for language in LANGUAGES.values():
        if suffix in language.extensions:
            return language
    raise UnknownLanguage(
        f"cannot tell the language of {path.name!r} from its extension; pass --lang "
        f"({', '.join(LANGUAGES)})"
    )


__all__ = ["LANGUAGES", "CompileResult", "Language", "UnknownLanguage", "get_language",
           "infer_language"]
