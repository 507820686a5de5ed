"""The one interface every agent shares: ``act(observation, action_mask) -> int``."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np


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


def as_agent(agent: Any) -> Agent:
    """Accept an object with ``act`` or a plain callable; anything else is a clear error."""
    if hasattr(agent, "act") and callable(agent.act):
        return agent  # type: ignore[no-any-return]
    if callable(agent):
        return _CallableAgent(agent)
    raise TypeError(
        f"an agent needs act(observation, action_mask) -> int or must be callable, got {agent!r}"
    )
