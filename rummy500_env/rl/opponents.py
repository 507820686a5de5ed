"""Seating agents at the table: the `Agent` interface every agent shares, `as_agent`, an
opponent pool's weights, the seeded `RandomAgent`, and `choose`, the one way any agent is asked
for a move.

These live in the rl layer because the envs seat opponents (the single-agent view and its
vector env play them in the other seats); `rummy500_env.agents` re-exports them for users.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from rummy500_env.engine.errors import Rummy500Error
from rummy500_env.engine.game import Game
from rummy500_env.rl.actions import ActionCodec


@runtime_checkable
class Agent(Protocol):
    """Anything that picks a legal action id from an observation and its mask.

    Works inside the AEC env, inside `Rummy500SingleAgentEnv` as an opponent, and outside
    both. A plain callable ``f(observation, action_mask) -> int`` is accepted wherever an
    agent is (see `as_agent`). Bots (`rummy500_env.agents.Bot`) also have ``decide(view,
    legal)``, which `choose` prefers.
    """

    def act(self, observation: np.ndarray[Any, Any], action_mask: np.ndarray[Any, Any]) -> int:
        """The chosen action id; must be one where ``action_mask`` is 1."""
        ...


def choose(
    agent: Any, game: Game, codec: ActionCodec, observe: Callable[[], Mapping[str, Any]]
) -> int:
    """The action id `agent` picks for the seat to act in `game`.

    A bot (anything with ``decide``) decides on the seat's information state
    (`Game.seat_view`) and the engine's legal actions, and no observation is built: that is
    the fast path, and what a bot's ``act`` would reconstruct from the observation anyway. Any
    other agent acts on the observation dict `observe` returns (``observation`` and
    ``action_mask``). The id is not checked here: the env (or caller) that plays it does.
    """
    decide = getattr(agent, "decide", None)
    if decide is not None:
        view = game.seat_view(game.current_player)
        return codec.encode(game, decide(view, game.legal_actions()))
    obs = observe()
    return int(agent.act(obs["observation"], obs["action_mask"]))


class RandomAgent:
    """Picks uniformly among the ids where the mask is 1; the baseline everything must beat."""

    def __init__(self, seed: int | None = None) -> None:
        self.rng = np.random.default_rng(seed)

    def act(self, observation: np.ndarray[Any, Any], action_mask: np.ndarray[Any, Any]) -> int:
        legal = np.flatnonzero(action_mask)
        if legal.size == 0:
            raise ValueError("the action mask has no legal action: is this agent to act?")
        return int(legal[self.rng.integers(legal.size)])

    def __repr__(self) -> str:
        return "RandomAgent()"


class _CallableAgent:
    def __init__(self, fn: Any) -> None:
        self.fn = fn

    def act(self, observation: np.ndarray[Any, Any], action_mask: np.ndarray[Any, Any]) -> int:
        return int(self.fn(observation, action_mask))


def as_agent(agent: Any) -> Agent:
    """Accept an object with ``act`` or a plain callable; anything else is a clear error."""
    if hasattr(agent, "act") and callable(agent.act):
        return agent  # type: ignore[no-any-return]  # has act: an Agent by the protocol
    if callable(agent):
        return _CallableAgent(agent)
    raise TypeError(
        f"an agent needs act(observation, action_mask) -> int or must be callable, got {agent!r}"
    )


def pool_weights(pool: Sequence[Any], weights: Sequence[float] | None) -> list[float]:
    """The sampling weights of an opponent pool (equal when None), checked: one per entry,
    none negative, a positive sum."""
    if not pool:
        raise Rummy500Error("the opponent pool is empty: give at least one opponent")
    out = [1.0] * len(pool) if weights is None else [float(w) for w in weights]
    if len(out) != len(pool) or any(w < 0 for w in out) or sum(out) <= 0:
        got = list(weights or [])
        raise Rummy500Error(
            f"weights must be {len(pool)} numbers >= 0 with a positive sum, got {got}"
        )
    return out
