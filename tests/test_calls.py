"""docs/rules.md §5, "Rummy!" calls (`rummy_calls=True`): one test per rule and example.

Most positions have three players: player 0 is to play and discards; players 1 and 2 may
call, in that order (the discarder's left first).
"""

from __future__ import annotations

import pytest

from rummy500_env import Action, Game, IllegalActionError, InvalidPositionError, Rules
from rummy500_env.engine.cards import JOKER, parse_card
from tests.helpers import game, legal, play

CALLS = {"rummy_calls": True}


def cgame(**kwargs: object) -> Game:
    """A game under `rummy_calls=True`, three players unless `rules` says otherwise."""
    rules = {"players": 3, **CALLS, **kwargs.pop("rules", {})}  # type: ignore[dict-item]
    return game(rules=rules, **kwargs)


# --- when the window opens


def test_call_window_opens_after_a_discard_before_the_next_draw():
    #  P0 discards 9D onto 5C; P1 holds 9S 9H and may call it before P2... P1 draws.
    g = cgame(hands=["9D 2C 3C", "9S 9H 4D", "KS QS"], pile="5C", phase="play")
    g.apply("discard 9D")
    assert (g.phase, g.current_player, g.discarder) == ("call", 1, 0)
    assert legal(g) == ["call 9D", "pass"]
    assert g.to_dict()["discarder"] == 0


def test_no_window_when_the_discard_goes_out():
    g = cgame(hands=["9D", "9S 9H 4D", "KS QS"], pile="5C", phase="play")
    g.apply("discard 9D")
    assert g.phase in ("hand_over", "game_over") and g.went_out == 0


def test_no_window_when_the_stock_is_empty_under_ends_hand():
    g = cgame(
        rules={"stock_out": "ends_hand"},
        hands=["9D 2C", "9S 9H 4D", "KS QS"],
        pile="5C",
        phase="play",
        rest="pile",
    )
    assert g.stock == []
    g.apply("discard 9D")
    assert g.phase in ("hand_over", "game_over") and g.went_out is None


def test_no_window_when_the_turn_limit_is_reached():
    g = cgame(
        rules={"turn_limit": 10},
        hands=["9D 2C", "9S 9H 4D", "KS QS"],
        pile="5C",
        phase="play",
        turns=9,
    )
    g.apply("discard 9D")
    assert g.phase in ("hand_over", "game_over")


def test_calls_do_not_count_as_turns():
    """Our clarification: `turn_limit` counts the normal turns; a caller's play is none."""
    g = cgame(hands=["9D 2C 3C", "9S 9H 4D", "KS QS"], pile="5C", phase="play")
    play(g, "discard 9D", "call 9D", "meld 9D 9H 9S", "done")
    assert g.turns == 1 and (g.phase, g.current_player) == ("draw", 1)


# --- who is asked, and for what


def test_callers_are_asked_in_seat_order_from_the_discarders_left():
    #  4 players, P2 discards 9D: P3 is asked first, then P0, then P1; never P2.
    g = cgame(
        rules={"players": 4},
        hands=["9S 9H 5H", "9C 8D 10D", "9D 2D 3D", "KC 4S"],
        pile="5C",
        phase="play",
        turn=2,
    )
    g.apply("discard 9D")
    assert (g.phase, g.current_player) == ("call", 0)  # P3 has no call: not asked
    g.apply("pass")
    assert (g.phase, g.current_player) == ("call", 1)
    g.apply("pass")
    assert (g.phase, g.current_player, g.discarder) == ("draw", 3, None)


def test_the_discarder_is_never_asked():
    g = cgame(hands=["9S 9H 9D 2C", "4D", "KS QS"], pile="5C", phase="play")
    g.apply("discard 9D")  # P0 could meld 9D with 9S 9H, but discarded it
    assert g.phase == "draw" and g.current_player == 1


def test_a_call_may_name_the_top_card_or_a_buried_one_it_could_put_down_at_once():
    g = cgame(hands=["KD 2C", "9S 9H 4D", "7C 8C"], pile="5C 9C 6C", phase="play")
    g.apply("discard KD")
    assert legal(g) == ["call 9C", "pass"]  # P1: 9C with 9S 9H, buried under 6C and KD
    g.apply("pass")
    # P2 with 7C 8C: 6C (6-7-8), 9C (7-8-9), 5C (the whole pile: 5-6-7-8); not the top KD
    assert legal(g) == ["call 6C", "call 9C", "call 5C", "pass"]
    with pytest.raises(IllegalActionError, match="can go on the table at once"):
        g.apply("call KD")


def test_a_call_may_use_the_cards_taken_above_it_and_lay_off_on_the_table():
    g = cgame(
        hands=["KD 2C", "4H 3S", "JH QH"],
        pile="5C 10D 9S KH",
        melds=[("6S 7S 8S", 0)],
        phase="play",
    )
    g.apply("discard KD")
    assert legal(g) == ["call 9S", "pass"]  # P1 lays 9S off on the run
    g.apply("pass")
    assert legal(g) == ["call KH", "call 9S", "pass"]  # KH with JH QH; 9S laid off


def test_players_with_no_legal_call_are_not_asked():
    g = cgame(hands=["9D 2C 3C", "4D 5S", "9S 9H"], pile="KC", phase="play")
    g.apply("discard 9D")
    assert (g.phase, g.current_player) == ("call", 2)


def test_when_no_one_may_call_no_decision_is_asked():
    g = cgame(hands=["9D 2C 3C", "4D 5S", "KS QH"], pile="KC", phase="play")
    g.apply("discard 9D")
    assert (g.phase, g.current_player) == ("draw", 1)


def test_a_player_who_passes_is_not_asked_again_in_that_window():
    g = cgame(hands=["9D 2C 3C", "9S 9H", "8D 10D 4C"], pile="KC", phase="play")
    g.apply("discard 9D")
    g.apply("pass")  # P1
    g.apply("pass")  # P2
    assert (g.phase, g.current_player) == ("draw", 1)  # P1 draws; no one is asked again


def test_the_first_to_call_takes_it_and_the_window_closes():
    g = cgame(hands=["9D 2C 3C", "9S 9H 4D", "9C 8C"], pile="KC", phase="play")
    g.apply("discard 9D")
    g.apply("call 9D")  # P1 calls first: P2, who could too, is never asked
    play(g, "meld 9D 9H 9S", "done")
    assert (g.phase, g.current_player) == ("draw", 1)
    assert g.pile == [parse_card("KC")]


# --- the caller's play


def test_the_caller_takes_the_card_and_all_above_it_with_the_obligation():
    g = cgame(hands=["KD 2C", "9S 9H 4D", "7C"], pile="5C 9C 6C", phase="play")
    g.apply("discard KD")
    g.apply("call 9C")
    assert (g.phase, g.current_player, g.must_play) == ("called", 1, parse_card("9C"))
    assert g.pile == [parse_card("5C")]
    assert sorted(g.known(1)) == sorted(parse_card(c) for c in "9C KD 6C".split())
    assert legal(g) == ["meld 9C 9H 9S"]  # the called card first: no other play, no done
    with pytest.raises(IllegalActionError, match="must go on the table before done"):
        g.apply("done")


def test_the_caller_plays_on_then_done_and_never_discards():
    g = cgame(hands=["KD 2C", "9S 9H 4D 5D", "7C"], pile="5C 6D 6C", phase="play")
    g.apply("discard KD")
    g.apply("call 6D")
    g.apply("meld 4D 5D 6D")
    assert legal(g) == ["done"]  # no discard in a caller's play
    with pytest.raises(IllegalActionError, match="never a discard"):
        g.apply("discard 9S")
    g.apply("done")
    assert (g.phase, g.current_player) == ("draw", 1)


def test_a_caller_who_empties_the_hand_goes_out_and_the_hand_ends():
    g = cgame(hands=["KD 2C", "9S 9H", "7C 8D"], pile="5C 9D", phase="play")
    g.apply("discard KD")
    g.apply("pass")  # P1 passes on 9D (buried): P2 has nothing, so the window closes
    assert g.phase == "draw"
    g = cgame(hands=["9D 2C", "9S 9H", "7C 8D"], pile="5C", phase="play")
    g.apply("discard 9D")
    play(g, "call 9D", "meld 9D 9H 9S")
    assert g.phase in ("hand_over", "game_over") and g.went_out == 1


def test_with_discard_to_go_out_a_call_must_leave_a_card():
    g = cgame(
        rules={"discard_to_go_out": True},
        hands=["9D 2C", "9S 9H", "8D 10D 4H"],
        pile="5C",
        phase="play",
    )
    g.apply("discard 9D")
    assert g.current_player == 2  # P1 would empty the hand: no legal call, not asked
    play(g, "call 9D", "meld 8D 9D 10D")
    assert legal(g) == ["done"] and g.hand(2) == [parse_card("4H")]


def test_play_resumes_with_the_discarders_left_neighbour_whoever_called():
    g = cgame(hands=["9D 2C 3C", "4D 5S", "9S 9H 2H"], pile="KC", phase="play")
    play(g, "discard 9D", "call 9D", "meld 9D 9H 9S", "done")
    assert (g.phase, g.current_player) == ("draw", 1)


def test_a_caller_who_is_the_next_player_still_takes_the_normal_turn():
    g = cgame(hands=["9D 2C 3C", "9S 9H 2H", "4D"], pile="KC", phase="play")
    play(g, "discard 9D", "call 9D", "meld 9D 9H 9S", "done")
    assert (g.phase, g.current_player) == ("draw", 1) and g.hand(1) == [parse_card("2H")]
    g.apply("draw")
    assert g.phase == "play"


# --- notation


def test_call_notation_call_9d_names_the_copy_nearest_the_top_call_9d_2_the_next():
    g = cgame(
        rules={"decks": 2, "players": 3},
        hands=["KD 2C", "9S 9H 4D", "3S"],
        pile="9D 5C 9D 6C",
        phase="play",
    )
    g.apply("discard KD")
    assert legal(g)[:2] == ["call 9D", "call 9D#2"]
    near, far = g.copy(), g.copy()
    near.apply("call 9D")
    assert near.pile == [parse_card(c) for c in "9D 5C".split()]
    far.apply("call 9D#2")
    assert far.pile == []
    top = cgame(
        rules={"decks": 2, "players": 3},
        hands=["9D 2C", "9S 9H 4D", "3S"],
        pile="9D 5C",
        phase="play",
    )
    top.apply("discard 9D")
    assert legal(top)[:2] == ["call 9D", "call 9D#2"]  # the top card is copy 1
    top.apply("call 9D")
    assert top.pile == [parse_card(c) for c in "9D 5C".split()]


@pytest.mark.parametrize("text", ["call 9D", "call 9D#2", "call JK", "call JK#3", "pass", "done"])
def test_call_pass_done_notation_round_trips(text):
    a = Action.parse(text)
    assert str(a) == text and eval(repr(a), {"Action": Action}) == a


# --- positions


def test_positions_in_a_call_window_round_trip_and_are_checked():
    g = cgame(hands=["9D 2C 3C", "9S 9H 4D", "KS QS"], pile="5C", phase="play")
    g.apply("discard 9D")
    d = g.to_dict()
    assert d["phase"] == "call" and d["discarder"] == 0
    assert Game.from_dict(d).to_dict() == d
    g.apply("call 9D")
    d = g.to_dict()
    assert d["phase"] == "called" and d["must_play"] == "9D"
    assert Game.from_dict(d).to_dict() == d
    for change, words in [
        ({"discarder": None}, "needs discarder"),
        ({"discarder": 1}, "may not call on that discard"),
        ({"phase": "draw", "must_play": None}, "discarder must be null"),
    ]:
        with pytest.raises(InvalidPositionError, match=words):
            Game.from_dict(d | change)
    plain = game(hands=["9D 2C 3C", "9S 9H 4D"], pile="5C").to_dict()
    with pytest.raises(InvalidPositionError, match="needs rummy_calls=True"):
        Game.from_dict(plain | {"phase": "call", "discarder": 0, "turn": 1})


def test_positions_without_calls_keep_their_keys():
    assert "discarder" not in Game.new("standard", seed=1).to_dict()
    assert Game.new(Rules(**CALLS), seed=1).to_dict()["discarder"] is None


def test_a_position_asking_a_player_without_a_call_offers_only_pass():
    g = cgame(hands=["2C 3C", "4D 5S", "KS QS"], pile="9D", phase="call", discarder=0, turn=1)
    assert legal(g) == ["pass"]


def test_calls_with_jokers_a_joker_may_be_called_and_is_owed():
    g = game(
        rules={"players": 3, "jokers": 2, "rummy_calls": True},
        hands=["JK 2C 3C", "9S 9H 4D", "KS QS"],
        pile="5C",
        phase="play",
    )
    g.apply("discard JK")
    assert legal(g) == ["call JK", "pass"]
    g.apply("call JK")
    assert g.must_play == JOKER and legal(g) == ["meld JK=9C 9H 9S", "meld JK=9D 9H 9S"]
