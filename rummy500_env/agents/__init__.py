"""Agents: all implement ``act(observation, action_mask) -> int``.

`RandomAgent`, `GreedyAgent`, `ExpertAgent` and `SearchAgent` read the observation through a
`View` (only what their seat may know); `PolicyAgent` plays an exported policy and is
imported lazily, so the bots never load torch. `make_agent` builds any of them from a spec
such as ``"expert"`` or ``"search:50ms"`` (`check_spec` says what is allowed).
"""

from typing import Any

from rummy500_env.agents.base import Agent, as_agent
from rummy500_env.agents.expert import ExpertAgent
from rummy500_env.agents.greedy import GreedyAgent
from rummy500_env.agents.random_agent import RandomAgent
from rummy500_env.agents.registry import check_spec, make_agent
from rummy500_env.agents.search import SearchAgent
from rummy500_env.agents.view import View, ViewDecoder

__all__ = [
    "Agent",
    "ExpertAgent",
    "GreedyAgent",
    "PolicyAgent",
    "RandomAgent",
    "SearchAgent",
    "View",
    "ViewDecoder",
    "as_agent",
    "check_spec",
    "make_agent",
]


def __getattr__(name: str) -> Any:
    if name == "PolicyAgent":
        from rummy500_env.agents.policy import PolicyAgent

        return PolicyAgent
    raise AttributeError(f"module 'rummy500_env.agents' has no attribute {name!r}")
