"""Card arithmetic the heuristic bots share, on the engine's melds: what a meld or a lay-off
scores on the table, a greedy plan of what a hand can put down, and the partial melds a hand
is building.

Everything here asks the engine (`Meld`, `lay_off`, `meld_value`, `Meld.fits`,
`MELD_PARTNERS`) rather than redoing its arithmetic, so the two-faced ace is valued and placed
by the same rules the game scores with (docs/rules.md §1 "Melds"). A hand may hold jokers (id
52): a plan uses them after the natural cards, to complete a pair or on a lay-off spot, and a
joker is worth 15 wherever it lies (§5).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from functools import cache

from rummy500_env.engine.cards import JOKER, Card, cards_in, mask_of
from rummy500_env.engine.melds import (
    JOKER_VALUE,
    MELD_PARTNERS,
    MELD_TEMPLATES,
    Meld,
    hand_values,
    joker_templates_in,
    lay_off,
    meld_from_cards,
    meld_templates_in,
    meld_value,
)


def _template_meld(cards: tuple[Card, ...], jokers: int = 0) -> Meld:
    m = meld_from_cards(cards, (0,) * len(cards), jokers)
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


@cache
def joker_template_values(scoring: str) -> dict[tuple[int, int], int]:
    """Table value of each three-card start with a joker, by (template, joker place): the two
    natural cards (an ace read from the run's shape) and 15 for the joker."""
    return {
        (t, k): sum(meld_value(_template_meld(cards, 1 << cards[k]), scoring))
        for t, cards in enumerate(MELD_TEMPLATES)
        for k in range(3)
    }


def start_value(t: int, joker: Card, scoring: str) -> int:
    """Table value of the three-card start of template `t`, with a joker standing for `joker`
    (-1: none)."""
    if joker < 0:
        return template_values(scoring)[t]
    return joker_template_values(scoring)[(t, MELD_TEMPLATES[t].index(joker))]


def laid_value(meld: Meld, card: Card, scoring: str) -> int:
    """What `card` (one of `meld.fits`) scores once laid off on `meld`: an ace laid below a
    run's 2 scores low, above its king high."""
    after = lay_off(meld, card, 0)
    return meld_value(after, scoring)[after.cards.index(card)]


def plan(hand: Iterable[Card], table: Sequence[Meld], scoring: str) -> tuple[int, Counter[Card]]:
    """Greedy plan of what a hand can put on the table now: the most valuable three-card meld
    first (it joins the table, so later cards can be laid off on it), then the lay-off of the
    hand's most valuable card, each time, until nothing fits; then the hand's jokers (id 52),
    each in the most valuable start it completes with two natural cards, else on a lay-off
    spot, and the natural cards again.

    Returns (points put down, cards used: a joker as 52). A heuristic: it does not search
    every split.
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
            if best is not None:
                i, card, value = best
                melds[i] = lay_off(melds[i], card, 0)
                total += value
                played = (card,)
            elif left[JOKER] > 0 and (wild := _joker_play(left, melds, scoring)) is not None:
                total += wild[0]
                played = wild[1]
            else:
                return total, used
        left.subtract(played)
        used.update(played)


def _joker_play(
    left: Counter[Card], melds: list[Meld], scoring: str
) -> tuple[int, tuple[Card, ...]] | None:
    """The plan's use of a joker: the most valuable start it completes with two natural cards
    of `left` (the start joins `melds`), else a lay-off on the first spot of the table.
    Returns (points, cards played: the two natural cards and 52), or None."""
    starts = joker_templates_in(mask_of(c for c, k in left.items() if k > 0 and c != JOKER))
    if starts:
        values = joker_template_values(scoring)
        t, k = max(starts, key=lambda s: (values[s], s))
        cards = MELD_TEMPLATES[t]
        melds.append(_template_meld(cards, 1 << cards[k]))
        return values[(t, k)], (*(c for i, c in enumerate(cards) if i != k), JOKER)
    for i, m in enumerate(melds):
        if m.fits:
            melds[i] = lay_off(m, m.fits[0], 0, joker=True)
            return JOKER_VALUE, (JOKER,)
    return None


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
    held = mask_of(c for c in hand if c != JOKER)
    return {c for c in cards_in(held) if any(pair & held for pair in MELD_PARTNERS[c])}


def neighbours(card: Card) -> tuple[tuple[Card, Card], ...]:
    """The pairs of cards that make a three-card meld with `card`."""
    return _NEIGHBOURS[card]


def _pair(mask: int) -> tuple[Card, Card]:
    a, b = cards_in(mask)
    return a, b


_NEIGHBOURS = tuple(tuple(_pair(pair) for pair in MELD_PARTNERS[card]) for card in range(52))
