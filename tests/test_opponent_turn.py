"""The other seat's turn as a seat saw it (`agents.opponent_turn`): rebuilt from the seat's
own views only, given the other hand's true cards it gives back exactly the other seat's
views of its discard and its draw, and the search that weighs its worlds by it still deals
only worlds the seat cannot tell from the real one."""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import pytest

from rummy500_env import Game, Rules
from rummy500_env.agents import ExpertAgent, PolicySearchAgent
from rummy500_env.agents.opponent_turn import OpponentTurn
from rummy500_env.agents.psearch import PARTICLES, PolicySearchError
from rummy500_env.engine.notation import Action
from rummy500_env.engine.seat_view import SeatView

RULES = Rules()


@dataclass
class Seen:
    """One turn of seat 1 between two decisions of seat 0, with what seat 1 really saw."""

    turn: OpponentTurn
    hand_after: tuple[int, ...]
    """Seat 1's true hand after its turn."""
    at_draw: SeatView
    at_discard: SeatView
    """Seat 1's own views at its draw and at its discard."""
    world: Game
    """The real position at seat 0's draw."""


def turns(seeds: range, rules: Rules = RULES) -> Iterator[Seen]:
    """Every turn of seat 1 that `OpponentTurn.between` rebuilds, over ExpertAgent hands."""
    expert = ExpertAgent(rules)
    for seed in seeds:
        g = Game.new(rules, seed=seed)
        last: tuple[SeatView, Action] | None = None
        draw: SeatView | None = None
        discard: SeatView | None = None
        while not g.is_hand_over:
            p = g.current_player
            view = g.seat_view(p)
            if p == 1 and g.phase == "draw":
                draw = view
            action = expert.decide(view, g.legal_actions())
            if p == 1 and action.kind == "discard":
                discard = view
            if p == 0:
                turn = None if last is None else OpponentTurn.between(*last, view)
                if turn is not None:
                    assert draw is not None and discard is not None
                    yield Seen(turn, tuple(g.hand(1)), draw, discard, g.copy())
                last = (view, action) if action.kind == "discard" else last
            g.apply(action)


def test_the_views_rebuilt_from_the_true_hand_are_the_other_seats_own() -> None:
    """Given seat 1's true hand, the rebuilt views of its discard are exactly its own, and of
    its draw exactly its own where it took from the pile (a stock card is drawn at random from
    the hand's unseen cards: then the real hand is one of those rebuilt)."""
    rng = random.Random(0)
    pile_draws = stock_draws = 0
    for seen in turns(range(12)):
        (discard, discarded), (draw, drawn) = seen.turn.decisions(seen.hand_after, rng)[0]
        assert discard == seen.at_discard
        assert discarded == Action("discard", (seen.turn.discard,))
        assert drawn.kind in ("draw", "take", "dig")
        if seen.turn.taken:
            pile_draws += 1
            assert draw == seen.at_draw
        else:
            stock_draws += 1
            assert drawn == Action("draw")
            views = [
                seen.turn.decisions(seen.hand_after, random.Random(k))[0][1][0] for k in range(60)
            ]
            assert seen.at_draw in views
    assert pile_draws > 5 and stock_draws > 20


def test_the_hand_before_a_turn_chains_to_the_turn_before() -> None:
    """The hand a turn rebuilds before its draw is the hand after the turn before it, which
    `follows` links; with a pile draw it is exact."""
    chained = 0
    previous: Seen | None = None
    for seen in turns(range(6)):
        if previous is not None and seen.turn.follows(previous.turn):
            chained += 1
            if seen.turn.taken:
                _, start = seen.turn.decisions(seen.hand_after, random.Random(0))
                assert start == previous.hand_after
        previous = seen
    assert chained > 20


@pytest.mark.parametrize(
    "rules", [Rules(players=3), Rules(jokers=2), Rules(jokers=2, rummy_calls=True)]
)
def test_outside_two_players_one_deck_no_jokers_there_is_no_turn(rules: Rules) -> None:
    assert not list(turns(range(2), rules))


def test_a_view_of_another_hand_or_a_missed_turn_is_no_turn() -> None:
    seen = next(turns(range(1)))
    before, now = seen.turn.before, seen.turn.now
    discard = Action("discard", (seen.turn.discarded,))
    assert OpponentTurn.between(before, discard, now) == seen.turn
    assert OpponentTurn.between(before, Action("draw"), now) is None
    assert OpponentTurn.between(before, discard, before) is None
    other_hand = replace(now, hands_played=now.hands_played + 1)
    assert OpponentTurn.between(before, discard, other_hand) is None


@pytest.mark.slow
def test_the_search_with_evidence_keeps_to_the_seat_view_and_replays() -> None:
    """With the other seat's last turns weighing its worlds, every world still shows the seat
    exactly its view, most decisions after the first turn have evidence, the worlds of one
    decision hold at most `PARTICLES` other hands (drawn once) around stocks dealt afresh,
    and the same seed plays the same hand."""

    def hand(seed: int) -> tuple[list[Action], int]:
        agent = PolicySearchAgent(RULES, simulations=32, seed=seed, leaf="value")
        expert = ExpertAgent(RULES)
        g = Game.new(RULES, seed=21)
        moves, weighed = [], 0
        while not g.is_hand_over:
            p = g.current_player
            view = g.seat_view(p)
            if p == 0:
                action = agent.decide(view, g.legal_actions())
                weighed += bool(agent.evidence_for(view))
                for world in agent.last_worlds:
                    assert world.seat_view(0) == view
                if agent.evidence_for(view) and agent.last_worlds:
                    worlds = agent.last_worlds
                    assert len({tuple(w.hand(1)) for w in worlds}) <= PARTICLES
                    if len(worlds) > PARTICLES:
                        assert len({tuple(w.stock_cards) for w in worlds}) > PARTICLES
            else:
                action = expert.decide(view, g.legal_actions())
            moves.append(action)
            g.apply(action)
        return moves, weighed

    moves, weighed = hand(3)
    assert weighed > len(moves) / 4
    assert hand(3)[0] == moves


def test_the_true_world_explains_the_moves_better_than_a_random_one() -> None:
    """The other seat's moves are legal in the real world (finite odds), and the policy, as a
    model of the other seat, finds them likelier there than in worlds dealt at random."""
    agent = PolicySearchAgent(RULES, simulations=8, seed=0, evidence=1)
    rng = random.Random(0)
    gaps = []
    for seen in turns(range(4)):
        dealt = [Game.from_seat_view(seen.turn.now, rng) for _ in range(8)]
        hands = [tuple(g.hand(1)) for g in (seen.world, *dealt)]
        true, *random_terms = agent._evidence_terms(hands, [seen.turn])
        assert true > -float("inf")
        finite = [t for t in random_terms if t > -float("inf")]
        if finite:
            gaps.append(true - sum(finite) / len(finite))
    assert len(gaps) > 15
    assert sum(gaps) / len(gaps) > 0.5


@pytest.mark.parametrize("evidence", [-1, 1.5, "2", True])
def test_bad_evidence_says_what_is_allowed(evidence: object) -> None:
    with pytest.raises(PolicySearchError, match="evidence must be a whole number of turns"):
        PolicySearchAgent(RULES, simulations=8, evidence=evidence)  # type: ignore[arg-type]


def test_metropolis_steps_turn_copies_of_a_few_worlds_into_many(monkeypatch: Any) -> None:
    """The evidence's odds are sharp: resampling alone draws a few worlds again and again;
    the Metropolis steps after it give distinct hands, each still one the seat cannot tell
    from the real position."""
    import rummy500_env.agents.psearch as psearch

    def distinct(steps: int) -> float:
        monkeypatch.setattr(psearch, "REJUVENATE_STEPS", steps)
        agent = PolicySearchAgent(RULES, simulations=8, seed=1, evidence=2)
        counts = []
        for seen in list(turns(range(2)))[:12]:
            view = seen.turn.now
            worlds = agent._resample(view, [seen.turn], 8)
            assert all(w.seat_view(0) == view for w in worlds)
            counts.append(len({tuple(w.hand(1)) for w in worlds}))
        return sum(counts) / len(counts)

    assert distinct(8) > distinct(0) + 2
