"""``python -m training.search_nets``: the networks that let the policy-guided search
(`PolicySearchAgent`) see more than its policy does, trained on the policy's own play.

- a **table value** (`TableValue`, file kind ``table``): a hand's outcome for a seat from its
  observation *and* the other hands; in a world the search has dealt every hand is known, so
  this is the policy's expected score from that world (the search's ``table`` leaf);
- a **hand belief** (`HandBelief`, file kind ``belief``): the chance of each card being in each
  other hand, from a seat's observation alone; the search deals its worlds by it
  (``belief=``) instead of uniformly;
- **whole-hand odds** (`HandOdds`, file kind ``odds``): that belief (kept as it was trained)
  and a joint term over whole hands, trained to tell the true hands of a position from hands
  the belief deals in it; given as ``belief=``, the search keeps the worlds it deals in
  proportion to the odds (sampling importance resampling).

One self-play set serves all three: the policy plays every seat greedily (a share ``explore`` of
its moves sampled from its softmax, so positions off its path are seen too), whole games hand
after hand; at every decision each seat's observation and the others' hands are kept with the
chance ``keep``, and each kept row gets its seat's hand outcome (`psearch.hand_value`). The last
tenth of the hands is held out: the files' metadata record the held-out losses, and the table
value's beside the policy's own value head's.

    python -m training.search_nets --policy standard --games 10000 --out runs/search_nets
    python -m training.search_nets --nets belief,odds --games 2000 --out runs/odds
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

import rummy500_env
from rummy500_env.agents.networks import (
    BELIEF,
    ODDS,
    TABLE,
    HandBelief,
    HandOdds,
    TableValue,
    belief_odds,
)
from rummy500_env.agents.policy import PolicyAgent, current_encoding, save_policy, shipped_for
from rummy500_env.agents.psearch import hand_value
from rummy500_env.engine.errors import Rummy500Error
from rummy500_env.engine.game import Game
from rummy500_env.engine.numbers import int_option
from rummy500_env.engine.rules import Rules
from rummy500_env.rl.actions import ActionCodec
from rummy500_env.rl.hidden import hidden_hands, hidden_hands_size
from rummy500_env.rl.observation import ObservationEncoder
from rummy500_env.training.common import git_commit

NETS = (TABLE, BELIEF, ODDS)
"""The networks the command trains, in the order it trains them."""
HELD_OUT = 0.1
"""The share of the hands (the last ones) whose rows are held out."""


@dataclass
class Samples:
    """Self-play rows: a seat's observation features (float16: they are counts and
    fractions), the other hands (`hidden_hands`), the seat's hand outcome, and which hand;
    for the whole-hand odds, the seat's unseen cards (counts by card id, `JOKER` last) and,
    per other seat, the cards of its hand dealt from them (its hand less what the seat knows
    it holds)."""

    obs: np.ndarray[Any, Any]
    hidden: np.ndarray[Any, Any]
    outcome: np.ndarray[Any, Any]
    hand: np.ndarray[Any, Any]
    unseen: np.ndarray[Any, Any]
    dealt: np.ndarray[Any, Any]


def self_play(
    policy: PolicyAgent,
    rules: Rules,
    games: int,
    seed: int,
    at_once: int = 256,
    explore: float = 0.1,
    keep: float = 0.5,
) -> Samples:
    """`games` whole games of the policy against itself, `at_once` side by side (one batched
    forward a step), as rows (module docstring)."""
    rng = random.Random(seed)
    encoder, codec = ObservationEncoder(rules), ActionCodec(rules)
    features, width = encoder.features_size, 52 + (1 if rules.jokers else 0)
    others = rules.players - 1
    rows = _Columns(
        obs=((features,), np.float16),
        hidden=((hidden_hands_size(rules),), np.float32),
        outcome=((), np.float32),
        hand=((), np.int64),
        unseen=((width,), np.uint8),
        dealt=((others, width), np.uint8),
    )
    playing: list[tuple[Game, list[tuple[int, int]]]] = []  # a game, its hand's (row, seat)
    started = hands = 0
    while playing or started < games:
        while len(playing) < at_once and started < games:
            playing.append((Game.new(rules, seed=rng.getrandbits(63)), []))
            started += 1
        for game, kept in playing:
            for seat in range(rules.players):
                if rng.random() < keep:
                    unseen, dealt = _unseen_and_dealt(game, seat, width)
                    row = rows.append(
                        obs=encoder.encode(game, seat)[:features],
                        hidden=hidden_hands(game, seat),
                        unseen=unseen,
                        dealt=dealt,
                    )
                    kept.append((row, seat))
        obs = np.stack([encoder.encode(g, g.current_player) for g, _ in playing])
        with torch.inference_mode():
            logits = policy.network(torch.from_numpy(obs)).numpy().astype(np.float64)
        still = []
        for (game, kept), z_all in zip(playing, logits, strict=True):
            ids = codec.legal_ids(game)
            z = z_all[ids]
            if len(ids) > 1 and rng.random() < explore:
                p = np.exp(z - z.max())
                pick = int(np.searchsorted(np.cumsum(p), rng.random() * p.sum(), side="right"))
                choice = ids[min(pick, len(ids) - 1)]
            else:
                choice = ids[int(np.argmax(z))]
            game.play_unchecked(codec.decode(game, choice))
            if not game.is_hand_over:
                still.append((game, kept))
                continue
            for row, seat in kept:
                rows.set(row, outcome=hand_value(game, seat), hand=hands)
            hands += 1
            if game.phase == "hand_over":  # not the game's end: the next hand
                game.next_hand()
                still.append((game, []))
        playing = still
    return Samples(**{name: rows.array(name) for name in rows.specs})


class _Columns:
    """Rows kept in large preallocated blocks, a block of `BLOCK` rows at a time. Why: as
    millions of small arrays, the rows fragment the heap between the network's large
    temporaries, so that glibc cannot give the memory back (measured: 200 self-play games
    took 1.56 GB at their peak that way, 0.50 GB in blocks)."""

    BLOCK = 65_536

    def __init__(self, **specs: tuple[tuple[int, ...], Any]) -> None:
        self.specs = specs
        self.blocks: dict[str, list[np.ndarray[Any, Any]]] = {name: [] for name in specs}
        self.size = 0

    def append(self, **values: Any) -> int:
        """A new row with `values` (the other columns zero); its index."""
        if self.size % self.BLOCK == 0:
            for name, (shape, dtype) in self.specs.items():
                self.blocks[name].append(np.zeros((self.BLOCK, *shape), dtype))
        self.size += 1
        self.set(self.size - 1, **values)
        return self.size - 1

    def set(self, row: int, **values: Any) -> None:
        for name, value in values.items():
            self.blocks[name][row // self.BLOCK][row % self.BLOCK] = value

    def array(self, name: str) -> np.ndarray[Any, Any]:
        """One column, every row."""
        blocks = self.blocks[name] or [np.zeros((0, *self.specs[name][0]), self.specs[name][1])]
        return np.concatenate(blocks)[: self.size]


def _unseen_and_dealt(
    game: Game, seat: int, width: int
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """`seat`'s unseen cards by id; and per other seat in turn order after it, the cards of
    its hand that are not known to `seat` (uint8 counts)."""
    view = game.seat_view(seat)
    out = np.zeros((len(view.opponents) + 1, width), np.uint8)
    np.add.at(out[0], view.unseen(), 1)
    for k, q in enumerate(view.opponents, start=1):
        hand = list(game.hand(q))
        for c in view.known[q]:
            hand.remove(c)
        np.add.at(out[k], hand, 1)
    return out[0], out[1:]


def held_out_rows(samples: Samples) -> np.ndarray[Any, Any]:
    """The rows of the last tenth of the hands (`HELD_OUT`), kept out of training."""
    return np.flatnonzero(samples.hand >= samples.hand.max() * (1 - HELD_OUT))


Loss = Callable[[torch.nn.Module, np.ndarray[Any, Any], Samples], torch.Tensor]
"""A training loss: the network, the rows of a batch, the rows' samples."""


def fit(
    net: torch.nn.Module,
    loss: Loss,
    samples: Samples,
    epochs: float,
    lr: float,
    batch: int,
    seed: int,
) -> tuple[float, float]:
    """Train `net` on the first nine tenths of the hands (Adam, a one-cycle learning rate);
    the mean held-out loss before and after."""
    held = held_out_rows(samples)
    train_rows = np.setdiff1d(np.arange(len(samples.hand)), held)

    def held_out() -> float:
        net.eval()
        with torch.inference_mode():
            total = sum(
                float(loss(net, held[i : i + 4096], samples)) * len(held[i : i + 4096])
                for i in range(0, len(held), 4096)
            )
        net.train()
        return total / max(1, len(held))

    before = held_out()
    steps = max(1, int(epochs * len(train_rows)) // batch)
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    schedule = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=lr, total_steps=steps)
    order = np.random.default_rng(seed)
    queue = np.empty(0, np.int64)
    for _ in range(steps):
        if len(queue) < batch:
            queue = np.concatenate([queue, order.permutation(train_rows)])
        rows, queue = np.sort(queue[:batch]), queue[batch:]
        opt.zero_grad()
        loss(net, rows, samples).backward()  # type: ignore[no-untyped-call]
        opt.step()
        schedule.step()
    net.eval()
    return before, held_out()


def table_loss(net: torch.nn.Module, rows: np.ndarray[Any, Any], s: Samples) -> torch.Tensor:
    """Squared error of the table value against the hand outcome."""
    obs = torch.from_numpy(s.obs[rows].astype(np.float32))
    values = net(obs, torch.from_numpy(s.hidden[rows]))
    return F.mse_loss(values, torch.from_numpy(s.outcome[rows]))


def belief_loss(net: torch.nn.Module, rows: np.ndarray[Any, Any], s: Samples) -> torch.Tensor:
    """Binary cross-entropy of the belief against which cards each other hand holds, a
    card at a time (a second copy of a card with two decks counts as held)."""
    logits = net(torch.from_numpy(s.obs[rows].astype(np.float32)))
    others = logits.shape[1]
    held = s.hidden[rows].reshape(len(rows), others, -1)[:, :, :52] > 0
    return F.binary_cross_entropy_with_logits(logits, torch.from_numpy(held.astype(np.float32)))


def deal_by_odds(
    odds: np.ndarray[Any, Any],
    unseen: np.ndarray[Any, Any],
    need: np.ndarray[Any, Any],
    gen: np.random.Generator,
) -> np.ndarray[Any, Any]:
    """Hands dealt as the search deals them (`SeatView.sample_position`'s weighted deal,
    Efraimidis and Spirakis' keys), a batch at once: per row, each other seat in turn takes
    `need` of the `unseen` cards (counts by id) by the `odds` (rows × seats × ids); the
    dealt counts (rows × seats × ids)."""
    rows, seats, width = odds.shape
    copies = max(1, int(unseen.max(initial=0)))
    left = np.arange(copies)[None, None, :] < unseen[:, :, None]  # (rows, ids, copies)
    out = np.zeros((rows, seats, width), np.uint8)
    for q in range(seats):
        keys = np.log1p(-gen.random(left.shape)) / odds[:, q, :, None]
        keys = np.where(left, keys, -np.inf).reshape(rows, -1)
        rank = np.argsort(np.argsort(-keys, axis=1, kind="stable"), axis=1, kind="stable")
        taken = (rank < need[:, q : q + 1]).reshape(left.shape) & left
        out[:, q] = taken.sum(-1)
        left &= ~taken
    return out


@dataclass
class BeliefContext:
    """What the whole-hand odds read of each row, from the (trained, fixed) belief: its
    trunk's summary and logits (`HandOdds.context`, float16) and the odds it deals by."""

    summary: np.ndarray[Any, Any]
    logits: np.ndarray[Any, Any]
    odds: np.ndarray[Any, Any]

    @classmethod
    def of(cls, net: HandOdds, s: Samples, batch: int = 4096) -> BeliefContext:
        width = s.unseen.shape[1]
        parts: list[tuple[np.ndarray[Any, Any], ...]] = []
        with torch.inference_mode():
            for i in range(0, len(s.hand), batch):
                summary, logits = net.context(
                    torch.from_numpy(s.obs[i : i + batch].astype(np.float32))
                )
                odds = belief_odds(logits[..., :52])[..., :width]
                parts.append((summary.half().numpy(), logits.half().numpy(), odds.float().numpy()))
        return cls(*(np.concatenate([p[k] for p in parts]) for k in range(3)))


def odds_loss(context: BeliefContext, rules: Rules, seed: int) -> Loss:
    """Binary cross-entropy of the whole-hand odds telling each row's true hands from hands
    the belief deals in the same position (fresh ones each time): its logit learns the log
    ratio of the two (`HandOdds`)."""
    gen = np.random.default_rng(seed)
    width = context.odds.shape[2]
    scale = np.array([rules.deck_count] * 52 + [rules.joker_count] * (width - 52), np.float32)

    def loss(net: torch.nn.Module, rows: np.ndarray[Any, Any], s: Samples) -> torch.Tensor:
        dealt = s.dealt[rows].astype(np.float32)
        fake = deal_by_odds(context.odds[rows], s.unseen[rows], s.dealt[rows].sum(-1), gen)
        true = s.hidden[rows]
        other = true - ((dealt - fake) / scale).reshape(true.shape)
        summary = torch.from_numpy(context.summary[rows].astype(np.float32)).repeat(2, 1)
        logits = torch.from_numpy(context.logits[rows].astype(np.float32)).repeat(2, 1, 1)
        hands = torch.from_numpy(np.concatenate([true, other]).astype(np.float32))
        labels = torch.cat([torch.ones(len(rows)), torch.zeros(len(rows))])
        assert isinstance(net, HandOdds)
        return F.binary_cross_entropy_with_logits(net.score(summary, logits, hands), labels)

    return loss


def value_head_loss(policy: PolicyAgent, s: Samples) -> float:
    """The policy's own value head's held-out squared error, for comparison (it reads the
    observation only)."""
    held = held_out_rows(s)
    with torch.inference_mode():
        errors = [
            float(
                F.mse_loss(
                    policy.network.forward_with_value(
                        torch.from_numpy(s.obs[held[i : i + 4096]].astype(np.float32))
                    )[1],
                    torch.from_numpy(s.outcome[held[i : i + 4096]]),
                    reduction="sum",
                )
            )
            for i in range(0, len(held), 4096)
        ]
    return sum(errors) / max(1, len(held))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m training.search_nets", description=__doc__.splitlines()[0]
    )
    ap.add_argument("--rules", default="standard", help="the table (as every --rules takes)")
    ap.add_argument(
        "--policy",
        default=None,
        help="a policy file or shipped name (default: the shipped "
        "policy made for the rules); it needs the card network",
    )
    ap.add_argument(
        "--games", type=int_option("games", 1, 10**6), default=10_000, help="self-play games"
    )
    ap.add_argument("--explore", type=float, default=0.1, help="share of sampled moves")
    ap.add_argument("--keep", type=float, default=0.5, help="chance a seat's row is kept")
    ap.add_argument("--table-epochs", type=float, default=2.0, help="passes over the rows")
    ap.add_argument("--belief-epochs", type=float, default=1.0, help="passes over the rows")
    ap.add_argument("--odds-epochs", type=float, default=2.0, help="passes over the rows")
    ap.add_argument(
        "--nets",
        default=",".join(NETS),
        help=f"which networks to train, comma-separated, of {','.join(NETS)} (odds needs belief)",
    )
    ap.add_argument("--lr", type=float, default=1e-3, help="the one-cycle peak learning rate")
    ap.add_argument("--batch", type=int_option("batch", 1, 65_536), default=1024)
    ap.add_argument("--threads", type=int_option("threads", 1, 256), default=2)
    ap.add_argument("--seed", type=int_option("seed", 0), default=0)
    ap.add_argument("--out", default="runs/search_nets", help="folder for table.pt, belief.pt")
    args = ap.parse_args(argv)
    limits = {
        "explore": (0, 1, "a share from 0 to 1"),
        "keep": (0, 1, "a chance > 0 and <= 1"),
        "table_epochs": (0, 1000, "a number of passes > 0 and <= 1000"),
        "belief_epochs": (0, 1000, "a number of passes > 0 and <= 1000"),
        "odds_epochs": (0, 1000, "a number of passes > 0 and <= 1000"),
        "lr": (0, 1, "a learning rate > 0 and <= 1"),
    }
    for name, (lo, hi, allowed) in limits.items():
        value = getattr(args, name)
        if not (lo <= value <= hi and (name == "explore" or value > lo)):
            ap.error(f"--{name.replace('_', '-')} must be {allowed}, not {value}")
    nets = [n.strip() for n in args.nets.split(",")]
    if not nets or set(nets) - set(NETS) or len(set(nets)) != len(nets):
        ap.error(f"--nets must name some of {', '.join(NETS)}, each once, not {args.nets!r}")
    if ODDS in nets and BELIEF not in nets:
        ap.error("--nets: odds starts from the hand belief trained beside it: add belief")
    out = Path(args.out)
    try:
        rules = Rules.parse(args.rules)
        policy = PolicyAgent.load(args.policy or shipped_for(rules), rules=rules)
        out.mkdir(parents=True, exist_ok=True)
    except (Rummy500Error, OSError) as e:
        ap.error(str(e) if isinstance(e, Rummy500Error) else f"--out {args.out!r}: {e}")
    if not hasattr(policy.network, "forward_with_value"):
        ap.error(
            f"{policy.path} is a flat 'mlp' policy: the search networks start from the card "
            "network's trunk ('cards')"
        )
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    start = time.perf_counter()
    samples = self_play(policy, rules, args.games, args.seed, explore=args.explore, keep=args.keep)
    played = time.perf_counter() - start
    print(
        f"{len(samples.outcome):,} rows from {samples.hand.max() + 1:,} hands in {played:.0f} s",
        flush=True,
    )
    spec = dict(policy.metadata["network"])
    sizes = (spec["channels"], spec["blocks"], spec["hidden"])
    results: dict[str, dict[str, float]] = {}
    trained: dict[str, torch.nn.Module] = {}
    for kind in (k for k in NETS if k in nets):
        net: torch.nn.Module
        if kind == ODDS:
            net = HandOdds(rules, *sizes)
            net.belief.load_state_dict(trained[BELIEF].state_dict())  # fixed: the deal
            loss, epochs = (
                odds_loss(BeliefContext.of(net, samples), rules, args.seed),
                args.odds_epochs,
            )
        else:
            net = TableValue(rules, *sizes) if kind == TABLE else HandBelief(rules, *sizes)
            net.card.load_state_dict(policy.network.state_dict())  # the policy's trunk to start
            loss = table_loss if kind == TABLE else belief_loss
            epochs = args.table_epochs if kind == TABLE else args.belief_epochs
        before, after = fit(net, loss, samples, epochs, args.lr, args.batch, args.seed)
        trained[kind] = net
        results[kind] = {"held_out_before": before, "held_out_after": after}
        if kind == TABLE:
            results[kind]["policy_value_head"] = value_head_loss(policy, samples)
        save_policy(
            out / f"{kind}.pt",
            net,
            {
                "package_version": rummy500_env.__version__,
                "commit": git_commit(),
                "encoding": current_encoding(rules),
                "rules": rules.to_dict(),
                "network": {**spec, "kind": kind},
                "training": {**vars(args), "policy": str(policy.path), "rows": len(samples.hand)},
                "evaluation": results[kind],
                "wall_s": time.perf_counter() - start,
            },
        )
        print(
            f"{kind}: held-out loss {before:.4f} -> {after:.4f}; {out / f'{kind}.pt'}", flush=True
        )
    if TABLE in results:
        print(f"the policy's value head: {results[TABLE]['policy_value_head']:.4f} (squared error)")
    return 0
