"""``python -m training.exit``: expert iteration (Anthony et al. 2017, "Thinking Fast and Slow
with Deep Learning and Tree Search"), with the policy-guided search as the expert.

Each round:

1. **Label.** Self-play hands in which every seat's move is chosen by `PolicySearchAgent`
   searching with the current network (by default as the ``psearch`` spec plays it, the
   other seat's last turns weighing each seat's worlds, `TurnWitness`, with a gentler
   ``c_scale`` of 0.3 for the labels). Every
   decision with more than one legal action becomes a labelled position: the observation and
   mask, the search's improved policy (softmax of the prior logits plus σ of the completed
   values, Danihelka et al. 2022, §4) and its value, and, when the hand ends, the hand's
   outcome for that seat. With agents in ``opponents``, some hands are played against one
   of them instead: it holds one seat, and the search in the other, labelled alone, knows
   it (its simulations play that agent's moves). Labelling is the cost, so it runs in
   parallel workers: local processes by default, Ray tasks with ``--ray`` (and ``--address``
   to join a cluster), one interface (`Workers`) over both.
2. **Learn.** The network is trained on the last ``replay_rounds`` rounds of labels: cross
   entropy to the improved policy, and squared error of the value head to
   ``value_mix`` × the search's value + (1 − ``value_mix``) × the hand's outcome.
3. The next round searches with the new network.

It starts from a trained policy (``init_policy``; by default the shipped policy made for the
table): a search guided by an untrained network is no expert. A run folder holds what
`training.ppo`'s does (``config.json``, ``state.json``, ``checkpoints/``, ``tb/``,
``evaluations.csv``, ``policy.pt``) plus ``labels/`` (the replay, one ``.npz`` a round) and
``current.pt`` (the policy the workers search with).

    python -m training.exit                                   # the packaged config "exit"
    python -m training.exit --total-timesteps 40000 --workers 2 --simulations 32
    python -m training.exit --ray --address auto              # label on a Ray cluster
    python -m training.exit --resume runs/exit_standard_hand_s0
"""

from __future__ import annotations

import math
import random
import re
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn as nn

from rummy500_env.agents.networks import CardPolicy
from rummy500_env.agents.opponent_turn import OpponentTurn, TurnWitness
from rummy500_env.agents.policy import PolicyAgent
from rummy500_env.agents.policy_file import load_policy_file
from rummy500_env.agents.psearch import LEAVES, PolicySearchAgent, hand_value
from rummy500_env.agents.registry import make_agent
from rummy500_env.agents.shipped import policy_path, shipped_for
from rummy500_env.engine.errors import Rummy500Error
from rummy500_env.engine.files import remove_leftovers, write_atomically
from rummy500_env.engine.game import Game
from rummy500_env.engine.notation import Action
from rummy500_env.engine.rules import Rules
from rummy500_env.engine.seat_view import SeatView
from rummy500_env.evaluation.pool import WorkerDied, WorkerPool
from rummy500_env.evaluation.reports import signed_interval
from rummy500_env.evaluation.tournament import Config, one_torch_thread
from rummy500_env.evaluation.tournament import run as run_tournament
from rummy500_env.rl.actions import ActionCodec
from rummy500_env.rl.observation import ObservationEncoder
from rummy500_env.rl.opponents import Agent, choose
from rummy500_env.training.device import DeviceArgs, check_device, device_line, pick_device
from rummy500_env.training.model import masked_logits
from rummy500_env.training.run import (
    Every,
    RunFolder,
    export_policy,
    load_checkpoint,
    save_checkpoint,
    seed_and_threads,
    stop_if_diverged,
    trainer_main,
)
from rummy500_env.training.settings import (
    ConfigError,
    TrainArgs,
    command_line,
    require,
    require_pool,
    require_positive_ints,
)

LABELS_A_HAND = 20
"""Labels a hand is expected to give before any has ended (two players label about 45):
how many hands the first batch of a task starts."""
FIELDS = ("obs", "mask", "policy", "search_value", "outcome")
"""The arrays of a batch of labels (`label_hands`)."""
LABELS_FILE = re.compile(r"round_(\d+)\.npz")
"""A round's labels file in ``labels/``; nothing else there is one (a write under way has a
hidden temporary name, `write_atomically`'s)."""
RAY_LOSSES = (
    "WorkerCrashedError",
    "NodeDiedError",
    "LocalRayletDiedError",
    "OutOfMemoryError",
    "ObjectLostError",
)
"""The ``ray.exceptions`` that say a task's work was lost (its worker or node died, Ray's
retries spent), rather than raised by the task itself."""


@dataclass
class Args(DeviceArgs, TrainArgs):
    """Expert iteration for Rummy 500: a policy-guided search labels self-play positions and
    the network learns its improved policy and values."""

    TRAINER = "exit"
    STEPS = "labels"

    init_policy: str | None = None
    """The policy to improve (a policy file or a shipped name); None: the shipped policy made
    for the rules. It needs a value head (the ``cards`` network)."""
    labels_per_round: int = 4096
    """Labelled positions a round (split between the workers)."""
    simulations: int = 64
    """Search simulations a labelled decision (one world × one candidate each)."""
    candidates: int = 2
    """Actions the search considers at the root."""
    leaf: str = "rollout"
    """How the search values what follows a candidate (`PolicySearchAgent`)."""
    c_scale: float = 0.3
    """σ's scale in the search (`PolicySearchAgent`): how far the improved policy moves from
    the prior for a given difference of values. The values of a few simulations are noisy; a
    large scale turns that noise into confident targets."""
    gumbel: bool = False
    """Gumbel noise at the root (the paper's); False: the top ``candidates`` by prior."""
    evidence: int = 2
    """The other seat's last turns (at most this many) whose moves weigh the search's worlds
    (`PolicySearchAgent`, two players without jokers or calls; elsewhere none are read)."""
    hands_at_once: int = 16
    """Self-play hands a worker plays side by side, their searches in lockstep: the network
    values all their simulations in one batch, which costs little more than one search's."""
    opponents: dict[str, float] = field(default_factory=lambda: {"self": 1.0})
    """Who the labelled hands are played against, by weight: "self" (the search in every seat,
    every seat labelled) or an agent spec (`rummy500_env.agents.registry`): that agent holds
    one seat and plays its own moves, and the search in the other seats, the only ones
    labelled, plays out its simulations against a copy of it. A search that knows its opponent finds
    what beats it (`PolicySearchAgent`'s ``opponent``)."""
    start_hands: int = 200
    """At each evaluation, duplicate hands the learner plays against the policy the run
    started from (each deal twice, seats swapped): its margin a hand, the most sensitive
    measure of whether a round helped. 0: not measured."""
    workers: int = 2
    """Labelling processes (or Ray tasks in flight with ``ray``)."""
    ray: bool = False
    """Label on Ray (a local instance of ``workers`` CPUs, or the cluster at ``address``)."""
    address: str | None = None
    """With ``ray``: the cluster to join (``auto``, or host:port)."""
    replay_rounds: int = 3
    """Rounds of labels the network learns from (the newest)."""
    n_epochs: int = 2
    """Passes over the replay a round."""
    minibatch_size: int = 512
    """Labels a gradient step."""
    learning_rate: float = 1e-4
    """Adam step size."""
    value_coef: float = 1.0
    """Weight of the value loss."""
    value_mix: float = 0.5
    """Value target: this share of the search's value, the rest the hand's outcome."""
    max_grad_norm: float = 0.5
    """Gradient norm clip."""
    threads: int = 2
    """Torch threads of the update."""
    progress: bool = True
    """Print a line a round."""

    def policy_name(self) -> str:
        """The policy the run starts from (`init_policy`, or the table's shipped one)."""
        return self.init_policy or shipped_for(self.game_rules())

    def network_spec(self) -> dict[str, Any]:
        """The starting policy's network: expert iteration keeps its architecture."""
        meta = load_policy_file(policy_path(self.policy_name()))["metadata"]
        return dict(meta["network"])

    def validate(self) -> None:
        """Raise `ConfigError` for values that cannot train, naming what is allowed."""
        super().validate()
        require(self, self.episode == "hand", "episode", "expert iteration labels hands: 'hand'")
        require_positive_ints(
            self,
            "labels_per_round",
            "simulations",
            "candidates",
            "workers",
            "replay_rounds",
            "n_epochs",
            "minibatch_size",
            "threads",
            "hands_at_once",
        )
        require(self, self.evidence >= 0, "evidence", "use a whole number of turns >= 0")
        check_device(self.device)
        require_pool(self, "self (the search in every seat)")
        require(self, self.leaf in LEAVES, "leaf", f"use one of {LEAVES}")
        require(self, self.c_scale >= 0, "c_scale", "use a number >= 0")
        require(self, self.start_hands >= 0, "start_hands", "use a whole number >= 0")
        require(self, 0 < self.learning_rate < 1, "learning_rate", "use a number in (0, 1)")
        require(self, self.value_coef >= 0, "value_coef", "use a number >= 0")
        require(self, 0 <= self.value_mix <= 1, "value_mix", "use a number in [0, 1]")
        require(self, self.max_grad_norm > 0, "max_grad_norm", "use a number > 0")
        require(
            self,
            self.address is None or self.ray,
            "address",
            "an address is for a Ray cluster: add --ray",
        )
        try:
            PolicyAgent.load(self.policy_name(), rules=self.game_rules())
        except Rummy500Error as e:
            raise ConfigError(f"init_policy={self.init_policy!r} cannot be used: {e}") from None
        for spec in set(self.opponents) - {"self"}:  # each builds: now, not in a worker
            try:
                make_agent(spec, self.game_rules(), seed=0)
            except (Rummy500Error, ModuleNotFoundError) as e:
                raise ConfigError(f"opponents: {spec!r} cannot play these rules: {e}") from None
        if self.network_spec().get("kind") != "cards":
            raise ConfigError(
                f"init_policy={self.policy_name()!r} has network {self.network_spec()}: expert "
                "iteration trains the value head, which only the 'cards' network has"
            )


def parse_args(argv: list[str]) -> tuple[Args, bool]:
    """(args, resuming) from the command line (see `settings.command_line`)."""
    return command_line(Args, argv, __doc__)


# --- labelling (runs in the workers)


@dataclass(frozen=True)
class LabelTask:
    """One worker's share of a round: hands searched with the policy in `policy` (the file's
    bytes, so a Ray node needs no shared filesystem), until `labels` positions are labelled."""

    rules: str
    policy: bytes
    simulations: int
    candidates: int
    leaf: str
    seed: int
    labels: int
    c_scale: float = 1.0
    hands_at_once: int = 16
    gumbel: bool = True
    evidence: int = 0
    opponents: tuple[tuple[str, float], ...] = (("self", 1.0),)
    """(spec, weight) of each opponent (`Args.opponents`)."""


def label_hands(task: LabelTask) -> dict[str, np.ndarray]:
    """Play hands with the search in every seat (or, against an agent of ``task.opponents``,
    in one seat) and return the labelled positions (`FIELDS`). `hands_at_once` hands are
    played side by side and their positions searched in lockstep
    (`PolicySearchAgent.analyse_many`, one search per opponent), so the network is asked for
    many simulations at a time; a hand's labels are kept once it ends (with its outcome), and
    new hands start until the labels asked for are reached or under way, so there may be a
    few more than asked."""
    rules = Rules.parse(task.rules)
    names = [name for name, weight in task.opponents if weight > 0]
    searches = _searches(task, rules, names)
    encoder, codec = ObservationEncoder(rules), ActionCodec(rules)
    deals = random.Random(task.seed)
    draws = random.Random(task.seed + 1)  # opponents and their seats; never drawn from
    weights = [weight for name, weight in task.opponents if weight > 0]  # for one name
    rows: dict[str, list[Any]] = {k: [] for k in FIELDS}
    playing: list[_Hand] = []
    hands = 0
    while True:  # a hand under way counts as the labels a hand has had so far, on average
        per_hand = len(rows["obs"]) / hands if hands else LABELS_A_HAND
        under_way = sum(max(len(h.rows["obs"]), per_hand) for h in playing)
        while len(playing) < task.hands_at_once and len(rows["obs"]) + under_way < task.labels:
            game = Game.new(rules, seed=deals.getrandbits(63))
            name = names[0] if len(names) == 1 else draws.choices(names, weights)[0]
            bot = None
            if name != "self":
                bot = (
                    draws.randrange(rules.players),
                    make_agent(name, rules, draws.getrandbits(31)),
                )
            playing.append(_Hand(game, name, bot, task.evidence))
            under_way += per_hand
        if not playing:
            break
        for hand in playing:  # forced moves and the agent's are not searched
            hand.play_unsearched(encoder, codec)
        for hand in [h for h in playing if h.game.is_hand_over]:
            hand.rows["outcome"] = [hand_value(hand.game, seat) for seat in hand.seats]
            for k in FIELDS:
                rows[k] += hand.rows[k]
            playing.remove(hand)
            hands += 1
        for name, search in searches.items():
            mine = [h for h in playing if h.opponent == name]
            if mine:
                _search_and_label(search, mine, encoder, codec)
    return _as_arrays(rows)


def _searches(task: LabelTask, rules: Rules, names: list[str]) -> dict[str, PolicySearchAgent]:
    """One search per opponent in `names`, all guided by the task's policy: each knows the
    agent it plays against (its simulations play that agent's moves)."""
    with tempfile.TemporaryDirectory() as tmp:  # the policy travels as bytes, loads from a file
        path = Path(tmp) / "policy.pt"
        path.write_bytes(task.policy)
        policy = PolicyAgent.load(path, rules=rules)
    return {
        name: PolicySearchAgent(
            rules,
            policy=policy,
            simulations=task.simulations,
            candidates=task.candidates,
            leaf=task.leaf,
            c_scale=task.c_scale,
            gumbel=task.gumbel,
            evidence=task.evidence,
            seed=task.seed + k,
            opponent=None if name == "self" else make_agent(name, rules, task.seed + k),
        )
        for k, name in enumerate(names)
    }


def _search_and_label(
    search: PolicySearchAgent, hands: list[_Hand], encoder: ObservationEncoder, codec: ActionCodec
) -> None:
    """Search the position to move in each of `hands` in one lockstep batch, so the network
    sees many simulations at a time; label each position and play the search's move."""
    views = [(h.game.seat_view(h.game.current_player), h.game.legal_actions()) for h in hands]
    evidence = [h.evidence(view) for h, (view, _) in zip(hands, views, strict=True)]
    for hand, (view, _), result in zip(
        hands, views, search.analyse_many(views, evidence), strict=True
    ):
        game, seat = hand.game, hand.game.current_player
        hand.witnesses[seat].did(view, result.action)  # after `evidence` saw `view`
        target = np.zeros(codec.size, dtype=np.float32)
        target[result.ids] = result.improved
        hand.rows["obs"].append(encoder.encode(game, seat))
        hand.rows["mask"].append(codec.mask(game).astype(bool))
        hand.rows["policy"].append(target)
        hand.rows["search_value"].append(result.value)
        hand.seats.append(seat)
        game.apply(result.action)


def _as_arrays(rows: dict[str, list[Any]]) -> dict[str, np.ndarray]:
    """The labels as the arrays of `FIELDS` a round's ``.npz`` holds and the learner reads."""
    return {
        "obs": np.stack(rows["obs"]).astype(np.float32),
        "mask": np.stack(rows["mask"]),
        "policy": np.stack(rows["policy"]),
        "search_value": np.asarray(rows["search_value"], dtype=np.float32),
        "outcome": np.asarray(rows["outcome"], dtype=np.float32),
    }


class _Hand:
    """A hand being labelled: the game, who the search plays against in it (``"self"``, or an
    agent spec with its seat and the agent), the seat of each labelled decision, the labels
    so far (the outcomes once the hand ends), and what each seat saw of the other's turns
    (the search's evidence, `keep` turns; 0: none)."""

    def __init__(
        self, game: Game, opponent: str, bot: tuple[int, Agent] | None, keep: int = 0
    ) -> None:
        self.game = game
        self.opponent = opponent
        self.bot = bot
        self.seats: list[int] = []
        self.rows: dict[str, list[Any]] = {k: [] for k in FIELDS}
        self.witnesses = [TurnWitness(keep) for _ in range(game.rules.players)]

    def play_unsearched(self, encoder: ObservationEncoder, codec: ActionCodec) -> None:
        """Play on until the search has a choice to make or the hand is over: the moves of
        the agent's seat (its own choice) and every seat's only legal moves."""
        game = self.game
        while not game.is_hand_over:
            seat, legal = game.current_player, game.legal_actions()
            if self.bot is not None and seat == self.bot[0]:
                observe = partial(_observation, encoder, codec, game, seat)
                action = codec.decode(game, choose(self.bot[1], game, codec, observe))
            elif len(legal) == 1:
                action = legal[0]
                self.saw(seat, action)
            else:
                return
            game.apply(action)

    def evidence(self, view: SeatView) -> list[OpponentTurn]:
        """The turns that weigh the search of the seat to move, in its `view`."""
        witness = self.witnesses[view.seat]
        witness.see(view)
        return witness.turns_for(view)

    def saw(self, seat: int, action: Action) -> None:
        """The seat to move makes its only legal move, `action`: its witness sees it."""
        if self.witnesses[seat].keep:
            view = self.game.seat_view(seat)
            self.witnesses[seat].see(view)
            self.witnesses[seat].did(view, action)


def _observation(
    encoder: ObservationEncoder, codec: ActionCodec, game: Game, seat: int
) -> dict[str, np.ndarray]:
    """What an agent that acts on observations sees of `game` as `seat` (the env's dict)."""
    return {"observation": encoder.encode(game, seat), "action_mask": codec.mask(game)}


LabelWork = Callable[[LabelTask], dict[str, np.ndarray]]
"""What a worker runs on a task: `label_hands`, or a wrapper of it (a benchmark's timing)."""


class Workers:
    """Where labelling runs: this process (one worker), a local process pool, or Ray. Every
    task's labels depend on its seed alone, never on where it ran."""

    def __init__(self, args: Args) -> None:
        self.args = args
        self.pool: WorkerPool | None = None
        self.ray: Any = None
        if args.ray:
            try:
                import ray
            except ModuleNotFoundError:
                raise ConfigError(
                    'training.exit --ray needs Ray: pip install "ray[default]" (or the rllib '
                    'extra: pip install torch==2.13.0 -e ".[rllib]")'
                ) from None
            self.joined = not ray.is_initialized()
            if self.joined:
                if args.address:
                    ray.init(address=args.address)
                else:
                    ray.init(num_cpus=args.workers, include_dashboard=False)
            self.ray = ray
        elif args.workers > 1:
            self.pool = WorkerPool(args.workers, initializer=one_torch_thread)

    def label(
        self, tasks: list[LabelTask], work: LabelWork = label_hands
    ) -> Iterator[dict[str, np.ndarray]]:
        """Each task's labels (`work`'s result), in the order the tasks finish."""
        if self.ray is not None:
            yield from self.label_on_ray(tasks, work)
        elif self.pool is not None:
            lost = "; resume the run from its last checkpoint with --resume"
            yield from self.pool.imap_unordered(work, tasks, unit="labelling task", advice=lost)
        else:
            before = torch.get_num_threads()
            torch.set_num_threads(1)
            try:
                for t in tasks:
                    yield work(t)
            finally:
                torch.set_num_threads(before)

    def label_on_ray(
        self, tasks: list[LabelTask], work: LabelWork
    ) -> Iterator[dict[str, np.ndarray]]:
        """`label` on Ray. A task whose worker died more often than Ray retries it (`RAY_LOSSES`)
        is `WorkerDied`, one line, as a local worker's death is; the tasks still pending are
        cancelled, so that a cluster does not run them on for nobody."""
        losses = tuple(
            getattr(self.ray.exceptions, name)
            for name in RAY_LOSSES
            if hasattr(self.ray.exceptions, name)
        )
        remote = self.ray.remote(work)
        pending = [remote.remote(t) for t in tasks]
        try:
            while pending:
                done, pending = self.ray.wait(pending, num_returns=1)
                try:
                    labels = self.ray.get(done[0])
                except losses as e:
                    why = (str(e).strip().splitlines() or [""])[0][:200]
                    lost = f"{len(pending) + 1} of {len(tasks)} labelling tasks unfinished"
                    raise WorkerDied(
                        f"a Ray worker labelling died and Ray's retries are spent "
                        f"({type(e).__name__}: {why}) with {lost}; resume the run from its last "
                        "checkpoint with --resume"
                    ) from None
                yield labels
        finally:
            for ref in pending:
                self.ray.cancel(ref, force=True)

    def close(self) -> None:
        if self.pool is not None:
            self.pool.close()
        if self.ray is not None and self.joined:
            self.ray.shutdown()


# --- learning


def value_targets(labels: dict[str, np.ndarray], mix: float) -> np.ndarray:
    """The value head's target: `mix` of the search's value, the rest the hand's outcome."""
    return mix * labels["search_value"] + (1 - mix) * labels["outcome"]


def label_losses(
    network: CardPolicy,
    obs: torch.Tensor,
    masks: torch.Tensor,
    targets: torch.Tensor,
    values: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per label, the policy's cross entropy to the improved policy `targets`; and the value
    head's mean squared error (halved) to `values`."""
    logits, v = network.forward_with_value(obs)
    logp = torch.log_softmax(masked_logits(logits, masks), -1)
    return -(targets * logp).sum(-1), 0.5 * ((v - values) ** 2).mean()


def entropy(targets: torch.Tensor) -> torch.Tensor:
    """Each row's entropy: cross entropy minus it is the KL divergence."""
    return -(targets * torch.log(targets.clamp_min(1e-12))).sum(-1)


def exit_update(
    network: CardPolicy,
    optimizer: torch.optim.Optimizer,
    labels: dict[str, np.ndarray],
    args: Args,
    seed: int,
) -> dict[str, float]:
    """`n_epochs` passes over `labels`; returns the last pass's mean losses: the policy's cross
    entropy to the improved policy, its KL divergence from it, and the value loss; and the
    gradient's norm before clipping (a non-finite one is a diverged step). It runs on the
    network's device."""
    device = next(network.parameters()).device
    obs = torch.from_numpy(labels["obs"]).to(device)
    masks = torch.from_numpy(labels["mask"]).to(device)
    targets = torch.from_numpy(labels["policy"]).to(device)
    values = torch.from_numpy(value_targets(labels, args.value_mix).astype(np.float32)).to(device)
    entropy_of_targets = entropy(targets)
    gen = np.random.default_rng(seed)
    network.train()
    stats: dict[str, list[float]] = {}
    for _epoch in range(args.n_epochs):
        stats = {"policy": [], "kl": [], "value": [], "grad_norm": []}
        order = torch.as_tensor(gen.permutation(len(obs)), device=device)
        for start in range(0, len(obs), args.minibatch_size):
            idx = order[start : start + args.minibatch_size]
            cross_entropy, value_loss = label_losses(
                network, obs[idx], masks[idx], targets[idx], values[idx]
            )
            policy_loss = cross_entropy.mean()
            loss = policy_loss + args.value_coef * value_loss
            optimizer.zero_grad()
            torch.autograd.backward(loss)
            norm = nn.utils.clip_grad_norm_(network.parameters(), args.max_grad_norm)
            optimizer.step()
            stats["grad_norm"].append(float(norm))
            stats["policy"].append(policy_loss.item())
            stats["kl"].append((cross_entropy - entropy_of_targets[idx]).mean().item())
            stats["value"].append(value_loss.item())
    network.eval()
    return {k: float(np.mean(v)) for k, v in stats.items()}


def labels_files(folder: Path) -> dict[int, Path]:
    """The rounds' labels files in `folder` (`LABELS_FILE`), by round, oldest first."""
    found = {}
    for path in folder.glob("round_*.npz"):
        name = LABELS_FILE.fullmatch(path.name)
        if name:
            found[int(name[1])] = path
    return dict(sorted(found.items()))


def save_labels(path: Path, labels: dict[str, np.ndarray]) -> None:
    """Write a round's labels (`FIELDS`) as a compressed ``.npz`` at `path`, whatever its
    name: numpy adds ``.npz`` to a name without it, not to an open file."""
    with open(path, "wb") as f:
        np.savez_compressed(f, allow_pickle=False, **labels)


def labels_problem(path: Path) -> str | None:
    """Why the labels file `path` cannot be learned from (cut short, damaged bytes, an array
    missing, arrays of different lengths), or None: every array is read whole, so its
    checksum is checked."""
    try:
        with np.load(path) as data:
            lengths = {len(data[k]) for k in FIELDS}
    except Exception as e:  # numpy and zipfile raise many types for damaged bytes
        return f"{type(e).__name__}: {e}"
    return None if len(lengths) == 1 else "its arrays differ in length"


def load_replay(files: list[Path]) -> dict[str, np.ndarray]:
    """The labels of these rounds' files, concatenated."""
    parts = []
    for f in files:
        with np.load(f) as data:
            parts.append({k: data[k] for k in FIELDS})
    return {k: np.concatenate([p[k] for p in parts]) for k in FIELDS}


def round_tasks(args: Args, policy: bytes, round_index: int) -> list[LabelTask]:
    """A round's labelling tasks: `labels_per_round` split between the workers, searching
    with `policy` (a policy file's bytes), a seed per round and worker."""
    n = args.workers
    share = math.ceil(args.labels_per_round / n)
    base = (args.seed * 1_000_003 + round_index) * n
    search = (args.simulations, args.candidates, args.leaf)
    return [
        LabelTask(
            args.rules,
            policy,
            *search,
            base + w,
            share,
            args.c_scale,
            args.hands_at_once,
            args.gumbel,
            args.evidence,
            tuple(args.opponents.items()),
        )
        for w in range(n)
    ]


# --- the run


class Trainer:
    """A run: its network, optimizer, workers, counters and folder. `train` drives it."""

    def __init__(self, args: Args, resume: bool) -> None:
        self.args = args
        seed_and_threads(args.seed, args.threads)
        device = pick_device(args.device)
        print(device_line(device, args.device), flush=True)
        start = PolicyAgent.load(args.policy_name(), rules=args.game_rules())
        self.network: CardPolicy = start.network.to(device)  # validate(): a cards network
        self.optimizer = torch.optim.Adam(self.network.parameters(), lr=args.learning_rate)
        self.run = RunFolder(args, resume)
        self.labels_dir = self.run.path / "labels"
        self.labels_dir.mkdir(exist_ok=True)
        if resume:
            self.state = load_checkpoint(self.run.path, self.network, self.optimizer, args)
            for group in self.optimizer.param_groups:  # the checkpoint's rate; a resume may
                group["lr"] = args.learning_rate  # change it (`check_resume`)
            print(f"resumed from {self.state['checkpoint']} at {self.state['timesteps']} labels")
        else:
            self.state = {"timesteps": 0, "rounds": 0, "wall_s": 0.0, "label_s": 0.0}
            self.state["init_policy"] = args.policy_name()
        self.check_labels()
        self.workers = Workers(args)

    def check_labels(self) -> None:
        """Leave in ``labels/`` only what the next round may learn from, checked now rather
        than when a round loads it: no temporary file of a write a killed run left, no round
        from after the checkpoint (it is labelled again), and no damaged file. A damaged one
        (its bytes cut or changed since it was written whole) is removed with a warning: its
        round was learned from before the checkpoint, so the run loses no work, only that
        round's share of the replay until it would have aged out; a refusal would leave the
        user no other choice than removing it."""
        remove_leftovers(self.labels_dir)
        for leftover in self.labels_dir.glob("round_*.tmp.npz"):  # older versions' temporary
            leftover.unlink()
        for number, path in labels_files(self.labels_dir).items():
            if number >= self.state["rounds"]:
                path.unlink()
                continue
            problem = labels_problem(path)
            if problem is not None:
                print(
                    f"warning: removed the damaged labels file {path} ({problem[:200]}); the "
                    f"next rounds learn from the other rounds' labels",
                    file=sys.stderr,
                )
                path.unlink()

    @property
    def timesteps(self) -> int:
        return int(self.state["timesteps"])

    def checkpoint(self) -> None:
        """The network, optimizer, counters and torch's random state (`save_checkpoint`)."""
        save_checkpoint(self.run.checkpoints, self.network, self.optimizer, self.state, self.args)

    def tasks(self) -> list[LabelTask]:
        """This round's labelling tasks, searching with the current network."""
        current = self.run.path / "current.pt"
        export_policy(self.network, self.args, current, self.timesteps)
        return round_tasks(self.args, current.read_bytes(), int(self.state["rounds"]))

    def round(self) -> dict[str, float]:
        """Label, store the round's labels, learn from the replay; returns the round's figures."""
        args, t0 = self.args, time.time()
        parts = list(self.workers.label(self.tasks()))
        labels = {k: np.concatenate([p[k] for p in parts]) for k in FIELDS}
        label_s = time.time() - t0
        n = len(labels["obs"])
        path = self.labels_dir / f"round_{self.state['rounds']:05d}.npz"
        write_atomically(path, partial(save_labels, labels=labels))  # whole or absent
        oldest = self.state["rounds"] - args.replay_rounds + 1  # of the replay
        replay = []
        for number, file in labels_files(self.labels_dir).items():
            if number < oldest:
                file.unlink()
            else:
                replay.append(file)
        t1 = time.time()
        losses = exit_update(
            self.network,
            self.optimizer,
            load_replay(replay),
            args,
            args.seed + self.state["rounds"],
        )
        self.state["rounds"] += 1
        self.state["timesteps"] += n
        self.state["label_s"] += label_s
        self.state["wall_s"] += time.time() - t0
        return losses | {
            "labels_per_s": n / max(label_s, 1e-9),
            "update_s": time.time() - t1,
            "search_value": float(labels["search_value"].mean()),
            "outcome": float(labels["outcome"].mean()),
        }

    def learn(self) -> None:
        """Rounds until `total_timesteps` labels, with checkpoints and evaluations each time
        their interval is passed."""
        args = self.args
        checkpoint = Every(args.checkpoint_every, self.timesteps)
        evaluation = Every(args.eval_every, self.timesteps)
        while self.timesteps < args.total_timesteps:
            figures = self.round()
            where = f"round {self.state['rounds']} ({self.timesteps:,} labels)"
            stop_if_diverged(figures, where, self.run.path)  # before it is saved anywhere
            for k, v in figures.items():
                self.run.writer.add_scalar(f"exit/{k}", v, self.timesteps)
            if args.progress:
                print(
                    f"round {self.state['rounds']:>4}  {self.timesteps:>8,} labels  "
                    f"{figures['labels_per_s']:,.1f} labels/s  policy CE {figures['policy']:.3f}  "
                    f"KL {figures['kl']:.3f}  value {figures['value']:.4f}",
                    flush=True,
                )
            if self.timesteps < args.total_timesteps and evaluation.due(self.timesteps):
                self.run.evaluate(self.network, self.timesteps, args.eval_games)
                self.margin_against_start()
            if checkpoint.due(self.timesteps):  # after the evaluation (`run.Checkpoints`)
                self.checkpoint()

    def margin_against_start(self) -> dict[str, Any] | None:
        """The learner (as last exported for evaluation) against the policy the run started
        from over `start_hands` duplicate hands: its margin a hand with the 95% interval, to
        TensorBoard and ``start_margins.csv``."""
        args = self.args
        if not args.start_hands:
            return None
        cfg = Config(
            [str(self.run.path / "eval_policy.pt"), str(policy_path(self.state["init_policy"]))],
            games=args.start_hands,
            rules=args.rules,
            episode="hand",
            seed=args.seed + 2,
            out=str(self.run.path / "evaluate"),
            workers=args.workers,
        )
        pair = run_tournament(cfg, progress=False)["pairs"][0]
        row = {"labels": self.timesteps, "hands": pair["games"], "margin": pair["margin_a"]}
        row |= dict(zip(("low", "high"), pair["margin_a_ci95"], strict=True))
        self.run.writer.add_scalar("eval/margin_vs_start", row["margin"], self.timesteps)
        self.run.append_row("start_margins.csv", row)
        print(
            f"against the start policy at {self.timesteps:,} labels: {row['margin']:+.1f} a hand "
            f"({signed_interval(pair['margin_a_ci95'])}, {row['hands']} hands)",
            flush=True,
        )
        return row

    def close(self) -> None:
        self.workers.close()


def train(args: Args, resume: bool = False) -> Path:
    """Train (or resume) and return the path of the exported policy."""
    trainer = Trainer(args, resume)
    trainer.run.announce()
    try:
        trainer.learn()
    finally:
        trainer.close()
    trainer.checkpoint()
    policy = trainer.run.finish(trainer.network, trainer.state)
    trainer.margin_against_start()  # the final policy, as finish exported it for evaluation
    return policy


def main(argv: list[str] | None = None) -> int:
    return trainer_main(parse_args, train, argv)


if __name__ == "__main__":
    sys.exit(main())
