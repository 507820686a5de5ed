"""Cards as small ints, their text forms, and multisets of cards as pairs of bitmasks.

Id layout (written once, here): ``card = suit * 13 + rank`` with

* suits in bridge order ``C D H S`` (clubs 0, diamonds 1, hearts 2, spades 3), and
* ranks ``A 2 3 4 5 6 7 8 9 10 J Q K`` as 0..12 (the ace is rank 0).

So each suit is a contiguous 13-bit field of a 52-bit mask: a run is a bit pattern inside one
field, and the king of one suit sits next to the ace of the next without ever forming a run
(runs never cross fields). Id 52 is the joker (``JK``, docs/rules.md §5); its bit,
`JOKER_BIT`, lies above every suit field, so the meld finders never see it.

With two decks a player can hold both copies of a card, so a multiset of cards is kept as two
masks: ``one`` has the bit of every card held at least once, ``two`` of every card held twice.
Jokers (up to four with two decks) are not kept in these masks but counted beside them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeAlias, TypeVar

from rummy500_env.engine.errors import Rummy500Error
from rummy500_env.engine.numbers import quoted

Card: TypeAlias = int
"""A card id 0..51 (see the module docstring); 52 is the joker."""

SUITS = "CDHS"
SUIT_SYMBOLS = "♣♦♥♠"
RANKS = ("A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K")
JOKER: Card = 52
JOKER_BIT = 1 << JOKER
"""The joker's bit in a card mask: set in a mask of held cards when any joker is held."""
NUM_CARDS = 52
ALL_CARDS: tuple[Card, ...] = tuple(range(NUM_CARDS))
ALL_CARDS_MASK = (1 << NUM_CARDS) - 1

_RANK_FROM_TEXT = {r: i for i, r in enumerate(RANKS)} | {"T": 9}
_SUIT_FROM_TEXT = {s: i for i, s in enumerate(SUITS)} | {s: i for i, s in enumerate(SUIT_SYMBOLS)}
_NAMES: tuple[str, ...] = tuple(RANKS[c % 13] + SUITS[c // 13] for c in ALL_CARDS)


class CardParseError(Rummy500Error):
    """Text that is not a card."""


def suit_of(card: Card) -> int:
    """Suit index 0..3 (C D H S)."""
    return card // 13


def rank_of(card: Card) -> int:
    """Rank index 0..12 (A 2 .. 10 J Q K)."""
    return card % 13


def make_card(rank: int, suit: int) -> Card:
    """The card of a rank index (0 = ace) and suit index (0 = clubs)."""
    return suit * 13 + rank


def card_str(card: Card) -> str:
    """Canonical text of a card: ``"10H"``, ``"AS"``, ``"JK"``.

    >>> card_str(parse_card("th"))
    '10H'
    """
    if card == JOKER:
        return "JK"
    return _NAMES[card]


def parse_card(text: str) -> Card:
    """Parse one card: any case, ``10`` or ``T``, a suit letter or symbol, rank first or suit
    first (``10♥``, ``♥10``), or ``JK``.

    Raises `CardParseError` quoting the text when it is not a card.

    >>> parse_card("10♥") == parse_card("TH") == parse_card("10h")
    True
    """
    t = text.strip().upper()
    if t == "JK":
        return JOKER
    if len(t) >= 2:
        rank, suit = _RANK_FROM_TEXT.get(t[:-1]), _SUIT_FROM_TEXT.get(t[-1])
        if rank is None or suit is None:  # suit first, as in "♣5" (seed 001)
            rank, suit = _RANK_FROM_TEXT.get(t[1:]), _SUIT_FROM_TEXT.get(t[0])
        if rank is not None and suit is not None:
            return suit * 13 + rank
    raise CardParseError(
        f"not a card: {quoted(text)}; write rank then suit, e.g. 'AS', '10H' (or 'TH', '10♥'), "
        "'QC', 'JK'"
    )


def parse_cards(text: str | Iterable[str]) -> list[Card]:
    """Parse cards separated by spaces or commas (or an iterable of card texts), in order."""
    parts = text.replace(",", " ").split() if isinstance(text, str) else list(text)
    return [parse_card(p) for p in parts]


def cards_str(cards: Iterable[Card]) -> str:
    """Cards in canonical text, separated by spaces."""
    return " ".join(card_str(c) for c in cards)


def mask_of(cards: Iterable[Card]) -> int:
    """The mask of the cards held at least once."""
    m = 0
    for c in cards:
        m |= 1 << c
    return m


T = TypeVar("T")
ByteTables: TypeAlias = tuple[tuple[tuple[T, ...], ...], ...]


def byte_tables(value: Callable[[Card], T], limit: int = 56) -> ByteTables[T]:
    """For byte i of a card mask and every byte value, `value` of each of its cards below
    `limit`, ascending: the lookup tables that `gather` reads."""
    return tuple(
        tuple(
            tuple(value(c) for j in range(8) if b >> j & 1 and (c := 8 * i + j) < limit)
            for b in range(256)
        )
        for i in range(7)
    )


def gather(mask: int, tables: ByteTables[T]) -> list[T]:
    """The table values of the cards of a mask, ascending: a byte at a time, which is several
    times faster than a bit at a time."""
    out: list[T] = []
    i = 0
    while mask:
        b = mask & 255
        if b:
            out += tables[i][b]
        mask >>= 8
        i += 1
    return out


_BYTE_CARDS = byte_tables(lambda c: c)


def cards_in(mask: int) -> list[Card]:
    """The cards of a mask, ascending."""
    return gather(mask, _BYTE_CARDS)


def multiset_add(one: int, two: int, card: Card) -> tuple[int, int]:
    """Add a card to the multiset (one, two)."""
    b = 1 << card
    if one & b:
        return one, two | b
    return one | b, two


def multiset_remove(one: int, two: int, card: Card) -> tuple[int, int]:
    """Remove one copy of a card (which must be present) from the multiset (one, two)."""
    b = 1 << card
    if two & b:
        return one, two ^ b
    return one ^ b, two


def multiset_cards(one: int, two: int) -> list[Card]:
    """Every card of the multiset, ascending, repeated as often as held."""
    return sorted(cards_in(one) + cards_in(two))


def multiset_of(cards: Iterable[Card]) -> tuple[int, int]:
    """Build a multiset (one, two) from cards; raises ValueError on a third copy."""
    one = two = 0
    for c in cards:
        b = 1 << c
        if two & b:
            raise ValueError(f"card {card_str(c)} appears more than twice")
        if one & b:
            two |= b
        else:
            one |= b
    return one, two
