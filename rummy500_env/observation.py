"""The observation encoder: what one seat may know, as one flat float32 vector.

Rotated so the observer is always seat 0: "seat s" below is the player s places after the
observer. Counts are divided by the number of decks D, so every card feature is 0, 0.5 or 1
except the pile places. With n players and D decks the slices are, in order:

==================  ===========  ==================================================================
name                size         content
==================  ===========  ==================================================================
``hand``            52           own cards (count / D)
``pile_top``        52           the top card of the discard pile (one-hot)
``pile_place``      D × 52       where each card lies in the pile: (i + 1) / deck size, i its place
                                 counted from the bottom (0 = bottom), 0 if it is not there. With
                                 two decks row 0 holds the lower copy, row 1 the upper. The top
                                 card's value equals the pile size in ``stock_pile``, so a card's
                                 depth below the top is (pile size − place) × deck size.
``pile_cards``      52           every card in the pile (count / D)
``table_owner``     n × 52       melded cards by the seat that put them down (count / D)
``table_set``       52           melded cards that sit in a set (count / D)
``table_run``       52           melded cards that sit in a run (count / D)
``layoff_fits``     3 × 52       cards that can be laid off now: on a set, below a run's low
                                 end, above a run's high end (1 / 0)
``known``           (n−1) × 52   per opponent seat 1..n−1: cards it is known to hold, i.e. took
                                 from the pile in view and has not played since (count / D)
``hand_sizes``      n            cards in each seat's hand / 52
``stock_pile``      2            stock size / deck size, pile size / deck size
``totals``          n            running totals before this hand / target, clipped to ±2
``table_points``    n            each seat's table points this hand / target, clipped to ±2
``phase``           2            one-hot: draw, play
``must_play``       52           the buried card that must reach the table this turn (one-hot)
``no_discard``      52           the card taken from the top that may not be discarded (one-hot)
``flags``           8            rules in force: the top take carries the dig obligation now,
                                 discard_to_go_out, top_card_must_meld, winner_must_go_out,
                                 stock_out is ends_hand, stock_out is pile_must_use, scoring is
                                 fives, two decks
``progress``        2            turns / turn_limit, hands played / hand_limit (0 if unlimited)
==================  ===========  ==================================================================

Size: 52 (D + 2n + 9) + 3n + 14, i.e. 748 for the standard game (n = 2, D = 1).
The pile is given by place rather than as a depth × card matrix: the order is complete either
way, and the places are 52 · D floats instead of 52 · (deck size − n), which makes policies
several times smaller and faster to train, and a discard one write instead of a shifted block.
Nothing hidden enters: not the stock's order, not the opponents' unseen cards.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from rummy500_env.cards import cards_in
from rummy500_env.game import Game
from rummy500_env.melds import Meld, layoff_end, meld_value
from rummy500_env.rules import Rules

OBSERVATION_VERSION = 2
"""Bump on any change to the layout (exported policies record it)."""

FloatArray = np.ndarray[Any, np.dtype[np.float32]]
_MeldPart = tuple[list[int], list[int], list[tuple[int, int]]]
"""A meld's share of an observer's observation: counted indices, fit indices, owners' points."""


class ObservationEncoder:
    """Encodes a `Game` for one observer; the slice table is in the module docstring."""

    def __init__(self, rules: Rules) -> None:
        self.rules = rules
        n, d = rules.players, rules.deck_count
        self.players = n
        self.decks = d
        self.inv_decks = 1.0 / d
        sizes = [
            ("hand", 52),
            ("pile_top", 52),
            ("pile_place", d * 52),
            ("pile_cards", 52),
            ("table_owner", n * 52),
            ("table_set", 52),
            ("table_run", 52),
            ("layoff_fits", 3 * 52),
            ("known", (n - 1) * 52),
            ("hand_sizes", n),
            ("stock_pile", 2),
            ("totals", n),
            ("table_points", n),
            ("phase", 2),
            ("must_play", 52),
            ("no_discard", 52),
            ("flags", 8),
            ("progress", 2),
        ]
        self.slices: dict[str, slice] = {}
        start = 0
        for name, size in sizes:
            self.slices[name] = slice(start, start + size)
            start += size
        self.size = start
        self._s = {k: v.start for k, v in self.slices.items()}
        s = self._s
        self._hand0, self._pile_cards0, self._known0 = s["hand"], s["pile_cards"], s["known"]
        self._top0, self._place0 = s["pile_top"], s["pile_place"]
        self._phase0, self._flags0, self._must_play0, self._no_discard0 = (
            s["phase"], s["flags"], s["must_play"], s["no_discard"])
        self._owner0, self._table_end = s["table_owner"], s["known"]
        self._sizes0, self._stock0 = s["hand_sizes"], s["stock_pile"]
        self._totals0, self._progress0 = s["totals"], s["progress"]
        self._deck_size = rules.deck_size  # a property: read once, not at every step
        self._places = [(i + 1) / rules.deck_size for i in range(rules.deck_size)]
        """The `pile_place` value of the card i places above the bottom."""
        self._forget()
        self._seat_order = [[(o + k) % n for k in range(n)] for o in range(n)]
        """For each observer, the absolute seats in relative order (observer first)."""
        self._owner_rows = [
            [s["table_owner"] + (p - o) % n * 52 for p in range(n)] for o in range(n)
        ]
        """For each observer, where each absolute seat's `table_owner` row starts."""
        self._opponent_blocks = [
            [(p, self._known0 + ((p - o) % n - 1) * 52) for p in range(n) if p != o]
            for o in range(n)
        ]
        """For each observer, each opponent's absolute seat and where its `known` row starts."""
        self._opponents_of = [
            operator.itemgetter(*(p for p in range(n) if p != o)) for o in range(n)
        ]
        """For each observer, a getter of the opponents' entries of a per-seat list."""
        self._scalar_index = np.concatenate(
            [
                np.arange(self._s[k], self._s[k] + n)
                for k in ("hand_sizes", "totals", "table_points")
            ]
            + [np.arange(self._s["stock_pile"], self._s["stock_pile"] + 2)]
            + [np.arange(self._s["progress"], self._s["progress"] + 2)]
        )
        r = rules
        self._blank = np.zeros(self.size, dtype=np.float32)
        self._blank[self._s["flags"] + 1 : self._s["flags"] + 8] = [
            float(r.discard_to_go_out),
            float(r.top_card_must_meld),
            float(r.winner_must_go_out),
            float(r.stock_out == "ends_hand"),
            float(r.stock_out == "pile_must_use"),
            float(r.scoring == "fives"),
            float(d == 2),
        ]

    def _forget(self) -> None:
        """Start the incremental caches afresh (they are not pickled: memoryviews aren't)."""
        self._last: list[_Last | None] = [None] * self.players
        self._table = _Table(self)
        self._meld_parts: dict[tuple[Meld, int], _MeldPart] = {}

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        for cache in ("_last", "_table", "_meld_parts"):
            del state[cache]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._forget()

    def views(self, obs: FloatArray) -> dict[str, FloatArray]:
        """Named, reshaped views of an observation (for agents and for reading it)."""
        n = self.players
        shapes = {
            "pile_place": (self.decks, 52),
            "table_owner": (n, 52),
            "layoff_fits": (3, 52),
            "known": (n - 1, 52),
        }
        return {k: obs[v].reshape(shapes.get(k, (-1,))) for k, v in self.slices.items()}

    def encode(self, game: Game, observer: int) -> FloatArray:
        """The observation of `observer` (an absolute seat) in this position."""
        n = self.players
        obs = self._blank.copy()  # zeros, with the constant rule flags set
        # Card features go into `counted` (with two decks a card held twice is listed twice
        # and adds up to 1), one-hot features into `onehot`, scalars into `scalars`.
        hand = self._hand0
        counted = [hand + c for c in cards_in(game.one[observer])]
        if game.two[observer]:
            counted += [hand + c for c in cards_in(game.two[observer])]
        pile = game.pile
        pc = self._pile_cards0
        counted += [pc + c for c in pile]
        known_one, known_two = game.known_one, game.known_two
        for p in range(n):
            if p != observer and known_one[p]:
                at = self._known0 + ((p - observer) % n - 1) * 52
                counted += [at + c for c in cards_in(known_one[p])]
                counted += [at + c for c in cards_in(known_two[p])]
        onehot = self._extras(game)
        if pile:
            onehot.append(self._top0 + pile[-1])
        if self.inv_decks == 1.0:
            obs[onehot + counted] = 1.0
        else:
            obs[onehot] = 1.0
            np.add.at(obs, counted, self.inv_decks)
        place0, places = self._place0, self._places
        for i, c in enumerate(pile):  # a second copy (two decks) goes in the upper row
            at = place0 + c if not obs[place0 + c] else place0 + 52 + c
            obs[at] = places[i]
        points = self._put_table(obs, game.melds, observer)
        obs[self._scalar_index] = self._scalars(game, observer, points)
        return obs

    def encode_update(self, game: Game, observer: int) -> FloatArray:
        """`encode`, computed as a change to the previous observation of this observer.

        An env asks for one observation per step and little changes between two of them (a
        card drawn, one discarded), so this keeps the last observation of each observer with
        what it was built from, rewrites only what changed, and returns a copy. Equal to
        `encode` in every position, whatever came before (property-tested). Single values
        are written through a memoryview, which is several times cheaper than numpy indexing.
        """
        last = self._last[observer]
        if last is None:
            last = self._last[observer] = _Last(self, game, observer)
            return last.obs.copy()
        mv = last.mv
        one, two = game.one[observer], game.two[observer]
        if one != last.one or two != last.two:
            self._recount(mv, self._hand0, last.one ^ one | last.two ^ two, one, two)
            last.one, last.two = one, two
        pile = game.pile
        if pile != last.pile:
            self._update_pile(last, pile)
        opponents = self._opponents_of[observer]  # the observer's own known cards don't count
        k1, k2 = game.known_one, game.known_two
        if opponents(k1) != opponents(last.known_one) or opponents(k2) != opponents(last.known_two):
            self._update_known(last, k1, k2)
        table = self._sync_table(game.melds)
        if table.version != last.table_version:
            self._copy_table(last, table)
        extras = self._extras(game)  # the one-hot features outside the card blocks
        if extras != last.extras:
            for i in last.extras:
                mv[i] = 0.0
            for i in extras:
                mv[i] = 1.0
            last.extras = extras
        count = game.count
        if count != last.count:
            at = self._sizes0
            for p in self._seat_order[observer]:
                mv[at] = count[p] / 52.0
                at += 1
            last.count = count[:]
        at, deck = self._stock0, self._deck_size
        mv[at] = len(game.stock) / deck
        mv[at + 1] = len(pile) / deck
        if game.turns != last.turns or game.hands_played != last.hands:  # at most once a turn
            r = self.rules
            if r.turn_limit:
                mv[self._progress0] = game.turns / r.turn_limit
            if r.hand_limit:
                mv[self._progress0 + 1] = game.hands_played / r.hand_limit
            last.turns, last.hands = game.turns, game.hands_played
        if game.totals_before != last.totals:
            self._write_totals(last, game.totals_before)
        return last.obs.copy()

    def _recount(self, mv: Any, base: int, changed: int, one: int, two: int) -> None:
        """Rewrite the count features of the `changed` cards from the multiset (one, two)."""
        h = self.inv_decks
        if changed & (changed - 1) == 0:  # one card: the common case, without the loop
            c = changed.bit_length() - 1
            mv[base + c] = ((one >> c & 1) + (two >> c & 1)) * h
            return
        for c in cards_in(changed):
            mv[base + c] = ((one >> c & 1) + (two >> c & 1)) * h

    def _update_known(self, last: _Last, known_one: list[int], known_two: list[int]) -> None:
        """Recount the `known` rows of the opponents whose known cards changed."""
        for p, at in self._opponent_blocks[last.observer]:
            k1, k2 = known_one[p], known_two[p]
            o1, o2 = last.known_one[p], last.known_two[p]
            if k1 != o1 or k2 != o2:
                self._recount(last.mv, at, o1 ^ k1 | o2 ^ k2, k1, k2)
        last.known_one, last.known_two = known_one[:], known_two[:]

    def _update_pile(self, last: _Last, new: list[int]) -> None:
        """Rewrite the places of the cards above the part of the pile that stayed (its common
        bottom): those taken off it and those put on it (a discard, a take, a dig, or several
        of them between two looks of this observer). Places count from the bottom, so the
        cards that stayed keep theirs."""
        mv, old, h = last.mv, last.pile, self.inv_decks
        lo, ln = len(old), len(new)
        # The kept bottom is almost always the whole of the shorter pile or nearly so.
        if ln >= lo and new[:lo] == old:
            keep = lo
        elif ln < lo and old[:ln] == new:
            keep = ln
        else:
            keep = min(lo, ln) - 1
            for _ in range(3):
                if old[:keep] == new[:keep]:
                    break
                keep -= 1
            else:
                keep = 0
        pc, place0, places = self._pile_cards0, self._place0, self._places
        two = self.decks == 2
        for c in old[keep:]:  # off the top: a copy that stays is lower (row 0)
            mv[pc + c] -= h
            if two and mv[place0 + 52 + c]:
                mv[place0 + 52 + c] = 0.0
            else:
                mv[place0 + c] = 0.0
        for i in range(keep, ln):  # onto the top: a copy already there is lower
            c = new[i]
            mv[pc + c] += h
            if two and mv[place0 + c]:
                mv[place0 + 52 + c] = places[i]
            else:
                mv[place0 + c] = places[i]
        top0 = self._top0
        if lo:
            mv[top0 + old[-1]] = 0.0
        if ln:
            mv[top0 + new[-1]] = 1.0
        last.pile = new[:]

    def _sync_table(self, melds: list[Meld]) -> _Table:
        """The shared table block, brought up to `melds`: take out the melds that changed (a
        lay-off replaces one) and put in the new ones. A lay-off fit can be shared by two
        melds (two decks), so fits are counted."""
        t = self._table
        old = t.melds
        if melds == old:
            return t
        lo, ln = len(old), len(melds)
        if ln == lo + 1 and melds[:lo] == old:  # a new meld
            changed = [(1, melds[lo])]
        elif ln == lo:  # lay-offs replace melds in place
            changed = []
            for a, b in zip(old, melds, strict=True):
                if a is not b:
                    changed += ((-1, a), (1, b))
        else:
            changed = [(-1, old[i]) for i in range(lo) if i >= ln or melds[i] is not old[i]]
            changed += [(1, melds[i]) for i in range(ln) if i >= lo or old[i] is not melds[i]]
        mv, points, fit_count, h = t.mv, t.points, t.fit_count, self.inv_decks
        for sign, m in changed:
            idx, fits, values = self._meld_part(m, 0)
            d = sign * h
            for i in idx:  # no index twice within one meld
                mv[i] += d
            for i in fits:
                k = fit_count[i] = fit_count.get(i, 0) + sign
                mv[i] = 1.0 if k else 0.0
            for owner, value in values:
                points[owner] += sign * value
        t.melds = melds[:]
        t.version += 1
        return t

    def _copy_table(self, last: _Last, table: _Table) -> None:
        """Copy the shared table block into `last.obs`, owner rows rotated to the observer."""
        mv, block, o, n = last.mv, table.mv, last.observer, self.players
        a, b, end = self._owner0, self._owner0 + (n - o) * 52, self._table_end
        if o:
            mv[a:b] = block[a + o * 52 : a + n * 52]
            mv[b : a + n * 52] = block[a : a + o * 52]
            mv[a + n * 52 : end] = block[a + n * 52 : end]
        else:  # seat 0 sees the block as it is
            mv[a:end] = block[a:end]
        last.table_version = table.version
        last.totals = None  # table points may have changed: rewrite them with the totals

    def _write_totals(self, last: _Last, totals: list[int]) -> None:
        """Rewrite the totals and table points (they change with a new hand or a meld)."""
        mv, target, n = last.mv, self.rules.target, self.players
        at, points = self._totals0, self._table.points
        for p in self._seat_order[last.observer]:
            t = totals[p] / target
            mv[at] = 2.0 if t > 2.0 else -2.0 if t < -2.0 else t
            t = points[p] / target
            mv[at + n] = 2.0 if t > 2.0 else t
            at += 1
        last.totals = totals[:]

    def _extras(self, game: Game) -> list[int]:
        """Indices of the one-hot features outside the card blocks (phase, obligations)."""
        out = []
        if game.phase == "draw":
            out.append(self._phase0)
            if game._obligated_top():
                out.append(self._flags0)
        elif game.phase == "play":
            out.append(self._phase0 + 1)
            if game.must_play is not None:
                out.append(self._must_play0 + game.must_play)
            if game.taken_top is not None:
                out.append(self._no_discard0 + game.taken_top)
        return out

    def _scalars(self, game: Game, observer: int, points: list[int]) -> list[float]:
        """hand_sizes, totals, table_points, stock_pile and progress, in that order."""
        r, target = self.rules, self.rules.target
        count, totals = game.count, game.totals_before
        sizes, tots, pts = [], [], []
        for p in self._seat_order[observer]:
            sizes.append(count[p] / 52.0)
            t = totals[p] / target
            tots.append(2.0 if t > 2.0 else -2.0 if t < -2.0 else t)
            t = points[p] / target
            pts.append(2.0 if t > 2.0 else t)
        return [
            *sizes,
            *tots,
            *pts,
            len(game.stock) / r.deck_size,
            len(game.pile) / r.deck_size,
            game.turns / r.turn_limit if r.turn_limit else 0.0,
            game.hands_played / r.hand_limit if r.hand_limit else 0.0,
        ]

    def _put_table(self, obs: FloatArray, melds: list[Meld], observer: int) -> list[int]:
        """Write the table block (owners, set/run, lay-off fits) of `observer` into a blank
        `obs`; return each player's table points (absolute seat order)."""
        points = [0] * self.players
        for m in melds:
            idx, fits, values = self._meld_part(m, observer)
            for i in idx:  # no index twice within one meld
                obs[i] += self.inv_decks
            for i in fits:
                obs[i] = 1.0
            for owner, value in values:
                points[owner] += value
        return points

    def _meld_part(self, m: Meld, observer: int) -> _MeldPart:
        """One meld's share of `observer`'s observation: indices of its counted cards (owner
        row and set/run), indices of its lay-off fits, and (owner, points) per owner.
        Memoised by value: melds are immutable, and the same ones (a three-card meld, a run
        grown by one) come back hand after hand, so most lookups hit."""
        key = (m, observer)
        memo = self._meld_parts.get(key)
        if memo is not None:
            return memo
        if len(self._meld_parts) > 4096:
            self._meld_parts.clear()
        rows, cards, owners = self._owner_rows[observer], m.cards, m.owners
        kind = self._s["table_run" if m.is_run else "table_set"]
        fits0 = self._s["layoff_fits"]
        idx = [rows[owner] + c for c, owner in zip(cards, owners, strict=True)]
        idx += [kind + c for c in cards]
        fits = [fits0 + layoff_end(m, c) * 52 + c for c in m.fits]
        points: dict[int, int] = {}
        for owner, value in zip(owners, meld_value(m, self.rules.scoring), strict=True):
            points[owner] = points.get(owner, 0) + value
        part = (idx, fits, list(points.items()))
        self._meld_parts[key] = part
        return part


def _float_view(a: FloatArray) -> Any:
    """A memoryview of `a`: writing single values through it is several times cheaper than
    numpy indexing. Typed Any: typeshed's memoryview takes only ints."""
    return memoryview(a)  # type: ignore[arg-type]


class _Last:
    """The last observation `encode_update` made for one observer and what it was made of."""

    __slots__ = (
        "count",
        "extras",
        "hands",
        "known_one",
        "known_two",
        "mv",
        "obs",
        "observer",
        "one",
        "pile",
        "table_version",
        "totals",
        "turns",
        "two",
    )

    def __init__(self, encoder: ObservationEncoder, game: Game, observer: int) -> None:
        self.obs = encoder.encode(game, observer)
        self.mv = _float_view(self.obs)
        self.observer = observer
        self.one, self.two = game.one[observer], game.two[observer]
        self.pile = game.pile[:]
        self.known_one, self.known_two = game.known_one[:], game.known_two[:]
        self.table_version = encoder._sync_table(game.melds).version
        self.totals: list[int] | None = game.totals_before[:]
        self.count, self.turns, self.hands = game.count[:], game.turns, game.hands_played
        self.extras = encoder._extras(game)


class _Table:
    """The table block (owner rows, set, run, lay-off fits) in absolute seat order, i.e. as
    seat 0 sees it, with each seat's table points; shared by the observers, which copy it
    rotated when its version moves on."""

    __slots__ = ("block", "fit_count", "melds", "mv", "points", "version")

    def __init__(self, encoder: ObservationEncoder) -> None:
        self.block = np.zeros(encoder.size, dtype=np.float32)  # only the table slices are used
        self.mv = _float_view(self.block)
        self.melds: list[Meld] = []
        self.points = [0] * encoder.players
        self.fit_count: dict[int, int] = {}
        self.version = 0
