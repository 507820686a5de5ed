"""Throughput benchmarks: ``python -m rummy500_env.bench [--engine] [--env] [--games N]
[--rules RULES]``.

Prints decisions/s and hands/s of the engine under random legal play, AEC steps/s of the
PettingZoo env (``raw_env`` and the wrapped ``env()``), and, when the peers' virtual
environment exists, the peers measured in the same run, with our/peer ratios. Speed targets
live here, never in timed tests.

The peers are measured by benchmarks/peers/peers_bench.py, in the virtual environment
benchmarks/peers/setup.sh builds (``PEERS_VENV``, by default ``$TMPDIR/rummy500-peers``). Both
live in a checkout of the repository, not in the wheel: an installed package finds the script
through ``PEERS_SCRIPT``, or says it has none and measures only itself.

``--rules`` measures other rules than ``standard`` (a preset, a preset and ``field=value``
overrides, or a JSON object of `Rules` fields: `Rules.parse`):
``--rules '{"jokers": 2, "rummy_calls": true}'`` measures jokers and calls
(docs/rules.md §5). The peers play their own game, so they are measured only for
``standard``.

The first line says which build runs (`rummy500_env.COMPILED`: the mypyc-compiled core, or
pure Python; ``RUMMY500_PURE=1`` runs the pure sources of a compiled install), and the JSON
carries it as ``build``. benchmarks/compiled.py alternates both builds and the peers.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rummy500_env import _build
from rummy500_env.engine.errors import RulesError
from rummy500_env.engine.game import Game
from rummy500_env.engine.numbers import int_option
from rummy500_env.engine.rules import PRESETS, Rules

CHECKOUT_PEERS_SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks/peers/peers_bench.py"
"""Where a checkout of the repository holds the peers' benchmark (benchmarks/ is not in the
wheel)."""
# engine, raw env, wrapped env: the peer each one is measured against, and the target ratio of
# the compiled build (docs/speed.md; the pure build's targets were 1, 1 and 4).
PEERS = {
    "engine": ("rlcard_gin_game", "decision_steps_per_s", 7.0),
    "raw_env": ("os_gin_obs_np", "decision_steps_per_s", 2.5),
    "env": ("pz_gin_rummy_v4", "decision_steps_per_s", 5.0),
}
# Second peers, reported without a target: OpenSpiel writing its observation into a numpy
# buffer (its fastest path), and PettingZoo's null env with the same wrappers (the floor).
MORE_PEERS = {"raw_env": "os_gin_obs_buf", "env": "pz_null_aec"}


def _pin_one_cpu() -> None:
    """Run on one CPU, like the peers' benchmark, so the figures compare."""
    if hasattr(os, "sched_setaffinity"):
        cpus = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cpus[-1]})


def timed(run_once: Callable[[], tuple[int, int]], seconds: float) -> tuple[float, float]:
    """Call `run_once` (returning (decisions, hands)) for `seconds`; return rates per second."""
    run_once()  # warm-up
    decisions = hands = 0
    t0 = time.perf_counter()
    while (elapsed := time.perf_counter() - t0) < seconds:
        d, h = run_once()
        decisions += d
        hands += h
    return decisions / elapsed, hands / elapsed


def engine_random_hand(rules: Rules, rng: random.Random) -> tuple[int, int]:
    """Play one hand of random legal actions with `legal_actions` + `apply`."""
    g = Game.new(rules, seed=rng.getrandbits(32))
    n = 0
    choice = rng.choice
    while g.phase not in ("hand_over", "game_over"):
        g.apply(choice(g.legal_actions()))
        n += 1
    return n, 1


def bench_engine(seconds: float, rules: Rules | str = "standard") -> dict[str, float]:
    rules = Rules.coerce(rules)
    rng = random.Random(0)
    dps, hps = timed(lambda: engine_random_hand(rules, rng), seconds)
    return {"decisions_per_s": dps, "hands_per_s": hps}


def bench_env(
    seconds: float, wrapped: bool, reps: int = 3, rules: Rules | str = "standard"
) -> dict[str, float]:
    """AEC decisions/s with random masked actions, measured the way the peers' benchmark
    measures PettingZoo envs (`aec_episode` in benchmarks/peers/peers_bench.py): at every
    step `last()` fetches the observation and the mask and `random.randrange` picks a legal
    id; decisions are the steps of agents still playing, per second spent stepping (resets
    excluded).
    The median of `reps` runs of `seconds` each, as the peers get; hands/s counts resets."""
    import numpy as np

    from rummy500_env.rl.rummy500_v0 import env as make_env
    from rummy500_env.rl.rummy500_v0 import raw_env

    e = make_env(rules=rules) if wrapped else raw_env(rules=rules)
    rng = random.Random(0)
    flatnonzero, randrange, perf = np.flatnonzero, rng.randrange, time.perf_counter
    e.reset(seed=0)

    def one_episode() -> tuple[int, float, int]:
        e.reset()  # the next deal of the seeded sequence
        t0 = perf()
        live = 0
        for _agent in e.agent_iter():
            obs, _r, term, trunc, _info = e.last()
            if term or trunc:
                action = None
            else:
                legal = flatnonzero(obs["action_mask"])
                action = int(legal[randrange(len(legal))])
                live += 1
            e.step(action)
        return live, perf() - t0, e.unwrapped.game.hands_played

    one_episode()  # warm-up
    rates, hands, total = [], 0, 0.0
    for _ in range(reps):
        live, stepping, t0 = 0, 0.0, perf()
        while perf() - t0 < seconds:
            n, dt, h = one_episode()
            live, stepping, hands = live + n, stepping + dt, hands + h
        rates.append(live / stepping)
        total += perf() - t0
    return {"steps_per_s": statistics.median(rates), "hands_per_s": hands / total}


def all_games_end(games: int) -> dict[str, int]:
    """Play `games` random games per preset to the end; return how many ended per preset."""
    out = {}
    for preset in PRESETS:
        rng = random.Random(preset)
        ended = 0
        for seed in range(games):
            g = Game.new(Rules.preset(preset), seed=seed)
            while g.phase != "game_over":
                if g.phase == "hand_over":
                    g.next_hand()
                else:
                    g.apply(rng.choice(g.legal_actions()))
            ended += 1
        out[preset] = ended
    return out


def _rules_arg(text: str) -> Rules:
    """``--rules``: `Rules.parse`, its error shown by argparse with the usage (exit 2)."""
    try:
        return Rules.parse(text)
    except RulesError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _seconds_arg(text: str) -> float:
    """``--seconds``: a finite number of seconds above 0 (argparse shows the error, exit 2)."""
    try:
        if not text.isascii():  # float() takes any script's digits: "٣" would be 3 seconds
            raise ValueError(text)
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 < seconds < math.inf:
        raise argparse.ArgumentTypeError(f"{text!r}: give a finite number of seconds above 0")
    return seconds


def peers_venv() -> Path:
    """The peers' virtual environment: ``PEERS_VENV``, or where setup.sh builds it."""
    return Path(os.environ.get("PEERS_VENV") or Path(tempfile.gettempdir()) / "rummy500-peers")


def peers_script() -> Path:
    """The peers' benchmark: ``PEERS_SCRIPT``, or the checkout's."""
    return Path(os.environ.get("PEERS_SCRIPT") or CHECKOUT_PEERS_SCRIPT)


def run_peers(names: list[str], seconds: float) -> dict[str, Any]:
    """Measure the peers with benchmarks/peers/peers_bench.py in their virtual environment;
    say why not (on stderr) when either is missing."""
    python, script = peers_venv() / "bin" / "python", peers_script()
    if not script.exists():
        print(
            f"(peers not measured: no {script}; the peers' benchmark is in a checkout of the "
            "repository, benchmarks/peers/, not in the installed package: set PEERS_SCRIPT)",
            file=sys.stderr,
        )
        return {}
    if not python.exists():
        print(
            f"(peers not measured: no virtual environment at {python.parent.parent}; build it "
            f"with {script.parent / 'setup.sh'}, or set PEERS_VENV)",
            file=sys.stderr,
        )
        return {}
    cmd = [str(python), str(script), "--json", "--only", ",".join(names)]
    cmd += ["--reps", "3", "--seconds", str(seconds), "--warmup", "0.5"]
    cmd += ["--legacy-pz-path", str(peers_venv() / "extra" / "pz1261")]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=True)
        results = dict(json.loads(done.stdout)["results"])
    except (subprocess.SubprocessError, ValueError, KeyError) as e:
        print(f"(peers not measured: {e})", file=sys.stderr)
        return {}
    for name, entry in results.items():
        if "metrics" not in entry:
            print(f"(peer {name} not measured: {'; '.join(entry['errors'])})", file=sys.stderr)
    return results


def compare_peers(ours: dict[str, float], wanted: list[str], seconds: float) -> dict[str, Any]:
    """Measure the peers of `wanted` figures now and give our ratio to each."""
    names = [PEERS[k][0] for k in wanted] + [MORE_PEERS[k] for k in wanted if k in MORE_PEERS]
    peers = run_peers(names, seconds)
    out: dict[str, Any] = {}
    for key in wanted:
        name, metric, need = PEERS[key]
        if "metrics" not in peers.get(name, {}):  # not measured, or every repetition failed
            continue
        value = peers[name]["metrics"][metric]["median"]
        out[key] = {"peer": name, "steps_per_s": value, "ratio": ours[key] / value}
        out[key]["target_ratio"] = need
        more = MORE_PEERS.get(key)
        if more is not None and "metrics" in peers.get(more, {}):
            value = peers[more]["metrics"][metric]["median"]
            out[key]["also"] = {"peer": more, "steps_per_s": value, "ratio": ours[key] / value}
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m rummy500_env.bench", description=__doc__)
    ap.add_argument("--engine", action="store_true", help="engine decisions/s and hands/s")
    ap.add_argument("--env", action="store_true", help="AEC steps/s of raw_env() and env()")
    ap.add_argument(
        "--games",
        type=int_option("games", 0),
        default=0,
        help="also play N random games per preset",
    )
    ap.add_argument(
        "--seconds", type=_seconds_arg, default=5.0, help="measured seconds per figure (> 0)"
    )
    ap.add_argument("--no-peers", action="store_true", help="skip measuring the peers")
    ap.add_argument("--json", action="store_true", help="print one JSON dict")
    ap.add_argument(
        "--rules",
        type=_rules_arg,
        default="standard",
        help="a preset, a preset and field=value overrides (standard,jokers=2) or a JSON object "
        """of Rules fields, e.g. '{"jokers": 2, "rummy_calls": true}' (the peers are measured """
        "only for standard)",
    )
    args = ap.parse_args(argv)
    rules: Rules = args.rules
    if not (args.engine or args.env or args.games):
        args.engine = args.env = True
    _pin_one_cpu()
    ours: dict[str, float] = {}
    result: dict[str, Any] = {"ours": ours}
    result["rules"] = rules.preset_name() or rules.to_dict()
    if args.engine:
        e = bench_engine(args.seconds, rules)
        ours["engine"] = e["decisions_per_s"]
        ours["engine_hands_per_s"] = e["hands_per_s"]
    if args.env:
        for key, wrapped in (("raw_env", False), ("env", True)):
            r = bench_env(args.seconds, wrapped, rules=rules)
            ours[key] = r["steps_per_s"]
            ours[f"{key}_hands_per_s"] = r["hands_per_s"]
    if args.games:
        result["games_ended"] = all_games_end(args.games)
    wanted = [k for k in PEERS if k in ours]
    compare = not args.no_peers and rules == Rules()
    result["peers"] = compare_peers(ours, wanted, args.seconds) if compare else {}
    result["build"] = _build.BUILD
    if args.json:
        print(json.dumps(result, indent=1))
        return
    print(f"build: {_build.BUILD}")
    labels = {
        "engine": "engine decisions/s (legal_actions + apply)",
        "raw_env": "raw_env() AEC steps/s (last + step)",
        "env": "env() AEC steps/s (wrapped)",
    }
    for key in wanted:
        line = f"{labels[key]:<45} {ours[key]:>10,.0f}"
        hands = ours.get(f"{key}_hands_per_s")
        line += f"   hands/s {hands:>8,.1f}" if hands else ""
        peer = result["peers"].get(key)
        if peer:
            line += (
                f"   vs {peer['peer']} {peer['steps_per_s']:,.0f}: ratio {peer['ratio']:.2f}"
                f" (target >= {peer['target_ratio']:g})"
            )
            if "also" in peer:
                line += f"; vs {peer['also']['peer']}: {peer['also']['ratio']:.2f}"
        print(line)
    if args.games:
        print(f"random games that ended, per preset: {result['games_ended']} of {args.games}")


if __name__ == "__main__":
    main()
