"""Positions: to_dict/from_dict round trips, validation lists every problem, errors leave the
game unchanged, rendering shows what a reader needs."""

from __future__ import annotations

import json

import pytest

from rummy500_env import ActionParseError, Game, IllegalActionError, InvalidPositionError, Rules
from tests.helpers import game, position


def test_new_game_round_trips_through_json():
    g = Game.new(Rules.preset("nordic", players=5), seed=11)
    d = json.loads(json.dumps(g.to_dict()))
    assert Game.from_dict(d).to_dict() == g.to_dict()


def test_position_dict_has_the_documented_keys():
    d = Game.new("standard", seed=1).to_dict()
    assert set(d) == {
        "rules",
        "dealer",
        "turn",
        "phase",
        "hands",
        "stock",
        "pile",
        "melds",
        "totals",
        "taken_top",
        "must_play",
        "known",
        "turns",
        "hands_played",
        "seed",
    }
    assert d["rules"] == "standard"


def test_non_preset_rules_are_written_as_fields():
    d = Game.new(Rules(target=300), seed=1).to_dict()
    assert d["rules"]["target"] == 300


def test_from_dict_then_next_hand_replays_the_same_deal():
    g = game(hands=["8C", "2S 3S"], pile="KD", phase="play", seed=5)
    g.apply("discard 8C")
    h = Game.from_dict(g.to_dict())
    g.next_hand()
    h.next_hand()
    assert g.to_dict() == h.to_dict()


def test_invalid_position_lists_every_problem():
    d = position(hands=["9S 5C", "2S 3S"], pile="KD", phase="shuffle", turn=4)
    d["hands"][0].append("9S")
    d["melds"] = [{"cards": ["2H", "4H", "5H"], "owners": [0, 0, 0]}]
    d["stock"] = [c for c in d["stock"] if c not in ("2H", "4H", "5H")][:-3]
    with pytest.raises(InvalidPositionError) as e:
        Game.from_dict(d)
    text = str(e.value)
    for words in [
        "turn must be an int 0..1",
        "phase must be one of",
        "2H 4H 5H is not a meld",
        "more than 1 time",
        "missing from the position",
    ]:
        assert words in text, words
    assert len(e.value.problems) >= 5


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"hands": [["9S"]]}, "hands must be a list of 2"),
        ({"dealer": "x"}, "dealer must be an int"),
        ({"rules": "gin"}, "unknown preset"),
        ({"extra": 1}, "unknown key"),
        ({"totals": [0]}, "totals must be a list of 2 ints"),
        ({"phase": "play", "must_play": "AH"}, "must_play AH is not in the hand"),
        ({"taken_top": "AH"}, "null outside the 'play' phase"),
        ({"known": [["AH"], []]}, "known[0] has AH but hands[0] does not hold it"),
        ({"hands": [[], ["2S", "3S"]]}, "hold no cards"),
        ({"turns": 200}, "turn_limit=200"),
        ({"phase": "game_over", "hands_played": 1}, "phase must be 'hand_over'"),
    ],
)
def test_each_position_problem_is_reported(change, words):
    d = position(hands=["9S 5C", "2S 3S"], pile="KD")
    d.update(change)
    with pytest.raises(InvalidPositionError) as e:
        Game.from_dict(d)
    assert words in str(e.value)


def test_illegal_action_leaves_the_game_unchanged_and_names_the_rule():
    g = game(hands=["9S 9H 5C", "2S 3S"], pile="9D 2C")
    g.apply("dig 9D")
    before = g.to_dict()
    with pytest.raises(IllegalActionError, match=r"discarding is blocked until 9D .*player 0"):
        g.apply("discard 5C")
    with pytest.raises(ActionParseError):
        g.apply("discard")
    with pytest.raises(IllegalActionError, match="already drawn"):
        g.apply("draw")
    with pytest.raises(IllegalActionError, match="do not hold"):
        g.apply("meld 4S 5S 6S")
    assert g.to_dict() == before


def test_actions_after_the_hand_is_over_are_refused_with_the_fix():
    g = game(hands=["8C", "2S 3S"], pile="KD", phase="play")
    g.apply("discard 8C")
    with pytest.raises(IllegalActionError, match="next_hand"):
        g.apply("draw")
    assert g.legal_actions() == []


def test_next_hand_refused_mid_hand():
    g = Game.new("standard", seed=1)
    with pytest.raises(IllegalActionError, match="only allowed when the hand is over"):
        g.next_hand()


def test_render_shows_hands_pile_in_order_melds_with_owners_and_scores():
    g = game(
        hands=["10C 2D", "2S 3S"],
        pile="AH KD",
        melds=[("7C 8C 9C", 1)],
        phase="play",
        totals=[40, 12],
    )
    g.apply("layoff 10C 0")
    text = str(g)
    assert "pile (bottom -> top): AH KD" in text
    assert "#0 run: 7C/P1 8C/P1 9C/P1 10C/P0" in text
    assert "P0 [2D]" in text and "total 40" in text and "hand score" in text


def test_render_for_a_viewer_hides_other_hands():
    from rummy500_env.engine.render import render

    g = game(hands=["10C 2D", "2S 3S"], pile="AH KD")
    text = render(g.position(), viewer=0)
    assert "P0 [10C 2D]" in text and "P1 [2 cards]" in text and "2S" not in text


def test_seeded_games_replay_identically():
    a, b = Game.new("standard", seed=42), Game.new("standard", seed=42)
    assert a.to_dict() == b.to_dict()
    assert Game.new("standard", seed=43).to_dict() != a.to_dict()


def test_seed_none_picks_a_seed_that_is_kept():
    g = Game.new("standard")
    assert Game.new("standard", seed=g.seed).to_dict() == g.to_dict()
