"""``python -m training.evaluate AGENT AGENT ...``: duplicate-deal tournaments that rank agents.

AGENT is any agent spec (`rummy500_env.agents.registry`: the bots, the searches, ``model``, a
shipped policy's name, a policy file, an ``llm:`` endpoint); ``--help`` lists them all.

Every pair of agents plays the same deals from every seat (two players: each deal twice, seats
swapped; more players: the pair fills the table alternately and the seats rotate, and with an
odd number of players the other agent also takes the extra seat), so the luck of the deal and
of the seat cancels; margin intervals treat each deal (all its seatings) as one sample. The
games per pair are rounded up to whole deals.

Games run in parallel, deterministically for a seed: in a process pool, or with ``--ray`` as
Ray tasks on a local Ray instance or a cluster (``--address``), with the same results. The tool
prints a table (games, wins, win rate with a 95% Wilson interval, mean points per hand, mean
final margin with its 95% interval) and Elo ratings fitted by maximum likelihood
(Bradley-Terry) with 95% intervals, and writes ``results.json``, ``pairs.csv`` and
``ratings.png`` to --out. Each game is also written to ``games.jsonl`` there as it ends: a
stopped tournament (Ctrl+C, a worker process killed) goes on with ``--resume`` (the same agents
and flags), playing only the games it lacks. A worker process that sends no sign of life for
``--worker-deadline`` seconds (its heartbeat, which beats whatever its game does: stopped,
frozen) stops the tournament with one error naming it, as a dead one does; Ctrl+C stops it with
one line, the workers terminated, then killed after a short grace. An agent that asks an
endpoint (``llm:``) also has its failed requests and fallbacks (the decisions that were not the
model's) listed.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
from pathlib import Path

from rummy500_env.agents.registry import agent_help, check_agents, check_spec, resolve_spec
from rummy500_env.engine.errors import Rummy500Error
from rummy500_env.engine.numbers import int_option
from rummy500_env.engine.rules import PRESETS
from rummy500_env.evaluation.pool import DEADLINE_S
from rummy500_env.evaluation.reports import folder_problem, print_table, write_outputs
from rummy500_env.evaluation.tournament import Config, EvaluateError, Journal, run

# This module is the command (its --help is the docstring above); the games and their summary
# are `evaluation.tournament`, the statistics `evaluation.stats`, the table and files
# `evaluation.reports`.


def _parser() -> argparse.ArgumentParser:
    """The command's flags, kept apart from their checks so that --help reads in one place."""
    # argparse, not tyro: this module stays torch-free and needs no train extra.
    ap = argparse.ArgumentParser(
        prog="python -m training.evaluate",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=agent_help(),
    )
    ap.add_argument("agents", nargs="+", metavar="AGENT")
    ap.add_argument(
        "--games",
        type=int_option("games"),
        default=200,
        help="games per pair, rounded up to whole deals (default 200)",
    )
    ap.add_argument(
        "--rules",
        default="standard",
        help=f"a preset ({', '.join(PRESETS)}), a preset and field=value overrides "
        "(standard,target=300) or a JSON object of rules fields, e.g. "
        '\'{"jokers": 2, "rummy_calls": true}\'',
    )
    ap.add_argument(
        "--players", type=int_option("players"), default=None, help="override the preset's players"
    )
    ap.add_argument("--episode", default="game", help="game (to the target) or hand")
    ap.add_argument(
        "--field",
        action="store_true",
        help="one against the field: the first AGENT in one seat, each other AGENT in turn in "
        "every other seat; reports its win share beside the fair share",
    )
    _add_run_flags(ap)
    return ap


def _add_run_flags(ap: argparse.ArgumentParser) -> None:
    """The flags for how the games run and where they go (pool, seed, files, Ray), apart from
    those that say which games are played."""
    ap.add_argument("--workers", type=int_option("workers"), default=os.cpu_count() or 1)
    ap.add_argument(
        "--worker-deadline",
        type=int_option("worker-deadline"),
        default=int(DEADLINE_S),
        metavar="SECONDS",
        help="a worker process silent this long (no heartbeat: stopped, frozen) is an error "
        f"naming it (default {DEADLINE_S:.0f})",
    )
    ap.add_argument("--seed", type=int_option("seed"), default=0)
    ap.add_argument(
        "--out",
        default="runs/evaluate",
        help="folder for JSON, CSV and PNG, and games.jsonl: each game as it ends",
    )
    ap.add_argument(
        "--resume",
        action="store_true",
        help="go on with the stopped tournament in --out: keep the games its games.jsonl holds "
        "and play the rest (give the same agents and flags)",
    )
    ap.add_argument(
        "--record",
        default=None,
        metavar="DIR",
        help="write one game record (JSON, replays exactly) per game into DIR; watch one with "
        "python -m rummy500_env.play --replay FILE",
    )
    ap.add_argument(
        "--ray",
        action="store_true",
        help="play the games as Ray tasks (a local Ray instance of --workers CPUs, or the "
        "cluster at --address); the results are those of the local pool",
    )
    ap.add_argument(
        "--address", default=None, help='with --ray: the Ray cluster to join, e.g. "auto"'
    )


def _check_flags(a: argparse.Namespace) -> None:
    """Raise an EvaluateError for a flag that cannot work, now rather than after the games."""
    if len(a.agents) < 2:
        raise EvaluateError("give at least two agents, e.g. `greedy random`")
    if a.games < 1:
        raise EvaluateError(f"--games {a.games}: give a positive number of games per pair")
    if a.episode not in ("game", "hand"):
        raise EvaluateError(f"--episode {a.episode!r}: use 'game' or 'hand'")
    if a.workers < 1:
        raise EvaluateError(f"--workers {a.workers}: use 1 or more")
    if a.worker_deadline < 1:
        raise EvaluateError(f"--worker-deadline {a.worker_deadline}: use 1 second or more")
    if a.address is not None and not a.ray:
        raise EvaluateError(f"--address {a.address!r} needs --ray")
    for flag, folder in (("--out", a.out), ("--record", a.record)):
        problem = None if folder is None else folder_problem(Path(folder), flag)
        if problem is not None:  # now, not after the games
            raise EvaluateError(problem)
    if a.ray and importlib.util.find_spec("ray") is None:  # now, not a traceback mid-run
        raise EvaluateError(
            '--ray needs Ray: pip install "ray[default]" (or the rllib extra: '
            'pip install torch==2.13.0 -e ".[rllib]")'
        )


def parse_args(argv: list[str] | None = None) -> Config:
    """The checked Config for argv: flags, rules and agents all fail here, before any game."""
    a = _parser().parse_args(argv)
    _check_flags(a)
    cfg = Config(
        [check_spec(s) for s in a.agents],
        a.games,
        a.rules,
        a.players,
        a.episode,
        a.workers,
        a.seed,
        a.out,
        ray=a.ray,
        address=a.address,
        record=a.record,
        field=a.field,
        journal=True,
        resume=a.resume,
        worker_deadline=a.worker_deadline,
    )
    rules = cfg.game_rules()  # a RulesError now, not in a worker
    cfg.specs = [resolve_spec(s, rules) for s in cfg.specs]  # "model": the shipped policy's name
    check_agents(cfg.specs, rules)  # each loads for these rules: an error now, not mid-run
    return cfg


def main(argv: list[str] | None = None) -> int:
    """The command: 0 when the tournament's results are written, 2 with one ``error:`` line,
    130 with one line after Ctrl+C (`stopped`)."""
    cfg: Config | None = None
    try:
        cfg = parse_args(argv)
        return play_and_report(cfg)
    except Rummy500Error as e:  # a --resume of another tournament's journal, a worker killed
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(stopped(cfg), file=sys.stderr)
        return 130


def stopped(cfg: Config | None) -> str:
    """The line Ctrl+C ends the command with: the games its journal keeps for ``--resume``."""
    journal = None if cfg is None else Path(cfg.out) / Journal.NAME
    if journal is None or not journal.is_file():
        return "stopped"
    games = len(journal.read_text().splitlines()) - 1  # below the line naming the tournament
    return (
        f"stopped; the {games} games played are kept in {journal}: run the same command with "
        "--resume to play the rest"
    )


def play_and_report(cfg: Config) -> int:
    """Play the tournament, print its table and write its files."""
    t0 = time.time()
    summary = run(cfg)
    summary["wall_s"] = time.time() - t0
    print_table(summary)
    written = write_outputs(summary, Path(cfg.out))
    print(f"\nwrote {', '.join(written)} to {cfg.out}/ ({summary['wall_s']:.0f}s)")
    if cfg.record is not None:
        print(f"wrote one game record per game to {cfg.record}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
