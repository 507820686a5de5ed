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


def _id(config: tuple) -> str:
    preset, fields, episode, seed = config
    return f"{preset}-{episode}-{seed}" + "".join(f"-{k}={v}" for k, v in fields.items())


@pytest.mark.parametrize("index", range(len(CONFIGS)), ids=[_id(c) for c in CONFIGS])
def test_env_replays_the_recorded_game(index):
    preset, fields, episode, seed = CONFIGS[index]
    recorded = RECORDED["env"][index]
    now = env_transcript(preset, fields, episode, seed)
    for k, (got, want) in enumerate(zip(now["steps"], recorded["steps"], strict=False)):
        assert got == want, f"step {k} differs"
    assert len(now["steps"]) == len(recorded["steps"])
    assert now["done"] == recorded["done"]


@pytest.mark.parametrize("index", range(len(CONFIGS)), ids=[_id(c) for c in CONFIGS])
def test_engine_replays_the_recorded_game(index):
    preset, fields, _episode, seed = CONFIGS[index]
    recorded = RECORDED["engine"][index]
    now = engine_transcript(preset, fields, seed)
    for k, (got, want) in enumerate(zip(now["steps"], recorded["steps"], strict=False)):
        assert got == want, f"step {k} differs"
    assert now["final"] == recorded["final"] and now["winner"] == recorded["winner"]


def test_a_changed_game_is_caught():
    """The comparison can fail: another seed gives another transcript."""
    preset, fields, episode, seed = CONFIGS[1]
    assert env_transcript(preset, fields, episode, seed + 100) != RECORDED["env"][1]
