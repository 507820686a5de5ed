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

With ``jokers=2`` (docs/rules.md §5) these slices follow; K = 2 D is the number of jokers in
play, and joker counts are divided by it. A joker is never counted in the card features above
(a joker on the table is not the card it stands for):

==================  ===========  ==================================================================
``hand_jokers``     1            jokers in own hand / K
``pile_jokers``     1 + K        the top card is a joker (1 / 0), then the places of the jokers in
                                 the pile as in ``pile_place`` ((i + 1) / deck size), lowest first,
                                 0 for jokers not in the pile
``table_jokers``    2 × 52       jokers on the table by the card each stands for: row 0 in a set,
                                 row 1 in a run (count / K)
``joker_seats``     n            jokers each seat has put on the table / K
``known_jokers``    n − 1        per opponent seat: jokers it is known to hold (took from the pile
                                 in view) / K
``joker_flags``     2            a joker is owed to the table (dug, called or taken under the
                                 obligation); no joker may be discarded (one was taken from the top
                                 this turn)
==================  ===========  ==================================================================

With ``rummy_calls=True`` (§5) these follow (after the joker slices if both):

==================  ===========  ==================================================================
``call_phase``      2            one-hot: the seat decides whether to call ("call"); a caller plays
                                 out of turn ("called"). ``phase`` is all 0 in both.
``discarder``       n            one-hot: the seat whose discard opened the call window
==================  ===========  ==================================================================

Jokers add 2 D + 2 n + 107 floats, calls n + 2: 865 for the standard game with both. Without
them the layout is exactly the one above (`OBSERVATION_VERSION` unchanged), so a policy trained
on it keeps working.
The pile is given by place rather than as a depth × card matrix: the order is complete either
way, and the places are 52 · D floats instead of 52 · (deck size − n), which makes policies
several times smaller and faster to train, and a discard one write instead of a shifted block.
Nothing hidden enters: not the stock's order, not the opponents' unseen cards.

`ObservationEncoder.encode` below is the specification; the env uses
`observation_incremental.IncrementalEncoder`, which gives the same vectors (property-tested)
by rewriting only what changed since the observer's previous look.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rummy500_env.engine.cards import JOKER, multiset_cards
from rummy500_env.engine.game import Game
from rummy500_env.engine.melds import Meld, layoff_end, meld_value
from rummy500_env.engine.rules import Rules

OBSERVATION_VERSION = 2
"""Bump on any change to the layout (exported policies record it)."""

FloatArray = np.ndarray[Any, np.dtype[np.float32]]
MeldPart = tuple[list[int], list[int], list[tuple[int, int]]]
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
        self.joker_count = rules.joker_count
        if rules.jokers:  # docs/rules.md §5
            k = rules.joker_count
            sizes += [
                ("hand_jokers", 1),
                ("pile_jokers", 1 + k),
                ("table_jokers", 2 * 52),
                ("joker_seats", n),
                ("known_jokers", n - 1),
                ("joker_flags", 2),
            ]
        if rules.rummy_calls:
            sizes += [("call_phase", 2), ("discarder", n)]
        self.slices: dict[str, slice] = {}
        start = 0
        for name, size in sizes:
            self.slices[name] = slice(start, start + size)
            start += size
        self.size = start
        self.at = {k: v.start for k, v in self.slices.items()}
        """Where each slice starts."""
        self.extras_at = self.at.get("hand_jokers", self.at.get("call_phase", self.size))
        """Where the slices of jokers and calls start (the size when the rules have none)."""
        self._places = [(i + 1) / rules.deck_size for i in range(rules.deck_size)]
        """The `pile_place` value of the card i places above the bottom."""
        self._seat_order = [[(o + k) % n for k in range(n)] for o in range(n)]
        """For each observer, the absolute seats in relative order (observer first)."""
        self._owner_rows = [
            [self.at["table_owner"] + (p - o) % n * 52 for p in range(n)] for o in range(n)
        ]
        """For each observer, where each absolute seat's `table_owner` row starts."""
        self._scalar_index = np.concatenate(
            [
                np.arange(self.at[k], self.at[k] + n)
                for k in ("hand_sizes", "totals", "table_points")
            ]
            + [np.arange(self.at[k], self.at[k] + 2) for k in ("stock_pile", "progress")]
        )
        self._blank = np.zeros(self.size, dtype=np.float32)
        self._blank[self.at["flags"] + 1 : self.at["flags"] + 8] = [
            float(rules.discard_to_go_out),
            float(rules.top_card_must_meld),
            float(rules.winner_must_go_out),
            float(rules.stock_out == "ends_hand"),
            float(rules.stock_out == "pile_must_use"),
            float(rules.scoring == "fives"),
            float(d == 2),
        ]

    def views(self, obs: FloatArray) -> dict[str, FloatArray]:
        """Named, reshaped views of an observation (for agents and for reading it)."""
        n = self.players
        shapes = {
            "pile_place": (self.decks, 52),
            "table_owner": (n, 52),
            "layoff_fits": (3, 52),
            "known": (n - 1, 52),
            "table_jokers": (2, 52),
        }
        return {k: obs[v].reshape(shapes.get(k, (-1,))) for k, v in self.slices.items()}

    def encode(self, game: Game, observer: int) -> FloatArray:
        """The observation of `observer` (an absolute seat) in this position: the
        specification of every feature."""
        n, at = self.players, self.at
        obs = self._blank.copy()  # zeros, with the constant rule flags set
        # Card features go into `counted` (with two decks a card held twice is listed twice
        # and adds up to 1), one-hot features into `onehot`, scalars into `scalars`.
        # Jokers (id 52) have their own slices: the card features skip them.
        counted = [at["hand"] + c for c in multiset_cards(game.one[observer], game.two[observer])]
        counted += [at["pile_cards"] + c for c in game.pile if c != JOKER]
        for p in range(n):
            if p != observer:
                row = at["known"] + ((p - observer) % n - 1) * 52
                counted += [row + c for c in multiset_cards(game.known_one[p], game.known_two[p])]
        onehot = self._extras(game)
        if game.pile and game.pile[-1] != JOKER:
            onehot.append(at["pile_top"] + game.pile[-1])
        obs[onehot] = 1.0
        np.add.at(obs, counted, self.inv_decks)
        for i, c in enumerate(game.pile):  # a second copy (two decks) goes in the upper row
            if c != JOKER:
                place = at["pile_place"] + c
                obs[place if not obs[place] else place + 52] = self._places[i]
        points = self._put_table(obs, game.melds, observer)
        obs[self._scalar_index] = self._scalars(game, observer, points)
        if self.extras_at < self.size:
            self.put_jokers_and_calls(obs, game, observer)
        return obs

    def put_jokers_and_calls(self, obs: FloatArray, game: Game, observer: int) -> None:
        """Write the slices of jokers and calls (module docstring) into `obs`, where they are
        all zero."""
        if self.joker_count:
            self._put_jokers(obs, game, observer)
        if self.rules.rummy_calls:
            at, n = self.at, self.players
            if game.phase in ("call", "called"):
                obs[at["call_phase"] + (game.phase == "called")] = 1.0
            if game.discarder is not None:
                obs[at["discarder"] + (game.discarder - observer) % n] = 1.0

    def _put_jokers(self, obs: FloatArray, game: Game, observer: int) -> None:
        """The joker slices (module docstring)."""
        at, n = self.at, self.players
        inv = 1.0 / self.joker_count
        obs[at["hand_jokers"]] = game.jk[observer] * inv
        pile, i = game.pile, at["pile_jokers"]
        if pile and pile[-1] == JOKER:
            obs[i] = 1.0
        for place, c in enumerate(pile):
            if c == JOKER:
                i += 1
                obs[i] = self._places[place]
        for m in game.melds:
            if m.jokers:
                row = at["table_jokers"] + (52 if m.is_run else 0)
                for c, owner in zip(m.cards, m.owners, strict=True):
                    if m.jokers >> c & 1:
                        obs[row + c] += inv
                        obs[at["joker_seats"] + (owner - observer) % n] += inv
        for k, p in enumerate(self._seat_order[observer][1:]):
            obs[at["known_jokers"] + k] = game.known_jk[p] * inv
        obs[at["joker_flags"]] = float(game.must_play == JOKER)
        obs[at["joker_flags"] + 1] = float(game.taken_top == JOKER)

    def _extras(self, game: Game) -> list[int]:
        """Indices of the one-hot features outside the card blocks (phase, obligations)."""
        at, out = self.at, []
        if game.phase == "draw":
            out.append(at["phase"])
            if game.top_take_obligated:
                out.append(at["flags"])
        elif game.phase == "play":
            out.append(at["phase"] + 1)
            if game.must_play is not None and game.must_play != JOKER:  # a joker: `joker_flags`
                out.append(at["must_play"] + game.must_play)
            if game.taken_top is not None and game.taken_top != JOKER:
                out.append(at["no_discard"] + game.taken_top)
        elif game.phase == "called" and game.must_play not in (None, JOKER):  # §5
            out.append(at["must_play"] + game.must_play)
        return out

    def _scalars(self, game: Game, observer: int, points: list[int]) -> list[float]:
        """hand_sizes, totals, table_points, stock_pile and progress, in that order."""
        r, target = self.rules, self.rules.target
        order = self._seat_order[observer]
        totals = [clip(game.totals_before[p] / target) for p in order]
        return [
            *(game.count[p] / 52.0 for p in order),
            *totals,
            *(clip(points[p] / target) for p in order),
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
            idx, fits, values = self.meld_part(m, observer)
            for i in idx:  # no index twice within one meld
                obs[i] += self.inv_decks
            for i in fits:
                obs[i] = 1.0
            for owner, value in values:
                points[owner] += value
        return points

    def meld_part(self, m: Meld, observer: int) -> MeldPart:
        """One meld's share of `observer`'s observation: indices of its counted cards (owner
        row and set/run), indices of its lay-off fits, and (owner, points) per owner."""
        rows = self._owner_rows[observer]
        kind = self.at["table_run" if m.is_run else "table_set"]
        jokers = m.jokers  # a joker's place is in `table_jokers`, not a card feature
        owned = zip(m.cards, m.owners, strict=True)
        idx = [rows[owner] + c for c, owner in owned if not jokers or not jokers >> c & 1]
        idx += [kind + c for c in m.cards if not jokers or not jokers >> c & 1]
        fits = [self.at["layoff_fits"] + layoff_end(m, c) * 52 + c for c in m.fits]
        points: dict[int, int] = {}
        for owner, value in zip(m.owners, meld_value(m, self.rules.scoring), strict=True):
            points[owner] = points.get(owner, 0) + value
        return idx, fits, list(points.items())


def clip(x: float) -> float:
    """Scores scaled by the target, clipped to the observation's range [-2, 2]."""
    return 2.0 if x > 2.0 else -2.0 if x < -2.0 else x
