"""One module per language, each defining `LANGUAGE`, an instance of a
`judge.languages.base.Language` subclass that holds the language's facts. The registry is this
package's modules: adding a language is adding its file."""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

from judge.languages.base import CompileResult, Language, NativeLanguage, PythonKernelLanguage

NOT_LANGUAGES = {"base"}


def _discover() -> dict[str, Language]:
    found = []
    for module in pkgutil.iter_modules(__path__):
        if module.name not in NOT_LANGUAGES and not module.ispkg:
            language = importlib.import_module(f"{__name__}.{module.name}").LANGUAGE
            found.append(language)
    # native languages first, then Python ones as their sources are told apart
    found.sort(key=lambda x: (x.is_python, x.infer_rank, x.name))
    return {language.name: language for language in found}


LANGUAGES: dict[str, Language] = _discover()
PYTHON_LANGUAGES = tuple(name for name, x in LANGUAGES.items() if x.is_python)
# per package, the decorators that mark a Python source's kernels (`triton.jit`, `T.prim_func`)
KERNEL_DECORATORS = {x.packages[0]: x.kernel_decorators for x in LANGUAGES.values()
                     if x.kernel_decorators}


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
    candidates = [x for x in LANGUAGES.values() if suffix in x.extensions]
    if len(candidates) > 1:  # Python languages share .py: the first whose `detects` holds
        return next(x for x in candidates if x.detects(source))
    if candidates:
        return candidates[0]
    raise UnknownLanguage(
        f"cannot tell the language of {path.name!r} from its extension; pass --lang "
        f"({', '.join(LANGUAGES)})"
    )


__all__ = ["KERNEL_DECORATORS", "LANGUAGES", "PYTHON_LANGUAGES", "CompileResult", "Language",
           "NativeLanguage", "PythonKernelLanguage", "UnknownLanguage", "get_language",
           "infer_language"]
