"""The flat action index of the RL surface: engine `Action` <-> int, and the action mask.

One ``Discrete(N)`` per rules configuration, laid out in named ranges (base offsets below):

============  =====================  =========================================================
range         ids                    meaning
============  =====================  =========================================================
``DRAW``      0                      draw the top card of the stock
``PILE``      1 .. P                 take the pile down to depth d = id - 1: d = 0 is the top
                                     card (``take``), d >= 1 digs the card d below the top
                                     together with every card above it
``DECLINE``   P + 1                  stock empty: take nothing, ending the hand
``MELD``      P + 2 .. P + 101       the 100 three-card melds, in `melds.MELD_TEMPLATES`
                                     order: 52 sets (rank A..K; for each, leaving out S, H,
                                     D, C in turn), then 48 runs (suit C, D, H, S; for each,
                                     A-2-3 up to Q-K-A). Longer melds grow by lay-offs.
``LAYOFF``    P + 102 .. P + 257     lay card c off: id = base + 3 c + t with t = 0 on a set,
                                     1 below a run's low end, 2 above a run's high end; the
                                     meld is the lowest-numbered one that takes c there
``DISCARD``   P + 258 .. P + 309     discard card c: id = base + c
============  =====================  =========================================================

P = `max_pile` = deck size − players (each player holds a card whenever someone draws), so
N = P + 310: 360 for the standard two-player game. Card ids are those of `cards`.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from rummy500_env.engine.cards import ByteTables, byte_tables, card_str, gather
from rummy500_env.engine.errors import IllegalActionError
from rummy500_env.engine.game import Game
from rummy500_env.engine.melds import MELD_TEMPLATES, layoff_end, template_index
from rummy500_env.engine.notation import DECLINE, DRAW, TAKE, Action, layoff_action
from rummy500_env.engine.rules import Rules

ENCODING_VERSION = 1
"""Bump on any change to the id layout (exported policies record it)."""


@functools.cache
def _byte_ids(base: int) -> ByteTables[int]:
    """The ids `base + card` of a mask's cards, for `gather` (one table per id base)."""
    return byte_tables(lambda c: base + c, 52)


class ActionCodec:
    """Maps engine actions to flat ids and back for one rules configuration."""

    def __init__(self, rules: Rules) -> None:
        self.rules = rules
        self.max_pile = rules.deck_size - rules.players
        self.DRAW = 0
        self.PILE = 1
        self.DECLINE = self.PILE + self.max_pile
        self.MELD = self.DECLINE + 1
        self.LAYOFF = self.MELD + len(MELD_TEMPLATES)
        self.DISCARD = self.LAYOFF + 3 * 52
        self.size = self.DISCARD + 52
        self._static: dict[Action, int] = {DRAW: self.DRAW, TAKE: self.PILE, DECLINE: self.DECLINE}
        for i, t in enumerate(MELD_TEMPLATES):
            self._static[Action("meld", t)] = self.MELD + i
        for c in range(52):
            self._static[Action("discard", (c,))] = self.DISCARD + c
        self._discard_ids = _byte_ids(self.DISCARD)
        self._by_id: list[Action | None] = [None] * self.size
        for a, i in self._static.items():
            self._by_id[i] = a

    def ranges(self) -> dict[str, tuple[int, int]]:
        """Each named range as (first id, last id)."""
        return {
            "draw": (self.DRAW, self.DRAW),
            "pile": (self.PILE, self.DECLINE - 1),
            "decline": (self.DECLINE, self.DECLINE),
            "meld": (self.MELD, self.LAYOFF - 1),
            "layoff": (self.LAYOFF, self.DISCARD - 1),
            "discard": (self.DISCARD, self.size - 1),
        }

    def encode(self, game: Game, action: Action) -> int:
        """The id of an engine action in this position (digs and lay-offs depend on it)."""
        i = self._static.get(action)
        if i is not None:
            return i
        if action.kind == "dig":
            return self.PILE + self._dig_depth(game, action)
        if action.kind == "layoff":
            c = action.cards[0]
            return self.LAYOFF + 3 * c + layoff_end(game.melds[action.target], c)
        if action.kind == "meld" and (t := template_index(action.cards)) is not None:
            return self.MELD + t
        raise ValueError(f"{action} has no flat id (only three-card melds are in the space)")

    def _dig_depth(self, game: Game, action: Action) -> int:
        pile, card, k = game.pile, action.cards[0], 0
        for depth in range(1, len(pile)):
            if pile[-1 - depth] == card:
                k += 1
                if k == action.copy:
                    return depth
        raise IllegalActionError(f"{action}: {card_str(card)} is not buried in the pile")

    def decode(self, game: Game, index: int) -> Action:
        """The engine action an id stands for in this position.

        Raises `IllegalActionError` when the id names nothing here (a depth below the pile, a
        lay-off no meld takes); legality is the engine's to judge.
        """
        if type(index) is int:
            i = index
        elif isinstance(index, np.integer):
            i = int(index)
        else:
            raise IllegalActionError(f"action must be an int id, got {index!r}")
        if not 0 <= i < self.size:
            raise IllegalActionError(f"action id {i} is out of range 0..{self.size - 1}")
        static = self._by_id[i]  # draw, take, decline, melds, discards
        if static is not None:
            return static
        if i < self.DECLINE:  # a dig
            depth, pile = i - self.PILE, game.pile
            if depth >= len(pile):
                raise IllegalActionError(
                    f"action {i} digs to depth {depth}, but the pile holds {len(pile)} cards"
                )
            card = pile[-1 - depth]
            copy = 1 + sum(1 for x in pile[-depth:-1] if x == card)
            return Action("dig", (card,), -1, copy)
        c, end = divmod(i - self.LAYOFF, 3)  # a lay-off: the only ids left
        for m_index, m in enumerate(game.melds):
            if c in m.fits and layoff_end(m, c) == end:
                return layoff_action(c, m_index)
        where = ("a set", "a run's low end", "a run's high end")[end]
        raise IllegalActionError(f"action {i}: no meld takes {card_str(c)} on {where}")

    def legal_ids(self, game: Game) -> list[int]:
        """Ids of the engine's legal actions, in `legal_actions` order (with two decks several
        lay-offs may share one id), read from the engine's parts (`Game.draw_options`,
        `Game.play_options`), which skips building `Action` objects."""
        if game.phase == "draw":
            draw, take, digs, decline = game.draw_options()
            out = [self.DRAW] if draw else []
            if take:
                out.append(self.PILE)
            pile = self.PILE
            out += [pile + depth for depth, _, _ in digs]
            if decline:
                out.append(self.DECLINE)
            return out
        if game.phase == "play":
            templates, layoffs, discards = game.play_options()
            meld, layoff, melds = self.MELD, self.LAYOFF, game.melds
            out = [meld + t for t in templates] if templates else []
            for c, i in layoffs:
                out.append(layoff + 3 * c + layoff_end(melds[i], c))
            return out + gather(discards, self._discard_ids)
        return []

    def mask(self, game: Game) -> np.ndarray[Any, np.dtype[np.int8]]:
        """int8 mask of the legal ids."""
        m = np.zeros(self.size, dtype=np.int8)
        m[self.legal_ids(game)] = 1
        return m

    def action_to_str(self, game: Game, index: int) -> str:
        """The engine notation of an id in this position."""
        return str(self.decode(game, index))

    def str_to_action(self, game: Game, text: str) -> int:
        """The id of an action written in the engine notation."""
        return self.encode(game, Action.parse(text))
