"""The Rummy 500 rules engine: `Action` (the notation) and `Game` (a mutable position).

Everything here follows RULES.md; comments cite its sections. Pure standard library, so the
rules can be read, tested and searched without any RL library. Speed comes from the
representation: cards are ints, a hand is a pair of bitmasks (see `cards`), the 100 three-card
meld shapes are precomputed masks (see `melds`), and the legal set is cached per position.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from typing import Any, NamedTuple

from rummy500_env.cards import (
    Card,
    CardParseError,
    bit,
    byte_tables,
    card_str,
    cards_str,
    gather,
    multiset_add,
    multiset_cards,
    multiset_of,
    multiset_remove,
    parse_card,
    rank_of,
)
from rummy500_env.errors import (
    ActionParseError,
    IllegalActionError,
    InvalidPositionError,
    RulesError,
)
from rummy500_env.melds import (
    MELD_MASKS,
    MELD_TEMPLATES,
    MELDS_WITH,
    Meld,
    hand_values,
    lay_off,
    meld_from_cards,
    meld_value,
)
from rummy500_env.rules import Rules

PHASES = ("draw", "play", "hand_over", "game_over")
ACTION_KINDS = ("draw", "take", "dig", "decline", "meld", "layoff", "discard")


class Action(NamedTuple):
    """One decision in the notation of DESIGN.md; immutable and hashable.

    ``cards`` holds the dug, melded, laid-off or discarded cards (melds in table order: sets by
    suit, runs low to high); ``target`` is the meld index of a lay-off; ``copy`` says which
    buried copy a dig takes when two decks put the same card in the pile twice (1 = nearest
    the top).

    >>> str(Action.parse("MELD 9s 9h 9d"))
    'meld 9D 9H 9S'
    >>> Action.parse("dig 9D#2")
    Action(kind='dig', cards=(21,), target=-1, copy=2)
    """

    kind: str
    cards: tuple[Card, ...] = ()
    target: int = -1
    copy: int = 1

    def __str__(self) -> str:
        k = self.kind
        if k in ("draw", "take", "decline"):
            return k
        if k == "dig":
            return f"dig {card_str(self.cards[0])}" + (f"#{self.copy}" if self.copy != 1 else "")
        if k == "layoff":
            return f"layoff {card_str(self.cards[0])} {self.target}"
        return f"{k} {cards_str(self.cards)}"

    @classmethod
    def parse(cls, text: str) -> Action:
        """Parse the text notation (any case, any card form); raises `ActionParseError`."""
        if not isinstance(text, str):
            raise ActionParseError(f"an action must be text or an Action, not {text!r}")
        words = text.replace(",", " ").split()
        if not words:
            raise ActionParseError(f"empty action text {text!r}; {_SYNTAX}")
        kind, args = words[0].lower(), words[1:]
        try:
            if kind in ("draw", "take", "decline"):
                if args:
                    raise ActionParseError(f"{kind!r} takes no arguments, got {text!r}")
                return _SIMPLE[kind]
            if kind == "dig" and len(args) == 1:
                name, _, copy = args[0].partition("#")
                if copy and copy not in ("1", "2"):
                    raise ActionParseError(f"dig copy must be #1 or #2 (two decks), got {text!r}")
                return cls("dig", (parse_card(name),), -1, int(copy or 1))
            if kind == "meld" and len(args) >= 3:
                return meld_action(parse_card(a) for a in args)
            if kind == "layoff" and len(args) == 2:
                if not args[1].isdigit():
                    raise ActionParseError(
                        f"layoff needs a card and a meld number, e.g. 'layoff 10C 2', got {text!r}"
                    )
                return cls("layoff", (parse_card(args[0]),), int(args[1]))
            if kind == "discard" and len(args) == 1:
                return cls("discard", (parse_card(args[0]),))
        except CardParseError as e:
            raise ActionParseError(f"in action {text!r}: {e}") from None
        raise ActionParseError(f"not an action: {text!r}; {_SYNTAX}")


_SYNTAX = (
    "actions are: draw | take | dig 9D (or dig 9D#2) | decline | meld 9S 9H 9D | "
    "layoff 10C 2 | discard 2C"
)
DRAW, TAKE, DECLINE = Action("draw"), Action("take"), Action("decline")
_SIMPLE = {"draw": DRAW, "take": TAKE, "decline": DECLINE}
_DISCARDS = tuple(Action("discard", (c,)) for c in range(52))
_DIGS = tuple(tuple(Action("dig", (c,), -1, k) for k in (1, 2, 3)) for c in range(52))
_TEMPLATE_ACTIONS = tuple(Action("meld", t) for t in MELD_TEMPLATES)
_BYTE_DISCARDS = byte_tables(_DISCARDS.__getitem__, 52)
"""The discard actions of a hand mask's cards, for `gather`."""
_LAYOFFS: dict[tuple[Card, int], Action] = {}


def meld_action(cards: Iterable[Card]) -> Action:
    """A meld action with its cards put in table order (sets by suit, runs low to high)."""
    cs = sorted(cards)
    ranks = {rank_of(c) for c in cs}
    if len(ranks) > 1:
        cs.sort(key=rank_of)
        if rank_of(cs[0]) == 0 and rank_of(cs[-1]) == 12:  # Q-K-A: the ace is high
            cs.append(cs.pop(0))
    return Action("meld", tuple(cs))


def layoff_action(card: Card, target: int) -> Action:
    """The (cached) action laying `card` off on meld number `target`."""
    a = _LAYOFFS.get((card, target))
    if a is None:
        a = _LAYOFFS[(card, target)] = Action("layoff", (card,), target)
    return a


def _set_partner_pairs() -> tuple[tuple[int, ...], ...]:
    """For each card, masks of the two other cards that complete a 3-card meld with it."""
    out = []
    for card in range(52):
        pairs = []
        for i in MELDS_WITH[card]:
            pairs.append(MELD_MASKS[i] & ~bit(card))
        out.append(tuple(pairs))
    return tuple(out)


MELD_PARTNERS = _set_partner_pairs()
_RANK_MATES = tuple(sum(1 << (c % 13 + 13 * s) for s in range(4)) & ~(1 << c) for c in range(52))
"""For each card, the mask of the other three cards of its rank (a set needs two of them)."""
_RUN_PARTNERS = tuple(
    tuple(pair for pair in MELD_PARTNERS[c] if not pair & _RANK_MATES[c]) for c in range(52)
)
"""For each card, the pairs of `MELD_PARTNERS` that make a run with it."""
_F = 0x1FFF  # one suit's 13-bit field


_RUN_STARTS = sum(0x7FF << 13 * s for s in range(4))  # a run can start at A..J of a suit
_QUEENS = sum(1 << 13 * s + 11 for s in range(4))  # ...or at its queen, ending with the ace
_RUN_AT = tuple(52 + 12 * (pos // 13) + pos % 13 for pos in range(52))
"""Template index of the three-card run starting at card `pos` (Q-K-A starts at the queen)."""


def meld_templates_in(one: int) -> list[int]:
    """Indices (in `MELD_TEMPLATES` order) of every three-card meld within the cards `one`.

    Bit arithmetic instead of testing all 100 templates: a rank held in three of the four
    13-bit suit fields is a set; a card whose two successors are held starts a run.
    """
    f0, f1, f2, f3 = one & _F, one >> 13 & _F, one >> 26 & _F, one >> 39 & _F
    out: list[int] = []
    three = (f0 & f1 & (f2 | f3)) | ((f0 | f1) & f2 & f3)
    while three:
        low = three & -three
        r = low.bit_length() - 1
        three ^= low
        b = 1 << r
        missing = [s for s, f in enumerate((f0, f1, f2, f3)) if not f & b]
        if missing:
            out.append(4 * r + 3 - missing[0])  # sets leave out S, H, D, C in that order
        else:
            out += (4 * r, 4 * r + 1, 4 * r + 2, 4 * r + 3)
    starts = (one & one >> 1 & one >> 2 & _RUN_STARTS) | (one & one >> 1 & one << 11 & _QUEENS)
    while starts:
        low = starts & -starts
        out.append(_RUN_AT[low.bit_length() - 1])
        starts ^= low
    return out


class Game:
    """A position of Rummy 500 and the rules that move it on (RULES.md).

    Mutable: `apply` changes the position in place; `copy` is cheap. Create with `Game.new`
    (a shuffled deal) or `Game.from_dict` (any position).

    >>> g = Game.new(Rules(), seed=7)
    >>> g.phase, g.current_player, str(g.legal_actions()[0])
    ('draw', 0, 'draw')
    """

    __slots__ = (
        "_fits_memo",
        "_hand_value",
        "_legal",
        "_legal_set",
        "_scores",
        "count",
        "dealer",
        "hands_played",
        "known_one",
        "known_two",
        "melds",
        "must_play",
        "one",
        "phase",
        "pile",
        "rules",
        "seed",
        "stock",
        "taken_top",
        "totals_before",
        "turn",
        "turns",
        "two",
    )

    def __init__(self, rules: Rules, seed: int) -> None:
        """Use `Game.new` or `Game.from_dict`; this makes an empty, undealt table."""
        self.rules = rules
        self.seed = seed
        n = rules.players
        self.dealer = n - 1
        self.turn = 0
        self.phase = "draw"
        self.one = [0] * n
        self.two = [0] * n
        self.count = [0] * n
        self.known_one = [0] * n
        self.known_two = [0] * n
        self.stock: list[Card] = []  # internal order: the top (drawn next) is the last item
        self.pile: list[Card] = []  # bottom first, top last
        self.melds: list[Meld] = []
        self.totals_before = [0] * n
        self.taken_top: Card | None = None
        self.must_play: Card | None = None
        self.turns = 0
        self.hands_played = 0
        self._hand_value = hand_values(rules.scoring)
        self._legal: list[Action] | None = None
        self._legal_set: frozenset[Action] | set[Action] | None = None
        self._fits_memo: tuple[list[Meld], int] | None = None
        self._scores: list[int] | None = None  # the final hand scores, once the hand is over

    # --- construction ---------------------------------------------------------------------

    @classmethod
    def new(
        cls, rules: Rules | str | dict[str, Any] | None = None, seed: int | None = None
    ) -> Game:
        """A new game with the first hand dealt. The same rules and seed replay identically.

        The first dealer is the last player, so player 0 acts first (RULES.md §1: the player
        after the dealer leads). With ``seed=None`` a random seed is drawn and kept in
        `to_dict`, so any game can be replayed.
        """
        rules = Rules.coerce(rules)
        if seed is None:
            seed = random.SystemRandom().randrange(2**63)
        elif type(seed) is not int:
            raise TypeError(f"seed must be an int or None, not {seed!r}")
        g = cls(rules, seed)
        g._deal()
        return g

    def copy(self) -> Game:
        """An independent copy of this position (cheap: every field is an int, list or tuple)."""
        g = Game.__new__(Game)
        g.rules = self.rules
        g.seed = self.seed
        g.dealer = self.dealer
        g.turn = self.turn
        g.phase = self.phase
        g.one = self.one[:]
        g.two = self.two[:]
        g.count = self.count[:]
        g.known_one = self.known_one[:]
        g.known_two = self.known_two[:]
        g.stock = self.stock[:]
        g.pile = self.pile[:]
        g.melds = self.melds[:]
        g.totals_before = self.totals_before[:]
        g.taken_top = self.taken_top
        g.must_play = self.must_play
        g.turns = self.turns
        g.hands_played = self.hands_played
        g._hand_value = self._hand_value
        g._fits_memo = self._fits_memo  # never mutated: shared safely
        g._scores = self._scores  # likewise
        g._legal = self._legal
        g._legal_set = self._legal_set
        return g

    def _deal(self) -> None:
        """Shuffle and deal a hand (RULES.md §1 "Cards and deal"); the deal is seeded by the
        game seed and the hand number, so `next_hand` after `from_dict` replays too."""
        r, n = self.rules, self.rules.players
        deck = list(range(52)) * r.deck_count
        random.Random(f"rummy500/{self.seed}/{self.hands_played}").shuffle(deck)
        size = r.cards_per_hand
        for p in range(n):
            self.one[p] = self.two[p] = self.known_one[p] = self.known_two[p] = 0
            self.count[p] = size
        for i in range(size * n):
            p = (self.dealer + 1 + i) % n
            self.one[p], self.two[p] = multiset_add(self.one[p], self.two[p], deck[i])
        self.pile = [deck[size * n]]
        self.stock = deck[size * n + 1 :][::-1]
        self.melds = []
        self.turn = (self.dealer + 1) % n
        self.phase = "draw"
        self.taken_top = self.must_play = None
        self.turns = 0
        self._legal = self._legal_set = self._scores = None
        self._start_turn()

    def next_hand(self) -> None:
        """Deal the next hand after a hand is over: totals carry on, the dealer rotates."""
        if self.phase != "hand_over":
            raise IllegalActionError(
                f"next_hand() is only allowed when the hand is over; phase is {self.phase!r}"
                + (" (the game is over)" if self.phase == "game_over" else "")
            )
        self.totals_before = self.totals
        self.dealer = (self.dealer + 1) % self.rules.players
        self._deal()

    # --- public read-only view -------------------------------------------------------------

    @property
    def current_player(self) -> int:
        """The player to act (after a hand ends: the player who acted last)."""
        return self.turn

    @property
    def players(self) -> int:
        """Number of players."""
        return self.rules.players

    def hand(self, player: int) -> list[Card]:
        """A player's cards, ascending (a card held twice appears twice)."""
        return multiset_cards(self.one[player], self.two[player])

    def known(self, player: int) -> list[Card]:
        """Cards a player is known to hold: taken from the pile in view and not played since."""
        return multiset_cards(self.known_one[player], self.known_two[player])

    @property
    def stock_cards(self) -> list[Card]:
        """The stock, top (next drawn) first."""
        return self.stock[::-1]

    def hand_scores(self) -> list[int]:
        """Per player: table value of the cards they put down − value of their hand (RULES.md
        §1 scoring), read from the table as it is now; final once the hand is over."""
        if self._scores is not None:
            return self._scores[:]
        n, scoring = self.rules.players, self.rules.scoring
        scores = [0] * n
        for m in self.melds:
            for owner, v in zip(m.owners, meld_value(m, scoring), strict=True):
                scores[owner] += v
        hv = self._hand_value
        for p in range(n):
            scores[p] -= sum(hv[c] for c in self.hand(p))
        if self.phase in ("hand_over", "game_over"):  # nothing moves until the next deal
            self._scores = scores[:]
        return scores

    def table_points(self) -> list[int]:
        """Per player: the value of the cards they have on the table now."""
        n, scoring = self.rules.players, self.rules.scoring
        pts = [0] * n
        for m in self.melds:
            for owner, v in zip(m.owners, meld_value(m, scoring), strict=True):
                pts[owner] += v
        return pts

    @property
    def totals(self) -> list[int]:
        """Running totals; once the hand is over they include its scores."""
        if self.phase in ("hand_over", "game_over"):
            return [t + s for t, s in zip(self.totals_before, self.hand_scores(), strict=True)]
        return self.totals_before[:]

    @property
    def went_out(self) -> int | None:
        """The player whose hand is empty (who went out), if any."""
        for p in range(self.rules.players):
            if self.count[p] == 0:
                return p
        return None

    @property
    def winner(self) -> int | None:
        """The winner once the game is over (None before, and for a draw at `hand_limit`)."""
        if self.phase != "game_over":
            return None
        return self._game_winner(self.totals, limit_reached=True)

    @property
    def is_hand_over(self) -> bool:
        """True once the hand has ended (phase hand_over or game_over)."""
        return self.phase in ("hand_over", "game_over")

    @property
    def truncated(self) -> bool:
        """True when the game ended by `hand_limit` rather than by the target (RULES.md §4)."""
        return (
            self.phase == "game_over"
            and self._game_winner(self.totals, limit_reached=False) is None
        )

    def _game_winner(self, totals: list[int], limit_reached: bool) -> int | None:
        """Who has won given final totals of a hand (RULES.md §1 end of game, §2
        `winner_must_go_out`, §4 `hand_limit`): None means play on, or a draw at the limit."""
        r = self.rules
        best = max(totals)
        leaders = [p for p, t in enumerate(totals) if t == best]
        if r.winner_must_go_out:
            out = self.went_out
            if out is not None and totals[out] >= r.target:
                return out
        elif best >= r.target and len(leaders) == 1:
            return leaders[0]
        if limit_reached and len(leaders) == 1:
            return leaders[0]
        return None

    # --- legal actions --------------------------------------------------------------------

    def legal_actions(self) -> list[Action]:
        """Every legal action now, in a fixed order (draw, take, digs from the top down,
        decline, melds, lay-offs, discards). Melds are listed in their three-card form: a
        longer meld is the same as a three-card meld followed by lay-offs, and `apply`
        accepts it too. Empty once the hand is over.
        """
        if self._legal is None:
            if self.phase == "draw":
                self._legal = self._legal_draw()
            elif self.phase == "play":
                self._legal = self._legal_play()
            else:
                self._legal = []
        return list(self._legal)

    def is_legal(self, action: Action | str) -> bool:
        """Whether an action (or its text) is legal now."""
        try:
            a = action if isinstance(action, Action) else Action.parse(action)
        except ActionParseError:
            return False
        return self._why_illegal(a) is None

    def _obligated_top(self) -> bool:
        """Taking the top card carries the dig obligation (RULES.md §2 `top_card_must_meld`,
        `pile_must_use` once the stock is empty)."""
        r = self.rules
        return r.top_card_must_meld or (not self.stock and r.stock_out == "pile_must_use")

    def _can_put_down(self, card: Card, one: int, size: int) -> bool:
        """Can `card` be the first thing put down from a hand (presence mask `one`, `size`
        cards): in a new meld, or laid off on a table meld (RULES.md §3, first fine print).
        With `discard_to_go_out` it must go down without emptying the hand."""
        dtgo = self.rules.discard_to_go_out
        if not dtgo or size > 3:
            mates = one & _RANK_MATES[card]
            if mates & (mates - 1):  # two more of its rank: a set
                return True
            for pair in _RUN_PARTNERS[card]:
                if one & pair == pair:
                    return True
        return (not dtgo or size > 1) and self._table_fits() >> card & 1 == 1

    def _table_fits(self) -> int:
        """Mask of the cards that some table meld takes (memoised while the melds stay)."""
        memo = self._fits_memo
        if memo is not None and memo[0] == self.melds:
            return memo[1]
        fits = 0
        for m in self.melds:
            for c in m.fits:
                fits |= 1 << c
        self._fits_memo = (self.melds[:], fits)
        return fits

    def _legal_draw(self) -> list[Action]:
        draw, take, digs, decline = self.draw_options()
        acts = [DRAW] if draw else []
        if take:
            acts.append(TAKE)
        acts += [_DIGS[c][k - 1] for _, c, k in digs]
        if decline:
            acts.append(DECLINE)
        return acts

    def _legal_play(self) -> list[Action]:
        templates, layoffs, discards = self.play_options()
        acts = [_TEMPLATE_ACTIONS[t] for t in templates]
        acts += [layoff_action(c, i) for c, i in layoffs]
        return acts + gather(discards, _BYTE_DISCARDS)

    def draw_options(self) -> tuple[bool, bool, list[tuple[int, Card, int]], bool]:
        """The legal actions of the draw phase, in parts: (draw from the stock, take the top
        card, the digs as (depth below the top, card, copy) from the top down, decline).

        `legal_actions` is built from these parts; the RL layer reads them directly, which
        skips building `Action` objects (an env asks at every step).
        """
        p, pile, stock = self.turn, self.pile, self.stock
        take, digs = False, []
        if pile:
            # Only which cards are held matters for putting one down, so `one` (the presence
            # mask) grows as the take goes deeper; `size` counts the copies.
            top = pile[-1]
            one, size = self.one[p] | 1 << top, self.count[p] + 1
            take = not self._obligated_top() or self._can_put_down(top, one, size)
            if len(pile) > 1:
                digs = self._legal_digs(one, size)
        # RULES.md §1: with the stock empty a player may take nothing (decline).
        return bool(stock), take, digs, not stock

    def _legal_digs(self, one: int, size: int) -> list[tuple[int, Card, int]]:
        """The digs as (depth, card, copy): a buried card qualifies when it can be put down
        once it and every card above it join the hand (`one`, `size`: the hand with the top
        card already taken)."""
        pile = self.pile
        digs = []
        seen: dict[Card, int] = {}
        depth = 0
        for i in range(len(pile) - 2, -1, -1):
            c = pile[i]
            one |= 1 << c
            size += 1
            depth += 1
            k = seen[c] = seen.get(c, 0) + 1
            if self._can_put_down(c, one, size):
                digs.append((depth, c, k))
        return digs

    def play_options(self) -> tuple[list[int], list[tuple[Card, int]], int]:
        """The legal actions of the play phase, in parts: (three-card melds as template
        indices, lay-offs as (card, meld index), the mask of the cards that may be discarded).
        See `draw_options`."""
        p = self.turn
        one, size = self.one[p], self.count[p]
        dtgo = self.rules.discard_to_go_out
        templates: list[int] = []
        layoffs: list[tuple[Card, int]] = []
        b = self.must_play
        if b is not None:  # an open dig obligation (RULES.md §1 dig, §3): no discard yet
            if not dtgo or size > 3:
                templates = [t for t in MELDS_WITH[b] if one & MELD_MASKS[t] == MELD_MASKS[t]]
            if not dtgo or size > 1:
                layoffs = [(b, i) for i, m in enumerate(self.melds) if b in m.fits]
            return templates, layoffs, 0
        if not dtgo or size > 3:
            templates = meld_templates_in(one)
        if (not dtgo or size > 1) and one & self._table_fits():
            for i, m in enumerate(self.melds):
                for c in m.fits:
                    if one >> c & 1:
                        layoffs.append((c, i))
        # The card taken from the top may not go straight back (RULES.md §1, §3), unless it
        # is the last card, or, with two decks, only its copies are left: our clarification,
        # since otherwise a player holding both copies would be stuck with no legal action.
        tt = self.taken_top
        if tt is not None and one != 1 << tt:
            one &= ~(1 << tt)
        return templates, layoffs, one

    # --- applying actions -----------------------------------------------------------------

    def apply(self, action: Action | str) -> None:
        """Play one action (an `Action` or its text) for the player to act.

        Raises `ActionParseError` for text that is not an action and `IllegalActionError`,
        naming the rule, for an action the rules forbid now; the position is then unchanged.
        """
        a = action if isinstance(action, Action) else Action.parse(action)
        if self._legal_set is None:
            if self._legal is None:
                self.legal_actions()
            self._legal_set = set(self._legal)  # type: ignore[arg-type]
        if a not in self._legal_set:
            why = self._why_illegal(a)
            if why is not None:
                raise IllegalActionError(f"{a} is illegal: {why} [{self._brief()}]")
        self._play(a)

    def _play(self, a: Action) -> None:
        """Play an action already known to be legal (callers that checked a mask skip the
        second check; everyone else uses `apply`)."""
        self._legal = self._legal_set = None
        kind = a.kind
        p = self.turn
        if kind == "discard":
            c = a.cards[0]
            self._remove(p, c)
            self.pile.append(c)
            self.taken_top = None
            if self.count[p] == 0:  # discarding the last card goes out (RULES.md §1)
                self._end_hand()
            else:
                self._next_turn()
        elif kind == "draw":
            c = self.stock.pop()
            self.one[p], self.two[p] = multiset_add(self.one[p], self.two[p], c)
            self.count[p] += 1
            self.phase = "play"
        elif kind == "take":
            c = self.pile.pop()
            self._take(p, [c])
            self.taken_top = c
            if self._obligated_top():
                self.must_play = c
            self.phase = "play"
        elif kind == "dig":
            i = self._dig_index(a.cards[0], a.copy)
            assert i is not None  # legality was checked above
            taken = self.pile[i:]
            del self.pile[i:]
            self._take(p, taken)
            self.must_play = a.cards[0]
            self.phase = "play"
        elif kind == "meld":
            for c in a.cards:
                self._remove(p, c)
            m = meld_from_cards(a.cards, (p,) * len(a.cards))
            assert m is not None
            self.melds.append(m)
            if self.must_play in a.cards:
                self.must_play = None
            if self.count[p] == 0:
                self._end_hand()
        elif kind == "layoff":
            c = a.cards[0]
            self._remove(p, c)
            self.melds[a.target] = lay_off(self.melds[a.target], c, p)
            if self.must_play == c:
                self.must_play = None
            if self.count[p] == 0:
                self._end_hand()
        else:  # decline: the stock is empty and the player takes nothing (RULES.md §1)
            self._end_hand()

    def _take(self, p: int, cards: list[Card]) -> None:
        """Cards taken from the pile join the hand, in everyone's view (RULES.md §1)."""
        one, two, k1, k2 = self.one[p], self.two[p], self.known_one[p], self.known_two[p]
        for c in cards:
            one, two = multiset_add(one, two, c)
            k1, k2 = multiset_add(k1, k2, c)
        self.one[p], self.two[p], self.known_one[p], self.known_two[p] = one, two, k1, k2
        self.count[p] += len(cards)

    def _remove(self, p: int, c: Card) -> None:
        """Take one copy of `c` out of a hand; a known copy stays known only while one is held."""
        self.one[p], self.two[p] = multiset_remove(self.one[p], self.two[p], c)
        self.count[p] -= 1
        b = 1 << c
        if self.known_one[p] & b:
            held = (self.one[p] & b != 0) + (self.two[p] & b != 0)
            known = 1 + (self.known_two[p] & b != 0)
            if known > held:
                self.known_one[p], self.known_two[p] = multiset_remove(
                    self.known_one[p], self.known_two[p], c
                )

    def _next_turn(self) -> None:
        self.turns += 1
        self.turn = (self.turn + 1) % self.rules.players
        self.phase = "draw"
        self.must_play = None
        limit = self.rules.turn_limit
        if limit is not None and self.turns >= limit:
            # RULES.md §4: the hand ends as if the stock were empty and the player declined.
            self._end_hand()
        else:
            self._start_turn()

    def _start_turn(self) -> None:
        if not self.stock and self.rules.stock_out == "ends_hand":
            self._end_hand()  # RULES.md §2 `ends_hand`: a player must draw from an empty stock

    def _end_hand(self) -> None:
        """Score the hand and decide whether the game is over (RULES.md §1, §2, §4)."""
        self.taken_top = self.must_play = None
        self.hands_played += 1
        limit = self.rules.hand_limit
        limit_reached = limit is not None and self.hands_played >= limit
        self.phase = "hand_over"
        totals = self.totals
        if self._game_winner(totals, limit_reached=False) is not None or limit_reached:
            self.phase = "game_over"
        self._legal = self._legal_set = None

    def _dig_index(self, card: Card, copy: int) -> int | None:
        """Pile index of the `copy`-th buried `card` counting from the top, or None."""
        pile, k = self.pile, 0
        for i in range(len(pile) - 2, -1, -1):
            if pile[i] == card:
                k += 1
                if k == copy:
                    return i
        return None

    # --- explanations ---------------------------------------------------------------------

    def _why_illegal(self, a: Action) -> str | None:
        """Why an action is illegal now (naming the rule), or None if it is legal."""
        if self.phase == "game_over":
            return "the game is over"
        if self.phase == "hand_over":
            return "the hand is over; call next_hand() to deal the next one"
        if a.kind not in ACTION_KINDS:
            return f"unknown action kind {a.kind!r}"
        if any(type(c) is not int or not 0 <= c < 52 for c in a.cards):
            return f"cards must be ids 0..51, got {a.cards!r}"
        if self.phase == "draw":
            return self._why_illegal_draw(a)
        return self._why_illegal_play(a)

    def _why_illegal_draw(self, a: Action) -> str | None:
        k, pile, p = a.kind, self.pile, self.turn
        if k in ("meld", "layoff", "discard"):
            return "you must draw first: draw, take or dig (RULES.md §1, a turn)"
        if k == "draw":
            return None if self.stock else "the stock is empty: take from the pile or decline"
        if k == "decline":
            return None if not self.stock else "decline is only allowed once the stock is empty"
        if not pile:
            return "the discard pile is empty"
        one, size = self.one[p] | 1 << pile[-1], self.count[p] + 1
        if k == "take":
            if self._obligated_top() and not self._can_put_down(pile[-1], one, size):
                why = (
                    "top_card_must_meld"
                    if self.rules.top_card_must_meld
                    else ("pile_must_use with the stock empty")
                )
                return (
                    f"taking the top card carries the dig obligation ({why}) and "
                    f"{card_str(pile[-1])} could not go on the table at once"
                )
            return None
        if len(a.cards) != 1 or a.copy not in (1, 2):
            return "a dig names one buried card, e.g. 'dig 9D' or 'dig 9D#2'"
        c = a.cards[0]
        i = self._dig_index(c, a.copy)
        if i is None:
            where = "the top card (use 'take')" if pile[-1] == c else "not buried in the pile"
            return f"{card_str(c)}{'#2' if a.copy == 2 else ''} is {where}; pile: {cards_str(pile)}"
        for x in pile[i:-1]:
            one |= 1 << x
        size += len(pile) - 1 - i
        if not self._can_put_down(c, one, size):
            extra = (
                " without emptying the hand (discard_to_go_out)"
                if self.rules.discard_to_go_out
                else ""
            )
            return (
                f"a dig is legal only if the buried card can go on the table at once "
                f"(RULES.md §1 dig): {card_str(c)} fits no new meld with your cards and the "
                f"{len(pile) - i} taken, and no meld on the table{extra}"
            )
        return None

    def _why_illegal_play(self, a: Action) -> str | None:
        k, p = a.kind, self.turn
        if k in ("draw", "take", "dig", "decline"):
            return "you have already drawn this turn; meld, lay off or discard"
        one, two, size = self.one[p], self.two[p], self.count[p]
        need_one, need_two = 0, 0
        for c in a.cards:
            if need_one >> c & 1:
                need_two |= 1 << c
            need_one |= 1 << c
        if need_one & ~one or need_two & ~two:
            return f"you do not hold {cards_str(a.cards)}; your hand: {cards_str(self.hand(p))}"
        b, dtgo = self.must_play, self.rules.discard_to_go_out
        if k == "discard":
            if len(a.cards) != 1:
                return "discard exactly one card"
            if b is not None:
                return (
                    f"discarding is blocked until {card_str(b)} is on the table "
                    "(RULES.md §1 dig obligation)"
                )
            if a.cards[0] == self.taken_top and one != 1 << a.cards[0]:
                return (
                    f"{card_str(a.cards[0])} was taken from the top of the pile this turn and "
                    "may not be discarded unless it is your last card (RULES.md §1)"
                )
            return None
        if k == "meld":
            m = meld_from_cards(a.cards, (p,) * len(a.cards))
            if m is None:
                return (
                    f"{cards_str(a.cards)} is not a meld: a set is 3-4 cards of one rank in "
                    "different suits, a run 3+ consecutive cards of one suit, listed low to "
                    "high (RULES.md §1 melds)"
                )
            if b is not None and b not in a.cards:
                return f"the dig obligation is open: every meld must include {card_str(b)}"
            if dtgo and len(a.cards) >= size:
                return "discard_to_go_out: you must keep a card to discard, so this meld is illegal"
            return None
        if len(a.cards) != 1:
            return "lay off exactly one card"
        c = a.cards[0]
        if not 0 <= a.target < len(self.melds):
            return f"there is no meld #{a.target}; melds are numbered 0..{len(self.melds) - 1}"
        m = self.melds[a.target]
        if c not in m.fits:
            fits = cards_str(m.fits) or "nothing"
            return f"{card_str(c)} does not fit meld #{a.target} ({m}); it takes {fits}"
        if b is not None and c != b:
            return f"the dig obligation is open: lay off {card_str(b)} first"
        if dtgo and size == 1:
            return "discard_to_go_out: you must keep a card to discard, so this lay-off is illegal"
        return None

    def _brief(self) -> str:
        p = self.turn
        top = card_str(self.pile[-1]) if self.pile else "-"
        s = f"player {p} to {self.phase}; hand {cards_str(self.hand(p))}; pile top {top}"
        if self.must_play is not None:
            s += f"; must play {card_str(self.must_play)}"
        return s

    # --- positions --------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """The position as a JSON-compatible dict (DESIGN.md schema); `from_dict` restores it."""
        r = self.rules
        name = r.preset_name()
        n = r.players
        return {
            "rules": name if name is not None else r.to_dict(),
            "dealer": self.dealer,
            "turn": self.turn,
            "phase": self.phase,
            "hands": [[card_str(c) for c in self.hand(p)] for p in range(n)],
            "stock": [card_str(c) for c in reversed(self.stock)],
            "pile": [card_str(c) for c in self.pile],
            "melds": [
                {"cards": [card_str(c) for c in m.cards], "owners": list(m.owners)}
                for m in self.melds
            ],
            "totals": self.totals_before[:],
            "taken_top": None if self.taken_top is None else card_str(self.taken_top),
            "must_play": None if self.must_play is None else card_str(self.must_play),
            "known": [[card_str(c) for c in self.known(p)] for p in range(n)],
            "turns": self.turns,
            "hands_played": self.hands_played,
            "seed": self.seed,
        }

    @classmethod
    def from_dict(cls, position: dict[str, Any]) -> Game:
        """Set up any position; raises `InvalidPositionError` listing every problem found."""
        return _PositionReader(position).game()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Game) and self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __str__(self) -> str:
        from rummy500_env.render import render

        return render(self)

    def __repr__(self) -> str:
        return (
            f"<Game {self.phase} player={self.turn} hands_played={self.hands_played} "
            f"totals={self.totals}>"
        )


POSITION_KEYS = (
    "rules", "dealer", "turn", "phase", "hands", "stock", "pile", "melds", "totals",
    "taken_top", "must_play", "known", "turns", "hands_played",
)  # fmt: skip
OPTIONAL_KEYS = {"seed": 0, "taken_top": None, "must_play": None, "turns": 0, "hands_played": 0}


class _PositionReader:
    """Reads a position dict into a `Game`, collecting every problem before raising."""

    def __init__(self, d: Any) -> None:
        self.d = d
        self.problems: list[str] = []

    def bad(self, msg: str) -> None:
        self.problems.append(msg)

    def cards(self, value: Any, where: str) -> list[Card]:
        if not isinstance(value, list):
            self.bad(f"{where} must be a list of cards, got {value!r}")
            return []
        out = []
        for x in value:
            try:
                if not isinstance(x, str):
                    raise CardParseError(f"not a card: {x!r}")
                out.append(parse_card(x))
            except CardParseError as e:
                self.bad(f"{where}: {e}")
        return out

    def card(self, value: Any, where: str) -> Card | None:
        if value is None:
            return None
        got = self.cards([value], where)
        return got[0] if got else None

    def integer(self, key: str, low: int, high: int | None) -> int:
        v = self.d.get(key, OPTIONAL_KEYS.get(key))
        if type(v) is not int or v < low or (high is not None and v > high):
            rng = f"{low}..{high}" if high is not None else f">= {low}"
            self.bad(f"{key} must be an int {rng}, got {v!r}")
            return low
        return v

    def game(self) -> Game:
        d = self.d
        if not isinstance(d, dict):
            raise InvalidPositionError([f"a position must be a dict, got {type(d).__name__}"])
        missing = [k for k in POSITION_KEYS if k not in d and k not in OPTIONAL_KEYS]
        unknown = sorted(set(d) - set(POSITION_KEYS) - {"seed"})
        for k in missing:
            self.bad(f"missing key {k!r}")
        if unknown:
            self.bad(f"unknown key(s) {unknown}; allowed: {[*POSITION_KEYS, 'seed']}")
        try:
            rules = Rules.coerce(d.get("rules"))
        except RulesError as e:
            raise InvalidPositionError([*self.problems, f"rules: {e}"]) from None
        if self.problems:
            raise InvalidPositionError(self.problems)
        n = rules.players
        seed = d.get("seed", 0)
        if type(seed) is not int:
            self.bad(f"seed must be an int, got {seed!r}")
            seed = 0
        g = Game(rules, seed)
        g.dealer = self.integer("dealer", 0, n - 1)
        g.turn = self.integer("turn", 0, n - 1)
        g.turns = self.integer("turns", 0, None)
        g.hands_played = self.integer("hands_played", 0, None)
        phase = d["phase"]
        if phase not in PHASES:
            self.bad(f"phase must be one of {PHASES}, got {phase!r}")
            phase = "draw"
        g.phase = phase
        everything: list[Card] = []

        everything += self.read_hands(g, d["hands"], d["known"])
        stock = self.cards(d["stock"], "stock")
        pile = self.cards(d["pile"], "pile")
        g.stock = stock[::-1]
        g.pile = pile
        everything += stock + pile
        everything += self.read_melds(g, d["melds"])

        totals = d["totals"]
        if (
            not isinstance(totals, list)
            or len(totals) != n
            or any(type(t) is not int for t in totals)
        ):
            self.bad(f"totals must be a list of {n} ints, got {totals!r}")
        else:
            g.totals_before = list(totals)

        g.taken_top = self.card(d.get("taken_top"), "taken_top")
        g.must_play = self.card(d.get("must_play"), "must_play")
        self.check_deck(everything, rules)
        self.check_phase(g)
        if self.problems:
            raise InvalidPositionError(self.problems)
        return g

    def read_hands(self, g: Game, hands: Any, known: Any) -> list[Card]:
        """Fill the hands and known cards of `g`; return the cards read."""
        n = g.rules.players
        if not isinstance(hands, list) or len(hands) != n:
            self.bad(f"hands must be a list of {n} lists of cards (players={n}), got {hands!r}")
            hands = [[] for _ in range(n)]
        if not isinstance(known, list) or len(known) != n:
            self.bad(f"known must be a list of {n} lists of cards, got {known!r}")
            known = [[] for _ in range(n)]
        everything: list[Card] = []
        for p in range(n):
            cs = self.cards(hands[p], f"hands[{p}]")
            everything += cs
            try:
                g.one[p], g.two[p] = multiset_of(cs)
            except ValueError as e:
                self.bad(f"hands[{p}]: {e}")
            g.count[p] = len(cs)
            ks = self.cards(known[p], f"known[{p}]")
            try:
                g.known_one[p], g.known_two[p] = multiset_of(ks)
            except ValueError as e:
                self.bad(f"known[{p}]: {e}")
            for c in set(ks):
                if ks.count(c) > cs.count(c):
                    self.bad(f"known[{p}] has {card_str(c)} but hands[{p}] does not hold it")
        return everything

    def read_melds(self, g: Game, melds: Any) -> list[Card]:
        """Fill the melds of `g`; return the cards read."""
        n = g.rules.players
        if not isinstance(melds, list):
            self.bad(f"melds must be a list, got {melds!r}")
            return []
        everything: list[Card] = []
        for i, md in enumerate(melds):
            if not isinstance(md, dict) or set(md) != {"cards", "owners"}:
                self.bad(f"melds[{i}] must be a dict with keys 'cards' and 'owners', got {md!r}")
                continue
            cs = self.cards(md["cards"], f"melds[{i}].cards")
            everything += cs
            owners = md["owners"]
            if (
                not isinstance(owners, list)
                or len(owners) != len(cs)
                or any(type(o) is not int or not 0 <= o < n for o in owners)
            ):
                self.bad(
                    f"melds[{i}].owners must list one player 0..{n - 1} per card, got {owners!r}"
                )
                continue
            m = meld_from_cards(cs, tuple(owners))
            if m is None:
                self.bad(
                    f"melds[{i}] {cards_str(cs)} is not a meld (sets: 3-4 cards of one rank, "
                    "distinct suits; runs: 3+ consecutive cards of one suit, low to high)"
                )
                continue
            g.melds.append(m)
        return everything

    def check_deck(self, everything: list[Card], rules: Rules) -> None:
        """RULES.md §3: every card is in exactly one place and the total is the deck size."""
        copies = rules.deck_count
        counts = [0] * 52
        for c in everything:
            counts[c] += 1
        extra = [f"{card_str(c)} x{k}" for c, k in enumerate(counts) if k > copies]
        lost = [card_str(c) for c, k in enumerate(counts) if k < copies]
        if extra:
            self.bad(
                f"cards appear more than {copies} time(s) (decks={copies}): {', '.join(extra)}"
            )
        if lost:
            self.bad(f"cards missing from the position (decks={copies}): {' '.join(lost)}")

    def check_phase(self, g: Game) -> None:
        """The phase must agree with the hands, the stock, the turn state and the totals."""
        n, p = g.rules.players, g.turn
        empty = [q for q in range(n) if g.count[q] == 0]
        limit = g.rules.turn_limit
        if g.phase in ("draw", "play"):
            if empty:
                self.bad(f"players {empty} hold no cards, so the hand is over, not {g.phase!r}")
            if g.phase == "draw" and not g.stock and g.rules.stock_out == "ends_hand":
                self.bad("the stock is empty under stock_out='ends_hand': the hand is over")
            if limit is not None and g.turns >= limit:
                self.bad(f"turns={g.turns} has reached turn_limit={limit}: the hand is over")
        elif len(empty) > 1:
            self.bad(f"only one player can go out, but players {empty} hold no cards")
        if g.phase != "play":
            if g.taken_top is not None or g.must_play is not None:
                self.bad("taken_top and must_play must be null outside the 'play' phase")
        else:
            if g.taken_top is not None and g.must_play not in (None, g.taken_top):
                self.bad("taken_top and must_play are both set but differ: a take sets one card")
            if g.must_play is not None and not (g.one[p] >> g.must_play & 1):
                self.bad(f"must_play {card_str(g.must_play)} is not in the hand of player {p}")
        if g.phase in ("hand_over", "game_over") and not self.problems:
            hl = g.rules.hand_limit
            over = g._game_winner(g.totals, limit_reached=False) is not None or (
                hl is not None and g.hands_played >= hl
            )
            if g.phase == "hand_over" and over:
                self.bad("these totals end the game: phase must be 'game_over', not 'hand_over'")
            if g.phase == "game_over" and not over:
                self.bad("no one has won and hand_limit is not reached: phase must be 'hand_over'")
