"""Tests written for mutants that survived the rules tests and the reference properties
(benchmarks/mutation.py, docs/testing.md): each names the deliberate bug it kills."""

from __future__ import annotations

import random

import pytest

from rummy500_env import Action, Game, IllegalActionError, Rules
from rummy500_env.engine.cards import parse_card
from tests.helpers import game, play


def test_an_unseeded_game_draws_an_int_seed_and_keeps_it():
    """`Game.new` without a seed draws one (mutant: the seed left None, every unseeded game
    then deals the same cards)."""
    seeds = {Game.new("standard").seed for _ in range(3)}
    assert all(type(s) is int for s in seeds) and len(seeds) == 3
    g = Game.new("standard")
    assert g.to_dict()["seed"] == g.seed


def test_next_hand_refused_mid_hand_does_not_say_the_game_is_over():
    """The refusal names the phase, and says "the game is over" only when it is (mutant: the
    note added always, or replaced by other text)."""
    g = Game.new("standard", seed=1)
    with pytest.raises(IllegalActionError) as mid:
        g.next_hand()
    assert str(mid.value).endswith("the hand is over; phase is 'draw'")
    over = game(
        hands=["5C", "2S 3S"], pile="9D", melds=[("KC KD KH", 0)], totals=[480, 0], phase="play"
    )
    over.apply("discard 5C")
    assert over.phase == "game_over"
    with pytest.raises(IllegalActionError, match=r"\(the game is over\)$"):
        over.next_hand()


@pytest.mark.parametrize(
    "action",
    [
        Action("call", (parse_card("9D"), parse_card("KC"))),
        Action("dig", (parse_card("9D"), parse_card("KC"))),
        Action("dig", (parse_card("9D"),), -1, 0),
        Action("discard", (parse_card("5C"), parse_card("7C"))),
        Action("layoff", (parse_card("5C"), parse_card("7C")), 0),
    ],
    ids=["call-two-cards", "dig-two-cards", "dig-copy-0", "discard-two", "layoff-two"],
)
def test_malformed_actions_built_in_code_are_illegal(action):
    """An `Action` built in code with the wrong number of cards or copy is refused, never
    judged by its first card (mutant: `or` turned into `and` in the arity checks)."""
    rules = Rules(rummy_calls=True)
    g = game(rules=rules.to_dict(), hands=["9S 9H 5C 7C", "2S 3S"], pile="9D KC 2C")
    assert not g.is_legal(action)
    with pytest.raises(IllegalActionError):
        g.apply(action)


def test_after_the_game_an_action_is_refused_because_the_game_is_over():
    """Once the game is over the refusal says so, not "call next_hand()", which would be
    refused too (mutant: the game-over test misspelt)."""
    g = game(
        hands=["5C", "2S 3S"], pile="9D", melds=[("KC KD KH", 0)], totals=[480, 0], phase="play"
    )
    g.apply("discard 5C")
    with pytest.raises(IllegalActionError, match="the game is over"):
        g.apply("draw")


def test_a_call_naming_two_cards_is_illegal_in_a_call_window():
    """In a call window, an `Action` calling two cards is refused, not read as a call of the
    first (mutant: the arity check's `or` turned into `and`)."""
    g = game(
        rules=Rules(rummy_calls=True).to_dict(),
        hands=["9S 9H 5C 7C", "2S 3S"],
        pile="KC 9D",
        phase="call",
        discarder=1,
    )
    assert g.is_legal("call 9D")
    assert not g.is_legal(Action("call", (parse_card("9D"), parse_card("KC"))))


def test_a_known_card_stays_known_while_one_known_copy_is_held():
    """Two decks: the hand holds 9D, digs the other 9D and melds one of the two; the dug copy
    may be the one still held, so 9D stays known, as long as the hand holds as many copies
    as are known (docs/rules.md §3 "Pile cards are known"; mutant: the known count read one
    too high, dropping it)."""
    g = game(rules={"decks": 2}, hands=["9D 9H 9S 5C 7C", "2S 3S"], pile="9D KC 2C")
    play(g, "dig 9D", "meld 9D 9H 9S")
    assert g.to_dict()["known"][0] == ["2C", "KC", "9D"]
    play(g, "discard 9D")
    assert g.to_dict()["known"][0] == ["2C", "KC"]


def test_games_are_equal_only_when_their_positions_are():
    """`==` compares positions (mutant: any two games equal)."""
    a, b = Game.new("standard", seed=1), Game.new("standard", seed=2)
    assert a != b and a == a.copy() and a != "not a game"


def test_from_seat_view_draws_from_a_given_generator():
    """A `random.Random` is drawn from, so equal generators give equal worlds (mutant: it
    was passed to `random.Random` again, which refuses it)."""
    g = Game.new("standard", seed=3)
    view = g.seat_view(0)
    one = Game.from_seat_view(view, random.Random(9))
    two = Game.from_seat_view(view, random.Random(9))
    assert one == two and one.hand(0) == g.hand(0)


def test_a_joker_keeps_its_place_when_a_card_is_laid_off_below_its_run():
    """A lay-off at a run's low end keeps the run's jokers as jokers: their value stays 15
    (docs/rules.md §5; mutant: the joker marks dropped on a low lay-off)."""
    g = game(
        rules={"jokers": 2},
        hands=["4H 9C 9D", "2S 3S"],
        pile="KD",
        melds=[("5H JK=6H 7H", 1)],
        phase="play",
    )
    g.apply("layoff 4H 0")
    assert g.to_dict()["melds"][0] == {"cards": ["4H", "5H", "JK=6H", "7H"], "owners": [0, 1, 1, 1]}
    assert g.table_points() == [4, 5 + 15 + 7]


def test_template_index_and_joker_start_cards_name_the_three_card_melds():
    """The action codec's lookups (rl/actions.py): each three-card meld, in any order, is its
    template; anything else is none; a joker start marks the card at its place."""
    from rummy500_env.engine import melds

    for t, cards in enumerate(melds.MELD_TEMPLATES):
        assert melds.template_index(list(reversed(cards))) == t
        for k in range(3):
            assert melds.joker_start_cards(t, k) == (cards, 1 << cards[k])
    nine = [parse_card(c) for c in ("9C", "9D", "9H", "9S")]
    assert melds.template_index(nine) is None and melds.template_index(nine[:2]) is None
    assert melds.template_index([nine[0], nine[0], nine[1]]) is None
    assert melds.template_index([parse_card(c) for c in ("KC", "AD", "2D")]) is None


def test_set_next_draw_swaps_that_card_with_the_top_of_the_stock():
    """`set_next_draw` (chance nodes pick the drawn card): the card and the old top swap
    places, the next draw takes it, and a card the stock lacks is refused."""
    g = game(hands=["9S 9H 5C", "2S 3S"], pile="KD", stock="4C 8D QS")
    before = g.to_dict()["stock"]
    g.set_next_draw(parse_card("QS"))
    assert g.to_dict()["stock"] == ["QS", "8D", "4C", *before[3:]]
    g.apply("draw")
    assert "QS" in g.to_dict()["hands"][0]
    with pytest.raises(IllegalActionError, match="the stock holds no KD"):
        g.set_next_draw(parse_card("KD"))


def test_hand_result_to_dict_names_each_field():
    """The end-of-hand result in JSON form, as the env's infos and the records read it."""
    g = game(hands=["5C", "2S 3S"], pile="9D", melds=[("KC KD KH", 0)], phase="play")
    g.apply("discard 5C")
    assert g.result().to_dict() == {
        "scores": [30, -5],
        "totals": [30, -5],
        "went_out": 0,
        "game_over": False,
        "winner": None,
        "truncated": False,
    }


def test_a_total_of_exactly_the_target_ends_the_game():
    """500 or more ends the game (docs/rules.md §1): exactly 500 does (mutant: `>`)."""
    g = game(
        hands=["5C", "2S 3S"], pile="9D", melds=[("KC KD KH", 0)], totals=[470, 0], phase="play"
    )
    g.apply("discard 5C")
    assert g.totals == [500, -5] and g.phase == "game_over" and g.winner == 0


def test_winner_must_go_out_at_exactly_the_target_wins():
    """With `winner_must_go_out`, going out with exactly the target ends the game (mutant:
    `>` for `>=`)."""
    g = game(
        rules={"winner_must_go_out": True, "target": 100},
        hands=["5C", "2S 3S"],
        pile="9D",
        melds=[("KC KD KH", 0)],
        totals=[70, 0],
        phase="play",
    )
    g.apply("discard 5C")
    assert g.totals == [100, -5] and g.phase == "game_over" and g.winner == 0


def test_a_hand_with_all_four_of_a_rank_lists_each_three_card_set_once():
    """Four 9s in hand: the four sets of three are each listed once (mutant: one listed twice,
    another missing, in the meld finder's four-suit case)."""
    g = game(hands=["9C 9D 9H 9S 2C", "2S 3S"], pile="KD", phase="play")
    melds = [str(a) for a in g.legal_actions() if a.kind == "meld"]
    assert melds == ["meld 9C 9D 9H", "meld 9C 9D 9S", "meld 9C 9H 9S", "meld 9D 9H 9S"]
