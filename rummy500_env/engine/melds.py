"""Meld shapes, the 100 three-card meld templates, lay-off fit, and card values.

A run is described by its suit and the ordinals of its ends, where an ordinal is the card's
position in a run: ace low = 1, 2..K = 2..13, ace high = 14 (docs/rules.md §1 "Melds": an ace is
low or high, never both, and runs never wrap). A set is described by its rank and the mask of
suits it holds. `Meld` values are immutable; a lay-off builds a new one.

A joker on the table stands for one card (docs/rules.md §5), so a meld lists the cards its
places stand for, and the mask `Meld.jokers` marks the places a joker fills: the shape, the
lay-off fits and an ace's value are read from those cards, as if each joker were its card.
"""

from __future__ import annotations

import itertools
from typing import NamedTuple

from rummy500_env.engine.cards import JOKER, Card, card_str, make_card, rank_of, suit_of

ACE = 0  # rank index of the ace
FULL_RUN = 13  # a run of all thirteen ranks; its ace scores high (docs/rules.md §1 scoring)


class Meld(NamedTuple):
    """A meld on the table: its cards in order (runs low to high) and who put each card there.

    For a run, ``suit`` is its suit and ``lo``/``hi`` the ordinals of its ends; for a set,
    ``suit`` is the mask of suits held (bit per suit) and ``lo == hi`` its rank index.
    ``fits`` are the cards that can be laid off on it now (a card a joker stands for is in
    ``cards``, so it is never a fit: its place is taken). ``jokers`` is the mask of the cards
    of ``cards`` whose place a joker fills (docs/rules.md §5).
    """

    is_run: bool
    cards: tuple[Card, ...]
    owners: tuple[int, ...]
    suit: int
    lo: int
    hi: int
    fits: tuple[Card, ...]
    jokers: int = 0

    @property
    def kind(self) -> str:
        """``"run"`` or ``"set"``."""
        return "run" if self.is_run else "set"

    def labels(self) -> list[str]:
        """Each place in notation: ``9D``, or ``JK=9D`` where a joker stands for 9D."""
        return [place_str(c, self.jokers) for c in self.cards]

    def __str__(self) -> str:
        return " ".join(self.labels())


def place_str(card: Card, jokers: int) -> str:
    """A meld place in notation: the card, or ``JK=`` and the card if the mask `jokers` marks
    it as a joker's."""
    return f"JK={card_str(card)}" if jokers >> card & 1 else card_str(card)


def _ordinal_card(suit: int, ordinal: int) -> Card:
    return make_card(0 if ordinal == 14 else ordinal - 1, suit)


def _run_fits(suit: int, lo: int, hi: int) -> tuple[Card, ...]:
    if hi - lo + 1 >= FULL_RUN:
        return ()
    fits: list[Card] = []
    if lo > 1:
        fits.append(_ordinal_card(suit, lo - 1))
    if hi < 14 and _ordinal_card(suit, hi + 1) not in fits:  # 2..K takes one ace, not two
        fits.append(_ordinal_card(suit, hi + 1))
    return tuple(fits)


def make_run(suit: int, lo: int, hi: int, owners: tuple[int, ...], jokers: int = 0) -> Meld:
    """The run of `suit` from ordinal `lo` to `hi` (cards low to high); `jokers` marks the
    cards whose place a joker fills."""
    cards = tuple(_ordinal_card(suit, o) for o in range(lo, hi + 1))
    return Meld(True, cards, owners, suit, lo, hi, _run_fits(suit, lo, hi), jokers)


def make_set(rank: int, cards: tuple[Card, ...], owners: tuple[int, ...], jokers: int = 0) -> Meld:
    """The set of `rank` holding `cards` (distinct suits); `jokers` marks the cards whose
    place a joker fills."""
    suits = 0
    for c in cards:
        suits |= 1 << suit_of(c)
    fits = (
        () if len(cards) >= 4 else tuple(make_card(rank, s) for s in range(4) if not suits >> s & 1)
    )
    return Meld(False, cards, owners, suits, rank, rank, fits, jokers)


def meld_from_cards(
    cards: list[Card] | tuple[Card, ...], owners: tuple[int, ...], jokers: int = 0
) -> Meld | None:
    """The meld these cards form in the order given (runs low to high), or None if no meld.

    A set takes its cards in any order; a run must be listed low to high (an ace is low
    first in the list, high last). `jokers` marks the cards whose place a joker fills: the
    shape is read as if each were its card (docs/rules.md §5), so a joker can only stand for
    a card its meld could take there. Whether the meld could have started with two natural
    cards is `natural_start`'s to say.
    """
    n = len(cards)
    if n < 3 or len(owners) != n:
        return None
    ranks = {rank_of(c) for c in cards}
    if len(ranks) == 1:
        if n > 4 or len({suit_of(c) for c in cards}) != n:
            return None
        return make_set(rank_of(cards[0]), tuple(cards), owners, jokers)
    if n > FULL_RUN or len({suit_of(c) for c in cards}) != 1:
        return None
    suit = suit_of(cards[0])
    ords = [rank_of(c) + 1 for c in cards]
    if ords[-1] == 1 and n > 1 and ords[-2] == 13:
        ords[-1] = 14  # ace at the high end
    if any(b != a + 1 for a, b in itertools.pairwise(ords)):
        return None
    return make_run(suit, ords[0], ords[-1], owners, jokers)


def natural_start(meld: Meld, owed: Card | None = None) -> bool:
    """Whether `meld` can be read as a three-card start with at most one joker (two natural
    cards), grown by lay-offs one card at a time (docs/rules.md §5); with `owed`, a start that
    holds that card: a natural card as itself, `JOKER` as any joker.

    A run grows only at its ends, so its start is three adjacent places; a set's start is any
    three of its cards.
    """
    jokers, cards = meld.jokers, meld.cards
    if not jokers:
        return owed is None or owed in cards
    if not meld.is_run:
        naturals = [c for c in cards if not jokers >> c & 1]
        if len(naturals) < 2:
            return False
        return owed is None or (owed in naturals if owed != JOKER else True)
    for i in range(len(cards) - 2):
        window = cards[i : i + 3]
        wild = [c for c in window if jokers >> c & 1]
        if len(wild) > 1:
            continue
        if owed is None or (wild != [] if owed == JOKER else owed in window and owed not in wild):
            return True
    return False


SET, RUN_LOW, RUN_HIGH = 0, 1, 2
"""Where a lay-off lands: on a set, below a run's low end, above a run's high end."""


def layoff_end(meld: Meld, card: Card) -> int:
    """Where `card` (one of `meld.fits`) lands: `SET`, `RUN_LOW` or `RUN_HIGH`.

    A card that fits both ends of a run (an ace on 2..K) goes high: either way the run then
    holds all thirteen ranks and the ace scores 15.
    """
    if not meld.is_run:
        return SET
    o = rank_of(card) + 1
    if meld.hi < 14 and (o == meld.hi + 1 or (o == 1 and meld.hi == 13)):
        return RUN_HIGH
    return RUN_LOW


def lay_off(meld: Meld, card: Card, player: int, joker: bool = False) -> Meld:
    """The meld after `player` lays `card` off on it (the card must be in `meld.fits`); with
    `joker`, a joker standing for `card` is laid off (docs/rules.md §5)."""
    end = layoff_end(meld, card)
    jokers = meld.jokers | 1 << card if joker else meld.jokers
    if end == SET:
        return make_set(meld.lo, (*meld.cards, card), (*meld.owners, player), jokers)
    if end == RUN_HIGH:
        return make_run(meld.suit, meld.lo, meld.hi + 1, (*meld.owners, player), jokers)
    return make_run(meld.suit, meld.lo - 1, meld.hi, (player, *meld.owners), jokers)


# --- three-card meld templates
# The 100 three-card melds, in a fixed order that the action codec relies on:
# first the 52 sets (for rank A..K, the four choices of three suits, leaving out S, H, D, C in
# that order), then the 48 runs (for suit C, D, H, S, the runs starting at ordinal 1..12, i.e.
# A-2-3 up to Q-K-A).


def _templates() -> tuple[tuple[Card, Card, Card], ...]:
    out: list[tuple[Card, Card, Card]] = []
    for rank in range(13):
        for missing in (3, 2, 1, 0):
            a, b, c = (make_card(rank, s) for s in range(4) if s != missing)
            out.append((a, b, c))
    for suit in range(4):
        for lo in range(1, 13):
            a, b, c = (_ordinal_card(suit, o) for o in range(lo, lo + 3))
            out.append((a, b, c))
    return tuple(out)


MELD_TEMPLATES: tuple[tuple[Card, Card, Card], ...] = _templates()
"""Every three-card meld, cards in table order (runs low to high)."""
MELD_MASKS: tuple[int, ...] = tuple((1 << a) | (1 << b) | (1 << c) for a, b, c in MELD_TEMPLATES)
MELDS_WITH: tuple[tuple[int, ...], ...] = tuple(
    tuple(i for i, t in enumerate(MELD_TEMPLATES) if card in t) for card in range(52)
)
"""For each card, the indices of the templates that contain it."""


def template_index(cards: tuple[Card, ...] | list[Card]) -> int | None:
    """Index of the three-card template made of these cards (any order), or None."""
    m = 0
    for c in cards:
        m |= 1 << c
    if len(cards) != 3 or m.bit_count() != 3:
        return None
    return _TEMPLATE_BY_MASK.get(m)


_TEMPLATE_BY_MASK = {m: i for i, m in enumerate(MELD_MASKS)}


# --- card values (docs/rules.md §1 scoring table, §2 `scoring`)

PIP_HAND = tuple(15 if r == ACE else min(r + 1, 10) for r in range(13))
FIVES_HAND = tuple(15 if r == ACE else (5 if r < 9 else 10) for r in range(13))
JOKER_VALUE = 15
"""A joker's value wherever it is, on the table or in hand, under either scoring (§5)."""


def hand_values(scoring: str) -> tuple[int, ...]:
    """Value (positive) of each card id left in hand under a scoring scheme, the joker (id
    52) included."""
    per_rank = PIP_HAND if scoring == "pip" else FIVES_HAND
    return (*(per_rank[c % 13] for c in range(52)), JOKER_VALUE)


def meld_value(meld: Meld, scoring: str) -> list[int]:
    """Table value of each card of a meld, read from its shape now (the two-faced ace); a
    joker's place is worth 15 whatever card it stands for (docs/rules.md §5)."""
    per_rank = PIP_HAND if scoring == "pip" else FIVES_HAND
    low_ace = 1 if scoring == "pip" else 5
    out = []
    for c in meld.cards:
        r = c % 13
        if r == ACE and meld.is_run and meld.lo == 1 and meld.hi - meld.lo + 1 < FULL_RUN:
            out.append(low_ace)
        else:
            out.append(per_rank[r])
    jokers = meld.jokers
    if jokers:
        return [JOKER_VALUE if jokers >> c & 1 else v for c, v in zip(meld.cards, out, strict=True)]
    return out


# --- finding melds in a hand (bit arithmetic on the suit fields of `cards`)

_SUIT_FIELD = 0x1FFF  # one suit's 13-bit field of a card mask
_RUN_STARTS = sum(0x7FF << 13 * s for s in range(4))  # a run can start at A..J of a suit
_QUEENS = sum(1 << 13 * s + 11 for s in range(4))  # ...or at its queen, ending with the ace
_RUN_AT = tuple(52 + 12 * (pos // 13) + pos % 13 for pos in range(52))
"""Template index of the three-card run starting at card `pos` (Q-K-A starts at the queen)."""

RANK_MATES: tuple[int, ...] = (
    *(sum(1 << (c % 13 + 13 * s) for s in range(4)) & ~(1 << c) for c in range(52)),
    0,
)
"""For each card, the mask of the other three cards of its rank (a set needs two of them);
none for the joker (id 52), which `starts_with_a_joker` handles."""
MELD_PARTNERS: tuple[tuple[int, ...], ...] = tuple(
    tuple(MELD_MASKS[t] & ~(1 << card) for t in MELDS_WITH[card]) for card in range(52)
)
"""For each card, masks of the two other cards that complete a three-card meld with it."""
RUN_PARTNERS: tuple[tuple[int, ...], ...] = (
    *(tuple(pair for pair in MELD_PARTNERS[c] if not pair & RANK_MATES[c]) for c in range(52)),
    (),
)
"""For each card, the pairs of `MELD_PARTNERS` that make a run with it (none for the joker)."""


def starts_a_meld(card: Card, held: int) -> bool:
    """Whether `card` makes a three-card meld with two natural cards of the mask `held` (never
    for the joker: see `starts_with_a_joker`)."""
    mates = held & RANK_MATES[card]
    if mates & (mates - 1):  # two more of its rank: a set
        return True
    for pair in RUN_PARTNERS[card]:  # a loop, not any(): this runs for every buried card
        if held & pair == pair:
            return True
    return False


def meld_templates_in(held: int) -> list[int]:
    """Indices (in `MELD_TEMPLATES` order) of every three-card meld within the mask `held`.

    Bit arithmetic instead of testing all 100 templates: a rank held in three of the four
    13-bit suit fields is a set; a card whose two successors are held starts a run.

    >>> from rummy500_env.engine.cards import parse_cards
    >>> [MELD_TEMPLATES[t] == tuple(parse_cards("9C 9D 9H")) for t in meld_templates_in(
    ...     sum(1 << c for c in parse_cards("9C 9D 9H 4S")))]
    [True]
    """
    f = _SUIT_FIELD
    f0, f1, f2, f3 = held & f, held >> 13 & f, held >> 26 & f, held >> 39 & f
    out: list[int] = []
    three = (f0 & f1 & (f2 | f3)) | ((f0 | f1) & f2 & f3)
    while three:
        low = three & -three
        r = low.bit_length() - 1
        three ^= low
        b = 1 << r
        missing = [s for s, field in enumerate((f0, f1, f2, f3)) if not field & b]
        if missing:
            out.append(4 * r + 3 - missing[0])  # sets leave out S, H, D, C in that order
        else:
            out += (4 * r, 4 * r + 1, 4 * r + 2, 4 * r + 3)
    starts = (held & held >> 1 & held >> 2 & _RUN_STARTS) | (
        held & held >> 1 & held << 11 & _QUEENS
    )
    while starts:
        low = starts & -starts
        out.append(_RUN_AT[low.bit_length() - 1])
        starts ^= low
    return out


# --- three-card starts with a joker (docs/rules.md §5: at most one joker among them)


def _run_field(held: int, suit: int) -> int:
    """A suit's cards of `held` by ordinal: bit o - 1 for ordinal o = 1..14 (the ace twice)."""
    f = held >> 13 * suit & _SUIT_FIELD
    return f | (f & 1) << 13


def has_meld_pair(held: int) -> bool:
    """Whether two natural cards of the mask `held` make a three-card meld with a joker: two
    of a rank, or two of a suit at most two ranks apart (the ace next to the 2 and the king).

    >>> from rummy500_env.engine.cards import parse_cards
    >>> has_meld_pair(sum(1 << c for c in parse_cards("KH AH"))), has_meld_pair(1 << 5)
    (True, False)
    """
    f = _SUIT_FIELD
    f0, f1, f2, f3 = held & f, held >> 13 & f, held >> 26 & f, held >> 39 & f
    if f0 & (f1 | f2 | f3) or f1 & (f2 | f3) or f2 & f3:
        return True
    for suit in range(4):
        g = _run_field(held, suit)
        if g & (g >> 1 | g >> 2):
            return True
    return False


def starts_with_a_joker(card: Card, held: int) -> bool:
    """Whether `card` makes a three-card meld with a joker and one natural card of the mask
    `held`; for `card` the joker itself, whether two natural cards of `held` make one with
    it."""
    if card == JOKER:
        return has_meld_pair(held)
    for pair in MELD_PARTNERS[card]:
        if held & pair:
            return True
    return False


def _set_joker_places() -> tuple[tuple[tuple[int, int], ...], ...]:
    """For each 4-bit mask of suits held in one rank: the (template offset within the rank,
    joker place) pairs whose other two cards are held."""
    out = []
    for suits in range(16):
        found = []
        for j, missing in enumerate((3, 2, 1, 0)):
            members = [s for s in range(4) if s != missing]
            for k in range(3):
                others = [s for i, s in enumerate(members) if i != k]
                if all(suits >> s & 1 for s in others):
                    found.append((j, k))
        out.append(tuple(found))
    return tuple(out)


_SET_JOKER_PLACES = _set_joker_places()
JOKER_START_PAIRS: tuple[tuple[int, int, int], ...] = tuple(
    (t, k, MELD_MASKS[t] & ~(1 << MELD_TEMPLATES[t][k])) for t in range(100) for k in range(3)
)
"""Every three-card start with a joker: (template, joker place, mask of the two natural
cards), in template order then place order; the action codec numbers them this way."""


def joker_templates_in(held: int) -> list[tuple[int, int]]:
    """Every three-card start with one joker whose two natural cards are in the mask `held`:
    (template index, the joker's place 0..2 in the template's table order), sorted.

    >>> from rummy500_env.engine.cards import parse_cards
    >>> [(MELD_TEMPLATES[t], k) for t, k in joker_templates_in(
    ...     sum(1 << c for c in parse_cards("5H 7H")))] == [(tuple(parse_cards("5H 6H 7H")), 1)]
    True
    """
    f = _SUIT_FIELD
    fields = (held & f, held >> 13 & f, held >> 26 & f, held >> 39 & f)
    f0, f1, f2, f3 = fields
    out: list[tuple[int, int]] = []
    pairs = f0 & (f1 | f2 | f3) | f1 & (f2 | f3) | f2 & f3
    while pairs:
        low = pairs & -pairs
        r = low.bit_length() - 1
        pairs ^= low
        suits = sum(1 << s for s in range(4) if fields[s] >> r & 1)
        out += [(4 * r + j, k) for j, k in _SET_JOKER_PLACES[suits]]
    for suit in range(4):
        g = _run_field(held, suit)
        base = 52 + 12 * suit
        # The run starting at ordinal lo + 1 holds the bits lo, lo + 1 and lo + 2 of g.
        for k, starts in enumerate(
            (g >> 1 & g >> 2 & 0xFFF, g & g >> 2 & 0xFFF, g & g >> 1 & 0xFFF)
        ):
            while starts:
                low = starts & -starts
                out.append((base + low.bit_length() - 1, k))
                starts ^= low
    out.sort()
    return out
