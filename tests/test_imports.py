"""The layers import in one direction, and the engine only the standard library."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

HEAVY = ("numpy", "gymnasium", "pettingzoo", "torch", "stable_baselines3", "sb3_contrib")


def test_engine_imports_no_rl_library():
    code = (
        "import sys, rummy500_env, rummy500_env.engine, rummy500_env.cards;"
        "g = rummy500_env.Game.new('standard', seed=1); g.legal_actions(); str(g);"
        f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"the engine loaded: {out.stdout.strip()}"


def test_the_check_can_fail():
    """The import probe does see a heavy module when one is loaded."""
    code = f"import sys, json; print(','.join(m for m in {HEAVY!r} if m in sys.modules))"
    out = subprocess.run(
        [sys.executable, "-c", "import numpy;" + code], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "numpy"


ENGINE_LAYERS = ["errors", "files", "numbers", "cards", "rules", "melds", "scoring", "notation"]
ENGINE_LAYERS += ["positions", "seat_view", "render"]
ENGINE_LAYERS += ["game", "records"]
"""The engine's modules, each importing only modules before it (no cycle)."""
PACKAGE_LAYERS = {
    "engine": 0,
    "_build": 0,  # picks the compiled core or its sources: the standard library only
    "rl/registration": 0,  # names the env modules only by string
    "cards": 1,  # the documented address of engine.cards
    "rl": 2,  # the action codec, the observation encoders, the PettingZoo env
    "text": 2,  # the prompt protocol and the TextArena game: the engine's words for a model
    "agents": 3,
    "evaluation": 4,  # tournaments: torch-free, so bots are ranked without the train extra
    "training": 5,
    "bench": 6,
    "__main__": 6,
    "play": 6,  # the browser play page: nothing below imports it
    "jax": 3,  # the JAX engine (the jax extra): imports engine and rl; nothing below imports it
}
"""The package's layers: a module imports only from its own layer or lower ones."""
PACKAGE = Path(__file__).resolve().parents[1] / "rummy500_env"


def imported_modules(path: Path) -> set[str]:
    """The `rummy500_env` modules a file imports, at any depth of the file."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            out |= {n for n in names if n.startswith("rummy500_env.")}
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("rummy500_env.")}
    return out


def layer_violations(files: dict[str, Path]) -> set[str]:
    bad = set()
    for name, path in files.items():
        own = ENGINE_LAYERS.index(name)
        for module in imported_modules(path):
            parts = module.split(".")
            if parts[:2] != ["rummy500_env", "engine"]:
                bad.add(f"engine.{name} imports {module}, outside the engine")
            elif len(parts) > 2 and parts[2] in ENGINE_LAYERS:
                if ENGINE_LAYERS.index(parts[2]) >= own:
                    bad.add(f"engine.{name} imports engine.{parts[2]}, not a lower layer")
    return bad


def test_engine_modules_import_only_lower_layers():
    files = {p.stem: p for p in (PACKAGE / "engine").glob("*.py") if p.stem != "__init__"}
    assert set(files) == set(ENGINE_LAYERS), "a new engine module needs a place in the layers"
    assert layer_violations(files) == set()


def test_the_layer_check_can_fail(tmp_path):
    cyclic = tmp_path / "cards.py"
    cyclic.write_text("from rummy500_env.engine.game import Game\nimport rummy500_env.agents\n")
    assert len(layer_violations({"cards": cyclic})) == 2


def test_package_layers_import_downwards_only():
    bad = []
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE).parts
        if rel[0] == "__init__.py":
            own = 0
        else:
            key = "/".join(rel[:2]).removesuffix(".py")
            own = PACKAGE_LAYERS.get(key, PACKAGE_LAYERS[rel[0].removesuffix(".py")])
        for module in imported_modules(path):
            parts = module.split(".")
            top = PACKAGE_LAYERS.get("/".join(parts[1:3]), PACKAGE_LAYERS.get(parts[1], 99))
            if top > own:
                bad.append(f"{'/'.join(rel)} imports {module}")
    assert bad == []


def private_jax_imports(paths: list[Path]) -> list[str]:
    """Imports of the JAX room's private modules (``rummy500_env.jax._*``) in `paths`."""
    return [
        f"{path.name} imports {module}"
        for path in paths
        for module in sorted({".".join(m.split(".")[:3]) for m in imported_modules(path)})
        if module.startswith("rummy500_env.jax._")
    ]


def test_only_the_jax_room_reads_its_private_modules():
    """Issue 59: trainers, agents, benchmarks and examples use `rummy500_env.jax`'s public API
    (the JAX room's own tests may read its internals)."""
    root = PACKAGE.parent
    paths = [p for p in PACKAGE.rglob("*.py") if "jax" not in p.relative_to(PACKAGE).parts[:1]]
    for folder in ("training", "benchmarks", "examples"):
        paths += list((root / folder).rglob("*.py"))
    assert private_jax_imports(paths) == []


def test_the_private_import_check_can_fail(tmp_path):
    trainer = tmp_path / "trainer.py"
    trainer.write_text(
        "from rummy500_env.jax._rules import Shape\nfrom rummy500_env.jax import make\n"
    )
    assert private_jax_imports([trainer]) == ["trainer.py imports rummy500_env.jax._rules"]


def module_graph() -> dict[str, set[str]]:
    """Each package module's imports of other package modules (at any depth of the file,
    lazy imports included), by dotted name; a package's ``__init__`` is the package's name.
    ``from pkg import sub`` is an import of the module ``pkg.sub``."""
    names = {}
    for path in PACKAGE.rglob("*.py"):
        parts = ("rummy500_env", *path.relative_to(PACKAGE).with_suffix("").parts)
        names[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path

    def module_of(name: str) -> str:
        while name not in names:  # `pkg.module.Name` -> `pkg.module`
            name = name.rpartition(".")[0]
        return name

    graph = {}
    for name, path in names.items():
        out = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                if node.module.startswith("rummy500_env"):
                    out |= {module_of(f"{node.module}.{a.name}") for a in node.names}
            elif isinstance(node, ast.Import):
                out |= {module_of(a.name) for a in node.names if a.name.startswith("rummy500_env")}
        graph[name] = out - {name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted. A
    package importing its own submodules (``agents`` re-exporting ``agents.greedy``) is no
    cycle unless the submodule imports the package back."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_module_imports_form_a_cycle():
    assert cycles(module_graph()) == []


def test_the_cycle_check_can_fail():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
