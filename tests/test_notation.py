"""Card and action notation: every form round trips; bad text raises the right error."""

from __future__ import annotations

import pytest

from rummy500_env import Action, ActionParseError
from rummy500_env.engine.cards import JOKER, CardParseError, card_str, parse_card, parse_cards
from rummy500_env.engine.numbers import QUOTE_WIDTH, quoted

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


LONG = 1_000_000
"""Characters of the long inputs below: a reply an endpoint once sent as its "action"."""


@pytest.mark.parametrize(
    "text",
    [
        "x" * LONG,
        " " * LONG,
        "draw " + "x" * LONG,
        "dig 9D#" + "9" * LONG,
        "discard JK=" + "9" * LONG,
        "layoff 10C " + "9" * LONG,
        "meld 9S 9H JK=9D " + "9D " * (LONG // 3),
        "meld 9S 9H " + "9S " * (LONG // 3),
        "discard " + "x" * LONG,
        "meld 9S 9H " + "x" * LONG,
    ],
    ids=[
        *("no-kind", "blank", "simple-kind", "dig-copy", "plain-card", "layoff", "jokers"),
        *("meld", "no-card", "meld-no-card"),
    ],
)
def test_a_long_action_text_is_quoted_as_a_bounded_excerpt_with_its_length(text: str) -> None:
    """Issue 6 of the third probe: a refusal quoted its whole input, and `ask` sent it back to
    the model (a 1 MB reply cost a 2 MB request on each retry and a record of 433 MB)."""
    with pytest.raises(ActionParseError) as refused:
        Action.parse(text)
    message = str(refused.value)
    assert len(message) < 1_000, message[:300]
    assert f"({len(text)} characters)" in message


def test_a_quote_is_the_whole_text_when_short_and_an_excerpt_with_its_length_when_long() -> None:
    assert quoted("draw 2C") == "'draw 2C'"
    cut = quoted("x" * 500)
    assert cut.startswith("'xxx") and cut.endswith("... (500 characters)")
    assert len(cut) < QUOTE_WIDTH + 30
    assert quoted("\n" * 10, width=12) == "'\\n\\n\\n\\n... (10 characters)"


def test_an_action_that_is_no_text_is_quoted_as_a_bounded_excerpt() -> None:
    with pytest.raises(ActionParseError) as refused:
        Action.parse(["draw"] * LONG)
    assert len(str(refused.value)) < 200


def test_a_meld_longer_than_a_full_run_is_no_meld() -> None:
    """No meld holds more than thirteen cards (a run of every rank), so the text of a longer
    one is refused before it becomes an action a refusal would print card by card."""
    run = "meld " + " ".join(f"{r}C" for r in "A 2 3 4 5 6 7 8 9 10 J Q K".split())
    assert len(Action.parse(run).cards) == 13
    with pytest.raises(ActionParseError, match="a meld holds at most 13 cards, got 14"):
        Action.parse(run + " AD")
