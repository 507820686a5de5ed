"""What pyproject.toml cannot say.

1. The repository's top-level ``models/`` folder (the shipped policies and their cards) goes
   into the package as ``rummy500_env/models/``, so an installed wheel carries them and
   ``PolicyAgent.load("standard")`` finds them; the top-level ``configs/`` (the training
   configs) goes in as ``rummy500_env/configs/``, so ``--config ppo`` works from a wheel.
2. The compiled core (README "Speed"): the engine and the RL hot path are compiled with mypyc
   from the same source files, the way black and mypy ship. The ``.py`` files stay in the
   package, so the same install runs pure Python when asked (``RUMMY500_PURE=1`` at run time;
   `rummy500_env._build`). The build is pure Python, and says why, when ``RUMMY500_PURE=1`` is
   set at build time, when the interpreter is not CPython, when there is no C compiler, or when
   compiling fails.

A compiled build writes ``rummy500_env/_compiled.json``, the SHA-256 of every compiled source:
at import the package compares it with the ``.py`` files beside the extensions and runs pure
Python, with a warning, when they differ (an edited checkout whose extensions are stale).
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import sys
import sysconfig
from pathlib import Path
from typing import Any

from setuptools import Extension, find_namespace_packages, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent
PURE_ENV = "RUMMY500_PURE"
COMPILED = [  # README "Speed" says what each buys
    *(
        f"rummy500_env/engine/{name}.py"
        for name in (
            "cards",
            "errors",
            "game",
            "melds",
            "notation",
            "positions",
            "render",
            "scoring",
            "seat_view",
        )
    ),
    "rummy500_env/agents/playout.py",
    "rummy500_env/rl/actions.py",
    "rummy500_env/rl/observation.py",
    "rummy500_env/rl/observation_incremental.py",
]
"""Compiled as one mypyc group (one shared library, ``rummy500_env/_core__mypyc``), so the
calls between these modules are native C calls. Not compiled: ``engine/rules.py``, because a
compiled dataclass checks its fields' types before ``__post_init__`` runs, so
``Rules(players="2")`` would raise a bare TypeError instead of the RulesError every build must
give (reading a pure `Rules`'s fields from compiled code costs little: it is not in the loop);
``engine/records.py`` (file I/O, nothing to gain); ``engine/numbers.py`` (reading numbers
from text: not in any loop)."""
MANIFEST = "rummy500_env/_compiled.json"


def say(message: str) -> None:
    """Build output pip shows with ``-v`` (and always on failure)."""
    print(f"rummy500_env build: {message}", file=sys.stderr, flush=True)


def pure_reason() -> str | None:
    """Why this build is pure Python, or None to compile."""
    if os.environ.get(PURE_ENV, "") not in ("", "0"):
        return f"{PURE_ENV} is set"
    if platform.python_implementation() != "CPython":
        return f"mypyc needs CPython, not {platform.python_implementation()}"
    cc = (os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc").split()[0]
    if shutil.which(cc) is None:
        return f"no C compiler ({cc!r} not found)"
    try:
        import mypyc.build  # noqa: F401 - pyproject's build-system requires installs it
    except ImportError:
        return "mypyc is not installed (pip install mypy, or build with pip's build isolation)"
    return None


def sources_digest() -> dict[str, str]:
    """SHA-256 of each compiled source, as the import check reads it."""
    return {p: hashlib.sha256((ROOT / p).read_bytes()).hexdigest() for p in COMPILED}


class OptionalBuildExt(build_ext):
    """Compile the core if possible; on a compiler failure fall back to pure Python (the
    ``.py`` files are in the package anyway) instead of failing the install."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as e:  # CCompilerError, a missing header, a linker error, ...
            for out in self.get_outputs():
                Path(out).unlink(missing_ok=True)
            say(f"compiling failed, installing pure Python: {type(e).__name__}: {e}")
            return
        manifest = json.dumps({"sources": sources_digest()}, indent=1, sort_keys=True)
        in_source = self.inplace or getattr(self, "editable_mode", False)
        targets = [ROOT / MANIFEST] if in_source else [Path(self.build_lib) / MANIFEST]
        for target in targets:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(manifest + "\n")
        say(f"compiled {len(COMPILED)} modules with mypyc")


BUILDS = {"build", "build_ext", "bdist_wheel", "editable_wheel", "install", "develop", "bdist"}
"""The commands that compile: the sdist and the metadata (egg_info, dist_info) do not, so
they skip mypyc's type check (a minute)."""


def extensions() -> list[Extension]:
    reason = pure_reason()
    if reason is not None:
        say(f"pure Python: {reason}")
        (ROOT / MANIFEST).unlink(missing_ok=True)
        return []
    if not BUILDS & set(sys.argv[1:]):
        return []
    from mypyc.build import mypycify

    say(f"compiling {len(COMPILED)} modules with mypyc (set {PURE_ENV}=1 to skip)")
    old = Path.cwd()
    os.chdir(ROOT)  # mypy reads pyproject's [tool.mypy] and resolves the paths from here
    try:
        # The compiled modules are type-checked as strictly as ever; the package modules
        # mypy reaches through them (agents/__init__ imports the torch-based policy) are
        # read without reporting, since the build's isolated environment has no torch.
        return mypycify(
            ["--follow-imports=silent", *COMPILED],
            opt_level="3",
            group_name="rummy500_env._core",
            target_dir="build/mypyc",
        )
    finally:
        os.chdir(old)


options: dict[str, Any] = {}
exts = extensions()
if exts:
    options = {"ext_modules": exts, "cmdclass": {"build_ext": OptionalBuildExt}}

setup(
    packages=[
        *find_namespace_packages(include=["rummy500_env", "rummy500_env.*"]),
        "rummy500_env.models",
        "rummy500_env.configs",
    ],
    package_dir={"rummy500_env.models": "models", "rummy500_env.configs": "configs"},
    **options,
)
