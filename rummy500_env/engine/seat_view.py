"""`SeatView`: exactly what one seat knows, the engine's information state.

Everything a player at the table may know and nothing more (docs/rules.md §1: the pile is
public and ordered, the table is public, a card taken from the pile is seen by all; the stock
and the other hands are not): its own hand with its jokers, the pile in order with every copy,
the table's melds with the owner of each card and what each joker stands for, the cards each
player is known to hold, hand and stock sizes, totals, the phase and whose turn it is, the owed
card and the untouchable top card, the call window, the hand's result once it is over.

Bots, search, the env's decoding of an observation, the play page and renderings all read
this one record. `sample_position` deals the hidden cards again consistently with it (a
determinization, as OpenSpiel's ``ResampleFromInfostate``): `Game.from_seat_view` turns it
into a playable game. Exact for every rule system: two decks, jokers and calls included.
"""

from __future__ import annotations

import dataclasses
import random
from dataclasses import dataclass, replace
from typing import TypeGuard, TypeVar

from rummy500_env.engine.cards import JOKER, NUM_CARDS, Card
from rummy500_env.engine.errors import InvalidPositionError
from rummy500_env.engine.melds import Meld
from rummy500_env.engine.numbers import shown
from rummy500_env.engine.positions import PHASES, Phase, Position
from rummy500_env.engine.rules import Rules
from rummy500_env.engine.scoring import HandResult

T = TypeVar("T")
"""Any element type (`SeatView.relative` rotates tuples of several)."""


@dataclass(frozen=True, slots=True)
class SeatView:
    """What seat `seat` knows of a position (see the module docstring). Frozen: a snapshot.

    Seats are the game's own player numbers; `relative` renumbers them so that the viewer is
    seat 0 (the observation's frame). `known[seat]` is what the others know of this seat's
    hand. Cards are engine ids (`JOKER` for a joker in a hand or the pile).
    """

    rules: Rules
    seat: int
    dealer: int
    turn: int
    phase: Phase
    hand: tuple[Card, ...]
    """This seat's cards, ascending, jokers last."""
    pile: tuple[Card, ...]
    """The discard pile, bottom first, top last."""
    melds: tuple[Meld, ...]
    """The table, in the engine's order (lay-off targets number them)."""
    known: tuple[tuple[Card, ...], ...]
    """Per player: the cards everyone saw them take from the pile, not played since."""
    hand_sizes: tuple[int, ...]
    stock_size: int
    totals: tuple[int, ...]
    """Running totals before this hand."""
    taken_top: Card | None
    """The card taken from the top of the pile this turn (may not be discarded)."""
    must_play: Card | None
    """The buried (or called, or obligated) card that must reach the table this turn."""
    discarder: int | None
    """In a call window (phases ``call``/``called``): whose discard opened it."""
    turns: int
    hands_played: int
    result: HandResult | None
    """How the hand ended, once it is over."""

    def __reduce__(self) -> tuple[type[SeatView], tuple[object, ...]]:
        """Copied and pickled through the constructor: a compiled frozen class (setup.py)
        refuses the field-by-field assignment `copy` and `pickle` do by default."""
        return type(self), tuple(getattr(self, f.name) for f in dataclasses.fields(self))

    @property
    def players(self) -> int:
        return self.rules.players

    @property
    def opponents(self) -> tuple[int, ...]:
        """The other seats in turn order after this one."""
        n = self.rules.players
        return tuple((self.seat + k) % n for k in range(1, n))

    @property
    def to_act(self) -> bool:
        """Whether this seat is the one to act now."""
        return self.turn == self.seat and self.result is None

    @property
    def naturals(self) -> tuple[Card, ...]:
        """The hand without its jokers."""
        k = self.jokers
        return self.hand[: len(self.hand) - k] if k else self.hand

    @property
    def jokers(self) -> int:
        """Jokers in this seat's hand."""
        return self.hand.count(JOKER) if self.rules.jokers else 0

    @property
    def top_take_obligated(self) -> bool:
        """Taking the top card carries the dig obligation now (§2 `top_card_must_meld`, and
        `pile_must_use` once the stock is empty)."""
        r = self.rules
        return r.top_card_must_meld or (self.stock_size == 0 and r.stock_out == "pile_must_use")

    def table_cards(self) -> list[Card]:
        """Every card on the table as it is held: a joker's place counts as `JOKER`."""
        return [JOKER if m.jokers >> c & 1 else c for m in self.melds for c in m.cards]

    def unseen(self) -> list[Card]:
        """The cards this seat has not seen, as a multiset: those in the stock or in the other
        hands beyond what they are known to hold (hidden jokers as `JOKER`), ascending."""
        r = self.rules
        counts = [r.deck_count] * NUM_CARDS + [r.joker_count]
        seen = [*self.hand, *self.pile, *self.table_cards()]
        seen += [c for q in self.opponents for c in self.known[q]]
        for c in seen:
            counts[c] -= 1
        return [c for c in range(NUM_CARDS + 1) for _ in range(counts[c])]

    def relative(self) -> SeatView:
        """The same view with the seats renumbered so that this seat is 0 and seat s is the
        player s places after it (the observation's frame)."""
        n, s = self.rules.players, self.seat
        if s == 0:
            return self

        def rot(seq: tuple[T, ...]) -> tuple[T, ...]:
            return seq[s:] + seq[:s]

        def seat_of(p: int | None) -> int | None:
            return None if p is None else (p - s) % n

        melds = tuple(m._replace(owners=tuple((o - s) % n for o in m.owners)) for m in self.melds)
        result = self.result
        if result is not None:
            result = replace(
                result,
                scores=rot(result.scores),
                totals=rot(result.totals),
                went_out=seat_of(result.went_out),
                winner=seat_of(result.winner),
            )
        return replace(
            self,
            seat=0,
            dealer=(self.dealer - s) % n,
            turn=(self.turn - s) % n,
            melds=melds,
            known=rot(self.known),
            hand_sizes=rot(self.hand_sizes),
            totals=rot(self.totals),
            discarder=seat_of(self.discarder),
            result=result,
        )

    def problems(self) -> list[str]:
        """Every way this view's shape is not that of a real position's view (empty if none):
        the rules, the seats (seat, dealer, turn, discarder), the phase, every card id (hand,
        pile, known, melds, taken_top, must_play), one entry per player in `known`,
        `hand_sizes` and `totals`, counts that are ints >= 0. `Game.from_seat_view` checks
        this before sampling, which would otherwise fail on such a view with a bare
        IndexError or TypeError; whether the position it deals obeys the rules is
        `positions.check`'s to say.

        Read as plain objects: a crafted view may hold anything where a field says int (a
        compiled `SeatView` checks the fields' own types when built, not their items')."""
        rules: object = self.rules
        if not isinstance(rules, Rules):
            return [f"rules must be a Rules, got {shown(rules)}"]
        n = rules.players
        found = _seat_problem("seat", self.seat, n, False)
        found += _seat_problem("dealer", self.dealer, n, False)
        found += _seat_problem("turn", self.turn, n, False)
        found += _seat_problem("discarder", self.discarder, n, True)
        phase: object = self.phase
        if phase not in PHASES:
            found.append(f"phase must be one of {PHASES}, got {shown(phase)}")
        hand: object = self.hand
        found += _cards_problem("hand", hand)
        found += _cards_problem("pile", self.pile)
        for name, card in (("taken_top", self.taken_top), ("must_play", self.must_play)):
            if card is not None:
                found += _cards_problem(name, (card,))
        known: object = self.known
        if _per_player(known, n):
            for q, cards in enumerate(known):
                found += _cards_problem(f"known[{q}]", cards)
        else:
            found.append(f"known must have one entry per player ({n}), got {shown(known)}")
        sizes: object = self.hand_sizes
        if _per_player(sizes, n):
            found += _counts_problem("hand_sizes", sizes)
            seat: object = self.seat
            mine = sizes[seat] if type(seat) is int and 0 <= seat < n else None
            if isinstance(hand, tuple) and type(mine) is int and mine != len(hand):
                found.append(f"hand_sizes[{seat}] is {mine}, but the hand holds {len(hand)} cards")
        else:
            found.append(f"hand_sizes must have one entry per player ({n}), got {shown(sizes)}")
        totals: object = self.totals
        if not _per_player(totals, n):
            found.append(f"totals must have one entry per player ({n}), got {shown(totals)}")
        elif any(type(t) is not int for t in totals):
            found.append(f"totals must be ints, got {shown(totals)}")
        for name, count in (
            ("stock_size", self.stock_size),
            ("turns", self.turns),
            ("hands_played", self.hands_played),
        ):
            found += _counts_problem(name, (count,), one=True)
        found += _melds_problem(self.melds, n)
        return found

    def sample_position(self, rng: random.Random) -> Position:
        """A full position this seat cannot tell from the real one: the unseen cards (hidden
        jokers too) shuffled by `rng` and dealt to the other hands, each keeping the cards it
        is known to hold and getting its size, and the rest to the stock in random order; the
        position's game seed (it deals the hands after this one) is drawn from `rng` too.

        Raises `InvalidPositionError` when the sizes cannot be met (a view that is not one of
        a real position)."""
        unseen = self.unseen()
        rng.shuffle(unseen)
        hands: list[tuple[Card, ...]] = [()] * self.rules.players
        hands[self.seat] = self.hand
        for q in self.opponents:
            need = self.hand_sizes[q] - len(self.known[q])
            if need < 0 or need > len(unseen):
                raise InvalidPositionError(
                    [
                        f"player {q} holds {self.hand_sizes[q]} cards, {len(self.known[q])} of "
                        f"them known, and {len(unseen)} unseen cards are left to deal"
                    ]
                )
            hands[q] = tuple(sorted((*self.known[q], *unseen[:need])))
            unseen = unseen[need:]
        if len(unseen) != self.stock_size:
            raise InvalidPositionError(
                [f"{len(unseen)} unseen cards are left for a stock of {self.stock_size}"]
            )
        return Position(
            rules=self.rules,
            hands=tuple(hands),
            stock=tuple(unseen),
            pile=self.pile,
            melds=self.melds,
            known=self.known,
            dealer=self.dealer,
            turn=self.turn,
            phase=self.phase,
            totals=self.totals,
            taken_top=self.taken_top,
            must_play=self.must_play,
            turns=self.turns,
            hands_played=self.hands_played,
            seed=rng.getrandbits(32),
            discarder=self.discarder,
        )


# --- checking a view's shape (`SeatView.problems`) --------------------------------------------

_NO_CARD = "which is no card (card ids are 0..51, 52 a joker)"


def _is_card(value: object) -> bool:
    return type(value) is int and 0 <= value <= JOKER


def _seat_problem(name: str, value: object, n: int, none_ok: bool) -> list[str]:
    if (none_ok and value is None) or (type(value) is int and 0 <= value < n):
        return []
    return [
        f"{name} must be {'null or ' if none_ok else ''}a player 0..{n - 1}, got {shown(value)}"
    ]


def _cards_problem(name: str, cards: object) -> list[str]:
    """`cards` is a tuple of card ids; else the problem, naming the first that is not."""
    if not isinstance(cards, tuple):
        return [f"{name} must be a tuple of card ids, got {shown(cards)}"]
    items: tuple[object, ...] = cards
    bad = [c for c in items if not _is_card(c)]
    return [f"{name} holds {shown(bad[0])}, {_NO_CARD}"] if bad else []


def _per_player(value: object, n: int) -> TypeGuard[tuple[object, ...]]:
    """`value` is a tuple of one entry per player."""
    return isinstance(value, tuple) and len(value) == n


def _counts_problem(name: str, values: tuple[object, ...], one: bool = False) -> list[str]:
    """Each of `values` is an int >= 0 (`one`: the one value of field `name`)."""
    for i, v in enumerate(values):
        if type(v) is not int or v < 0:
            where = name if one else f"{name}[{i}]"
            return [f"{where} must be an int >= 0, got {shown(v)}"]
    return []


def _melds_problem(melds: object, n: int) -> list[str]:
    """Each meld is a `Meld` of card ids, with one owner (a player) per card."""
    if not isinstance(melds, tuple):
        return [f"melds must be a tuple of Meld, got {shown(melds)}"]
    items: tuple[object, ...] = melds
    for i, m in enumerate(items):
        if not isinstance(m, Meld):
            return [f"melds[{i}] is no Meld: {shown(m)}"]
        cards: object = m.cards
        owners: object = m.owners
        found = _cards_problem(f"melds[{i}].cards", cards)
        if found:
            return found
        if not isinstance(owners, tuple) or len(owners) != len(m.cards):
            return [f"melds[{i}].owners must name one player per card, got {shown(owners)}"]
        for owner in owners:
            if not (type(owner) is int and 0 <= owner < n):
                return [f"melds[{i}].owners holds {shown(owner)}, which is no player 0..{n - 1}"]
    return []
