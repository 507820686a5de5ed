"""The peers `python -m rummy500_env.bench` compares the package with, measured on this machine.

    PEERS_VENV/bin/python benchmarks/peers/peers_bench.py [--json] [--only a,b] [--reps 5]
        [--seconds 3] [--warmup 1] [--list]

Runs in the virtual environment benchmarks/peers/setup.sh builds (OpenSpiel, RLCard,
PettingZoo; this package need not be installed there). The peers:

  rlcard_gin_game   RLCard's gin rummy game alone: the judge's legal actions, then game.step
                    (the engine figure's peer)
  os_gin_obs_np     OpenSpiel's gin_rummy with numpy out of each decision: the observation
                    tensor and the legal-actions mask through np.asarray, the action drawn from
                    the mask (the raw_env() figure's peer)
  os_gin_obs_buf    the same, with OpenSpiel writing the tensor into a numpy buffer
                    (open_spiel.python.observation) and the mask filled from legal_actions(),
                    both copied: OpenSpiel's fastest way to numpy
  pz_gin_rummy_v4   PettingZoo's gin_rummy_v4 (pettingzoo 1.26.1, the last release with it, on
                    RLCard) in the wrapped AEC loop (the env() figure's peer)
  pz_null_aec       a PettingZoo AEC env with no game in it, behind the same three classic
                    wrappers: a fresh (4, 52) observation and a 110-long mask each look, 110
                    decisions an episode; what PettingZoo's loop costs by itself

Method, so that the figures compare with the package's (rummy500_env.bench uses the same
loop for its env): each measurement is a child process of its own, pinned to one CPU with
BLAS/OpenMP threads capped at 1; the repetitions go round-robin over the peers, so a drift
in the machine's speed reaches them all alike; each figure is the median, with the minimum
and maximum, of its repetitions. Decisions count the steps of agents still playing, per
second spent stepping: dealing (resets, chance nodes of the deal) is left out.

``--json`` prints ``{"meta": ..., "results": {name: {"metrics": {metric: {"median", "min",
"max", "values"}}, "errors": [...]}}}``, which rummy500_env.bench reads.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

PEERS = {
    "rlcard_gin_game": "RLCard gin rummy game: judge.get_legal_actions + game.step",
    "os_gin_obs_np": "OpenSpiel gin_rummy + np.asarray(observation_tensor) + int8 mask",
    "os_gin_obs_buf": "OpenSpiel gin_rummy + observation written into a numpy buffer + mask",
    "pz_gin_rummy_v4": "PettingZoo gin_rummy_v4 AEC with its wrappers (pettingzoo 1.26.1)",
    "pz_null_aec": "PettingZoo AEC env without a game, the classic wrappers: the loop's floor",
}
LEGACY_PETTINGZOO = {"pz_gin_rummy_v4"}
"""The peers that import pettingzoo 1.26.1 from `--legacy-pz-path` (1.27 removed gin rummy)."""
THREAD_VARIABLES = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "NUMEXPR_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
)


def default_venv() -> Path:
    """Where setup.sh builds the peers' virtual environment (``PEERS_VENV`` to move it)."""
    return Path(os.environ.get("PEERS_VENV") or Path(tempfile.gettempdir()) / "rummy500-peers")


# --- the measured loops (in the child process) -----------------------------------------------

Episode = Callable[[], tuple[int, float]]
"""Plays one episode; returns (decisions, seconds spent on them, dealing left out)."""


def run_for(episode: Episode, seconds: float, warmup: float) -> dict[str, float]:
    """Play episodes for `warmup` seconds unmeasured, then for `seconds` measured."""
    end = time.perf_counter() + warmup
    while time.perf_counter() < end:
        episode()
    decisions, stepping, episodes = 0, 0.0, 0
    start = time.perf_counter()
    while True:
        n, dt = episode()
        decisions, stepping, episodes = decisions + n, stepping + dt, episodes + 1
        if time.perf_counter() - start >= seconds:
            break
    wall = time.perf_counter() - start
    return {
        "decision_steps_per_s": decisions / stepping,
        "episodes_per_s": episodes / wall,
        "decision_steps_per_episode": decisions / episodes,
    }


def aec_episode(env: Any, seed: int) -> Episode:
    """PettingZoo's AEC loop, as rummy500_env.bench plays the package's env: `last()` gives
    the observation and its mask, a legal id is drawn with `random.randrange`, `step`."""
    import numpy as np

    randrange = random.Random(seed).randrange
    flatnonzero = np.flatnonzero
    perf = time.perf_counter
    env.reset(seed=seed)

    def episode() -> tuple[int, float]:
        env.reset()  # the next deal of the seeded sequence
        t0 = perf()
        live = 0
        for _agent in env.agent_iter():
            obs, _reward, term, trunc, _info = env.last()
            if term or trunc:
                action = None
            else:
                legal = flatnonzero(obs["action_mask"])
                action = int(legal[randrange(len(legal))])
                live += 1
            env.step(action)
        return live, perf() - t0

    return episode


def peer_pz_gin_rummy_v4(seed: int) -> Episode:
    from pettingzoo.classic import gin_rummy_v4

    return aec_episode(gin_rummy_v4.env(), seed)


def peer_pz_null_aec(seed: int) -> Episode:
    return aec_episode(null_aec_env(), seed)


def null_aec_env(decisions: int = 110, actions: int = 110, legal: int = 11) -> Any:
    """A PettingZoo AEC env with no game: what its loop and wrappers cost alone."""
    import numpy as np
    from gymnasium import spaces
    from pettingzoo import AECEnv
    from pettingzoo.utils import wrappers

    class NoGame(AECEnv):  # type: ignore[misc]
        metadata = {"name": "no_game_v0", "render_modes": [], "is_parallelizable": False}  # noqa: RUF012

        def __init__(self) -> None:
            super().__init__()
            self.possible_agents = ["player_0", "player_1"]
            self._space = spaces.Dict(
                {
                    "observation": spaces.Box(0, 1, (4, 52), np.int8),
                    "action_mask": spaces.Box(0, 1, (actions,), np.int8),
                }
            )
            self._obs = np.zeros((4, 52), np.int8)
            self._mask = np.zeros(actions, np.int8)
            self._mask[:legal] = 1
            self._played = 0

        def observation_space(self, agent: str) -> Any:
            return self._space

        def action_space(self, agent: str) -> Any:
            return spaces.Discrete(actions)

        def observe(self, agent: str) -> dict[str, Any]:
            return {"observation": self._obs.copy(), "action_mask": self._mask.copy()}

        def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
            self.agents = self.possible_agents[:]
            self.rewards = dict.fromkeys(self.agents, 0)
            self._cumulative_rewards = dict.fromkeys(self.agents, 0)
            self.terminations = dict.fromkeys(self.agents, False)
            self.truncations = dict.fromkeys(self.agents, False)
            self.infos = {a: {} for a in self.agents}
            self.agent_selection = self.agents[0]
            self._played = 0

        def step(self, action: int | None) -> None:
            agent = self.agent_selection
            if self.terminations[agent] or self.truncations[agent]:
                self._was_dead_step(action)
                return
            self._cumulative_rewards[agent] = 0
            self._played += 1
            if self._played >= decisions:
                self.rewards = {"player_0": 1, "player_1": -1}
                self.terminations = dict.fromkeys(self.agents, True)
            self.agent_selection = "player_1" if agent == "player_0" else "player_0"
            self._accumulate_rewards()

    env: Any = wrappers.TerminateIllegalWrapper(NoGame(), illegal_reward=-1)
    env = wrappers.AssertOutOfBoundsWrapper(env)
    return wrappers.OrderEnforcingWrapper(env)


def peer_rlcard_gin_game(seed: int) -> Episode:
    import numpy as np
    from rlcard.games.gin_rummy.game import GinRummyGame

    game = GinRummyGame()
    game.np_random = np.random.RandomState(seed)
    randrange = random.Random(seed).randrange
    perf = time.perf_counter

    def episode() -> tuple[int, float]:
        game.init_game()
        t0 = perf()
        n = 0
        while not game.is_over():
            legal = game.judge.get_legal_actions()
            game.step(legal[randrange(len(legal))])
            n += 1
        return n, perf() - t0

    return episode


def openspiel_episode(seed: int, into_buffer: bool) -> Episode:
    """OpenSpiel's gin_rummy handing numpy arrays to the agent at each decision: through
    np.asarray, or (`into_buffer`) written by C++ into a numpy buffer. Chance nodes after
    the deal (the stock's draws) count in the stepping time, not as decisions."""
    import numpy as np
    import pyspiel

    game = pyspiel.load_game("gin_rummy")
    rng = random.Random(seed)
    randrange, rand = rng.randrange, rng.random
    sample, perf = pyspiel.sample_action, time.perf_counter
    flatnonzero, asarray = np.flatnonzero, np.asarray
    size = game.num_distinct_actions()
    buffer = mask = None
    if into_buffer:
        from open_spiel.python.observation import make_observation

        buffer, mask = make_observation(game), np.zeros(size, np.int8)

    def decide(state: Any, player: int) -> int:
        if buffer is None:
            asarray(state.observation_tensor(player), dtype=np.float32)
            legal = flatnonzero(asarray(state.legal_actions_mask(player), dtype=np.int8))
            return int(legal[randrange(len(legal))])
        buffer.set_from(state, player)
        buffer.tensor.copy()
        ids = state.legal_actions(player)
        mask[:] = 0
        mask[ids] = 1
        mask.copy()
        return int(ids[randrange(len(ids))])

    def episode() -> tuple[int, float]:
        state = game.new_initial_state()
        while state.is_chance_node():  # the deal
            state.apply_action(sample(state.chance_outcomes(), rand())[0])
        t0 = perf()
        n = 0
        while not state.is_terminal():
            if state.is_chance_node():
                state.apply_action(sample(state.chance_outcomes(), rand())[0])
                continue
            state.apply_action(decide(state, state.current_player()))
            n += 1
        state.returns()
        return n, perf() - t0

    return episode


def peer_os_gin_obs_np(seed: int) -> Episode:
    return openspiel_episode(seed, into_buffer=False)


def peer_os_gin_obs_buf(seed: int) -> Episode:
    return openspiel_episode(seed, into_buffer=True)


def versions() -> dict[str, str]:
    """The versions the child actually ran."""
    from importlib import metadata

    out = {"python": platform.python_version()}
    for dist in ("pettingzoo", "rlcard", "open_spiel", "numpy", "gymnasium"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            pass
    pz = sys.modules.get("pettingzoo")
    if pz is not None:  # the copy imported: 1.26.1 from the legacy path for gin_rummy_v4
        out["pettingzoo_imported"] = getattr(pz, "__version__", "?")
    return out


def child(name: str, seed: int, seconds: float, warmup: float) -> None:
    """Measure one peer once and print its figures as one JSON line."""
    import warnings

    warnings.filterwarnings("ignore")  # gymnasium and pettingzoo deprecation notes
    episode = globals()[f"peer_{name}"](seed)
    figures: dict[str, Any] = run_for(episode, seconds, warmup)
    figures["_versions"] = versions()
    print(json.dumps(figures))


# --- the parent: interleaved children --------------------------------------------------------


def pinned_cpu(cpu: int | None) -> int | None:
    """Pin this process (and so its children) to `cpu`, by default the highest allowed."""
    if not hasattr(os, "sched_setaffinity"):
        return None
    if cpu is None:
        cpu = max(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cpu})
    return cpu


def child_env(name: str, legacy_path: Path) -> dict[str, str]:
    """The child's environment: one thread for numerical libraries, quiet warnings, and
    pettingzoo 1.26.1 first on the path for the peers that need it."""
    env = dict(os.environ) | dict.fromkeys(THREAD_VARIABLES, "1")
    env["PYTHONWARNINGS"] = "ignore"
    if name in LEGACY_PETTINGZOO:
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(legacy_path), os.environ.get("PYTHONPATH")) if p
        )
    return env


def measure_once(name: str, rep: int, args: argparse.Namespace) -> dict[str, Any] | str:
    """One child's figures, or what went wrong."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", name]
    cmd += ["--seed", str(1000 + rep), "--seconds", str(args.seconds)]
    cmd += ["--warmup", str(args.warmup)]
    try:
        done = subprocess.run(
            cmd,
            capture_output=True,
            text=True,
            env=child_env(name, args.legacy_pz_path),
            timeout=args.seconds + args.warmup + 300,
        )
    except subprocess.TimeoutExpired:
        return "timed out"
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        return f"exit {done.returncode}: {' | '.join(tail)}"
    return dict(json.loads(lines[-1]))


def summary(values: list[float]) -> dict[str, Any]:
    return {
        "median": statistics.median(values),
        "min": min(values),
        "max": max(values),
        "values": values,
    }


def cpu_model() -> str:
    """The CPU's model name (lscpu's), for the record."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def measure(names: list[str], args: argparse.Namespace) -> dict[str, Any]:
    """Every peer `args.reps` times, round-robin; the figures of each summarised."""
    cpu = pinned_cpu(args.cpu)
    runs: dict[str, list[dict[str, Any]]] = {n: [] for n in names}
    errors: dict[str, list[str]] = {n: [] for n in names}
    loads = []
    started = time.time()
    for rep in range(args.reps):
        for name in names:
            loads.append(os.getloadavg()[0])
            got = measure_once(name, rep, args)
            if isinstance(got, str):
                errors[name].append(got)
            else:
                runs[name].append(got)
            if not args.json:
                print(f"rep {rep + 1} {name}: {'done' if runs[name] else got}", file=sys.stderr)
    results: dict[str, Any] = {}
    for name in names:
        entry: dict[str, Any] = {"description": PEERS[name], "errors": errors[name]}
        if runs[name]:
            keys = [k for k in runs[name][0] if not k.startswith("_")]
            entry["metrics"] = {k: summary([r[k] for r in runs[name]]) for k in keys}
            entry["versions"] = runs[name][0]["_versions"]
        results[name] = entry
    meta = {
        "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
        "cpu_model": cpu_model(),
        "cpus": os.cpu_count(),
        "pinned_cpu": cpu,
        "reps": args.reps,
        "seconds": args.seconds,
        "warmup": args.warmup,
        "load_1m": {"min": min(loads), "max": max(loads)} if loads else None,
    }
    return {"meta": meta, "results": results}


def print_table(out: dict[str, Any]) -> None:
    print(f"{out['meta']['cpu_model']}, load {out['meta']['load_1m']}")
    for name, entry in out["results"].items():
        if "metrics" not in entry:
            print(f"{name:<18} failed: {'; '.join(entry['errors'])[:200]}")
            continue
        m = entry["metrics"]["decision_steps_per_s"]
        print(
            f"{name:<18} {m['median']:>10,.0f} decisions/s "
            f"(min {m['min']:,.0f}, max {m['max']:,.0f})  {entry['description']}"
        )


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--json", action="store_true", help="print one JSON dict")
    ap.add_argument("--list", action="store_true", help="list the peers and exit")
    ap.add_argument("--only", default="", help="comma-separated peers (default: all)")
    ap.add_argument("--reps", type=int, default=5, help="repetitions of each peer")
    ap.add_argument("--seconds", type=float, default=3.0, help="measured seconds per repetition")
    ap.add_argument("--warmup", type=float, default=1.0, help="unmeasured seconds first")
    ap.add_argument("--cpu", type=int, default=None, help="CPU to pin to (default: the highest)")
    ap.add_argument(
        "--legacy-pz-path",
        type=Path,
        default=default_venv() / "extra" / "pz1261",
        help="folder holding pettingzoo 1.26.1 (gin_rummy_v4), as setup.sh installs it",
    )
    ap.add_argument("--child", default="", help=argparse.SUPPRESS)
    ap.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.list:
        for name, description in PEERS.items():
            print(f"{name:<18} {description}")
        return
    if args.child:
        child(args.child, args.seed, args.seconds, args.warmup)
        return
    names = [n for n in args.only.split(",") if n] or list(PEERS)
    unknown = [n for n in names if n not in PEERS]
    if unknown:
        ap.error(f"unknown peer(s) {', '.join(unknown)}; the peers: {', '.join(PEERS)}")
    out = measure(names, args)
    if args.json:
        print(json.dumps(out, indent=1))
    else:
        print_table(out)


if __name__ == "__main__":
    main()
