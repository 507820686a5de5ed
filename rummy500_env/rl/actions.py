"""The flat action index of the RL surface: engine `Action` <-> int, and the action mask.

One ``Discrete(N)`` per rules configuration, laid out in named ranges (base offsets below):

================  =====================  =====================================================
range             ids                    meaning
================  =====================  =====================================================
``DRAW``          0                      draw the top card of the stock
``PILE``          1 .. P                 take the pile down to depth d = id - 1: d = 0 is the
                                         top card (``take``), d >= 1 digs the card d below
                                         the top together with every card above it
``DECLINE``       P + 1                  stock empty: take nothing, ending the hand
``MELD``          P + 2 .. P + 101       the 100 three-card melds, in `melds.MELD_TEMPLATES`
                                         order: 52 sets (rank A..K; for each, leaving out S,
                                         H, D, C in turn), then 48 runs (suit C, D, H, S; for
                                         each, A-2-3 up to Q-K-A). Longer melds grow by
                                         lay-offs.
``LAYOFF``        P + 102 .. P + 257     lay card c off: id = base + 3 c + t with t = 0 on a
                                         set, 1 below a run's low end, 2 above a run's high
                                         end; the meld is the lowest-numbered one that takes
                                         c there
``DISCARD``       P + 258 .. P + 309     discard card c: id = base + c
================  =====================  =====================================================

P = `max_pile` = deck size − players (each player holds a card whenever someone draws), so
N = P + 310: 360 for the standard game. Card ids are those of `cards`.

With ``jokers=2`` (docs/rules.md §5; the deck size, so P, counts the jokers) three ranges
follow, and with ``rummy_calls=True`` three more after them (J = 457 with jokers, else 0):

================  ======================  ====================================================
``JOKER_MELD``    P + 310 .. P + 609      a three-card start with one joker: template t (the
                                          `MELD` order) with the joker in place k = 0, 1, 2
                                          of its table order and its other two cards
                                          natural: id = base + 3 t + k
``JOKER_LAYOFF``  P + 610 .. P + 765      lay a joker off standing for card c: id = base +
                                          3 c + t, t and the meld as for `LAYOFF`
``JOKER_DISCARD`` P + 766                 discard a joker
``CALL``          P + 310 + J ..          call "Rummy!" on the pile card at depth d = id −
                  2 P + 309 + J           base (d = 0 the top card), taking it and every card
                                          above it
``PASS``          2 P + 310 + J           let the call window go on without calling
``DONE``          2 P + 311 + J           end a caller's out-of-turn play
================  ======================  ====================================================

N is then P + 767 with jokers, 2 P + 312 with calls, 2 P + 769 with both (the standard
two-player game with both: P = 52, N = 873). With neither, the ids are exactly the ones of
the first table: a policy trained on them keeps working (`ENCODING_VERSION` unchanged).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from rummy500_env.engine.cards import JOKER, ByteTables, Card, byte_tables, card_str, gather
from rummy500_env.engine.errors import IllegalActionError
from rummy500_env.engine.game import Game
from rummy500_env.engine.melds import MELD_TEMPLATES, Meld, layoff_end, template_index
from rummy500_env.engine.notation import (
    DECLINE,
    DISCARD_ACTIONS,
    DONE,
    DRAW,
    JOKER_TEMPLATE_ACTIONS,
    PASS,
    TAKE,
    Action,
    joker_layoff_action,
    layoff_action,
    pile_action,
    pile_depth,
)
from rummy500_env.engine.rules import Rules

ENCODING_VERSION = 1
"""Bump on any change to the id layout (exported policies record it). The joker and call
ranges only extend the layouts of rules that have them, so the others keep version 1."""


class Table(Protocol):
    """What the id of a take, dig, call or lay-off depends on: the pile (bottom first) and the
    table's melds. A `Game` and a `SeatView` both have them."""

    @property
    def pile(self) -> Sequence[Card]: ...

    @property
    def melds(self) -> Sequence[Meld]: ...


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
        end = self.DISCARD + 52
        # The ranges of §5: -1 where the rules have none.
        self.JOKER_MELD = self.JOKER_LAYOFF = self.JOKER_DISCARD = -1
        self.CALL = self.PASS = self.DONE = -1
        if rules.jokers:
            self.JOKER_MELD = end
            self.JOKER_LAYOFF = self.JOKER_MELD + 3 * len(MELD_TEMPLATES)
            self.JOKER_DISCARD = self.JOKER_LAYOFF + 3 * 52
            end = self.JOKER_DISCARD + 1
        if rules.rummy_calls:
            self.CALL = end
            self.PASS = self.CALL + self.max_pile
            self.DONE = self.PASS + 1
            end = self.DONE + 1
        self.size = end
        self._plain = not (rules.jokers or rules.rummy_calls)
        """Neither jokers nor calls: `legal_ids` takes the path of the standard game."""
        self._static: dict[Action, int] = {DRAW: self.DRAW, TAKE: self.PILE, DECLINE: self.DECLINE}
        for i, t in enumerate(MELD_TEMPLATES):
            self._static[Action("meld", t)] = self.MELD + i
        for c in range(52):
            self._static[DISCARD_ACTIONS[c]] = self.DISCARD + c
        if rules.jokers:
            for (template, k), a in JOKER_TEMPLATE_ACTIONS.items():
                self._static[a] = self.JOKER_MELD + 3 * template + k
            self._static[DISCARD_ACTIONS[JOKER]] = self.JOKER_DISCARD
        if rules.rummy_calls:
            self._static[PASS], self._static[DONE] = self.PASS, self.DONE
        self._discard_ids = _byte_ids(self.DISCARD)
        self._by_id: list[Action | None] = [None] * self.size
        for a, i in self._static.items():
            self._by_id[i] = a

    def __reduce__(self) -> tuple[type[ActionCodec], tuple[Rules]]:
        """Pickled as its rules, which everything here derives from (a compiled build,
        setup.py, cannot rebuild its objects any other way)."""
        return type(self), (self.rules,)

    def ranges(self) -> dict[str, tuple[int, int]]:
        """Each named range as (first id, last id), in id order."""
        out = {
            "draw": (self.DRAW, self.DRAW),
            "pile": (self.PILE, self.DECLINE - 1),
            "decline": (self.DECLINE, self.DECLINE),
            "meld": (self.MELD, self.LAYOFF - 1),
            "layoff": (self.LAYOFF, self.DISCARD - 1),
            "discard": (self.DISCARD, self.DISCARD + 51),
        }
        if self.rules.jokers:
            out["joker_meld"] = (self.JOKER_MELD, self.JOKER_LAYOFF - 1)
            out["joker_layoff"] = (self.JOKER_LAYOFF, self.JOKER_DISCARD - 1)
            out["joker_discard"] = (self.JOKER_DISCARD, self.JOKER_DISCARD)
        if self.rules.rummy_calls:
            out["call"] = (self.CALL, self.PASS - 1)
            out["pass"] = (self.PASS, self.PASS)
            out["done"] = (self.DONE, self.DONE)
        return out

    def encode(self, game: Table, action: Action) -> int:
        """The id of an engine action in this position (digs, calls and lay-offs depend on
        it)."""
        i = self._static.get(action)
        if i is not None:
            return i
        if action.kind in ("dig", "call") and (action.kind == "dig" or self.CALL >= 0):
            depth = self._depth(game, action)
            return (self.PILE if action.kind == "dig" else self.CALL) + depth
        if action.kind == "layoff" and (not action.jokers or self.JOKER_LAYOFF >= 0):
            c = action.cards[0]
            base = self.JOKER_LAYOFF if action.jokers else self.LAYOFF
            return base + 3 * c + layoff_end(game.melds[action.target], c)
        if action.kind == "meld" and not action.jokers:
            t = template_index(action.cards)
            if t is not None:
                return self.MELD + t
        raise ValueError(
            f"{action} has no flat id under these rules (only three-card melds, with at most "
            "one joker, are in the space; jokers and calls only where the rules have them)"
        )

    def _depth(self, game: Table, action: Action) -> int:
        """The pile depth of the copy a dig (buried copies only) or a call (the top too)
        names."""
        depth = pile_depth(game.pile, action)
        if depth is None:
            where = "buried in" if action.kind == "dig" else "in"
            raise IllegalActionError(
                f"{action}: {card_str(action.cards[0])} is not {where} the pile"
            )
        return depth

    def decode(self, game: Table, index: object) -> Action:
        """The engine action an id stands for in this position.

        Raises `IllegalActionError` when the id names nothing here (a depth below the pile, a
        lay-off no meld takes); legality is the engine's to judge. `index` is an int or a numpy
        integer, typed `object` so that a compiled build (setup.py) checks it here.
        """
        if type(index) is int:
            i = index
        elif isinstance(index, np.integer):
            i = int(index)
        else:
            raise IllegalActionError(f"action must be an int id, got {index!r}")
        if not 0 <= i < self.size:
            raise IllegalActionError(f"action id {i} is out of range 0..{self.size - 1}")
        static = self._by_id[i]  # draw, take, decline, melds, discards, pass, done
        if static is not None:
            return static
        if i < self.DECLINE:  # a dig
            depth, pile = i - self.PILE, game.pile
            if depth >= len(pile):
                raise IllegalActionError(
                    f"action {i} digs to depth {depth}, but the pile holds {len(pile)} cards"
                )
            return pile_action(pile, "dig", depth)
        if i < self.DISCARD:  # a lay-off: onto the lowest-numbered meld that takes it there
            c, end = divmod(i - self.LAYOFF, 3)
            for m_index, m in enumerate(game.melds):
                if c in m.fits and layoff_end(m, c) == end:
                    return layoff_action(c, m_index)
            raise _no_meld(i, c, end, joker=False)
        if self.JOKER_LAYOFF <= i < self.JOKER_DISCARD:
            return self._joker_layoff(game, i)
        return self._call(game, i)  # the only ids left

    def _call(self, game: Table, i: int) -> Action:
        """The call of id `i`: the pile card at its depth, its copy counted from the top card
        (the notation's `call 9D#2`)."""
        depth, pile = i - self.CALL, game.pile
        if depth >= len(pile):
            raise IllegalActionError(
                f"action {i} calls to depth {depth}, but the pile holds {len(pile)} cards"
            )
        return pile_action(pile, "call", depth)

    def _joker_layoff(self, game: Table, i: int) -> Action:
        """The joker lay-off of id `i`, onto the lowest-numbered meld that takes its card
        there (as a natural lay-off's)."""
        c, end = divmod(i - self.JOKER_LAYOFF, 3)
        for m_index, m in enumerate(game.melds):
            if c in m.fits and layoff_end(m, c) == end:
                return joker_layoff_action(c, m_index)
        raise _no_meld(i, c, end, joker=True)

    def legal_ids(self, game: Game) -> list[int]:
        """Ids of the engine's legal actions, in `legal_actions` order (with two decks several
        lay-offs may share one id), read from the engine's parts (`Game.draw_options`,
        `Game.play_options`, `Game.joker_options`, `Game.call_options`), which skips building
        `Action` objects."""
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
        if game.phase == "play" and self._plain:
            templates, layoffs, discards = game.play_options()
            meld, layoff, melds = self.MELD, self.LAYOFF, game.melds
            out = [meld + t for t in templates] if templates else []
            for c, i in layoffs:
                out.append(layoff + 3 * c + layoff_end(melds[i], c))
            return out + gather(discards, self._discard_ids)
        return self._wild_ids(game)

    def _wild_ids(self, game: Game) -> list[int]:
        """`legal_ids` after the draw under rules with jokers or calls (docs/rules.md §5):
        melds, starts with a joker, lay-offs, joker lay-offs, discards (the joker last) and
        done; or, in a call window, the calls and pass."""
        if game.phase == "call":
            call = self.CALL
            return [call + depth for depth, _, _ in game.call_options()] + [self.PASS]
        if game.phase not in ("play", "called"):
            return []
        templates, layoffs, discards = game.play_options()
        starts, wild_layoffs = game.joker_options()
        out = [self.MELD + t for t in templates]
        base, melds = self.JOKER_MELD, game.melds
        out += [base + 3 * t + k for t, k in starts]
        for c, i in layoffs:
            out.append(self.LAYOFF + 3 * c + layoff_end(melds[i], c))
        base = self.JOKER_LAYOFF
        for c, i in wild_layoffs:
            out.append(base + 3 * c + layoff_end(melds[i], c))
        out += gather(discards, self._discard_ids)
        if discards >> JOKER:
            out.append(self.JOKER_DISCARD)
        if game.done_allowed:
            out.append(self.DONE)
        return out

    def mask(self, game: Game) -> np.ndarray[Any, np.dtype[np.int8]]:
        """int8 mask of the legal ids."""
        m = np.zeros(self.size, dtype=np.int8)
        m[self.legal_ids(game)] = 1
        return m

    def action_to_str(self, game: Table, index: object) -> str:
        """The engine notation of an id in this position."""
        return str(self.decode(game, index))

    def str_to_action(self, game: Table, text: str) -> int:
        """The id of an action written in the engine notation."""
        return self.encode(game, Action.parse(text))


def _no_meld(i: int, card: int, end: int, joker: bool) -> IllegalActionError:
    """The error of a lay-off id that no meld takes now."""
    where = ("a set", "a run's low end", "a run's high end")[end]
    what = f"a joker as {card_str(card)}" if joker else card_str(card)
    return IllegalActionError(f"action {i}: no meld takes {what} on {where}")
