"""Playing agents against each other: one game or hand per call, deterministic for a seed.

`play` is the one loop in which the package's tournaments (`training.evaluate`, training's
evaluations) ask agents for their moves; `tournament.play_task` builds the agents and calls it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rummy500_env.agents.base import Agent
from rummy500_env.engine.rules import Rules
from rummy500_env.rl.rummy500_v0 import raw_env


@dataclass
class Result:
    """The outcome of one game (or hand) from the seats' point of view."""

    winner: int | None
    totals: list[int]
    hand_scores: list[list[int]]
    truncated: bool


def play(
    agents: list[Agent],
    rules: Rules | str | dict[str, Any],
    seed: int,
    episode: str = "game",
    moves: list[int] | None = None,
) -> Result:
    """Play one game (or one hand) with `agents[i]` in seat i, dealt from `seed`; the action
    ids played are appended to `moves` in order when it is given (for game records)."""
    e = raw_env(rules=rules, episode=episode)
    e.reset(seed=seed)
    hands: list[list[int]] = []
    while True:
        agent = e.agent_selection
        if e.terminations[agent] or e.truncations[agent]:
            break
        obs = e.observe(agent)
        action = agents[e.agent_name_mapping[agent]].act(obs["observation"], obs["action_mask"])
        if moves is not None:
            action = int(action)
            moves.append(action)
        e.step(action)
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
