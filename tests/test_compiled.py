"""The two builds of the core (setup.py; README "Speed"): mypyc-compiled, and the same ``.py``
sources run as pure Python. Which one runs is `rummy500_env.COMPILED`; ``RUMMY500_PURE=1``
runs the sources of a compiled install, and a stale compiled module never runs.

Run on a compiled build (CI's, and the README's test command wherever a C compiler is
found), this file also runs the pure build: the core tests and the compiled modules' doctests
in a pure subprocess, and every bad input below through both builds, which must answer alike.
On a pure build the whole suite is already the pure run.
"""

from __future__ import annotations

import ast
import copy
import hashlib
import importlib
import importlib.machinery
import json
import os
import pickle
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import rummy500_env
from rummy500_env import Game, _build
from tests import background

pytestmark = pytest.mark.slow  # the whole module: see docs/contributing.md

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = Path(rummy500_env.__file__).resolve().parent
SUFFIX = importlib.machinery.EXTENSION_SUFFIXES[0]
CORE_TESTS = [  # the pure build's share of the suite (issue 19): rules, properties, reference
    *sorted(p.name for p in (ROOT / "tests").glob("test_rules_*.py")),
    "test_worked_examples.py",
    "test_properties.py",
    "test_jokers_calls_properties.py",
    "test_reference.py",  # the differential test: every action judged as the reference does
    "test_reference_model.py",
    "test_golden.py",
    "test_calls.py",
    "test_jokers.py",
    "test_notation.py",
    "test_positions.py",
    "test_position_checks.py",
    "test_seat_view.py",
]


def python(code: str, pure: bool, cwd: Path = ROOT, **env: str) -> subprocess.CompletedProcess[str]:
    """Run `code` in a fresh interpreter, on the pure build or on this one."""
    environ = {k: v for k, v in os.environ.items() if k != _build.PURE_ENV} | env
    if pure:
        environ[_build.PURE_ENV] = "1"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, env=environ, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    return out


# --- which build runs


def test_compiled_says_which_modules_are_loaded():
    """`COMPILED` is True exactly when the core's modules come from their extensions; CI
    (``RUMMY500_EXPECT_COMPILED=1``, .ci/run) has a C compiler, so there it must be True."""
    sources = _build.compiled_sources()
    loaded = {name: importlib.import_module(name).__file__ or "" for name in sources}
    assert all(f.endswith(".py") != rummy500_env.COMPILED for f in loaded.values()), loaded
    assert rummy500_env.COMPILED == _build.BUILD.startswith("compiled")
    if os.environ.get("RUMMY500_EXPECT_COMPILED") == "1":
        assert rummy500_env.COMPILED, _build.BUILD
        assert {"rummy500_env.engine.game", "rummy500_env.rl.actions"} <= set(sources)


def test_pure_at_run_time_loads_every_source():
    out = python(
        "import rummy500_env, rummy500_env.engine.game as g, rummy500_env.rl.actions as a\n"
        "print(rummy500_env.COMPILED, g.__file__, a.__file__)",
        pure=True,
    )
    compiled, *files = out.stdout.split()
    assert compiled == "False" and all(f.endswith(".py") for f in files), out.stdout


def fake_package(tmp_path: Path, digest_of: str | None) -> Path:
    """A package folder with one 'compiled' module (an empty file with an extension's name)
    and, unless `digest_of` is None, a manifest giving that text's SHA-256 as its source's."""
    package = tmp_path / "pkg"
    (package / "engine").mkdir(parents=True)
    (package / "rl").mkdir()
    (package / "engine" / "game.py").write_text("X = 1\n")
    (package / "engine" / f"game{SUFFIX}").write_bytes(b"")
    if digest_of is not None:
        digest = hashlib.sha256(digest_of.encode()).hexdigest()
        manifest = {"sources": {"pkg/engine/game.py": digest}}
        (package / "_compiled.json").write_text(json.dumps(manifest))
    return package


def test_decide_runs_the_extensions_only_when_built_from_these_sources(tmp_path: Path):
    fresh = fake_package(tmp_path / "a", "X = 1\n")
    assert _build.decide(fresh) == (True, "compiled with mypyc", {})
    compiled, why, sources = _build.decide(fresh, pure=True)
    assert not compiled and "RUMMY500_PURE" in why and set(sources) == {"pkg.engine.game"}
    stale = fake_package(tmp_path / "b", "X = 0\n")  # the source was edited since
    compiled, why, sources = _build.decide(stale)
    assert not compiled and "pkg/engine/game.py differs" in why and sources
    assert not _build.decide(fake_package(tmp_path / "c", None))[0]  # no manifest: stale too
    (fresh / "engine" / f"game{SUFFIX}").unlink()
    assert _build.decide(fresh) == (False, "pure Python build", {})


def test_an_edited_source_is_what_runs(tmp_path: Path):
    """A copy of this install with one core source edited after the build: the edit runs, and
    on a compiled install a warning says that the compiled core is stale."""
    shutil.copytree(
        PACKAGE, tmp_path / "rummy500_env", ignore=shutil.ignore_patterns("__pycache__")
    )
    render = tmp_path / "rummy500_env" / "engine" / "render.py"
    render.write_text(render.read_text() + "\nEDITED = True\n")
    out = python(
        "import rummy500_env, rummy500_env.engine.render as r\n"
        "print(rummy500_env.__file__, rummy500_env.COMPILED, r.EDITED)",
        pure=False,
        cwd=tmp_path,
        PYTHONPATH=str(tmp_path),
    )
    where, compiled, edited = out.stdout.split()
    assert where.startswith(str(tmp_path)) and compiled == "False" and edited == "True"
    if rummy500_env.COMPILED:
        assert "engine/render.py differs from the source compiled" in out.stderr
        assert "RuntimeWarning" in out.stderr


def game_slots() -> list[str]:
    """`Game.__slots__` as the source writes them: a compiled class does not expose them, and
    the checks below must run on the compiled build too (CI's)."""
    tree = ast.parse((PACKAGE / "engine" / "game.py").read_text(encoding="utf-8"))
    game = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Game")
    for node in game.body:
        if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "__slots__":
            return list(ast.literal_eval(node.value))
    raise AssertionError("no __slots__ in class Game")


def test_copy_copies_every_field():
    """`Game.copy` names the fields (a compiled class cannot loop over its slots): every slot
    is there, lists copied, the rest shared."""
    g = Game.new("standard", seed=3)
    g.legal_actions()
    c = g.copy()
    slots = game_slots()
    assert [s for s in slots if not hasattr(g, s)] == []
    for name in slots:
        mine, theirs = getattr(g, name), getattr(c, name)
        assert mine == theirs, name
        assert (mine is not theirs) == (type(mine) is list), name
    assert c.to_dict() == g.to_dict() and c.legal_actions() == g.legal_actions()
    c.apply("draw")
    assert g.phase == "draw" and c.phase == "play"


def test_game_and_codec_pickle_mid_hand():
    """A compiled class is rebuilt through its constructor: `Game` pickles every field but
    the constructor's (the list is checked against the slots on the pure build), `ActionCodec`
    and the encoders pickle as their rules."""
    from rummy500_env.engine import game as game_module
    from rummy500_env.rl.actions import ActionCodec
    from rummy500_env.rl.observation_incremental import IncrementalEncoder

    assert set(game_slots()) == {*game_module._FIELDS, "rules", "seed", "_plain"}
    g = Game.new("standard", seed=4)
    for _ in range(7):
        g.apply(g.legal_actions()[-1])
    g2 = pickle.loads(pickle.dumps(g))
    assert g2.to_dict() == g.to_dict() and g2.legal_actions() == g.legal_actions()
    codec, encoder = ActionCodec(g.rules), IncrementalEncoder(g.rules)
    codec.mask(g), encoder.encode_update(g, 0)
    codec2, encoder2 = pickle.loads(pickle.dumps((codec, encoder)))
    assert (codec2.mask(g2) == codec.mask(g)).all()
    assert (encoder2.encode_update(g2, 0) == encoder.encode(g, 0)).all()
    while not g.is_hand_over:
        g.apply(g.legal_actions()[-1])
    for frozen in (g.result(), g.seat_view(1), g.position()):  # frozen dataclasses
        again = pickle.loads(pickle.dumps(frozen))
        assert copy.deepcopy(frozen) == copy.copy(frozen) == again == frozen
    assert copy.deepcopy(g).to_dict() == g.to_dict()


# --- the same answers from both builds

CASES: dict[str, tuple[str, str]] = {  # what to run: the pure build's answer, by kind
    "Rules(players='2')": ("RulesError", "players='2' is not allowed: use an int 2..8"),
    "Rules(players=2.0)": ("RulesError", "players=2.0 is not allowed"),
    "Rules(players=True)": ("RulesError", "players=True is not allowed"),
    "Rules(players=None)": ("RulesError", ""),
    "Rules('2')": ("RulesError", ""),
    "Rules(players=9)": ("RulesError", ""),
    "Rules(players=8, hand_size=13)": ("RulesError", "allowed: hand_size 1..12"),
    "Rules(hand_size='13')": ("RulesError", ""),
    "Rules(decks='2')": ("RulesError", ""),
    "Rules(scoring=3)": ("RulesError", ""),
    "Rules(stock_out=None)": ("RulesError", ""),
    "Rules(discard_to_go_out=1)": ("RulesError", ""),
    "Rules(top_card_must_meld='no')": ("RulesError", ""),
    "Rules(target='500')": ("RulesError", ""),
    "Rules(target=500.0)": ("RulesError", ""),
    "Rules(jokers=None)": ("RulesError", ""),
    "Rules(rummy_calls='yes')": ("RulesError", ""),
    "Rules(turn_limit=1.5)": ("RulesError", ""),
    "Rules(hand_limit='9')": ("RulesError", ""),
    "Rules.from_dict({'players': '2'})": ("RulesError", ""),
    "Rules.coerce(3)": ("RulesError", "rules must be a preset name or a dict of fields"),
    "Rules.preset(3)": ("RulesError", "unknown preset 3"),
    "Rules.parse('players=two')": ("RulesError", ""),
    """Rules.parse('{"players": "2"}')""": ("RulesError", ""),
    "Rules.parse('standard', players='3')": ("RulesError", ""),
    "Game.new(5)": ("RulesError", ""),
    "Game.new({'players': '3'})": ("RulesError", ""),
    "Game.new(Rules(), seed='x')": ("TypeError", "seed must be an int or None"),
    "Game.new(Rules(), seed=1.5)": ("TypeError", ""),
    "Game.new(Rules(), seed=True)": ("TypeError", ""),
    "g().apply(3)": ("ActionParseError", "an action must be text or an Action, not 3"),
    "g().apply(None)": ("ActionParseError", ""),
    "g().apply(b'draw')": ("ActionParseError", ""),
    "g().apply('fly')": ("ActionParseError", "not an action: 'fly'"),
    "g().apply('discard 2C')": ("IllegalActionError", ""),
    "g().apply('meld 9S')": ("ActionParseError", ""),
    "g().is_legal(3)": ("ok", "False"),
    "Action.parse(3)": ("ActionParseError", ""),
    "Action.parse(None)": ("ActionParseError", ""),
    "Game.from_dict(None)": ("InvalidPositionError", "a position must be a dict"),
    "Game.from_dict([])": ("InvalidPositionError", ""),
    "Game.from_dict({})": ("InvalidPositionError", ""),
    "Game.from_dict(P(rules=3))": ("InvalidPositionError", ""),
    "Game.from_dict(P(rules={'players': '2'}))": ("InvalidPositionError", "players='2'"),
    "Game.from_dict(P(turn='0'))": ("InvalidPositionError", ""),
    "Game.from_dict(P(turn=0.0))": ("InvalidPositionError", ""),
    "Game.from_dict(P(dealer=True))": ("InvalidPositionError", ""),
    "Game.from_dict(P(hands='x'))": ("InvalidPositionError", ""),
    "Game.from_dict(P(hands=[[1, 2], [3]]))": ("InvalidPositionError", ""),
    "Game.from_dict(P(stock=None))": ("InvalidPositionError", ""),
    "Game.from_dict(P(melds=[{'cards': 3}]))": ("InvalidPositionError", ""),
    "Game.from_dict(P(totals=['0', 0]))": ("InvalidPositionError", ""),
    "Game.from_dict(P(totals=[0.5, 0]))": ("InvalidPositionError", ""),
    "Game.from_dict(P(phase=1))": ("InvalidPositionError", ""),
    "Game.from_dict(P(taken_top=3))": ("InvalidPositionError", ""),
    "Game.from_dict(P(turns='1'))": ("InvalidPositionError", ""),
    "Game.from_dict(P(hands_played=1.0))": ("InvalidPositionError", ""),
    "Game.from_dict(P(seed=1.5))": ("InvalidPositionError", ""),
    "Game.from_dict(P(discarder='0'))": ("InvalidPositionError", ""),
    "Game.from_dict(P(colour=1))": ("InvalidPositionError", ""),
    "g().next_hand()": ("IllegalActionError", ""),
    "g().seat_view('0')": ("ValueError", "seat must be a player 0..1, got '0'"),
    "g().seat_view(9)": ("ValueError", ""),
    "parse_card('1Z')": ("CardParseError", ""),
    "codec().decode(g(), 'x')": ("IllegalActionError", "action must be an int id"),
    "codec().decode(g(), 3.0)": ("IllegalActionError", ""),
    "codec().decode(g(), 10**6)": ("IllegalActionError", "out of range"),
    "codec().decode(g(), np.int64(0))": ("ok", "Action(kind='draw'"),
    "codec().action_to_str(g(), np.int16(0))": ("ok", "'draw'"),
}

ANSWER = """
import json, sys
import numpy as np
from rummy500_env import Action, Game, Rules
from rummy500_env.engine.cards import parse_card
from rummy500_env.rl.actions import ActionCodec
from tests.helpers import game, play
position = Game.new("standard", seed=1).to_dict()
def g():
    return Game.from_dict(position)
def P(**fields):
    return json.loads(json.dumps(position)) | fields
def codec():
    return ActionCodec(Rules())
def without(*cards):
    return {k: [[c for c in h if c not in cards] for h in v] if k == "hands" else
            [c for c in v if c not in cards] if k in ("stock", "pile") else v
            for k, v in P().items()}
answers = {}
for case in json.load(sys.stdin):
    try:
        answers[case] = ["ok", repr(eval(case))]
    except Exception as e:
        answers[case] = [type(e).__name__, str(e)]
print(json.dumps(answers))
"""


def answers(cases: list[str], pure: bool) -> dict[str, list[str]]:
    """Each case's answer, ["ok", repr] or [error name, message], from one build."""
    environ = {k: v for k, v in os.environ.items() if k != _build.PURE_ENV}
    environ |= {_build.PURE_ENV: "1"} if pure else {}
    out = subprocess.run(
        [sys.executable, "-c", ANSWER],
        input=json.dumps(cases),
        env=environ,
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return dict(json.loads(out.stdout))


def test_both_builds_answer_bad_input_alike():
    """Each bad input gets the pure build's answer (the project's own error, quoting the
    input) from this build too, never the compiler's run-time type check."""
    pure, this = answers(list(CASES), pure=True), answers(list(CASES), pure=False)
    for case, (kind, message) in CASES.items():
        assert pure[case][0] == kind and message in pure[case][1], (case, pure[case])
        assert this[case] == pure[case], (case, this[case], pure[case])


def readme_errors() -> list[tuple[str, str]]:
    """The README's error table: (error, example message), the backslash-escaped bars read."""
    text = (ROOT / "README.md").read_text()
    rows = re.findall(r"^\| `(\w+Error)` \| [^|]+ \| `(.+)` \|$", text, re.M)
    return [(kind, message.replace("\\|", "|")) for kind, message in rows]


README_CASES = {  # a case that gives each error of the README's table
    "ActionParseError": "g().apply('fly')",
    "IllegalActionError": (
        "play(game(hands=['9S 9H 5C KC QC', '2S 3S'], pile='9D 2C'), 'dig 9D').apply('discard 5C')"
    ),
    "InvalidPositionError": "Game.from_dict(without('2H', '4H'))",
    "RulesError": "Rules(players=8, hand_size=13)",
}


def test_the_readme_error_table_holds_on_both_builds():
    """Each row's example message (its "..." standing for the rest) is what both builds say."""
    rows = readme_errors()
    assert {kind for kind, _ in rows} == set(README_CASES)
    cases = {README_CASES[kind]: (kind, message) for kind, message in rows}
    pure, this = answers(list(cases), pure=True), answers(list(cases), pure=False)
    for case, (kind, message) in cases.items():
        assert this[case] == pure[case]
        assert pure[case][0] == kind, (case, pure[case])
        pieces = [p.strip() for p in message.split("...")]
        at = 0
        for piece in pieces:
            found = pure[case][1].find(piece, at)
            assert found >= 0, (kind, piece, pure[case][1])
            at = found + len(piece)


# --- the pure build's share of the suite, when this run is the compiled one


@background.job(__name__, "pure_core_run")
def run_the_core_tests_on_the_pure_build() -> tuple[int, str, str] | None:
    """The pure subprocess's (exit status, output, error output); None on a pure build. A
    background job (tests/background.py): it runs on the other core beside the rest of the
    suite, and the test below, run last, reads its result."""
    if not rummy500_env.COMPILED:
        return None
    doctests = sorted(str(p.relative_to(ROOT)) for p in _build.compiled_sources().values())
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-x"]
    cmd += [f"tests/{name}" for name in CORE_TESTS] + doctests
    environ = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    return background.call(cmd, ROOT, timeout=3600, env=environ | {_build.PURE_ENV: "1"})


@pytest.fixture
def pure_core_run() -> tuple[int, str, str] | None:
    return background.result("pure_core_run")


def test_the_pure_build_passes_the_core_tests(pure_core_run: tuple[int, str, str] | None):
    """On a compiled build, the core tests and the compiled modules' doctests (conftest.py
    leaves them to this run) pass on the pure sources too. On a pure build this whole run is
    that test already."""
    if not rummy500_env.COMPILED:
        assert pure_core_run is None
        assert not any(f.suffix != ".py" for f in _build.compiled_sources().values())
        return
    assert pure_core_run is not None
    returncode, stdout, stderr = pure_core_run
    assert returncode == 0, stdout[-5000:] + stderr[-3000:]
    assert re.search(r"\d+ passed", stdout), stdout[-2000:]
