"""Well-formed actions to offer a position, legal or not: every draw-step and call-window
action, each pile card dug or called (each copy), melds of three and more cards (starts grown
by a card, jokers standing for cards, melds naming a card not held, non-melds), every lay-off
of each hand card or joker on each meld and on a meld that is not there, every discard and
one of a card not held."""

from __future__ import annotations

import itertools

from rummy500_env.engine.cards import card_str
from tests.reference import model
from tests.reference.model import JK, NATURALS, State


def _named(kind: str, card: int, copy_no: int) -> str:
    return f"{kind} {card_str(card)}" + (f"#{copy_no}" if copy_no > 1 else "")


def _meld(places: list[tuple[int, bool]]) -> str:
    return model.meld_text(tuple(places))


def _longer(start: model.Start, hand: list[int]) -> list[str]:
    """A start grown by one card of the hand, or by a joker standing for any card."""
    out = []
    cards = [c for c, _ in start]
    spare_jokers = hand.count(JK) - sum(j for _, j in start)
    for x in NATURALS:
        if x in cards or not model.is_meld([*cards, x]):
            continue
        if x in hand:
            out.append(_meld([*start, (x, False)]))
        if spare_jokers > 0 or JK not in hand:  # also a joker the hand lacks: illegal
            out.append(_meld([*start, (x, True)]))
    return out


def candidates(s: State) -> list[str]:
    """The action texts to try in `s` (canonical, each parseable; a set, no repeats)."""
    hand = s.hands[s.turn]
    out = {"draw", "take", "decline", "pass", "done"}
    for c in set(s.pile) | ({JK} if s.rules.jokers else set()):
        for k in range(1, (4 if c == JK else 2) + 1):
            out |= {_named("dig", c, k), _named("call", c, k)}
    naturals = sorted({c for c in hand if c != JK})
    for three in itertools.combinations(naturals, 3):
        out.add(_meld([(c, False) for c in three]))
    for start in model.starts_in([*hand, JK]):
        out.add(model.meld_text(start))
        out |= set(_longer(start, hand))
        out.add(_meld([(c, False) for c, _ in start]))  # the joker's card named: maybe not held
    for four in itertools.islice(itertools.combinations(naturals, 4), 40):
        out.add(_meld([(c, False) for c in four]))
    for i in range(len(s.melds) + 1):
        out |= {f"layoff {card_str(c)} {i}" for c in naturals}
        out |= {f"layoff JK={card_str(x)} {i}" for x in NATURALS}
    out |= {f"discard {card_str(c)}" for c in set(hand)}
    out |= {f"discard {card_str(c)}" for c in s.pile[:1] + s.stock[:1]}
    return sorted(out)
