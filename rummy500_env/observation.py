"""The observation encoder: what one seat may know, as one flat float32 vector.

Rotated so the observer is always seat 0: "seat s" below is the player s places after the
observer. Counts are divided by the number of decks D, so every card feature is 0, 0.5 or 1.
With n players, D decks and P = deck size − n (the deepest pile), the slices are, in order:

==================  ===========  ==================================================================
name                size         content
==================  ===========  ==================================================================
``hand``            52           own cards (count / D)
``pile``            P × 52       the discard pile by depth: row d is the card d below the top
                                 (row 0 = top card)
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

Size: 52 (P + 2n + 8) + 3n + 14, i.e. 3,244 for the standard game (n = 2, P = 50).
Nothing hidden enters: not the stock's order, not the opponents' unseen cards.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rummy500_env.cards import cards_in
from rummy500_env.game import Game
from rummy500_env.melds import Meld, layoff_end, meld_value
from rummy500_env.rules import Rules

OBSERVATION_VERSION = 1
"""Bump on any change to the layout (exported policies record it)."""

FloatArray = np.ndarray[Any, np.dtype[np.float32]]


class ObservationEncoder:
    """Encodes a `Game` for one observer; the slice table is in the module docstring."""

    def __init__(self, rules: Rules) -> None:
        self.rules = rules
        n, d = rules.players, rules.deck_count
        self.players = n
        self.max_pile = rules.deck_size - n
        self.inv_decks = 1.0 / d
        sizes = [
            ("hand", 52),
            ("pile", self.max_pile * 52),
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
        self._table_slice = slice(self._s["table_owner"], self._s["known"])
        s = self._s
        self._hand0, self._pile0, self._pile_cards0, self._known0 = (
            s["hand"], s["pile"], s["pile_cards"], s["known"])
        self._phase0, self._flags0, self._must_play0, self._no_discard0 = (
            s["phase"], s["flags"], s["must_play"], s["no_discard"])
        self._last: list[_Last | None] = [None] * n
        self._meld_parts: dict[
            tuple[int, int], tuple[Meld, list[int], list[int], list[tuple[int, int]]]
        ] = {}
        self._seat_order = [[(o + k) % n for k in range(n)] for o in range(n)]
        """For each observer, the absolute seats in relative order (observer first)."""
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

    def views(self, obs: FloatArray) -> dict[str, FloatArray]:
        """Named, reshaped views of an observation (for agents and for reading it)."""
        n = self.players
        shapes = {
            "pile": (self.max_pile, 52),
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
        top = self._pile0 + (len(pile) - 1) * 52
        onehot = [top - i * 52 + c for i, c in enumerate(pile)] + self._extras(game)
        if self.inv_decks == 1.0:
            obs[onehot + counted] = 1.0
        else:
            obs[onehot] = 1.0
            np.add.at(obs, counted, self.inv_decks)
        table, points = self._table(game, observer)
        obs[self._table_slice] = table
        obs[self._scalar_index] = self._scalars(game, observer, points)
        return obs

    def encode_update(self, game: Game, observer: int) -> FloatArray:
        """`encode`, computed as a change to the previous observation of this observer.

        An env asks for one observation per step and little changes between two of them (a
        card drawn, one discarded), so this keeps the last observation of each observer with
        what it was built from, rewrites only what changed, and returns a copy. Equal to
        `encode` in every position (property-tested).
        """
        last = self._last[observer]
        if last is None:
            last = self._last[observer] = _Last(self, game, observer)
            return last.obs.copy()
        obs = last.obs
        one, two = game.one[observer], game.two[observer]
        if one != last.one or two != last.two:
            self._recount(obs, self._hand0, last.one ^ one | last.two ^ two, one, two)
            last.one, last.two = one, two
        pile = game.pile
        if pile != last.pile:
            self._update_pile(last, pile)
        n = self.players
        for p in range(n):
            if p != observer:
                k1, k2 = game.known_one[p], game.known_two[p]
                o1, o2 = last.known[p]
                if k1 != o1 or k2 != o2:
                    at = self._known0 + ((p - observer) % n - 1) * 52
                    self._recount(obs, at, o1 ^ k1 | o2 ^ k2, k1, k2)
                    last.known[p] = (k1, k2)
        if game.melds != last.melds:
            self._update_table(last, game.melds)
        extras = self._extras(game)
        if extras != last.extras:
            for i in last.extras:
                obs[i] = 0.0
            for i in extras:
                obs[i] = 1.0
            last.extras = extras
        obs[self._scalar_index] = self._scalars(game, observer, last.points)
        return obs.copy()

    def _recount(self, obs: FloatArray, base: int, changed: int, one: int, two: int) -> None:
        """Rewrite the count features of the `changed` cards from the multiset (one, two)."""
        h = self.inv_decks
        for c in cards_in(changed):
            obs[base + c] = ((one >> c & 1) + (two >> c & 1)) * h

    def _update_pile(self, last: _Last, new: list[int]) -> None:
        """Move the pile rows: a discard pushes one row down, a take or dig lifts k rows."""
        rows, counts, h, old = last.rows, last.counts, self.inv_decks, last.pile
        lo, ln = len(old), len(new)
        if ln == lo + 1 and new[:lo] == old:
            rows[1:ln] = rows[0:lo]
            rows[0] = 0.0
            rows[0, new[-1]] = 1.0
            counts[new[-1]] += h
        elif ln < lo and new == old[:ln]:
            rows[0:ln] = rows[lo - ln : lo]
            rows[ln:lo] = 0.0
            for c in old[ln:]:
                counts[c] -= h
        else:
            rows[:lo] = 0.0
            counts[:] = 0.0
            for depth, c in enumerate(reversed(new)):
                rows[depth, c] = 1.0
                counts[c] += h
        last.pile = new[:]

    def _update_table(self, last: _Last, melds: list[Meld]) -> None:
        """Take out the melds that changed (a lay-off replaces one) and put in the new ones.

        A lay-off fit can be shared by two melds (two decks), so fits are counted."""
        old = last.melds
        gone = [m for i, m in enumerate(old) if i >= len(melds) or melds[i] is not m]
        new = [m for i, m in enumerate(melds) if i >= len(old) or old[i] is not m]
        table, points, fit_count = last.table, last.points, last.fit_count
        for sign, changed in ((-1, gone), (1, new)):
            for m in changed:
                _, idx, fits, values = self._meld_part(m, last.observer)
                table[idx] += sign * self.inv_decks  # no index twice within one meld
                for i in fits:
                    k = fit_count[i] = fit_count.get(i, 0) + sign
                    table[i] = 1.0 if k else 0.0
                for owner, value in values:
                    points[owner] += sign * value
        last.melds = melds[:]

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

    def _table(self, game: Game, observer: int) -> tuple[FloatArray, list[int]]:
        """The table block (owners, set/run, lay-off fits) seen from `observer`, and each
        player's table points (absolute seat order)."""
        block = np.zeros(self._table_slice.stop - self._table_slice.start, dtype=np.float32)
        points = [0] * self.players
        for m in game.melds:
            _, idx, fits, values = self._meld_part(m, observer)
            block[idx] += self.inv_decks  # no index twice within one meld
            block[fits] = 1.0
            for owner, value in values:
                points[owner] += value
        return block, points

    def _meld_part(
        self, m: Meld, observer: int
    ) -> tuple[Meld, list[int], list[int], list[tuple[int, int]]]:
        """One meld's share of `observer`'s table block: counted indices, fit indices and
        (owner, points) pairs. Memoised per meld object (melds are immutable)."""
        key = (id(m), observer)
        part = self._meld_parts.get(key)
        if part is not None and part[0] is m:
            return part
        if len(self._meld_parts) > 4096:
            self._meld_parts.clear()
        n, start = self.players, self._table_slice.start
        kind = self._s["table_run" if m.is_run else "table_set"] - start
        fits0 = self._s["layoff_fits"] - start
        idx = [(owner - observer) % n * 52 + c for c, owner in zip(m.cards, m.owners, strict=True)]
        idx += [kind + c for c in m.cards]
        fits = [fits0 + layoff_end(m, c) * 52 + c for c in m.fits]
        values = meld_value(m, self.rules.scoring)
        part = self._meld_parts[key] = (m, idx, fits, list(zip(m.owners, values, strict=True)))
        return part


class _Last:
    """The last observation `encode_update` made for one observer, what it was made of, and
    views into it."""

    __slots__ = (
        "counts",
        "extras",
        "fit_count",
        "known",
        "melds",
        "obs",
        "observer",
        "one",
        "pile",
        "points",
        "rows",
        "table",
        "two",
    )

    def __init__(self, encoder: ObservationEncoder, game: Game, observer: int) -> None:
        self.obs = obs = encoder.encode(game, observer)
        self.observer = observer
        self.one, self.two = game.one[observer], game.two[observer]
        self.pile = game.pile[:]
        self.known = list(zip(game.known_one, game.known_two, strict=True))
        self.melds = game.melds[:]
        self.points = encoder._table(game, observer)[1]
        self.extras = encoder._extras(game)
        self.rows = obs[encoder.slices["pile"]].reshape(encoder.max_pile, 52)
        self.counts = obs[encoder.slices["pile_cards"]]
        self.table = obs[encoder._table_slice]
        self.fit_count: dict[int, int] = {}
        for m in self.melds:
            for i in encoder._meld_part(m, observer)[2]:
                self.fit_count[i] = self.fit_count.get(i, 0) + 1
