"""`GreedyAgent`: puts down all it can, takes only what it can use at once, sheds high cards."""

from __future__ import annotations

from typing import Any

import numpy as np

from rummy500_env.agents.heuristics import layoff_value, partial_cards, plan, template_value
from rummy500_env.agents.view import Decoded, View, ViewDecoder
from rummy500_env.engine.rules import Rules


class GreedyAgent:
    """A simple, honest baseline (issue 4):

    * melds and lays off everything it can, most valuable first;
    * takes the top discard only when it completes a meld or a lay-off at once;
    * digs when the points the dig puts on the table this turn exceed the value of the extra
      cards it must take (those its plan leaves in hand);
    * discards its highest-value card that is in no partial meld.
    """

    def __init__(self, rules: Rules | str | dict[str, Any] = "standard") -> None:
        self.decoder = ViewDecoder(rules)
        self.scoring = self.decoder.rules.scoring

    def act(self, observation: np.ndarray[Any, Any], action_mask: np.ndarray[Any, Any]) -> int:
        view = self.decoder.view(observation)
        legal = self.decoder.legal(view, action_mask)
        if not legal:
            raise ValueError("the action mask has no legal action: is this agent to act?")
        if view.phase == "draw":
            return self.choose_draw(view, legal).id
        return self.choose_play(view, legal).id

    def choose_draw(self, view: View, legal: list[Decoded]) -> Decoded:
        """The pile take worth most (`pickup_value` > 0), else the stock, else decline."""
        base, _ = plan(view.hand, view.table_melds, self.scoring)
        best, best_net = None, 0.0
        for a in legal:
            if a.kind in ("take", "dig"):
                net = self.pickup_value(view, a, base)
                if net > best_net:
                    best, best_net = a, net
        if best is not None:
            return best
        return next((a for a in legal if a.kind == "draw"), None) or next(
            (a for a in legal if a.kind == "decline"), legal[0]
        )

    def pickup_value(self, view: View, a: Decoded, base: int) -> float:
        """Net points of taking the pile down to `a`, given `base` points the hand can put
        down now: a top card only if it is used at once; a dig if what it puts down exceeds
        the value of the taken cards left over."""
        value, used = plan(view.hand + list(a.cards), view.table_melds, self.scoring)
        gain = value - base
        if a.kind == "take":
            return gain if used[a.cards[0]] and gain > 0 else 0.0
        return gain - sum(view.values[c] for c in a.cards if not used[c])

    def choose_play(self, view: View, legal: list[Decoded]) -> Decoded:
        melds = [a for a in legal if a.kind == "meld"]
        if melds:
            return max(
                melds, key=lambda a: template_value(a.id - self.decoder.codec.MELD, self.scoring)
            )
        layoffs = [a for a in legal if a.kind == "layoff"]
        if layoffs:
            return max(layoffs, key=lambda a: self.layoff_value(view, a))
        discards = [a for a in legal if a.kind == "discard"]
        partial = partial_cards(view.hand)
        loose = [a for a in discards if a.cards[0] not in partial] or discards
        return max(loose, key=lambda a: (view.values[a.cards[0]], a.cards[0]))

    def layoff_value(self, view: View, a: Decoded) -> int:
        """What the lay-off `a` puts on the table (an ace laid below a 2 scores low)."""
        return layoff_value(view.table_melds, a.cards[0], a.end, self.scoring)

    def __repr__(self) -> str:
        return "GreedyAgent()"
