"""`Action`: one decision in the text notation, its parser and its printer.

Syntax only: `Action.parse` says whether text is an action at all (`ActionParseError`);
whether it is legal now is the `Game`'s to say (`IllegalActionError`), as python-chess keeps
`Move.from_uci` apart from `Board.is_legal`.

Notation (docs/rules.md §6): ``draw`` · ``take`` · ``dig 9D`` (``dig 9D#2``: the second buried
copy from the top, two decks) · ``decline`` · ``meld 9S 9H 9D`` · ``layoff 10C 2`` ·
``discard 2C``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal, NamedTuple, get_args

from rummy500_env.engine.cards import (
    NUM_CARDS,
    Card,
    CardParseError,
    byte_tables,
    card_str,
    cards_str,
    parse_card,
    rank_of,
)
from rummy500_env.engine.errors import ActionParseError
from rummy500_env.engine.melds import ACE, MELD_TEMPLATES

ActionKind = Literal["draw", "take", "dig", "decline", "meld", "layoff", "discard"]
ACTION_KINDS: tuple[ActionKind, ...] = get_args(ActionKind)
DRAW_KINDS: frozenset[str] = frozenset(("draw", "take", "dig", "decline"))
"""The kinds of the draw phase; the others are plays."""

SYNTAX = (
    "actions are: draw | take | dig 9D (or dig 9D#2) | decline | meld 9S 9H 9D | "
    "layoff 10C 2 | discard 2C"
)


class Action(NamedTuple):
    """One decision in the notation; immutable and hashable.

    ``cards`` holds the dug, melded, laid-off or discarded cards (melds in table order: sets by
    suit, runs low to high); ``target`` is the meld index of a lay-off; ``copy`` says which
    buried copy a dig takes when two decks put the same card in the pile twice (1 = nearest
    the top).

    >>> str(Action.parse("MELD 9s 9h 9d"))
    'meld 9D 9H 9S'
    >>> Action.parse("dig 9D#2")
    Action(kind='dig', cards=(21,), target=-1, copy=2)
    """

    kind: ActionKind
    cards: tuple[Card, ...] = ()
    target: int = -1
    copy: int = 1

    def __str__(self) -> str:
        k = self.kind
        if k in ("draw", "take", "decline"):
            return k
        if k == "dig":
            return f"dig {card_str(self.cards[0])}" + (f"#{self.copy}" if self.copy != 1 else "")
        if k == "layoff":
            return f"layoff {card_str(self.cards[0])} {self.target}"
        return f"{k} {cards_str(self.cards)}"

    @classmethod
    def parse(cls, text: str) -> Action:
        """Parse the text notation (any case, any card form); raises `ActionParseError`."""
        if not isinstance(text, str):
            raise ActionParseError(f"an action must be text or an Action, not {text!r}")
        words = text.replace(",", " ").split()
        if not words:
            raise ActionParseError(f"empty action text {text!r}; {SYNTAX}")
        try:
            action = _parse_words(words[0].lower(), words[1:], text)
        except CardParseError as e:
            raise ActionParseError(f"in action {text!r}: {e}") from None
        if action is None:
            raise ActionParseError(f"not an action: {text!r}; {SYNTAX}")
        return action


def _parse_words(kind: str, args: list[str], text: str) -> Action | None:
    """The action of a kind word and its arguments, or None if they do not fit together."""
    if kind in SIMPLE_ACTIONS:
        if args:
            raise ActionParseError(f"{kind!r} takes no arguments, got {text!r}")
        return SIMPLE_ACTIONS[kind]
    if kind == "dig" and len(args) == 1:
        name, _, copy = args[0].partition("#")
        if copy and copy not in ("1", "2"):
            raise ActionParseError(f"dig copy must be #1 or #2 (two decks), got {text!r}")
        return Action("dig", (parse_card(name),), -1, int(copy or 1))
    if kind == "meld" and len(args) >= 3:
        return meld_action(parse_card(a) for a in args)
    if kind == "layoff" and len(args) == 2:
        if not args[1].isdigit():
            raise ActionParseError(
                f"layoff needs a card and a meld number, e.g. 'layoff 10C 2', got {text!r}"
            )
        return layoff_action(parse_card(args[0]), int(args[1]))
    if kind == "discard" and len(args) == 1:
        return Action("discard", (parse_card(args[0]),))
    return None


def meld_action(cards: Iterable[Card]) -> Action:
    """A meld action with its cards put in table order (sets by suit, runs low to high)."""
    cs = sorted(cards)
    if len({rank_of(c) for c in cs}) > 1:
        cs.sort(key=rank_of)
        if rank_of(cs[0]) == ACE and rank_of(cs[-1]) == 12:  # Q-K-A: the ace is high
            cs.append(cs.pop(0))
    return Action("meld", tuple(cs))


_LAYOFFS: dict[tuple[Card, int], Action] = {}


def layoff_action(card: Card, target: int) -> Action:
    """The action laying `card` off on meld number `target` (cached: the env asks often)."""
    a = _LAYOFFS.get((card, target))
    if a is None:
        a = _LAYOFFS[(card, target)] = Action("layoff", (card,), target)
    return a


DRAW, TAKE, DECLINE = Action("draw"), Action("take"), Action("decline")
SIMPLE_ACTIONS = {"draw": DRAW, "take": TAKE, "decline": DECLINE}
DISCARD_ACTIONS: tuple[Action, ...] = tuple(Action("discard", (c,)) for c in range(NUM_CARDS))
DIG_ACTIONS: tuple[tuple[Action, ...], ...] = tuple(
    tuple(Action("dig", (c,), -1, k) for k in (1, 2, 3)) for c in range(NUM_CARDS)
)
"""`DIG_ACTIONS[card][copy - 1]`."""
TEMPLATE_ACTIONS: tuple[Action, ...] = tuple(Action("meld", t) for t in MELD_TEMPLATES)
"""The three-card meld actions, in `MELD_TEMPLATES` order."""
DISCARD_TABLES = byte_tables(DISCARD_ACTIONS.__getitem__, NUM_CARDS)
"""The discard actions of a hand mask's cards, for `cards.gather`."""
