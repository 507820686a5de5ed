"""The observation encoder's fast path: `IncrementalEncoder.encode_update`.

An env asks for one observation per step and little changes between two of them (a card
drawn, one discarded), so this keeps each observer's last observation with what it was built
from, rewrites only what changed, and returns a copy. It equals `ObservationEncoder.encode`,
the specification, in every position whatever came before (property-tested in
tests/test_env.py). Measured on this project's 2-core machines, each trick kept here buys at
least 5% of a `raw_env` step:

* updating instead of re-encoding: `encode` costs about 4x `encode_update`;
* single values written through a memoryview: several times cheaper than numpy indexing;
* a count that changed for one card (a draw, a discard) rewritten without a loop over the
  changed mask: 12% of the instructions of a `raw_env` step (callgrind, random play);
* meld parts memoised by value: melds are immutable and recur hand after hand (encode_update
  6.1 -> 5.4 us, a `raw_env` step 18.4 -> 17.3 us); the exact part's meld places too;
* one table block shared by all observers, updated by the melds that changed and copied
  rotated, instead of every observer rewriting its table from the melds: 15% of the
  instructions of a `raw_env` step (callgrind, random play);
* the exact part's table places kept for each observer beside the shared table block and
  copied with one numpy assignment when the table changes, and the rest of the exact part
  rewritten only when what it holds moved: writing it whole at every step took 40% more
  instructions per `raw_env` step than the env without it (callgrind,
  `benchmarks/instructions.py`); with one deck and no jokers the places are updated by the
  melds that changed, instead of recomputed for the whole table: 9% of a `raw_env` step's
  instructions (callgrind, `benchmarks/env_steps.py`: 99k to 90k a step);
* the observer's own known cards in the exact part recounted where they changed, as the
  opponents' are, instead of rewriting that part with them: random play picks cards up
  from the pile every few turns, and the rewrite took 6% of a `raw_env` step's
  instructions (callgrind, `benchmarks/env_steps.py`: 103k to 97k a step).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rummy500_env.engine.cards import JOKER, cards_in
from rummy500_env.engine.game import Game
from rummy500_env.engine.melds import Meld
from rummy500_env.engine.rules import Rules
from rummy500_env.rl.observation import FloatArray, MeldPart, ObservationEncoder, clip

MEMO_LIMIT = 4096
"""Meld parts kept before the memo starts afresh (a long run meets few distinct melds)."""


class IncrementalEncoder(ObservationEncoder):
    """`ObservationEncoder` with `encode_update`, the incremental path (module docstring)."""

    def __init__(self, rules: Rules) -> None:
        super().__init__(rules)
        n = self.players
        self._opponent_blocks = [
            [(p, self.at["known"] + ((p - o) % n - 1) * 52) for p in range(n) if p != o]
            for o in range(n)
        ]
        """For each observer, each opponent's absolute seat and where its `known` row starts."""
        self._opponents_of = [[p for p in range(n) if p != o] for o in range(n)]
        """For each observer, the opponents' seats."""
        self._deck_size = rules.deck_size  # a property: read once here, not at every step
        self._table_exact = slice(self.at["table_exact"], self.at["own_known"])
        """The exact part's table block: rewritten with the table (`_copy_table`)."""
        self._facts_at = self.at["own_known"] + 52
        """Where the exact part after own known cards starts (`put_exact_facts`)."""
        self._forget()

    def _forget(self) -> None:
        """Start the caches afresh (they are not pickled: `__reduce__`)."""
        self._last: list[_Last | None] = [None] * self.players
        self._table = _Table(self)
        self._meld_parts: dict[tuple[Meld, int], MeldPart] = {}
        self._exact_parts: dict[tuple[Meld, int], list[tuple[int, int, int]]] = {}
        self._wild = self.extras_at < self.features_size
        """The rules have jokers or calls (docs/rules.md §5): their slices are rewritten."""
        self._pile_update = self._rewrite_pile if self.joker_count else self._update_pile
        """How the pile's card features follow the pile: with jokers, rewritten whole."""

    def __reduce__(self) -> tuple[type[IncrementalEncoder], tuple[Rules]]:
        """Pickled as its rules, which everything else derives from: the caches start afresh
        (memoryviews can't be pickled), and a compiled build (setup.py) has no ``__dict__``."""
        return type(self), (self.rules,)

    def exact_meld(self, m: Meld, i: int) -> list[tuple[int, int, int]]:
        """`ObservationEncoder.exact_meld`, memoised by value (as `meld_part`)."""
        key = (m, i)
        part = self._exact_parts.get(key)
        if part is None:
            if len(self._exact_parts) > MEMO_LIMIT:
                self._exact_parts.clear()
            part = self._exact_parts[key] = super().exact_meld(m, i)
        return part

    def meld_part(self, m: Meld, observer: int) -> MeldPart:
        """`ObservationEncoder.meld_part`, memoised by value."""
        key = (m, observer)
        part = self._meld_parts.get(key)
        if part is None:
            if len(self._meld_parts) > MEMO_LIMIT:
                self._meld_parts.clear()
            part = self._meld_parts[key] = super().meld_part(m, observer)
        return part

    def encode_update(self, game: Game, observer: int) -> FloatArray:
        """`encode`, computed as a change to the previous observation of this observer."""
        last = self._last[observer]
        if last is None:
            last = self._last[observer] = _Last(self, game, observer)
            return last.obs.copy()
        self._update_cards(last, game)
        table = self._sync_table(game.melds)
        if table.version != last.table_version:
            self._copy_table(last, table)
        mv = last.mv
        extras = self._extras(game)  # the one-hot features outside the card blocks
        if extras != last.extras:
            for i in last.extras:
                mv[i] = 0.0
            for i in extras:
                mv[i] = 1.0
            last.extras = extras
        self._update_scalars(last, game)
        if self._wild:  # jokers and calls (docs/rules.md §5): small slices, rewritten
            last.obs[self.extras_at : self.features_size] = 0.0
            self.put_jokers_and_calls(last.obs, game, observer)
        # The exact part after the table: own known cards recounted where they changed, the
        # counters at every update, the rest when the hand's facts it holds moved.
        o = observer
        one, two = game.known_once[o], game.known_twice[o]
        if one != last.own_once or two != last.own_twice:
            at = self.at["own_known"]
            self._recount(mv, at, last.own_once ^ one | last.own_twice ^ two, one, two)
            last.own_once, last.own_twice = one, two
        key: tuple[object, ...] = (game.hands_played, game.is_hand_over, game.known_jokers[o])
        key += (game.dealer, *game.totals_before)
        if key != last.exact_key:
            last.obs[self._facts_at :] = 0.0
            self.put_exact_facts(mv, game, observer)
            last.exact_key = key
        self.put_exact_counters(mv, game, observer)
        return last.obs.copy()

    def _update_cards(self, last: _Last, game: Game) -> None:
        """The hand, the pile and the known cards."""
        observer = last.observer
        one, two = game.held_once[observer], game.held_twice[observer]
        if one != last.held_once or two != last.held_twice:
            self._recount(
                last.mv, self.at["hand"], last.held_once ^ one | last.held_twice ^ two, one, two
            )
            last.held_once, last.held_twice = one, two
        if game.pile != last.pile:
            self._pile_update(last, game.pile)
        opponents = self._opponents_of[observer]  # the observer's own known cards don't count
        k1, k2 = game.known_once, game.known_twice
        if _differ(opponents, k1, last.known_once) or _differ(opponents, k2, last.known_twice):
            self._update_known(last, k1, k2)

    def _update_scalars(self, last: _Last, game: Game) -> None:
        """Hand sizes, stock and pile sizes, progress, totals and table points."""
        mv, at = last.mv, self.at
        count = game.count
        if count != last.count:
            i = at["hand_sizes"]
            for p in self._seat_order[last.observer]:
                mv[i] = count[p] / 52.0
                i += 1
            last.count = count[:]
        i, deck = at["stock_pile"], self._deck_size
        mv[i] = len(game.stock) / deck
        mv[i + 1] = len(game.pile) / deck
        if game.turns != last.turns or game.hands_played != last.hands:  # at most once a turn
            r = self.rules
            if r.turn_limit:
                mv[at["progress"]] = game.turns / r.turn_limit
            if r.hand_limit:
                mv[at["progress"] + 1] = game.hands_played / r.hand_limit
            last.turns, last.hands = game.turns, game.hands_played
        if game.totals_before != last.totals:
            self._write_totals(last, game.totals_before)

    def _recount(self, mv: Any, base: int, changed: int, one: int, two: int) -> None:
        """Rewrite the count features of the `changed` cards from the multiset (one, two)."""
        h = self.inv_decks
        if changed & (changed - 1) == 0:  # one card, the common case: no loop
            c = changed.bit_length() - 1
            mv[base + c] = ((one >> c & 1) + (two >> c & 1)) * h
            return
        for c in cards_in(changed):
            mv[base + c] = ((one >> c & 1) + (two >> c & 1)) * h

    def _update_known(self, last: _Last, known_one: list[int], known_two: list[int]) -> None:
        """Recount the `known` rows of the opponents whose known cards changed."""
        for p, at in self._opponent_blocks[last.observer]:
            k1, k2 = known_one[p], known_two[p]
            o1, o2 = last.known_once[p], last.known_twice[p]
            if k1 != o1 or k2 != o2:
                self._recount(last.mv, at, o1 ^ k1 | o2 ^ k2, k1, k2)
        last.known_once, last.known_twice = known_one[:], known_two[:]

    def _update_pile(self, last: _Last, new: list[int]) -> None:
        """Rewrite the places of the cards above the part of the pile that stayed (its common
        bottom): those taken off it and those put on it (a discard, a take, a dig, or several
        of them between two looks of this observer). Places count from the bottom, so the
        cards that stayed keep theirs. Without jokers (`_rewrite_pile` with them)."""
        mv, old, h = last.mv, last.pile, self.inv_decks
        keep = _common_bottom(old, new)
        pc, place0, places = self.at["pile_cards"], self.at["pile_place"], self._places
        two = self.decks == 2
        for c in old[keep:]:  # off the top: a copy that stays is lower (row 0)
            mv[pc + c] -= h
            if two and mv[place0 + 52 + c]:
                mv[place0 + 52 + c] = 0.0
            else:
                mv[place0 + c] = 0.0
        for i in range(keep, len(new)):  # onto the top: a copy already there is lower
            c = new[i]
            mv[pc + c] += h
            if two and mv[place0 + c]:
                mv[place0 + 52 + c] = places[i]
            else:
                mv[place0 + c] = places[i]
        top0 = self.at["pile_top"]
        if old:
            mv[top0 + old[-1]] = 0.0
        if new:
            mv[top0 + new[-1]] = 1.0
        last.pile = new[:]

    def _rewrite_pile(self, last: _Last, new: list[int]) -> None:
        """`_update_pile` with jokers in the deck: the pile's card features written afresh (a
        joker has none: `put_jokers_and_calls` gives its places)."""
        obs, mv, h, at = last.obs, last.mv, self.inv_decks, self.at
        pc, place0, top0, places = at["pile_cards"], at["pile_place"], at["pile_top"], self._places
        for name in ("pile_cards", "pile_place", "pile_top"):
            obs[self.slices[name]] = 0.0
        for i, c in enumerate(new):
            if c != JOKER:
                mv[pc + c] += h
                place = place0 + c  # a second copy (two decks) goes in the upper row
                mv[place if not mv[place] else place + 52] = places[i]
        if new and new[-1] != JOKER:
            mv[top0 + new[-1]] = 1.0
        last.pile = new[:]

    def _sync_table(self, melds: list[Meld]) -> _Table:
        """The shared table block, brought up to `melds`: take out the melds that changed (a
        lay-off replaces one) and put in the new ones. A lay-off fit can be shared by two
        melds (two decks), so fits are counted."""
        t = self._table
        if melds == t.melds:
            return t
        mv, points, fit_count, h = t.mv, t.points, t.fit_count, self.inv_decks
        changes = _meld_changes(t.melds, melds)
        for sign, _, m in changes:
            idx, fits, values = self.meld_part(m, 0)
            d = sign * h
            for i in idx:  # no index twice within one meld
                mv[i] += d
            for i in fits:
                k = fit_count[i] = fit_count.get(i, 0) + sign
                mv[i] = 1.0 if k else 0.0
            for owner, value in values:
                points[owner] += sign * value
        t.melds = melds[:]
        self._sync_exact(t, changes)
        t.version += 1
        return t

    def _sync_exact(self, t: _Table, changes: list[tuple[int, int, Meld]]) -> None:
        """Each observer's exact table places (`_Table.exact`), brought up to `t.melds`.
        With one deck and no jokers every card has one place: only the melds that changed
        are written (their places are zeroed first when they leave); otherwise a second copy
        or a joker may move another meld's places, and every observer's are rewritten."""
        if self.decks == 1 and not self.joker_count:
            for sign, i, m in changes:  # those that leave come first
                places = self.exact_meld(m, i)
                for o, mv in enumerate(t.exact_mv):
                    if sign > 0:
                        self.put_exact_table(mv, places, o)
                        continue
                    for k, _, _ in places:
                        mv[k] = 0.0
            return
        places = self.exact_table(t.melds)
        for o, block in enumerate(t.exact):
            block[self._table_exact] = 0.0
            self.put_exact_table(t.exact_mv[o], places, o)

    def _copy_table(self, last: _Last, table: _Table) -> None:
        """Copy the shared table block into `last.obs`, owner rows rotated to the observer."""
        obs, block, o, n = last.obs, table.block, last.observer, self.players
        a, end = self.at["table_owner"], self.at["known"]
        b = a + (n - o) * 52
        obs[a:b] = block[a + o * 52 : a + n * 52]
        obs[b : a + n * 52] = block[a : a + o * 52]
        obs[a + n * 52 : end] = block[a + n * 52 : end]
        obs[self._table_exact] = table.exact[o][self._table_exact]
        last.table_version = table.version
        last.totals = None  # table points may have changed: rewrite them with the totals

    def _write_totals(self, last: _Last, totals: list[int]) -> None:
        """Rewrite the totals and table points (they change with a new hand or a meld)."""
        mv, target, n = last.mv, self.rules.target, self.players
        i, points = self.at["totals"], self._table.points
        for p in self._seat_order[last.observer]:
            mv[i] = clip(totals[p] / target)
            mv[i + n] = clip(points[p] / target)
            i += 1
        last.totals = totals[:]


def _differ(seats: list[int], a: list[int], b: list[int]) -> bool:
    """Whether the per-seat lists `a` and `b` differ at one of `seats`."""
    for p in seats:
        if a[p] != b[p]:
            return True
    return False


def _common_bottom(old: list[int], new: list[int]) -> int:
    """How many cards at the bottom of the pile stayed. It is almost always the whole of the
    shorter pile or all but its top, so only a few lengths are tried before 0."""
    lo, ln = len(old), len(new)
    if ln >= lo and new[:lo] == old:
        return lo
    if ln < lo and old[:ln] == new:
        return ln
    keep = min(lo, ln) - 1
    for _ in range(3):
        if old[:keep] == new[:keep]:
            return keep
        keep -= 1
    return 0


def _meld_changes(old: list[Meld], new: list[Meld]) -> list[tuple[int, int, Meld]]:
    """The melds to take out (-1) and put in (+1) to turn the table `old` into `new`, with
    their places on their table; those taken out come first."""
    lo, ln = len(old), len(new)
    if ln == lo + 1 and new[:lo] == old:  # a new meld
        return [(1, lo, new[lo])]
    out = [(-1, i, old[i]) for i in range(lo) if i >= ln or new[i] is not old[i]]
    return out + [(1, i, new[i]) for i in range(ln) if i >= lo or old[i] is not new[i]]


def _float_view(a: FloatArray) -> Any:
    """A memoryview of `a`, for writing single values. Typed Any: typeshed's memoryview
    takes only ints."""
    return memoryview(a)  # type: ignore[arg-type]  # typeshed: a buffer of ints only


class _Last:
    """The last observation `encode_update` made for one observer and what it was made of."""

    __slots__ = (
        "count",
        "exact_key",
        "extras",
        "hands",
        "held_once",
        "held_twice",
        "known_once",
        "known_twice",
        "mv",
        "obs",
        "observer",
        "own_once",
        "own_twice",
        "pile",
        "table_version",
        "totals",
        "turns",
    )

    def __init__(self, encoder: IncrementalEncoder, game: Game, observer: int) -> None:
        self.obs = encoder.encode(game, observer)
        self.mv = _float_view(self.obs)
        self.observer = observer
        self.held_once, self.held_twice = game.held_once[observer], game.held_twice[observer]
        self.pile = game.pile[:]
        self.known_once, self.known_twice = game.known_once[:], game.known_twice[:]
        self.own_once, self.own_twice = game.known_once[observer], game.known_twice[observer]
        """The observer's own known cards the observation holds (the exact part's)."""
        self.table_version = encoder._sync_table(game.melds).version
        self.totals: list[int] | None = game.totals_before[:]
        self.count, self.turns, self.hands = game.count[:], game.turns, game.hands_played
        self.extras = encoder._extras(game)
        self.exact_key: tuple[object, ...] = ()
        """What the exact part after own known cards was last written from (() forces a
        write)."""


class _Table:
    """The table block (owner rows, set, run, lay-off fits) in absolute seat order, i.e. as
    seat 0 sees it, with each seat's table points; shared by the observers, which copy it
    rotated when its version moves on."""

    __slots__ = ("block", "exact", "exact_mv", "fit_count", "melds", "mv", "points", "version")

    def __init__(self, encoder: ObservationEncoder) -> None:
        self.block = np.zeros(encoder.size, dtype=np.float32)  # only the table slices are used
        self.mv = _float_view(self.block)
        self.melds: list[Meld] = []
        self.points = [0] * encoder.players
        self.fit_count: dict[int, int] = {}
        self.exact: list[FloatArray] = [np.zeros(encoder.size, np.float32) for _ in self.points]
        """For each observer, its exact part's table places (`put_exact_table`; only that
        slice is used)."""
        self.exact_mv = [_float_view(a) for a in self.exact]
        self.version = 0
