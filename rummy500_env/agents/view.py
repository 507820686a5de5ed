"""`View`: what one seat may know, decoded from its observation vector.

Bots read positions through a `View` rather than the engine, so they can only use what the
seat sees (docs/rules.md §1: the pile is public; hands are not). The decoding is exact for every
card feature; scores are restored from their scaled form. The table's melds are rebuilt from
its cards and lay-off spots (`rebuild_table`), exactly with one deck and no jokers.

With jokers (docs/rules.md §5) the view holds the jokers of the hand as a count beside the
natural cards, the pile with its jokers (id 52) in their places, and the cards the jokers on
the table stand for; with calls, the call phases (``"call"``, ``"called"``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from rummy500_env.agents.heuristics import TEMPLATE_MELDS
from rummy500_env.engine.cards import JOKER, Card, mask_of, suit_of
from rummy500_env.engine.melds import (
    MELD_TEMPLATES,
    RUN_HIGH,
    RUN_LOW,
    Meld,
    hand_values,
    lay_off,
    layoff_end,
    meld_from_cards,
    meld_templates_in,
)
from rummy500_env.engine.rules import Rules
from rummy500_env.rl.actions import ActionCodec
from rummy500_env.rl.observation import ObservationEncoder


@dataclass
class Decoded:
    """One action id in card terms: ``kind`` is draw, take, dig, decline, meld, layoff,
    discard, call, pass or done; ``cards`` the cards it takes or plays (a taken or discarded
    joker is 52; a meld or lay-off lists the card a joker stands for); ``depth`` the pile
    depth of a take, dig or call; ``end`` where a lay-off lands (0 set, 1 below a run, 2
    above a run); ``template`` a meld's template index; ``joker`` the card a joker of a meld
    or lay-off stands for (-1: no joker)."""

    id: int
    kind: str
    cards: tuple[int, ...] = ()
    depth: int = -1
    end: int = -1
    template: int = -1
    joker: int = -1


@dataclass
class View:
    """A seat's knowledge: own hand, the pile (top first), the table, what opponents are known
    to hold, counts and scores. Seat 0 is the viewer; seat s is s places after it."""

    rules: Rules
    hand: list[int]
    pile: list[int]
    table_owner: list[list[int]]
    table_set: list[int]
    table_run: list[int]
    fits: list[set[int]]
    known: list[list[int]]
    hand_sizes: list[int]
    stock: int
    totals: list[float]
    table_points: list[float]
    phase: str
    must_play: int | None
    no_discard: int | None
    top_obligated: bool
    values: tuple[int, ...] = field(repr=False, default=())
    jokers: int = 0
    """Jokers in the seat's own hand (``hand`` holds its natural cards)."""
    table_jokers: tuple[list[int], list[int]] = field(default_factory=lambda: ([], []))
    """The cards the jokers on the table stand for: in sets, in runs."""
    joker_seats: list[int] = field(default_factory=list)
    """Jokers each seat has put on the table."""
    known_jokers: list[int] = field(default_factory=list)
    """Per opponent seat 1..n-1: jokers it is known to hold."""
    discarder: int | None = None
    """In a call window: the seat whose discard opened it."""

    @property
    def table_cards(self) -> list[int]:
        """Every natural card on the table."""
        return sorted(self.table_set + self.table_run)

    @property
    def full_hand(self) -> list[int]:
        """The hand with its jokers (id 52)."""
        return self.hand + [JOKER] * self.jokers

    @cached_property
    def table_melds(self) -> tuple[Meld, ...]:
        """The table's melds, rebuilt from its cards (see `rebuild_table`)."""
        return rebuild_table(
            self.table_set,
            self.table_run,
            self.table_owner,
            self.fits,
            self.table_jokers,
            self.joker_seats,
        )

    def unseen(self) -> list[int]:
        """Cards this seat has not seen: in the stock or in opponents' hands, not known
        (hidden jokers included, as 52)."""
        r = self.rules
        counts = [r.deck_count] * 52 + [r.joker_count]
        seen = self.full_hand + self.pile + self.table_cards + [c for k in self.known for c in k]
        for c in seen:
            counts[c] -= 1
        counts[JOKER] -= len(self.table_jokers[0]) + len(self.table_jokers[1])
        counts[JOKER] -= sum(self.known_jokers)
        return [c for c in range(53) for _ in range(max(0, counts[c]))]


class ViewDecoder:
    """Decodes observations and action ids for one rules configuration."""

    def __init__(self, rules: Rules | str | dict[str, Any] = "standard") -> None:
        self.rules = Rules.coerce(rules)
        self.encoder = ObservationEncoder(self.rules)
        self.codec = ActionCodec(self.rules)
        self.values = hand_values(self.rules.scoring)

    def view(self, observation: np.ndarray[Any, Any]) -> View:
        r, d = self.rules, self.rules.deck_count
        v = self.encoder.views(np.asarray(observation, dtype=np.float32))

        def cards(row: np.ndarray[Any, Any]) -> list[int]:
            counts = np.rint(row * d).astype(int)
            return [int(c) for c in np.flatnonzero(counts) for _ in range(counts[c])]

        places = v["pile_place"].ravel()
        at = np.flatnonzero(places)
        pile = [int(i) % 52 for i in at[np.argsort(-places[at], kind="stable")]]  # top first
        phase = "draw" if v["phase"][0] else "play" if v["phase"][1] else "over"
        must = [int(c) for c in np.flatnonzero(v["must_play"])]
        nod = [int(c) for c in np.flatnonzero(v["no_discard"])]
        extra: dict[str, Any] = {}
        if r.jokers:
            extra = self._jokers(v)
            jokers_at = [float(x) for x in v["pile_jokers"][1:] if x]
            if jokers_at:  # merge the jokers into the pile by place (top first)
                cards_at = sorted(
                    [(float(places[i]), int(i) % 52) for i in at] + [(x, JOKER) for x in jokers_at],
                    key=lambda pc: -pc[0],
                )
                pile = [c for _, c in cards_at]
            must += [JOKER] * int(v["joker_flags"][0])
            nod += [JOKER] * int(v["joker_flags"][1])
        if r.rummy_calls:
            if v["call_phase"].any():
                phase = "call" if v["call_phase"][0] else "called"
            if v["discarder"].any():
                extra["discarder"] = int(np.flatnonzero(v["discarder"])[0])
        return View(
            rules=r,
            hand=[int(c) for c in cards(v["hand"])],
            pile=pile,
            table_owner=[[int(c) for c in cards(row)] for row in v["table_owner"]],
            table_set=[int(c) for c in cards(v["table_set"])],
            table_run=[int(c) for c in cards(v["table_run"])],
            fits=[{int(c) for c in np.flatnonzero(row)} for row in v["layoff_fits"]],
            known=[[int(c) for c in cards(row)] for row in v["known"]],
            hand_sizes=[round(x * 52) for x in v["hand_sizes"]],
            stock=round(float(v["stock_pile"][0]) * r.deck_size),
            totals=[float(x) * r.target for x in v["totals"]],
            table_points=[float(x) * r.target for x in v["table_points"]],
            phase=phase,
            must_play=must[0] if must else None,
            no_discard=nod[0] if nod else None,
            top_obligated=bool(v["flags"][0]),
            values=self.values,
            **extra,
        )

    def _jokers(self, v: dict[str, np.ndarray[Any, Any]]) -> dict[str, Any]:
        """The `View` fields of the joker slices (docs/rules.md §5)."""
        k = self.rules.joker_count

        def counted(row: np.ndarray[Any, Any]) -> list[int]:
            counts = np.rint(row * k).astype(int)
            return [int(c) for c in np.flatnonzero(counts) for _ in range(counts[c])]

        return {
            "jokers": round(float(v["hand_jokers"][0]) * k),
            "table_jokers": (counted(v["table_jokers"][0]), counted(v["table_jokers"][1])),
            "joker_seats": [round(float(x) * k) for x in v["joker_seats"]],
            "known_jokers": [round(float(x) * k) for x in v["known_jokers"]],
        }

    def decode(self, view: View, action_id: int) -> Decoded:
        """An action id in card terms, using the pile of `view` for takes, digs and calls."""
        c = self.codec
        i = int(action_id)
        if i == c.DRAW:
            return Decoded(i, "draw")
        if i == c.DECLINE:
            return Decoded(i, "decline")
        if i < c.DECLINE:
            depth = i - c.PILE
            return Decoded(
                i, "take" if depth == 0 else "dig", tuple(view.pile[: depth + 1]), depth=depth
            )
        if i < c.LAYOFF:
            t = i - c.MELD
            return Decoded(i, "meld", MELD_TEMPLATES[t], template=t)
        if i < c.DISCARD:
            card, end = divmod(i - c.LAYOFF, 3)
            return Decoded(i, "layoff", (card,), end=end)
        if i < c.DISCARD + 52:
            return Decoded(i, "discard", (i - c.DISCARD,))
        return self._decode_jokers_and_calls(view, i)

    def _decode_jokers_and_calls(self, view: View, i: int) -> Decoded:
        """The ids of docs/rules.md §5 (see `rummy500_env.rl.actions`)."""
        c = self.codec
        if c.JOKER_MELD <= i < c.JOKER_LAYOFF:
            t, k = divmod(i - c.JOKER_MELD, 3)
            cards = MELD_TEMPLATES[t]
            return Decoded(i, "meld", cards, template=t, joker=cards[k])
        if c.JOKER_LAYOFF <= i < c.JOKER_DISCARD:
            card, end = divmod(i - c.JOKER_LAYOFF, 3)
            return Decoded(i, "layoff", (card,), end=end, joker=card)
        if i == c.JOKER_DISCARD:
            return Decoded(i, "discard", (JOKER,))
        if i == c.PASS:
            return Decoded(i, "pass")
        if i == c.DONE:
            return Decoded(i, "done")
        depth = i - c.CALL
        return Decoded(i, "call", tuple(view.pile[: depth + 1]), depth=depth)

    def legal(self, view: View, action_mask: np.ndarray[Any, Any]) -> list[Decoded]:
        """The legal actions of a mask, decoded."""
        return [self.decode(view, int(i)) for i in np.flatnonzero(action_mask)]


def rebuild_table(
    set_cards: Sequence[Card],
    run_cards: Sequence[Card],
    owners: Sequence[Sequence[Card]],
    fits: Sequence[set[Card]] | None = None,
    jokers: tuple[Sequence[Card], Sequence[Card]] = ((), ()),
    joker_seats: Sequence[int] = (),
) -> tuple[Meld, ...]:
    """The melds of a table whose set cards, run cards and owners' cards (per seat) are known,
    rebuilt as the engine builds them: three-card melds, then lay-offs; runs that continue
    each other are joined.

    The view's lay-off spots `fits` (rows `SET`, `RUN_LOW`, `RUN_HIGH`; a run's open end is
    listed even when that card is on the table) settle what the cards alone cannot: whether
    an ace sits low or high (A-2-3-4 with J-Q-K, or 2-3-4 with J-Q-K-A), and where two runs
    meet (2-6♥ and 7-K♥ list 7♥ above one and 6♥ below the other). With one deck the rebuilt
    table offers the same lay-offs and scores the same as the engine's. With two decks it may
    not rebuild: the cards that fit nowhere are left out, and `SearchAgent` rejects the world.

    `jokers` are the cards the jokers on the table stand for (in sets, in runs), placed like
    the cards themselves and marked as jokers; `joker_seats` counts each seat's jokers. Which
    set or run holds a joker is a guess when two could (docs/rules.md §5).
    """
    owner_of: dict[Card, list[int]] = {}
    for seat, cards in enumerate(owners):
        for c in cards:
            owner_of.setdefault(c, []).append(seat)
    melds = _split([*set_cards, *jokers[0]], runs=False, spots=None)
    for suit in range(4):
        spots = None
        if fits is not None:
            spots = {
                (end, c) for end in (RUN_LOW, RUN_HIGH) for c in fits[end] if suit_of(c) == suit
            }
        cards = [c for c in (*run_cards, *jokers[1]) if suit_of(c) == suit]
        melds += _split(cards, runs=True, spots=spots)
    naturals = {False: Counter(set_cards), True: Counter(run_cards)}
    seats = [s for s, k in enumerate(joker_seats) for _ in range(k)]
    out = []
    for m in melds:  # the real owners, now that each card's meld is known
        owned, wild = [], 0
        for c in m.cards:
            if naturals[m.is_run][c] > 0:
                naturals[m.is_run][c] -= 1
                owned.append(owner_of[c].pop() if owner_of.get(c) else 0)
            else:
                wild |= 1 << c
                owned.append(seats.pop() if seats else 0)
        rebuilt = meld_from_cards(m.cards, tuple(owned), wild)
        if rebuilt is not None:
            out.append(rebuilt)
    return tuple(out)


def _split(cards: Sequence[Card], runs: bool, spots: set[tuple[int, Card]] | None) -> list[Meld]:
    """Split one kind of table cards (one suit's, for runs) into melds: the split with the aces
    high or the one with them low, its joined runs cut where `spots` show two runs meeting,
    whichever places every card and offers exactly the lay-off `spots` (end, card) if given;
    the high one when both or neither do."""
    whole = []
    for ace_high in (True, False):
        melds, left = _split_once(cards, runs, ace_high)
        if not +left:
            whole.append(melds if spots is None else [p for m in melds for p in _cut(m, spots)])
    if not whole:
        return _split_once(cards, runs, True)[0]
    for melds in whole:
        if spots is None or {(layoff_end(m, c), c) for m in melds for c in m.fits} == spots:
            return melds
    return whole[0]


def _cut(m: Meld, spots: set[tuple[int, Card]]) -> list[Meld]:
    """A joined run cut where the view shows two runs meeting: 2..K♥ with the spots 7♥ above
    a run and 6♥ below one was 2-6♥ and 7-K♥."""
    for i in range(3, len(m.cards) - 2) if m.is_run else ():
        low, high = m.cards[:i], m.cards[i:]
        if (RUN_HIGH, high[0]) in spots and (RUN_LOW, low[-1]) in spots:
            a, b = meld_from_cards(low, m.owners[:i]), meld_from_cards(high, m.owners[i:])
            if a is not None and b is not None:
                return [a, *_cut(b, spots)]
    return [m]


def _split_once(
    cards: Sequence[Card], runs: bool, ace_high: bool
) -> tuple[list[Meld], Counter[Card]]:
    """Meld three-card templates found among the cards left (high-ace runs first if
    `ace_high`, else low-ace runs first), then lay off the rest where they fit. Returns the
    melds and the cards that found no place."""
    left = Counter(cards)
    melds: list[Meld] = []
    while True:
        options = [
            t
            for t in meld_templates_in(mask_of(c for c, k in left.items() if k > 0))
            if TEMPLATE_MELDS[t].is_run == runs
        ]
        if not options:
            break
        t = min(options, key=lambda t: (_ace_end(t) if ace_high else -_ace_end(t), t))
        melds.append(TEMPLATE_MELDS[t])
        left.subtract(TEMPLATE_MELDS[t].cards)
    placed = True
    while placed:
        placed = False
        for c in sorted(c for c, k in left.items() if k > 0):
            i = next((i for i, m in enumerate(melds) if c in m.fits), None)
            if i is not None:
                melds[i] = lay_off(melds[i], c, 0)
                left[c] -= 1
                placed = True
    return _join_runs(melds), left


def _join_runs(melds: list[Meld]) -> list[Meld]:
    """Join runs that continue each other (6-7-8 and 9-10-J into 6..J)."""
    out: list[Meld] = []
    for m in sorted(melds, key=lambda m: (m.is_run, m.suit, m.lo)):
        joined = None
        if out and out[-1].is_run and m.is_run:
            joined = meld_from_cards(out[-1].cards + m.cards, out[-1].owners + m.owners)
        if joined is not None:
            out[-1] = joined
        else:
            out.append(m)
    return out


def _ace_end(t: int) -> int:
    """-1 for a three-card run with its ace high (Q-K-A), 1 with its ace low (A-2-3), else 0:
    the sort key that tries high aces first."""
    m = TEMPLATE_MELDS[t]
    if not m.is_run:
        return 0
    return -1 if m.hi == 14 else 1 if m.lo == 1 else 0
