"""`PolicySearchAgent`: determinized search guided by a trained policy, with Gumbel sequential
halving at the root (Danihelka et al., ICLR 2022, "Policy improvement by planning with
Gumbel"; "the paper" below), so that it reads beside the paper's Algorithm 2.

Why: the policy plays its favourite move unchecked; the search values its best few moves in
worlds the seat cannot tell from the real position and plays the one that does best there.
The same search labels positions for expert iteration (`analyse`, `training.exit`).

One decision, for the seat whose `SeatView` the agent is handed (nothing else is read):

1. **Worlds.** The unseen cards are dealt again consistently with what the seat knows
   (`Game.from_seat_view`), so the root observation is the same in every world. With
   ``evidence=K`` (two players; `agents.opponent_turn`) the other seat's last K turns weigh
   the deal: of `RESAMPLE_POOL` worlds dealt for each kept, the kept follow the policy's odds
   of the moves the other seat made there, then take `REJUVENATE_STEPS` Metropolis steps each
   (those odds are sharp: a few hands would take all the weight). That deal is costly, so a
   decision draws `PARTICLES` hands once and deals its worlds around them in turn.
2. **Candidates.** The m (``candidates``) legal actions with the largest logits, plus Gumbel
   noise with ``gumbel`` (the paper's Gumbel-Top-k trick).
3. **Sequential halving.** The budget is split evenly between ⌈log₂ m⌉ rounds; each round
   values every candidate left in the same fresh worlds (a paired comparison) and keeps the
   better half by g + logits + σ(q̂). A budget in milliseconds gives each round an equal share
   of the time left, spent in batches sized by the last measured cost of a simulation.
4. **Choice.** The survivor with the largest g + logits + σ(q̂), σ(q̂) = (c_visit + max N) ·
   c_scale · q̂, q̂ in the value head's unit: the seat's hand score minus the others' mean, / 100.

A simulation values a candidate in a world by its ``leaf``: ``rollout``, the policy (or the
``opponent`` model in the other seats) plays the hand out greedily; ``value``, it plays until
the seat is to act again, then the value head; ``playout``, the engine's compiled greedy
playout (`agents.playout`). A round's network calls are one batched forward, and
`analyse_many` runs several positions' searches in lockstep (expert iteration's labelling).

The defaults are the setting the ``psearch`` spec plays, the strongest measured: the top two
moves by prior, no noise, rollouts, two turns of evidence. The measurements, and the settings
that lost (other leaves, a learned deal, SPARTA's rule), are in docs/experiments.md.
"""

from __future__ import annotations

import contextlib
import math
import random
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from rummy500_env.agents.bot import Bot
from rummy500_env.agents.opponent_turn import OpponentTurn, TurnWitness
from rummy500_env.agents.playout import play_out
from rummy500_env.engine.cards import Card
from rummy500_env.engine.errors import Rummy500Error
from rummy500_env.engine.game import Game
from rummy500_env.engine.notation import Action
from rummy500_env.engine.rules import Rules
from rummy500_env.engine.seat_view import SeatView

LEAVES = ("value", "rollout", "playout")
"""How a simulation values what follows a candidate (module docstring)."""
DEFAULT_MS = 200
"""Milliseconds a decision when neither `ms` nor `simulations` is given."""
C_VISIT = 50.0
"""σ's visit offset (the paper's c_visit)."""
POLICY_STEPS_CAP = 400
"""Policy moves a simulation plays at most (a hand is far shorter): a guard, not a horizon."""
SIMULATIONS_CAP = 1_000_000
"""Simulations a timed decision runs at most: a clock that stands still cannot make a search
endless."""
RESAMPLE_POOL = 4
"""Worlds dealt for each world the evidence keeps."""
REJUVENATE_STEPS = 8
"""Metropolis steps each world resampled by the evidence takes (`_rejuvenate`)."""
PARTICLES = 8
"""Hands of the other seat a decision with evidence draws from the evidence's odds, once:
each of its worlds holds one of them in turn, the stock shuffled afresh."""
WORLDS_A_BATCH = 8
"""Worlds evaluated in one batch under a time budget (the clock is read between batches)."""
SAFETY = 0.9
"""Share of a millisecond budget the search plans to spend; the rest is for the final choice
and for the estimate of a simulation's cost being a little short."""


@dataclass(frozen=True)
class SearchResult:
    """One search (`PolicySearchAgent.analyse`): its choice, and per legal action (in
    action-id order, as `ids`) the prior, the improved policy, the visits and q̂."""

    action: Action
    """The action chosen (what `decide` plays)."""
    ids: list[int]
    """The legal actions' ids."""
    prior: np.ndarray[Any, Any]
    """The policy's probabilities over the legal actions."""
    improved: np.ndarray[Any, Any]
    """softmax(logits + σ(completed Q)), the paper's improved policy: a target for the
    network."""
    value: float
    """The value of the position under the improved policy (hand points / 100)."""
    visits: np.ndarray[Any, Any]
    """Simulations each action got."""
    q: np.ndarray[Any, Any]
    """Each visited action's mean value (0 where unvisited)."""


class PolicySearchError(Rummy500Error):
    """A search set up with arguments it cannot use; says what is allowed."""


class PolicySearchAgent(Bot):
    """Policy-guided determinized search with Gumbel sequential halving (module docstring).
    The defaults are the ``psearch`` spec's; a caller that searches otherwise (`training.exit`'s
    labels) sets its own.

    Args:
        rules: the rules the agent plays.
        policy: the policy that guides and values the search: a `PolicyAgent`, the path of a
            policy file, or a shipped policy's name; None: the shipped policy made for `rules`
            (as the agent spec ``model`` picks it).
        ms: time budget a decision in milliseconds (default `DEFAULT_MS` when `simulations` is
            None).
        simulations: simulations a decision instead of a time budget (one world × one
            candidate each).
        candidates: m, the actions searched at the root.
        leaf: how a simulation values what follows a candidate: one of `LEAVES`.
        gumbel: add Gumbel noise to the logits at the root (the paper's choice); False takes
            the top m by prior and plays deterministically but for the worlds drawn.
        c_scale: σ's scale: how much a unit of q̂ (100 hand points) weighs against the logits.
        seed: seeds the worlds and the noise.
        clock: the clock a millisecond budget is read on (seconds; tests inject their own).
        opponent: who plays the other seats in the simulations, a model of the opponents: a
            `PolicyAgent`, a policy file or a shipped name (greedy on its logits), or a bot
            (anything with ``decide``, on its seat's view of the world); None: `policy`
            itself. A search that knows its opponent exploits it (``training.exploit``). The
            ``value`` and ``rollout`` leaves play it; ``playout`` leaves it unused.
        evidence: K, the other seat's last turns (at most K) whose moves weigh the worlds
            (module docstring; two players, no jokers or calls); 0: none. `decide` follows
            its seat's decisions for them; `analyse_many` is given each position's.
    """

    def __init__(
        self,
        rules: Rules | str | dict[str, Any] = "standard",
        policy: Any = None,
        ms: float | None = None,
        simulations: int | None = None,
        candidates: int = 2,
        leaf: str = "rollout",
        gumbel: bool = False,
        c_scale: float = 1.0,
        seed: int | None = None,
        clock: Callable[[], float] = time.perf_counter,
        opponent: Any = None,
        evidence: int = 2,
    ) -> None:
        super().__init__(rules)
        if leaf not in LEAVES:
            raise PolicySearchError(f"leaf {leaf!r} is unknown: use one of {', '.join(LEAVES)}")
        if ms is not None and simulations is not None:
            raise PolicySearchError("give a budget in ms or in simulations, not both")
        if ms is not None and not ms > 0:
            raise PolicySearchError(f"ms must be a positive number of milliseconds, not {ms!r}")
        if simulations is not None and (type(simulations) is not int or simulations < 1):
            raise PolicySearchError(
                f"simulations must be a positive whole number, not {simulations!r}"
            )
        if type(candidates) is not int or candidates < 1:
            raise PolicySearchError(
                f"candidates must be a positive whole number, not {candidates!r}"
            )
        if not c_scale >= 0:
            raise PolicySearchError(f"c_scale must be a number >= 0, not {c_scale!r}")
        if type(evidence) is not int or evidence < 0:
            raise PolicySearchError(
                f"evidence must be a whole number of turns >= 0, not {evidence!r}"
            )
        if ms is None and simulations is None:
            ms = float(DEFAULT_MS)
        self.ms, self.simulations = ms, simulations
        self.candidates, self.leaf, self.c_scale, self.gumbel = candidates, leaf, c_scale, gumbel
        self.policy = _load_policy(policy, self.rules)
        self.network = self.policy.network
        self.opponent = None if opponent is None else _opponent_model(opponent, self.rules)
        self.has_value = hasattr(self.network, "forward_with_value")
        if leaf == "value" and not self.has_value:
            raise PolicySearchError(
                "leaf 'value' needs a policy with a value head (the 'cards' network); "
                f"{self.policy!r} has none: use leaf 'rollout' or 'playout'"
            )
        self.evidence = evidence
        self.witness = TurnWitness(evidence)  # the other seat's last turns, for `decide`
        self.rng = random.Random(seed)
        self.clock = clock
        self.last_simulations = 0
        """Simulations of the last decision (for tests and benchmarks)."""
        self.last_worlds: list[Game] = []
        """The worlds the last decision sampled, as dealt (for tests)."""

    @classmethod
    def for_play(
        cls,
        rules: Rules | str | dict[str, Any] = "standard",
        policy: Any = None,
        ms: float | None = None,
        simulations: int | None = None,
        seed: int | None = None,
        opponent: Any = None,
    ) -> PolicySearchAgent:
        """The search as the ``psearch`` agent spec plays it: the constructor's defaults."""
        return cls(rules, policy, ms=ms, simulations=simulations, seed=seed, opponent=opponent)

    # --- the decision ----------------------------------------------------------------------

    def decide(self, view: SeatView, legal: Sequence[Action]) -> Action:
        start = self.clock()
        self.witness.see(view)
        ordered = self.ordered(view, legal)
        self.last_simulations = 0
        self.last_worlds = []
        if len(ordered) == 1:
            action = ordered[0]  # nothing to search
        else:
            with _one_torch_thread():
                action = self._search(view, ordered, start, self.evidence_for(view)).action
        self.witness.did(view, action)
        return action

    def evidence_for(self, view: SeatView) -> list[OpponentTurn]:
        """The other seat's turns that weigh the worlds of a decision in `view` (oldest
        first): those kept, if the last ended right before this turn of the seat."""
        return self.witness.turns_for(view)

    def analyse(self, view: SeatView, legal: Sequence[Action]) -> SearchResult:
        """The search's choice with its improved policy and value (for labelling positions,
        expert iteration): `decide` plus what the paper derives from the same search."""
        start = self.clock()
        ordered = self.ordered(view, legal)
        self.last_simulations = 0
        self.last_worlds = []
        with _one_torch_thread():
            return self._search(view, ordered, start)

    def analyse_many(
        self,
        positions: Sequence[tuple[SeatView, Sequence[Action]]],
        evidence: Sequence[Sequence[OpponentTurn]] | None = None,
    ) -> list[SearchResult]:
        """`analyse` for several positions at once, their searches in lockstep: each halving
        round's simulations of every position are valued together, so the network sees one
        large batch where one search gives it a few games (a simulation budget only: with a
        time budget each search needs its own clock). Expert iteration labels this way.
        `evidence`: each position's turns of the other seat that weigh its worlds (a
        `TurnWitness` of its seat keeps them), where the agent has ``evidence``."""
        budget = self.simulations
        if budget is None:
            raise PolicySearchError("analyse_many searches on a simulation budget, not in ms")
        if evidence is None or not self.evidence:
            evidence = [()] * len(positions)
        if len(evidence) != len(positions):
            raise PolicySearchError(
                f"evidence is given for {len(evidence)} positions, not the {len(positions)} "
                "searched: one sequence of turns a position (empty where there are none)"
            )
        self.last_simulations = 0
        self.last_worlds = []
        with _one_torch_thread():
            roots = [
                _Halving(self, view, self.ordered(view, legal), turns[-self.evidence :])
                for (view, legal), turns in zip(positions, evidence, strict=True)
            ]
            while batch := [(h, n) for h in roots if (n := h.planned(budget))]:
                children = [h.children(self, h.deal(self, n)) for h, n in batch]
                values = self._leaf_values(
                    [g for c in children for g in c.games],
                    [s for c in children for s in c.seats],
                    [s for c in children for s in c.seeds],
                )
                at = 0
                for (h, n), c in zip(batch, children, strict=True):
                    h.absorb(values[at : at + len(c.games)].reshape(n, -1))
                    at += len(c.games)
                    h.halve()
            self.last_simulations = sum(h.simulations for h in roots)
            return [h.result() for h in roots]

    def _search(
        self,
        view: SeatView,
        legal: list[Action],
        start: float,
        evidence: Sequence[OpponentTurn] = (),
    ) -> SearchResult:
        root = _Halving(self, view, legal, evidence)
        deadline = None if self.ms is None else start + SAFETY * self.ms / 1000
        cost: float | None = None  # seconds a simulation, once measured

        def simulate(n: int) -> None:
            """n fresh worlds, every alive candidate in each (one batched evaluation)."""
            worlds = root.deal(self, n)
            root.absorb(self._evaluate(worlds, [legal[i] for i in root.alive], view.seat))
            self.last_simulations = root.simulations

        if deadline is None:
            assert self.simulations is not None
            while n := root.planned(self.simulations):
                simulate(n)
                root.halve()
        else:
            while root.round < root.rounds and len(root.alive) > 1:
                share_end = self.clock() + (deadline - self.clock()) / (root.rounds - root.round)
                while True:  # this round's share of the time left, a batch at a time
                    now = self.clock()
                    if cost is None:
                        n = 1  # the first world measures what a simulation costs
                    else:
                        n = int((share_end - now) / (cost * len(root.alive)))
                        n = min(WORLDS_A_BATCH, n)
                        if n < 1 or self.last_simulations >= SIMULATIONS_CAP:
                            break
                    simulate(n)
                    cost = max(self.clock() - now, 1e-9) / (n * len(root.alive))  # the latest
                if self.clock() >= deadline:  # out of time: the best so far
                    break
                root.halve()
        return root.result()

    def _gumbel(self, n: int) -> np.ndarray[Any, Any]:
        """n standard Gumbel draws from the agent's seeded generator."""
        return np.array([-math.log(-math.log(self.rng.random() or 1e-300)) for _ in range(n)])

    def _world(self, view: SeatView) -> Game:
        """A world the seat cannot tell from the real position (`Game.from_seat_view`)."""
        return Game.from_seat_view(view, self.rng, check=False)

    def _resample(self, view: SeatView, evidence: Sequence[OpponentTurn], n: int) -> list[Game]:
        """n worlds of `RESAMPLE_POOL` n dealt uniformly, drawn (with replacement) in
        proportion to the opponent model's odds of the other seat's moves in `evidence`
        (sampling importance resampling). Those odds are sharp (a few worlds of the pool take
        nearly all the weight), so each world drawn then takes `REJUVENATE_STEPS` Metropolis
        steps (`_rejuvenate`): n worlds, not n copies of a few."""
        pool = [self._world(view) for _ in range(RESAMPLE_POOL * n)]
        other = evidence[-1].other
        terms = self._evidence_terms([tuple(w.hand(other)) for w in pool], evidence)
        if not np.isfinite(terms).any():  # no world explains the moves: the deal as it is
            terms[:] = 0.0
        odds = np.exp(terms - terms.max())
        picks = self.rng.choices(range(len(pool)), weights=odds.tolist(), k=n)
        if REJUVENATE_STEPS:
            return self._rejuvenate(view, [pool[i] for i in picks], terms[picks], evidence)
        return [pool[i] for i in picks]

    def _rejuvenate(
        self,
        view: SeatView,
        worlds: list[Game],
        terms: np.ndarray[Any, Any],
        evidence: Sequence[OpponentTurn],
    ) -> list[Game]:
        """Each world's other hand after `REJUVENATE_STEPS` Metropolis steps, every chain in
        one batched forward a step: a card of the hand the seat does not know it holds is
        swapped for an unseen card outside it, and the swap kept with probability
        min(1, ratio of the evidence's odds) (the proposal is symmetric and the deal uniform,
        so the posterior given the evidence is what the chains keep); the stock is dealt
        again around the hand."""
        other = evidence[-1].other
        known, unseen = view.known[other], view.unseen()
        hands = [tuple(w.hand(other)) for w in worlds]
        current = np.array(terms, dtype=np.float64)
        for _ in range(REJUVENATE_STEPS):
            proposals = []
            for hand in hands:
                free = [c for c in hand if c not in known]
                outside = [c for c in unseen if c not in hand]
                if not free or not outside:
                    proposals.append(hand)
                    continue
                out, into = self.rng.choice(free), self.rng.choice(outside)
                proposals.append(tuple(sorted([*(c for c in hand if c != out), into])))
            new = self._evidence_terms(proposals, evidence)
            for i, proposal in enumerate(proposals):
                if math.log(1.0 - self.rng.random()) < new[i] - current[i]:
                    hands[i], current[i] = proposal, new[i]
        return [self._world_holding(view, other, hand, unseen) for hand in hands]

    def _world_holding(
        self, view: SeatView, other: int, hand: tuple[Card, ...], unseen: list[Card]
    ) -> Game:
        """A world of `view` in which seat `other` holds `hand` (the rest of `unseen`, the
        view's unseen cards, shuffled into the stock)."""
        position = view.sample_position(self.rng)
        hands = list(position.hands)
        hands[other] = hand
        stock = [c for c in unseen if c not in hand]
        self.rng.shuffle(stock)
        return Game.from_position(replace(position, hands=tuple(hands), stock=tuple(stock)))

    def _evidence_terms(
        self, hands: list[tuple[Card, ...]], evidence: Sequence[OpponentTurn]
    ) -> np.ndarray[Any, Any]:
        """Per hand the other seat may hold now, the log of the opponent model's odds of its
        moves in `evidence` (newest first, each turn's hand rebuilt from the one after it),
        −inf where a move was not legal there; one batched forward."""
        network = getattr(self.opponent, "network", None) or self.network
        other = evidence[-1].other
        rows, legal, moves, owners = [], [], [], []
        for i, held in enumerate(hands):
            hand = held
            for turn in reversed(evidence):
                decisions, hand = turn.decisions(hand, self.rng)
                for seen, move in decisions:
                    g = Game.from_seat_view(seen, self.rng, check=False)
                    rows.append(self.encoder.encode(g, other))
                    legal.append(self.codec.legal_ids(g))
                    moves.append(self.codec.encode(seen, move))
                    owners.append(i)
        logits = self._logits(np.stack(rows), network).astype(np.float64)
        terms = np.zeros(len(hands))
        for row, ids, made, i in zip(logits, legal, moves, owners, strict=True):
            if made not in ids:
                terms[i] = -math.inf
                continue
            top = row[ids].max()
            terms[i] += row[made] - top - math.log(float(np.exp(row[ids] - top).sum()))
        return terms

    # --- valuing a candidate -----------------------------------------------------------------

    def _evaluate(self, worlds: list[Game], cands: list[Action], seat: int) -> np.ndarray[Any, Any]:
        """Each candidate's value in each world (rows: worlds; hand points / 100 for `seat`),
        all their network calls batched."""
        c = _children(worlds, cands, seat, self.rng)
        return self._leaf_values(c.games, c.seats, c.seeds).reshape(len(worlds), len(cands))

    def _leaf_values(
        self, games: list[Game], seats: list[int], seeds: list[int]
    ) -> np.ndarray[Any, Any]:
        """The value of each game (a candidate just played in a world) for its searching
        seat, by the agent's leaf; `seeds`: the playouts' randomness (one a world, so the
        candidates of a world meet the same luck). Every network call is one batch over all
        the games."""
        out = np.zeros(len(games))
        if self.leaf == "playout":
            for k, (g, seat) in enumerate(zip(games, seats, strict=True)):
                out[k] = play_out(g, random.Random(seeds[k]), self.values, seat) / 100
        elif self.leaf == "rollout":
            self._advance(games, seats, lambda g, seat: g.is_hand_over)
            out[:] = [hand_value(g, seat) for g, seat in zip(games, seats, strict=True)]
        else:  # "value": the value head once the seat is to act again
            self._advance(games, seats, lambda g, seat: g.is_hand_over or g.current_player == seat)
            pending = _score_finished(games, seats, out)
            if pending:
                obs = np.stack([self.encoder.encode(games[k], seats[k]) for k in pending])
                out[pending] = self._forward(obs)[1]
        return out

    def _advance(
        self, games: list[Game], seats: list[int], stop: Callable[[Game, int], bool]
    ) -> None:
        """Let the policy play each game's searching seat and the opponent model (the policy
        without one) the other seats, greedily, one batched forward a step for each network,
        in every game until `stop(game, its searching seat)` holds for it."""
        for _ in range(POLICY_STEPS_CAP):
            active = [(g, s) for g, s in zip(games, seats, strict=True) if not stop(g, s)]
            if not active:
                return
            if self.opponent is None:
                self._greedy([g for g, _ in active], self.network)
                continue
            self._greedy([g for g, s in active if g.current_player == s], self.network)
            theirs = [g for g, s in active if g.current_player != s]
            if hasattr(self.opponent, "decide"):  # a bot, on its seat's view of the world
                for g in theirs:
                    g.play_unchecked(
                        self.opponent.decide(g.seat_view(g.current_player), g.legal_actions())
                    )
            else:
                self._greedy(theirs, self.opponent.network)

    def _greedy(self, games: list[Game], network: Any) -> None:
        """One move in each game: the legal action `network` rates highest for the seat to
        act (one batched forward)."""
        if not games:
            return
        obs = np.stack([self.encoder.encode(g, g.current_player) for g in games])
        rows = self._logits(obs, network)
        for g, row in zip(games, rows, strict=True):
            ids = self.codec.legal_ids(g)
            best = ids[int(np.argmax(row[ids]))]
            g.play_unchecked(self.codec.decode(g, best))

    # --- the network ---------------------------------------------------------------------------

    def _forward(
        self, obs: np.ndarray[Any, Any]
    ) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
        """(logits, values) of a batch of observations in one forward; the values are 0 for
        a network without a value head."""
        import torch

        with torch.inference_mode():
            x = torch.from_numpy(obs)
            if self.has_value:
                logits, values = self.network.forward_with_value(x)
                return np.asarray(logits.numpy()), np.asarray(values.numpy())
            return np.asarray(self.network(x).numpy()), np.zeros(len(obs), dtype=np.float32)

    def _logits(self, obs: np.ndarray[Any, Any], network: Any) -> np.ndarray[Any, Any]:
        import torch

        with torch.inference_mode():
            out = network(torch.from_numpy(obs))
        return np.asarray(out.numpy())

    def __repr__(self) -> str:
        budget = f"{self.simulations} simulations" if self.ms is None else f"{self.ms:g} ms"
        return f"PolicySearchAgent({budget}, {self.policy.path!r}, leaf={self.leaf!r})"


@dataclass
class _Children:
    """Candidates played in worlds, ready to be valued (`PolicySearchAgent._leaf_values`)."""

    games: list[Game]
    seats: list[int]
    seeds: list[int]


def _children(worlds: list[Game], cands: list[Action], seat: int, rng: random.Random) -> _Children:
    """Every candidate played in a copy of every world (world-major), with one playout seed a
    world."""
    out = _Children([], [], [])
    for world in worlds:
        seed = rng.getrandbits(32)  # the same playout randomness for each candidate
        for a in cands:
            g = world.copy()
            g.play_unchecked(a)
            out.games.append(g)
            out.seats.append(seat)
            out.seeds.append(seed)
    return out


class _Halving:
    """One root's Gumbel sequential halving (module docstring, steps 2 to 4): the prior, the
    candidates still in, each action's summed values and visits. The agent deals the worlds
    and values the simulations; this keeps the books between its batches."""

    def __init__(
        self,
        agent: PolicySearchAgent,
        view: SeatView,
        legal: list[Action],
        evidence: Sequence[OpponentTurn] = (),
    ) -> None:
        self.view, self.legal, self.c_scale = view, legal, agent.c_scale
        first = agent._world(view)
        root = agent.encoder.encode(first, view.seat)  # the same in every world
        self.spare = [first]  # dealt, not yet searched
        self.particles: list[tuple[Card, ...]] = []
        if evidence:  # the evidence's deal is costly: once a decision (`deal`)
            self.other = evidence[-1].other
            self.unseen = view.unseen()
            worlds = agent._resample(view, evidence, PARTICLES)
            self.particles = [tuple(w.hand(self.other)) for w in worlds]
        self.dealt = 0
        self.ids = [agent.codec.encode(view, a) for a in legal]
        raw, root_value = agent._forward(root[None])
        self.root_value = float(root_value[0])
        logits = raw[0][self.ids].astype(np.float64)
        logits = logits - logits.max()
        self.logits = logits - math.log(float(np.exp(logits).sum()))  # log prior, the legal
        self.g = agent._gumbel(len(legal)) if agent.gumbel else np.zeros(len(legal))
        m = min(agent.candidates, len(legal))
        if agent.simulations is not None:
            m = min(m, max(2, agent.simulations))
        order = sorted(range(len(legal)), key=lambda i: (-(self.g[i] + self.logits[i]), i))
        self.alive = order[:m]
        self.totals = np.zeros(len(legal))
        self.visits = np.zeros(len(legal), dtype=np.int64)
        self.rounds = max(1, math.ceil(math.log2(m))) if m > 1 else 0
        self.round = 0
        self.simulations = 0

    def planned(self, budget: int) -> int:
        """Worlds the next round of a `budget`-simulation search gets, n / (⌈log₂ m⌉ k) each
        within what is left; 0 when the search is over."""
        if self.round >= self.rounds or len(self.alive) <= 1:
            return 0
        left = budget - self.simulations
        if left < len(self.alive):
            return 0
        return max(1, left // ((self.rounds - self.round) * len(self.alive)))

    def deal(self, agent: PolicySearchAgent, n: int) -> list[Game]:
        """n fresh worlds (the one the root was encoded from first; with evidence, each
        holding the next of the decision's `particles` in turn)."""
        if self.particles:
            worlds = [
                agent._world_holding(
                    self.view,
                    self.other,
                    self.particles[(self.dealt + i) % len(self.particles)],
                    self.unseen,
                )
                for i in range(n)
            ]
        else:
            worlds = [self.spare.pop() if self.spare else agent._world(self.view) for _ in range(n)]
        agent.last_worlds += [w.copy() for w in worlds]
        self.dealt += n
        return worlds

    def children(self, agent: PolicySearchAgent, worlds: list[Game]) -> _Children:
        """The alive candidates played in each world."""
        cands = [self.legal[i] for i in self.alive]
        return _children(worlds, cands, self.view.seat, agent.rng)

    def absorb(self, values: np.ndarray[Any, Any]) -> None:
        """A batch's values (rows: worlds, columns: the alive candidates, in order)."""
        for j, i in enumerate(self.alive):
            self.totals[i] += values[:, j].sum()
            self.visits[i] += len(values)
        self.simulations += values.size

    def halve(self) -> None:
        """The end of a round: the better half of the alive candidates goes on."""
        self.alive = self._best(max(1, len(self.alive) // 2))
        self.round += 1

    def result(self) -> SearchResult:
        """The choice, the improved policy and value, the visits and q̂."""
        choice = self._best(1)[0]
        improved, value = self._improved()
        q = np.divide(
            self.totals, self.visits, out=np.zeros(len(self.legal)), where=self.visits > 0
        )
        return SearchResult(
            action=self.legal[choice],
            ids=self.ids,
            prior=np.exp(self.logits),
            improved=improved,
            value=value,
            visits=self.visits,
            q=q,
        )

    def _improved(self) -> tuple[np.ndarray[Any, Any], float]:
        """The improved policy softmax(logits + σ(completed Q)) and the value under it (the
        paper's completed Q-values: an unvisited action's Q is the mixed value v_mix of the
        network's value and the visited actions' q̂, weighted by their prior)."""
        logits, totals, visits, root_value = self.logits, self.totals, self.visits, self.root_value
        seen = visits > 0
        q = np.divide(totals, visits, out=np.zeros(len(logits)), where=seen)
        prior = np.exp(logits)
        n = float(visits.sum())
        if seen.any():
            visited = float((prior[seen] * q[seen]).sum() / prior[seen].sum())
            v_mix = (root_value + n * visited) / (1 + n)
        else:
            v_mix = root_value
        completed = np.where(seen, q, v_mix)
        z = logits + (C_VISIT + float(visits.max())) * self.c_scale * completed
        improved = np.exp(z - z.max())
        improved /= improved.sum()
        return improved.astype(np.float32), float((improved * completed).sum())

    def _best(self, keep: int) -> list[int]:
        """The `keep` alive candidates with the largest g + logits + σ(q̂) (ties: action-id
        order)."""
        alive, g, logits, totals, visits = self.alive, self.g, self.logits, self.totals, self.visits
        most = float(visits.max())
        scale = (C_VISIT + most) * self.c_scale

        def score(i: int) -> float:
            q = totals[i] / visits[i] if visits[i] else 0.0
            return float(g[i] + logits[i] + scale * q)

        return sorted(alive, key=lambda i: (-score(i), i))[:keep]


def _score_finished(games: list[Game], seats: list[int], out: np.ndarray[Any, Any]) -> list[int]:
    """Writes the exact value of every game whose hand is over into `out`; the indices of
    the others, still to be valued."""
    pending = []
    for k, (g, seat) in enumerate(zip(games, seats, strict=True)):
        if g.is_hand_over:
            out[k] = hand_value(g, seat)
        else:
            pending.append(k)
    return pending


def hand_value(g: Game, seat: int) -> float:
    """`seat`'s hand score minus the others' mean, / 100 (the value head's unit): a
    simulation's value once the hand is over, and the outcome a label learns from."""
    scores = g.hand_scores()
    n = len(scores)
    return (scores[seat] - (sum(scores) - scores[seat]) / (n - 1)) / 100


def _load_policy(policy: Any, rules: Rules) -> Any:
    """A `PolicyAgent` for `rules` from an agent, a file, a shipped name or None (the shipped
    policy made for `rules`)."""
    from rummy500_env.agents.policy import PolicyAgent, shipped_for

    if isinstance(policy, PolicyAgent):
        return policy
    if policy is None:
        policy = shipped_for(rules)
    return PolicyAgent.load(policy, rules=rules, deterministic=True)


def _opponent_model(opponent: Any, rules: Rules) -> Any:
    """The opponent model: a bot (anything with ``decide``) as it is, else a `PolicyAgent`
    for `rules` (`_load_policy`)."""
    if hasattr(opponent, "decide"):
        return opponent
    return _load_policy(opponent, rules)


@contextlib.contextmanager
def _one_torch_thread() -> Iterator[None]:
    """Torch on one thread while a decision searches: its forwards are small batches one
    after another, which more threads only slow (and a match's workers fill the cores)."""
    import torch

    before = torch.get_num_threads()
    if before != 1:
        torch.set_num_threads(1)
    try:
        yield
    finally:
        if before != 1:
            torch.set_num_threads(before)
