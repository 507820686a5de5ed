"""Playing agents against each other: one game or hand per call, deterministic for a seed.

Used by `training.evaluate` (tournaments) and by training's periodic evaluation.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from rummy500_env.agents.base import Agent
from rummy500_env.engine.errors import RulesError
from rummy500_env.engine.rules import PRESETS, Rules
from rummy500_env.rl.rummy500_v0 import raw_env


def parse_rules(text: str) -> Rules:
    """Rules from the command line: a preset name (``standard``) or a JSON object of `Rules`
    fields (``'{"jokers": 2, "rummy_calls": true}'``; fields left out keep the standard
    values, and ``"preset"`` picks another base preset)."""
    if not text.lstrip().startswith("{"):
        return Rules.preset(text)
    try:
        fields = json.loads(text)
    except json.JSONDecodeError as e:
        raise RulesError(f"rules {text!r} are not valid JSON: {e}") from None
    if not isinstance(fields, dict):
        raise RulesError(f"rules {text!r}: give a preset ({', '.join(PRESETS)}) or a JSON object")
    base = fields.pop("preset", "standard")
    return Rules.preset(base, **fields)


@dataclass
class Result:
    """The outcome of one game (or hand) from the seats' point of view."""

    winner: int | None
    totals: list[int]
    hand_scores: list[list[int]]
    truncated: bool


def play(
    agents: list[Agent], rules: Rules | str | dict[str, Any], seed: int, episode: str = "game"
) -> Result:
    """Play one game (or one hand) with `agents[i]` in seat i, dealt from `seed`."""
    e = raw_env(rules=rules, episode=episode)
    e.reset(seed=seed)
    hands: list[list[int]] = []
    while True:
        agent = e.agent_selection
        if e.terminations[agent] or e.truncations[agent]:
            break
        obs = e.observe(agent)
        e.step(agents[e.agent_name_mapping[agent]].act(obs["observation"], obs["action_mask"]))
        info = e.infos[agent]
        if "hand_scores" in info:  # set by the step that ended a hand, cleared after
            hands.append(list(info["hand_scores"]))
    game = e.game
    assert game is not None
    totals = game.totals
    if episode == "hand":
        winner = None
        best = max(totals)
        if totals.count(best) == 1:
            winner = totals.index(best)
        return Result(winner, totals, hands, False)
    return Result(game.winner, totals, hands, game.truncated)
