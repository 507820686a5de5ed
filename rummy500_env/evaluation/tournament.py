"""Duplicate-deal tournaments: which games a tournament plays, playing them in a process pool
or as Ray tasks, and their summary (the table and the Elo ratings).

Every pair of agents plays the same deals from every seat (`seatings`), so the luck of the deal
and of the seat cancels. In a *field* tournament (`Config.field`) the first agent plays one seat
against a table filled by each other agent in turn (`field_seatings`), the measure of a
policy made for three or four players. Every game's seeds come from its deal and seating,
never from where it runs, so one seed gives the same records on one process, a pool or a Ray
cluster. Used by the ``training.evaluate`` command and by training's evaluations.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import hashlib
import itertools
import json
import math
import os
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np

import rummy500_env
from rummy500_env.agents.ask import ReplyCounts
from rummy500_env.agents.registry import make_agent, parse_spec
from rummy500_env.engine.errors import Rummy500Error
from rummy500_env.engine.files import write_atomically
from rummy500_env.engine.rules import Rules
from rummy500_env.evaluation.arena import Result, add_counts, play
from rummy500_env.evaluation.pool import DEADLINE_S, WorkerPool
from rummy500_env.evaluation.stats import elo, mean_ci, wilson


class EvaluateError(Rummy500Error):
    """A bad tournament setting or command-line argument: says what was wrong and what is
    allowed."""


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
    reply_counts: list[dict[str, int] | None] = field(default_factory=lambda: [None, None])
    """Per agent of the pair, its `ReplyCounts` over the game (its seats added up), or None
    for an agent that keeps none (`arena.reply_counts`)."""


@dataclass
class Config:
    specs: list[str]
    games: int = 200
    rules: str = "standard"
    """Command-line rules text (`Rules.parse`)."""
    players: int | None = None
    episode: str = "game"
    workers: int = field(default_factory=lambda: os.cpu_count() or 1)
    seed: int = 0
    out: str = "runs/evaluate"
    ray: bool = False
    """Play the games as Ray tasks (`run_on_ray`) instead of in a local process pool."""
    address: str | None = None
    """With `ray`: the cluster to join; None starts a local Ray instance of `workers` CPUs."""
    record: str | None = None
    """A folder to write one game record per game into (`rummy500_env.engine.records`), or None."""
    field: bool = False
    """One against the field: the first agent in one seat, the other agent of the pair in every
    other seat; the pairs are the first agent with each other one (`pairs_of`)."""
    journal: bool = False
    """Append each game to ``out/games.jsonl`` as it ends (`Journal`), so that an interrupted
    tournament can be resumed."""
    resume: bool = False
    """Keep the games ``out/games.jsonl`` holds and play only the rest; the journal must be of
    this tournament (`Journal.identity`). Implies `journal`."""
    worker_deadline: float = DEADLINE_S
    """Seconds a worker of the process pool may send no heartbeat (stopped, frozen) before the
    tournament stops with an error naming it (`pool.WorkerSilent`)."""

    def game_rules(self) -> Rules:
        return Rules.parse(self.rules, players=self.players)


Work = tuple[Config, list[str], Task]
"""One game to play: the tournament, the specs of the task's pair, the task."""


def play_task(work: Work) -> GameRecord:
    """Play one task's game (`arena.play`) and score it for the pair."""
    cfg, pair_specs, task = work
    rules = cfg.game_rules()
    game_seed = cfg.seed * 1_000_003 + task.deal
    agents = [make_agent(pair_specs[a], rules, game_seed * 7 + s) for s, a in enumerate(task.seats)]
    players = [pair_specs[a] for a in task.seats] if cfg.record is not None else None
    meta = {"source": "training.evaluate", "env_seed": game_seed, "pair": task.pair}
    meta |= {"deal": task.deal, "seating": task.rotation}
    r = play(agents, rules, seed=game_seed, episode=cfg.episode, record_as=players, meta=meta)
    if r.record is not None:
        name = f"pair{task.pair}-deal{task.deal}-seating{task.rotation}.json"
        r.record.save(Path(cfg.record or ".") / name)
    return score_game(task, r, cfg.episode)


def score_game(task: Task, r: Result, episode: str) -> GameRecord:
    """One task's played game (or hand), scored for its pair: each agent's mean hand score
    (a field's seats pooled), the winner and the margin (hand: mean hand scores; game: final
    totals)."""
    n = len(task.seats)
    per_agent: list[list[float]] = [[], []]  # a field's seats pooled
    for scores in r.hand_scores:
        for s in range(n):
            per_agent[task.seats[s]].append(scores[s])
    mean = [float(np.mean(x)) if x else 0.0 for x in per_agent]
    winner = None if r.winner is None else task.seats[r.winner]
    if episode == "hand":
        margin = mean[0] - mean[1]
    else:
        tot = [np.mean([r.totals[s] for s in range(n) if task.seats[s] == a]) for a in (0, 1)]
        margin = float(tot[0] - tot[1])
    counts: list[dict[str, int] | None] = [None, None]
    for seat, seat_counts in enumerate(r.reply_counts):
        counts[task.seats[seat]] = add_counts(counts[task.seats[seat]], seat_counts)
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
        counts,
    )


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


def field_seatings(n: int) -> list[list[int]]:
    """The seatings of one deal in a field tournament: agent 0 in each seat once, agent 1 (the
    field) in all the others."""
    return [[0 if s == seat else 1 for s in range(n)] for seat in range(n)]


def pairs_of(cfg: Config) -> list[tuple[int, int]]:
    """The pairs of agents (indices into `cfg.specs`) that meet: every pair, or in a field
    tournament the first agent with each other one."""
    if cfg.field:
        return [(0, j) for j in range(1, len(cfg.specs))]
    return list(itertools.combinations(range(len(cfg.specs)), 2))


def tasks_for(cfg: Config) -> list[Task]:
    """Every (pair, deal, seating); a deal is played in every seating (see `seatings` and
    `field_seatings`)."""
    n = cfg.game_rules().players
    patterns = field_seatings(n) if cfg.field else seatings(n)
    deals = math.ceil(cfg.games / len(patterns))
    out = []
    for p in range(len(pairs_of(cfg))):
        for d in range(deals):
            for rotation, seats in enumerate(patterns):
                out.append(Task(p, d, rotation, seats))
    return out


def summarize(cfg: Config, records: list[GameRecord]) -> dict[str, Any]:
    """The tournament's summary: per pair, wins with a Wilson interval and the mean margin of
    a deal with its interval; Elo ratings over all games; the config and every game.

    In a field tournament a pair's row also holds the fair share (1 / players) and the win
    share over it, a draw counts as no win, and there are no Elo ratings (a field game is not
    a game between two players).

    An agent that counts its endpoint's replies (an ``llm:`` agent) has them added up in its
    pairs' rows (``reply_counts_a``, ``reply_counts_b``) and over all its games
    (``reply_counts``, by agent): its failed requests and fallbacks, the decisions that were
    not the model's."""
    labels = labels_of(cfg.specs)
    fair = 1 / cfg.game_rules().players
    table = []
    bt: list[tuple[int, int, float]] = []
    by_agent: dict[str, dict[str, int] | None] = {}
    for p, (i, j) in enumerate(pairs_of(cfg)):
        recs = [r for r in records if r.pair == p]
        row, score = _pair_row(labels[i], labels[j], recs, cfg.field)
        table.append(row)
        _add_reply_counts(row, recs, (labels[i], labels[j]), by_agent)
        if cfg.field:
            n = len(recs)
            row |= {"fair_share": fair, "share_over_fair": score / n / fair if n else 0.0}
            continue
        bt += [(i, j, 1.0 if r.winner == 0 else 0.0 if r.winner == 1 else 0.5) for r in recs]
    return {
        "config": asdict(cfg),
        "pairs": table,
        "elo": [] if cfg.field else _ratings(labels, bt),
        "reply_counts": by_agent,
        "games": [asdict(r) for r in records],
    }


def _pair_row(
    a: str, b: str, recs: list[GameRecord], in_field: bool
) -> tuple[dict[str, Any], float]:
    """One pair's row of the table (agent `a` against `b` over their games `recs`) and a's
    score, which a field tournament's fair share needs: there a draw counts as no win."""
    n = len(recs)
    wins_i = sum(r.winner == 0 for r in recs)
    wins_j = sum(r.winner == 1 for r in recs)
    draws = n - wins_i - wins_j
    score = wins_i if in_field else wins_i + 0.5 * draws
    lo, hi = wilson(score, n)
    by_deal: dict[int, list[float]] = {}
    for r in recs:  # a deal's rotations are one duplicate sample: luck cancels inside it
        by_deal.setdefault(r.deal, []).append(r.margin)
    m, mlo, mhi = mean_ci([float(np.mean(x)) for x in by_deal.values()])
    row: dict[str, Any] = {
        "a": a,
        "b": b,
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
    return row, score


def _add_reply_counts(
    row: dict[str, Any],
    recs: list[GameRecord],
    names: tuple[str, str],
    by_agent: dict[str, dict[str, int] | None],
) -> None:
    """Add up the endpoint replies of the pair's agents (those that count them, ``llm:``) into
    their `row` and into `by_agent`, so that failed requests and fallbacks are reported."""
    for who, (side, name) in enumerate(zip(("a", "b"), names, strict=True)):
        counts = functools.reduce(add_counts, (r.reply_counts[who] for r in recs), None)
        if counts is not None:
            row[f"reply_counts_{side}"] = counts
            by_agent[name] = add_counts(by_agent.get(name), counts)


def _ratings(labels: list[str], bt: list[tuple[int, int, float]]) -> list[dict[str, Any]]:
    """Each agent's Elo rating with its 95% half-width, fitted over all the games' results
    `bt` (index of a, index of b, a's score); a field tournament has none."""
    value, half = elo(len(labels), bt)
    return [
        {"agent": labels[k], "elo": float(value[k]), "ci95": float(half[k])}
        for k in range(len(labels))
    ]


def labels_of(specs: list[str]) -> list[str]:
    """Short unique names of the agents: a policy file by its stem, repeats numbered."""
    out: list[str] = []
    for s in specs:
        label = Path(s).stem if s.endswith(".pt") else s
        out.append(label if label not in out else f"{label}#{out.count(label) + 1}")
    return out


def one_torch_thread() -> None:
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


@contextlib.contextmanager
def torch_threads(n: int, specs: list[str]) -> Iterator[None]:
    """Torch on `n` threads inside the block (if `specs` name a policy), as before after it. Games
    played in this process ask a policy for one decision at a time, which more threads only
    slow: three-player games of the card network against ExpertAgent on this 2-core machine,
    loaded by two other jobs, took 1.1 s each on one thread and over 15 s each on two (60 did
    not finish in 900 s)."""
    policy = any(parse_spec(spec).kind in ("policy", "shipped") for spec in specs)
    if "torch" not in sys.modules and not policy:  # a tournament of bots: no torch at all
        yield
        return
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _whole(value: Any) -> bool:
    """An int, and not a bool (which JSON's true would pass for)."""
    return isinstance(value, int) and not isinstance(value, bool)


def _finite(value: Any) -> bool:
    """A number that is not NaN or infinite (JSON's NaN and Infinity read as floats)."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _counts(value: Any) -> bool:
    """A `ReplyCounts` as a dict: each of its counts, a whole number from 0."""
    names = {f.name for f in fields(ReplyCounts)}
    return (
        isinstance(value, dict)
        and value.keys() == names
        and all(_whole(v) and v >= 0 for v in value.values())
    )


GAME_LINE_CHECKS: dict[str, Callable[[Any], bool]] = {
    "pair": _whole,
    "deal": _whole,
    "rotation": _whole,
    "seats": lambda v: isinstance(v, list),
    "winner": lambda v: v is None or (_whole(v) and v in (0, 1)),
    "points_per_hand": lambda v: isinstance(v, list) and len(v) == 2 and all(map(_finite, v)),
    "margin": _finite,
    "hands": lambda v: _whole(v) and v >= 0,
    "truncated": lambda v: isinstance(v, bool),
    "reply_counts": lambda v: (
        isinstance(v, list) and len(v) == 2 and all(c is None or _counts(c) for c in v)
    ),
}
"""What each field of a journal's game line must hold (`game_from_line`)."""


def game_from_line(line: str, seats: dict[tuple[int, int, int], list[int]]) -> GameRecord:
    """A journal line as a game of the tournament whose tasks' seats are `seats`; else a
    ValueError saying what is wrong with it (``torn``, ``with a bad margin``, ...): a line
    trusted as it was could count a game twice, remove a win or put NaN in the table."""
    try:
        d = json.loads(line)
    except ValueError:
        raise ValueError("torn") from None
    if not isinstance(d, dict):
        raise ValueError("torn")
    required = {f.name for f in fields(GameRecord) if f.name != "reply_counts"}
    if not required <= d.keys() <= GAME_LINE_CHECKS.keys():
        raise ValueError("with other fields than a game's")
    for name, value in d.items():
        if not GAME_LINE_CHECKS[name](value):
            raise ValueError(f"with a bad {name}")
    key = (d["pair"], d["deal"], d["rotation"])
    if key not in seats:
        raise ValueError("not a game of this tournament")
    if d["seats"] != seats[key]:
        raise ValueError("with other seats than its game's")
    return GameRecord(**d)


class Journal:
    """``games.jsonl`` in a tournament's folder: a first line naming the tournament
    (`identity`), then one line per game as it ends. A tournament of hours (searches at a
    second a decision) that is stopped keeps its games: ``--resume`` plays only the rest.
    Every game's seeds come from its deal and seating, so the resumed tournament's games are
    those the whole one would have played (a time-budgeted search's, as ever, up to its
    speed)."""

    NAME = "games.jsonl"

    def __init__(self, cfg: Config) -> None:
        self.path = Path(cfg.out) / self.NAME
        self.identity = self.identity_of(cfg)
        self.kept = self._read(tasks_for(cfg)) if cfg.resume else []
        # Rewritten whole, without the lines dropped, and atomically: a Ctrl+C meanwhile
        # leaves the old journal as it was (rewritten in place, one lost 60,000 games).
        lines = [{"tournament": self.identity}, *map(asdict, self.kept)]
        text = "".join(json.dumps(line) + "\n" for line in lines)
        write_atomically(self.path, lambda tmp: tmp.write_text(text))

    @staticmethod
    def identity_of(cfg: Config) -> dict[str, Any]:
        """What decides a tournament's games: the agents (with a digest of each policy file
        one names), games, rules, episode, seed, field, and the package's version (which the
        shipped policies are part of)."""
        files = {}
        for spec in cfg.specs:
            path = parse_spec(spec).path
            if path is not None and Path(path).is_file():
                files[spec] = hashlib.sha256(Path(path).read_bytes()).hexdigest()
        return {
            "specs": cfg.specs,
            "games": cfg.games,
            "rules": cfg.game_rules().to_dict(),
            "episode": cfg.episode,
            "seed": cfg.seed,
            "field": cfg.field,
            "policy_files": files,
            "version": rummy500_env.__version__,
        }

    def _read(self, tasks: list[Task]) -> list[GameRecord]:
        """The journal's games, if it is this tournament's. A line that is not a whole game of
        one of `tasks` (torn by a stop, edited, of another version) is dropped, its game
        played again, and one warning says how many were dropped and why."""
        if not self.path.is_file():
            raise EvaluateError(
                f"--resume: no {self.NAME} in {str(self.path.parent)!r}, so nothing to resume: "
                "give the --out of the stopped tournament, or drop --resume to start one"
            )
        lines = self.path.read_text().splitlines()
        try:
            theirs = json.loads(lines[0])["tournament"] if lines else None
        except (ValueError, TypeError, KeyError):
            theirs = None
        if theirs != self.identity:
            changed = sorted(
                k
                for k in self.identity
                if not isinstance(theirs, dict) or theirs.get(k) != self.identity[k]
            )
            raise EvaluateError(
                f"--resume: {self.path} is not this tournament's (it differs in: "
                f"{', '.join(changed)}); resume with the same agents and flags, or drop --resume "
                "(or pick another --out) to start a new one"
            )
        seats = {(t.pair, t.deal, t.rotation): t.seats for t in tasks}
        records: dict[tuple[int, int, int], GameRecord] = {}
        dropped: collections.Counter[str] = collections.Counter()
        for line in lines[1:]:
            try:
                r = game_from_line(line, seats)
                if (r.pair, r.deal, r.rotation) in records:
                    raise ValueError("repeating a game")
            except ValueError as why:
                dropped[str(why)] += 1
                continue
            records[r.pair, r.deal, r.rotation] = r
        if dropped:
            reasons = ", ".join(f"{n} {why}" for why, n in dropped.most_common())
            print(
                f"warning: --resume: dropped {dropped.total()} of {len(lines) - 1} game lines "
                f"of {self.path}, their games to be played again: {reasons}",
                file=sys.stderr,
            )
        return list(records.values())

    def add(self, record: GameRecord) -> None:
        with open(self.path, "a") as f:
            f.write(json.dumps(asdict(record)) + "\n")


def run(cfg: Config, progress: bool = True) -> dict[str, Any]:
    """Play the tournament and return its summary (also used by training). With
    ``cfg.journal`` each game is written down as it ends; with ``cfg.resume`` the games
    written down before are kept and not played again (`Journal`)."""
    journal = Journal(cfg) if cfg.journal or cfg.resume else None
    records: list[GameRecord] = [] if journal is None else list(journal.kept)
    done = {(r.pair, r.deal, r.rotation) for r in records}
    tasks = [t for t in tasks_for(cfg) if (t.pair, t.deal, t.rotation) not in done]
    pairs = pairs_of(cfg)
    work = [(cfg, [cfg.specs[pairs[t.pair][0]], cfg.specs[pairs[t.pair][1]]], t) for t in tasks]
    bar = _progress(len(work), progress)

    def ended(rec: GameRecord) -> None:
        records.append(rec)
        if journal is not None:
            journal.add(rec)
        bar.update(1)

    try:
        if work:
            _play(cfg, work, ended)
    finally:  # an error's line goes below the bar, not into it
        bar.close()
    records.sort(key=lambda r: (r.pair, r.deal, r.rotation))
    return summarize(cfg, records)


MAX_GAMES_PER_TASK = 4


def games_per_task(games: int, workers: int) -> int:
    """Games a worker is handed at once. A few spread the round trips of cheap games (one a
    task costs about a quarter more on bot-against-bot hands), and no more than
    `MAX_GAMES_PER_TASK`: a task's games reach the journal when the task ends, so a stopped
    tournament of slow searches loses at most that many games a worker, and the workers
    finish together."""
    return max(1, min(MAX_GAMES_PER_TASK, games // (workers * 20)))


def _play(cfg: Config, work: list[Work], ended: Callable[[GameRecord], None]) -> None:
    """Play `work` as Ray tasks, in a process pool or here, handing each game to `ended`."""
    if cfg.ray:
        run_on_ray(cfg, work, ended)
    elif cfg.workers > 1:
        journal = Path(cfg.out) / Journal.NAME
        advice = (
            f"; {journal} keeps the games that ended: run the same command with --resume to "
            "play the rest"
            if cfg.journal or cfg.resume
            else ""
        )
        size = games_per_task(len(work), cfg.workers)
        with WorkerPool(cfg.workers, one_torch_thread, cfg.worker_deadline) as pool:
            for rec in pool.imap_unordered(play_task, work, size, "game", advice):
                ended(rec)
    else:
        with torch_threads(1, cfg.specs):
            for w in work:
                ended(play_task(w))


def play_chunk(work: list[Work], files: dict[str, bytes]) -> list[GameRecord]:
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
        return [play_task((cfg, [local.get(s, s) for s in pair], task)) for cfg, pair, task in work]


def run_on_ray(cfg: Config, work: list[Work], ended: Callable[[GameRecord], None]) -> None:
    """The games as Ray tasks: on the cluster at ``cfg.address``, on a local Ray instance of
    ``cfg.workers`` CPUs, or on the Ray instance this process has already joined (training on
    RLlib evaluates this way). Every game's seed comes from its deal and seating, never from
    where it runs, so the records are the local pool's. Policy files travel with the tasks
    (`play_chunk`); each game is handed to `ended` as its chunk comes back."""
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
        size = games_per_task(len(work), cpus)
        policies = [spec for spec in cfg.specs if Path(spec).is_file()]
        files = ray.put({spec: Path(spec).read_bytes() for spec in policies})
        remote = ray.remote(play_chunk)
        pending = [remote.remote(work[i : i + size], files) for i in range(0, len(work), size)]
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            for rec in ray.get(done[0]):
                ended(rec)
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
