"""`Action`: one decision in the text notation, its parser and its printer.

Syntax only: `Action.parse` says whether text is an action at all (`ActionParseError`);
whether it is legal now is the `Game`'s to say (`IllegalActionError`), as python-chess keeps
`Move.from_uci` apart from `Board.is_legal`.

Notation (docs/rules.md §6): ``draw`` · ``take`` · ``dig 9D`` (``dig 9D#2``: the second buried
copy from the top, two decks) · ``decline`` · ``meld 9S 9H 9D`` · ``layoff 10C 2`` ·
``discard 2C``. With jokers (§5): ``JK`` is a joker, and in a meld or a lay-off ``JK=9D`` is a
joker standing for 9D (``meld 9S 9H JK=9D``, ``layoff JK=10C 2``); ``dig JK`` (``dig JK#2``),
``discard JK``. With "Rummy!" calls (§5): ``call 9D`` (the copy nearest the top, the top card
included; ``call 9D#2`` the next one down), ``pass``, ``done``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Literal, NamedTuple, get_args

from rummy500_env.engine.cards import (
    JOKER,
    NUM_CARDS,
    Card,
    CardParseError,
    byte_tables,
    card_str,
    parse_card,
    rank_of,
)
from rummy500_env.engine.errors import ActionParseError
from rummy500_env.engine.melds import ACE, FULL_RUN, JOKER_START_PAIRS, MELD_TEMPLATES, place_str
from rummy500_env.engine.numbers import quoted, shown

ActionKind = Literal[
    "draw", "take", "dig", "decline", "meld", "layoff", "discard", "call", "pass", "done"
]
ACTION_KINDS: tuple[ActionKind, ...] = get_args(ActionKind)
DRAW_KINDS: frozenset[str] = frozenset(("draw", "take", "dig", "decline"))
"""The kinds of the draw phase."""
CALL_KINDS: frozenset[str] = frozenset(("call", "pass"))
"""The kinds of a call window (docs/rules.md §5)."""
WILD_KINDS: frozenset[str] = frozenset(("call", "pass", "done"))
"""The kinds that exist only with calls (docs/rules.md §5)."""
MAX_COPIES = {False: 2, True: 4}
"""How many copies of a card a pile can hold: two of a natural card (two decks), four jokers."""

SYNTAX = (
    "actions are: draw | take | dig 9D (or dig 9D#2, dig JK) | decline | meld 9S 9H 9D (a "
    "joker: meld 9S 9H JK=9D) | layoff 10C 2 (layoff JK=10C 2) | discard 2C (discard JK) | "
    "call 9D (or call 9D#2) | pass | done"
)


class Action(NamedTuple):
    """One decision in the notation; immutable and hashable.

    ``cards`` holds the dug, called, melded, laid-off or discarded cards (melds in table order:
    sets by suit, runs low to high); in a meld or a lay-off a joker is listed as the card it
    stands for and marked in the mask ``jokers``. ``target`` is the meld index of a lay-off;
    ``copy`` says which copy of a card in the pile a dig or a call takes when the pile holds
    it more than once (1 = nearest the top).

    >>> str(Action.parse("MELD 9s 9h 9d"))
    'meld 9D 9H 9S'
    >>> Action.parse("dig 9D#2")
    Action(kind='dig', cards=(21,), target=-1, copy=2)
    >>> str(Action.parse("meld 9s 9h jk=9d"))
    'meld JK=9D 9H 9S'
    """

    kind: ActionKind
    cards: tuple[Card, ...] = ()
    target: int = -1
    copy: int = 1
    jokers: int = 0

    def __str__(self) -> str:
        """The notation; an action whose cards are not card ids (a refusal quotes it) reads
        as its `repr`, never as some other card."""
        k, cards = self.kind, self.cards
        if not self.has_card_ids():
            return repr(self)
        if k in ("draw", "take", "decline", "pass", "done"):
            return k
        if k in ("dig", "call") and len(cards) == 1:
            return f"{k} {card_str(cards[0])}" + (f"#{self.copy}" if self.copy != 1 else "")
        if k == "layoff" and len(cards) == 1:
            return f"layoff {place_str(cards[0], self.jokers)} {self.target}"
        return " ".join([k, *(place_str(c, self.jokers) for c in cards)])

    def has_card_ids(self) -> bool:
        """Whether every entry of `cards` is a card id 0..52 (52 the joker), as built: a
        caller may have put anything there."""
        given: tuple[object, ...] = self.cards  # compiled, a Card would unbox (and raise)
        return all(type(c) is int and 0 <= c <= JOKER for c in given)

    def __repr__(self) -> str:
        extra = f", jokers={self.jokers}" if self.jokers else ""
        return (
            f"Action(kind={self.kind!r}, cards={self.cards!r}, target={self.target}, "
            f"copy={self.copy}{extra})"
        )

    def joker_count(self) -> int:
        """How many jokers the action moves: the marked places of a meld or a lay-off, or
        the joker a dig, a call or a discard names."""
        if self.kind in ("meld", "layoff"):
            return self.jokers.bit_count()
        return self.cards.count(JOKER)

    def naturals(self) -> list[Card]:
        """The natural cards the action names (the cards its jokers stand for left out)."""
        jokers = self.jokers
        return [c for c in self.cards if c != JOKER and not jokers >> c & 1]

    @classmethod
    def parse(cls, text: object) -> Action:
        """Parse the text notation (any case, any card form); raises `ActionParseError`."""
        if not isinstance(text, str):
            raise ActionParseError(f"an action must be text or an Action, not {shown(text)}")
        words = text.replace(",", " ").split()
        if not words:
            raise ActionParseError(f"empty action text {quoted(text)}; {SYNTAX}")
        try:
            action = _parse_words(words[0].lower(), words[1:], text)
        except CardParseError as e:
            raise ActionParseError(f"in action {quoted(text)}: {e}") from None
        if action is None:
            raise ActionParseError(f"not an action: {quoted(text)}; {SYNTAX}")
        return action


def _parse_words(kind: str, args: list[str], text: str) -> Action | None:
    """The action of a kind word and its arguments, or None if they do not fit together."""
    if kind in SIMPLE_ACTIONS:
        if args:
            raise ActionParseError(f"{kind!r} takes no arguments, got {quoted(text)}")
        return SIMPLE_ACTIONS[kind]
    if kind in ("dig", "call") and len(args) == 1:
        name, _, copy = args[0].partition("#")
        card = _plain_card(name, text)
        most = MAX_COPIES[card == JOKER]
        if copy and copy not in [str(k) for k in range(1, most + 1)]:
            raise ActionParseError(
                f"{kind} copy must be #1 to #{most} ({'four jokers' if most == 4 else 'two decks'}"
                f"), got {quoted(text)}"
            )
        return Action(kind, (card,), -1, int(copy or 1))  # type: ignore[arg-type]  # dig|call
    if kind == "meld" and len(args) > FULL_RUN:
        raise ActionParseError(
            f"a meld holds at most {FULL_RUN} cards, got {len(args)} in {quoted(text)}"
        )
    if kind == "meld" and len(args) >= 3:
        places = [_place(a, text) for a in args]
        return meld_action((c for c, _ in places), _joker_mask(places, text))
    if kind == "layoff" and len(args) == 2:
        if not _is_meld_number(args[1]):
            raise ActionParseError(
                f"layoff needs a card and a meld number in the digits 0-9 (at most "
                f"{MELD_NUMBER_DIGITS}), e.g. 'layoff 10C 2', got {quoted(text)}"
            )
        card, joker = _place(args[0], text)
        if joker:
            return joker_layoff_action(card, int(args[1]))
        return layoff_action(card, int(args[1]))
    if kind == "discard" and len(args) == 1:
        return Action("discard", (_plain_card(args[0], text),))
    return None


MELD_NUMBER_DIGITS = 3
"""Digits a lay-off's meld number may have: a table never holds 1000 melds, and a bound keeps
``int()`` of a huge number from failing (Python limits it to 4300 digits)."""


def _is_meld_number(word: str) -> bool:
    """ASCII digits only: ``str.isdigit`` also accepts ``²`` (which ``int`` refuses) and
    ``٣`` (which ``int`` reads as 3), so neither is a meld number here."""
    return 0 < len(word) <= MELD_NUMBER_DIGITS and all("0" <= ch <= "9" for ch in word)


def _plain_card(word: str, text: str) -> Card:
    """A card named on its own (dig, call, discard): ``JK=9D`` belongs to melds only."""
    if "=" in word:
        raise ActionParseError(
            f"{quoted(word)} in {quoted(text)}: a joker is named as the card it stands for only "
            "in a meld or a lay-off; here write JK"
        )
    return parse_card(word)


def _place(word: str, text: str) -> tuple[Card, bool]:
    """A meld or lay-off place: a card, or ``JK=9D`` (a joker standing for 9D)."""
    head, eq, stands = word.partition("=")
    if eq:
        if parse_card(head) != JOKER:
            raise ActionParseError(
                f"{quoted(word)} in {quoted(text)}: only a joker stands for a card (JK=9D)"
            )
        card = parse_card(stands)
        if card == JOKER:
            raise ActionParseError(
                f"{quoted(word)} in {quoted(text)}: a joker stands for a natural card"
            )
        return card, True
    card = parse_card(word)
    if card == JOKER:
        raise ActionParseError(
            f"{quoted(text)}: a joker in a meld or lay-off must name the card it stands for, "
            "e.g. JK=9D (docs/rules.md §5)"
        )
    return card, False


def _joker_mask(places: list[tuple[Card, bool]], text: str) -> int:
    """The mask of the cards the jokers of a meld stand for; a card named both as a joker
    and as itself cannot be told apart, so that is refused."""
    mask = 0
    for c, joker in places:
        if joker:
            if mask >> c & 1:
                raise ActionParseError(f"{quoted(text)}: two jokers stand for {card_str(c)}")
            mask |= 1 << c
    for c, joker in places:
        if not joker and mask >> c & 1:
            raise ActionParseError(
                f"{quoted(text)}: {card_str(c)} is named both as itself and as JK={card_str(c)}; a "
                "meld holds each card once"
            )
    return mask


def meld_action(cards: Iterable[Card], jokers: int = 0) -> Action:
    """A meld action with its cards put in table order (sets by suit, runs low to high);
    `jokers` marks the cards that jokers stand for."""
    cs = sorted(cards)
    if len({rank_of(c) for c in cs}) > 1:
        cs.sort(key=rank_of)
        if rank_of(cs[0]) == ACE and rank_of(cs[-1]) == 12:  # Q-K-A: the ace is high
            cs.append(cs.pop(0))
    return Action("meld", tuple(cs), -1, 1, jokers)


_LAYOFFS: dict[tuple[Card, int], Action] = {}
_JOKER_LAYOFFS: dict[tuple[Card, int], Action] = {}


def layoff_action(card: Card, target: int) -> Action:
    """The action laying `card` off on meld number `target` (cached: the env asks often)."""
    a = _LAYOFFS.get((card, target))
    if a is None:
        a = _LAYOFFS[(card, target)] = Action("layoff", (card,), target)
    return a


def joker_layoff_action(card: Card, target: int) -> Action:
    """The action laying a joker off on meld number `target`, standing for `card` (cached)."""
    a = _JOKER_LAYOFFS.get((card, target))
    if a is None:
        a = _JOKER_LAYOFFS[(card, target)] = Action("layoff", (card,), target, 1, 1 << card)
    return a


DRAW, TAKE, DECLINE = Action("draw"), Action("take"), Action("decline")
PASS, DONE = Action("pass"), Action("done")
SIMPLE_ACTIONS = {"draw": DRAW, "take": TAKE, "decline": DECLINE, "pass": PASS, "done": DONE}
DISCARD_ACTIONS: tuple[Action, ...] = tuple(Action("discard", (c,)) for c in range(NUM_CARDS + 1))
"""`DISCARD_ACTIONS[card]`, the joker (id 52) included."""
DIG_ACTIONS: tuple[tuple[Action, ...], ...] = tuple(
    tuple(Action("dig", (c,), -1, k) for k in (1, 2, 3, 4)) for c in range(NUM_CARDS + 1)
)
"""`DIG_ACTIONS[card][copy - 1]`, the joker (id 52) included."""
CALL_ACTIONS: tuple[tuple[Action, ...], ...] = tuple(
    tuple(Action("call", (c,), -1, k) for k in (1, 2, 3, 4)) for c in range(NUM_CARDS + 1)
)
"""`CALL_ACTIONS[card][copy - 1]`, the joker (id 52) included."""
TEMPLATE_ACTIONS: tuple[Action, ...] = tuple(Action("meld", t) for t in MELD_TEMPLATES)
"""The three-card meld actions, in `MELD_TEMPLATES` order."""
JOKER_TEMPLATE_ACTIONS: dict[tuple[int, int], Action] = {
    (t, k): Action("meld", MELD_TEMPLATES[t], -1, 1, 1 << MELD_TEMPLATES[t][k])
    for t, k, _ in JOKER_START_PAIRS
}
"""The three-card starts with a joker, by (template, joker place)."""
DISCARD_TABLES = byte_tables(DISCARD_ACTIONS.__getitem__, NUM_CARDS + 1)
"""The discard actions of a hand mask's cards (the joker's bit included), for `cards.gather`."""


def pile_depth(pile: Sequence[Card], action: Action) -> int | None:
    """How far below the top of `pile` (bottom first) the card a take (0), dig or call names
    lies, or None where it is not (or `action` takes nothing from the pile). A dig counts
    buried copies only (``dig 9D#2`` is the second buried 9D from the top), a call the top
    card too (§1 dig, §5): the one place this copy ↔ depth arithmetic is written
    (`pile_action` is its inverse)."""
    if action.kind == "take":
        return 0 if pile else None
    if action.kind not in ("dig", "call"):
        return None
    card, k = action.cards[0], 0
    for depth in range(1 if action.kind == "dig" else 0, len(pile)):
        if pile[-1 - depth] == card:
            k += 1
            if k == action.copy:
                return depth
    return None


def pile_action(pile: Sequence[Card], kind: str, depth: int) -> Action:
    """The take (depth 0), dig or call (`kind`) of the card `depth` below the top of `pile`,
    naming its copy as `pile_depth` counts it. `depth` must lie inside the pile."""
    if kind == "dig" and depth == 0:
        return TAKE
    card = pile[-1 - depth]
    first = len(pile) - 1 if kind == "call" else len(pile) - 2
    copy = 1 + sum(1 for i in range(len(pile) - 1 - depth + 1, first + 1) if pile[i] == card)
    return (CALL_ACTIONS if kind == "call" else DIG_ACTIONS)[card][copy - 1]
