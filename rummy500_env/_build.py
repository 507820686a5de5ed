"""Which build of the core runs: the mypyc-compiled modules (setup.py) or their ``.py`` sources.

A compiled install holds both, an extension beside each compiled source (README "Speed").
Python would load the extension; this module decides first, before any engine module is
imported, and when the extensions must not run it puts a finder in front of the import system
that loads the ``.py`` files instead. All or nothing: compiled and pure modules of the core
cannot be mixed (a compiled `Game` accepts only the compiled `Rules`).

The pure sources run, and `COMPILED` is False, when

* there are no extensions (a pure build: ``RUMMY500_PURE=1`` at build time, no C compiler);
* ``RUMMY500_PURE=1`` is set at run time (how the tests run the pure build from one install);
* a compiled source differs from the one the extensions were built from (``_compiled.json``
  holds their SHA-256): an edited checkout whose in-place build is stale. Running the old
  compiled code unnoticed would test code that is no longer there, so this warns and runs the
  edited source; ``pip install -e .`` rebuilds.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import json
import os
import sys
import warnings
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from pathlib import Path
from types import ModuleType

PURE_ENV = "RUMMY500_PURE"
_PACKAGE = Path(__file__).resolve().parent
_MANIFEST = _PACKAGE / "_compiled.json"


class PureFinder:
    """Finds the listed modules' ``.py`` sources ahead of their compiled extensions."""

    def __init__(self, sources: dict[str, Path]) -> None:
        self.sources = sources

    def find_spec(
        self, name: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        source = self.sources.get(name)
        return None if source is None else importlib.util.spec_from_file_location(name, source)


def compiled_sources(package: Path = _PACKAGE) -> dict[str, Path]:
    """The core's sources with a compiled extension beside them, by module name."""
    found = {}
    suffixes = set(importlib.machinery.EXTENSION_SUFFIXES)
    for folder in ("engine", "rl", "agents"):  # setup.py's COMPILED lie in these
        if not (package / folder).is_dir():
            continue
        for ext in sorted((package / folder).iterdir()):
            name, dot, suffix = ext.name.partition(".")
            if dot + suffix in suffixes:
                found[f"{package.name}.{folder}.{name}"] = ext.with_name(name + ".py")
    return found


def decide(package: Path = _PACKAGE, pure: bool = False) -> tuple[bool, str, dict[str, Path]]:
    """(compiled, why, the sources to load instead of their extensions when not compiled)."""
    sources = compiled_sources(package)
    if not sources:
        return False, "pure Python build", {}
    if pure:
        return False, f"pure Python ({PURE_ENV} is set)", sources
    try:
        built: dict[str, str] = json.loads((package / _MANIFEST.name).read_text())["sources"]
    except (OSError, ValueError, KeyError):
        built = {}
    for source in sources.values():
        path = source.relative_to(package.parent).as_posix()
        if not source.is_file() or built.get(path) != _sha256(source):
            return False, f"pure Python ({path} differs from the source compiled)", sources
    return True, "compiled with mypyc", {}


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _load() -> tuple[bool, str]:
    compiled, why, sources = decide(pure=os.environ.get(PURE_ENV, "") not in ("", "0"))
    if sources:
        sys.meta_path.insert(0, PureFinder(sources))
        if "differs" in why:
            warnings.warn(
                f"rummy500_env: {why}: the compiled core is stale, so the edited sources run. "
                "Rebuild it with `pip install -e .` (or set RUMMY500_PURE=1 to silence this).",
                RuntimeWarning,
                stacklevel=3,
            )
    return compiled, why


COMPILED, BUILD = _load()
"""Whether the compiled core is loaded, and a phrase saying which build runs and why."""
