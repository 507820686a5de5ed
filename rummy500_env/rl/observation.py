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

Features: 52 (D + 2n + 9) + 3n + 14 floats, i.e. 748 for the standard game (n = 2, D = 1).

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

Jokers add 2 D + 2 n + 107 floats, calls n + 2: 865 for the standard game with both.

Everything above is the *feature* part (``features_size`` floats, the layout of version 2),
what policies read. Version 3 appends an *exact* part that makes the observation a lossless
record of the seat's information state (`seat_view` decodes it into the engine's `SeatView`,
so bots driven through ``act(observation, action_mask)`` see exactly what the engine would
hand them; nothing else reads it). A table place is a card id 0..51, or 52 + suit for an ace
that sits above a king; a place's code is ``((meld × 4 + slot) × n + owner + 1) / (256 n)``
with ``meld`` the meld's number on the table, ``slot`` the card's place in a set (0 in a run)
and ``owner`` the seat that put it there:

==================  ===========  ==================================================================
``table_exact``     D × 56       each natural card on the table by place; row 0 the copy in the
                                 lower-numbered meld
``joker_exact``     K × 56       (jokers only) each joker on the table by the place it fills; one
                                 row per joker, in table order
``own_known``       52 (+1)      own cards the others know of (count / D; with jokers, then the
                                 known jokers / K)
``exact_state``     5 + 2 n      dealer seat / n, seat to act / n, turns / 65536, hands played /
                                 65536, the hand is over (1 / 0), totals before this hand / 65536
                                 per seat, this hand's scores / 65536 once it is over (0 before)
                                 per seat (exact while each is below 131,072 in size: inside the
                                 observation space's ±2)
==================  ===========  ==================================================================

The exact part adds 56 D + 2 n + 57 floats (+ 56 K + 1 with jokers): 865 for the standard game.
A version-2 policy reads the first ``features_size`` floats and plays as before.
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

from rummy500_env.engine.cards import JOKER, Card, make_card, multiset_cards, rank_of, suit_of
from rummy500_env.engine.game import Game
from rummy500_env.engine.melds import Meld, layoff_end, make_run, make_set, meld_value
from rummy500_env.engine.positions import Phase
from rummy500_env.engine.rules import Rules
from rummy500_env.engine.scoring import result_of_scores
from rummy500_env.engine.seat_view import SeatView

OBSERVATION_VERSION = 3
"""Bump on any change to the layout (exported policies record it). Version 3 appended the
exact part to version 2; the feature part is unchanged, so `FEATURE_VERSIONS` both read it."""
FEATURE_VERSIONS = (2, 3)
"""Observation versions whose feature part is today's: a policy recorded with either plays."""
EXACT_CODE = 256
"""Meld numbers × 4 set slots a table place's code can hold (36 melds at most: 108 cards)."""
EXACT_SCALE = 65536.0
"""The exact part's counts and points are divided by this (not by the target: totals of a
long game or a small target would leave the space's ±2)."""

FloatArray = np.ndarray[Any, np.dtype[np.float32]]
MeldPart = tuple[list[int], list[int], list[tuple[int, int]]]
"""A meld's share of an observer's observation: counted indices, fit indices, and each card's
owner and points."""


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
        exact = [("table_exact", d * 56)]
        if rules.jokers:
            exact.append(("joker_exact", rules.joker_count * 56))
        exact += [("own_known", 52 + (1 if rules.jokers else 0)), ("exact_state", 5 + 2 * n)]
        self.slices: dict[str, slice] = {}
        start = 0
        for name, size in sizes:
            self.slices[name] = slice(start, start + size)
            start += size
        self.features_size = start
        """Floats of the feature part (what policies read; the whole of version 2)."""
        self.feature_slices = dict(self.slices)
        """The feature part's slices (the exact part's are in `slices` too)."""
        for name, size in exact:
            self.slices[name] = slice(start, start + size)
            start += size
        self.size = start
        self.at: dict[str, int] = {k: v.start for k, v in self.slices.items()}
        """Where each slice starts (typed: a compiled build then adds offsets as machine ints)."""
        self.extras_at = self.at.get("hand_jokers", self.at.get("call_phase", self.features_size))
        """Where the slices of jokers and calls start (the size when the rules have none)."""
        self._places = [(i + 1) / rules.deck_size for i in range(rules.deck_size)]
        """The `pile_place` value of the card i places above the bottom."""
        self._seat_order = [[(o + k) % n for k in range(n)] for o in range(n)]
        """For each observer, the absolute seats in relative order (observer first)."""
        self._owner_rows = [
            [self.at["table_owner"] + (p - o) % n * 52 for p in range(n)] for o in range(n)
        ]
        self._scoring = rules.scoring  # read once: `Rules` is not compiled
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
            "table_exact": (self.decks, 56),
            "joker_exact": (self.joker_count, 56),
        }
        return {k: obs[v].reshape(shapes.get(k, (-1,))) for k, v in self.slices.items()}

    def __reduce__(self) -> tuple[type[ObservationEncoder], tuple[Rules]]:
        """Pickled as its rules, which everything here derives from (a compiled build,
        setup.py, cannot rebuild its objects any other way)."""
        return type(self), (self.rules,)

    def encode(self, game: Game, observer: int) -> FloatArray:
        """The observation of `observer` (an absolute seat) in this position: the
        specification of every feature."""
        n, at = self.players, self.at
        obs = self._blank.copy()  # zeros, with the constant rule flags set
        # Card features go into `counted` (with two decks a card held twice is listed twice
        # and adds up to 1), one-hot features into `onehot`, scalars into `scalars`.
        # Jokers (id 52) have their own slices: the card features skip them.
        counted = [
            at["hand"] + c
            for c in multiset_cards(game.held_once[observer], game.held_twice[observer])
        ]
        counted += [at["pile_cards"] + c for c in game.pile if c != JOKER]
        for p in range(n):
            if p != observer:
                row = at["known"] + ((p - observer) % n - 1) * 52
                counted += [
                    row + c for c in multiset_cards(game.known_once[p], game.known_twice[p])
                ]
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
        if self.extras_at < self.features_size:
            self.put_jokers_and_calls(obs, game, observer)
        self.put_exact(obs, game, observer)
        return obs

    def put_exact(self, obs: Any, game: Game, observer: int) -> None:
        """Write the exact part (module docstring) into `obs`, where it is all zero."""
        self.put_exact_table(obs, self.exact_table(game.melds), observer)
        self.put_exact_state(obs, game, observer)

    def exact_table(self, melds: list[Meld]) -> list[tuple[int, int, int]]:
        """The exact part's table places, whoever observes: for each card on the table (a
        joker by the place it fills), its index in the observation, its code without the
        owner, and its owner (absolute seat)."""
        parts = [self.exact_meld(m, i) for i, m in enumerate(melds)]
        if self.decks == 1 and not self.joker_count:  # every place is taken once
            return [p for part in parts for p in part]
        taken: set[int] = set()
        out = []
        for part in parts:
            for k, base, owner in part:
                while k in taken:  # a second copy, or another joker there: the next row
                    k += 56
                taken.add(k)
                out.append((k, base, owner))
        return out

    def exact_meld(self, m: Meld, i: int) -> list[tuple[int, int, int]]:
        """`exact_table`'s places of meld #`i`, each in the first row of its block."""
        n, at = self.players, self.at
        natural, wild = at["table_exact"], at.get("joker_exact", 0)
        high_ace = m.is_run and m.hi == 14
        cards, owners, jokers = m.cards, m.owners, m.jokers
        out = []
        for slot in range(len(cards)):  # indexed, not zipped: a compiled loop
            c = cards[slot]
            place = 52 + suit_of(c) if high_ace and rank_of(c) == 0 else c
            k = (wild if jokers >> c & 1 else natural) + place
            out.append((k, (i * 4 + (0 if m.is_run else slot)) * n + 1, owners[slot]))
        return out

    def put_exact_table(self, obs: Any, places: list[tuple[int, int, int]], observer: int) -> None:
        """Write `exact_table`'s places as `observer` sees them (owners rotated to its
        frame) into `obs` (an array or a memoryview of one)."""
        n = self.players
        scale = 1.0 / (EXACT_CODE * n)
        for k, base, owner in places:
            obs[k] = (base + (owner - observer) % n) * scale

    def put_exact_state(self, obs: Any, game: Game, observer: int) -> None:
        """Write the exact part after the table (own known cards, counters, totals, scores)
        into `obs` (an array or a memoryview of one), where it is all zero."""
        self.put_exact_counters(obs, game, observer)
        self.put_exact_hand(obs, game, observer)

    def put_exact_counters(self, obs: Any, game: Game, observer: int) -> None:
        """The exact part's seat to act and turn counter (they move every turn)."""
        i = self.at["exact_state"]
        obs[i + 1] = (game.turn - observer) % self.players / self.players
        obs[i + 2] = game.turns / EXACT_SCALE

    def put_exact_hand(self, obs: Any, game: Game, observer: int) -> None:
        """The rest of the exact part after the table, which moves with a pile pickup, a
        play or a hand: own known cards, then `put_exact_facts`."""
        known = self.at["own_known"]
        if game.known_once[observer]:
            for c in multiset_cards(game.known_once[observer], game.known_twice[observer]):
                obs[known + c] += self.inv_decks
        self.put_exact_facts(obs, game, observer)

    def put_exact_facts(self, obs: Any, game: Game, observer: int) -> None:
        """The exact part after own known cards: own known jokers, dealer, hands played,
        totals, the hand's scores."""
        n, at = self.players, self.at
        if self.joker_count:
            obs[at["own_known"] + 52] = game.known_jokers[observer] / self.joker_count
        i = at["exact_state"]
        obs[i] = (game.dealer - observer) % n / n
        obs[i + 3] = game.hands_played / EXACT_SCALE
        i += 5
        for p in self._seat_order[observer]:
            obs[i] = clip(game.totals_before[p] / EXACT_SCALE)
            i += 1
        if game.is_hand_over:
            obs[at["exact_state"] + 4] = 1.0
            scores = game.hand_scores()
            for p in self._seat_order[observer]:
                obs[i] = clip(scores[p] / EXACT_SCALE)
                i += 1

    def seat_view(self, observation: np.ndarray[Any, Any]) -> SeatView:
        """The information state an observation records (`SeatView`), in the observation's
        frame: the observer is seat 0. Exact for every rule system (the exact part, module
        docstring). Raises `ValueError` for a vector of the wrong size."""
        obs = np.asarray(observation, dtype=np.float32)
        if obs.shape != (self.size,):
            raise ValueError(
                f"an observation of these rules has shape ({self.size},), got {obs.shape}: "
                "is it the 'observation' entry of the env's dict, for the same rules?"
            )
        r, n, d, k = self.rules, self.players, self.decks, self.joker_count
        v = self.views(obs)

        def counted(row: np.ndarray[Any, Any], copies: int) -> list[int]:
            counts = np.rint(row * copies).astype(int)
            return [int(c) for c in np.flatnonzero(counts) for _ in range(counts[c])]

        # the pile, bottom first: natural cards and jokers by their places
        places = [(float(x), int(i) % 52) for i, x in enumerate(v["pile_place"].ravel()) if x]
        if k:
            places += [(float(x), JOKER) for x in v["pile_jokers"][1:] if x]
        pile = tuple(c for _, c in sorted(places))
        state = v["exact_state"]
        over = bool(state[4])
        totals = tuple(round(float(x) * EXACT_SCALE) for x in state[5 : 5 + n])
        hand = counted(v["hand"], d) + [JOKER] * (round(float(v["hand_jokers"][0]) * k) if k else 0)
        known = [
            tuple(
                counted(v["own_known"][:52], d)
                + [JOKER] * (round(float(v["own_known"][52]) * k) if k else 0)
            )
        ]
        for s in range(1, n):
            jokers = round(float(v["known_jokers"][s - 1]) * k) if k else 0
            known.append(tuple(counted(v["known"][s - 1], d) + [JOKER] * jokers))
        hand_sizes = tuple(round(float(x) * 52) for x in v["hand_sizes"])
        phase: Phase = "draw" if v["phase"][0] else "play" if v["phase"][1] else "hand_over"
        discarder = None
        if r.rummy_calls:
            if v["call_phase"].any():
                phase = "call" if v["call_phase"][0] else "called"
            if v["discarder"].any():
                discarder = int(np.flatnonzero(v["discarder"])[0])
        must = [int(c) for c in np.flatnonzero(v["must_play"])]
        taken = [int(c) for c in np.flatnonzero(v["no_discard"])]
        if k:
            must += [JOKER] * int(v["joker_flags"][0])
            taken += [JOKER] * int(v["joker_flags"][1])
        hands_played = round(float(state[3]) * EXACT_SCALE)
        result = None
        if over:
            scores = [round(float(x) * EXACT_SCALE) for x in state[5 + n : 5 + 2 * n]]
            went_out = next((s for s in range(n) if hand_sizes[s] == 0), None)
            result = result_of_scores(r, scores, totals, went_out, hands_played)
            phase = "game_over" if result.game_over else "hand_over"
        return SeatView(
            rules=r,
            seat=0,
            dealer=round(float(state[0]) * n),
            turn=round(float(state[1]) * n),
            phase=phase,
            hand=tuple(hand),
            pile=pile,
            melds=self._melds(v),
            known=tuple(known),
            hand_sizes=hand_sizes,
            stock_size=round(float(v["stock_pile"][0]) * r.deck_size),
            totals=totals,
            taken_top=taken[0] if taken else None,
            must_play=must[0] if must else None,
            discarder=discarder,
            turns=round(float(state[2]) * EXACT_SCALE),
            hands_played=hands_played,
            result=result,
        )

    def _melds(self, v: dict[str, FloatArray]) -> tuple[Meld, ...]:
        """The table of the exact part: each place's meld, slot and owner, and whether a joker
        fills it, gathered into the engine's melds."""
        n = self.players
        places: dict[int, list[tuple[int, Card, int, bool, bool]]] = {}
        blocks = [(v["table_exact"], False)]
        if self.joker_count:
            blocks.append((v["joker_exact"], True))
        for block, joker in blocks:
            for row in block:
                for place in np.flatnonzero(row):
                    code = round(float(row[place]) * EXACT_CODE * n) - 1
                    meld, owner = divmod(code, n)
                    card = int(place) if place < 52 else make_card(0, int(place) - 52)
                    part = (meld % 4, card, owner, joker, bool(place >= 52))
                    places.setdefault(meld // 4, []).append(part)
        melds = []
        for i in range(len(places)):
            if i not in places:
                raise ValueError(f"the observation's table skips meld #{i}: not an observation")
            parts = places[i]
            jokers = 0
            for _, c, _, joker, _ in parts:
                jokers |= joker << c
            if len({rank_of(p[1]) for p in parts}) == 1:  # a set, its cards by slot
                parts.sort()
                cards = tuple(p[1] for p in parts)
                owners = tuple(p[2] for p in parts)
                melds.append(make_set(rank_of(cards[0]), cards, owners, jokers))
                continue
            # a run, low to high: an ace is high where its place says so
            ords = sorted((14 if high else rank_of(c) + 1, o) for _, c, o, _, high in parts)
            owners = tuple(o for _, o in ords)
            melds.append(make_run(suit_of(parts[0][1]), ords[0][0], ords[-1][0], owners, jokers))
        return tuple(melds)

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
        obs[at["hand_jokers"]] = game.jokers_held[observer] * inv
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
            obs[at["known_jokers"] + k] = game.known_jokers[p] * inv
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
        row and set/run), indices of its lay-off fits, and (owner, points) per card."""
        rows = self._owner_rows[observer]
        kind = self.at["table_run" if m.is_run else "table_set"]
        cards, owners = m.cards, m.owners
        jokers = m.jokers  # a joker's place is in `table_jokers`, not a card feature
        # Indexed loops, not zips: a compiled build runs them as C loops.
        idx = [rows[owners[k]] + cards[k] for k in range(len(cards)) if not jokers >> cards[k] & 1]
        idx += [kind + c for c in cards if not jokers >> c & 1]
        fits_at = self.at["layoff_fits"]
        fits = [fits_at + layoff_end(m, c) * 52 + c for c in m.fits]
        values = meld_value(m, self._scoring)
        return idx, fits, [(owners[k], values[k]) for k in range(len(owners))]


def clip(x: float) -> float:
    """Scores scaled by the target, clipped to the observation's range [-2, 2]."""
    return 2.0 if x > 2.0 else -2.0 if x < -2.0 else x
