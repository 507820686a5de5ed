"""RULES.md §2 (variants), §3 two-deck fine print and §4 (termination safeguards)."""

from __future__ import annotations

import pytest

from rummy500_env import Game, IllegalActionError, Rules, RulesError
from tests.helpers import game, legal, play

# --- presets and Rules validation


@pytest.mark.parametrize(
    ("name", "scoring", "stock_out"),
    [
        ("standard", "pip", "pile_only"),
        ("pagat", "pip", "pile_only"),
        ("nordic", "fives", "ends_hand"),
        ("fives", "fives", "pile_only"),
        ("app", "pip", "pile_must_use"),
    ],
)
def test_presets_match_the_rules_table(name, scoring, stock_out):
    r = Rules.preset(name)
    assert (r.players, r.cards_per_hand, r.deck_count) == (2, 13, 1)
    assert (r.scoring, r.stock_out) == (scoring, stock_out)


@pytest.mark.parametrize("players", range(2, 9))
def test_players_2_to_8_hand_size_and_decks_defaults(players):
    r = Rules.preset("pagat", players=players)
    assert r.cards_per_hand == (13 if players == 2 else 7)
    assert r.deck_count == (2 if players >= 5 else 1)
    g = Game.new(r, seed=players)
    assert sum(len(g.hand(p)) for p in range(players)) == players * r.cards_per_hand


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        ({"players": 9}, ["players=9", "2..8"]),
        ({"players": 1}, ["players=1", "2..8"]),
        ({"players": 8, "hand_size": 13}, ["hand_size=13", "players=8", "1..12"]),
        ({"players": 2, "hand_size": 26}, ["hand_size=26", "1..25"]),
        ({"decks": 3}, ["decks=3", "1, 2 or None"]),
        ({"scoring": "points"}, ["scoring='points'", "pip", "fives"]),
        ({"stock_out": "reshuffle"}, ["stock_out='reshuffle'", "pile_only"]),
        ({"target": 0}, ["target=0", ">= 1"]),
        ({"turn_limit": 0}, ["turn_limit=0", ">= 1 or None"]),
        ({"hand_limit": -1}, ["hand_limit=-1"]),
        ({"discard_to_go_out": "yes"}, ["discard_to_go_out='yes'", "True or False"]),
        ({"jokers": 1}, ["jokers=1", "0 or 2"]),
        ({"jokers": 2}, ["jokers=2", "not supported"]),
        ({"rummy_calls": True}, ["rummy_calls=True", "not supported"]),
    ],
)
def test_impossible_rules_raise_rules_error_naming_field_value_and_allowed(fields, words):
    with pytest.raises(RulesError) as e:
        Rules(**fields)
    for w in words:
        assert w in str(e.value)


def test_unknown_rules_field_and_preset_are_named():
    with pytest.raises(RulesError, match="unknown rules field"):
        Rules.from_dict({"player": 2})
    with pytest.raises(RulesError, match="unknown preset 'gin'"):
        Rules.preset("gin")


def test_hand_size_variant_deals_that_many():
    g = Game.new(Rules(players=3, hand_size=10), seed=1)
    assert [len(g.hand(p)) for p in range(3)] == [10, 10, 10]


def test_decks_variant_two_decks_for_two_players():
    g = Game.new(Rules(decks=2), seed=1)
    assert len(g.stock) == 104 - 27


def test_target_variant():
    g = game(
        rules={"target": 100}, hands=["5C 6C 7C", "2S"], pile="KD", phase="play", totals=[90, 0]
    )
    g.apply("meld 5C 6C 7C")
    assert g.phase == "game_over" and g.winner == 0


# --- scoring = fives


def test_fives_scoring_values():
    g = game(
        rules="fives",
        hands=["AS 9C 10C KH", "3S"],
        pile="KD",
        melds=[("AH 2H 3H", 0), ("QC KC AC", 0), ("7D 8D 9D", 0)],
        phase="hand_over",
        hands_played=1,
    )
    # table: 5 + 5 + 5 (low ace 5) + 10 + 10 + 15 + 15 = 65; hand: 15 + 5 + 10 + 10 = 40
    assert g.hand_scores() == [65 - 40, -5]


# --- stock_out


def test_stock_out_ends_hand_when_a_player_must_draw_from_empty_stock():
    g = game(rules="nordic", hands=["9S 4H 5C", "2S 3S"], pile="9D KC", stock="QC", rest=1)
    play(g, "draw", "discard 5C")
    assert g.phase == "hand_over" and g.went_out is None


def test_stock_out_pile_must_use_top_take_carries_dig_obligation():
    # Stock empty: taking the top 9D is offered only because 9S 9H can meld it, and then binds.
    g = game(rules="app", hands=["9S 9H 5C", "2S 3S"], pile="KC 9D", stock="", rest=1)
    assert "take" in legal(g)
    g.apply("take")
    assert g.must_play is not None
    assert not [a for a in legal(g) if a.startswith("discard")]


def test_stock_out_pile_must_use_unusable_top_card_is_not_offered():
    g = game(rules="app", hands=["9S 4H 5C", "2S 3S"], pile="KC 9D", stock="", rest=1)
    assert legal(g) == ["decline"]
    with pytest.raises(IllegalActionError, match="pile_must_use"):
        g.apply("take")


def test_stock_out_pile_must_use_has_no_obligation_while_stock_remains():
    g = game(rules="app", hands=["9S 4H 5C", "2S 3S"], pile="KC 9D")
    g.apply("take")
    assert g.must_play is None


# --- discard_to_go_out


def test_discard_to_go_out_meld_emptying_the_hand_is_illegal():
    g = game(rules={"discard_to_go_out": True}, hands=["5C 6C 7C", "2S"], pile="KD", phase="play")
    assert "meld 5C 6C 7C" not in legal(g)
    with pytest.raises(IllegalActionError, match="discard_to_go_out"):
        g.apply("meld 5C 6C 7C")


def test_discard_to_go_out_lay_off_emptying_the_hand_is_illegal():
    g = game(
        rules={"discard_to_go_out": True},
        hands=["8C", "2S"],
        pile="KD",
        melds=[("5C 6C 7C", 1)],
        phase="play",
    )
    assert legal(g) == ["discard 8C"]


def test_discard_to_go_out_dig_legal_only_if_card_goes_down_without_emptying_hand():
    # Hand 9S; pile 9D 9H: digging 9D gives exactly 9S 9D 9H, whose meld would empty the hand.
    r = {"discard_to_go_out": True}
    g = game(rules=r, hands=["9S", "2S"], pile="9D 9H")
    assert "dig 9D" not in legal(g)
    g = game(rules=r, hands=["9S 4C", "2S"], pile="9D 9H")
    assert "dig 9D" in legal(g)


def test_discard_to_go_out_going_out_by_discard_still_works():
    g = game(rules={"discard_to_go_out": True}, hands=["8C", "2S"], pile="KD", phase="play")
    g.apply("discard 8C")
    assert g.phase == "hand_over" and g.went_out == 0


# --- top_card_must_meld


def test_top_card_must_meld_take_carries_the_obligation():
    g = game(rules={"top_card_must_meld": True}, hands=["9S 9H 5C", "2S"], pile="KC 9D")
    g.apply("take")
    with pytest.raises(IllegalActionError, match="blocked until 9D"):
        g.apply("discard 5C")
    g.apply("meld 9D 9H 9S")
    assert "discard 5C" in legal(g)


def test_top_card_must_meld_unusable_top_is_not_offered():
    g = game(rules={"top_card_must_meld": True}, hands=["9S 4H 5C", "2S"], pile="KC 9D")
    assert legal(g) == ["draw"]


# --- winner_must_go_out


def test_winner_must_go_out_player_who_goes_out_with_target_wins():
    g = game(
        rules={"winner_must_go_out": True},
        hands=["5C 6C 7C", "2S"],
        pile="KD",
        phase="play",
        totals=[490, 600],
    )
    g.apply("meld 5C 6C 7C")
    assert g.phase == "game_over" and g.winner == 0  # 508 vs 598: the one who went out wins


def test_winner_must_go_out_target_reached_without_going_out_plays_on():
    g = game(
        rules={"winner_must_go_out": True},
        hands=["5C 6C 7C", "2S"],
        pile="KD",
        phase="play",
        totals=[300, 600],
    )
    g.apply("meld 5C 6C 7C")
    assert g.phase == "hand_over"
    g = game(
        rules={"winner_must_go_out": True},
        hands=["9S 4H 5C", "2S 3S"],
        pile="KD",
        stock="",
        rest=1,
        totals=[600, 600],
    )
    g.apply("decline")  # nobody went out
    assert g.phase == "hand_over"


# --- two decks (RULES.md §3)


def test_two_decks_dig_names_the_buried_copy_nearest_the_top_and_copy_2_below():
    r = {"players": 2, "decks": 2}
    # Pile bottom->top: 9D 4C 9D 2C 7S. "dig 9D" takes from index 2; "dig 9D#2" from index 0.
    g = game(rules=r, hands=["9S 9H", "2S"], pile="9D 4C 9D 2C 7S")
    assert {"dig 9D", "dig 9D#2"} <= set(legal(g))
    g1 = g.copy()
    g1.apply("dig 9D")
    assert g1.to_dict()["pile"] == ["9D", "4C"]
    g.apply("dig 9D#2")
    assert g.pile == []


def test_two_decks_after_taking_the_top_neither_copy_may_be_discarded():
    r = {"players": 2, "decks": 2}
    g = game(rules=r, hands=["9D 5C", "2S"], pile="4H 9D")
    g.apply("take")
    assert "discard 9D" not in legal(g)
    with pytest.raises(IllegalActionError, match="taken from the top"):
        g.apply("discard 9D")


def test_two_decks_holding_only_copies_of_the_taken_top_card_may_discard_one():
    """RULES.md §3 forbids discarding either copy of the card just taken from the top; a hand
    of nothing but those copies would then be stuck. Our clarification: one may be discarded."""
    r = {"players": 2, "decks": 2}
    g = game(rules=r, hands=["2S AD", "5C"], pile="4H 2S", melds=[("AC AH AS", 1)])
    play(g, "take")
    assert "discard 2S" not in legal(g)
    g.apply("layoff AD 0")
    assert legal(g) == ["discard 2S"]
    g.apply("discard 2S")
    assert g.phase == "draw" and g.hand(0) == [g.pile[-1]]


def test_two_decks_top_copy_is_not_buried():
    r = {"players": 2, "decks": 2}
    g = game(rules=r, hands=["9S 9H", "2S"], pile="4H 9D")
    with pytest.raises(IllegalActionError, match="top card"):
        g.apply("dig 9D")


# --- §4 termination safeguards


def test_turn_limit_ends_the_hand_as_if_stock_empty_and_player_declined():
    g = game(
        rules={"turn_limit": 3}, hands=["9S 4H 5C", "2S 3S 6D"], pile="KD", stock="QD", turns=2
    )
    play(g, "draw", "discard 5C")
    assert g.phase == "hand_over" and g.went_out is None
    assert g.hand_scores() == [-(9 + 4 + 10), -11] == g.totals


def test_turn_limit_none_disables_it():
    g = Game.new(Rules(turn_limit=None), seed=1)
    assert g.rules.turn_limit is None


def test_hand_limit_stops_game_highest_total_wins():
    g = game(
        rules={"hand_limit": 3},
        hands=["8C", "2S 3S"],
        pile="KD",
        phase="play",
        totals=[100, 50],
        hands_played=2,
    )
    g.apply("discard 8C")
    assert g.phase == "game_over" and g.winner == 0 and g.truncated


def test_hand_limit_tie_is_a_draw():
    g = game(
        rules={"hand_limit": 3},
        hands=["8C", "5S"],
        pile="KD",
        phase="play",
        totals=[100, 105],
        hands_played=2,
    )
    g.apply("discard 8C")
    assert g.totals == [100, 100]
    assert g.phase == "game_over" and g.winner is None and g.truncated


def test_hand_limit_not_truncated_when_target_reached():
    g = game(
        rules={"hand_limit": 3},
        hands=["8C", "5S"],
        pile="KD",
        phase="play",
        totals=[600, 105],
        hands_played=2,
    )
    g.apply("discard 8C")
    assert g.phase == "game_over" and g.winner == 0 and not g.truncated
