"""PettingZoo: the parallel API over the AEC env, and the envs from PettingZoo's registry.

Rummy 500 is turn-based (a turn is several steps by one agent), so PettingZoo's
``aec_to_parallel`` refuses it (``metadata["is_parallelizable"]`` is False) and
``turn_based_aec_to_parallel`` is the conversion: each parallel step takes an action from
every live agent and plays the one of the agent to act; the others' are ignored. It passes
PettingZoo's ``parallel_api_test``. With PettingZoo 1.27 or later, ``import rummy500_env``
also registers ``pettingzoo.make("aec", "rummy500_v0")`` and ``pettingzoo.make("parallel",
"rummy500_v0")`` (the same conversion); see `rummy500_env.rl.registration`.

    python examples/pettingzoo_parallel.py --steps 500
"""

from __future__ import annotations

import argparse

import numpy as np
import pettingzoo
from pettingzoo.test import parallel_api_test
from pettingzoo.utils.conversions import turn_based_aec_to_parallel

import rummy500_env


def play(env: pettingzoo.ParallelEnv, steps: int, seed: int) -> tuple[int, int]:
    """Random legal play for `steps` parallel steps: (steps played, episodes finished)."""
    rng = np.random.default_rng(seed)
    observations, _ = env.reset(seed=seed)
    episodes = 0
    for _ in range(steps):
        actions = {}
        for agent in env.agents:
            mask = observations[agent]["action_mask"]
            # The agent not to act has an all-zero mask; its action is ignored.
            legal = np.flatnonzero(mask) if mask.any() else np.arange(len(mask))
            actions[agent] = int(rng.choice(legal))
        observations, _, terminations, truncations, _ = env.step(actions)
        if not env.agents or all(terminations.values()) or all(truncations.values()):
            episodes += 1
            observations, _ = env.reset()
    return steps, episodes


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=500, help="parallel steps of random play")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    parallel_api_test(turn_based_aec_to_parallel(rummy500_env.env()), num_cycles=200)
    print("parallel_api_test passed")
    # The bare env raises on an illegal action: random play that finishes played none.
    env = turn_based_aec_to_parallel(rummy500_env.raw_env(episode="hand"))
    steps, episodes = play(env, args.steps, args.seed)
    print(f"turn_based_aec_to_parallel: {steps} steps of legal play, {episodes} hands finished")

    if hasattr(pettingzoo, "register"):  # the registry came with PettingZoo 1.27
        aec = pettingzoo.make("aec", "rummy500_v0", rules="standard")
        aec.reset(seed=args.seed)
        parallel = pettingzoo.make("parallel", "rummy500_v0", episode="hand")
        play(parallel, 10, args.seed)
        print(f"pettingzoo.make: {type(aec).__name__} and {type(parallel).__name__}")
    else:
        print(f"PettingZoo {pettingzoo.__version__} has no registry: pettingzoo.make skipped")


if __name__ == "__main__":
    main()
