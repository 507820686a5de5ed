"""Every rule system through the play API: each preset with jokers and "Rummy!" calls on (the
switches that change what a hand holds and who may act), 40 seeds dealt and the first hand
played through the API alone for up to `TURNS` of the human's turns (issue 20: a joker in the
"Put down all" plan crashed the deal of half the seeds). The human draws, puts everything
down, discards the highest card and answers a call window at random; the computer is greedy.
Standard rules without jokers are played to the end of whole games in test_play_api.py."""

from __future__ import annotations

import dataclasses
import os
import random
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette", reason="the play extra is not installed")
from starlette.testclient import TestClient

from rummy500_env import Rules
from rummy500_env.engine.rules import PRESETS
from rummy500_env.play.server import create_app
from rummy500_env.play.table import Setup

SEEDS = 40
TURNS = 5
"""The human's turns played per seed: enough to meld, lay off and face a call window; a
bound so that 200 deals stay cheap."""


@pytest.fixture
def data_dir(tmp_path: Path) -> Iterator[Path]:
    """Where the games are saved: in memory (/dev/shm) where there is one, since this test is
    about rules, not disks (test_play_saves.py is), and a save waiting on the disk's flush
    made it four times slower; else the test's temporary folder."""
    shm = Path("/dev/shm")
    if not (shm.is_dir() and os.access(shm, os.W_OK)):
        yield tmp_path
        return
    with tempfile.TemporaryDirectory(dir=shm, prefix="rummy500-sweep-") as d:
        yield Path(d)


def human_move(state: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """What the sweep's human plays: a draw, the plan, the highest discard, else any move."""
    legal = state["legal"]
    if "draw" in legal:
        return {"action": "draw"}
    if state["plan"]:
        return {"actions": state["plan"]}
    discards = [a for a in legal if a.startswith("discard")]
    if discards and state["phase"] == "play":
        return {"action": discards[-1]}
    return {"action": rng.choice(legal)}


def first_hand(c: TestClient, rng: random.Random) -> tuple[str, dict[str, Any], set[str]]:
    """Deal a game and play its first hand through the API for up to `TURNS` human turns;
    returns the id, the last state and the kinds of action the human was offered."""
    r = c.post("/api/games")
    assert r.status_code == 201, r.text
    s = r.json()["state"]
    gid, offered, turns = s["id"], set(), 0
    for _ in range(3000):
        if s["waiting"] in ("next_hand", "game_over") or turns > TURNS:
            return gid, s, offered
        if s["waiting"] == "you":
            turns += "draw" in s["legal"]
            offered |= {a.split()[0] for a in s["legal"]}
            r = c.post(f"/api/games/{gid}/actions", json=human_move(s, rng))
        else:
            r = c.post(f"/api/games/{gid}/advance")
        assert r.status_code == 200, r.text
        s = r.json()["state"]
    raise AssertionError("the first hand did not end")


@pytest.mark.parametrize("preset", list(PRESETS))
@pytest.mark.slow
def test_forty_seeds_of_every_rule_system_play_through_the_api(data_dir: Path, preset: str) -> None:
    rules = dataclasses.replace(Rules.parse(preset), jokers=2, rummy_calls=True)
    app = create_app(Setup(rules, "greedy"), data_dir, seed=0)
    c = TestClient(app, base_url="http://127.0.0.1")
    rng = random.Random(preset)
    offered: set[str] = set()
    for _ in range(SEEDS):
        gid, _, kinds = first_hand(c, rng)
        offered |= kinds
        saved = c.app.state.service.store.load(gid)
        played = c.app.state.service.tables[gid].record.action_count
        assert saved is not None and saved.action_count == played
    assert {"draw", "meld", "discard", "call", "pass"} <= offered, offered
