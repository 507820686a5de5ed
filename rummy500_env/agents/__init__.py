"""Agents: all implement ``act(observation, action_mask) -> int``."""

from rummy500_env.agents.base import Agent, as_agent
from rummy500_env.agents.random_agent import RandomAgent

__all__ = ["Agent", "RandomAgent", "as_agent"]
