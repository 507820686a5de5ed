"""The one interface every agent shares: ``act(observation, action_mask) -> int``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from rummy500_env.engine.errors import Rummy500Error


@runtime_checkable
class Agent(Protocol):
    """Anything that picks a legal action id from an observation and its mask.

    Works inside the AEC env, inside `Rummy500SingleAgentEnv` as an opponent, and outside
    both. A plain callable ``f(observation, action_mask) -> int`` is accepted wherever an
    agent is (see `as_agent`).
    """

    def act(self, observation: np.ndarray[Any, Any], action_mask: np.ndarray[Any, Any]) -> int:
        """The chosen action id; must be one where ``action_mask`` is 1."""
        ...


class _CallableAgent:
    def __init__(self, fn: Any) -> None:
        self.fn = fn

    def act(self, observation: np.ndarray[Any, Any], action_mask: np.ndarray[Any, Any]) -> int:
        return int(self.fn(observation, action_mask))


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


def as_agent(agent: Any) -> Agent:
    """Accept an object with ``act`` or a plain callable; anything else is a clear error."""
    if hasattr(agent, "act") and callable(agent.act):
        return agent  # type: ignore[no-any-return]
    if callable(agent):
        return _CallableAgent(agent)
    raise TypeError(
        f"an agent needs act(observation, action_mask) -> int or must be callable, got {agent!r}"
    )
