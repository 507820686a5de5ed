"""The release: one version, complete metadata, an sdist and a wheel that ``twine check``
passes, the shipped policy inside the wheel and loadable by name, and an installed wheel that
trains, evaluates and serves the play page from a directory outside the checkout.

The artefacts are built once per session from a copy of the checkout (building in place would
leave build/ in it), with ``python -m build``: the sdist, then the wheel from the sdist, so a
file the sdist forgets is missing from the wheel too. The end-to-end test installs the wheel in
a fresh virtual environment, torch pinned first so pip never pulls a CUDA build.

The wheel built here is compiled (setup.py; README "Speed": mypyc, with gcc on this machine):
it holds the extensions beside the sources, and installed it plays a seeded game exactly as
the pure build does. Without a C compiler, or with ``RUMMY500_PURE=1``, the sdist builds pure.
"""

from __future__ import annotations

import email.message
import email.parser
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import urllib.request
import venv
import zipfile
from pathlib import Path

import pytest

import rummy500_env
from tests import background

pytestmark = pytest.mark.slow  # the whole module: see docs/contributing.md

ROOT = Path(__file__).resolve().parents[1]
TORCH = "torch==2.13.0"  # the README's pin: the CPU build, never a CUDA download
SKIP = shutil.ignore_patterns(".*", "build", "dist", "runs", "*.egg-info", "__pycache__")


@background.job(__name__, "dist")
def build_dist() -> Path | None:
    """The sdist and the wheel, built in the background (tests/background.py): the folder
    holding them; None without the build module (the fixture skips, naming the extra)."""
    if importlib.util.find_spec("build") is None:
        return None
    out = background.temp_dir("dist")
    source = out / "source"
    shutil.copytree(ROOT, source, ignore=SKIP)
    build = [sys.executable, "-m", "build", "--outdir", str(out), str(source)]
    background.run(build, cwd=out, timeout=1200)  # the wheel compiles the core (a minute or two)
    return out


@pytest.fixture(scope="module")
def dist() -> Path:
    pytest.importorskip("build", reason="the test extra installs build")
    out: Path = background.result("dist")
    return out


@pytest.fixture(scope="module")
def wheel(dist: Path) -> Path:
    (found,) = dist.glob("rummy500_env-*.whl")
    return found


@pytest.fixture(scope="module")
def wheel_names(wheel: Path) -> list[str]:
    return zipfile.ZipFile(wheel).namelist()


def run(cmd: list[str], cwd: Path, timeout: float = 600, **kw) -> str:
    """Run a command; its output, or a failure that shows the output's tail."""
    out = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, **kw)
    assert out.returncode == 0, f"{cmd}\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
    return out.stdout


def top_level(names: list[str]) -> set[str]:
    return {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}


def metadata(wheel: Path) -> email.message.Message:
    with zipfile.ZipFile(wheel) as z:
        name = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        return email.parser.Parser().parsestr(z.read(name).decode())


def test_the_version_is_written_once():
    """pyproject reads it from the package (dynamic), so the two cannot disagree."""
    tomllib = pytest.importorskip("tomllib", reason="tomllib is in the standard library from 3.11")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert "version" not in project and "version" in project["dynamic"]
    assert re.fullmatch(r"\d+\.\d+\.\d+", rummy500_env.__version__)
    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert f"## {rummy500_env.__version__} " in changelog  # the release has its entry


def test_twine_check_passes(dist: Path):
    pytest.importorskip("twine", reason="the test extra installs twine")
    files = sorted(str(p) for p in dist.glob("rummy500_env-*"))
    assert len(files) == 2  # the sdist and the wheel
    out = run([sys.executable, "-m", "twine", "check", "--strict", *files], cwd=dist)
    assert out.count("PASSED") == 2


def test_wheel_metadata_is_complete(wheel: Path):
    meta = metadata(wheel)
    assert meta["Version"] == rummy500_env.__version__
    assert meta["Requires-Python"] == ">=3.10"
    assert meta["License-Expression"] == "MIT" and meta["Description-Content-Type"]
    classifiers = meta.get_all("Classifier")
    for minor in (10, 11, 12, 13):
        assert f"Programming Language :: Python :: 3.{minor}" in classifiers
    assert "Typing :: Typed" in classifiers
    assert "reinforcement learning" in meta["Keywords"]
    extras = set(meta.get_all("Provides-Extra"))
    assert extras >= {"train", "sb3", "play", "test", "rllib", "frameworks", "dev"}
    assert meta.get_payload().startswith("# rummy500_env")  # the README is the description


def test_wheel_adds_no_generic_top_level_name(wheel_names):
    assert top_level(wheel_names) == {"rummy500_env"}


def test_wheel_carries_configs_type_marker_and_the_shipped_policy(wheel_names):
    for name in ("ppo.yaml", "ppo_long.yaml"):
        assert f"rummy500_env/configs/{name}" in wheel_names
    assert "rummy500_env/py.typed" in wheel_names
    shipped = sorted(p.name for p in (ROOT / "models").glob("*.pt"))
    assert shipped and all(f"rummy500_env/models/{n}" in wheel_names for n in shipped)
    assert "rummy500_env/models/README.md" in wheel_names  # each model's card with it
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in wheel_names)


def test_sdist_carries_what_the_wheel_is_built_from(dist: Path):
    (sdist,) = dist.glob("rummy500_env-*.tar.gz")
    names = {n.split("/", 1)[1] for n in tarfile.open(sdist).getnames() if "/" in n}
    assert {"setup.py", "pyproject.toml", "README.md", "LICENSE"} <= names
    assert "models/rummy500-ppo-standard.pt" in names


def test_top_level_check_can_fail():
    assert top_level(["training/ppo.py", "rummy500_env/x.py", "a-1.dist-info/RECORD"]) == {
        "training",
        "rummy500_env",
    }


def test_a_shipped_policy_loads_by_name_and_as_an_agent_spec():
    pytest.importorskip("torch")
    from rummy500_env import Rules
    from rummy500_env.agents import PolicyAgent
    from rummy500_env.agents.policy import PolicyLoadError, shipped_policies
    from rummy500_env.agents.registry import AgentSpecError, make_agent, parse_spec

    assert shipped_policies()["standard"].name == "rummy500-ppo-standard.pt"
    agent = PolicyAgent.load("standard")
    assert Path(agent.path or "").samefile(ROOT / "models" / "rummy500-ppo-standard.pt")
    spec = parse_spec("standard")
    assert spec.kind == "shipped" and Path(spec.path or "").name == "rummy500-ppo-standard.pt"
    assert isinstance(make_agent("standard", Rules.preset("standard"), 0), PolicyAgent)
    listed = "no shipped policy of that name; shipped: jokers-calls, standard, standard-3p, "
    with pytest.raises(PolicyLoadError, match=listed + "standard-4p$"):
        PolicyAgent.load("strongest")
    with pytest.raises(AgentSpecError, match="shipped policy by name"):
        parse_spec("strongest")


CLEAN = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
CLEAN.pop("RUMMY500_PURE", None)


def venv_with_the_wheel(name: str, extras: str) -> tuple[Path, str] | None:
    """A fresh venv holding the built wheel with `extras` (``[train,play]``, or ``""`` for
    none: then no torch either), torch pinned first where an extra asks for it: (its folder,
    its python); None where the build module is missing."""
    out = background.result("dist")
    if out is None:
        return None
    (wheel,) = out.glob("rummy500_env-*.whl")
    env_dir = background.temp_dir(name) / "venv"
    # Symlinks, as `python -m venv` makes them on Linux: a copied interpreter is written by
    # this process, and a fork from another thread in that moment holds it open for writing,
    # so running it fails with ETXTBSY (the ensurepip error seen once in CI).
    venv.create(env_dir, with_pip=True, symlinks=True)
    python = str(env_dir / "bin" / "python")
    pip = [python, "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    torch = [TORCH] if extras else []
    if torch:
        background.run([*pip, *torch], cwd=env_dir, env=CLEAN)
    background.run([*pip, *torch, f"{wheel}{extras}"], cwd=env_dir, env=CLEAN)
    return env_dir, python


@background.job(__name__, "installed")
def install_the_wheel() -> tuple[Path, str] | None:
    """The wheel with its train and play extras, made in the background after the build."""
    return venv_with_the_wheel("installed", "[train,play]")


@background.job(__name__, "installed_bare")
def install_the_wheel_bare() -> tuple[Path, str] | None:
    """The wheel alone, no extra (so no torch)."""
    return venv_with_the_wheel("installed_bare", "")


@pytest.fixture(scope="module")
def installed_bare(dist: Path) -> tuple[Path, str]:
    """A fresh venv with the wheel alone: (its folder, its python)."""
    made: tuple[Path, str] = background.result("installed_bare")
    return made


def test_without_the_train_extra_bots_play_a_tournament(
    installed_bare: tuple[Path, str], tmp_path: Path
):
    """The evaluation room is torch-free: the wheel with no extra ranks bots, in worker
    processes, and writes its results (the figure needs matplotlib, the train extra's)."""
    env_dir, python = installed_bare
    assert "torch" in run([python, "-c", NO_TORCH], tmp_path)
    evaluate = str(env_dir / "bin" / "rummy500-evaluate")
    args = ["greedy", "random", "--games", "4", "--workers", "2", "--out", "ev"]
    out = run([evaluate, *args], cwd=tmp_path, env=CLEAN)
    assert "wrote results.json, pairs.csv to ev/" in out
    results = json.loads((tmp_path / "ev" / "results.json").read_text())
    assert [r["games"] for r in results["pairs"]] == [4]


NO_TORCH = """
try:
    import torch
except ModuleNotFoundError as e:
    print(e)
"""


@pytest.fixture(scope="module")
def installed(dist: Path) -> tuple[Path, str]:
    """A fresh venv with the wheel and its train and play extras: (its folder, its python)."""
    made: tuple[Path, str] = background.result("installed")
    return made


def test_the_installed_wheel_trains_evaluates_and_serves(
    installed: tuple[Path, str], tmp_path: Path
):
    """The installed wheel, from a directory that is not the checkout: a tiny training run, a
    tournament of the packaged model against it and against greedy (by name, through the
    console script), and the play page against it."""
    env_dir, python = installed
    work = tmp_path / "elsewhere"
    work.mkdir()
    clean = CLEAN

    where = run([python, "-c", "import rummy500_env as r; print(r.__file__, r.__version__)"], work)
    assert str(env_dir) in where and rummy500_env.__version__ in where

    tiny = "--total-timesteps 512 --n-games 4 --n-steps 32 --minibatch-size 64 --bc-decisions 0"
    tiny += " --eval-every 512 --eval-games 2 --final-eval-games 2 --eval-bots greedy"
    tiny += " --channels 8 --blocks 1 --hidden 16 --no-progress --run-dir run"
    run([python, "-m", "rummy500_env.training.ppo", *tiny.split()], cwd=work, env=clean)
    assert (work / "run" / "policy.pt").is_file()

    evaluate = str(env_dir / "bin" / "rummy500-evaluate")
    args = ["standard", "run/policy.pt", "greedy", "--games", "2", "--workers", "1"]
    run([evaluate, *args, "--out", "ev"], cwd=work, env=clean)
    results = json.loads((work / "ev" / "results.json").read_text())
    assert "standard" in json.dumps(results)

    serve = [python, "-m", "rummy500_env.play", "--no-browser", "--opponent", "standard"]
    proc = subprocess.Popen(
        [*serve, "--data-dir", "games"],
        cwd=work,
        env=clean | {"PYTHONUNBUFFERED": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert proc.stdout is not None
        lines: list[str] = []
        for line in proc.stdout:
            lines.append(line)
            if m := re.search(r"http://127\.0\.0\.1:\d+/", line):
                break
        else:
            raise AssertionError("the play server printed no address: " + "".join(lines))
        with urllib.request.urlopen(m.group(0) + "api/config", timeout=30) as r:
            assert "standard" in r.read().decode()
        req = urllib.request.Request(m.group(0) + "api/games", method="POST")
        with urllib.request.urlopen(req, timeout=30) as r:
            assert json.load(r)["state"]
    finally:
        proc.terminate()
        proc.wait(timeout=30)


# --- the compiled core (setup.py; README "Speed")

SEEDED_GAME = """
import hashlib, json, random
import numpy as np
import rummy500_env
from rummy500_env import Game

g, rng, actions = Game.new("standard", seed=11), random.Random(11), []
while g.phase != "game_over":
    if g.phase == "hand_over":
        g.next_hand()
        continue
    a = rng.choice(g.legal_actions())
    actions.append(str(a))
    g.apply(a)
e, digest, ids, rewards = rummy500_env.raw_env(episode="hand"), hashlib.sha256(), [], []
e.reset(seed=5)
for agent in e.agent_iter():
    obs, reward, term, trunc, _ = e.last()
    digest.update(obs["observation"].tobytes() + obs["action_mask"].tobytes())
    rewards.append(float(reward))
    action = None if term or trunc else int(rng.choice(np.flatnonzero(obs["action_mask"])))
    ids.append(action)
    e.step(action)
print(json.dumps({"compiled": rummy500_env.COMPILED, "actions": actions, "totals": g.totals,
                  "winner": g.winner, "ids": ids, "rewards": rewards,
                  "observations": digest.hexdigest()}))
"""


def seeded_game(python: str, cwd: Path, **env: str) -> dict[str, object]:
    return dict(json.loads(run([python, "-c", SEEDED_GAME], cwd=cwd, env=CLEAN | env)))


def test_the_wheel_is_compiled_for_this_platform(wheel: Path, wheel_names: list[str]):
    """``pip wheel .`` here (gcc, CPython) gives a platform wheel: the extensions of the
    compiled modules and their shared library beside the sources, and the sources' digests."""
    assert not wheel.name.endswith("-none-any.whl"), wheel.name
    for module in ("_core__mypyc", "engine/game", "engine/melds", "rl/actions"):
        assert any(re.fullmatch(rf"rummy500_env/{module}\..+\.so", n) for n in wheel_names)
    assert {"rummy500_env/engine/game.py", "rummy500_env/_compiled.json"} <= set(wheel_names)


def test_the_installed_wheel_plays_a_seeded_game_as_the_pure_build(
    installed: tuple[Path, str], tmp_path: Path
):
    """The same seeded game (engine, random legal play to the end) and the same seeded hand
    through raw_env(): the same actions, scores, rewards and observation digest from the
    installed compiled wheel as from this checkout's pure sources."""
    _, python = installed
    compiled = seeded_game(python, tmp_path)
    pure = seeded_game(sys.executable, ROOT, RUMMY500_PURE="1")
    assert compiled.pop("compiled") is True and pure.pop("compiled") is False
    assert len(compiled["actions"]) > 100 and compiled == pure  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("variable", "value", "reason"),
    [("RUMMY500_PURE", "1", "RUMMY500_PURE is set"), ("CC", "/no/such/cc", "no C compiler")],
)
def test_the_sdist_builds_pure_without_a_compiler_or_when_asked(
    dist: Path, tmp_path: Path, variable: str, value: str, reason: str
):
    """From the sdist, with ``RUMMY500_PURE=1`` or no C compiler: a pure wheel (any
    platform, no extension), saying why. Built without isolation (this venv has the build
    requirements), so it takes seconds."""
    (sdist,) = dist.glob("rummy500_env-*.tar.gz")
    cmd = [sys.executable, "-m", "pip", "wheel", "-v", "--no-deps", "--no-build-isolation"]
    out = subprocess.run(
        [*cmd, "--wheel-dir", str(tmp_path), str(sdist)],
        cwd=tmp_path,
        env=CLEAN | {variable: value},
        capture_output=True,
    )
    assert out.returncode == 0, out.stdout.decode()[-3000:] + out.stderr.decode()[-3000:]
    assert f"rummy500_env build: pure Python: {reason}" in out.stdout.decode() + out.stderr.decode()
    (pure,) = tmp_path.glob("rummy500_env-*.whl")
    names = zipfile.ZipFile(pure).namelist()
    assert pure.name.endswith("-py3-none-any.whl") and not [n for n in names if n.endswith(".so")]
    assert "rummy500_env/engine/game.py" in names and "rummy500_env/_build.py" in names
