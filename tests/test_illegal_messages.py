"""The exact text of every refusal: what `why_illegal` says and what `apply`'s
`IllegalActionError` shows a user ("{action} is illegal: {why} [{position}]"), for each rule
that can refuse an action, under the rules where it can.

The rules tests and the reference properties check the verdicts; these check the words, so a
mutant that changes only a message (benchmarks/mutation.py, docs/testing.md) fails here. Each
expected text was read against the rule it names in docs/rules.md.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from rummy500_env import Action, Game, IllegalActionError, Rules
from rummy500_env.engine.cards import JOKER
from rummy500_env.engine.cards import parse_card as C
from tests.helpers import game

CASES = [
    pytest.param(
        {"hands": ["9S 5C", "2S"], "pile": "KD"},
        "discard 9S",
        "you must draw first: draw, take or dig (docs/rules.md §1, a turn)",
        "player 0 to draw; hand 5C 9S; pile top KD",
        id="draw-first",
    ),
    pytest.param(
        {"hands": ["9S 5C", "2S"], "pile": "KD", "phase": "play"},
        "take",
        "you have already drawn this turn; meld, lay off or discard",
        "player 0 to play; hand 5C 9S; pile top KD",
        id="drawn-already",
    ),
    pytest.param(
        {"hands": ["9S 5C", "2S"], "pile": "KD", "phase": "play"},
        Action("discard", (JOKER,)),
        "there are no jokers in this game (jokers=0; docs/rules.md §5)",
        "player 0 to play; hand 5C 9S; pile top KD",
        id="no-jokers",
    ),
    pytest.param(
        {"rules": {"jokers": 2}, "hands": ["9S 9H JK 5C", "2S"], "pile": "KD", "phase": "play"},
        Action("meld", (JOKER, C("9H"), C("9S"))),
        (
            "a joker in a meld or a lay-off is listed as the card it stands for and marked in "
            "`jokers` (notation: JK=9D, docs/rules.md §5)"
        ),
        "player 0 to play; hand 5C 9H 9S JK; pile top KD",
        id="joker-not-marked",
    ),
    pytest.param(
        {
            "rules": {"jokers": 2},
            "hands": ["9S JK 5C", "2S"],
            "pile": "KD",
            "melds": [("9C 9D 9H", 1)],
            "phase": "play",
            "rest": 1,
        },
        Action("layoff", (JOKER,), 0),
        (
            "a joker in a meld or a lay-off is listed as the card it stands for and marked in "
            "`jokers` (notation: JK=9D, docs/rules.md §5)"
        ),
        "player 0 to play; hand 5C 9S JK; pile top KD",
        id="joker-not-marked-layoff",
    ),
    pytest.param(
        {"rules": {"jokers": 2}, "hands": ["9S 9H 9D JK", "2S"], "pile": "KD", "phase": "play"},
        Action("meld", (C("9D"), C("9H"), C("9S")), jokers=1 << C("2C")),
        (
            "a joker in a meld or a lay-off is listed as the card it stands for and marked in "
            "`jokers` (notation: JK=9D, docs/rules.md §5)"
        ),
        "player 0 to play; hand 9D 9H 9S JK; pile top KD",
        id="joker-marks-a-card-not-named",
    ),
    pytest.param(
        {"hands": ["9S 5C", "2S"], "pile": "KD"},
        "call KD",
        "there are no Rummy! calls in this game (rummy_calls=False), so no call",
        "player 0 to draw; hand 5C 9S; pile top KD",
        id="no-calls-call-plain",
    ),
    pytest.param(
        {"hands": ["9S 5C", "2S"], "pile": "KD", "phase": "play"},
        "pass",
        "there are no Rummy! calls in this game (rummy_calls=False), so no pass",
        "player 0 to play; hand 5C 9S; pile top KD",
        id="no-calls-pass-plain",
    ),
    pytest.param(
        {"rules": {"jokers": 2}, "hands": ["9S 5C", "2S"], "pile": "KD"},
        "call KD",
        "there are no Rummy! calls in this game (rummy_calls=False), so no call",
        "player 0 to draw; hand 5C 9S; pile top KD",
        id="no-calls-call",
    ),
    pytest.param(
        {"rules": {"jokers": 2}, "hands": ["9S 5C", "2S"], "pile": "KD", "phase": "play"},
        "done",
        "there are no Rummy! calls in this game (rummy_calls=False), so no done",
        "player 0 to play; hand 5C 9S; pile top KD",
        id="no-calls-done",
    ),
    pytest.param(
        {"rules": {"jokers": 2}, "hands": ["9S 5C", "2S"], "pile": "KD"},
        "discard 9S",
        "you must draw first: draw, take or dig (docs/rules.md §1, a turn)",
        "player 0 to draw; hand 5C 9S; pile top KD",
        id="wild-draw-first",
    ),
    pytest.param(
        {"rules": {"jokers": 2}, "hands": ["9S 5C", "2S"], "pile": "KD", "phase": "play"},
        "draw",
        "you have already drawn this turn; meld, lay off or discard",
        "player 0 to play; hand 5C 9S; pile top KD",
        id="wild-drawn-already",
    ),
    pytest.param(
        {
            "rules": {"rummy_calls": True},
            "hands": ["9S 9H 5C", "2S 3S"],
            "pile": "KC 9D",
            "phase": "call",
            "discarder": 1,
        },
        "draw",
        (
            "a call window is open after player 1's discard: call a pile card (call 9D) or pass "
            "(docs/rules.md §5)"
        ),
        (
            "player 0 to call or pass; hand 5C 9H 9S; pile top 9D; call window after player 1's "
            "discard"
        ),
        id="call-window",
    ),
    pytest.param(
        {
            "rules": {"rummy_calls": True},
            "hands": ["9S 9H 9D 5C", "2S 3S"],
            "pile": "KC",
            "phase": "called",
            "discarder": 1,
        },
        "draw",
        "you called: meld, lay off, then done (docs/rules.md §5)",
        (
            "player 0 to play after calling; hand 5C 9D 9H 9S; pile top KC; call window after "
            "player 1's discard"
        ),
        id="called-draw",
    ),
    pytest.param(
        {"rules": {"rummy_calls": True}, "hands": ["9S 5C", "2S"], "pile": "KD", "phase": "play"},
        "done",
        (
            "done ends only a caller's out-of-turn play (docs/rules.md §5); end your turn with a "
            "discard"
        ),
        "player 0 to play; hand 5C 9S; pile top KD",
        id="done-in-turn",
    ),
    pytest.param(
        {
            "rules": {"rummy_calls": True},
            "hands": ["9S 9H 9D 5C", "2S 3S"],
            "must_play": "9D",
            "pile": "KC",
            "phase": "called",
            "discarder": 1,
        },
        "done",
        "the called card 9D must go on the table before done (docs/rules.md §5)",
        (
            "player 0 to play after calling; hand 5C 9D 9H 9S; pile top KC; call window after "
            "player 1's discard; must play 9D"
        ),
        id="done-owed",
    ),
    pytest.param(
        {
            "rules": {"rummy_calls": True},
            "hands": ["9S 9H 9D 5C", "2S 3S"],
            "pile": "KC",
            "phase": "called",
            "discarder": 1,
        },
        "discard 5C",
        "a caller plays out of turn and ends with done, never a discard (docs/rules.md §5)",
        (
            "player 0 to play after calling; hand 5C 9D 9H 9S; pile top KC; call window after "
            "player 1's discard"
        ),
        id="called-discard",
    ),
    pytest.param(
        {"hands": ["9S 5C", "2S"], "pile": "KD", "rest": "pile"},
        "draw",
        "the stock is empty: take from the pile or decline",
        "player 0 to draw; hand 5C 9S; pile top KD",
        id="stock-empty",
    ),
    pytest.param(
        {"hands": ["9S 5C", "2S"], "pile": "KD"},
        "decline",
        "decline is only allowed once the stock is empty",
        "player 0 to draw; hand 5C 9S; pile top KD",
        id="decline-early",
    ),
    pytest.param(
        {"hands": ["9S 5C", "2S"]},
        "take",
        "the discard pile is empty",
        "player 0 to draw; hand 5C 9S; pile top -",
        id="pile-empty",
    ),
    pytest.param(
        {"rules": {"top_card_must_meld": True}, "hands": ["9S 5C", "2S"], "pile": "KD"},
        "take",
        (
            "taking the top card carries the dig obligation (top_card_must_meld, docs/rules.md "
            "§2) and KD could not go on the table at once"
        ),
        "player 0 to draw; hand 5C 9S; pile top KD",
        id="take-top-must-meld",
    ),
    pytest.param(
        {
            "rules": {"top_card_must_meld": True, "discard_to_go_out": True},
            "hands": ["9S 5C", "2S"],
            "pile": "KD",
        },
        "take",
        (
            "taking the top card carries the dig obligation (top_card_must_meld, docs/rules.md "
            "§2) and KD could not go on the table at once without emptying the hand "
            "(discard_to_go_out)"
        ),
        "player 0 to draw; hand 5C 9S; pile top KD",
        id="take-top-must-meld-dtgo",
    ),
    pytest.param(
        {
            "rules": {"stock_out": "pile_must_use"},
            "hands": ["9S 5C", "2S"],
            "pile": "KD",
            "rest": "pile",
        },
        "take",
        (
            "taking the top card carries the dig obligation (pile_must_use, docs/rules.md §2) and "
            "KD could not go on the table at once"
        ),
        "player 0 to draw; hand 5C 9S; pile top KD",
        id="take-pile-must-use",
    ),
    pytest.param(
        {"hands": ["9S 9H 5C", "2S"], "pile": "4H 9D"},
        "dig 9D",
        "9D is the top card (use 'take'); pile: 4H 9D",
        "player 0 to draw; hand 5C 9H 9S; pile top 9D",
        id="dig-top",
    ),
    pytest.param(
        {"hands": ["9S 9H 5C", "2S"], "pile": "4H 9D"},
        "dig 9C",
        "9C is not buried in the pile; pile: 4H 9D",
        "player 0 to draw; hand 5C 9H 9S; pile top 9D",
        id="dig-absent",
    ),
    pytest.param(
        {"rules": {"decks": 2}, "hands": ["9S 9H 5C", "2S"], "pile": "4H 9D KC"},
        "dig 9D#2",
        "9D#2 is not buried in the pile; pile: 4H 9D KC",
        "player 0 to draw; hand 5C 9H 9S; pile top KC",
        id="dig-absent-copy-2",
    ),
    pytest.param(
        {"hands": ["9S 9H 5C", "2S"], "pile": "4H 9D KC"},
        Action("dig", (C("9D"), C("4H"))),
        "a dig names one buried card, e.g. 'dig 9D' or 'dig 9D#2'",
        "player 0 to draw; hand 5C 9H 9S; pile top KC",
        id="dig-two-cards",
    ),
    pytest.param(
        {"rules": {"decks": 2}, "hands": ["9S 9H 5C", "2S"], "pile": "4H 9D KC"},
        Action("dig", (C("9D"),), copy=3),
        "a dig names one buried card, e.g. 'dig 9D' or 'dig 9D#2'",
        "player 0 to draw; hand 5C 9H 9S; pile top KC",
        id="dig-copy-3",
    ),
    pytest.param(
        {"hands": ["9S 5C", "2S"], "pile": "4H 9D KC"},
        "dig 4H",
        (
            "a dig is legal only if the buried card can go on the table at once (docs/rules.md §1 "
            "dig, §3): 4H fits no new meld with your cards and the 3 taken, and no meld on the "
            "table"
        ),
        "player 0 to draw; hand 5C 9S; pile top KC",
        id="dig-no-fit",
    ),
    pytest.param(
        {"rules": {"discard_to_go_out": True}, "hands": ["9S 5C", "2S"], "pile": "4H 9D KC"},
        "dig 4H",
        (
            "a dig is legal only if the buried card can go on the table at once (docs/rules.md §1 "
            "dig, §3): 4H fits no new meld with your cards and the 3 taken, and no meld on the "
            "table without emptying the hand (discard_to_go_out)"
        ),
        "player 0 to draw; hand 5C 9S; pile top KC",
        id="dig-no-fit-dtgo",
    ),
    pytest.param(
        {
            "rules": {"rummy_calls": True},
            "hands": ["9S 9H 5C", "2S 3S"],
            "pile": "KC 9D",
            "phase": "call",
            "discarder": 1,
        },
        Action("call", (C("9D"), C("KC"))),
        "a call names one pile card, e.g. 'call 9D' or 'call 9D#2'",
        (
            "player 0 to call or pass; hand 5C 9H 9S; pile top 9D; call window after player 1's "
            "discard"
        ),
        id="call-two-cards",
    ),
    pytest.param(
        {
            "rules": {"rummy_calls": True},
            "hands": ["9S 9H 5C", "2S 3S"],
            "pile": "KC 9D",
            "phase": "call",
            "discarder": 1,
        },
        "call 9C",
        "9C is not in the pile; pile: KC 9D",
        (
            "player 0 to call or pass; hand 5C 9H 9S; pile top 9D; call window after player 1's "
            "discard"
        ),
        id="call-absent",
    ),
    pytest.param(
        {
            "rules": {"rummy_calls": True, "decks": 2},
            "hands": ["9S 9H 5C", "2S 3S"],
            "pile": "KC 9D",
            "phase": "call",
            "discarder": 1,
        },
        "call 9D#2",
        "9D#2 is not in the pile; pile: KC 9D",
        (
            "player 0 to call or pass; hand 5C 9H 9S; pile top 9D; call window after player 1's "
            "discard"
        ),
        id="call-absent-copy-2",
    ),
    pytest.param(
        {
            "rules": {"rummy_calls": True, "decks": 2},
            "hands": ["9S 9H 5C", "2S 3S"],
            "pile": "KC 9D",
            "phase": "call",
            "discarder": 1,
        },
        Action("call", (C("9D"),), copy=3),
        "a call names one pile card, e.g. 'call 9D' or 'call 9D#2'",
        (
            "player 0 to call or pass; hand 5C 9H 9S; pile top 9D; call window after player 1's "
            "discard"
        ),
        id="call-copy-3",
    ),
    pytest.param(
        {
            "rules": {"rummy_calls": True, "jokers": 2, "decks": 2},
            "hands": ["9S 9H 5C", "2S 3S"],
            "pile": "KC JK",
            "phase": "call",
            "discarder": 1,
        },
        Action("call", (JOKER,), copy=3),
        "JK#3 is not in the pile; pile: KC JK",
        (
            "player 0 to call or pass; hand 5C 9H 9S; pile top JK; call window after player 1's "
            "discard"
        ),
        id="call-joker-copy-3",
    ),
    pytest.param(
        {
            "rules": {"rummy_calls": True},
            "hands": ["9S 5C", "2S 3S"],
            "pile": "KC 9D",
            "phase": "call",
            "discarder": 1,
        },
        "call KC",
        (
            "a call is legal only if the called card can go on the table at once, as a dig "
            "(docs/rules.md §5, §3): KC fits no new meld with your cards and the 2 taken, and no "
            "meld on the table"
        ),
        "player 0 to call or pass; hand 5C 9S; pile top 9D; call window after player 1's discard",
        id="call-no-fit",
    ),
    pytest.param(
        {
            "rules": {"rummy_calls": True, "discard_to_go_out": True},
            "hands": ["9S 5C", "2S 3S"],
            "pile": "KC 9D",
            "phase": "call",
            "discarder": 1,
        },
        "call KC",
        (
            "a call is legal only if the called card can go on the table at once, as a dig "
            "(docs/rules.md §5, §3): KC fits no new meld with your cards and the 2 taken, and no "
            "meld on the table without emptying the hand (discard_to_go_out)"
        ),
        "player 0 to call or pass; hand 5C 9S; pile top 9D; call window after player 1's discard",
        id="call-no-fit-dtgo",
    ),
    pytest.param(
        {"hands": ["9S 5C", "2S"], "pile": "KD", "phase": "play"},
        "discard 9H",
        "you do not hold 9H; your hand: 5C 9S",
        "player 0 to play; hand 5C 9S; pile top KD",
        id="not-held",
    ),
    pytest.param(
        {
            "rules": {"jokers": 2},
            "hands": ["9S 9H 5C", "2S"],
            "rest": 1,
            "pile": "KD",
            "phase": "play",
        },
        "meld JK=9D 9H 9S",
        "you do not hold JK=9D 9H 9S; your hand: 5C 9H 9S",
        "player 0 to play; hand 5C 9H 9S; pile top KD",
        id="not-held-joker",
    ),
    pytest.param(
        {"rules": {"decks": 2}, "hands": ["9D 9H 9S 5C", "2S"], "pile": "KD", "phase": "play"},
        Action("meld", (C("9D"), C("9D"), C("9H"))),
        "you do not hold 9D 9D 9H; your hand: 5C 9D 9H 9S",
        "player 0 to play; hand 5C 9D 9H 9S; pile top KD",
        id="not-held-twice",
    ),
    pytest.param(
        {"rules": {"decks": 2}, "hands": ["9D 9H 9H 5C", "2S"], "pile": "KD", "phase": "play"},
        Action("meld", (C("9D"), C("9D"), C("9H"), C("9H"))),
        "you do not hold 9D 9D 9H 9H; your hand: 5C 9D 9H 9H",
        "player 0 to play; hand 5C 9D 9H 9H; pile top KD",
        id="not-held-twice-first-of-two",
    ),
    pytest.param(
        {"rules": {"decks": 2}, "hands": ["9D 9D 9H 5C", "2S"], "pile": "KD", "phase": "play"},
        Action("meld", (C("9D"), C("9D"), C("9H"))),
        (
            "9D 9D 9H is not a meld: a set is 3-4 cards of one rank in different suits, a run 3+ "
            "consecutive cards of one suit, listed low to high (docs/rules.md §1 melds)"
        ),
        "player 0 to play; hand 5C 9D 9D 9H; pile top KD",
        id="held-twice-not-a-meld",
    ),
    pytest.param(
        {"hands": ["8D 9D 10D 5C", "2S"], "pile": "KD", "phase": "play"},
        Action("meld", (C("10D"), C("9D"), C("8D"))),
        (
            "10D 9D 8D is not a meld: a set is 3-4 cards of one rank in different suits, a run 3+ "
            "consecutive cards of one suit, listed low to high (docs/rules.md §1 melds)"
        ),
        "player 0 to play; hand 5C 8D 9D 10D; pile top KD",
        id="run-listed-high-to-low",
    ),
    pytest.param(
        {"hands": ["QH KH 5H 2C", "2S"], "pile": "KD", "phase": "play"},
        Action("meld", (C("QH"), C("KH"), C("5H"))),
        (
            "QH KH 5H is not a meld: a set is 3-4 cards of one rank in different suits, a run 3+ "
            "consecutive cards of one suit, listed low to high (docs/rules.md §1 melds)"
        ),
        "player 0 to play; hand 2C 5H QH KH; pile top KD",
        id="king-then-no-ace",
    ),
    pytest.param(
        {"hands": ["9S 5C", "2S"], "pile": "KD", "phase": "play"},
        Action("discard", (C("9S"), C("5C"))),
        "discard exactly one card",
        "player 0 to play; hand 5C 9S; pile top KD",
        id="discard-two",
    ),
    pytest.param(
        {"hands": ["9S 9H 9D 5C", "2S"], "must_play": "9D", "pile": "KD", "phase": "play"},
        "discard 5C",
        "discarding is blocked until 9D is on the table (docs/rules.md §1 dig obligation)",
        "player 0 to play; hand 5C 9D 9H 9S; pile top KD; must play 9D",
        id="discard-owed",
    ),
    pytest.param(
        {
            "rules": {"jokers": 2},
            "hands": ["9S JK 5C", "2S"],
            "taken_top": "JK",
            "pile": "KD",
            "phase": "play",
        },
        "discard JK",
        (
            "a joker was taken from the top of the pile this turn, so no joker may be discarded "
            "unless the hand holds nothing but jokers (docs/rules.md §5)"
        ),
        "player 0 to play; hand 5C 9S JK; pile top KD",
        id="discard-taken-joker",
    ),
    pytest.param(
        {"hands": ["9S KD 5C", "2S"], "pile": "4H", "phase": "play", "taken_top": "KD"},
        "discard KD",
        (
            "KD was taken from the top of the pile this turn and may not be discarded unless it "
            "is your last card (docs/rules.md §1, §3)"
        ),
        "player 0 to play; hand 5C KD 9S; pile top 4H",
        id="discard-taken-top",
    ),
    pytest.param(
        {"hands": ["9S 9H 5C 2C", "2S"], "pile": "KD", "phase": "play"},
        "meld 5C 9H 9S",
        (
            "5C 9H 9S is not a meld: a set is 3-4 cards of one rank in different suits, a run 3+ "
            "consecutive cards of one suit, listed low to high (docs/rules.md §1 melds)"
        ),
        "player 0 to play; hand 2C 5C 9H 9S; pile top KD",
        id="not-a-meld",
    ),
    pytest.param(
        {
            "rules": {"jokers": 2},
            "hands": ["9S 9H 5C JK", "2S"],
            "rest": 1,
            "pile": "KD",
            "phase": "play",
        },
        "meld JK=5C 9H 9S",
        (
            "JK=5C 9H 9S is not a meld: a joker stands for a card its meld could take at that "
            "place (a suit missing from a set, never a fifth card; the next rank of a run or a "
            "gap in a new one) (docs/rules.md §5)"
        ),
        "player 0 to play; hand 5C 9H 9S JK; pile top KD",
        id="not-a-meld-joker",
    ),
    pytest.param(
        {
            "rules": {"jokers": 2},
            "hands": ["9S JK JK 5C", "2S"],
            "rest": 1,
            "pile": "KD",
            "phase": "play",
        },
        "meld JK=9D JK=9H 9S",
        (
            "JK=9D JK=9H 9S has no three-card start with two natural cards: a meld starts as "
            "three cards with at most one joker and grows by lay-offs (docs/rules.md §5)"
        ),
        "player 0 to play; hand 5C 9S JK JK; pile top KD",
        id="no-natural-start",
    ),
    pytest.param(
        {"hands": ["9S 9H 9D 5C 6C 7C 2H", "2S"], "must_play": "9D", "pile": "KD", "phase": "play"},
        "meld 5C 6C 7C",
        (
            "the dig obligation is open: every meld must include 9D in a three-card start (a "
            "joker standing for a card does not meet an owed natural one; docs/rules.md §1 dig, "
            "§5)"
        ),
        "player 0 to play; hand 5C 6C 7C 9D 2H 9H 9S; pile top KD; must play 9D",
        id="meld-owed-card",
    ),
    pytest.param(
        {
            "rules": {"jokers": 2},
            "hands": ["9S 9H JK 5C 6C 7C 2H", "2S"],
            "must_play": "JK",
            "rest": 1,
            "pile": "KD",
            "phase": "play",
        },
        "meld 5C 6C 7C",
        (
            "the dig obligation is open: every meld must include a joker in a three-card start (a "
            "joker standing for a card does not meet an owed natural one; docs/rules.md §1 dig, "
            "§5)"
        ),
        "player 0 to play; hand 5C 6C 7C 2H 9H 9S JK; pile top KD; must play JK",
        id="meld-owed-joker",
    ),
    pytest.param(
        {
            "rules": {"discard_to_go_out": True},
            "hands": ["9S 9H 9D", "2S"],
            "pile": "KD",
            "phase": "play",
        },
        "meld 9D 9H 9S",
        "discard_to_go_out: you must keep a card to discard, so this meld is illegal",
        "player 0 to play; hand 9D 9H 9S; pile top KD",
        id="meld-dtgo",
    ),
    pytest.param(
        {"hands": ["9S 5C", "2S"], "melds": [("9C 9D 9H", 1)], "pile": "KD", "phase": "play"},
        Action("layoff", (C("9S"), C("5C")), 0),
        "lay off exactly one card",
        "player 0 to play; hand 5C 9S; pile top KD",
        id="layoff-two",
    ),
    pytest.param(
        {"hands": ["9S 5C", "2S"], "melds": [("9C 9D 9H", 1)], "pile": "KD", "phase": "play"},
        "layoff 9S 1",
        "there is no meld #1; melds are numbered 0..0",
        "player 0 to play; hand 5C 9S; pile top KD",
        id="layoff-no-meld",
    ),
    pytest.param(
        {"hands": ["9S 5C", "2S"], "pile": "KD", "phase": "play"},
        "layoff 9S 0",
        "there is no meld #0; melds are numbered 0..-1",
        "player 0 to play; hand 5C 9S; pile top KD",
        id="layoff-no-melds",
    ),
    pytest.param(
        {"hands": ["9S 5C", "2S"], "melds": [("9C 9D 9H", 1)], "pile": "KD", "phase": "play"},
        "layoff 5C 0",
        "5C does not fit meld #0 (9C 9D 9H); it takes 9S",
        "player 0 to play; hand 5C 9S; pile top KD",
        id="layoff-no-fit",
    ),
    pytest.param(
        {
            "rules": {"jokers": 2},
            "hands": ["9S JK 5C", "2S"],
            "melds": [("9C 9D 9H", 1)],
            "rest": 1,
            "pile": "KD",
            "phase": "play",
        },
        "layoff JK=5C 0",
        "JK=5C does not fit meld #0 (9C 9D 9H); it takes 9S",
        "player 0 to play; hand 5C 9S JK; pile top KD",
        id="layoff-no-fit-joker",
    ),
    pytest.param(
        {"hands": ["5C 2H", "2S"], "melds": [("9C 9D 9H 9S", 1)], "pile": "KD", "phase": "play"},
        "layoff 5C 0",
        "5C does not fit meld #0 (9C 9D 9H 9S); it takes nothing",
        "player 0 to play; hand 5C 2H; pile top KD",
        id="layoff-takes-nothing",
    ),
    pytest.param(
        {
            "hands": ["9S 9H 9D 5C 2H", "2S"],
            "melds": [("6C 7C 8C", 1)],
            "must_play": "9D",
            "pile": "KD",
            "phase": "play",
        },
        "layoff 5C 0",
        "the dig obligation is open: lay off 9D first",
        "player 0 to play; hand 5C 9D 2H 9H 9S; pile top KD; must play 9D",
        id="layoff-owed-card",
    ),
    pytest.param(
        {
            "rules": {"jokers": 2},
            "hands": ["9S 9H JK 5C 2H", "2S"],
            "melds": [("6C 7C 8C", 1)],
            "must_play": "JK",
            "rest": 1,
            "pile": "KD",
            "phase": "play",
        },
        "layoff 5C 0",
        "the dig obligation is open: lay off a joker first",
        "player 0 to play; hand 5C 2H 9H 9S JK; pile top KD; must play JK",
        id="layoff-owed-joker",
    ),
    pytest.param(
        {
            "rules": {"discard_to_go_out": True},
            "hands": ["9S", "2S"],
            "melds": [("9C 9D 9H", 1)],
            "pile": "KD",
            "phase": "play",
        },
        "layoff 9S 0",
        "discard_to_go_out: you must keep a card to discard, so this lay-off is illegal",
        "player 0 to play; hand 9S; pile top KD",
        id="layoff-dtgo",
    ),
]
"""(position, action, `why_illegal`'s text, the position line `apply` appends)."""


@pytest.mark.parametrize(("position", "action", "why", "brief"), CASES)
def test_each_refusal_says_exactly_why(
    position: dict[str, Any], action: str | Action, why: str, brief: str
) -> None:
    g = game(**position)
    a = action if isinstance(action, Action) else Action.parse(action)
    before = g.to_dict()
    assert g.why_illegal(a) == why
    with pytest.raises(IllegalActionError) as refused:
        g.apply(action)
    assert str(refused.value) == f"{a} is illegal: {why} [{brief}]"
    assert g.to_dict() == before


def _finished(totals: list[int]) -> Game:
    """Player 0 goes out: the hand is over, or the game with `totals` near the target."""
    g = game(hands=["5C", "2S 3S"], pile="9D", melds=[("KC KD KH", 0)], totals=totals, phase="play")
    g.apply("discard 5C")
    return g


def test_after_the_hand_and_after_the_game_every_action_is_refused_so():
    hand_over, game_over = _finished([0, 0]), _finished([480, 0])
    with pytest.raises(IllegalActionError) as refused:
        hand_over.apply("draw")
    assert str(refused.value) == (
        "draw is illegal: the hand is over; call next_hand() to deal the next one "
        "[player 0 to hand_over; hand ; pile top 5C]"
    )
    with pytest.raises(IllegalActionError) as refused:
        game_over.apply("draw")
    assert str(refused.value) == (
        "draw is illegal: the game is over [player 0 to game_over; hand ; pile top 5C]"
    )
    with pytest.raises(IllegalActionError) as refused:
        game_over.next_hand()
    assert str(refused.value) == (
        "next_hand() is only allowed when the hand is over; phase is 'game_over' (the game is over)"
    )


def test_mid_hand_next_hand_result_and_set_next_draw_are_refused_so():
    g = game(hands=["9S", "2S"], pile="KD")
    with pytest.raises(IllegalActionError) as refused:
        g.next_hand()
    assert (
        str(refused.value) == "next_hand() is only allowed when the hand is over; phase is 'draw'"
    )
    with pytest.raises(IllegalActionError) as refused:
        g.result()
    assert str(refused.value) == "the hand is not over (phase 'draw'): there is no result yet"
    with pytest.raises(IllegalActionError) as refused:
        g.set_next_draw(C("KD"))
    assert str(refused.value) == "the stock holds no KD (49 cards), so it cannot be drawn"


def test_an_action_of_no_known_kind_or_with_a_card_that_is_no_card_is_refused_so():
    """Built in code (the text notation cannot say either). A card id that is no card is
    quoted as the action was built (it once crashed the message, or read -1 as the king of
    spades)."""
    g = game(hands=["9S", "2S"], pile="KD")
    kinds = "draw, take, dig, decline, meld, layoff, discard, call, pass, done"
    assert g.why_illegal(Action("knock")) == f"unknown action kind 'knock'; kinds are {kinds}"
    with pytest.raises(IllegalActionError) as refused:
        g.apply(Action("knock"))
    assert str(refused.value) == (
        f"knock is illegal: unknown action kind 'knock'; kinds are {kinds} "
        "[player 0 to draw; hand 9S; pile top KD]"
    )
    for cards in [(53,), (-1,), ("9S",)]:
        why = f"cards must be ids 0..52 (52 the joker), got {cards!r}"
        for kind in ("discard", "dig"):
            bad = Action(kind, cards)  # type: ignore[arg-type]
            assert g.why_illegal(bad) == why
            with pytest.raises(IllegalActionError) as refused:
                g.apply(bad)
            assert str(refused.value) == (
                f"{bad!r} is illegal: {why} [player 0 to draw; hand 9S; pile top KD]"
            )
    with pytest.raises(IllegalActionError, match=r"^dig is illegal: a dig names one buried"):
        g.apply(Action("dig"))


def test_a_dig_of_a_third_copy_names_that_copy():
    """Two decks with jokers hold up to four jokers: a dig of ``JK#3`` that the pile does not
    hold says ``JK#3``, as a call does (it once said ``JK``, as if no joker lay there)."""
    rules = Rules(decks=2, jokers=2)
    g = game(rules=rules, hands=["9S 9H", "2S"], pile="JK 4C JK 5D 6D")
    why = g.why_illegal(Action.parse("dig JK#3"))
    assert why == "JK#3 is not buried in the pile; pile: JK 4C JK 5D 6D"


def test_copy_copy_of_a_game_is_independent():
    g = game(hands=["9S 9H", "2S"], pile="KD")
    shallow = copy.copy(g)
    shallow.apply("draw")
    assert g.phase == "draw" and shallow.phase == "play"
    assert len(g.stock) == len(shallow.stock) + 1
