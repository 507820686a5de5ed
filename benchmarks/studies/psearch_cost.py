"""What a simulation of `PolicySearchAgent` costs with each way of valuing a candidate: CPU
milliseconds a simulation (one world × one candidate), over the same positions of
ExpertAgent hands, at a fixed number of simulations a decision, in the studies' baseline
setting (`_lab.PAPER`).

    python benchmarks/studies/psearch_cost.py --simulations 64 --decisions 40

CPU time of this process (`time.process_time`), so other jobs on the machine do not inflate
it; torch on one thread.
"""

from __future__ import annotations

import argparse
import time

import torch
from _lab import PAPER

from rummy500_env.agents.expert import ExpertAgent
from rummy500_env.agents.psearch import LEAVES, PolicySearchAgent
from rummy500_env.engine.game import Game
from rummy500_env.engine.numbers import int_option
from rummy500_env.engine.rules import Rules


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--simulations", type=int_option("simulations"), default=64)
    ap.add_argument("--decisions", type=int_option("decisions"), default=40)
    ap.add_argument("--leaves", nargs="+", choices=LEAVES, default=list(LEAVES))
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    rules = Rules()
    expert = ExpertAgent(rules)
    positions = []
    seed = 0
    while len(positions) < args.decisions:
        g = Game.new(rules, seed=seed)
        seed += 1
        while not g.is_hand_over and len(positions) < args.decisions:
            legal = g.legal_actions()
            if len(legal) > 1:
                positions.append((g.seat_view(g.current_player), legal))
            g.play_unchecked(expert.decide(g.seat_view(g.current_player), legal))
    for leaf in args.leaves:
        setting = PAPER | {"leaf": leaf}
        agent = PolicySearchAgent(rules, simulations=args.simulations, **setting, seed=0)
        agent.decide(*positions[0])  # warm up
        sims = 0
        start = time.process_time()
        for view, legal in positions:
            agent.decide(view, legal)
            sims += agent.last_simulations
        cpu = time.process_time() - start
        print(
            f"{leaf:8s} {1000 * cpu / sims:6.3f} CPU ms a simulation, "
            f"{1000 * cpu / len(positions):7.1f} CPU ms a decision ({sims / len(positions):.0f} "
            f"simulations)"
        )


if __name__ == "__main__":
    main()
