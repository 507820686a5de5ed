"""docs/rules.md §1 "Worked examples": each one played on the engine with exact numbers."""

from __future__ import annotations

import pytest

from rummy500_env import IllegalActionError
from tests.helpers import game, legal, play


def test_seed_000_worked_example_scores_plus_55_and_plus_42():
    """Seed 000: melded 87, caught holding A, K, 7 -> 87 - 32 = +55 (the seed's "+65" is an
    arithmetic slip); the opponent melded 42 and went out clean -> +42."""
    # P0 table: KC KD KH (30) + QC QD QH (30) + 8S 9S 10S (27) = 87; hand AS KS 7C (32).
    # P1 table: 2D..6D (20) + 5C 5H 5S (15) = 35; holds 7D, lays it off on its run: 42, out.
    g = game(
        hands=["AS KS 7C", "7D"],
        pile="4H",
        melds=[
            ("KC KD KH", 0),
            ("QC QD QH", 0),
            ("8S 9S 10S", 0),
            ("2D 3D 4D 5D 6D", 1),
            ("5C 5H 5S", 1),
        ],
        turn=1,
        phase="play",
    )
    g.apply("layoff 7D 3")
    assert g.phase == "hand_over"
    assert g.hand_scores() == [55, 42]
    assert g.totals == [55, 42]


def seed_003_game():
    # Three players, 7 cards each. Pile bottom -> top: 4C 9D KC 6H 2C (9D is 4th from the top).
    return game(
        rules={"players": 3},
        hands=["9S 9H 5D 7D QC JC 3H", "8S 8C 8D 10S JS QS 4S", "2D 3D 4D AC 7C 8H 10H"],
        pile="4C 9D KC 6H 2C",
        stock="KS",
    )


def test_seed_003_worked_example_dig_meld_and_score_36():
    """Seed 003: dig the 9D taking KC 6H 2C too; meld 999 (27) and J-Q-K clubs (30); discard
    2C; caught with 5D 7D 3H 6H (21) when an opponent goes out -> 57 - 21 = 36."""
    g = seed_003_game()
    assert "dig 9D" in legal(g)
    g.apply("dig 9D")
    assert g.to_dict()["hands"][0] == [
        "2C",
        "JC",
        "QC",
        "KC",
        "5D",
        "7D",
        "9D",
        "3H",
        "6H",
        "9H",
        "9S",
    ]
    assert g.to_dict()["pile"] == ["4C"]
    play(g, "meld 9S 9H 9D", "meld JC QC KC", "discard 2C")
    assert g.to_dict()["hands"][0] == ["5D", "7D", "3H", "6H"]
    # P1 draws KS and goes out: 888, 10-J-Q-K spades, discard 4S.
    play(g, "draw", "meld 8C 8D 8S", "meld 10S JS QS", "layoff KS 3", "discard 4S")
    assert g.phase == "hand_over"
    assert g.went_out == 1
    assert g.hand_scores()[0] == 57 - 21 == 36


def test_seed_003_ace_laid_off_low_on_opponents_run_adds_1():
    """Seed 003: an AH laid off on an opponent's 2H 3H 4H adds only 1 point."""
    g = game(hands=["AH 5C 9D", "7S 8C"], pile="KD", melds=[("2H 3H 4H", 1)], phase="play")
    before = g.table_points()[0]
    g.apply("layoff AH 0")
    assert g.table_points()[0] - before == 1
    assert g.melds[0].owners == (0, 1, 1, 1)


def test_seed_001_dig_takes_cards_above_and_obligation_blocks_discard():
    """Seed 001: pile 5C AH KS 3H QS 4D (4D on top), hand holds 3C 3D: digging the 3H takes
    QS and 4D too; the set 3H 3C 3D must be melded before any discard; QS 4D stay in hand."""
    g = game(
        rules="nordic",
        hands=[
            "3C 3D 7S 9C JD 2H 6C 8D 10H KC 5S 9S 6D",
            "AD 2S 4S 6S 8S 10S QC 2C 4C 7C 9H JH QH",
        ],
        pile="5C AH KS 3H QS 4D",
    )
    g.apply("dig 3H")
    assert g.to_dict()["pile"] == ["5C", "AH", "KS"]
    assert g.must_play is not None
    with pytest.raises(IllegalActionError, match="blocked until 3H"):
        g.apply("discard QS")
    g.apply("meld 3C 3D 3H")
    assert g.must_play is None
    hand = g.to_dict()["hands"][0]
    assert "QS" in hand and "4D" in hand
    g.apply("discard 4D")  # the old top card carries no obligation
    assert g.to_dict()["pile"][-1] == "4D"
