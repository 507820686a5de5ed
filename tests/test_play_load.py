"""The play server under load (issue 20): 20 games at once, through its HTTP API on loopback,
each by its own client, played to the end; afterwards every record replays to what its
client was shown, with exactly the moves the client was told of, in the records folder and
the database alike. Games to 100 keep it to seconds; benchmarks/play_load.py runs games to
500 and docs/play.md gives its figures."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

pytest.importorskip("uvicorn", reason="the play extra is not installed")

ROOT = Path(__file__).resolve().parents[1]


def load_benchmark():  # the benchmark is a script, not part of the package
    spec = importlib.util.spec_from_file_location("play_load", ROOT / "benchmarks/play_load.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["play_load"] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_twenty_simultaneous_games_lose_no_move():
    report = load_benchmark().run(games=20, clients=20, rules="standard,target=100")
    assert report.problems == []
    assert report.requests >= 20 * 20 and report.moves >= report.requests  # whole games
    assert report.p95_ms < 10_000  # no request waits on the others for long


def test_the_check_finds_a_lost_move(tmp_path):
    """The comparison the test above relies on can fail: a client told of one more move
    than its record holds is reported."""
    import random

    from rummy500_env import Rules
    from rummy500_env.engine.records import Recorder
    from rummy500_env.play.store import Store

    bench = load_benchmark()
    rng, r = random.Random(1), Recorder(Rules(target=60), seed=1, players=["human", "greedy"])
    while r.game.phase != "game_over":
        r.next_hand() if r.game.phase == "hand_over" else r.play(rng.choice(r.game.legal_actions()))
    store = Store(tmp_path)
    store.save("game-0001", r.record)
    r.record.save(store.record_file("game-0001"))
    hands = [list(h.actions) for h in r.record.hands]
    told = bench.Game(id="game-0001", hands=hands, totals=list(r.game.totals))
    assert bench.check(told, r.record.to_dict(), tmp_path) == []
    told.hands[-1].append((0, "discard 2C"))  # acknowledged, then lost
    assert bench.check(told, r.record.to_dict(), tmp_path) == [
        "game-0001: the record's moves differ from the moves the client was told"
    ]
