"""`OpponentTurn`: the other seat's turn at two players as the searching seat saw it, and
the other seat's own views of its two decisions in a world the search deals: the evidence
`PolicySearchAgent` weighs its worlds by (``evidence=K``, its last K turns).

A `SeatView` is a snapshot: it shows the pile, the table and the known cards, not who did
what. Between the seat's discard and its next draw the other seat drew (from the stock, or
took the pile down to a card), put cards on the table and discarded; the seat saw all of it
but the stock card. In a world that deals the other hand H now, that hand was H plus its
discard before the discard, and without what it drew, plus what it played, before the draw.
So each world says what the other seat held at each of its decisions, and a policy's odds of
the moves it really made there weigh the world (Bayes' rule, the policy as the model of the
other seat): a world where it would not have discarded what it did is unlikely. Turns further
back chain the same way (the hand before one turn's draw is the hand after the turn before),
a stock card drawn being one of the hand's cards drawn at random (it is not seen).

Kept to the rules where a snapshot pins the turn down: two players, one deck, no jokers, no
"Rummy!" calls; elsewhere `OpponentTurn.between` returns None and the search deals as before.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from typing import Any

from rummy500_env.engine.cards import Card
from rummy500_env.engine.notation import Action
from rummy500_env.engine.seat_view import SeatView


def same_hand(a: SeatView, b: SeatView) -> bool:
    """Whether two views of one seat are of the same hand of the same game."""
    return _hand_of(a) == _hand_of(b)


def _hand_of(view: SeatView) -> tuple[object, ...]:
    return view.seat, view.dealer, view.hands_played, view.totals


def _acting(view: SeatView, seat: int, **fields: Any) -> SeatView:
    """`view` turned to `seat`, to act in it with nothing owed to the table; `fields` are
    what else differs at that moment (the seat's hand among them)."""
    return replace(view, seat=seat, turn=seat, must_play=None, **fields)


@dataclass(frozen=True)
class OpponentTurn:
    """One turn of the other seat, between the seat's discard (`before`, the view it
    discarded `discarded` from) and its next draw (`now`)."""

    before: SeatView
    discarded: Card
    now: SeatView
    taken: tuple[Card, ...]
    """The pile cards the other seat took, bottom first (empty: it drew from the stock)."""
    played: tuple[Card, ...]
    """The cards it put on the table."""
    discard: Card
    """Its discard: the pile's top card now."""

    @classmethod
    def between(cls, before: SeatView, action: Action, now: SeatView) -> OpponentTurn | None:
        """The turn between the seat's discard `action` in `before` and its draw in `now`;
        None where the two views are not that (another hand, a turn missed, a phase other
        than the draw) or the rules are outside this module's reach (module docstring)."""
        r = now.rules
        if r.players != 2 or r.deck_count != 1 or r.joker_count or r.rummy_calls:
            return None
        if action.kind != "discard" or now.phase != "draw" or not now.pile:
            return None
        if not same_hand(before, now) or now.turns != before.turns + 2:
            return None
        pile = before.pile + action.cards
        rest = now.pile[:-1]
        if pile[: len(rest)] != rest:
            return None
        taken = pile[len(rest) :]
        if now.stock_size != before.stock_size - (0 if taken else 1):
            return None
        table_before, table_now = set(before.table_cards()), set(now.table_cards())
        if not table_before <= table_now:
            return None
        return cls(
            before=before,
            discarded=action.cards[0],
            now=now,
            taken=taken,
            played=tuple(sorted(table_now - table_before)),
            discard=now.pile[-1],
        )

    def follows(self, earlier: OpponentTurn) -> bool:
        """Whether this turn comes right after `earlier` (the seat's turn between them is the
        one `earlier` ended at and this one began from)."""
        return same_hand(earlier.now, self.before) and earlier.now.turns == self.before.turns

    @property
    def other(self) -> int:
        return 1 - self.now.seat

    @property
    def draw(self) -> Action:
        """The other seat's draw."""
        if not self.taken:
            return Action("draw")
        if len(self.taken) == 1:
            return Action("take")
        return Action("dig", (self.taken[0],))

    def decisions(
        self, hand: tuple[Card, ...], rng: random.Random
    ) -> tuple[list[tuple[SeatView, Action]], tuple[Card, ...]]:
        """The other seat's views of its discard and of its draw, with the moves it made,
        given it holds `hand` after this turn; and its hand before the turn (a stock card
        drawn is one of the unseen cards of the hand, drawn by `rng`)."""
        other, seat = self.other, self.now.seat
        holding = tuple(sorted((*hand, self.discard)))
        known = list(self.now.known)
        if self.discard in self.before.known[other] or self.discard in self.taken:
            known[other] = tuple(sorted(known[other] + (self.discard,)))
        sizes = list(self.now.hand_sizes)
        sizes[other] += 1
        at_discard = _acting(
            self.now,
            other,
            phase="play",
            hand=holding,
            pile=self.now.pile[:-1],
            known=tuple(known),
            hand_sizes=tuple(sizes),
            taken_top=self.taken[-1] if len(self.taken) == 1 else None,
            turns=self.now.turns - 1,
        )
        drawn = list(holding + self.played)
        if self.taken:
            for c in self.taken:
                drawn.remove(c)
        else:
            unseen = [c for c in drawn if c not in self.before.known[other]]
            drawn.remove(rng.choice(unseen))
        start = tuple(sorted(drawn))
        known = list(self.before.known)
        known[seat] = tuple(c for c in known[seat] if c != self.discarded)
        sizes = list(self.before.hand_sizes)
        sizes[seat] -= 1
        sizes[other] = len(start)
        at_draw = _acting(
            self.before,
            other,
            phase="draw",
            hand=start,
            pile=(*self.before.pile, self.discarded),
            known=tuple(known),
            hand_sizes=tuple(sizes),
            taken_top=None,
            turns=self.before.turns + 1,
        )
        return [(at_discard, Action("discard", (self.discard,))), (at_draw, self.draw)], start


class TurnWitness:
    """What one seat has seen of the other seat's turns: the last `keep` of them, each right
    after the one before (`OpponentTurn.follows`). The seat's every decision passes through
    it (`see` the view, then `did` the move), forced ones too: a turn is read between the
    seat's discard and its next draw."""

    def __init__(self, keep: int) -> None:
        self.keep = keep
        self.turns: list[OpponentTurn] = []  # oldest first
        self.last: tuple[SeatView, Action] | None = None  # the seat's last decision

    def see(self, view: SeatView) -> None:
        """Keep the other seat's turn since the seat's last decision, if it is one, after the
        turns it follows; a gap starts the chain again."""
        if not self.keep or self.last is None:
            return
        last = self.last[0]
        if not same_hand(last, view) or view.turns < last.turns:  # another hand or game
            self.turns = []
        turn = OpponentTurn.between(*self.last, view)
        if turn is not None:
            chain = self.turns if self.turns and turn.follows(self.turns[-1]) else []
            self.turns = [*chain, turn][-self.keep :]

    def did(self, view: SeatView, action: Action) -> None:
        """The seat's move in `view` (after `see(view)`)."""
        self.last = (view, action)

    def turns_for(self, view: SeatView) -> list[OpponentTurn]:
        """The turns that weigh a decision in `view` (oldest first): those kept, if the last
        ended right before this turn of the seat."""
        last = self.turns[-1].now if self.turns else None
        if last is not None and same_hand(last, view) and last.turns == view.turns:
            return self.turns
        return []
