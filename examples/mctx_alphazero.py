"""AlphaZero-style search over the JAX engine with DeepMind's mctx: a policy file's card network
gives the prior and the value, the engine itself is the model, and a batch of games is
searched in one jitted call.

A sketch of the interface, not a fair player: the search steps the true state, so it sees
every hand, as one determinization of a PIMC search does (rummy500_env's `psearch` samples the
hidden cards instead). At two players the rewards are zero-sum, so a step that passes the turn
flips the sign of what follows (`discount` -1, as in pgx's AlphaZero examples); a player who
acts again (a draw, then melds, then a discard) keeps it (+1).

    python examples/mctx_alphazero.py --hands 8 --simulations 32
"""

from __future__ import annotations

import argparse

import jax
import jax.numpy as jnp
import mctx
import numpy as np

import rummy500_env.jax
from rummy500_env.agents.policy import PolicyAgent
from rummy500_env.jax import bots
from rummy500_env.jax.network import CardNetwork, masked_logits, params_from_arrays


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--hands", type=int, default=8, help="hands played side by side")
    ap.add_argument("--simulations", type=int, default=32)
    ap.add_argument("--max-steps", type=int, default=400, help="stop the hands after these")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()

    env = rummy500_env.jax.make("standard", episode="hand")  # reward: score difference / 100
    agent = PolicyAgent.load("standard")  # the shipped 2-player model
    spec = agent.metadata["network"]
    net = CardNetwork.for_rules(env.rules, spec["channels"], spec["blocks"], spec["hidden"])
    weights = {k: v.numpy() for k, v in agent.network.state_dict().items()}
    params = params_from_arrays(weights, net)
    step_all = jax.vmap(env.step)

    def root_fn(state: rummy500_env.jax.State) -> mctx.RootFnOutput:
        logits, value = net.apply(params, state.observation)
        prior = masked_logits(logits, state.legal_action_mask)
        return mctx.RootFnOutput(prior_logits=prior, value=value, embedding=state)

    def recurrent_fn(
        _: None, key: jax.Array, action: jax.Array, state: rummy500_env.jax.State
    ) -> tuple[mctx.RecurrentFnOutput, rummy500_env.jax.State]:
        player = state.current_player
        following = step_all(state, action, jax.random.split(key, action.shape[0]))
        reward = jnp.take_along_axis(following.rewards, player[:, None], 1)[:, 0]
        logits, value = net.apply(params, following.observation)
        over = following.terminated | following.truncated
        turn_passes = following.current_player != player
        out = mctx.RecurrentFnOutput(
            reward=reward,
            discount=jnp.where(over, 0.0, jnp.where(turn_passes, -1.0, 1.0)),
            prior_logits=masked_logits(logits, following.legal_action_mask),
            value=jnp.where(over, 0.0, value),
        )
        return out, following

    @jax.jit
    def play(state: rummy500_env.jax.State, key: jax.Array) -> rummy500_env.jax.State:
        """One step of every hand: seat 0 searches, seat 1 is the JAX port of GreedyAgent."""
        search_key, step_key = jax.random.split(key)
        searched = mctx.gumbel_muzero_policy(
            params=None,
            rng_key=search_key,
            root=root_fn(state),
            recurrent_fn=recurrent_fn,
            num_simulations=a.simulations,
            invalid_actions=~state.legal_action_mask,
            max_num_considered_actions=16,
        ).action
        greedy = jax.vmap(lambda s: bots.greedy_action(env, s))(state)
        action = jnp.where(state.current_player == 0, searched, greedy)
        return step_all(state, action, jax.random.split(step_key, a.hands))

    key = jax.random.PRNGKey(a.seed)
    state = jax.vmap(env.init)(jax.random.split(key, a.hands))
    totals = np.zeros(2)
    for i in range(a.max_steps):
        state = play(state, jax.random.fold_in(key, i))
        totals += np.asarray(state.rewards).sum(axis=0)
        if bool((state.terminated | state.truncated).all()):
            break
    over = int((state.terminated | state.truncated).sum())
    print(
        f"mctx: Gumbel MuZero search ({a.simulations} simulations a move) against greedy, "
        f"{over} of {a.hands} hands over in {i + 1} steps; the search's mean score "
        f"difference {100 * totals[0] / a.hands:+.1f} a hand"
    )


if __name__ == "__main__":
    main()
