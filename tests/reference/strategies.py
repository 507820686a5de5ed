"""Hypothesis strategies that build positions directly: rules, table melds, hands, the pile, the
stock, obligations (`taken_top`, `must_play`), call windows and hand ends, every card of the
packs in exactly one place (docs/rules.md §3, §7).

Random deals rarely hold what the rules are about (a Q-K-A, a full run, a dig whose card fits
only through a joker), so the builder plants structures: pairs and triples of three-card
melds in the hand with the missing card in the pile, cards that fit the table's melds, long and
full runs, jokers in hand and on the table. The shuffles come from one `st.randoms` draw; the
choices the rules turn on (rules fields, phase, sizes, obligations) are draws of their own, so
hypothesis can shrink them.
"""

from __future__ import annotations

import random
from typing import Any

from hypothesis import assume
from hypothesis import strategies as st

from rummy500_env.engine.cards import card_str
from rummy500_env.engine.rules import PRESETS, Rules
from tests.reference import model
from tests.reference.model import JK, NATURALS, Place

IN_PLAY = ("draw", "play", "call", "called")
MOVES = ("draw", "play", "play", "play", "call", "called")
"""Phases to apply actions in, the play phase (where turns end) weighted."""
PHASES = ("draw", "play", "play", "call", "called", "over")
"""Phases a position can be built in; "over" is hand_over or game_over, as its totals say."""


def _ordinal_card(suit: int, ordinal: int) -> int:
    return suit * 13 + (0 if ordinal == 14 else ordinal - 1)


def _three_card_melds() -> list[tuple[int, ...]]:
    sets = [
        tuple(r + 13 * s for s in range(4) if s != missing)
        for r in range(13)
        for missing in range(4)
    ]
    runs = [
        tuple(_ordinal_card(s, o) for o in range(lo, lo + 3))
        for s in range(4)
        for lo in range(1, 13)
    ]
    edges = [
        tuple(_ordinal_card(s, o) for o in range(lo, lo + 3)) for s in range(4) for lo in (1, 12)
    ]
    wraps = [(s * 13 + 12, s * 13, s * 13 + 1) for s in range(4)]  # K-A-2: never a run
    across = [
        (s * 13 + 11, s * 13 + 12, s * 13 + 13) for s in range(3)
    ]  # Q-K of one suit, A of the next
    return sets + runs + 3 * edges + wraps + across


THREES = _three_card_melds()
"""Three-card melds to plant: every one, the run edges A-2-3 and Q-K-A four times, and the
near misses K-A-2 and Q-K-A across two suits (docs/rules.md §1 "Melds": no run wraps)."""


@st.composite
def rules_and_field(draw: st.DrawFn, calls: bool | None = None) -> tuple[Any, Rules]:
    """A rules configuration (a preset and any fields over it) and how a position names it."""
    name = draw(st.sampled_from(sorted(PRESETS)))
    over: dict[str, Any] = {}
    players = draw(st.sampled_from((2, 2, 2, 3, 4, 5, 8)))
    if players != 2:
        over["players"] = players
    decks = draw(st.sampled_from((None, None, 1, 2)))
    if decks is not None:
        over["decks"] = decks
    if players == 8 and decks == 1:
        over["hand_size"] = 6  # seven cards each would leave none for the pile (§2)
    for key, values in (
        ("scoring", ("pip", "fives")),
        ("stock_out", ("pile_only", "ends_hand", "pile_must_use")),
        ("jokers", (0, 2)),
        ("rummy_calls", (False, False, True) if calls is None else (calls,)),
        ("discard_to_go_out", (False, False, False, True)),
        ("top_card_must_meld", (False, False, False, True)),
        ("winner_must_go_out", (False, False, False, True)),
        ("target", (500, 500, 80)),
    ):
        value = draw(st.sampled_from(values))
        if value != Rules.preset(name).to_dict()[key] or draw(st.booleans()):
            over[key] = value
    rules = Rules.preset(name, **over)
    return (name if not over else rules.to_dict()), rules


class _Builder:
    """Deals a position out of the packs of some rules, one place at a time."""

    def __init__(self, rules: Rules, rnd: random.Random) -> None:
        self.rules, self.rnd = rules, rnd
        self.pool = [c for c in NATURALS for _ in range(rules.deck_count)]
        self.pool += [JK] * rules.joker_count
        rnd.shuffle(self.pool)
        self.total = len(self.pool)

    def grab(self, card: int) -> bool:
        if card in self.pool:
            self.pool.remove(card)
            return True
        return False

    def some(self, k: int) -> list[int]:
        k = min(k, len(self.pool))
        out, self.pool = self.pool[:k], self.pool[k:]
        return out

    def meld(self) -> list[Place] | None:
        """A set or a run as it could lie on the table, jokers included, or None."""
        rnd, n = self.rnd, self.rules.players
        if rnd.random() < 0.4:
            r = rnd.randrange(13)
            cards = [r + 13 * s for s in rnd.sample(range(4), rnd.choice((3, 3, 4)))]
        else:
            length = rnd.choice((3, 3, 4, 5, 6, 12, 13, 13, 13))
            lo = rnd.randint(1, 15 - length)
            s = rnd.randrange(4)
            cards = [_ordinal_card(s, o) for o in range(lo, lo + length)]
        places: list[Place] = []
        for c in cards:
            wild = self.rules.jokers and rnd.random() < 0.15 and self.grab(JK)
            if not wild and not self.grab(c):
                wild = self.grab(JK)
                if not wild:
                    self.pool += [JK if j else p for p, j, _ in places]
                    return None
            places.append((c, bool(wild), rnd.randrange(n)))
        if not model.could_have_started(places):
            self.pool += [JK if j else p for p, j, _ in places]
            return None
        return places

    def planted(self, melds: list[list[Place]], size: int) -> tuple[list[int], list[int]]:
        """A hand of `size` cards with meld pieces in it, and cards for the pile that complete
        some of them (the pile's share is the second list)."""
        rnd = self.rnd
        hand: list[int] = []
        for_pile: list[int] = []
        for _ in range(rnd.choice((0, 1, 2, 2, 3, 4))):
            three = list(rnd.choice(THREES))
            rnd.shuffle(three)
            keep = rnd.choice((2, 3, 3))
            hand += [c for c in three[:keep] if self.grab(c)]
            if keep == 2 and rnd.random() < 0.7 and self.grab(three[2]):
                for_pile.append(three[2])
        near = [x for m in melds for x in _near(m)]
        for x in rnd.sample(near, min(len(near), rnd.choice((0, 1, 2, 3)))):
            if self.grab(x):
                (hand if rnd.random() < 0.6 else for_pile).append(x)
        if self.rules.jokers and rnd.random() < 0.75 and self.grab(JK):
            hand.append(JK)
        if self.rules.jokers and rnd.random() < 0.3 and self.grab(JK):
            for_pile.append(JK)
        extra = hand[size:]
        hand = hand[:size]
        self.pool += extra
        hand += self.some(size - len(hand))
        return hand, for_pile


def _near(meld: list[Place]) -> list[int]:
    """Cards that fit a meld, and those that would if it were not full: the ranks of a set,
    the cards beyond a run's ends (the other copy of a full run's ace, with two decks)."""
    cards = model.stands_for(meld)
    if not model.is_run(meld):
        return [model.rank(cards[0]) + 13 * s for s in range(4)]
    s = model.suit(cards[0])
    return [c for c in (s * 13 + o % 13 for o in range(13)) if model.fits(meld, c)] + [
        s * 13,  # the ace, either end
        s * 13 + (model.rank(cards[0]) - 1) % 13,
        s * 13 + (model.rank(cards[-1]) + 1) % 13,
    ]


@st.composite
def positions(draw: st.DrawFn, phases: tuple[str, ...] = PHASES) -> dict[str, Any]:
    """A position dict that `Game.from_dict` must accept, in one of `phases`."""
    rules_field, rules = draw(rules_and_field())
    rnd = draw(st.randoms(use_true_random=False))
    allowed = [p for p in phases if rules.rummy_calls or p not in ("call", "called")]
    phase = draw(st.sampled_from(allowed))
    n = rules.players
    b = _Builder(rules, rnd)
    melds = []
    for _ in range(draw(st.integers(0, 4))):
        m = b.meld()
        if m is not None and len(b.pool) - len(m) >= b.total // 2:
            melds.append(m)
        elif m is not None:
            b.pool += [JK if j else c for c, j, _ in m]
    turn, dealer = rnd.randrange(n), rnd.randrange(n)
    size = draw(st.one_of(st.integers(1, 3), st.integers(1, min(14, len(b.pool) // 3))))
    hand, for_pile = b.planted(melds, size)
    pile = b.some(draw(st.integers(0, min(12, len(b.pool) // 3))))
    for c in for_pile:
        pile.insert(rnd.randint(0, len(pile)), c)
    stock_size = draw(st.sampled_from((0, 1, 1, 2, 5, None)))
    needs_stock = phase in ("draw", "call", "called") and rules.stock_out == "ends_hand"
    if needs_stock and stock_size == 0:
        stock_size = 1  # docs/rules.md §2 ends_hand: no turn starts on an empty stock
    hands, stock = _deal_others(b, n, turn, hand, stock_size)
    for q in range(n):  # few cards for many players: a pile or a hand card goes to an empty hand
        if not hands[q]:
            donors = [h for h in (pile, hand) if len(h) > 1]
            assume(donors)
            hands[q].append(donors[0].pop(0))
    if needs_stock and not stock:
        spare = [h for h in (*hands, pile) if len(h) > 1]
        assume(spare)  # every card went to a hand; a stock is needed here (rare)
        stock.append(spare[0].pop())
    assume(phase != "draw" or stock or pile)  # §1: with both empty the hand is over
    d: dict[str, Any] = {
        "rules": rules_field,
        "dealer": dealer,
        "turn": turn,
        "phase": phase,
        "hands": [[card_str(c) for c in h] for h in hands],
        "stock": [card_str(c) for c in stock],
        "pile": [card_str(c) for c in pile],
        "melds": [
            {"cards": [model._place_text(c, j) for c, j, _ in m], "owners": [o for *_, o in m]}
            for m in melds
        ],
        "totals": draw(st.lists(st.integers(-150, 600), min_size=n, max_size=n)),
        "taken_top": None,
        "must_play": None,
        "known": [[card_str(c) for c in rnd.sample(h, rnd.randint(0, len(h)))] for h in hands],
        "turns": draw(st.integers(0, 30)),
        "hands_played": draw(st.integers(0, 4)),
        "seed": 0,
    }
    if rules.rummy_calls:
        d["discarder"] = None
    _limits(draw, d, rules)
    _phase_fields(draw, d, rules, rnd)
    return d


def _deal_others(
    b: _Builder, n: int, turn: int, hand: list[int], stock_size: int | None
) -> tuple[list[list[int]], list[int]]:
    """Every other player gets at least one card; the stock `stock_size` (None: what is left
    once the others hold 1 to 8 each); the rest goes to the other hands."""
    hands: list[list[int]] = [[] for _ in range(n)]
    hands[turn] = hand
    others = [q for q in range(n) if q != turn]
    for q in others:
        hands[q] = b.some(b.rnd.randint(1, 8) if stock_size is None else 1)
    if stock_size is None:
        return hands, b.some(len(b.pool))
    stock = b.some(min(stock_size, max(0, len(b.pool))))
    while b.pool:
        hands[b.rnd.choice(others)] += b.some(1)
    return hands, stock


def _limits(draw: st.DrawFn, d: dict[str, Any], rules: Rules) -> None:
    """`turn_limit` and `hand_limit` near the counts sometimes, so that the next discard or
    hand end reaches them (docs/rules.md §4)."""
    turn_limit = draw(st.sampled_from((200, None, d["turns"] + 1, d["turns"] + 2)))
    hand_limit = draw(st.sampled_from((100, None, d["hands_played"] + 1)))
    if (turn_limit, hand_limit) != (rules.turn_limit, rules.hand_limit):
        fields = rules.to_dict() | {"turn_limit": turn_limit, "hand_limit": hand_limit}
        d["rules"] = fields


def _phase_fields(draw: st.DrawFn, d: dict[str, Any], rules: Rules, rnd: random.Random) -> None:
    """What the phase needs: the take of this turn, a call window's discarder, a hand end."""
    turn, phase, hand = d["turn"], d["phase"], d["hands"][d["turn"]]
    others = [q for q in range(rules.players) if q != turn]
    if phase == "play":
        how = draw(st.sampled_from(("free", "taken", "taken", "owed", "owed", "taken owed")))
        card = rnd.choice(hand)
        if "taken" in how:
            d["taken_top"] = card
        if "owed" in how:
            d["must_play"] = card
    elif phase in ("call", "called"):
        d["discarder"] = rnd.choice(others)
        if phase == "called" and draw(st.booleans()):
            d["must_play"] = rnd.choice(hand)
    elif phase == "over":
        if draw(st.booleans()):
            gone = rnd.randrange(rules.players)
            d["stock"] += d["hands"][gone]
            d["hands"][gone] = []
            d["known"][gone] = []
        d["hands_played"] += 1
        s = model.read(d | {"phase": "hand_over"})
        totals = [t + h for t, h in zip(s.totals, model.hand_scores(s), strict=True)]
        d["phase"] = "game_over" if model.game_ends(s, totals) else "hand_over"
