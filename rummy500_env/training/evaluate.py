"""``python -m training.evaluate AGENT AGENT ...``: duplicate-deal tournaments that rank agents.

AGENT is ``random``, ``greedy``, ``expert``, ``search[:BUDGET]`` (``search:50ms`` or
``search:200`` rollouts) or the path of an exported policy (loaded by `PolicyAgent`); see
`rummy500_env.agents.registry`.

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
``ratings.png`` to --out.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import itertools
import json
import math
import multiprocessing as mp
import os
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from rummy500_env.agents.base import Agent
from rummy500_env.agents.registry import check_spec, make_agent
from rummy500_env.engine.errors import RulesError, Rummy500Error
from rummy500_env.engine.records import Recorder
from rummy500_env.engine.rules import PRESETS, Rules
from rummy500_env.rl.rummy500_v0 import raw_env
from rummy500_env.training.arena import parse_rules, play


class EvaluateError(Rummy500Error):
    """A bad command-line argument: says what was wrong and what is allowed."""


@dataclass
class Task:
    pair: int
    deal: int
    rotation: int  # index of the seating in `seatings`
    seats: list[int]  # agent index (into the pair) of each seat


@dataclass
class GameRecord:
    pair: int
    deal: int
    rotation: int
    seats: list[int]
    winner: int | None  # 0 / 1: which agent of the pair won; None: a draw
    points_per_hand: list[float]  # per agent of the pair
    margin: float  # agent 0 minus agent 1: final totals (games) or hand score (hands)
    hands: int
    truncated: bool


@dataclass
class Config:
    specs: list[str]
    games: int = 200
    rules: str = "standard"
    players: int | None = None
    episode: str = "game"
    workers: int = field(default_factory=lambda: os.cpu_count() or 1)
    seed: int = 0
    out: str = "runs/evaluate"
    ray: bool = False
    """Play the games as Ray tasks (`_run_on_ray`) instead of in a local process pool."""
    address: str | None = None
    """With `ray`: the cluster to join; None starts a local Ray instance of `workers` CPUs."""
    record: str | None = None
    """A folder to write one game record per game into (`rummy500_env.engine.records`), or None."""


def _run(args: tuple[Config, list[str], Task]) -> GameRecord:
    cfg, pair_specs, task = args
    rules = _rules(cfg)
    game_seed = cfg.seed * 1_000_003 + task.deal
    agents = [make_agent(pair_specs[a], rules, game_seed * 7 + s) for s, a in enumerate(task.seats)]
    moves: list[int] = []
    if cfg.record is not None:
        agents = [_Noting(agent, moves) for agent in agents]
    r = play(agents, rules, seed=game_seed, episode=cfg.episode)
    if cfg.record is not None:
        players = [pair_specs[a] for a in task.seats]
        _write_record(cfg, rules, game_seed, moves, players, task, r.totals)
    n = rules.players
    per_agent: list[list[float]] = [[], []]
    for scores in r.hand_scores:
        for s in range(n):
            per_agent[task.seats[s]].append(scores[s])
    mean = [float(np.mean(x)) if x else 0.0 for x in per_agent]
    winner = None if r.winner is None else task.seats[r.winner]
    if cfg.episode == "hand":
        margin = mean[0] - mean[1]
    else:
        tot = [np.mean([r.totals[s] for s in range(n) if task.seats[s] == a]) for a in (0, 1)]
        margin = float(tot[0] - tot[1])
    return GameRecord(
        task.pair,
        task.deal,
        task.rotation,
        task.seats,
        winner,
        mean,
        margin,
        len(r.hand_scores),
        r.truncated,
    )


class _Noting:
    """An agent that notes the action ids it plays, in the order played (for --record)."""

    def __init__(self, agent: Agent, moves: list[int]) -> None:
        self.agent, self.moves = agent, moves

    def act(self, observation: np.ndarray[Any, Any], action_mask: np.ndarray[Any, Any]) -> int:
        move = int(self.agent.act(observation, action_mask))
        self.moves.append(move)
        return move


def _write_record(
    cfg: Config,
    rules: Rules,
    seed: int,
    moves: list[int],
    players: list[str],
    task: Task,
    totals: list[int],
) -> None:
    """Write one game's record (--record): its action ids replayed on an env dealt from the same
    seed give the engine's seed and the actions in notation; the replay must end where the
    game did."""
    env = raw_env(rules=rules, episode=cfg.episode)
    env.reset(seed=seed)
    assert env.game is not None
    meta = {"source": "training.evaluate", "env_seed": seed, "pair": task.pair, "deal": task.deal}
    recorder = Recorder(rules, env.game.seed, players, meta | {"seating": task.rotation})
    for move in moves:
        if recorder.game.phase == "hand_over":
            recorder.next_hand()
        recorder.play(env.codec.decode(recorder.game, move))
    if recorder.game.totals != totals:
        raise EvaluateError(f"the record of deal {task.deal} does not replay to the game played")
    name = f"pair{task.pair}-deal{task.deal}-seating{task.rotation}.json"
    recorder.record.save(Path(cfg.record or ".") / name)


def _rules(cfg: Config) -> Rules:
    rules = parse_rules(cfg.rules)
    return rules if cfg.players is None else dataclasses.replace(rules, players=cfg.players)


def seatings(n: int) -> list[list[int]]:
    """The seatings of one deal at a table of `n`: which agent of the pair (0 or 1) sits in
    each seat.

    The pair alternates round the table (0, 1, 0, ...) in every rotation. With an odd `n` that
    gives one agent the extra seat every time, so the complementary seatings (1, 0, 1, ...) are
    played too; then both agents sit in every seat equally often. A seating that repeats (a
    rotation by two at an even table) is played once: the same deal and seats would replay the
    same game.
    """
    out: list[list[int]] = []
    for first in (0, 1):
        for rotation in range(n):
            seats = [((s + rotation) % n + first) % 2 for s in range(n)]
            if seats not in out:
                out.append(seats)
    return out


def tasks_for(cfg: Config) -> list[Task]:
    """Every (pair, deal, seating); a deal is played in every seating (see `seatings`)."""
    patterns = seatings(_rules(cfg).players)
    deals = math.ceil(cfg.games / len(patterns))
    out = []
    pairs = list(itertools.combinations(range(len(cfg.specs)), 2))
    for p in range(len(pairs)):
        for d in range(deals):
            for rotation, seats in enumerate(patterns):
                out.append(Task(p, d, rotation, seats))
    return out


def wilson(wins: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """95% Wilson score interval of a win rate."""
    if n == 0:
        return (0.0, 1.0)
    p = wins / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return (max(0.0, c - h), min(1.0, c + h))


def mean_ci(xs: list[float], z: float = 1.96) -> tuple[float, float, float]:
    """Mean and its 95% normal interval."""
    a = np.asarray(xs, dtype=float)
    if a.size == 0:
        return (0.0, 0.0, 0.0)
    m = float(a.mean())
    h = z * float(a.std(ddof=1)) / math.sqrt(a.size) if a.size > 1 else float("inf")
    return (m, m - h, m + h)


def elo(k: int, results: list[tuple[int, int, float]]) -> tuple[np.ndarray, np.ndarray]:
    """Maximum-likelihood Bradley-Terry ratings on the Elo scale (mean 0) and their 95%
    half-widths. `results`: (i, j, score of i in [0, 1]).

    A wide Gaussian prior (sd 1000 Elo) keeps an all-wins record finite; the intervals come
    from the inverse information, projected onto mean-zero ratings.
    """
    scale = math.log(10) / 400  # Elo points -> natural log-odds
    prior = 1.0 / (1000 * scale) ** 2
    theta = np.zeros(k)
    info = np.eye(k) * prior
    for _ in range(100):
        grad = -prior * theta
        info = np.eye(k) * prior
        for i, j, s in results:
            p = 1 / (1 + math.exp(theta[j] - theta[i]))
            grad[i] += s - p
            grad[j] -= s - p
            w = p * (1 - p)
            info[i, i] += w
            info[j, j] += w
            info[i, j] -= w
            info[j, i] -= w
        step = np.linalg.solve(info, grad)
        theta += step
        if np.abs(step).max() < 1e-9:
            break
    center = np.eye(k) - 1.0 / k
    cov = center @ np.linalg.inv(info) @ center
    ratings = (theta - theta.mean()) / scale
    return ratings, 1.96 * np.sqrt(np.clip(np.diag(cov), 0, None)) / scale


def summarize(cfg: Config, records: list[GameRecord]) -> dict[str, Any]:
    labels = _labels(cfg.specs)
    pairs = list(itertools.combinations(range(len(cfg.specs)), 2))
    table = []
    bt: list[tuple[int, int, float]] = []
    for p, (i, j) in enumerate(pairs):
        recs = [r for r in records if r.pair == p]
        n = len(recs)
        wins_i = sum(r.winner == 0 for r in recs)
        wins_j = sum(r.winner == 1 for r in recs)
        draws = n - wins_i - wins_j
        score = wins_i + 0.5 * draws
        lo, hi = wilson(score, n)
        by_deal: dict[int, list[float]] = {}
        for r in recs:  # a deal's rotations are one duplicate sample: luck cancels inside it
            by_deal.setdefault(r.deal, []).append(r.margin)
        m, mlo, mhi = mean_ci([float(np.mean(x)) for x in by_deal.values()])
        table.append(
            {
                "a": labels[i],
                "b": labels[j],
                "games": n,
                "wins_a": wins_i,
                "wins_b": wins_j,
                "draws": draws,
                "win_rate_a": score / n if n else 0.0,
                "win_rate_a_ci95": [lo, hi],
                "points_per_hand_a": float(np.mean([r.points_per_hand[0] for r in recs])),
                "points_per_hand_b": float(np.mean([r.points_per_hand[1] for r in recs])),
                "margin_a": m,
                "margin_a_ci95": [mlo, mhi],
                "truncated": sum(r.truncated for r in recs),
            }
        )
        bt += [(i, j, 1.0 if r.winner == 0 else 0.0 if r.winner == 1 else 0.5) for r in recs]
    ratings, half = elo(len(labels), bt)
    return {
        "config": asdict(cfg),
        "pairs": table,
        "elo": [
            {"agent": labels[k], "elo": float(ratings[k]), "ci95": float(half[k])}
            for k in range(len(labels))
        ],
        "games": [asdict(r) for r in records],
    }


def _labels(specs: list[str]) -> list[str]:
    out: list[str] = []
    for s in specs:
        label = Path(s).stem if s.endswith(".pt") else s
        out.append(label if label not in out else f"{label}#{out.count(label) + 1}")
    return out


def print_table(summary: dict[str, Any]) -> None:
    ep = summary["config"]["episode"]
    margin_name = "mean hand margin" if ep == "hand" else "mean final margin"
    print(
        f"\n{'A':>16} vs {'B':<16} {'games':>6} {'A wins':>7} {'B wins':>7} "
        f"{'A win rate (95% CI)':>22} {'pts/hand A':>10} {'pts/hand B':>10} "
        f"{margin_name + ' A-B (95% CI)':>30}"
    )
    for row in summary["pairs"]:
        lo, hi = row["win_rate_a_ci95"]
        mlo, mhi = row["margin_a_ci95"]
        print(
            f"{row['a']:>16} vs {row['b']:<16} {row['games']:>6} {row['wins_a']:>7} "
            f"{row['wins_b']:>7} {row['win_rate_a']:>8.1%} ({lo:.1%}-{hi:.1%}) "
            f"{row['points_per_hand_a']:>10.1f} {row['points_per_hand_b']:>10.1f} "
            f"{row['margin_a']:>12.1f} ({mlo:.1f} to {mhi:.1f})"
        )
    print("\nElo (maximum likelihood, mean 0):")
    for e in sorted(summary["elo"], key=lambda e: -e["elo"]):
        print(f"  {e['agent']:>16} {e['elo']:>8.0f} ± {e['ci95']:.0f}")


def write_outputs(summary: dict[str, Any], out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(summary, indent=1))
    with open(out / "pairs.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(
            [
                "a",
                "b",
                "games",
                "wins_a",
                "wins_b",
                "draws",
                "win_rate_a",
                "ci_low",
                "ci_high",
                "points_per_hand_a",
                "points_per_hand_b",
                "margin_a",
                "margin_ci_low",
                "margin_ci_high",
            ]
        )
        for r in summary["pairs"]:
            w.writerow(
                [
                    r["a"],
                    r["b"],
                    r["games"],
                    r["wins_a"],
                    r["wins_b"],
                    r["draws"],
                    f"{r['win_rate_a']:.4f}",
                    f"{r['win_rate_a_ci95'][0]:.4f}",
                    f"{r['win_rate_a_ci95'][1]:.4f}",
                    f"{r['points_per_hand_a']:.2f}",
                    f"{r['points_per_hand_b']:.2f}",
                    f"{r['margin_a']:.2f}",
                    f"{r['margin_a_ci95'][0]:.2f}",
                    f"{r['margin_a_ci95'][1]:.2f}",
                ]
            )
    _plot(summary, out / "ratings.png")


def _plot(summary: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [e["agent"] for e in summary["elo"]]
    k = len(labels)
    matrix = np.full((k, k), np.nan)
    for r in summary["pairs"]:
        i, j = labels.index(r["a"]), labels.index(r["b"])
        matrix[i, j] = r["win_rate_a"]
        matrix[j, i] = 1 - r["win_rate_a"]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(6 + 1.2 * k, 4 + 0.3 * k))
    im = ax1.imshow(matrix, vmin=0, vmax=1, cmap="RdYlGn")
    ax1.set_xticks(range(k), labels, rotation=45, ha="right")
    ax1.set_yticks(range(k), labels)
    for i in range(k):
        for j in range(k):
            if not np.isnan(matrix[i, j]):
                ax1.text(j, i, f"{matrix[i, j]:.0%}", ha="center", va="center")
    ax1.set_title("win rate of row vs column")
    fig.colorbar(im, ax=ax1, fraction=0.046)
    elos = [e["elo"] for e in summary["elo"]]
    ax2.barh(labels, elos, xerr=[e["ci95"] for e in summary["elo"]], color="tab:blue")
    ax2.set_title("Elo (95% CI)")
    ax2.invert_yaxis()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _one_thread() -> None:
    """A worker's torch runs on one thread: the workers already fill the cores, and a policy's
    small matrices on several threads per worker, oversubscribed, played over ten times
    slower (1,000 games of the card network against ExpertAgent on two cores: 0.55 games/s
    before, 8 after)."""
    os.environ["OMP_NUM_THREADS"] = "1"
    try:
        import torch
    except ImportError:
        return
    torch.set_num_threads(1)


def run(cfg: Config, progress: bool = True) -> dict[str, Any]:
    """Play the tournament and return its summary (also used by training)."""
    tasks = tasks_for(cfg)
    pairs = list(itertools.combinations(range(len(cfg.specs)), 2))
    work = [(cfg, [cfg.specs[pairs[t.pair][0]], cfg.specs[pairs[t.pair][1]]], t) for t in tasks]
    records: list[GameRecord] = []
    bar = _progress(len(work), progress)
    if cfg.ray:
        records = _run_on_ray(cfg, work, bar)
    elif cfg.workers > 1:
        with mp.get_context("spawn").Pool(cfg.workers, initializer=_one_thread) as pool:
            for rec in pool.imap_unordered(
                _run, work, chunksize=max(1, len(work) // (cfg.workers * 20))
            ):
                records.append(rec)
                bar.update(1)
    else:
        for w in work:
            records.append(_run(w))
            bar.update(1)
    bar.close()
    records.sort(key=lambda r: (r.pair, r.deal, r.rotation))
    return summarize(cfg, records)


def _run_chunk(
    work: list[tuple[Config, list[str], Task]], files: dict[str, bytes]
) -> list[GameRecord]:
    """Play games on a Ray worker. `files` holds the bytes of the policy files the specs name,
    sent with the task: a worker on a node where a path does not exist plays a temporary copy
    of the same file, so a cluster needs no shared filesystem."""
    with tempfile.TemporaryDirectory() as tmp:
        local = {}
        for k, (spec, data) in enumerate(files.items()):
            if not Path(spec).is_file():
                copy = Path(tmp) / str(k) / Path(spec).name
                copy.parent.mkdir()
                copy.write_bytes(data)
                local[spec] = str(copy)
        return [_run((cfg, [local.get(s, s) for s in pair], task)) for cfg, pair, task in work]


def _run_on_ray(
    cfg: Config, work: list[tuple[Config, list[str], Task]], bar: Any
) -> list[GameRecord]:
    """The games as Ray tasks: on the cluster at ``cfg.address``, on a local Ray instance of
    ``cfg.workers`` CPUs, or on the Ray instance this process has already joined (training on
    RLlib evaluates this way). Every game's seed comes from its deal and seating, never from
    where it runs, so the records are the local pool's. Policy files travel with the tasks
    (`_run_chunk`)."""
    try:
        import ray
    except ModuleNotFoundError:
        raise EvaluateError(
            'training.evaluate --ray needs Ray: pip install "ray[default]" (or the rllib '
            'extra: pip install torch==2.13.0 -e ".[rllib]")'
        ) from None
    joined = not ray.is_initialized()
    if joined and cfg.address:
        ray.init(address=cfg.address)
    elif joined:
        ray.init(num_cpus=cfg.workers, include_dashboard=False)
    try:
        cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
        size = max(1, len(work) // (cpus * 4))  # a few chunks per CPU: balanced, few round trips
        policies = [spec for spec in cfg.specs if Path(spec).is_file()]
        files = ray.put({spec: Path(spec).read_bytes() for spec in policies})
        play = ray.remote(_run_chunk)
        pending = [play.remote(work[i : i + size], files) for i in range(0, len(work), size)]
        records: list[GameRecord] = []
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            chunk = ray.get(done[0])
            records += chunk
            bar.update(len(chunk))
        return records
    finally:
        if joined:
            ray.shutdown()


def _progress(total: int, enabled: bool) -> Any:
    try:
        from tqdm import tqdm

        return tqdm(total=total, disable=not enabled, desc="games", unit="game", smoothing=0.05)
    except ImportError:  # pragma: no cover - tqdm is a dependency of the train extra

        class _Bar:
            def update(self, n: int) -> None: ...
            def close(self) -> None: ...

        return _Bar()


def parse_args(argv: list[str] | None = None) -> Config:
    ap = argparse.ArgumentParser(
        prog="python -m training.evaluate",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("agents", nargs="+", metavar="AGENT")
    ap.add_argument(
        "--games",
        type=int,
        default=200,
        help="games per pair, rounded up to whole deals (default 200)",
    )
    ap.add_argument(
        "--rules",
        default="standard",
        help=f"a preset ({', '.join(PRESETS)}) or a JSON object of rules fields, e.g. "
        '\'{"jokers": 2, "rummy_calls": true}\'',
    )
    ap.add_argument("--players", type=int, default=None, help="override the preset's players")
    ap.add_argument("--episode", default="game", help="game (to the target) or hand")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="runs/evaluate", help="folder for JSON, CSV and PNG")
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
    a = ap.parse_args(argv)
    if len(a.agents) < 2:
        raise EvaluateError("give at least two agents, e.g. `greedy random`")
    if a.games < 1:
        raise EvaluateError(f"--games {a.games}: give a positive number of games per pair")
    if a.episode not in ("game", "hand"):
        raise EvaluateError(f"--episode {a.episode!r}: use 'game' or 'hand'")
    if a.workers < 1:
        raise EvaluateError(f"--workers {a.workers}: use 1 or more")
    if a.address is not None and not a.ray:
        raise EvaluateError(f"--address {a.address!r} needs --ray")
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
    )
    try:
        _rules(cfg)  # the error now, not in a worker
    except RulesError as e:
        raise EvaluateError(f"--rules {a.rules!r}: {e}") from None
    return cfg


def main(argv: list[str] | None = None) -> int:
    try:
        cfg = parse_args(argv)
    except Rummy500Error as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    t0 = time.time()
    summary = run(cfg)
    summary["wall_s"] = time.time() - t0
    print_table(summary)
    write_outputs(summary, Path(cfg.out))
    print(f"\nwrote {cfg.out}/results.json, pairs.csv, ratings.png ({summary['wall_s']:.0f}s)")
    if cfg.record is not None:
        print(f"wrote one game record per game to {cfg.record}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
