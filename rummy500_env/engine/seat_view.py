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

from rummy500_env.engine.cards import JOKER, NUM_CARDS, Card
from rummy500_env.engine.errors import InvalidPositionError
from rummy500_env.engine.melds import Meld
from rummy500_env.engine.positions import Phase, Position
from rummy500_env.engine.rules import Rules
from rummy500_env.engine.scoring import HandResult


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

        def rot(seq: tuple[object, ...]) -> tuple[object, ...]:
            return seq[s:] + seq[:s]

        def seat_of(p: int | None) -> int | None:
            return None if p is None else (p - s) % n

        melds = tuple(m._replace(owners=tuple((o - s) % n for o in m.owners)) for m in self.melds)
        result = self.result
        if result is not None:
            result = replace(
                result,
                scores=rot(result.scores),  # type: ignore[arg-type]
                totals=rot(result.totals),  # type: ignore[arg-type]
                went_out=seat_of(result.went_out),
                winner=seat_of(result.winner),
            )
        return replace(
            self,
            seat=0,
            dealer=(self.dealer - s) % n,
            turn=(self.turn - s) % n,
            melds=melds,
            known=rot(self.known),  # type: ignore[arg-type]
            hand_sizes=rot(self.hand_sizes),  # type: ignore[arg-type]
            totals=rot(self.totals),  # type: ignore[arg-type]
            discarder=seat_of(self.discarder),
            result=result,
        )

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
