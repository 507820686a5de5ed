"""Seeded games replay exactly as recorded: the engine and the env keep their behaviour.

The transcripts in `tests/golden/games.json` were recorded before the engine was split into
`rummy500_env.engine` (issue 10); regenerate them only on purpose, with
``python tests/golden/record.py``, when a behaviour change is intended.
"""

from __future__ import annotations

import json

import pytest

from tests.golden.record import CONFIGS, GOLDEN, engine_transcript, env_transcript

RECORDED = json.loads(GOLDEN.read_text())


def assert_same_steps(now: list, recorded: list) -> None:
    """Step by step, and the same number of steps: `strict` makes a game that ends earlier
    or later than recorded fail even when every step they share is equal."""
    for k, (got, want) in enumerate(zip(now, recorded, strict=True)):
        assert got == want, f"step {k} differs"


def _id(config: tuple) -> str:
    preset, fields, episode, seed = config
    return f"{preset}-{episode}-{seed}" + "".join(f"-{k}={v}" for k, v in fields.items())


@pytest.mark.parametrize("index", range(len(CONFIGS)), ids=[_id(c) for c in CONFIGS])
def test_env_replays_the_recorded_game(index):
    preset, fields, episode, seed = CONFIGS[index]
    recorded = RECORDED["env"][index]
    now = env_transcript(preset, fields, episode, seed)
    assert_same_steps(now["steps"], recorded["steps"])
    assert now["done"] == recorded["done"]


@pytest.mark.parametrize("index", range(len(CONFIGS)), ids=[_id(c) for c in CONFIGS])
def test_engine_replays_the_recorded_game(index):
    preset, fields, _episode, seed = CONFIGS[index]
    recorded = RECORDED["engine"][index]
    now = engine_transcript(preset, fields, seed)
    assert_same_steps(now["steps"], recorded["steps"])
    assert now["final"] == recorded["final"] and now["winner"] == recorded["winner"]


def test_a_changed_game_is_caught():
    """The comparison can fail: another seed gives another transcript."""
    preset, fields, episode, seed = CONFIGS[1]
    assert env_transcript(preset, fields, episode, seed + 100) != RECORDED["env"][1]


def test_a_game_of_another_length_is_caught():
    """A transcript one step shorter or longer than the recorded one fails, though every step
    they share is equal."""
    steps = RECORDED["engine"][0]["steps"]
    assert_same_steps(steps, list(steps))
    for other in (steps[:-1], [*steps, steps[-1]]):
        with pytest.raises(ValueError, match="zip"):
            assert_same_steps(other, steps)
