"""`RandomAgent`: uniform over the legal actions, seeded."""

from __future__ import annotations

from typing import Any

import numpy as np


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
