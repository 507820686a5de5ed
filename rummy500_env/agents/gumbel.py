"""`GumbelAgent`: the fair Gumbel search of `rummy500_env.jax.search` as a player (the
``gumbel`` agent spec). It needs the ``jax`` extra.

A decision reads the seat's `SeatView` only: one world of it (`Game.from_seat_view`) becomes
a JAX state, from which the search deals its own worlds for the seat (`Env.deal_world`), so
the choice does not depend on which world that was (tests/test_gumbel_agent.py). The search
values the best `candidates` moves by the policy's prior in `worlds` worlds with greedy
leaves and the value head (`rummy500_env.jax.search`), and plays the survivor of sequential
halving; without Gumbel noise, so the player is deterministic given its seed.

The first decision compiles the search (10 to 30 s on a CPU, once per process, rules and
budget); then a decision of the default budget (64 simulations over 8 worlds) takes 17.4 ms
(median, the project's 2-core AMD EPYC). At that budget it is level with the policy it
searches with (docs/experiments.md, 2026-12-06).
"""

from __future__ import annotations

import functools
import random
from collections.abc import Sequence
from typing import Any

from rummy500_env.agents.bot import Bot
from rummy500_env.engine.errors import RulesError
from rummy500_env.engine.game import Game
from rummy500_env.engine.notation import Action
from rummy500_env.engine.rules import Rules
from rummy500_env.engine.seat_view import SeatView

SIMULATIONS = 64
"""Leaf evaluations a decision when the spec names none."""
WORLDS = 8
"""Worlds a decision when the spec names none."""
LEAF = "turn"
"""How far the search's leaves play (`SearchConfig.leaf`)."""
HORIZON = 16
"""Greedy steps a leaf plays at most (`SearchConfig.horizon`)."""


class GumbelAgent(Bot):
    """The fair JAX search as a player (module docstring). `policy`: a `PolicyAgent`, a policy
    file or a shipped name with the card network (None: the shipped policy made for `rules`)."""

    def __init__(
        self,
        rules: Rules | str | dict[str, Any] = "standard",
        policy: Any = None,
        simulations: int = SIMULATIONS,
        worlds: int = WORLDS,
        seed: int | None = None,
    ) -> None:
        super().__init__(rules)
        try:
            import jax

            import rummy500_env.jax as rj
            from rummy500_env.jax.network import from_policy
            from rummy500_env.jax.search import SearchConfig, search
        except ImportError as e:
            raise ImportError(
                "the gumbel agent needs JAX, which is not installed: "
                'pip install "rummy500_env[jax]"'
            ) from e
        from rummy500_env.agents.psearch import _load_policy

        try:
            rj.env.check_rules(self.rules)
        except RulesError as e:
            raise RulesError(
                f"gumbel searches on the JAX engine: {e}; psearch plays any rules"
            ) from None
        policy_agent = _load_policy(policy, self.rules)
        self.env = rj.make(self.rules, episode=_episode_of(policy_agent))
        try:
            self.network, self.params = from_policy(policy_agent, self.rules)
        except ValueError as e:
            raise ValueError(
                f"gumbel searches with a card-network policy: {e} (train one with "
                "training.ppo or training.jax_ppo)"
            ) from None
        self.config = SearchConfig(
            simulations=simulations, worlds=worlds, leaf=LEAF, horizon=HORIZON
        )
        self.rng = random.Random(seed)
        self.key = jax.random.PRNGKey(self.rng.getrandbits(31))
        self.decisions = 0
        self._search = _compiled(search)
        self._jax = jax

    def decide(self, view: SeatView, legal: Sequence[Action]) -> Action:
        ordered = self.ordered(view, legal)
        if len(ordered) == 1:
            return ordered[0]  # nothing to search
        jax = self._jax
        state = self.env.from_game(Game.from_seat_view(view, self.rng, check=False))
        batch = jax.tree_util.tree_map(lambda a: a[None], state)
        key = jax.random.fold_in(self.key, self.decisions)
        self.decisions += 1
        out = self._search(self.env, self.network, self.params, batch, key, self.config)
        return self.codec.decode(view, int(out.action[0]))

    def __repr__(self) -> str:
        return (
            f"GumbelAgent({self.rules!r}, simulations={self.config.simulations}, "
            f"worlds={self.config.worlds})"
        )


def _episode_of(policy_agent: Any) -> str:
    """The episode the policy was trained for: its value head's unit (default: a hand)."""
    training = policy_agent.metadata.get("training") or {}
    episode = training.get("episode", "hand")
    return episode if episode in ("hand", "game") else "hand"


@functools.cache
def _compiled(search: Any) -> Any:
    """The search jitted once per process: every agent shares its compiles (one per rules,
    network and budget)."""
    import jax

    return jax.jit(search, static_argnums=(0, 1))
