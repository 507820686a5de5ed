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
* each observer's table kept in its own observation and brought up to the melds that
  changed since its last look: with one deck and no jokers each card's owner row, set or
  run and exact place compared with what the observer holds and only the differences
  written (a lay-off writes its card and the fits), instead of one table block shared by
  the observers, updated by whole melds and copied rotated with numpy slice assignments;
  together with typed slice offsets (a compiled build added each `at[name]` offset as a
  Python object) and the stock, pile and counters written only when they move: 14% of the
  instructions of a `raw_env` step (callgrind, `benchmarks/env_steps.py`: 91.3k to 78.9k a
  step);
* the exact part after the table rewritten only when what it holds moved: writing it whole
  at every step took 40% more instructions per `raw_env` step than the env without it
  (callgrind, `benchmarks/instructions.py`);
* the observer's own known cards in the exact part recounted where they changed, as the
  opponents' are, instead of rewriting that part with them: random play picks cards up
  from the pile every few turns, and the rewrite took 3% of a `raw_env` step's
  instructions (callgrind, `benchmarks/env_steps.py`: 102k to 99k a step, counted before
  the benchmark kept OpenBLAS to one thread).
"""

from __future__ import annotations

from typing import Any

from rummy500_env.engine.cards import JOKER, cards_in, rank_of, suit_of
from rummy500_env.engine.game import Game
from rummy500_env.engine.melds import Meld, layoff_end, meld_value
from rummy500_env.engine.rules import Rules
from rummy500_env.rl.observation import (
    EXACT_CODE,
    EXACT_SCALE,
    FloatArray,
    MeldPart,
    ObservationEncoder,
    clip,
)


class IncrementalEncoder(ObservationEncoder):
    """`ObservationEncoder` with `encode_update`, the incremental path (module docstring)."""

    def __init__(self, rules: Rules) -> None:
        super().__init__(rules)
        n, at = self.players, self.at
        self._opponent_blocks = [
            [(p, at["known"] + ((p - o) % n - 1) * 52) for p in range(n) if p != o]
            for o in range(n)
        ]
        """For each observer, each opponent's absolute seat and where its `known` row starts."""
        self._opponents_of = [[p for p in range(n) if p != o] for o in range(n)]
        """For each observer, the opponents' seats."""
        self._deck_size = rules.deck_size  # a property: read once here, not at every step
        self._turn_limit, self._hand_limit = rules.turn_limit, rules.hand_limit
        # Where the slices the updates write start, as attributes: a compiled build reads
        # them as machine ints, where each `at[name]` is a dict lookup.
        self._hand_at, self._pile_top_at = at["hand"], at["pile_top"]
        self._pile_place_at, self._pile_cards_at = at["pile_place"], at["pile_cards"]
        self._table_at, self._table_end = at["table_owner"], at["known"]
        """The table block: owner rows, set, run, lay-off fits."""
        self._hand_sizes_at, self._stock_pile_at = at["hand_sizes"], at["stock_pile"]
        self._totals_at, self._progress_at = at["totals"], at["progress"]
        self._table_set_at, self._table_run_at = at["table_set"], at["table_run"]
        self._layoff_fits_at, self._table_points_at = at["layoff_fits"], at["table_points"]
        self._table_exact_at, self._own_known_at = at["table_exact"], at["own_known"]
        self._exact_state_at = at["exact_state"]
        self._facts_at = self._own_known_at + 52
        """Where the exact part after own known cards starts (`put_exact_facts`)."""
        self._one_place = self.decks == 1 and not self.joker_count
        """One deck, no jokers: every card on the table has one exact place."""
        self._forget()

    def _forget(self) -> None:
        """Start the caches afresh (they are not pickled: `__reduce__`)."""
        self._last: list[_Last | None] = [None] * self.players
        self._wild = self.extras_at < self.features_size
        """The rules have jokers or calls (docs/rules.md §5): their slices are rewritten."""
        self._pile_update = self._rewrite_pile if self.joker_count else self._update_pile
        """How the pile's card features follow the pile: with jokers, rewritten whole."""

    def __reduce__(self) -> tuple[type[IncrementalEncoder], tuple[Rules]]:
        """Pickled as its rules, which everything else derives from: the caches start afresh
        (memoryviews can't be pickled), and a compiled build (setup.py) has no ``__dict__``."""
        return type(self), (self.rules,)

    def encode_update(self, game: Game, observer: int) -> FloatArray:
        """`encode`, computed as a change to the previous observation of this observer."""
        last = self._last[observer]
        if last is None:  # the full encoding, with its table left to `_update_table`
            last = self._last[observer] = _Last(self, game, observer)
        self._update_cards(last, game)
        if game.melds != last.melds:  # melds are compared by identity first: cheap
            self._update_table(last, game.melds)
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
        self._update_exact(last, game)
        return last.obs.copy()

    def _update_exact(self, last: _Last, game: Game) -> None:
        """The exact part after the table: own known cards recounted where they changed, the
        counters when they moved, the rest when the hand's facts it holds moved."""
        mv, o = last.mv, last.observer
        one, two = game.known_once[o], game.known_twice[o]
        if one != last.own_once or two != last.own_twice:
            changed = last.own_once ^ one | last.own_twice ^ two
            self._recount(mv, self._own_known_at, changed, one, two)
            last.own_once, last.own_twice = one, two
        rewrite = (
            game.hands_played != last.facts_hands
            or game.dealer != last.facts_dealer
            or game.is_hand_over != last.facts_over
            or game.known_jokers[o] != last.facts_jokers
            or game.totals_before != last.facts_totals
        )
        if rewrite:
            last.obs[self._facts_at :] = 0.0  # the counters too: rewritten below
            self.put_exact_facts(mv, game, o)
            last.facts_hands, last.facts_dealer = game.hands_played, game.dealer
            last.facts_over, last.facts_jokers = game.is_hand_over, game.known_jokers[o]
            last.facts_totals = game.totals_before[:]
        if rewrite or game.turn != last.turn or game.turns != last.counter_turns:
            i, n = self._exact_state_at, self.players
            mv[i + 1] = (game.turn - o) % n / n  # as `put_exact_counters`
            mv[i + 2] = game.turns / EXACT_SCALE
            last.turn, last.counter_turns = game.turn, game.turns

    def _update_cards(self, last: _Last, game: Game) -> None:
        """The hand, the pile and the known cards."""
        observer = last.observer
        one, two = game.held_once[observer], game.held_twice[observer]
        if one != last.held_once or two != last.held_twice:
            changed = last.held_once ^ one | last.held_twice ^ two
            self._recount(last.mv, self._hand_at, changed, one, two)
            last.held_once, last.held_twice = one, two
        if game.pile != last.pile:
            self._pile_update(last, game.pile)
        opponents = self._opponents_of[observer]  # the observer's own known cards don't count
        k1, k2 = game.known_once, game.known_twice
        if _differ(opponents, k1, last.known_once) or _differ(opponents, k2, last.known_twice):
            self._update_known(last, k1, k2)

    def _update_scalars(self, last: _Last, game: Game) -> None:
        """Hand sizes, stock and pile sizes, progress, totals and table points."""
        mv = last.mv
        count = game.count
        if count != last.count:
            i = self._hand_sizes_at
            for p in self._seat_order[last.observer]:
                mv[i] = count[p] / 52.0
                i += 1
            last.count = count[:]
        stock, pile = len(game.stock), len(game.pile)
        if stock != last.stock_size or pile != last.pile_size:
            i, deck = self._stock_pile_at, self._deck_size
            mv[i] = stock / deck
            mv[i + 1] = pile / deck
            last.stock_size, last.pile_size = stock, pile
        if game.turns != last.turns or game.hands_played != last.hands:  # at most once a turn
            if self._turn_limit:
                mv[self._progress_at] = game.turns / self._turn_limit
            if self._hand_limit:
                mv[self._progress_at + 1] = game.hands_played / self._hand_limit
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
        pc, place0, places = self._pile_cards_at, self._pile_place_at, self._places
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
        top0 = self._pile_top_at
        if old:
            mv[top0 + old[-1]] = 0.0
        if new:
            mv[top0 + new[-1]] = 1.0
        last.pile = new[:]

    def _rewrite_pile(self, last: _Last, new: list[int]) -> None:
        """`_update_pile` with jokers in the deck: the pile's card features written afresh (a
        joker has none: `put_jokers_and_calls` gives its places)."""
        obs, mv, h = last.obs, last.mv, self.inv_decks
        pc, place0, top0 = self._pile_cards_at, self._pile_place_at, self._pile_top_at
        places = self._places
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

    def _update_table(self, last: _Last, melds: list[Meld]) -> None:
        """The observer's table block, table points and exact table places, brought up to
        `melds`: the melds that changed (a lay-off replaces one; each meld is compared by
        identity at its place on the table) are taken out and the new ones put in. With
        one deck and no jokers only the features that differ are written (`_move_cards`)."""
        old, o = last.melds, last.observer
        if self._one_place:
            self._move_cards(last, melds)
        else:
            for i in range(max(len(old), len(melds))):
                if i < len(old) and i < len(melds) and old[i] is melds[i]:
                    continue
                if i < len(old):
                    self._put_meld(last, self.meld_part(old[i], o), -1)
                if i < len(melds):
                    self._put_meld(last, self.meld_part(melds[i], o), 1)
            # A second copy or a joker may move another meld's places: all rewritten.
            last.obs[self._table_exact_at : self._own_known_at] = 0.0
            self.put_exact_table(last.mv, self.exact_table(melds), o)
        last.melds = melds[:]
        self._write_points(last)

    def _put_meld(self, last: _Last, part: MeldPart, sign: int) -> None:
        """Add (`sign` 1) or take out (-1) a meld's part of the table block and points. A
        lay-off fit can be shared by two melds (two decks), so fits are counted."""
        mv, fit_count, d = last.mv, last.fit_count, sign * self.inv_decks
        idx, fits, values = part
        for i in idx:  # no index twice within one meld
            mv[i] += d
        for i in fits:
            k = fit_count[i] = fit_count.get(i, 0) + sign
            mv[i] = 1.0 if k else 0.0
        for owner, value in values:
            last.points[owner] += sign * value

    def _move_cards(self, last: _Last, melds: list[Meld]) -> None:
        """`_update_table` with one deck and no jokers, where each card has one place on the
        table: the cards of the melds that changed are compared with what `last` holds of
        each (its owner row, set or run, exact place and code) and only what differs is
        written, so a lay-off writes its card and the fits, not the whole meld (a table
        change cost 47k instructions when every changed meld was taken out and put in)."""
        mv, o, n, h = last.mv, last.observer, self.players, self.inv_decks
        old, points, fits = last.melds, last.points, last.fit_count
        rows, scale = self._owner_rows[o], 1.0 / (EXACT_CODE * n)
        leaving = 0  # cards of the melds that left, until they come back in another
        touched: list[int] = []  # fit indices whose count moved
        for i in range(len(old)):
            if i >= len(melds) or old[i] is not melds[i]:
                for c in old[i].cards:
                    leaving |= 1 << c
                touched += self._count_fits(old[i], -1, fits)
                _add_points(points, old[i], meld_value(old[i], self._scoring), -1)
        for i in range(len(melds)):
            m = melds[i]
            if i < len(old) and old[i] is m:
                continue
            cards, owners = m.cards, m.owners
            kind = self._table_run_at if m.is_run else self._table_set_at
            high_ace = m.is_run and m.hi == 14
            for slot in range(len(cards)):
                c = cards[slot]
                leaving &= ~(1 << c)
                _move(mv, last.card_row, c, rows[owners[slot]] + c, h)
                _move(mv, last.card_kind, c, kind + c, h)
                # the exact place and its code, as `exact_meld` and `put_exact_table` give them
                place = 52 + suit_of(c) if high_ace and rank_of(c) == 0 else c
                at = self._table_exact_at + place
                base = (i * 4 + (0 if m.is_run else slot)) * n + 1
                code = (base + (owners[slot] - o) % n) * scale
                if code != last.card_code[c]:  # written below where the place moves
                    last.card_code[c] = code
                    if last.card_place[c] == at:
                        mv[at] = code
                _move(mv, last.card_place, c, at, code)
            touched += self._count_fits(m, 1, fits)
            _add_points(points, m, meld_value(m, self._scoring), 1)
        for c in cards_in(leaving):
            _move(mv, last.card_row, c, 0, 0.0)
            _move(mv, last.card_kind, c, 0, 0.0)
            _move(mv, last.card_place, c, 0, 0.0)
            last.card_code[c] = 0.0
        for f in touched:
            mv[f] = 1.0 if fits.get(f, 0) else 0.0

    def _count_fits(self, m: Meld, sign: int, fit_count: dict[int, int]) -> list[int]:
        """Count meld `m`'s lay-off fits in (`sign` 1) or out (-1); their indices."""
        at = self._layoff_fits_at
        out = [at + layoff_end(m, c) * 52 + c for c in m.fits]
        for f in out:
            fit_count[f] = fit_count.get(f, 0) + sign
        return out

    def _write_points(self, last: _Last) -> None:
        """Rewrite the table points (they change with the table)."""
        mv, target, points = last.mv, self.rules.target, last.points
        i = self._table_points_at
        for p in self._seat_order[last.observer]:
            mv[i] = clip(points[p] / target)
            i += 1

    def _write_totals(self, last: _Last, totals: list[int]) -> None:
        """Rewrite the totals (they change with a new hand)."""
        mv, target, i = last.mv, self.rules.target, self._totals_at
        for p in self._seat_order[last.observer]:
            mv[i] = clip(totals[p] / target)
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


def _move(mv: Any, where: list[int], card: int, index: int, value: float) -> None:
    """Move `card`'s feature whose index `where` holds (0: none) to `index` (0: none), where
    it has `value`; nothing is written if it stays."""
    if where[card] != index:
        if where[card]:
            mv[where[card]] = 0.0
        if index:
            mv[index] = value
        where[card] = index


def _add_points(points: list[int], m: Meld, values: list[int], sign: int) -> None:
    """Add (`sign` 1) or take out (-1) the table points `values` of meld `m`'s cards."""
    owners = m.owners
    for k in range(len(owners)):
        points[owners[k]] += sign * values[k]


def _float_view(a: FloatArray) -> Any:
    """A memoryview of `a`, for writing single values. Typed Any: typeshed's memoryview
    takes only ints."""
    return memoryview(a)  # type: ignore[arg-type, unused-ignore]  # typeshed: ints only


class _Last:
    """The last observation `encode_update` made for one observer and what it was made of."""

    __slots__ = (
        "card_code",
        "card_kind",
        "card_place",
        "card_row",
        "count",
        "counter_turns",
        "extras",
        "facts_dealer",
        "facts_hands",
        "facts_jokers",
        "facts_over",
        "facts_totals",
        "fit_count",
        "hands",
        "held_once",
        "held_twice",
        "known_once",
        "known_twice",
        "melds",
        "mv",
        "obs",
        "observer",
        "own_once",
        "own_twice",
        "pile",
        "pile_size",
        "points",
        "stock_size",
        "totals",
        "turn",
        "turns",
    )

    def __init__(self, encoder: IncrementalEncoder, game: Game, observer: int) -> None:
        """`encode`'s observation with an empty table: the first update puts the melds in
        (`IncrementalEncoder._update_table`)."""
        self.obs = encoder.encode(game, observer)
        self.obs[encoder._table_at : encoder._table_end] = 0.0
        self.obs[encoder._table_exact_at : encoder._own_known_at] = 0.0
        self.mv = _float_view(self.obs)
        self.observer = observer
        self.melds: list[Meld] = []
        self.points = [0] * encoder.players
        """Each seat's table points (absolute seat order)."""
        self.fit_count: dict[int, int] = {}
        """How many melds take a lay-off at each `layoff_fits` index."""
        # With one deck and no jokers (`IncrementalEncoder._move_cards`), where each card on
        # the table has its features: its owner row's index, its set or run index, its exact
        # place's index (0 for a card not on the table), and its exact place's code.
        self.card_row = [0] * 52
        self.card_kind = [0] * 52
        self.card_place = [0] * 52
        self.card_code = [0.0] * 52
        self.totals = game.totals_before[:]
        self.held_once, self.held_twice = game.held_once[observer], game.held_twice[observer]
        self.pile = game.pile[:]
        self.known_once, self.known_twice = game.known_once[:], game.known_twice[:]
        self.own_once, self.own_twice = game.known_once[observer], game.known_twice[observer]
        """The observer's own known cards the observation holds (the exact part's)."""
        self.count, self.turns, self.hands = game.count[:], game.turns, game.hands_played
        self.stock_size, self.pile_size = len(game.stock), len(game.pile)
        self.extras = encoder._extras(game)
        # What the exact part after own known cards was written from (`_update_exact`).
        self.facts_hands, self.facts_dealer = game.hands_played, game.dealer
        self.facts_over, self.facts_jokers = game.is_hand_over, game.known_jokers[observer]
        self.facts_totals = game.totals_before[:]
        self.turn, self.counter_turns = game.turn, game.turns
