"""`View`: what one seat may know, decoded from its observation vector.

Bots read positions through a `View` rather than the engine, so they can only use what the
seat sees (RULES.md §1: the pile is public; hands are not). The decoding is exact for every
card feature; scores are restored from their scaled form.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rummy500_env.actions import ActionCodec
from rummy500_env.melds import MELD_TEMPLATES, hand_values
from rummy500_env.observation import ObservationEncoder
from rummy500_env.rules import Rules


@dataclass
class Decoded:
    """One action id in card terms: ``kind`` is draw, take, dig, decline, meld, layoff or
    discard; ``cards`` the cards it takes or plays; ``depth`` the pile depth of a take or dig;
    ``end`` where a lay-off lands (0 set, 1 below a run, 2 above a run)."""

    id: int
    kind: str
    cards: tuple[int, ...] = ()
    depth: int = -1
    end: int = -1


@dataclass
class View:
    """A seat's knowledge: own hand, the pile (top first), the table, what opponents are known
    to hold, counts and scores. Seat 0 is the viewer; seat s is s places after it."""

    rules: Rules
    hand: list[int]
    pile: list[int]
    table_owner: list[list[int]]
    table_set: list[int]
    table_run: list[int]
    fits: list[set[int]]
    known: list[list[int]]
    hand_sizes: list[int]
    stock: int
    totals: list[float]
    table_points: list[float]
    phase: str
    must_play: int | None
    no_discard: int | None
    top_obligated: bool
    values: tuple[int, ...] = field(repr=False, default=())

    @property
    def table_cards(self) -> list[int]:
        """Every card on the table."""
        return sorted(self.table_set + self.table_run)

    def unseen(self) -> list[int]:
        """Cards this seat has not seen: in the stock or in opponents' hands, not known."""
        counts = [self.rules.deck_count] * 52
        seen = self.hand + self.pile + self.table_cards + [c for k in self.known for c in k]
        for c in seen:
            counts[c] -= 1
        return [c for c in range(52) for _ in range(max(0, counts[c]))]


class ViewDecoder:
    """Decodes observations and action ids for one rules configuration."""

    def __init__(self, rules: Rules | str | dict[str, Any] = "standard") -> None:
        self.rules = Rules.coerce(rules)
        self.encoder = ObservationEncoder(self.rules)
        self.codec = ActionCodec(self.rules)
        self.values = hand_values(self.rules.scoring)

    def view(self, observation: np.ndarray[Any, Any]) -> View:
        r, d = self.rules, self.rules.deck_count
        v = self.encoder.views(np.asarray(observation, dtype=np.float32))

        def cards(row: np.ndarray[Any, Any]) -> list[int]:
            counts = np.rint(row * d).astype(int)
            return [c for c in np.flatnonzero(counts) for _ in range(counts[c])]

        places = v["pile_place"].ravel()
        at = np.flatnonzero(places)
        pile = [int(i) % 52 for i in at[np.argsort(-places[at], kind="stable")]]  # top first
        phase = "draw" if v["phase"][0] else "play" if v["phase"][1] else "over"
        must = np.flatnonzero(v["must_play"])
        nod = np.flatnonzero(v["no_discard"])
        return View(
            rules=r,
            hand=[int(c) for c in cards(v["hand"])],
            pile=pile,
            table_owner=[[int(c) for c in cards(row)] for row in v["table_owner"]],
            table_set=[int(c) for c in cards(v["table_set"])],
            table_run=[int(c) for c in cards(v["table_run"])],
            fits=[{int(c) for c in np.flatnonzero(row)} for row in v["layoff_fits"]],
            known=[[int(c) for c in cards(row)] for row in v["known"]],
            hand_sizes=[round(x * 52) for x in v["hand_sizes"]],
            stock=round(float(v["stock_pile"][0]) * r.deck_size),
            totals=[float(x) * r.target for x in v["totals"]],
            table_points=[float(x) * r.target for x in v["table_points"]],
            phase=phase,
            must_play=int(must[0]) if must.size else None,
            no_discard=int(nod[0]) if nod.size else None,
            top_obligated=bool(v["flags"][0]),
            values=self.values,
        )

    def decode(self, view: View, action_id: int) -> Decoded:
        """An action id in card terms, using the pile of `view` for takes and digs."""
        c = self.codec
        i = int(action_id)
        if i == c.DRAW:
            return Decoded(i, "draw")
        if i == c.DECLINE:
            return Decoded(i, "decline")
        if i < c.DECLINE:
            depth = i - c.PILE
            return Decoded(
                i, "take" if depth == 0 else "dig", tuple(view.pile[: depth + 1]), depth=depth
            )
        if i < c.LAYOFF:
            return Decoded(i, "meld", MELD_TEMPLATES[i - c.MELD])
        if i < c.DISCARD:
            card, end = divmod(i - c.LAYOFF, 3)
            return Decoded(i, "layoff", (card,), end=end)
        return Decoded(i, "discard", (i - c.DISCARD,))

    def legal(self, view: View, action_mask: np.ndarray[Any, Any]) -> list[Decoded]:
        """The legal actions of a mask, decoded."""
        return [self.decode(view, int(i)) for i in np.flatnonzero(action_mask)]
