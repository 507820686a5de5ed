"""The reference itself (tests/reference/model.py) on docs/rules.md's own cases: if it got a
rule wrong, the comparison with the engine would test the wrong thing, so it is held to the
worked examples and the fine print here, on positions alone, without the engine's answers."""

from __future__ import annotations

from rummy500_env.engine.cards import parse_cards
from tests.helpers import position
from tests.reference import model


def meld(text: str) -> bool:
    return model.is_meld(parse_cards(text))


def places(text: str, owner: int = 0) -> list[model.Place]:
    return [model._place(c, owner) for c in text.split()]


def test_reference_melds_follow_the_rules_table():
    """§1 melds: ace low or high, never both, no wrap, no run across suits; sets of 3-4
    distinct suits; never the same card twice."""
    assert meld("AH 2H 3H") and meld("QH KH AH") and meld("9C 9D 9H 9S")
    assert meld("AH 2H 3H 4H 5H 6H 7H 8H 9H 10H JH QH KH")
    assert not meld("KH AH 2H") and not meld("QC KC AD") and not meld("9C 9C 9D")
    assert not meld("5H 5H 6H 7H") and not meld("9C 9D") and not meld("5H 6H 8H")


def test_reference_lay_off_fits_close_full_runs_and_taken_places():
    """§3: a full run takes nothing, an ace joins 2..K; a joker's place is taken (§5)."""
    full = places("AH 2H 3H 4H 5H 6H 7H 8H 9H 10H JH QH KH")
    assert not any(model.fits(full, x) for x in model.NATURALS)
    assert model.fits(places("2H 3H 4H 5H 6H 7H 8H 9H 10H JH QH KH"), parse_cards("AH")[0])
    assert not model.fits(places("9S 9H JK=9D"), parse_cards("9D")[0])
    assert model.fits(places("9S 9H JK=9D"), parse_cards("9C")[0])


def test_reference_scores_seed_000_plus_55_and_plus_42():
    """§1 worked example, seed 000, after player 1 lays off the 7D and goes out."""
    d = position(
        hands=["AS KS 7C", ""],
        pile="4H",
        melds=[
            ("KC KD KH", 0),
            ("QC QD QH", 0),
            ("8S 9S 10S", 0),
            ("2D 3D 4D 5D 6D 7D", 1),
            ("5C 5H 5S", 1),
        ],
        phase="hand_over",
        hands_played=1,
    )
    assert model.hand_scores(model.read(d)) == [55, 42]


def test_reference_plays_seed_003_dig_meld_and_scores_36():
    """§1 worked example, seed 003: dig 9D is legal, takes KC 6H 2C, owes the 9D (no discard
    until it is down), and the hand later scores 57 - 21 = 36."""
    s = model.read(
        position(
            rules={"players": 3},
            hands=["9S 9H 5D 7D QC JC 3H", "8S 8C 8D 10S JS QS 4S", "2D 3D 4D AC 7C 8H 10H"],
            pile="4C 9D KC 6H 2C",
            stock="KS",
        )
    )
    assert {"dig 9D", "dig KC"} <= model.legal_actions(s)
    assert not {"dig 6H", "dig 4C"} & model.legal_actions(s)
    s = model.after(s, "dig 9D")
    assert s.must_play == parse_cards("9D")[0] and s.pile == parse_cards("4C")
    assert not any(a.startswith("discard") for a in model.legal_actions(s))
    assert "meld JC QC KC" not in model.legal_actions(s)
    for action in ("meld 9D 9H 9S", "meld JC QC KC", "discard 2C"):
        assert action in model.legal_actions(s)
        s = model.after(s, action)
    assert s.turn == 1 and s.phase == "draw"
    for action in ("draw", "meld 8C 8D 8S", "meld 10S JS QS", "layoff KS 3", "discard 4S"):
        assert action in model.legal_actions(s)
        s = model.after(s, action)
    assert s.phase == "hand_over" and model.hand_scores(s)[0] == 36


def test_reference_obligations_take_top_and_jokers():
    """§3 take-top discard, §5: hand JK JK 8H 9H may not dig 5H; an owed joker is met by any
    joker going down; after taking the top card only a hand of nothing else may discard it."""
    s = model.read(position(rules={"jokers": 2}, hands=["JK JK 8H 9H", "2C"], pile="5H KD"))
    assert "dig 5H" not in model.legal_actions(s)
    s = model.after(s, "take")
    assert "discard KD" not in model.legal_actions(s) and "discard 8H" in model.legal_actions(s)
    only = model.read(position(hands=["KD", "2C"], pile="5H", phase="play", taken_top="KD"))
    assert model.legal_actions(only) == {"discard KD"}
