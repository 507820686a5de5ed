"""OpenSpiel: load ``python_rummy500``, check it as OpenSpiel checks its games, and let
OpenSpiel's IS-MCTS bot play hands against the package's ExpertAgent.

``import rummy500_env.rl.openspiel`` registers the game; its parameters are the `Rules` fields
(plus ``episode`` and ``returns``). Every card dealt and drawn is an explicit chance node, and
``resample_from_infostate`` deals the cards a seat cannot see again, which is what IS-MCTS
needs. The first half drives OpenSpiel's own bot on OpenSpiel's own loop (chance outcomes
sampled by the script, the bot's ``step`` at every decision); the second plays the same bot
as an agent of this package (`ISMCTSAgent`, spec ``ismcts:N``) through the tournament's arena,
which hands it the engine's `SeatView`.

    pip install -e ".[openspiel]"
    python examples/openspiel_ismcts.py --hands 2 --simulations 50
"""

from __future__ import annotations

import argparse

import numpy as np
import pyspiel
from open_spiel.python.algorithms import ismcts, mcts

import rummy500_env.rl.openspiel  # noqa: F401  (registers python_rummy500)
from rummy500_env import Rules
from rummy500_env.agents import ExpertAgent
from rummy500_env.agents.ismcts import ISMCTSAgent
from rummy500_env.evaluation.arena import play


def openspiel_loop(game: pyspiel.Game, simulations: int, seed: int) -> list[float]:
    """One hand on OpenSpiel's own loop: seat 0 is IS-MCTS with OpenSpiel's random-rollout
    evaluator, seat 1 plays uniformly at random; the returns."""
    rng = np.random.RandomState(seed)
    bot = ismcts.ISMCTSBot(
        game, mcts.RandomRolloutEvaluator(1, rng), uct_c=40.0, max_simulations=simulations,
        random_state=rng,
    )  # fmt: skip
    state = game.new_initial_state()
    while not state.is_terminal():
        if state.is_chance_node():
            outcomes, probs = zip(*state.chance_outcomes(), strict=True)
            state.apply_action(int(rng.choice(outcomes, p=probs)))
        elif state.current_player() == 0:
            state.apply_action(int(bot.step(state)))
        else:
            state.apply_action(int(rng.choice(state.legal_actions())))
    return list(state.returns())


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hands", type=int, default=2, help="hands against ExpertAgent")
    ap.add_argument("--simulations", type=int, default=50, help="IS-MCTS simulations a move")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    game = pyspiel.load_game("python_rummy500", {"jokers": 2, "rummy_calls": True})
    pyspiel.random_sim_test(game, num_sims=1, serialize=True, verbose=False)
    print(f"random_sim_test passed: {game}")

    # OpenSpiel's random rollouts are slow on a long card game: a few simulations show it.
    returns = openspiel_loop(pyspiel.load_game("python_rummy500"), 5, args.seed)
    print(f"OpenSpiel loop: IS-MCTS (random rollouts) vs random, returns {returns}")

    rules = Rules()
    margins = []
    for hand in range(args.hands):
        seat = hand % 2  # alternate the seats
        agent = ISMCTSAgent(rules, simulations=args.simulations, seed=args.seed + hand)
        agents = [agent, ExpertAgent(rules)] if seat == 0 else [ExpertAgent(rules), agent]
        scores = play(agents, rules, seed=args.seed + hand // 2, episode="hand").hand_scores[0]
        margins.append(scores[seat] - scores[1 - seat])
        print(f"hand {hand}: IS-MCTS in seat {seat}, hand scores {scores}")
    mean = sum(margins) / len(margins)
    print(f"openspiel: IS-MCTS ({args.simulations} simulations) vs expert, {len(margins)} hands, "
          f"mean margin {mean:+.1f}")  # fmt: skip


if __name__ == "__main__":
    main()
