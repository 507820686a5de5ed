"""Card and action notation: every form round trips; bad text raises the right error."""

from __future__ import annotations

import pytest

from rummy500_env import Action, ActionParseError
from rummy500_env.engine.cards import JOKER, CardParseError, card_str, parse_card, parse_cards

RANK_FORMS = {0: ["A", "a"], 9: ["10", "T", "t"], 10: ["J"], 11: ["q"], 12: ["K"]}
SUIT_FORMS = {0: ["C", "c", "♣"], 1: ["D", "♦"], 2: ["H", "h", "♥"], 3: ["S", "♠"]}


def test_card_ids_are_suit_major_clubs_diamonds_hearts_spades():
    assert [card_str(c) for c in (0, 12, 13, 26, 39, 51)] == ["AC", "KC", "AD", "AH", "AS", "KS"]


@pytest.mark.parametrize("card", range(52))
def test_every_card_round_trips_in_every_form(card):
    assert parse_card(card_str(card)) == card
    rank, suit = card % 13, card // 13
    for r in RANK_FORMS.get(rank, [str(rank + 1)]):
        for s in SUIT_FORMS[suit]:
            assert parse_card(r + s) == card


def test_joker_text():
    assert parse_card("jk") == JOKER and card_str(JOKER) == "JK"


@pytest.mark.parametrize(
    "text", ["", "1H", "11H", "ZZ", "10", "AX", "10HH", "QQ", "♥", "HH", "1♥0"]
)
def test_bad_card_text_raises_quoting_it(text):
    with pytest.raises(CardParseError, match="not a card"):
        parse_card(text)


def test_parse_cards_accepts_spaces_and_commas():
    assert parse_cards("AS, 10h ♠K") == [39, 35, 51]


@pytest.mark.parametrize(
    "text",
    [
        "draw",
        "take",
        "decline",
        "dig 9D",
        "dig 9D#2",
        "meld 9D 9H 9S",
        "meld QC KC AC",
        "meld AC 2C 3C",
        "layoff 10C 2",
        "discard 2C",
    ],
)
def test_canonical_action_text_round_trips(text):
    a = Action.parse(text)
    assert str(a) == text
    assert Action.parse(str(a)) == a
    assert eval(repr(a), {"Action": Action}) == a  # repr rebuilds it


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("DRAW", "draw"),
        ("Dig t♦", "dig 10D"),
        ("dig 9d#1", "dig 9D"),
        ("meld 9S 9H 9D", "meld 9D 9H 9S"),
        ("meld kc ac qc", "meld QC KC AC"),
        ("meld 3c,ac,2c", "meld AC 2C 3C"),
        ("LAYOFF ♣10 0", "layoff 10C 0"),
        ("discard ♦4", "discard 4D"),
        ("discard 2♣", "discard 2C"),
    ],
)
def test_liberal_action_forms_parse_to_canonical_text(text, canonical):
    assert str(Action.parse(text)) == canonical


@pytest.mark.parametrize(
    "text",
    [
        "",
        "fly",
        "draw 2C",
        "dig",
        "dig 9D 9H",
        "dig 9D#3",
        "meld 9S 9H",
        "layoff 10C",
        "layoff 10C x",
        "discard",
        "discard ZZ",
        "take top",
    ],
)
def test_malformed_action_text_raises_action_parse_error(text):
    with pytest.raises(ActionParseError):
        Action.parse(text)


@pytest.mark.parametrize(
    "text",
    ["layoff 9D ²", "layoff 9D ٣", "layoff 9D ３", "layoff JK=9D ³", "layoff 9D " + "9" * 5000],
    ids=["superscript", "arabic-indic", "fullwidth", "joker-superscript", "huge"],
)
def test_a_meld_number_is_ascii_digits_only(text):
    """Issue 20: ``str.isdigit`` let ``²`` through to ``int`` (a bare ValueError, a 500 on the
    play server) and read ``٣`` as meld 3."""
    with pytest.raises(ActionParseError, match="in the digits 0-9"):
        Action.parse(text)


@pytest.mark.parametrize(
    "text", ["dig 9D#²", "dig 9D#٢", "call 9D#２", "１０H", "discard ٣H", "meld 9S 9H 9D ٣"]
)
def test_other_non_ascii_digits_are_parse_errors_too(text):
    with pytest.raises(ActionParseError):
        Action.parse(text)
