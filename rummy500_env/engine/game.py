"""`Game`: a mutable position of Rummy 500, what is legal in it, and how an action moves it on.

Everything here follows docs/rules.md; comments cite its sections. Each rule is one predicate
(the "rules" section of `Game`) that both the move generator (`legal_actions`, and its parts
`draw_options` / `play_options`) and the explanation of a rejection (`why_illegal`) call, so
the two can never disagree. Applying an action dispatches on its kind, one method per kind.

Speed comes from the representation: cards are ints, a hand is a pair of bitmasks (see
`cards`) and a count of jokers, the 100 three-card meld shapes are precomputed masks (see
`melds`), and the legal set is cached per position.

Jokers and "Rummy!" calls (docs/rules.md §5) use the same predicates: a mask of held cards
carries `JOKER_BIT` when a joker is held, so "can this card go down first" covers starts with
a joker; a call is a take of the pile by another player than the one to move, checked by the
dig's predicate.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

from rummy500_env.engine import positions
from rummy500_env.engine.cards import (
    ALL_CARDS_MASK,
    JOKER,
    JOKER_BIT,
    NUM_CARDS,
    Card,
    card_str,
    cards_str,
    gather,
    mask_of,
    multiset_add,
    multiset_cards,
    multiset_of,
    multiset_remove,
)
from rummy500_env.engine.errors import (
    ActionParseError,
    IllegalActionError,
    InvalidPositionError,
)
from rummy500_env.engine.melds import (
    JOKER_START_PAIRS,
    MELD_MASKS,
    Meld,
    joker_templates_in,
    lay_off,
    meld_from_cards,
    meld_templates_in,
    natural_start,
    place_str,
    starts_a_meld,
    starts_with_a_joker,
)
from rummy500_env.engine.notation import (
    ACTION_KINDS,
    CALL_ACTIONS,
    CALL_KINDS,
    DECLINE,
    DIG_ACTIONS,
    DISCARD_TABLES,
    DONE,
    DRAW,
    DRAW_KINDS,
    JOKER_TEMPLATE_ACTIONS,
    MAX_COPIES,
    PASS,
    TAKE,
    TEMPLATE_ACTIONS,
    WILD_KINDS,
    Action,
    joker_layoff_action,
    layoff_action,
    pile_depth,
)
from rummy500_env.engine.positions import Phase, Position
from rummy500_env.engine.render import render
from rummy500_env.engine.rules import Rules
from rummy500_env.engine.scoring import HandResult, hand_result, hand_scores, table_points
from rummy500_env.engine.seat_view import SeatView

Dig = tuple[int, Card, int]
"""A legal dig (or call) in parts: (depth below the top card, the card, which copy: 1 = the
copy nearest the top; a dig counts buried copies only, a call the top card too)."""
DrawOptions = tuple[bool, bool, list[Dig], bool]
PlayOptions = tuple[list[int], list[tuple[Card, int]], int]
JokerOptions = tuple[list[tuple[int, int]], list[tuple[Card, int]]]


class Game:
    """A position of Rummy 500 and the rules that move it on (docs/rules.md).

    Mutable: `apply` changes the position in place; `copy` is cheap. Create with `Game.new`
    (a shuffled deal), `Game.from_dict` (any position as a dict) or `Game.from_position`.

    >>> g = Game.new(Rules(), seed=7)
    >>> g.phase, g.current_player, str(g.legal_actions()[0])
    ('draw', 0, 'draw')
    """

    __slots__ = (
        "_fits_memo",
        "_legal",
        "_plain",
        "_result",
        "count",
        "dealer",
        "discarder",
        "hands_played",
        "held_once",
        "held_twice",
        "jokers_held",
        "known_jokers",
        "known_once",
        "known_twice",
        "melds",
        "must_play",
        "phase",
        "pile",
        "rules",
        "seed",
        "stock",
        "taken_top",
        "totals_before",
        "turn",
        "turns",
    )

    def __init__(self, rules: Rules, seed: int) -> None:
        """An empty, undealt table: use `Game.new`, `Game.from_dict` or `Game.from_position`."""
        self.rules = rules
        self.seed = seed
        self._plain = not (rules.jokers or rules.rummy_calls)  # neither of §5's rules
        n = rules.players
        self.dealer = n - 1
        self.turn = 0
        self.phase: Phase = "draw"
        # Hands as multisets (see `cards`): `held_once` has each card held, `held_twice` each
        # card held twice (bitmasks); jokers are counted apart. Layers above the engine read
        # these slots by name (the observation encoders, the playout); `hand` lists them.
        self.held_once = [0] * n
        self.held_twice = [0] * n
        self.count = [0] * n
        self.jokers_held = [0] * n  # jokers (docs/rules.md §5): counted here, not in the masks
        self.known_once = [0] * n
        self.known_twice = [0] * n
        self.known_jokers = [0] * n
        self.stock: list[Card] = []  # internal order: the top (drawn next) is the last item
        self.pile: list[Card] = []  # bottom first, top last
        self.melds: list[Meld] = []
        self.totals_before = [0] * n
        self.taken_top: Card | None = None
        self.must_play: Card | None = None
        self.turns = 0
        self.hands_played = 0
        self.discarder: int | None = None  # whose discard opened the call window (§5)
        self._forget()

    def _forget(self) -> None:
        """Drop the caches derived from the position (after any change to it)."""
        self._legal: list[Action] | None = None
        self._fits_memo: tuple[list[Meld], int] | None = None
        self._result: HandResult | None = None  # how the hand ended, once it is over

    # --- construction ---------------------------------------------------------------------

    @classmethod
    def new(
        cls,
        rules: Any = None,
        seed: Any = None,
        deck: Sequence[Card] | None = None,
    ) -> Game:
        """A new game with the first hand dealt. The same rules and seed replay identically.

        `rules` is a `Rules`, a preset name or a dict of fields (None: standard) and `seed` an
        int or None; both typed `Any` so that a compiled build (setup.py) reaches these checks
        instead of failing in its run-time type check, as every entry point below does.

        The first dealer is the last player, so player 0 acts first (docs/rules.md §1: the
        player after the dealer leads). With ``seed=None`` a random seed is drawn and kept in
        `to_dict`, so any game can be replayed. `deck` deals these cards instead of a
        shuffle (see `next_hand`).
        """
        rules = Rules.coerce(rules)
        if seed is None:
            seed = random.SystemRandom().randrange(2**63)
        elif type(seed) is not int:
            raise TypeError(f"seed must be an int or None, not {seed!r}")
        g = cls(rules, seed)
        g._deal(deck)
        return g

    @classmethod
    def from_dict(cls, position: Any) -> Game:
        """Set up any position; raises `InvalidPositionError` listing every problem found."""
        return cls._build(positions.from_dict(position))

    @classmethod
    def from_position(cls, position: Position) -> Game:
        """Set up a position given in engine terms, after checking it as `from_dict` does
        (`InvalidPositionError` lists every problem). Bots that sample hidden cards build
        their worlds this way."""
        return cls._build(positions.check(position))

    @classmethod
    def _build(cls, p: Position) -> Game:
        g = cls(p.rules, p.seed)
        for q, hand in enumerate(p.hands):
            naturals = [c for c in hand if c != JOKER]
            g.held_once[q], g.held_twice[q] = multiset_of(naturals)
            g.jokers_held[q] = len(hand) - len(naturals)
            g.count[q] = len(hand)
            known = p.known_cards(q)
            naturals = [c for c in known if c != JOKER]
            g.known_once[q], g.known_twice[q] = multiset_of(naturals)
            g.known_jokers[q] = len(known) - len(naturals)
        g.stock = list(p.stock[::-1])
        g.pile = list(p.pile)
        g.melds = list(p.melds)
        g.dealer, g.turn, g.phase = p.dealer, p.turn, p.phase
        g.totals_before = p.totals_before()
        g.taken_top, g.must_play = p.taken_top, p.must_play
        g.turns, g.hands_played, g.discarder = p.turns, p.hands_played, p.discarder
        return g

    def position(self) -> Position:
        """The position in engine terms (see `positions.Position`)."""
        n = self.rules.players
        return Position(
            rules=self.rules,
            hands=tuple(tuple(self.hand(q)) for q in range(n)),
            stock=tuple(self.stock[::-1]),
            pile=tuple(self.pile),
            melds=tuple(self.melds),
            known=tuple(tuple(self.known(q)) for q in range(n)),
            dealer=self.dealer,
            turn=self.turn,
            phase=self.phase,
            totals=tuple(self.totals_before),
            taken_top=self.taken_top,
            must_play=self.must_play,
            turns=self.turns,
            hands_played=self.hands_played,
            seed=self.seed,
            discarder=self.discarder,
        )

    def seat_view(self, seat: Any) -> SeatView:
        """What `seat` knows of this position: the engine's information state (see
        `seat_view.SeatView`). Nothing hidden from that seat enters it."""
        n = self.rules.players
        if type(seat) is not int or not 0 <= seat < n:
            raise ValueError(f"seat must be a player 0..{n - 1}, got {seat!r}")
        return SeatView(
            rules=self.rules,
            seat=seat,
            dealer=self.dealer,
            turn=self.turn,
            phase=self.phase,
            hand=tuple(self.hand(seat)),
            pile=tuple(self.pile),
            melds=tuple(self.melds),
            known=tuple(tuple(self.known(q)) for q in range(n)),
            hand_sizes=tuple(self.count),
            stock_size=len(self.stock),
            totals=tuple(self.totals_before),
            taken_top=self.taken_top,
            must_play=self.must_play,
            discarder=self.discarder,
            turns=self.turns,
            hands_played=self.hands_played,
            result=self.result() if self.is_hand_over else None,
        )

    @classmethod
    def from_seat_view(
        cls,
        view: SeatView,
        seed: int | random.Random,
        check: bool = True,
    ) -> Game:
        """A playable game that `view`'s seat cannot tell from the real one: the hidden cards
        dealt again at random (`SeatView.sample_position`), seeded by `seed` (an int, or a
        `random.Random` to draw from). With `check`, the view's shape is checked before
        sampling (`SeatView.problems`: seats, card ids, one entry per player) and the position
        dealt passes every check `from_dict` makes; either way `InvalidPositionError` lists
        the problems. Search over views the engine made may skip it."""
        if check:
            problems = view.problems()
            if problems:
                raise InvalidPositionError(problems)
        rng = seed if isinstance(seed, random.Random) else random.Random(seed)
        position = view.sample_position(rng)
        return cls._build(positions.check(position) if check else position)

    def to_dict(self) -> dict[str, Any]:
        """The position as a JSON-compatible dict (docs/rules.md §7); `from_dict` restores it."""
        return positions.to_dict(self.position())

    def copy(self) -> Game:
        """An independent copy of this position: every list is copied, everything else is
        immutable (ints, tuples, `Meld`s, `Rules`) and shared."""
        g = Game(self.rules, self.seed)  # compiled (setup.py), a class needs its constructor
        g.dealer, g.turn, g.phase, g.discarder = self.dealer, self.turn, self.phase, self.discarder
        g.held_once, g.held_twice, g.count, g.jokers_held = (
            self.held_once[:],
            self.held_twice[:],
            self.count[:],
            self.jokers_held[:],
        )
        g.known_once, g.known_twice = self.known_once[:], self.known_twice[:]
        g.known_jokers, g.totals_before = self.known_jokers[:], self.totals_before[:]
        g.stock, g.pile, g.melds = self.stock[:], self.pile[:], self.melds[:]
        g.taken_top, g.must_play = self.taken_top, self.must_play
        g.turns, g.hands_played = self.turns, self.hands_played
        g._legal = None if self._legal is None else self._legal[:]
        g._fits_memo, g._result = self._fits_memo, self._result
        return g

    def __copy__(self) -> Game:
        """``copy.copy(game)`` is `copy`: a shallow copy would share the lists a move changes."""
        return self.copy()

    def __reduce__(self) -> tuple[Callable[..., Game], tuple[Rules, int, dict[str, Any]]]:
        """Pickled by its fields: a compiled `Game` (setup.py) has no ``__dict__``, and its
        class makes no instance without its constructor."""
        return _unpickle, (self.rules, self.seed, {f: getattr(self, f) for f in _FIELDS})

    def _deal(self, order: Sequence[Card] | None = None) -> None:
        """Shuffle and deal a hand (docs/rules.md §1 "Cards and deal"); the deal is seeded by
        the game seed and the hand number, so `next_hand` after `from_dict` replays too.
        `order` (the whole deck, checked) replaces the shuffle."""
        r, n = self.rules, self.rules.players
        deck = [*range(NUM_CARDS), *[JOKER] * r.jokers] * r.deck_count
        if order is None:
            random.Random(f"rummy500/{self.seed}/{self.hands_played}").shuffle(deck)
        elif sorted(order) != sorted(deck):
            raise InvalidPositionError(
                [f"deck must hold each of the {len(deck)} cards in play once, got {len(order)}"]
            )
        else:
            deck = list(order)
        size = r.cards_per_hand
        for p in range(n):
            self.held_once[p] = self.held_twice[p] = self.known_once[p] = self.known_twice[p] = 0
            self.jokers_held[p] = self.known_jokers[p] = 0
            self.count[p] = size
        for i in range(size * n):
            p, c = (self.dealer + 1 + i) % n, deck[i]
            if c == JOKER:
                self.jokers_held[p] += 1
            else:
                self.held_once[p], self.held_twice[p] = multiset_add(
                    self.held_once[p], self.held_twice[p], c
                )
        self.pile = [deck[size * n]]
        self.stock = deck[size * n + 1 :][::-1]
        self.melds = []
        self.turn = (self.dealer + 1) % n
        self.phase = "draw"
        self.taken_top = self.must_play = self.discarder = None
        self.turns = 0
        self._forget()
        self._start_turn()

    def next_hand(self, deck: Sequence[Card] | None = None) -> None:
        """Deal the next hand after a hand is over: totals carry on, the dealer rotates.

        `deck` deals these cards instead of the seeded shuffle: the whole deck in dealing
        order (one card at a time round the table from the dealer's left, then the pile's
        first card, then the stock from its top). For drivers whose chance nodes pick the
        cards (OpenSpiel's explicit chance nodes, `rummy500_env.rl.openspiel`);
        `InvalidPositionError` if it is not the deck in play.
        """
        if self.phase != "hand_over":
            raise IllegalActionError(
                f"next_hand() is only allowed when the hand is over; phase is {self.phase!r}"
                + (" (the game is over)" if self.phase == "game_over" else "")
            )
        self.totals_before = self.totals
        self.dealer = (self.dealer + 1) % self.rules.players
        self._deal(deck)

    def set_next_draw(self, card: Card) -> None:
        """Put a copy of `card` from the stock on its top, so that the next draw takes it.

        The stock's order is hidden from every seat (docs/rules.md §1), so this changes
        nothing any seat knows; it lets a driver whose chance nodes pick the card drawn
        (OpenSpiel's explicit chance nodes) play this engine. `IllegalActionError` when the
        stock holds no such card.
        """
        s = self.stock  # the top is the last item
        if card not in s:
            raise IllegalActionError(
                f"the stock holds no {card_str(card)} ({len(s)} cards), so it cannot be drawn"
            )
        i = s.index(card)
        s[i], s[-1] = s[-1], s[i]

    # --- reading the position ----------------------------------------------------------------

    @property
    def current_player(self) -> int:
        """The player to act. After a hand ends: the player who acted last, or, when the hand
        ended as a turn began (§2 `ends_hand` with an empty stock, §1 an empty stock and pile,
        §4 `turn_limit`), the player whose turn it would have been."""
        return self.turn

    @property
    def players(self) -> int:
        """Number of players."""
        return self.rules.players

    def hand(self, player: int) -> list[Card]:
        """A player's cards, ascending (a card held twice appears twice; jokers, id 52, last)."""
        cards = multiset_cards(self.held_once[player], self.held_twice[player])
        if self.jokers_held[player]:
            cards += [JOKER] * self.jokers_held[player]
        return cards

    def known(self, player: int) -> list[Card]:
        """Cards a player is known to hold: taken from the pile in view and not played since."""
        cards = multiset_cards(self.known_once[player], self.known_twice[player])
        if self.known_jokers[player]:
            cards += [JOKER] * self.known_jokers[player]
        return cards

    def _held(self, player: int) -> int:
        """The mask of a player's natural cards, with `JOKER_BIT` if they hold a joker."""
        return (
            self.held_once[player] | JOKER_BIT
            if self.jokers_held[player]
            else self.held_once[player]
        )

    @property
    def stock_cards(self) -> list[Card]:
        """The stock, top (next drawn) first."""
        return self.stock[::-1]

    def hand_scores(self) -> list[int]:
        """Per player: table value of the cards they put down − value of their hand
        (docs/rules.md §1 scoring), read from the table as it is now; final once the hand is
        over."""
        if self.is_hand_over:
            return list(self.result().scores)
        n = self.rules.players
        return hand_scores(self.rules, self.melds, [self.hand(p) for p in range(n)])

    def table_points(self) -> list[int]:
        """Per player: the value of the cards they have on the table now."""
        return table_points(self.rules, self.melds)

    def result(self) -> HandResult:
        """How the hand ended (scores, who went out, totals, winner): the engine's one
        end-of-hand result. Only once the hand is over (`IllegalActionError` before)."""
        if self._result is None:
            if not self.is_hand_over:
                raise IllegalActionError(
                    f"the hand is not over (phase {self.phase!r}): there is no result yet"
                )
            n = self.rules.players
            self._result = hand_result(
                self.rules,
                self.melds,
                [self.hand(p) for p in range(n)],
                self.totals_before,
                self.hands_played,
            )
        return self._result

    @property
    def totals(self) -> list[int]:
        """Running totals; once the hand is over they include its scores."""
        if self.is_hand_over:
            return list(self.result().totals)
        return self.totals_before[:]

    @property
    def went_out(self) -> int | None:
        """The player whose hand is empty (who went out), if any."""
        return next((p for p in range(self.rules.players) if self.count[p] == 0), None)

    @property
    def winner(self) -> int | None:
        """The winner once the game is over (None before, and for a draw at `hand_limit`)."""
        return self.result().winner if self.phase == "game_over" else None

    @property
    def is_hand_over(self) -> bool:
        """True once the hand has ended (phase hand_over or game_over)."""
        return self.phase in ("hand_over", "game_over")

    @property
    def truncated(self) -> bool:
        """True when the game ended by `hand_limit` rather than by the target (§4)."""
        return self.phase == "game_over" and self.result().truncated

    @property
    def top_take_obligated(self) -> bool:
        """Taking the top card carries the dig obligation now (docs/rules.md §2
        `top_card_must_meld`, and `pile_must_use` once the stock is empty)."""
        r = self.rules
        return r.top_card_must_meld or (not self.stock and r.stock_out == "pile_must_use")

    # --- the rules: each one predicate, used by the generator and by `why_illegal` ------------

    def _leaves_a_card(self, size: int, played: int) -> bool:
        """Putting `played` cards down from a hand of `size` leaves one to discard, or need
        not (§2 `discard_to_go_out`: the last card must be a discard)."""
        return not self.rules.discard_to_go_out or size > played

    def _can_put_down(self, card: Card, held: int, size: int) -> bool:
        """`card` can be the first thing put down from a hand holding the cards of the mask
        `held` (`size` cards in all), in a new meld or laid off on a table meld, leaving a
        card to discard where that is required (§3, the first two items). With jokers (§5)
        the meld is a three-card start with at most one joker (`held` carries `JOKER_BIT`
        when a joker is held), and a joker goes down in a start with two natural cards or
        laid off on any meld that takes a card."""
        if (
            starts_a_meld(card, held) or (held > ALL_CARDS_MASK and starts_with_a_joker(card, held))
        ) and self._leaves_a_card(size, 3):
            return True
        return self._table_fits() >> card & 1 == 1 and self._leaves_a_card(size, 1)

    def _may_take_top(self) -> bool:
        """The top card may be taken: always, unless the take carries the dig obligation and
        the card could not go down at once (§1 draw, §2 `top_card_must_meld`, `pile_must_use`)."""
        if not self.top_take_obligated:
            return True
        top, p = self.pile[-1], self.turn
        return self._can_put_down(top, self._held(p) | 1 << top, self.count[p] + 1)

    def _owed(self) -> int:
        """The mask of cards of which every meld must hold one and every lay-off must be:
        the buried (or called) card while an obligation is open (§1 dig, §3, §5), else every
        card. An owed joker is `JOKER_BIT`, which no natural meld or lay-off holds."""
        b = self.must_play
        return ALL_CARDS_MASK if b is None else 1 << b

    def _may_take_down_to(self, player: int, depth: int) -> bool:
        """`player` may take the pile down to the card `depth` below the top (a dig, or a
        call with depth 0 the top card): that card can be put down once it and every card
        above it join the hand (§1 dig, §5 calls)."""
        taken = self.pile[-1 - depth :]
        held = self._held(player)
        for c in taken:
            held |= 1 << c
        return self._can_put_down(taken[0], held, self.count[player] + len(taken))

    def _discardable(self) -> int:
        """The mask of the cards that may be discarded now (§1 turn, §3): none while a dig
        obligation is open, nor in a caller's out-of-turn play (§5); not the card taken from
        the top, unless it is the last card, or, with two decks, only its copies are left (our
        clarification: otherwise a player holding both copies would have no legal action);
        after a joker was taken from the top, no joker unless the hand holds only jokers."""
        if self.must_play is not None:
            return 0
        p, tt = self.turn, self.taken_top
        held = self.held_once[p]
        if not self._plain:  # jokers or calls (§5); a flag: the standard game asks often
            if self.phase == "called":
                return 0
            if self.jokers_held[p]:
                held |= JOKER_BIT
        if tt is not None and held != 1 << tt:
            held &= ~(1 << tt)
        return held

    def _table_fits(self) -> int:
        """Mask of the cards that some table meld takes (memoised while the melds stay), with
        `JOKER_BIT` when any meld takes a card: a joker can stand for any of them (§5)."""
        memo = self._fits_memo
        if memo is not None and memo[0] == self.melds:
            return memo[1]
        fits = 0
        for m in self.melds:
            for c in m.fits:
                fits |= 1 << c
        if fits:
            fits |= JOKER_BIT
        self._fits_memo = (self.melds[:], fits)
        return fits

    def _has_call(self, player: int) -> bool:
        """`player` could call some pile card now (§5: as if digging it, the top included)."""
        return bool(self._pile_takes(player, 0))

    # --- legal actions ------------------------------------------------------------------------

    def legal_actions(self) -> list[Action]:
        """Every legal action now, in a fixed order (draw, take, digs from the top down,
        decline; or melds, starts with a joker, lay-offs, joker lay-offs, discards, done; or,
        in a call window, calls from the top down, pass). Melds are listed in their
        three-card form: a longer meld is the same as a three-card meld followed by lay-offs,
        and `apply` accepts it too. Empty once the hand is over.
        """
        if self._legal is None:
            if self.phase == "draw":
                self._legal = self._legal_draw()
            elif self.phase == "play" or self.phase == "called":
                self._legal = self._legal_play()
            elif self.phase == "call":
                self._legal = [CALL_ACTIONS[c][k - 1] for _, c, k in self.call_options()]
                self._legal.append(PASS)
            else:
                self._legal = []
        return list(self._legal)

    def is_legal(self, action: Any) -> bool:
        """Whether an action (or its text) is legal now."""
        try:
            a = action if isinstance(action, Action) else Action.parse(action)
        except ActionParseError:
            return False
        return self.why_illegal(a) is None

    def _legal_draw(self) -> list[Action]:
        draw, take, digs, decline = self.draw_options()
        acts = [DRAW] if draw else []
        if take:
            acts.append(TAKE)
        acts += [DIG_ACTIONS[c][k - 1] for _, c, k in digs]
        if decline:
            acts.append(DECLINE)
        return acts

    def _legal_play(self) -> list[Action]:
        templates, layoffs, discards = self.play_options()
        acts = [TEMPLATE_ACTIONS[t] for t in templates]
        if self._plain:  # neither jokers nor calls: the standard game's path
            acts += [layoff_action(c, i) for c, i in layoffs]
            return acts + gather(discards, DISCARD_TABLES)
        starts, wild = self.joker_options()
        acts += [JOKER_TEMPLATE_ACTIONS[s] for s in starts]
        acts += [layoff_action(c, i) for c, i in layoffs]
        acts += [joker_layoff_action(c, i) for c, i in wild]
        acts += gather(discards, DISCARD_TABLES)
        if self.done_allowed:
            acts.append(DONE)
        return acts

    def draw_options(self) -> DrawOptions:
        """The legal actions of the draw phase, in parts: (draw from the stock, take the top
        card, the digs as (depth below the top, card, copy) from the top down, decline).

        `legal_actions` is built from these parts; the RL layer reads them directly, which
        skips building `Action` objects (an env asks at every step).
        """
        stock, pile = self.stock, self.pile
        take, digs = False, []
        if pile:
            take = self._may_take_top()
            if len(pile) > 1:
                digs = self._pile_takes(self.turn, 1)
        # §1: with the stock empty a player may take nothing (decline).
        return bool(stock), take, digs, not stock

    def call_options(self) -> list[Dig]:
        """The legal calls of the player asked in a call window, from the top down, as
        (depth below the top, card, copy counted from the top card); `pass` is always legal
        there too (§5)."""
        return self._pile_takes(self.turn, 0) if self.phase == "call" else []

    def _pile_takes(self, p: int, first: int) -> list[Dig]:
        """The pile cards from depth `first` down that player `p` may take the pile down to
        (`_may_take_down_to` at every depth, computed in one scan: the mask of held cards
        grows as it goes deeper; `size` counts the copies). Digs start below the top (1),
        calls at the top (0)."""
        pile, held, size = self.pile, self.held_once[p], self.count[p]
        if not self._plain and self.jokers_held[p]:  # `_held` inlined: asked often
            held |= JOKER_BIT
        if first:  # the top card joins the hand too, but is not dug (§1 dig)
            held |= 1 << pile[-1]
            size += 1
        takes = []
        seen: dict[Card, int] = {}
        depth = first - 1
        for i in range(len(pile) - 1 - first, -1, -1):
            c = pile[i]
            held |= 1 << c
            size += 1
            depth += 1
            k = seen[c] = seen.get(c, 0) + 1
            if self._can_put_down(c, held, size):
                takes.append((depth, c, k))
        return takes

    def play_options(self) -> PlayOptions:
        """The legal actions of the play phase (and of a caller's play), in parts: (three-card
        melds of natural cards as template indices, lay-offs of natural cards as (card, meld
        index), the mask of the cards that may be discarded, `JOKER_BIT` for a joker). See
        `draw_options`; the joker's melds and lay-offs are `joker_options`."""
        p = self.turn
        held, size, owed = self.held_once[p], self.count[p], self._owed()
        templates: list[int] = []
        if self._leaves_a_card(size, 3):
            templates = meld_templates_in(held)
            if owed != ALL_CARDS_MASK:
                templates = [t for t in templates if MELD_MASKS[t] & owed]
        layoffs: list[tuple[Card, int]] = []
        may_lay = held & owed & self._table_fits()
        if may_lay and self._leaves_a_card(size, 1):
            for i, m in enumerate(self.melds):
                for c in m.fits:
                    if may_lay >> c & 1:
                        layoffs.append((c, i))
        return templates, layoffs, self._discardable()

    def joker_options(self) -> JokerOptions:
        """The legal plays of a joker (§5), in parts: three-card starts with one joker as
        (template index, the joker's place 0..2), and joker lay-offs as (the card it stands
        for, meld index). Under an obligation a start must hold the owed natural card as a
        natural one, and an owed joker is met by any joker going down."""
        p = self.turn
        if not self.jokers_held[p]:
            return [], []
        b, size = self.must_play, self.count[p]
        starts: list[tuple[int, int]] = []
        if self._leaves_a_card(size, 3):
            starts = joker_templates_in(self.held_once[p])
            if b is not None and b != JOKER:
                starts = [(t, k) for t, k in starts if JOKER_START_PAIRS[3 * t + k][2] >> b & 1]
        layoffs: list[tuple[Card, int]] = []
        if b in (None, JOKER) and self._leaves_a_card(size, 1):
            layoffs = [(c, i) for i, m in enumerate(self.melds) for c in m.fits]
        return starts, layoffs

    @property
    def done_allowed(self) -> bool:
        """A caller may end the out-of-turn play: the called card is down (§5)."""
        return self.phase == "called" and self.must_play is None

    # --- why an action is illegal --------------------------------------------------------------

    def why_illegal(self, action: Action) -> str | None:
        """Why an action is illegal now, naming the rule, or None if it is legal."""
        if self.is_hand_over:
            if self.phase == "game_over":
                return "the game is over"
            return "the hand is over; call next_hand() to deal the next one"
        kind = action.kind
        if kind not in ACTION_KINDS:
            return f"unknown action kind {kind!r}; kinds are {', '.join(ACTION_KINDS)}"
        if not action.has_card_ids():
            return f"cards must be ids 0..52 (52 the joker), got {action.cards!r}"
        if not self._plain or action.jokers or JOKER in action.cards or kind in WILD_KINDS:
            return self._why_illegal_wild(action)  # jokers or calls (§5)
        if self.phase == "draw":
            if kind not in DRAW_KINDS:
                return "you must draw first: draw, take or dig (docs/rules.md §1, a turn)"
            return self._why_illegal_draw(action)
        if kind in DRAW_KINDS:
            return "you have already drawn this turn; meld, lay off or discard"
        return self._why_illegal_play(action)

    def _why_illegal_wild(self, a: Action) -> str | None:
        """`why_illegal` for an action or rules with jokers or calls (docs/rules.md §5)."""
        why = self._why_not_in_these_rules(a)
        if why is not None:
            return why
        phase, kind = self.phase, a.kind
        if phase == "draw":
            if kind not in DRAW_KINDS:
                return "you must draw first: draw, take or dig (docs/rules.md §1, a turn)"
            return self._why_illegal_draw(a)
        if phase == "call":
            if kind == "pass":
                return None
            if kind != "call":
                return (
                    f"a call window is open after player {self.discarder}'s discard: call a "
                    "pile card (call 9D) or pass (docs/rules.md §5)"
                )
            return self._why_illegal_call(a)
        called = phase == "called"
        if kind in DRAW_KINDS or kind in CALL_KINDS:
            if called:
                return "you called: meld, lay off, then done (docs/rules.md §5)"
            return "you have already drawn this turn; meld, lay off or discard"
        if kind == "done":
            return self._why_illegal_done()
        if kind == "discard" and called:
            return (
                "a caller plays out of turn and ends with done, never a discard (docs/rules.md §5)"
            )
        return self._why_illegal_play(a)

    def _why_not_in_these_rules(self, a: Action) -> str | None:
        """A joker or a call under rules without them, or a joker written wrongly."""
        cards, r = a.cards, self.rules
        if a.jokers or JOKER in cards:
            if not r.jokers:
                return "there are no jokers in this game (jokers=0; docs/rules.md §5)"
            if a.kind in ("meld", "layoff") and (JOKER in cards or a.jokers & ~mask_of(cards)):
                return (
                    "a joker in a meld or a lay-off is listed as the card it stands for and "
                    "marked in `jokers` (notation: JK=9D, docs/rules.md §5)"
                )
        if not r.rummy_calls and (a.kind in CALL_KINDS or a.kind == "done"):
            return f"there are no Rummy! calls in this game (rummy_calls=False), so no {a.kind}"
        return None

    def _why_illegal_draw(self, a: Action) -> str | None:
        k, pile = a.kind, self.pile
        if k == "draw":
            return None if self.stock else "the stock is empty: take from the pile or decline"
        if k == "decline":
            return None if not self.stock else "decline is only allowed once the stock is empty"
        if not pile:
            return "the discard pile is empty"
        if k == "take":
            if self._may_take_top():
                return None
            why = "top_card_must_meld" if self.rules.top_card_must_meld else "pile_must_use"
            return (
                f"taking the top card carries the dig obligation ({why}, docs/rules.md §2) "
                f"and {card_str(pile[-1])} could not go on the table at once"
                f"{self._discard_to_go_out_note()}"
            )
        if len(a.cards) != 1 or not 1 <= a.copy <= MAX_COPIES[a.cards[0] == JOKER]:
            return "a dig names one buried card, e.g. 'dig 9D' or 'dig 9D#2'"
        c = a.cards[0]
        depth = pile_depth(self.pile, a)
        if depth is None:
            where = "the top card (use 'take')" if pile[-1] == c else "not buried in the pile"
            copy = f"#{a.copy}" if a.copy != 1 else ""
            return f"{card_str(c)}{copy} is {where}; pile: {cards_str(pile)}"
        if self._may_take_down_to(self.turn, depth):
            return None
        return (
            f"a dig is legal only if the buried card can go on the table at once "
            f"(docs/rules.md §1 dig, §3): {card_str(c)} fits no new meld with your cards and "
            f"the {depth + 1} taken, and no meld on the table{self._discard_to_go_out_note()}"
        )

    def _why_illegal_call(self, a: Action) -> str | None:
        if len(a.cards) != 1 or not 1 <= a.copy <= MAX_COPIES[a.cards[0] == JOKER]:
            return "a call names one pile card, e.g. 'call 9D' or 'call 9D#2'"
        c = a.cards[0]
        depth = pile_depth(self.pile, a)
        if depth is None:
            copy = f"#{a.copy}" if a.copy != 1 else ""
            return f"{card_str(c)}{copy} is not in the pile; pile: {cards_str(self.pile)}"
        if self._may_take_down_to(self.turn, depth):
            return None
        return (
            f"a call is legal only if the called card can go on the table at once, as a dig "
            f"(docs/rules.md §5, §3): {card_str(c)} fits no new meld with your cards and the "
            f"{depth + 1} taken, and no meld on the table{self._discard_to_go_out_note()}"
        )

    def _why_illegal_done(self) -> str | None:
        if self.phase != "called":
            return (
                "done ends only a caller's out-of-turn play (docs/rules.md §5); end your turn "
                "with a discard"
            )
        if self.must_play is not None:
            return (
                f"the called card {card_str(self.must_play)} must go on the table before done "
                "(docs/rules.md §5)"
            )
        return None

    def _discard_to_go_out_note(self) -> str:
        return " without emptying the hand (discard_to_go_out)" * self.rules.discard_to_go_out

    def _why_illegal_play(self, a: Action) -> str | None:
        p = self.turn
        need_one = need_two = 0
        for c in a.cards:
            if need_one >> c & 1:
                need_two |= 1 << c
            need_one |= 1 << c
        if not self._plain:  # the natural cards: not those jokers stand for, nor the joker
            natural = ALL_CARDS_MASK & ~a.jokers
            need_one, need_two = need_one & natural, need_two & natural
        jokers = 0 if self._plain else a.joker_count()
        if (
            need_one & ~self.held_once[p]
            or need_two & ~self.held_twice[p]
            or jokers > self.jokers_held[p]
        ):
            held = cards_str(a.cards) if not a.jokers else _places(a)
            return f"you do not hold {held}; your hand: {cards_str(self.hand(p))}"
        if a.kind == "discard":
            return self._why_illegal_discard(a)
        if a.kind == "meld":
            return self._why_illegal_meld(a)
        return self._why_illegal_layoff(a)

    def _why_illegal_discard(self, a: Action) -> str | None:
        if len(a.cards) != 1:
            return "discard exactly one card"
        c = a.cards[0]
        if self._discardable() >> c & 1:
            return None
        if self.must_play is not None:
            return (
                f"discarding is blocked until {card_str(self.must_play)} is on the table "
                "(docs/rules.md §1 dig obligation)"
            )
        if c == JOKER:
            return (
                "a joker was taken from the top of the pile this turn, so no joker may be "
                "discarded unless the hand holds nothing but jokers (docs/rules.md §5)"
            )
        return (
            f"{card_str(c)} was taken from the top of the pile this turn and may not be "
            "discarded unless it is your last card (docs/rules.md §1, §3)"
        )

    def _why_illegal_meld(self, a: Action) -> str | None:
        m = meld_from_cards(a.cards, (self.turn,) * len(a.cards), a.jokers)
        if m is None:
            text = cards_str(a.cards) if not a.jokers else _places(a)
            if a.jokers:
                return (
                    f"{text} is not a meld: a joker stands for a card its meld could take at "
                    "that place (a suit missing from a set, never a fifth card; the next rank "
                    "of a run or a gap in a new one) (docs/rules.md §5)"
                )
            return (
                f"{text} is not a meld: a set is 3-4 cards of one rank in "
                "different suits, a run 3+ consecutive cards of one suit, listed low to "
                "high (docs/rules.md §1 melds)"
            )
        if not natural_start(m):
            return (
                f"{m} has no three-card start with two natural cards: a meld starts as three "
                "cards with at most one joker and grows by lay-offs (docs/rules.md §5)"
            )
        b = self.must_play
        if b is not None and not natural_start(m, b):
            owed = "a joker" if b == JOKER else card_str(b)
            return (
                f"the dig obligation is open: every meld must include {owed} in a three-card "
                "start (a joker standing for a card does not meet an owed natural one; "
                "docs/rules.md §1 dig, §5)"
            )
        if not self._leaves_a_card(self.count[self.turn], len(a.cards)):
            return "discard_to_go_out: you must keep a card to discard, so this meld is illegal"
        return None

    def _why_illegal_layoff(self, a: Action) -> str | None:
        if len(a.cards) != 1:
            return "lay off exactly one card"
        c, melds = a.cards[0], self.melds
        if not 0 <= a.target < len(melds):
            return f"there is no meld #{a.target}; melds are numbered 0..{len(melds) - 1}"
        m = melds[a.target]
        if c not in m.fits:
            fits = cards_str(m.fits) or "nothing"
            what = f"JK={card_str(c)}" if a.jokers else card_str(c)
            return f"{what} does not fit meld #{a.target} ({m}); it takes {fits}"
        b = self.must_play
        if b is not None and b != (JOKER if a.jokers else c):
            owed = "a joker" if b == JOKER else card_str(b)
            return f"the dig obligation is open: lay off {owed} first"
        if not self._leaves_a_card(self.count[self.turn], 1):
            return "discard_to_go_out: you must keep a card to discard, so this lay-off is illegal"
        return None

    # --- applying actions ---------------------------------------------------------------------

    def apply(self, action: Any) -> None:
        """Play one action (an `Action` or its text) for the player to act.

        Raises `ActionParseError` for text that is not an action and `IllegalActionError`,
        naming the rule, for an action the rules forbid now; the position is then unchanged.
        """
        a = action if isinstance(action, Action) else Action.parse(action)
        legal = self._legal if self._legal is not None else self.legal_actions()
        if a not in legal:  # a list: an action taken from it is found by identity at once
            why = self.why_illegal(a)
            if why is not None:
                raise IllegalActionError(f"{a} is illegal: {why} [{self._brief()}]")
        self.play_unchecked(a)

    def play_unchecked(self, action: Action) -> None:
        """Play an action already known to be legal, without checking it again: the fast path
        for callers that took it from `legal_actions` or a mask built from it (the env, search
        rollouts). Anything else goes through `apply`; an illegal action here corrupts the
        position."""
        self._legal = None
        _APPLY[action.kind](self, action)

    def _apply_draw(self, a: Action) -> None:
        p, c = self.turn, self.stock.pop()
        if c == JOKER:
            self.jokers_held[p] += 1
        else:
            self.held_once[p], self.held_twice[p] = multiset_add(
                self.held_once[p], self.held_twice[p], c
            )
        self.count[p] += 1
        self.phase = "play"

    def _apply_take(self, a: Action) -> None:
        obligated = self.top_take_obligated
        c = self.pile.pop()
        self._take([c])
        self.taken_top = c
        if obligated:
            self.must_play = c
        self.phase = "play"

    def _apply_dig(self, a: Action) -> None:
        self._take_down_to(a, 1)
        self.phase = "play"

    def _apply_call(self, a: Action) -> None:
        self._take_down_to(a, 0)
        self.phase = "called"  # §5: the caller plays out of turn, then `done`

    def _take_down_to(self, a: Action, first: int) -> None:
        """Take the pile down to the card a dig (`first` 1) or a call (`first` 0) names; that
        card is owed to the table (§1 dig, §5)."""
        depth = pile_depth(self.pile, a)
        assert depth is not None, "play_unchecked was given a take of a card not in the pile"
        i = len(self.pile) - 1 - depth
        taken = self.pile[i:]
        del self.pile[i:]
        self._take(taken)
        self.must_play = a.cards[0]

    def _apply_decline(self, a: Action) -> None:
        self._end_hand()  # §1: the stock is empty and the player takes nothing

    def _apply_meld(self, a: Action) -> None:
        p = self.turn
        for c in a.naturals() if a.jokers else a.cards:
            self._remove(p, c)
        for _ in range(a.jokers.bit_count()):
            self._remove(p, JOKER)
        m = meld_from_cards(a.cards, (p,) * len(a.cards), a.jokers)
        assert m is not None, "play_unchecked was given a meld that is no meld"
        self.melds.append(m)
        self._put_down()

    def _apply_layoff(self, a: Action) -> None:
        p, c = self.turn, a.cards[0]
        self._remove(p, JOKER if a.jokers else c)
        self.melds[a.target] = lay_off(self.melds[a.target], c, p, a.jokers != 0)
        self._put_down()

    def _put_down(self) -> None:
        """After a legal meld or lay-off: an open obligation is met (while one is open, every
        legal meld or lay-off puts the owed card down, §1 dig, §5); an empty hand goes out, no
        discard needed (§1)."""
        self.must_play = None
        if self.count[self.turn] == 0:
            self._end_hand()

    def _apply_discard(self, a: Action) -> None:
        p, c = self.turn, a.cards[0]
        self._remove(p, c)
        self.pile.append(c)
        self.taken_top = None
        if self.count[p] == 0:  # discarding the last card goes out (§1)
            self._end_hand()
        else:
            self._next_turn()

    def _apply_pass(self, a: Action) -> None:
        assert self.discarder is not None, "pass outside a call window"
        self._ask_callers(self.discarder, self.turn)

    def _apply_done(self, a: Action) -> None:
        """§5: play resumes with the normal turn of the discarder's left neighbour."""
        assert self.discarder is not None, "done outside a caller's play"
        self._resume(self.discarder)

    def _take(self, cards: list[Card]) -> None:
        """Cards taken from the pile join the hand, in everyone's view (§1)."""
        p = self.turn
        one, two, k1, k2 = (
            self.held_once[p],
            self.held_twice[p],
            self.known_once[p],
            self.known_twice[p],
        )
        for c in cards:
            if c == JOKER:
                self.jokers_held[p] += 1
                self.known_jokers[p] += 1
            else:
                one, two = multiset_add(one, two, c)
                k1, k2 = multiset_add(k1, k2, c)
        self.held_once[p], self.held_twice[p], self.known_once[p], self.known_twice[p] = (
            one,
            two,
            k1,
            k2,
        )
        self.count[p] += len(cards)

    def _remove(self, p: int, c: Card) -> None:
        """Take one copy of `c` out of a hand, in view of the table. A known copy of it stops
        being known: the table cannot tell which copy was played, so whether another is still
        held must not show (it would tell the others of a hidden card)."""
        self.count[p] -= 1
        if c == JOKER:
            self.jokers_held[p] -= 1
            self.known_jokers[p] = max(self.known_jokers[p] - 1, 0)
            return
        self.held_once[p], self.held_twice[p] = multiset_remove(
            self.held_once[p], self.held_twice[p], c
        )
        if self.known_once[p] & (1 << c):
            self.known_once[p], self.known_twice[p] = multiset_remove(
                self.known_once[p], self.known_twice[p], c
            )

    def _next_turn(self) -> None:
        """After a discard that leaves cards in hand: the turn is complete (§4 counts it);
        with calls (§5), the window opens unless the hand has ended."""
        self.turns += 1
        discarder = self.turn
        self.turn = (discarder + 1) % self.rules.players
        self.phase = "draw"
        self.must_play = None
        limit = self.rules.turn_limit
        if limit is not None and self.turns >= limit:
            # §4: the hand ends as if the stock were empty and the player declined.
            self._end_hand()
            return
        self._start_turn()
        if self.rules.rummy_calls and self.phase == "draw":
            self._ask_callers(discarder, discarder)

    def _ask_callers(self, discarder: int, asked: int) -> None:
        """The call window (§5): ask the first player after `asked`, in seat order from the
        discarder's left, who has a legal call (the others are not asked); when none is left
        the window closes and the discarder's left neighbour draws."""
        n = self.rules.players
        q = (asked + 1) % n
        while q != discarder:
            if self._has_call(q):
                self.turn, self.phase, self.discarder = q, "call", discarder
                return
            q = (q + 1) % n
        self._resume(discarder)

    def _resume(self, discarder: int) -> None:
        """Close a call window: the discarder's left neighbour takes the normal turn (§5)."""
        self.turn = (discarder + 1) % self.rules.players
        self.phase = "draw"
        self.discarder = None
        self._start_turn()

    def _start_turn(self) -> None:
        """End the hand when the turn cannot begin: an empty stock under `ends_hand` (§2), or
        an empty stock and an empty pile (§1; only a call can empty the pile)."""
        if not self.stock and (self.rules.stock_out == "ends_hand" or not self.pile):
            self._end_hand()

    def _end_hand(self) -> None:
        """Score the hand and decide whether the game is over (§1, §2, §4)."""
        self.taken_top = self.must_play = self.discarder = None
        self.hands_played += 1
        self.phase = "hand_over"
        self._result = None
        if self.result().game_over:
            self.phase = "game_over"
        self._legal = None

    # --- text ----------------------------------------------------------------------------------

    def _brief(self) -> str:
        """One line of the position for error messages (as python-chess appends the FEN)."""
        p = self.turn
        top = card_str(self.pile[-1]) if self.pile else "-"
        doing = {"call": "call or pass", "called": "play after calling"}.get(self.phase, self.phase)
        s = f"player {p} to {doing}; hand {cards_str(self.hand(p))}; pile top {top}"
        if self.discarder is not None:
            s += f"; call window after player {self.discarder}'s discard"
        if self.must_play is not None:
            s += f"; must play {card_str(self.must_play)}"
        return s

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Game) and self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __str__(self) -> str:
        return render(self.position())

    def __repr__(self) -> str:
        return (
            f"<Game {self.phase} player={self.turn} hands_played={self.hands_played} "
            f"totals={self.totals}>"
        )


def _places(a: Action) -> str:
    """The cards of an action in notation (``JK=9D`` for a joker's place)."""
    return " ".join(place_str(c, a.jokers) for c in a.cards)


_FIELDS = (
    "dealer", "turn", "phase", "discarder", "held_once", "held_twice", "count", "jokers_held",
    "known_once", "known_twice", "known_jokers", "totals_before", "stock", "pile", "melds",
    "taken_top",
    "must_play", "turns", "hands_played", "_legal", "_fits_memo", "_result",
)  # fmt: skip
"""What `__reduce__` pickles: every slot but the two the constructor takes and `_plain`, which
it derives from them (tests/test_compiled.py checks the list against `Game.__slots__`)."""


def _unpickle(rules: Rules, seed: int, fields: dict[str, Any]) -> Game:
    g = Game(rules, seed)
    for name, value in fields.items():
        setattr(g, name, value)
    return g


_APPLY: dict[str, Callable[[Game, Action], None]] = {
    "draw": Game._apply_draw,
    "take": Game._apply_take,
    "dig": Game._apply_dig,
    "decline": Game._apply_decline,
    "meld": Game._apply_meld,
    "layoff": Game._apply_layoff,
    "discard": Game._apply_discard,
    "call": Game._apply_call,
    "pass": Game._apply_pass,
    "done": Game._apply_done,
}
"""`play_unchecked`'s dispatch, one method per kind. Built after the class, not in its body: a
compiled class (setup.py) does not see its methods by name while its body runs."""
