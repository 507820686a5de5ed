"""docs/rules.md §7: the optional keys of a position and each check of `Game.from_dict` and
`Game.from_position`, one test per check. Each builds a sound position from card notation,
breaks one thing, and asserts the exact problem reported (and, where it helps, that the
sound neighbour is accepted, so the check cannot pass by rejecting everything)."""

from __future__ import annotations

import dataclasses

import pytest

from rummy500_env import Game, InvalidPositionError
from rummy500_env.engine.cards import parse_card
from rummy500_env.engine.positions import OPTIONAL_KEYS
from tests.helpers import legal, position

REQUIRED_KEYS = [
    "rules", "dealer", "turn", "phase", "hands", "stock", "pile", "melds", "totals", "known",
]  # fmt: skip


def problems_of(d: dict) -> list[str]:
    """The problems `Game.from_dict` reports for a position (it must reject it)."""
    with pytest.raises(InvalidPositionError) as e:
        Game.from_dict(d)
    return e.value.problems


def small(**fields) -> dict:
    """P0 9S 5C, P1 2S 3S, pile KD, the rest in the stock; P0 to draw."""
    return position(hands=["9S 5C", "2S 3S"], pile="KD", **fields)


# --- optional keys


def test_optional_keys_default_to_seed_0_null_taken_top_and_must_play_0_turns_0_hands():
    """A position without `seed`, `taken_top`, `must_play`, `turns` and `hands_played` is the
    one that gives them as 0, null, null, 0 and 0: no card is barred from the discard, and
    with `turn_limit=1` and `hand_limit=1` one discard ends the hand and the game."""
    explicit = small(phase="play", taken_top=None, must_play=None, turns=0, hands_played=0, seed=0)
    bare = {k: v for k, v in explicit.items() if k not in OPTIONAL_KEYS}
    assert set(explicit) - set(bare) == {"seed", "taken_top", "must_play", "turns", "hands_played"}
    g = Game.from_dict(bare)
    assert g.to_dict() == Game.from_dict(explicit).to_dict()
    assert (g.seed, g.taken_top, g.must_play, g.turns, g.hands_played) == (0, None, None, 0, 0)
    assert legal(g) == ["discard 5C", "discard 9S"]
    h = Game.from_dict({**bare, "rules": {"turn_limit": 1, "hand_limit": 1}})
    h.apply("discard 9S")
    assert (h.phase, h.turns, h.hands_played) == ("game_over", 1, 1)


# --- what from_dict checks


@pytest.mark.parametrize("key", REQUIRED_KEYS)
def test_from_dict_rejects_a_missing_required_key(key):
    """Every key apart from the five optional ones must be there, and its absence is named."""
    d = small()
    del d[key]
    assert problems_of(d) == [f"missing key {key!r}"]


def test_from_dict_rejects_card_text_that_is_not_a_card():
    """Text that is no card (`1S`, the int 5) is quoted with where it was; the cards it
    displaced are then reported missing."""
    d = small()
    d["hands"][0][0] = "1S"  # was 9S
    d["stock"][d["stock"].index("AC")] = 5
    found = problems_of(d)
    assert found[0].startswith("hands[0]: not a card: '1S'; write rank then suit")
    assert found[1:] == ["stock: not a card: 5", "cards missing from the position (decks=1): AC 9S"]


def test_from_dict_requires_known_to_have_one_list_per_seat():
    """`known` with one list for two seats is rejected, as is a `known` that is no list."""
    assert problems_of(small(known=[[]])) == [
        "known must be a list of 2 lists of cards (players=2), got [[]]"
    ]
    assert problems_of(small(known=[[], [], []])) == [
        "known must be a list of 2 lists of cards (players=2), got [[], [], []]"
    ]
    assert Game.from_dict(small(known=[[], []])).known(0) == []


def test_from_dict_rejects_a_hand_holding_a_card_more_than_twice():
    """With two packs a hand may hold 9S twice but not three times."""
    two = {"decks": 2}
    assert Game.from_dict(position(rules=two, hands=["9S 9S 5C", "2S"], pile="KD")).hand(0) == [
        parse_card("5C"),
        parse_card("9S"),
        parse_card("9S"),
    ]
    d = position(rules=two, hands=["9S 9S 5C", "2S"], pile="KD")
    d["hands"][0].append("9S")
    assert problems_of(d) == [
        "hands[0]: 9S appear(s) more than twice",
        "cards appear more than 2 time(s) (decks=2): 9S x3",
    ]


@pytest.mark.parametrize(
    ("key", "value", "problem"),
    [
        ("turns", -1, "turns must be an int >= 0, got -1"),
        ("turns", "3", "turns must be an int >= 0, got '3'"),
        ("turns", True, "turns must be an int >= 0, got True"),
        ("hands_played", -1, "hands_played must be an int >= 0, got -1"),
        ("hands_played", 1.5, "hands_played must be an int >= 0, got 1.5"),
        ("seed", "x", "seed must be an int, got 'x'"),
        ("seed", 1.0, "seed must be an int, got 1.0"),
    ],
)
def test_from_dict_requires_turns_and_hands_played_ints_at_least_0_and_seed_an_int(
    key, value, problem
):
    """`turns` and `hands_played` are ints >= 0 (a bool is no int here); `seed` is any int."""
    assert problems_of(small(**{key: value})) == [problem]
    assert Game.from_dict(small(turns=0, hands_played=0, seed=-7)).seed == -7


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (
            lambda m: "7C 8C 9C",
            "melds[0] must be a dict with keys 'cards' and 'owners', got '7C 8C 9C'",
        ),
        (
            lambda m: {"cards": m["cards"]},
            "melds[0] must be a dict with keys 'cards' and 'owners', got "
            "{'cards': ['7C', '8C', '9C']}",
        ),
        (
            lambda m: {**m, "owners": [1, 1]},
            "melds[0].owners must list one player 0..1 per card, got [1, 1]",
        ),
        (
            lambda m: {**m, "owners": [1, 1, 2]},
            "melds[0].owners must list one player 0..1 per card, got [1, 1, 2]",
        ),
        (
            lambda m: {**m, "owners": 1},
            "melds[0].owners must list one player 0..1 per card, got 1",
        ),
    ],
)
def test_from_dict_checks_meld_shape_cards_and_owners_one_owner_seat_per_card(change, problem):
    """A meld is a dict of exactly `cards` and `owners`, with one owner seat per card."""
    d = small(melds=[("7C 8C 9C", 1)])
    Game.from_dict(d)  # the sound meld is accepted
    d["melds"][0] = change(d["melds"][0])
    assert problems_of(d)[0] == problem


def test_from_dict_rejects_a_draw_phase_with_an_empty_stock_under_ends_hand():
    """Under `ends_hand` (nordic) a player to draw from an empty stock means the hand is over;
    the same cards in the play phase (the last card was just drawn) are a sound position."""
    d = position(rules="nordic", hands=["9S 5C", "2S 3S"], pile="KD", stock="", rest=1)
    assert problems_of(d) == ["the stock is empty under stock_out='ends_hand': the hand is over"]
    assert Game.from_dict({**d, "phase": "play"}).phase == "play"
    assert Game.from_dict({**d, "rules": "standard"}).phase == "draw"  # pile_only: fine


def test_from_dict_rejects_more_than_one_empty_hand_after_a_hand():
    """Only one player can go out, so after a hand at most one hand is empty."""
    d = position(rules={"players": 3}, hands=["", "", "5C"], pile="KD", phase="hand_over")
    assert problems_of({**d, "hands_played": 1}) == [
        "only one player can go out, but players [0, 1] hold no cards"
    ]
    d = position(rules={"players": 3}, hands=["", "4C", "5C"], pile="KD", phase="hand_over")
    assert Game.from_dict({**d, "hands_played": 1}).went_out == 0


def test_from_dict_rejects_hand_over_when_the_totals_already_end_the_game():
    """P0 went out with QC KC AC (35): from 470 that is 505, which ends the game, so the phase
    must be `game_over`; from 460 it is 495 and `hand_over` is right."""
    d = position(
        hands=["", "2S"], pile="KD", melds=[("QC KC AC", 0)], phase="hand_over", hands_played=1
    )
    assert problems_of({**d, "totals": [470, 0]}) == [
        "these totals end the game: phase must be 'game_over', not 'hand_over'"
    ]
    assert Game.from_dict({**d, "totals": [460, 0]}).totals == [495, -2]


def test_from_dict_rejects_taken_top_and_must_play_both_set_but_different():
    """A take sets one card: if `taken_top` and `must_play` are both set they are the same."""
    d = position(hands=["9S 9H 9D 5C", "2S"], pile="KD", phase="play")
    assert problems_of({**d, "taken_top": "5C", "must_play": "9D"}) == [
        "taken_top and must_play are both set but differ: a take sets one card"
    ]
    g = Game.from_dict({**d, "taken_top": "9D", "must_play": "9D"})
    assert legal(g) == ["meld 9D 9H 9S"]


def test_from_dict_rejects_taken_top_neither_in_hand_nor_put_on_the_table_by_that_player():
    """The card taken from the top may have been melded since, so `taken_top` must be in the
    hand of the seat to act or among the cards that seat put on the table; a card the other
    player put down does not count."""
    # Nowhere: P0 holds 9S 5C and the table is bare.
    d = position(hands=["9S 5C", "2S"], pile="KD", phase="play", taken_top="9D")
    missing = (
        "taken_top 9D is neither in the hand of player 0 nor among the cards they put on the table"
    )
    assert problems_of(d) == [missing]
    assert Game.from_dict({**d, "taken_top": "5C"}).taken_top == parse_card("5C")
    # P0 took 9D and melded it: #0 9C/P0 9D/P0 9H/P0; P0 holds 9S 5C and may discard either.
    on_table = position(
        hands=["9S 5C", "2S"], pile="KD", phase="play", taken_top="9D", melds=[("9C 9D 9H", 0)]
    )
    assert legal(Game.from_dict(on_table)) == ["layoff 9S 0", "discard 5C", "discard 9S"]
    # The same meld put down by P1, or with 9D laid by P1: not P0's doing.
    by_other = position(
        hands=["9S 5C", "2S"], pile="KD", phase="play", taken_top="9D", melds=[("9C 9D 9H", 1)]
    )
    assert problems_of(by_other) == [missing]
    mixed = position(
        hands=["9S 5C", "2S"],
        pile="KD",
        phase="play",
        taken_top="9D",
        melds=[("9C 9D 9H", [0, 1, 0])],
    )
    assert problems_of(mixed) == [missing]


# --- from_position


def test_from_position_runs_the_same_checks_as_from_dict():
    """`Game.from_position` rejects a `Position` with a card missing, naming it, just as
    `from_dict` does for the same position as a dict; the sound `Position` is accepted."""
    sound = Game.from_dict(small()).position()
    assert Game.from_position(sound).to_dict() == Game.from_dict(small()).to_dict()
    broken = dataclasses.replace(sound, stock=sound.stock[1:])  # drop the top of the stock
    lost = "cards missing from the position (decks=1): " + small()["stock"][0]
    with pytest.raises(InvalidPositionError) as e:
        Game.from_position(broken)
    assert e.value.problems == [lost]
    d = small()
    del d["stock"][0]
    assert problems_of(d) == [lost]


@pytest.mark.parametrize(
    ("place", "card"), [("pile", 999692), ("stock", 60), ("hands", 53), ("stock", -1)]
)
def test_from_position_refuses_ids_that_are_no_card(place, card):
    """Issue 60 (3): an id outside the deck (a JAX state's array after an illegal id) was
    accepted as long as each of the 52 cards was present once; it must be refused by name."""
    sound = Game.from_dict(small()).position()
    if place == "hands":
        broken = dataclasses.replace(sound, hands=(sound.hands[0] + (card,), sound.hands[1]))
    else:
        broken = dataclasses.replace(sound, **{place: (*getattr(sound, place), card)})
    with pytest.raises(InvalidPositionError) as e:
        Game.from_position(broken)
    assert e.value.problems == [f"card ids must be 0..51 (or 52 for a joker), got {card}"]


# --- positions after the end of a game (issue 20)


@pytest.mark.parametrize("phase", ["draw", "play", "hand_over"])
def test_from_dict_rejects_hands_played_beyond_hand_limit(phase):
    """The game stops when `hands_played` reaches `hand_limit` (§4): no position counts more,
    in any phase."""
    d = small(rules={"hand_limit": 3}, hands_played=4, phase=phase)
    assert problems_of(d) == [
        "hands_played=4 is beyond hand_limit=3: the game stops when it reaches the limit "
        "(docs/rules.md §4)"
    ]


@pytest.mark.parametrize("phase", ["draw", "play"])
def test_from_dict_rejects_a_hand_in_play_once_hand_limit_is_reached(phase):
    d = small(rules={"hand_limit": 3}, hands_played=3, phase=phase)
    assert problems_of(d) == [
        f"hands_played=3 has reached hand_limit=3: the game is over, so no hand is {phase!r} "
        "(docs/rules.md §4)"
    ]
    Game.from_dict(small(rules={"hand_limit": 3}, hands_played=2, phase=phase))  # the last hand
    Game.from_dict(small(rules={"hand_limit": None}, hands_played=500, phase=phase))


def test_totals_at_the_target_in_a_hand_in_play_are_a_start_that_this_hand_decides():
    """Totals are where a position starts (a handicap, a worked example near the end): a
    draw phase with a total over the target is accepted, and the game ends when this hand
    does, with no further hand (§1)."""
    g = Game.from_dict(small(totals=[620, 100]))
    assert g.phase == "draw"
    g.apply("draw")
    g.apply("discard 9S")
    while not g.is_hand_over:
        g.apply(sorted(g.legal_actions(), key=str)[0])
    assert g.phase == "game_over" and g.winner == 0
