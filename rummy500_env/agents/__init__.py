"""Agents: all implement ``act(observation, action_mask) -> int``.

`GreedyAgent`, `ExpertAgent`, `SearchAgent` and `PolicySearchAgent` (the `Bot`s) decide on
the engine's information state, `decide(seat_view, legal_actions) -> Action`, which the
package's own loops hand them; their `act` decodes an observation into that same `SeatView`
once. `RandomAgent` needs only the mask. `PolicyAgent` plays an exported policy and
`PolicySearchAgent` searches with one; both are imported lazily, so the bots never load
torch. `make_agent` builds any of them from a spec such as ``"expert"`` or ``"search:50ms"``
(`check_spec` says what is allowed).
"""

from typing import Any

from rummy500_env.agents.bot import Bot
from rummy500_env.agents.expert import ExpertAgent
from rummy500_env.agents.greedy import GreedyAgent
from rummy500_env.agents.registry import check_spec, make_agent
from rummy500_env.agents.search import SearchAgent
from rummy500_env.rl.opponents import Agent, RandomAgent, as_agent

__all__ = [
    "Agent",
    "Bot",
    "ExpertAgent",
    "GreedyAgent",
    "PolicyAgent",
    "PolicySearchAgent",
    "RandomAgent",
    "SearchAgent",
    "as_agent",
    "check_spec",
    "make_agent",
]


def __getattr__(name: str) -> Any:
    if name == "PolicyAgent":
        from rummy500_env.agents.policy import PolicyAgent

        return PolicyAgent
    if name == "PolicySearchAgent":  # torch, like PolicyAgent: only when asked for
        from rummy500_env.agents.psearch import PolicySearchAgent

        return PolicySearchAgent
    raise AttributeError(f"module 'rummy500_env.agents' has no attribute {name!r}")
