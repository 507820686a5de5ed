"""``python -m rummy500_env``: watch one seeded game between bots, hand by hand.

    python -m rummy500_env --seed 7 --players expert greedy --rules standard
    python -m rummy500_env --players search:20ms expert random --verbose

A player is any agent spec (`rummy500_env.agents.registry`; ``--help`` lists them all).
"""

from __future__ import annotations

import argparse
from functools import partial

from rummy500_env.agents.registry import AgentSpecError, agent_help, check_spec, make_agent
from rummy500_env.engine.errors import Rummy500Error
from rummy500_env.engine.numbers import int_option
from rummy500_env.engine.rules import PRESETS, Rules
from rummy500_env.rl.opponents import choose
from rummy500_env.rl.rummy500_v0 import raw_env


def _spec(text: str) -> str:
    """argparse type: a checked agent spec, its error shown as argparse shows a bad value."""
    try:
        return check_spec(text)
    except AgentSpecError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(
        prog="python -m rummy500_env",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=agent_help(),
    )
    ap.add_argument("--seed", type=int_option("seed"), default=7)
    ap.add_argument(
        "--rules",
        default="standard",
        help=f"a preset ({', '.join(PRESETS)}), optionally with field=value overrides "
        "(nordic,target=300), or a JSON object of rules fields; --players sets the players",
    )
    ap.add_argument(
        "--players",
        nargs="+",
        default=["expert", "greedy"],
        type=_spec,
        metavar="AGENT",
        help="one agent per seat (their number sets the players); AGENT below",
    )
    ap.add_argument("--verbose", action="store_true", help="print every action")
    args = ap.parse_args(argv)
    try:
        rules = Rules.parse(args.rules, players=len(args.players))
        bots = [make_agent(spec, rules, seed=seat) for seat, spec in enumerate(args.players)]
    except Rummy500Error as e:  # bad rules, or an agent that does not load for them
        ap.error(str(e))
    env = raw_env(rules=rules)
    env.reset(seed=args.seed)
    game = env.game
    assert game is not None
    while not (all(env.terminations.values()) or all(env.truncations.values())):
        agent = env.agent_selection
        seat = env.agent_name_mapping[agent]
        action = choose(bots[seat], game, env.codec, partial(env.observe, agent))
        text = env.action_to_str(action)
        if args.verbose:
            print(f"P{seat} ({args.players[seat]}): {text}")
        before = game.copy()
        env.step(action)
        if "hand_scores" in env.infos[agent]:  # infos are cleared on the next step
            info = env.infos[agent]
            print(
                f"{before}\n-> P{seat} plays '{text}': hand {info['hands_played']} ends, "
                f"scores {info['hand_scores']}, totals {info['totals']}\n"
            )
    names = ", ".join(f"P{i} {n}" for i, n in enumerate(args.players))
    winner = env.infos["player_0"].get("winner")
    print(
        f"final totals {game.totals} ({names}); winner: "
        + ("none (a draw)" if winner is None else f"P{winner} {args.players[winner]}")
    )


if __name__ == "__main__":
    main()
