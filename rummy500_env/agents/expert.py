"""`ExpertAgent`: a stronger heuristic that plays the pile, the clock and the opponents."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rummy500_env.agents.bot import joker_of, template
from rummy500_env.agents.greedy import GreedyAgent, callers
from rummy500_env.agents.heuristics import (
    TEMPLATE_MELDS,
    neighbours,
    plan,
    start_value,
    template_value,
)
from rummy500_env.engine.cards import JOKER, Card
from rummy500_env.engine.notation import Action
from rummy500_env.engine.rules import Rules
from rummy500_env.engine.seat_view import SeatView

JOKER_PROSPECT = 10.0
"""What a joker kept in hand is worth towards melds (`ExpertAgent.prospect`): it fits any."""


class ExpertAgent(GreedyAgent):
    """Greedy's play with judgement:

    * values partial melds by their live outs and keeps them early; sheds points as the stock
      thins or an opponent is close to going out (the liability weight grows);
    * weighs a dig's extra cards by that liability weight instead of at face value;
    * remembers what each opponent took from the pile and never feeds their sets, runs or the
      table's melds when another discard will do (the pile is public and can be dug);
    * prefers high aces: keeps an ace with prospects rather than laying it off low early;
    * holds a cheap meld back only when putting it down would open a lay-off spot for a card an
      opponent is known to hold while the stock is still long.

    The weights were tuned against `GreedyAgent` on duplicate deals (dig liability 1.0, i.e.
    Greedy's rule, won 28%; 0.3 with prospects weighted 3 won 67% of 300 games).

    With jokers and calls (docs/rules.md §5): natural melds before melds with a joker, jokers
    down whenever they fit (never discarded while a card can go), a call weighed as a dig; with
    calls a discard's harm also counts the pairs an opponent could call it with (`call_risk`
    times the card's value per pair of unseen or known opponent cards: 3 won more hands
    against `GreedyAgent` than 0.3, 1 or 2, over 400 deals each).
    """

    def __init__(
        self,
        rules: Rules | str | dict[str, Any] = "standard",
        dig_liability: float = 0.3,
        prospect_weight: float = 3.0,
        danger_weight: float = 1.5,
        hold_back_melds: bool = True,
        call_risk: float = 3.0,
    ) -> None:
        super().__init__(rules)
        self.dig_liability, self.prospect_weight = dig_liability, prospect_weight
        self.danger_weight, self.hold_back_melds = danger_weight, hold_back_melds
        self.call_risk = call_risk if self.calls else 0.0
        r = self.rules
        self.initial_stock = max(1, r.deck_size - r.players * r.cards_per_hand - 1)

    # --- the clock ----------------------------------------------------------------------

    def urgency(self, view: SeatView) -> float:
        """How much a card left in hand hurts now: 1 early, up to 3 late or when an opponent
        is about to go out."""
        w = 1.0 + max(0.0, 1.0 - view.stock_size / self.initial_stock)
        if min(view.hand_sizes[q] for q in view.opponents) <= 2:
            w += 1.0
        return w

    # --- draw -----------------------------------------------------------------------------

    def pickup_value(self, view: SeatView, a: Action, base: int) -> float:
        """Points put down now, minus the taken cards left over weighted by the urgency, plus
        their prospects; a top card is still only taken to be used at once."""
        cards = self.taken(view, a)
        hand = [*view.hand, *cards]
        value, used = plan(hand, view.melds, self.scoring)
        left = [c for c in cards if not used[c]]
        liability = sum(self.values[c] for c in left) * self.urgency(view) * self.dig_liability
        prospects = self.prospect_weight * sum(self.prospect(c, hand, view) for c in left)
        net = value - base - liability + prospects
        if a.kind == "take" and not used[cards[0]]:
            net = min(net, 0.0)
        return net

    # --- play -----------------------------------------------------------------------------

    def choose_play(self, view: SeatView, legal: list[Action]) -> Action:
        w = self.urgency(view)
        ids = {a: self.codec.encode(view, a) for a in legal}
        melds = [a for a in legal if a.kind == "meld" and not a.jokers]
        if view.must_play is None and self.hold_back_melds:
            melds = [a for a in melds if not self.hold_back(view, a)]
        if melds:
            return max(melds, key=lambda a: self.meld_score(a, view))
        wild = [a for a in legal if a.jokers]  # a joker's meld or lay-off (§5)
        if wild and not [a for a in legal if a.kind == "layoff" and not a.jokers]:
            return max(wild, key=lambda a: (a.kind == "meld", self.play_value(view, a), -ids[a]))
        layoffs = [a for a in legal if a.kind == "layoff" and not a.jokers]
        if view.must_play is None and w < 1.5:
            # An ace laid off low scores 1 (or 5): less on the table than in hand. Early, keep
            # one that has better prospects.
            layoffs = [
                a
                for a in layoffs
                if not (
                    self.layoff_value(view, a) < self.values[a.cards[0]]
                    and self.prospect(a.cards[0], view.naturals, view) > 3
                )
            ]
        if layoffs:
            return max(layoffs, key=lambda a: self.layoff_value(view, a))
        if wild:
            return max(wild, key=lambda a: (a.kind == "meld", self.play_value(view, a), -ids[a]))
        done = next((a for a in legal if a.kind == "done"), None)
        discards = [a for a in legal if a.kind == "discard" and a.cards[0] != JOKER]
        if done is not None and not [a for a in legal if a.kind in ("meld", "layoff")]:
            return done
        if not discards:  # only held-back melds, kept aces or jokers are left: play them
            return max(legal, key=lambda a: ids[a])
        return min(discards, key=lambda a: self.keep_score(a.cards[0], view, w))

    def meld_score(self, a: Action, view: SeatView) -> float:
        """The meld's table value, less 10 for a run that scores its ace low: a high ace or an
        ace set is preferred when there is a choice."""
        t = template(a)
        m = TEMPLATE_MELDS[t]
        return start_value(t, joker_of(a), self.scoring) - (10 if m.is_run and m.lo == 1 else 0)

    def hold_back(self, view: SeatView, a: Action) -> bool:
        """Keep a cheap run in hand while the stock is long if laying it down would give a
        known opponent card a place to go."""
        t = template(a)
        m = TEMPLATE_MELDS[t]
        if not m.is_run or view.stock_size < 0.6 * self.initial_stock:
            return False
        if min(view.hand_sizes[q] for q in view.opponents) < 5:
            return False
        if template_value(t, self.scoring) >= 15:
            return False
        known = {c for q in view.opponents for c in view.known[q]}
        return any(c in known for c in m.fits)  # the cards the new run would take

    # --- discard ----------------------------------------------------------------------------

    def keep_score(self, card: int, view: SeatView, w: float) -> float:
        """What keeping `card` is worth (discard the lowest): its prospects, minus its weight
        in hand, plus the harm of handing it to an opponent."""
        if card == JOKER:  # kept while any other card can go (docs/rules.md §5)
            return 1e6
        value = self.values[card]
        score = self.prospect_weight * self.prospect(card, view.naturals, view) - value * w
        score += self.danger_weight * self.danger(card, view)
        if card == view.taken_top:
            score += 1000.0
        return score

    def prospect(self, card: int, hand: Sequence[Card], view: SeatView) -> float:
        """Expected worth of `card` towards melds: for each meld it could join, the meld's
        value times a chance that grows with the live outs (a joker: `JOKER_PROSPECT`)."""
        if card == JOKER:
            return JOKER_PROSPECT
        values = self.values
        held = set(hand)
        dead = {c for m in view.melds for c in m.cards if not m.jokers >> c & 1}
        dead |= {c for q in view.opponents for c in view.known[q]}
        pile = set(view.pile)
        total = 0.0
        for a, b in neighbours(card):
            have = (a in held) + (b in held)
            if have == 0:
                continue
            missing = [c for c in (a, b) if c not in held]
            if any(c in dead and c not in held for c in missing):
                continue
            chance = 1.0 if not missing else (0.35 if missing[0] in pile else 0.2)
            total += chance * (values[a] + values[b] + values[card]) / 3
        return total

    def danger(self, card: int, view: SeatView) -> float:
        """Harm of discarding `card`: it fits a table meld, or completes or builds a meld with
        cards an opponent is known to hold; with calls, any pair an opponent may hold lets it
        call the card (docs/rules.md §5)."""
        harm, values = 0.0, self.values
        if self.call_risk:
            could_hold = set(view.unseen()) | {c for q in view.opponents for c in view.known[q]}
            harm += self.call_risk * callers(card, could_hold) * values[card]
        if any(card in m.fits for m in view.melds):
            harm += 1.5 * values[card] + 5
        for known in (view.known[q] for q in view.opponents):
            ks = set(known)
            if not ks:
                continue
            for a, b in neighbours(card):
                if a in ks and b in ks:
                    harm += values[a] + values[b] + values[card] + 10
                elif a in ks or b in ks:
                    harm += 0.25 * values[card]
        return harm

    def __repr__(self) -> str:
        return "ExpertAgent()"
