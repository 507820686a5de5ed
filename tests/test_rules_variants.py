"""docs/rules.md §2 (variants), §3 two-deck fine print and §4 (termination safeguards)."""

from __future__ import annotations

import pytest

import rummy500_env
from rummy500_env import Game, IllegalActionError, Rules, RulesError
from rummy500_env.engine.cards import card_str
from tests.helpers import game, legal, play, position

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


def test_pagat_equals_standard_for_two_players_so_a_saved_game_names_standard():
    """`pagat` sets no field, so with two players it is `standard` field for field, and a
    position saved from a `pagat` game names its rules "standard" and plays on as one."""
    assert Rules.preset("pagat") == Rules.preset("standard")
    g = Game.new("pagat", seed=4)
    d = g.to_dict()
    assert d["rules"] == "standard"
    assert Game.from_dict(d).to_dict() == Game.new("standard", seed=4).to_dict() == d
    assert Game.new(Rules.preset("pagat", players=3), seed=4).to_dict()["rules"]["players"] == 3


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
        ({"players": 8, "decks": 1}, ["hand_size=7 (the default", "decks=1", "1..6", "decks=2"]),
        ({"players": 8, "decks": 1, "jokers": 2}, ["8x7+1 > 54 cards", "1..6"]),
        ({"decks": 3}, ["decks=3", "1, 2 or None"]),
        ({"scoring": "points"}, ["scoring='points'", "pip", "fives"]),
        ({"stock_out": "reshuffle"}, ["stock_out='reshuffle'", "pile_only"]),
        ({"target": 0}, ["target=0", ">= 1"]),
        ({"turn_limit": 0}, ["turn_limit=0", ">= 1 or None"]),
        ({"hand_limit": -1}, ["hand_limit=-1"]),
        ({"discard_to_go_out": "yes"}, ["discard_to_go_out='yes'", "True or False"]),
        ({"jokers": 1}, ["jokers=1", "0 or 2"]),
        ({"jokers": 4}, ["jokers=4", "0 or 2"]),
        ({"rummy_calls": 1}, ["rummy_calls=1", "True or False"]),
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


def test_stock_out_ends_hand_deal_leaving_no_stock_ends_the_hand_before_anyone_plays():
    """Three players of 17 cards use 51 of the 52 cards and the upcard the last: no stock, so
    under `ends_hand` the hand is over at once, scored with nobody out; under `pile_only` the
    same deal is played."""
    r = Rules(players=3, hand_size=17, stock_out="ends_hand")
    g = Game.new(r, seed=2)
    assert ([len(g.hand(p)) for p in range(3)], len(g.pile), g.stock) == ([17, 17, 17], 1, [])
    assert (g.phase, g.turns, g.hands_played, g.went_out) == ("hand_over", 0, 1, None)
    assert g.legal_actions() == []
    assert g.totals == g.hand_scores() == [-131, -127, -130]  # each whole hand, negated
    g = Game.new(Rules(players=3, hand_size=17), seed=2)
    assert (g.phase, g.hands_played) == ("draw", 0) and "decline" in legal(g)


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


# --- two decks (docs/rules.md §3)


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
    """docs/rules.md §3 forbids discarding either copy of the card just taken from the top; a hand
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


def take_top_and_discard(g: Game, turns: int) -> None:
    """Play `turns` turns of: take the top of the pile, discard some other card."""
    for _ in range(turns):
        g.apply("take")
        other = next(c for c in g.hand(g.turn) if c != g.taken_top)
        g.apply(f"discard {card_str(other)}")


def test_turn_limit_none_lets_a_hand_run_past_200_turns():
    """`turn_limit=None` is a valid setting that switches the limit off: two players trading
    the top of the pile (pile_only, stock empty) are still in the hand after 250 turns, where
    the default limit ends the same hand at turn 200."""
    # Stock empty; the pile holds every card not in a hand; each turn: take, discard another.
    hands = ["2C 5D", "3S 8H"]
    g = game(rules={"turn_limit": None}, hands=hands, pile="KD", stock="", rest="pile")
    assert g.rules.turn_limit is None
    take_top_and_discard(g, 250)
    assert (g.phase, g.turns, g.hands_played, g.current_player) == ("draw", 250, 0, 0)
    g = game(hands=hands, pile="KD", stock="", rest="pile")
    take_top_and_discard(g, 200)
    assert (g.phase, g.turns, g.hands_played) == ("hand_over", 200, 1)


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


def test_hand_limit_none_lets_a_game_go_on_past_100_hands():
    """With `hand_limit=None` the 101st hand ending without a winner is an ordinary hand end
    and the next hand is dealt; with the default limit the 100th hand ends the game."""
    kwargs = {"hands": ["8C", "2S 3S"], "pile": "KD", "phase": "play", "totals": [100, 50]}
    g = game(rules={"hand_limit": None}, hands_played=100, **kwargs)
    g.apply("discard 8C")
    assert (g.phase, g.hands_played, g.winner, g.truncated) == ("hand_over", 101, None, False)
    g.next_hand()
    assert (g.phase, g.totals) == ("draw", [100, 45])
    g = game(hands_played=99, **kwargs)
    g.apply("discard 8C")
    assert (g.phase, g.hands_played, g.winner, g.truncated) == ("game_over", 100, 0, True)


# --- §4 in the RL env


@pytest.mark.parametrize("episode", ["game", "hand"])
def test_env_turn_limit_hand_end_is_an_ordinary_hand_end_not_a_truncation(episode):
    """A hand cut short by `turn_limit` is scored and reported like any hand end: in a game
    the next hand is dealt and play goes on; with `episode="hand"` the episode terminates.
    Neither is a truncation."""
    # turn_limit 3, two turns done: P0 draws QD and discards 5C, ending turn 3.
    rules = {"turn_limit": 3}
    d = position(rules=rules, hands=["9S 4H 5C", "2S 3S 6D"], pile="KD", stock="QD", turns=2)
    e = rummy500_env.raw_env(rules=rules, episode=episode)
    e.reset(options={"position": d})
    e.step(e.str_to_action("draw"))
    e.step(e.str_to_action("discard 5C"))
    info = {"hand_scores": [-23, -11], "totals": [-23, -11], "went_out": None, "hands_played": 1}
    assert e.infos == {"player_0": info, "player_1": info}
    assert not any(e.truncations.values())
    if episode == "game":
        assert not any(e.terminations.values())
        g = e.game  # the next hand, dealt by P0, with P1 to lead
        assert (g.phase, g.turns, g.dealer, e.agent_selection) == ("draw", 0, 0, "player_1")
        assert [len(g.hand(p)) for p in range(2)] == [13, 13]
    else:
        assert all(e.terminations.values())
        assert e.rewards == {"player_0": -0.12, "player_1": 0.12}


def test_env_win_reward_draw_at_hand_limit_gives_every_player_0_and_is_a_truncation():
    """With `reward="win"`, a game stopped by `hand_limit` on a tie for the lead pays 0 to
    everyone and truncates; the same stop with a single leader pays +1 and -1."""
    # hand_limit 1: P0 goes out discarding 8C, P1 loses 5 for 5S.
    rules = {"hand_limit": 1}
    for totals, winner, rewards in [([100, 105], None, [0.0, 0.0]), ([100, 90], 0, [1.0, -1.0])]:
        d = position(rules=rules, hands=["8C", "5S"], pile="KD", phase="play", totals=totals)
        e = rummy500_env.raw_env(rules=rules, reward="win")
        e.reset(options={"position": d})
        e.step(e.str_to_action("discard 8C"))
        g = e.game
        assert (g.phase, g.winner, e.infos["player_0"]["winner"]) == ("game_over", winner, winner)
        assert e.rewards == e._cumulative_rewards == dict(zip(e.agents, rewards, strict=True))
        assert all(e.truncations.values()) and not any(e.terminations.values())
