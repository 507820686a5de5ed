"""docs/rules.md §3 (fine print and the engine's own clarifications) and the order of
`legal_actions()` (§6): one test per point, named after it."""

from __future__ import annotations

import pytest

from rummy500_env import IllegalActionError
from tests.helpers import game, legal, play

FULL_HEARTS = "AH 2H 3H 4H 5H 6H 7H 8H 9H 10H JH QH KH"


@pytest.mark.parametrize(
    ("rules", "rest", "without_take"),
    [
        ({"discard_to_go_out": True, "top_card_must_meld": True}, "stock", "draw"),
        ({"discard_to_go_out": True, "stock_out": "pile_must_use"}, 1, "decline"),
    ],
    ids=["top_card_must_meld", "pile_must_use_stock_empty"],
)
def test_discard_to_go_out_obligated_take_legal_only_if_top_card_goes_down_leaving_a_card(
    rules, rest, without_take
):
    """Under `discard_to_go_out` a take that binds the player to put the top card down is
    offered only if it can go down and still leave a card to discard. The unplayed cards lie
    in the stock (`top_card_must_meld`) or in P1's hand (`pile_must_use`, stock empty)."""
    # Pile KC 9D (top 9D). With 9S 9H the only way down is 9D 9H 9S, which empties the hand.
    g = game(rules=rules, hands=["9S 9H", "2S 3S"], pile="KC 9D", rest=rest)
    assert legal(g) == [without_take]
    with pytest.raises(IllegalActionError, match="could not go on the table at once"):
        g.apply("take")
    # With 4C as well, the meld leaves 4C to discard: the take is offered and binds.
    g = game(rules=rules, hands=["9S 9H 4C", "2S 3S"], pile="KC 9D", rest=rest)
    assert "take" in legal(g)
    g.apply("take")
    assert legal(g) == ["meld 9D 9H 9S"]
    g.apply("meld 9D 9H 9S")
    assert legal(g) == ["discard 4C"]


def test_full_13_card_run_is_closed_to_lay_offs():
    """A run of all thirteen ranks takes no more cards: with two packs, once the first AH has
    completed 2H..KH, the second AH fits neither end."""
    # Table: #0 2H..KH (P1).  P0 holds AH AH 5C.
    g = game(
        rules={"decks": 2},
        hands=["AH AH 5C", "2S 3S"],
        pile="KD",
        melds=[("2H 3H 4H 5H 6H 7H 8H 9H 10H JH QH KH", 1)],
        phase="play",
    )
    assert legal(g) == ["layoff AH 0", "discard 5C", "discard AH"]
    g.apply("layoff AH 0")
    assert g.to_dict()["melds"][0]["cards"] == [*FULL_HEARTS.split()[1:], "AH"]
    assert g.melds[0].fits == ()
    assert legal(g) == ["discard 5C", "discard AH"]
    with pytest.raises(IllegalActionError, match="does not fit meld #0"):
        g.apply("layoff AH 0")


def test_legal_actions_play_step_order_melds_then_lay_offs_then_discards():
    """In the play step `legal_actions()` lists the melds, then the lay-offs, then the
    discards, whatever the cards: 6C sorts first by card but its lay-off comes after the meld."""
    # Table: #0 7C 8C 9C (P1).  P0 holds 6C 9D 9H 9S 2D.
    g = game(hands=["6C 9D 9H 9S 2D", "2S 3S"], pile="KD", melds=[("7C 8C 9C", 1)], phase="play")
    assert legal(g) == [
        "meld 9D 9H 9S",
        "layoff 6C 0",
        "discard 6C",
        "discard 2D",
        "discard 9D",
        "discard 9H",
        "discard 9S",
    ]
    play(g, "meld 9D 9H 9S")
    assert legal(g) == ["layoff 6C 0", "discard 6C", "discard 2D"]
