"""Card arithmetic the heuristic bots share: card values on the table, a greedy meld plan,
and the partial melds a hand is building."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from rummy500_env.cards import rank_of, suit_of
from rummy500_env.game import meld_templates_in
from rummy500_env.melds import ACE, MELD_TEMPLATES, MELDS_WITH


def table_value(card: int, values: tuple[int, ...], low_ace: bool, fives: bool) -> int:
    """A card's value once on the table (the ace low in a run scores 1, or 5 with fives)."""
    if rank_of(card) == ACE and low_ace:
        return 5 if fives else 1
    return values[card]


def template_value(t: int, values: tuple[int, ...], fives: bool) -> int:
    """Table value of three-card meld template `t` (A-2-3 scores its ace low)."""
    cards = MELD_TEMPLATES[t]
    low = t >= 52 and rank_of(cards[0]) == ACE  # a run that starts with the ace
    return sum(table_value(c, values, low and i == 0, fives) for i, c in enumerate(cards))


def plan(
    hand: Iterable[int], fits: list[set[int]], values: tuple[int, ...], fives: bool
) -> tuple[int, Counter[int]]:
    """Greedy plan of what a hand can put on the table now: the most valuable three-card
    meld first, each new run extended by the hand, then lay-offs onto the table.

    Returns (points put down, cards used). A heuristic: it does not search every split.
    """
    left = Counter(hand)
    used: Counter[int] = Counter()
    low_fits, high_fits, set_fits = set(fits[1]), set(fits[2]), set(fits[0])
    total = 0
    while True:
        one = 0
        for c, k in left.items():
            if k:
                one |= 1 << c
        options = meld_templates_in(one)
        if options:
            t = max(options, key=lambda t: (template_value(t, values, fives), t))
            total += template_value(t, values, fives)
            cards = MELD_TEMPLATES[t]
            for c in cards:
                left[c] -= 1
                used[c] += 1
            if t >= 52:  # a run: its ends take more cards
                _extend_fits(cards, low_fits, high_fits)
            else:
                set_fits |= {rank_of(cards[0]) + 13 * s for s in range(4)} - set(cards)
            continue
        lay = [
            c for c, k in left.items() if k and (c in set_fits or c in low_fits or c in high_fits)
        ]
        if not lay:
            return total, used
        c = max(lay, key=lambda c: (values[c], c))
        low = c in low_fits and c not in high_fits and c not in set_fits
        total += table_value(c, values, low and rank_of(c) == ACE, fives)
        left[c] -= 1
        used[c] += 1
        s, o = suit_of(c), rank_of(c) + 1
        if c in low_fits and not (c in high_fits or c in set_fits):
            low_fits.discard(c)
            if o > 1:
                low_fits.add(s * 13 + o - 2)
        elif c in high_fits:
            high_fits.discard(c)
            if 1 < o < 13:
                high_fits.add(s * 13 + o)
            elif o == 13:
                high_fits.add(s * 13)
        else:
            set_fits.discard(c)


def _extend_fits(cards: tuple[int, ...], low_fits: set[int], high_fits: set[int]) -> None:
    s = suit_of(cards[0])
    lo, hi = rank_of(cards[0]) + 1, rank_of(cards[-1]) + 1
    if hi == 1:
        hi = 14
    if lo > 1:
        low_fits.add(s * 13 + lo - 2)
    if hi < 14:
        high_fits.add(s * 13 + (hi if hi < 13 else 0))


def partial_cards(hand: Iterable[int]) -> set[int]:
    """Cards in a partial meld: a pair of one rank, or two of a suit at most two ranks apart
    (the ace counts next to both the 2 and the king)."""
    cards = set(hand)
    out = set()
    for c in cards:
        r, s = rank_of(c), suit_of(c)
        if any(s2 != s and r + 13 * s2 in cards for s2 in range(4)):
            out.add(c)
            continue
        for dr in (-2, -1, 1, 2):
            o = r + 1 + dr  # ordinal of the neighbour: ace low 1, ace high 14
            if 1 <= o <= 14 and s * 13 + (o - 1) % 13 in cards and (o - 1) % 13 != r:
                out.add(c)
                break
    return out


def neighbours(card: int) -> tuple[tuple[int, int], ...]:
    """The pairs of cards that make a three-card meld with `card`."""
    return _NEIGHBOURS[card]


_NEIGHBOURS = tuple(
    tuple(tuple(c for c in MELD_TEMPLATES[t] if c != card) for t in MELDS_WITH[card])
    for card in range(52)
)
