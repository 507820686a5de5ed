"""``python -m rummy500_env``: watch one seeded game between two bots, hand by hand.

    python -m rummy500_env --seed 7 --players expert greedy --rules standard
"""

from __future__ import annotations

import argparse

from rummy500_env.agents import ExpertAgent, GreedyAgent, RandomAgent
from rummy500_env.env import raw_env
from rummy500_env.rules import PRESETS, Rules

BOTS = {"random": lambda rules: RandomAgent(0), "greedy": GreedyAgent, "expert": ExpertAgent}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m rummy500_env", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--rules", default="standard", choices=sorted(PRESETS))
    ap.add_argument("--players", nargs="+", default=["expert", "greedy"], choices=sorted(BOTS),
                    help="one bot per seat (their number sets the players)")
    ap.add_argument("--verbose", action="store_true", help="print every action")
    args = ap.parse_args(argv)
    rules = Rules.preset(args.rules, players=len(args.players))
    bots = [BOTS[name](rules) for name in args.players]
    env = raw_env(rules=rules)
    env.reset(seed=args.seed)
    game = env.game
    assert game is not None
    while not (all(env.terminations.values()) or all(env.truncations.values())):
        agent = env.agent_selection
        seat = env.agent_name_mapping[agent]
        obs = env.observe(agent)
        action = bots[seat].act(obs["observation"], obs["action_mask"])
        text = env.action_to_str(action)
        if args.verbose:
            print(f"P{seat} ({args.players[seat]}): {text}")
        before = game.copy()
        env.step(action)
        if "hand_scores" in env.infos[agent]:  # infos are cleared on the next step
            info = env.infos[agent]
            print(f"{before}\n-> P{seat} plays '{text}': hand {info['hands_played']} ends, "
                  f"scores {info['hand_scores']}, totals {info['totals']}\n")
    names = ", ".join(f"P{i} {n}" for i, n in enumerate(args.players))
    winner = env.infos["player_0"].get("winner")
    print(f"final totals {game.totals} ({names}); winner: "
          + ("none (a draw)" if winner is None else f"P{winner} {args.players[winner]}"))


if __name__ == "__main__":
    main()
