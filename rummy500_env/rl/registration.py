"""Registration with Gymnasium's registry and PettingZoo's, without importing either.

After ``import rummy500_env``:

* ``gymnasium.make("Rummy500-v0", opponents=..., seat=..., rules=..., episode=...)`` makes
  the single-agent view, `rummy500_env.rl.single_agent.Rummy500SingleAgentEnv` (keyword
  arguments as its constructor's; ``gymnasium.make("rummy500_env:Rummy500-v0")`` imports the
  package first, Gymnasium's convention); ``gymnasium.make_vec("Rummy500-v0", num_envs=N)``
  makes `rummy500_env.rl.vector.Rummy500VectorEnv`, and with ``vectorization_mode="sync"``
  or ``"async"`` Gymnasium's own vector envs over ``gymnasium.make`` (docs/frameworks.md);
* with a PettingZoo that has a registry (1.27 and later), ``pettingzoo.make("aec",
  "rummy500_v0", rules=...)`` makes the AEC env (`rummy500_env.env`) and
  ``pettingzoo.make("parallel", "rummy500_v0")`` its parallel form,
  ``turn_based_aec_to_parallel(env())`` (one agent acts per step; the others' actions are
  ignored);
* with TextArena installed (the ``text`` extra), ``textarena.make("Rummy500-v0")`` makes the
  TextArena game `rummy500_env.text.textarena.Rummy500TextEnv` (and its variants by rules).

Why the indirection: ``import rummy500_env`` must not load numpy, Gymnasium or PettingZoo
(the engine is standard library only; tests/test_imports.py holds it to that), yet the ids
should work whichever of the two a program imports first. So `install` (which the package's
``__init__`` calls) registers at once with a library that is already imported, and for one
that is not yet imported puts a one-shot finder on ``sys.meta_path`` that registers right
after that library's own import has finished, then restores the library's loader. The entry
points name modules by string, and the parallel factory loads the env through ``importlib``
(as the package's ``__getattr__`` does), so this module imports nothing of the package.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings
from collections.abc import Callable
from types import ModuleType
from typing import Any

GYMNASIUM_ID = "Rummy500-v0"
"""The single-agent view's id in Gymnasium's registry."""
PETTINGZOO_ID = "rummy500_v0"
"""The AEC and parallel envs' id in PettingZoo's registry (it shows it as ``rummy500-v0``)."""


def register_gymnasium() -> None:
    """Register ``Rummy500-v0`` (idempotent). Imports gymnasium."""
    import gymnasium

    if GYMNASIUM_ID not in gymnasium.registry:
        gymnasium.register(
            id=GYMNASIUM_ID,
            entry_point="rummy500_env.rl.single_agent:Rummy500SingleAgentEnv",
            vector_entry_point="rummy500_env.rl.vector:Rummy500VectorEnv",
        )


def register_pettingzoo() -> bool:
    """Register ``rummy500_v0`` as an AEC and a parallel env (idempotent); False when the
    installed PettingZoo has no registry (before 1.27). Imports pettingzoo."""
    import pettingzoo

    if not all(hasattr(pettingzoo, n) for n in ("register", "aec_registry", "parallel_registry")):
        return False
    register = pettingzoo.register
    aec, parallel = pettingzoo.aec_registry, pettingzoo.parallel_registry
    shown = PETTINGZOO_ID.replace("_v", "-v")  # the registries' keys
    if shown not in aec:
        register("aec", PETTINGZOO_ID, entry_point="rummy500_env.rl.rummy500_v0:env")
    if shown not in parallel:
        register("parallel", PETTINGZOO_ID, entry_point=parallel_env)
    return True


def register_textarena() -> None:
    """Register ``Rummy500-v0`` and its variants with TextArena (idempotent; the ``text``
    extra): `rummy500_env.text.textarena.register`. Imports textarena."""
    importlib.import_module("rummy500_env.text.textarena").register()


def parallel_env(**kwargs: Any) -> Any:
    """``turn_based_aec_to_parallel(env(**kwargs))``: the parallel API over the AEC env, one
    agent acting per step (it passes PettingZoo's ``parallel_api_test``)."""
    from pettingzoo.utils.conversions import turn_based_aec_to_parallel

    env = importlib.import_module("rummy500_env.rl.rummy500_v0").env
    return turn_based_aec_to_parallel(env(**kwargs))


def install() -> None:
    """Register now with each library already imported; for the others, right after their
    import (see the module docstring)."""
    for name, register in (
        ("gymnasium", register_gymnasium),
        ("pettingzoo", register_pettingzoo),
        ("textarena", register_textarena),
    ):
        if name in sys.modules:
            _quietly(name, register)
        elif not any(isinstance(f, _AfterImport) and f.name == name for f in sys.meta_path):
            sys.meta_path.insert(0, _AfterImport(name, register))


def _quietly(name: str, register: Callable[[], object]) -> None:
    """Run a registration; a failure warns instead of breaking the program's own import."""
    try:
        register()
    except Exception as e:  # a library version whose registry differs: the ids are extras
        warnings.warn(f"rummy500_env could not register with {name}: {e!r}", stacklevel=3)


class _AfterImport:
    """A one-shot ``sys.meta_path`` finder: when `name` is first imported, it lets the other
    finders find it, wraps the loader so that `register` runs after the module has executed,
    and removes itself."""

    def __init__(self, name: str, register: Callable[[], object]) -> None:
        self.name, self.register = name, register

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname != self.name:
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None:
            return spec
        spec.loader = _RegisterAfterLoader(spec.loader, self)
        return spec


class _RegisterAfterLoader(importlib.abc.Loader):
    """Executes the module with its own loader, puts that loader back on the module, then
    registers."""

    def __init__(self, loader: Any, hook: _AfterImport) -> None:
        self.loader, self.hook = loader, hook

    def create_module(self, spec: Any) -> ModuleType | None:
        module: ModuleType | None = self.loader.create_module(spec)
        return module

    def exec_module(self, module: ModuleType) -> None:
        if module.__spec__ is not None:
            module.__spec__.loader = self.loader
        module.__loader__ = self.loader
        self.loader.exec_module(module)
        _quietly(self.hook.name, self.hook.register)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.loader, name)
