"""docs/rules.md §1 (default rules) and §3 (fine print): one test per rule, named after it."""

from __future__ import annotations

import pytest

from rummy500_env import Game, IllegalActionError, InvalidPositionError, Rules
from rummy500_env.engine.cards import parse_cards
from rummy500_env.engine.melds import meld_from_cards
from tests.helpers import game, legal, play

# --- cards and deal


def test_deal_two_players_13_cards_upcard_and_25_in_stock():
    g = Game.new("standard", seed=3)
    assert [len(g.hand(p)) for p in range(2)] == [13, 13]
    assert len(g.pile) == 1 and len(g.stock) == 52 - 26 - 1 == 25


def test_deal_three_or_more_players_7_cards_and_two_decks_from_five():
    g3 = Game.new(Rules(players=3), seed=1)
    assert [len(g3.hand(p)) for p in range(3)] == [7, 7, 7]
    g5 = Game.new(Rules(players=5), seed=1)
    total = sum(len(g5.hand(p)) for p in range(5)) + len(g5.pile) + len(g5.stock)
    assert total == 104


def test_non_dealer_plays_first_and_dealer_alternates():
    g = Game.new("standard", seed=0)
    assert g.dealer == 1 and g.current_player == 0
    g = game(hands=["5C", "2S"], pile="KD", phase="hand_over", dealer=1, hands_played=1)
    g.next_hand()
    assert g.dealer == 0 and g.current_player == 1
    g.apply("draw")
    assert g.current_player == 1


def test_deal_rotates_and_player_after_dealer_leads_with_three_players():
    g = game(
        rules={"players": 3},
        hands=["5C", "2S", ""],
        pile="KD",
        phase="hand_over",
        dealer=2,
        hands_played=1,
        rest=1,
    )
    g.next_hand()
    assert g.dealer == 0 and g.current_player == 1


def test_discard_pile_is_public_and_ordered():
    g = game(hands=["5C 9D", "2S 3S"], pile="AH KS", phase="play")
    g.apply("discard 9D")
    assert g.to_dict()["pile"] == ["AH", "KS", "9D"]


# --- a turn: draw


def test_draw_takes_the_top_of_the_stock():
    g = game(hands=["5C 9D", "2S 3S"], pile="AH", stock="QD")
    g.apply("draw")
    assert "QD" in g.to_dict()["hands"][0] and g.phase == "play"


def test_take_top_has_no_obligation_to_meld():
    g = game(hands=["5C 9D", "2S 3S"], pile="4H KS")
    g.apply("take")
    assert g.must_play is None
    assert "discard 5C" in legal(g)


def test_take_top_then_discard_same_card_is_illegal():
    g = game(hands=["5C 9D", "2S 3S"], pile="4H KS")
    g.apply("take")
    assert "discard KS" not in legal(g)
    with pytest.raises(IllegalActionError, match="taken from the top of the pile"):
        g.apply("discard KS")


def test_take_top_then_discard_same_card_is_legal_as_last_card_and_goes_out():
    # P0 holds 5C 6C 7C; takes KS, melds the run, and discards KS, its last card.
    g = game(hands=["5C 6C 7C", "2S 3S"], pile="4H KS")
    play(g, "take", "meld 5C 6C 7C")
    assert legal(g) == ["discard KS"]
    g.apply("discard KS")
    assert g.phase == "hand_over" and g.went_out == 0


def test_dig_is_legal_only_if_buried_card_can_reach_the_table_at_once():
    # Pile bottom->top: 9D 2C. Hand 9S 9H makes 9D meldable; 2C fits nothing.
    g = game(hands=["9S 9H 5C", "2S 3S"], pile="9D QH 2C")
    assert "dig 9D" in legal(g)
    assert "dig QH" not in legal(g)


def test_dig_may_use_the_cards_taken_above_the_buried_card():
    # 6H is buried under 7H 8H: the taken cards complete 6H 7H 8H.
    g = game(hands=["2C 9D", "2S 3S"], pile="6H 7H 8H")
    assert "dig 6H" in legal(g)
    g.apply("dig 6H")
    assert "meld 6H 7H 8H" in legal(g)


def test_dig_may_lay_the_buried_card_off_on_any_meld_on_the_table():
    # 10C is buried; it fits the opponent's 7C 8C 9C.
    g = game(hands=["2D 5S", "2S 3S"], pile="10C KD", melds=[("7C 8C 9C", 1)])
    assert "dig 10C" in legal(g)
    g.apply("dig 10C")
    assert legal(g) == ["layoff 10C 0"]


def test_dig_that_cannot_be_satisfied_is_never_offered_and_is_rejected():
    g = game(hands=["2D 5S", "2S 3S"], pile="10C KD")
    assert "dig 10C" not in legal(g)
    with pytest.raises(IllegalActionError, match="can go on the table at once"):
        g.apply("dig 10C")


def test_dig_buried_card_must_be_first_thing_put_down_not_after_making_room():
    """docs/rules.md §3: laying another card off first to make room does not count."""
    # Table 5H 6H 7H takes 4H or 8H. Hand 8H; buried 9H could follow only after 8H is laid off.
    g = game(hands=["8H 2C", "2S 3S"], pile="9H KD", melds=[("5H 6H 7H", 1)])
    assert "dig 9H" not in legal(g)


def test_dig_obligation_blocks_discard_until_buried_card_is_on_table():
    g = game(hands=["9S 9H 5C KC QC", "2S 3S"], pile="9D 2C")
    g.apply("dig 9D")
    assert not [a for a in legal(g) if a.startswith("discard")]
    with pytest.raises(IllegalActionError, match="discarding is blocked until 9D is on the table"):
        g.apply("discard 5C")


def test_dig_obligation_every_meld_must_include_buried_card():
    g = game(hands=["9S 9H JC QC", "2S 3S"], pile="9D KC 2C")
    g.apply("dig 9D")
    assert "meld JC QC KC" not in legal(g)
    with pytest.raises(IllegalActionError, match="must include 9D"):
        g.apply("meld JC QC KC")
    g.apply("meld 9D 9H 9S")
    assert "meld JC QC KC" in legal(g)


def test_dig_obligation_lay_off_of_another_card_is_illegal():
    g = game(hands=["9S 9H 10C", "2S 3S"], pile="9D 2C", melds=[("7C 8C 9C", 1)])
    g.apply("dig 9D")
    with pytest.raises(IllegalActionError, match="lay off 9D first"):
        g.apply("layoff 10C 0")


def test_dig_other_taken_cards_carry_no_obligation_even_the_old_top():
    g = game(hands=["9S 9H 5C", "2S 3S"], pile="9D KC 2C")
    play(g, "dig 9D", "meld 9D 9H 9S")
    assert "discard 2C" in legal(g) and "discard KC" in legal(g)


def test_dig_taking_the_whole_pile_when_bottom_card_fits():
    g = game(hands=["9S 9H 5C", "2S 3S"], pile="9D KC QD 2C")
    g.apply("dig 9D")
    assert g.pile == []


# --- play: melds and lay-offs


def test_meld_set_of_three_or_four_different_suits():
    assert meld_from_cards(parse_cards("9S 9H 9D"), (0, 0, 0)) is not None
    assert meld_from_cards(parse_cards("9S 9H 9D 9C"), (0,) * 4) is not None
    assert meld_from_cards(parse_cards("9S 9H"), (0, 0)) is None


def test_meld_run_three_or_more_consecutive_one_suit():
    assert meld_from_cards(parse_cards("4H 5H 6H 7H"), (0,) * 4) is not None
    assert meld_from_cards(parse_cards("4H 5H 7H"), (0,) * 3) is None
    assert meld_from_cards(parse_cards("4H 5H 6D"), (0,) * 3) is None


def test_ace_low_or_high_in_a_run_never_both_and_no_wrap():
    assert meld_from_cards(parse_cards("AC 2C 3C"), (0,) * 3) is not None
    assert meld_from_cards(parse_cards("QC KC AC"), (0,) * 3) is not None
    assert meld_from_cards(parse_cards("KC AC 2C"), (0,) * 3) is None


def test_king_of_one_suit_and_ace_of_the_next_never_form_a_run():
    # KC is id 12 and AD id 13: adjacent ids, different suits.
    assert meld_from_cards(parse_cards("QC KC AD"), (0,) * 3) is None
    assert meld_from_cards(parse_cards("KC AD 2D"), (0,) * 3) is None


def test_longer_meld_is_accepted_by_apply():
    g = game(hands=["4H 5H 6H 7H 2C", "2S 3S"], pile="KD", phase="play")
    assert "meld 4H 5H 6H" in legal(g)  # listed in three-card form
    g.apply("meld 4H 5H 6H 7H")
    assert g.to_dict()["melds"] == [{"cards": ["4H", "5H", "6H", "7H"], "owners": [0] * 4}]


def test_lay_off_on_an_opponents_meld_scores_for_the_player_who_lays_it():
    g = game(hands=["10C 2D", "2S 3S"], pile="KD", melds=[("7C 8C 9C", 1)], phase="play")
    g.apply("layoff 10C 0")
    assert g.melds[0].owners == (1, 1, 1, 0)
    assert g.table_points() == [10, 24]


def test_lay_off_allowed_on_the_very_first_turn_without_own_meld():
    g = Game.from_dict(
        {**game(hands=["10C 2D 3D", "2S 3S"], pile="KD", melds=[("7C 8C 9C", 1)]).to_dict()}
    )
    g.apply("draw")
    assert "layoff 10C 0" in legal(g)


def test_lay_off_card_fitting_two_melds_goes_where_the_action_says():
    """10C fits 7C 8C 9C and 10D 10H 10S: both lay-offs are offered and each does as named."""
    g = game(
        hands=["10C 2D", "2S 3S"],
        pile="KD",
        melds=[("7C 8C 9C", 1), ("10D 10H 10S", 1)],
        phase="play",
    )
    assert {"layoff 10C 0", "layoff 10C 1"} <= set(legal(g))
    g1 = g.copy()
    g1.apply("layoff 10C 0")
    assert len(g1.melds[0].cards) == 4 and len(g1.melds[1].cards) == 3
    g.apply("layoff 10C 1")
    assert len(g.melds[0].cards) == 3 and len(g.melds[1].cards) == 4


def test_lay_off_extends_a_run_at_either_end():
    g = game(hands=["4C 8C 2D", "2S 3S"], pile="KD", melds=[("5C 6C 7C", 1)], phase="play")
    play(g, "layoff 4C 0", "layoff 8C 0")
    assert g.to_dict()["melds"][0]["cards"] == ["4C", "5C", "6C", "7C", "8C"]
    assert g.melds[0].owners == (0, 1, 1, 1, 0)


def test_sets_cap_at_four_distinct_suits_duplicate_suit_never_joins():
    two = {"players": 2, "decks": 2}
    g = game(
        rules=two, hands=["9S 9C 2D", "2S 3S"], pile="KD", melds=[("9D 9H 9S", 1)], phase="play"
    )
    assert "layoff 9S 0" not in legal(g)
    with pytest.raises(IllegalActionError, match="does not fit"):
        g.apply("layoff 9S 0")
    g.apply("layoff 9C 0")
    assert g.melds[0].fits == ()  # four suits: the set is full


def test_two_identical_cards_never_in_one_run():
    assert meld_from_cards(parse_cards("5H 5H 6H"), (0,) * 3) is None


# --- going out and the end of a hand


def test_going_out_by_melding_the_last_cards_needs_no_discard():
    g = game(hands=["5C 6C 7C", "2S 3S"], pile="KD", phase="play")
    g.apply("meld 5C 6C 7C")
    assert g.phase == "hand_over" and g.went_out == 0


def test_going_out_by_laying_off_the_last_card():
    g = game(hands=["8C", "2S 3S"], pile="KD", melds=[("5C 6C 7C", 1)], phase="play")
    g.apply("layoff 8C 0")
    assert g.phase == "hand_over"


def test_going_out_by_discarding_the_last_card():
    g = game(hands=["8C", "2S 3S"], pile="KD", phase="play")
    g.apply("discard 8C")
    assert g.phase == "hand_over" and g.hand_scores() == [0, -5]


def test_stock_empty_player_may_still_take_from_pile_or_decline():
    g = game(hands=["9S 9H 5C", "2S 3S"], pile="9D KC", stock="", rest=1)
    assert legal(g) == ["take", "dig 9D", "decline"]


def test_stock_empty_hand_ends_when_player_declines():
    g = game(hands=["9S 9H 5C", "2S 3S"], pile="9D KC", stock="", rest=1)
    g.apply("decline")
    assert g.phase == "hand_over" and g.went_out is None


def test_stock_is_never_reshuffled():
    g = game(hands=["9S 4H 5C", "2S 3S"], pile="9D KC", stock="", rest=1)
    play(g, "take", "discard 5C")
    assert g.stock == [] and g.phase == "draw"
    with pytest.raises(IllegalActionError, match="stock is empty"):
        g.apply("draw")


def test_hand_can_end_with_stock_and_pile_both_empty():
    # P0 takes the whole pile (bottom 9D fits 9S 9H) and melds everything: out, nothing left.
    g = game(hands=["9S 9H", "2S 3S"], pile="9D 10D JD QD", stock="", rest=1)
    play(g, "dig 9D", "meld 9D 9H 9S", "meld 10D JD QD")
    assert g.phase == "hand_over" and g.pile == [] and g.stock == []


def test_a_call_that_empties_the_pile_with_the_stock_empty_ends_the_hand():
    """§1: the hand ends when the player to act declines, or the pile is empty too; only a
    call (§5) can leave it empty at a turn's start."""
    g = game(
        rules={"rummy_calls": True},
        hands=["5C 2H 4D", "9S 9H 3S"],
        pile="9D",
        stock="",
        phase="play",
        rest=0,
    )
    play(g, "discard 5C", "call 9D", "meld 9D 9H 9S", "done")
    assert g.phase == "hand_over" and g.went_out is None and g.pile == g.stock == []


def test_a_position_with_the_stock_and_pile_empty_at_the_draw_is_refused():
    with pytest.raises(InvalidPositionError, match="stock and the pile are both empty"):
        game(hands=["9S 9H", "2S 3S"], pile="", stock="", rest=1)


# --- scoring


def test_pip_values_on_table_and_in_hand():
    g = game(
        hands=["AS 10D KH 2C", "3S"],
        pile="KD",
        melds=[("2H 3H 4H", 0), ("JC QC KC", 0), ("7D 8D 9D", 1)],
        phase="hand_over",
        hands_played=1,
    )
    assert g.hand_scores() == [9 + 30 - (15 + 10 + 10 + 2), 24 - 3]


def test_ace_in_a_set_scores_15():
    g = game(
        hands=["2C", "3S"], pile="KD", melds=[("AC AD AH", 0)], phase="hand_over", hands_played=1
    )
    assert g.hand_scores()[0] == 45 - 2


def test_ace_high_in_a_run_scores_15_and_low_scores_1():
    g = game(
        hands=["", "3S"],
        pile="KD",
        melds=[("QC KC AC", 0), ("AD 2D 3D", 0)],
        phase="hand_over",
        hands_played=1,
    )
    assert g.hand_scores()[0] == 35 + 6


def test_ace_in_a_13_card_full_suit_run_scores_15():
    run = "AH 2H 3H 4H 5H 6H 7H 8H 9H 10H JH QH KH"
    g = game(hands=["", "3S"], pile="KD", melds=[(run, 0)], phase="hand_over", hands_played=1)
    assert g.hand_scores()[0] == 15 + sum(range(2, 11)) + 30


def test_ace_value_is_read_from_the_final_table():
    """An ace low in A..Q scores 1 until the K completes the suit, then 15."""
    g = game(
        hands=["KH 2C", "3S"],
        pile="KD",
        melds=[("AH 2H 3H 4H 5H 6H 7H 8H 9H 10H JH QH", 1)],
        phase="play",
    )
    assert g.table_points()[1] == 1 + sum(range(2, 11)) + 20
    g.apply("layoff KH 0")
    assert g.table_points()[1] == 15 + sum(range(2, 11)) + 20


def test_ace_laid_off_on_2_to_k_goes_high_and_scores_15():
    g = game(
        hands=["AH 2C", "3S"],
        pile="KD",
        melds=[("2H 3H 4H 5H 6H 7H 8H 9H 10H JH QH KH", 1)],
        phase="play",
    )
    assert legal(g).count("layoff AH 0") == 1
    g.apply("layoff AH 0")
    assert g.table_points()[0] == 15


def test_ace_left_in_hand_costs_15():
    g = game(hands=["AD", "3S"], pile="KD", phase="hand_over", hands_played=1)
    assert g.hand_scores() == [-15, -3]


def test_hand_score_is_table_minus_hand_and_may_be_negative():
    g = game(
        hands=["KS QS", "3S"], pile="KD", melds=[("2H 3H 4H", 0)], phase="hand_over", hands_played=1
    )
    assert g.hand_scores()[0] == 9 - 20 == -11


def test_game_ends_when_a_total_reaches_500_highest_wins():
    g = game(hands=["5C 6C 7C", "2S"], pile="KD", phase="play", totals=[495, 480])
    g.apply("meld 5C 6C 7C")
    assert g.totals == [513, 478]
    assert g.phase == "game_over" and g.winner == 0


def test_game_goes_on_below_the_target():
    g = game(hands=["8C", "2S 3S"], pile="KD", phase="play", totals=[495, 499])
    g.apply("discard 8C")
    assert g.totals == [495, 494]
    assert g.phase == "hand_over" and g.winner is None


def test_game_over_highest_total_wins_when_two_pass_500():
    g = game(hands=["5C 6C 7C", "2S"], pile="KD", phase="play", totals=[480, 505])
    g.apply("meld 5C 6C 7C")  # P0 480 + 18 = 498; P1 505 - 2 = 503
    assert g.totals == [498, 503]
    assert g.phase == "game_over" and g.winner == 1


def test_next_hand_refused_after_game_over():
    """Once the game is over no further hand is dealt: `next_hand()` raises, says why, and
    leaves the final position as it was."""
    g = game(hands=["5C 6C 7C", "2S"], pile="KD", phase="play", totals=[495, 480])
    g.apply("meld 5C 6C 7C")
    final = g.to_dict()
    assert (final["phase"], g.winner) == ("game_over", 0)
    with pytest.raises(IllegalActionError, match=r"phase is 'game_over' \(the game is over\)"):
        g.next_hand()
    assert g.to_dict() == final and g.totals == [513, 478]


def test_tie_for_the_lead_at_the_target_plays_on():
    g = game(hands=["5C 6C 7C", "2S"], pile="KD", phase="play", totals=[492, 512])
    g.apply("meld 5C 6C 7C")  # 492 + 18 = 510, 512 - 2 = 510
    assert g.totals == [510, 510]
    assert g.phase == "hand_over" and g.winner is None
    g.next_hand()
    assert g.totals == [510, 510] and g.phase == "draw"


# --- fine print


def test_nothing_is_ever_lost_cards_are_conserved_through_a_dig():
    g = game(hands=["9S 9H 5C", "2S 3S"], pile="9D KC 2C")
    before = sorted(c for p in range(2) for c in g.hand(p)) + sorted(g.pile)
    g.apply("dig 9D")
    after = sorted(c for p in range(2) for c in g.hand(p)) + sorted(g.pile)
    assert sorted(before) == sorted(after)


def test_known_cards_are_pile_pickups_not_yet_played():
    g = game(hands=["9S 9H 5C", "2S 3S"], pile="9D KC 2C")
    g.apply("dig 9D")
    assert g.to_dict()["known"][0] == ["2C", "KC", "9D"]
    play(g, "meld 9D 9H 9S", "discard 2C")
    assert g.to_dict()["known"][0] == ["KC"]
