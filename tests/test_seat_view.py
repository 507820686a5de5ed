"""The engine's information state (`Game.seat_view`), its determinization
(`Game.from_seat_view`) and the one end-of-hand result (`Game.result`)."""

from __future__ import annotations

import dataclasses
import random
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rummy500_env
from rummy500_env import PRESETS, Game, Rules
from rummy500_env.engine.cards import JOKER, NUM_CARDS
from rummy500_env.engine.errors import IllegalActionError, InvalidPositionError
from rummy500_env.engine.render import render
from tests.helpers import game, reshuffle_hidden

RULE_SYSTEMS: list[str | dict[str, object]] = [
    *PRESETS,
    {"players": 3},
    {"players": 4, "jokers": 2},
    {"players": 5, "decks": 2},
    {"players": 8, "decks": 2, "hand_size": 7},
    {"decks": 2, "jokers": 2, "rummy_calls": True},
    {"jokers": 2, "rummy_calls": True},
    {"players": 3, "rummy_calls": True, "stock_out": "pile_must_use"},
]
"""Every preset, 2-8 players, two decks, jokers and calls."""


def played(rules: str | dict[str, object], seed: int, moves: int) -> Game:
    """A game after up to `moves` random legal actions (a hand may end on the way)."""
    rng = random.Random(seed)
    g = Game.new(rules, seed=seed)
    for _ in range(moves):
        if g.is_hand_over:
            break
        g.apply(rng.choice(g.legal_actions()))
    return g


positions = st.builds(
    played,
    st.sampled_from(RULE_SYSTEMS),
    st.integers(0, 2**32),
    st.integers(0, 120),
)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(positions, st.integers(0, 7), st.integers(0, 2**32))
def test_hidden_cards_and_stock_order_do_not_enter_the_view(g, seat, seed):
    seat %= g.players
    other = reshuffle_hidden(g, seat, random.Random(seed))
    assert other.seat_view(seat) == g.seat_view(seat)


def test_the_view_sees_what_its_seat_may_see():
    """The hidden-cards check can fail: what a seat sees does change its view."""
    g = game(hands=["9S 9H 2C", "5D 6D QS"], pile="9D KC 4H", known=[[], ["QS"]])
    v = g.seat_view(0)
    assert v.hand == tuple(g.hand(0)) and v.known[1] == (g.known(1)[0],)
    assert v.hand_sizes == (3, 3) and v.stock_size == len(g.stock_cards)
    moved = game(hands=["9S 9H 2C", "5D 6D QS"], pile="9D 4H KC", known=[[], ["QS"]])
    assert moved.seat_view(0) != v  # the pile's order is seen
    mine = game(hands=["9S 9H 3C", "5D 6D QS"], pile="9D KC 4H", known=[[], ["QS"]])
    assert mine.seat_view(0) != v  # so is the own hand
    # ... but not the opponent's unknown cards
    theirs = game(hands=["9S 9H 2C", "5D 7D QS"], pile="9D KC 4H", known=[[], ["QS"]])
    assert theirs.seat_view(0) == v


def test_view_holds_the_tables_melds_with_owners_and_jokers():
    g = game(
        rules={"jokers": 2},
        hands=["5H 9C", "KD 2S"],
        melds=[("5S JK=5D 5C", 1), ("7H 8H JK=9H", [0, 0, 1])],
        pile="4C",
    )
    v = g.seat_view(0)
    assert v.melds == tuple(g.melds)
    assert [m.owners for m in v.melds] == [(1, 1, 1), (0, 0, 1)]
    assert [str(m) for m in v.melds] == ["5S JK=5D 5C", "7H 8H JK=9H"]
    assert v.unseen().count(JOKER) == 0  # both jokers are on the table
    assert v.relative() is v
    r = g.seat_view(1).relative()
    assert [m.owners for m in r.melds] == [(0, 0, 0), (1, 1, 0)]
    assert r.hand == tuple(g.hand(1)) and r.seat == 0 and r.turn == 1


@settings(max_examples=60, deadline=None, derandomize=True)
@given(positions, st.integers(0, 7), st.integers(0, 2**32))
def test_determinization_is_consistent_with_the_view(g, seat, seed):
    seat %= g.players
    v = g.seat_view(seat)
    world = Game.from_seat_view(v, seed)
    assert world.seat_view(seat) == v  # same knowledge: hand, pile, table, known, sizes
    for q in v.opponents:  # known cards stay with their holder
        assert not Counter(v.known[q]) - Counter(world.hand(q))
    r = v.rules
    cards = [c for q in range(r.players) for c in world.hand(q)]
    cards += world.stock_cards + list(world.pile) + v.table_cards()
    assert Counter(cards) == Counter([*range(NUM_CARDS)] * r.deck_count + [JOKER] * r.joker_count)
    assert Game.from_seat_view(v, seed) == world  # seeded
    if not g.is_hand_over:
        assert [str(a) for a in world.legal_actions()] == [str(a) for a in g.legal_actions()] or (
            v.turn != seat
        )


def test_determinization_deals_hidden_jokers_too():
    g = Game.new({"jokers": 2}, seed=11)
    v = g.seat_view(0)
    hidden = 2 * 1 - v.hand.count(JOKER) - v.pile.count(JOKER)
    worlds = [Game.from_seat_view(v, s) for s in range(40)]
    counts = {w.hand(1).count(JOKER) + w.stock_cards.count(JOKER) for w in worlds}
    assert counts == {hidden}
    assert len({tuple(w.hand(1)) for w in worlds}) > 30  # really dealt at random


def test_determinization_refuses_an_impossible_view():
    v = Game.new("standard", seed=1).seat_view(0)
    bad = dataclasses.replace(v, stock_size=5)  # not v.__slots__: a compiled class has none
    with pytest.raises(InvalidPositionError, match="stock of 5"):
        Game.from_seat_view(bad, 0)


def test_hand_result_is_computed_once_and_read_everywhere():
    g = game(hands=["", "KD 2S"], melds=[("7H 8H 9H", 0)], phase="hand_over", hands_played=1)
    res = g.result()
    assert res.scores == (7 + 8 + 9, -12) and res.went_out == 0
    assert tuple(g.totals) == res.totals and g.hand_scores() == list(res.scores)
    assert not res.game_over and res.winner is None and g.winner is None
    assert g.seat_view(1).result == res
    assert g.position().result() == res
    assert "hand score +24" in render(g.position())


def test_hand_result_ends_the_game_and_names_the_winner():
    g = game(hands=["", "KD"], melds=[("7H 8H 9H", 0)], totals=[480, 0], phase="game_over")
    res = g.result()
    assert res.game_over and res.winner == 0 and not res.truncated
    assert g.winner == 0 and res.totals == (504, -10)
    limit = game(
        rules={"hand_limit": 1},
        hands=["", "KD"],
        melds=[("7H 8H 9H", 0)],
        phase="game_over",
        hands_played=1,
    )
    assert limit.result().truncated and limit.result().winner == 0 and limit.truncated


def test_no_result_while_the_hand_goes_on():
    g = Game.new("standard", seed=3)
    with pytest.raises(IllegalActionError, match="not over"):
        g.result()
    assert g.seat_view(0).result is None


def test_seat_view_checks_its_seat():
    g = Game.new(Rules(players=3), seed=3)
    with pytest.raises(ValueError, match=r"0\.\.2"):
        g.seat_view(3)


def _crafted(rules: Rules | None = None, **fields: object) -> object:
    """A real view of a game in play (seat 0, a meld on the table, a card taken from the
    pile) with `fields` replaced; None where this build cannot even construct it (a compiled
    `SeatView` checks its fields' types in the constructor)."""
    g = game(
        hands=["7H 8H 9H 2C", "KD 2S QC"],
        pile="9D KC",
        melds=[("5S 6S 7S", 1)],
        known=[["2C"], []],
        phase="draw",
    )
    v = g.seat_view(0)
    try:
        return dataclasses.replace(v, **({"rules": rules} if rules else {}), **fields)
    except TypeError:
        return None


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"hand": (99, 1)}, "hand holds 99, which is no card (card ids are 0..51, 52 a joker)"),
        ({"pile": (77,)}, "pile holds 77, which is no card"),
        ({"hand": ("9D",)}, "hand holds '9D', which is no card"),
        ({"hand": (True,)}, "hand holds True, which is no card"),
        ({"seat": 5}, "seat must be a player 0..1, got 5"),
        ({"seat": -1}, "seat must be a player 0..1, got -1"),
        ({"turn": 9}, "turn must be a player 0..1, got 9"),
        ({"dealer": 2}, "dealer must be a player 0..1, got 2"),
        ({"hand_sizes": (4,)}, "hand_sizes must have one entry per player (2), got (4,)"),
        ({"known": ((),)}, "known must have one entry per player (2)"),
        ({"totals": (0, 0, 0)}, "totals must have one entry per player (2)"),
        ({"known": ((), (99,))}, "known[1] holds 99, which is no card"),
        ({"hand_sizes": (4, -3)}, "hand_sizes[1] must be an int >= 0, got -3"),
        ({"hand_sizes": (5, 3)}, "hand_sizes[0] is 5, but the hand holds 4 cards"),
        ({"stock_size": -1}, "stock_size must be an int >= 0, got -1"),
        ({"taken_top": 60}, "taken_top holds 60, which is no card"),
        ({"must_play": "x"}, "must_play holds 'x', which is no card"),
        ({"discarder": 4}, "discarder must be null or a player 0..1, got 4"),
        ({"phase": "nap"}, "phase must be one of"),
        ({"turns": -2}, "turns must be an int >= 0, got -2"),
        ({"rules": Rules(players=3)}, "must have one entry per player (3)"),
        ({"rules": "standard"}, "rules must be a Rules, got 'standard'"),
        ({"melds": ("5S 6S 7S",)}, "melds[0] is no Meld"),
    ],
    ids=lambda x: str(x)[:40] if isinstance(x, dict) else None,
)
def test_determinization_checks_the_view_first_and_names_each_problem(fields, problem):
    """A crafted view was a bare IndexError (card 99, seat 5, short hand_sizes, turn 9) or
    TypeError (a str card) from sampling, which ran before the check."""
    rules = fields.pop("rules", None)
    view = _crafted(rules, **fields)  # type: ignore[arg-type]
    if view is None:  # the compiled SeatView refuses the field's type when it is built:
        assert rummy500_env.COMPILED, "only the compiled build refuses a view's construction"
        return  # no such view can reach from_seat_view
    with pytest.raises(Exception) as e:
        Game.from_seat_view(view, 0)  # type: ignore[arg-type]
    assert type(e.value) is InvalidPositionError, repr(e.value)
    assert any(problem in p for p in e.value.problems), e.value.problems


def test_a_view_with_several_problems_lists_them_all():
    view = _crafted(seat=5, turn=9, hand=(99,), pile=("x",))
    assert view is not None
    with pytest.raises(InvalidPositionError) as e:
        Game.from_seat_view(view, 0)  # type: ignore[arg-type]
    assert len(e.value.problems) == 4, e.value.problems


def test_the_crafted_views_base_is_sound():
    view = _crafted()
    assert view is not None
    Game.from_seat_view(view, 0)  # type: ignore[arg-type]
