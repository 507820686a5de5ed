"""Rummy 500 as a JAX array program with pgx's `Env` interface (the `jax` extra).

>>> import jax, rummy500_env.jax
>>> env = rummy500_env.jax.make("standard")
>>> state = jax.jit(env.init)(jax.random.PRNGKey(0))
>>> state.legal_action_mask.shape, state.observation.shape
((360,), (748,))

The rules of docs/rules.md §1–4 for one deck and 2–4 players, as pure functions over
fixed-shape arrays (`_rules`, `_observe`): everything jit-compiles and vmaps. Same action ids
as `rummy500_env.rl.actions` and the same observation features as `raw_env`, float for float;
`Env.to_game` and `Env.from_game` move a position between this engine and the engine `Game`
(tests/test_jax_differential.py plays both from the same deals). `State` holds arrays only;
the rules live on the `Env`. Jokers, calls, two decks and more players are refused by `make`
with a `RulesError` naming what is supported.
"""

from __future__ import annotations

try:
    import jax  # noqa: F401 - the extra's one dependency, checked first
except ImportError as e:  # pragma: no cover - tested with jax hidden
    raise ImportError(
        'rummy500_env.jax needs JAX, which is not installed: pip install "rummy500_env[jax]"'
    ) from e

from rummy500_env.jax._state import State
from rummy500_env.jax.env import SUPPORTED, Env, make

__all__ = ["SUPPORTED", "Env", "State", "make"]
