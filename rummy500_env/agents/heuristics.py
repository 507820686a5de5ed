"""Card arithmetic the heuristic bots share, on the engine's melds: what a meld or a lay-off
scores on the table, a greedy plan of what a hand can put down, and the partial melds a hand
is building.

Everything here asks the engine (`Meld`, `lay_off`, `meld_value`, `Meld.fits`,
`MELD_PARTNERS`) rather than redoing its arithmetic, so the two-faced ace is valued and placed
by the same rules the game scores with (docs/rules.md §1 "Melds").
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from functools import cache

from rummy500_env.engine.cards import Card, cards_in, mask_of
from rummy500_env.engine.melds import (
    MELD_PARTNERS,
    MELD_TEMPLATES,
    Meld,
    hand_values,
    lay_off,
    layoff_end,
    meld_from_cards,
    meld_templates_in,
    meld_value,
)


def _template_meld(cards: tuple[Card, ...]) -> Meld:
    m = meld_from_cards(cards, (0,) * len(cards))
    if m is None:  # pragma: no cover - every template is a meld by construction
        raise ValueError(f"meld template {cards} is no meld")
    return m


TEMPLATE_MELDS: tuple[Meld, ...] = tuple(_template_meld(cards) for cards in MELD_TEMPLATES)
"""Each three-card meld template (`MELD_TEMPLATES` order) as a `Meld` owned by seat 0."""


@cache
def face_values(scoring: str) -> tuple[int, ...]:
    """What each card costs left in hand (`hand_values`, computed once per scoring)."""
    return hand_values(scoring)


@cache
def template_values(scoring: str) -> tuple[int, ...]:
    """Table value of each three-card template (A-2-3 scores its ace low)."""
    return tuple(sum(meld_value(m, scoring)) for m in TEMPLATE_MELDS)


def template_value(t: int, scoring: str) -> int:
    """Table value of three-card meld template `t`."""
    return template_values(scoring)[t]


def laid_value(meld: Meld, card: Card, scoring: str) -> int:
    """What `card` (one of `meld.fits`) scores once laid off on `meld`: an ace laid below a
    run's 2 scores low, above its king high."""
    after = lay_off(meld, card, 0)
    return meld_value(after, scoring)[after.cards.index(card)]


def layoff_value(table: Sequence[Meld], card: Card, end: int, scoring: str) -> int:
    """Table value of laying `card` off at `end` (`SET`, `RUN_LOW`, `RUN_HIGH`) on the first
    meld of `table` that takes it there, as the action codec picks it. A card no meld takes
    there (a table the view could not rebuild exactly) counts its face value."""
    for m in table:
        if card in m.fits and layoff_end(m, card) == end:
            return laid_value(m, card, scoring)
    return face_values(scoring)[card]


def plan(hand: Iterable[Card], table: Sequence[Meld], scoring: str) -> tuple[int, Counter[Card]]:
    """Greedy plan of what a hand can put on the table now: the most valuable three-card meld
    first (it joins the table, so later cards can be laid off on it), then the lay-off of the
    hand's most valuable card, each time, until nothing fits.

    Returns (points put down, cards used). A heuristic: it does not search every split.
    """
    left = Counter(hand)
    used: Counter[Card] = Counter()
    melds = list(table)
    values = template_values(scoring)
    total = 0
    while True:
        options = meld_templates_in(mask_of(c for c, k in left.items() if k > 0))
        if options:
            t = max(options, key=lambda t: (values[t], t))
            melds.append(TEMPLATE_MELDS[t])
            total += values[t]
            played: tuple[Card, ...] = MELD_TEMPLATES[t]
        else:
            best = best_layoff(left, melds, scoring)
            if best is None:
                return total, used
            i, card, value = best
            melds[i] = lay_off(melds[i], card, 0)
            total += value
            played = (card,)
        left.subtract(played)
        used.update(played)


def best_layoff(
    left: Counter[Card], melds: Sequence[Meld], scoring: str
) -> tuple[int, Card, int] | None:
    """The lay-off that sheds the hand's most valuable card, on the meld where it scores most:
    (meld index, card, its table value), or None when no held card fits."""
    face = face_values(scoring)
    best: tuple[tuple[int, Card, int], tuple[int, Card, int]] | None = None
    for i, m in enumerate(melds):
        for c in m.fits:
            if left[c] > 0:
                value = laid_value(m, c, scoring)
                key = (face[c], c, value)
                if best is None or key > best[0]:
                    best = (key, (i, c, value))
    return None if best is None else best[1]


def partial_cards(hand: Iterable[Card]) -> set[Card]:
    """Cards in a partial meld: some three-card meld holds the card and another held card (a
    pair of one rank, or two of a suit at most two ranks apart, the ace next to both the 2 and
    the king)."""
    held = mask_of(hand)
    return {c for c in cards_in(held) if any(pair & held for pair in MELD_PARTNERS[c])}


def neighbours(card: Card) -> tuple[tuple[Card, Card], ...]:
    """The pairs of cards that make a three-card meld with `card`."""
    return _NEIGHBOURS[card]


def _pair(mask: int) -> tuple[Card, Card]:
    a, b = cards_in(mask)
    return a, b


_NEIGHBOURS = tuple(tuple(_pair(pair) for pair in MELD_PARTNERS[card]) for card in range(52))
