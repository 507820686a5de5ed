"""Positions: the `Position` record of a game's state, its JSON-compatible dict form, and the
checks that a position obeys the rules (docs/rules.md §3: nothing is ever lost).

`Game.from_dict` and `Game.from_position` build games through here, and `Game.to_dict` writes
through here, so a position is read, checked and written in one place. Every problem found is
reported at once (as python-chess's `Board.status` does), in one `InvalidPositionError`.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import dataclass
from typing import Any, Literal, get_args

from rummy500_env.engine.cards import (
    JOKER,
    Card,
    CardParseError,
    card_str,
    cards_str,
    parse_card,
)
from rummy500_env.engine.errors import InvalidPositionError, RulesError
from rummy500_env.engine.melds import Meld, meld_from_cards, natural_start, place_str
from rummy500_env.engine.numbers import shown
from rummy500_env.engine.rules import Rules
from rummy500_env.engine.scoring import HandResult, hand_result

Phase = Literal["draw", "play", "call", "called", "hand_over", "game_over"]
PHASES: tuple[Phase, ...] = get_args(Phase)
CALL_PHASES: tuple[Phase, ...] = ("call", "called")
"""The phases of a "Rummy!" call window (docs/rules.md §5): a player decides whether to call,
or a caller plays out of turn."""
LIVE_PHASES: tuple[Phase, ...] = ("draw", "play", *CALL_PHASES)
"""The phases of a hand being played: any other (``hand_over``, ``game_over``) has ended it."""
_DRAW_PHASES: tuple[Phase, ...] = ("draw", *CALL_PHASES)
"""Built once here: a starred item inside an ``in`` test crashes mypyc (setup.py)."""

POSITION_KEYS = (
    "rules", "dealer", "turn", "phase", "hands", "stock", "pile", "melds", "totals",
    "taken_top", "must_play", "known", "turns", "hands_played", "seed", "discarder",
)  # fmt: skip
OPTIONAL_KEYS: dict[str, Any] = {
    "seed": 0, "taken_top": None, "must_play": None, "turns": 0, "hands_played": 0,
    "discarder": None,
}  # fmt: skip
"""Keys that may be left out, with their defaults. `to_dict` writes ``discarder`` only when
the rules have calls, so positions of the other rules keep their keys."""
TOTALS_SHOWN: int = 400
"""Characters of a wrong ``totals`` value a problem quotes (a list: longer than one value)."""


@dataclass(frozen=True)
class Position:
    """A game's state in engine terms (card ids, `Meld`s), as `Game.position()` returns it and
    `Game.from_position` takes it. The fields are those of the dict form (docs/rules.md §7)."""

    rules: Rules
    hands: tuple[tuple[Card, ...], ...]
    """Each player's cards."""
    stock: tuple[Card, ...]
    """The stock, top (drawn next) first."""
    pile: tuple[Card, ...]
    """The discard pile, bottom first, top last."""
    melds: tuple[Meld, ...] = ()
    known: tuple[tuple[Card, ...], ...] | None = None
    """Per player, the cards everyone saw them take from the pile (None: none known)."""
    dealer: int = 0
    turn: int = 0
    phase: Phase = "draw"
    totals: tuple[int, ...] | None = None
    """Running totals before this hand (None: all zero)."""
    taken_top: Card | None = None
    must_play: Card | None = None
    turns: int = 0
    hands_played: int = 0
    seed: int = 0
    discarder: int | None = None
    """While a call window is open (phase ``call`` or ``called``), the player whose discard
    opened it; None otherwise (docs/rules.md §5)."""

    def __reduce__(self) -> tuple[type[Position], tuple[object, ...]]:
        """Copied and pickled through the constructor: a compiled frozen class (setup.py)
        refuses the field-by-field assignment `copy` and `pickle` do by default."""
        return type(self), tuple(getattr(self, f.name) for f in dataclasses.fields(self))

    def known_cards(self, player: int) -> tuple[Card, ...]:
        return () if self.known is None else self.known[player]

    def result(self) -> HandResult:
        """The end-of-hand result of this position's table and hands (meaningful once the hand
        is over: phase hand_over or game_over, `hands_played` counting the hand)."""
        return hand_result(
            self.rules, self.melds, self.hands, self.totals_before(), self.hands_played
        )

    def totals_before(self) -> list[int]:
        return [0] * self.rules.players if self.totals is None else list(self.totals)


def problems(p: Position, earlier: int = 0, loose: tuple[Card, ...] = ()) -> list[str]:
    """Every way the position breaks the rules (empty if none). `earlier` counts problems
    already found while reading it (the end-of-game check needs a sound position); `loose`
    are cards it held in places that could not be read (a meld that is no meld), which still
    count towards the deck."""
    found: list[str] = []
    n = p.rules.players
    if len(p.hands) != n or (p.known is not None and len(p.known) != n):
        return [f"hands and known must have one entry per player (players={n})"]
    for name, value, high in (("dealer", p.dealer, n - 1), ("turn", p.turn, n - 1)):
        if type(value) is not int or not 0 <= value <= high:
            found.append(f"{name} must be an int 0..{high}, got {shown(value)}")
    if p.phase not in PHASES:
        found.append(f"phase must be one of {PHASES}, got {p.phase!r}")
    for q in range(n):
        held, known = Counter(p.hands[q]), Counter(p.known_cards(q))
        found += [
            f"known[{q}] has {card_str(c)} but hands[{q}] does not hold it"
            for c in sorted(known)
            if known[c] > held[c]
        ]
    found += _deck_problems(p, loose)
    found += _turn_problems(p)
    found += _hand_count_problems(p)
    if not found and not earlier and p.phase in ("hand_over", "game_over"):
        found += _game_end_problems(p)
    return found


def _hand_count_problems(p: Position) -> list[str]:
    """The hand count agrees with `hand_limit` (docs/rules.md §7 "Positions after the end"):
    the game stops when `hands_played` reaches the limit (§4), so no position counts more
    hands, and none at the limit is still in play. (Totals at the target or more in a hand
    in play are accepted: a position's totals are where it starts, and this hand's end
    decides the game by §1 as usual.)"""
    limit = p.rules.hand_limit
    if limit is None or type(p.hands_played) is not int:
        return []  # no limit; or a count that reading the dict reports
    if p.hands_played > limit:
        return [
            f"hands_played={shown(p.hands_played)} is beyond hand_limit={limit}: the game stops "
            "when it reaches the limit (docs/rules.md §4)"
        ]
    if p.phase in LIVE_PHASES and p.hands_played == limit:
        return [
            f"hands_played={p.hands_played} has reached hand_limit={limit}: the game is over, "
            f"so no hand is {p.phase!r} (docs/rules.md §4)"
        ]
    return []


def _deck_problems(p: Position, loose: tuple[Card, ...]) -> list[str]:
    """Every card is in exactly one place and the total is the deck size (docs/rules.md §3);
    a joker on the table counts as a joker, not as the card it stands for (§5)."""
    copies, jokers = p.rules.deck_count, p.rules.joker_count
    counts = Counter(c for h in p.hands for c in h)
    counts.update(loose)
    counts.update(p.stock)
    counts.update(p.pile)
    counts.update(JOKER if m.jokers >> c & 1 else c for m in p.melds for c in m.cards)
    strange = sorted((c for c in counts if type(c) is not int or not 0 <= c <= JOKER), key=str)
    if strange:  # ids that are no card (JAX arrays, hand-built positions): nothing else to read
        return [
            f"card ids must be 0..51 (or {JOKER} for a joker), got {', '.join(map(shown, strange))}"
        ]
    extra = [f"{card_str(c)} x{k}" for c, k in sorted(counts.items()) if c < JOKER and k > copies]
    lost = [card_str(c) for c in range(52) if counts[c] < copies]
    out = []
    if extra:
        out.append(f"cards appear more than {copies} time(s) (decks={copies}): {', '.join(extra)}")
    if lost:
        out.append(f"cards missing from the position (decks={copies}): {' '.join(lost)}")
    if counts[JOKER] != jokers:
        out.append(
            f"the position holds {counts[JOKER]} joker(s) but jokers={p.rules.jokers} with "
            f"decks={copies} puts {jokers} in play (docs/rules.md §5)"
        )
    return out


def _turn_problems(p: Position) -> list[str]:
    """The phase agrees with the hands, the stock and the turn state."""
    r, out = p.rules, []
    empty = [q for q in range(r.players) if not p.hands[q]]
    out += _call_problems(p)
    if p.phase in LIVE_PHASES:
        if empty:
            out.append(f"players {empty} hold no cards, so the hand is over, not {p.phase!r}")
        if p.phase in _DRAW_PHASES and not p.stock and r.stock_out == "ends_hand":
            out.append("the stock is empty under stock_out='ends_hand': the hand is over")
        elif p.phase == "draw" and not p.stock and not p.pile:
            out.append("the stock and the pile are both empty at the draw: the hand is over")
        if r.turn_limit is not None and p.turns >= r.turn_limit:
            out.append(
                f"turns={shown(p.turns)} has reached turn_limit={r.turn_limit}: the hand is over"
            )
    elif len(empty) > 1:
        out.append(f"only one player can go out, but players {empty} hold no cards")
    return out + _take_problems(p)


def _take_problems(p: Position) -> list[str]:
    """`taken_top` and `must_play` agree with the phase and the hand of the player to act."""
    out = []
    if p.phase != "play":
        if p.taken_top is not None:
            out.append("taken_top must be null outside the 'play' phase")
        if p.must_play is not None and p.phase != "called":
            out.append("must_play must be null outside the 'play' and 'called' phases")
        elif p.must_play is not None and p.must_play not in p.hands[p.turn]:
            out.append(f"must_play {card_str(p.must_play)} is not in the hand of player {p.turn}")
        return out
    hand = p.hands[p.turn]
    if p.taken_top is not None and p.must_play not in (None, p.taken_top):
        out.append("taken_top and must_play are both set but differ: a take sets one card")
    if p.must_play is not None and p.must_play not in hand:
        out.append(f"must_play {card_str(p.must_play)} is not in the hand of player {p.turn}")
    tt = p.taken_top  # taken this turn: still in hand, or put on the table since
    if tt is not None and tt not in hand and not _on_table_by(p.melds, tt, p.turn):
        out.append(
            f"taken_top {card_str(tt)} is neither in the hand of player {p.turn} nor among "
            "the cards they put on the table"
        )
    return out


def _call_problems(p: Position) -> list[str]:
    """A call window (docs/rules.md §5): only with `rummy_calls`, and `discarder` names the
    player whose discard opened it, while it is open and only then."""
    r, d = p.rules, p.discarder
    if p.phase in CALL_PHASES:
        if not r.rummy_calls:
            return [f"phase {p.phase!r} needs rummy_calls=True (docs/rules.md §5)"]
        if d is None:
            return [f"phase {p.phase!r} needs discarder: the player whose discard opened it"]
        if type(d) is not int or not 0 <= d < r.players:
            return [f"discarder must be a player 0..{r.players - 1}, got {shown(d)}"]
        if d == p.turn:
            return [f"player {d} discarded, so may not call on that discard (docs/rules.md §5)"]
    elif d is not None:
        return [f"discarder must be null outside the 'call' and 'called' phases, got {shown(d)}"]
    return []


def _on_table_by(melds: tuple[Meld, ...], card: Card, player: int) -> bool:
    """Whether `player` put `card` on the table (the joker: any joker)."""
    for m in melds:
        for c, o in zip(m.cards, m.owners, strict=True):
            if o == player and (JOKER if m.jokers >> c & 1 else c) == card:
                return True
    return False


def _game_end_problems(p: Position) -> list[str]:
    """After a hand, the phase says whether these totals end the game (§1, §2, §4)."""
    over = p.result().game_over
    if p.phase == "hand_over" and over:
        return ["these totals end the game: phase must be 'game_over', not 'hand_over'"]
    if p.phase == "game_over" and not over:
        return ["no one has won and hand_limit is not reached: phase must be 'hand_over'"]
    return []


def check(p: Position) -> Position:
    """The position itself, or `InvalidPositionError` listing every problem."""
    found = problems(p)
    if found:
        raise InvalidPositionError(found)
    return p


# --- the dict form ----------------------------------------------------------------------------


def to_dict(p: Position) -> dict[str, Any]:
    """The JSON-compatible dict of a position (docs/rules.md §7); `from_dict` reads it back."""
    r = p.rules
    name = r.preset_name()
    n = r.players
    return {
        "rules": name if name is not None else r.to_dict(),
        "dealer": p.dealer,
        "turn": p.turn,
        "phase": p.phase,
        "hands": [[card_str(c) for c in h] for h in p.hands],
        "stock": [card_str(c) for c in p.stock],
        "pile": [card_str(c) for c in p.pile],
        "melds": [{"cards": m.labels(), "owners": list(m.owners)} for m in p.melds],
        "totals": p.totals_before(),
        "taken_top": None if p.taken_top is None else card_str(p.taken_top),
        "must_play": None if p.must_play is None else card_str(p.must_play),
        "known": [[card_str(c) for c in p.known_cards(q)] for q in range(n)],
        "turns": p.turns,
        "hands_played": p.hands_played,
        "seed": p.seed,
    } | ({"discarder": p.discarder} if r.rummy_calls else {})


def from_dict(d: Any) -> Position:
    """Read and check a position dict; raises `InvalidPositionError` listing every problem."""
    return _Reader(d).position()


class _Reader:
    """Reads a position dict, collecting every problem before raising."""

    def __init__(self, d: Any) -> None:
        self.d = d
        self.problems: list[str] = []
        self.loose: list[Card] = []  # cards of melds that are no melds

    def bad(self, msg: str) -> None:
        self.problems.append(msg)

    def position(self) -> Position:
        d = self.d
        if not isinstance(d, dict):
            raise InvalidPositionError([f"a position must be a dict, got {type(d).__name__}"])
        for k in POSITION_KEYS:
            if k not in d and k not in OPTIONAL_KEYS:
                self.bad(f"missing key {k!r}")
        unknown = sorted(set(d) - set(POSITION_KEYS))
        if unknown:
            self.bad(f"unknown key(s) {unknown}; allowed: {list(POSITION_KEYS)}")
        try:
            rules = Rules.coerce(d.get("rules"))
        except RulesError as e:
            raise InvalidPositionError([*self.problems, f"rules: {e}"]) from None
        if self.problems:
            raise InvalidPositionError(self.problems)
        p = self.fields(rules)
        found = self.problems + problems(p, len(self.problems), tuple(self.loose))
        if found:
            raise InvalidPositionError(found)
        return p

    def fields(self, rules: Rules) -> Position:
        d, n = self.d, rules.players
        phase = d["phase"]
        if phase not in PHASES:
            self.bad(f"phase must be one of {PHASES}, got {phase!r}")
            phase = "draw"
        return Position(
            rules=rules,
            hands=self.per_player(d["hands"], "hands", n),
            stock=tuple(self.cards(d["stock"], "stock")),
            pile=tuple(self.cards(d["pile"], "pile")),
            melds=self.melds(d["melds"], n),
            known=self.per_player(d["known"], "known", n),
            dealer=self.integer("dealer", 0, n - 1),
            turn=self.integer("turn", 0, n - 1),
            phase=phase,
            totals=self.totals(d["totals"], n),
            taken_top=self.card(d.get("taken_top"), "taken_top"),
            must_play=self.card(d.get("must_play"), "must_play"),
            turns=self.integer("turns", 0, None),
            hands_played=self.integer("hands_played", 0, None),
            seed=self.integer("seed", None, None),
            discarder=self.discarder(n),
        )

    def discarder(self, n: int) -> int | None:
        v = self.d.get("discarder")
        if v is not None and (type(v) is not int or not 0 <= v < n):
            self.bad(f"discarder must be null or a player 0..{n - 1}, got {shown(v)}")
            return None
        return v

    def cards(self, value: Any, where: str) -> list[Card]:
        if not isinstance(value, list):
            self.bad(f"{where} must be a list of cards, got {value!r}")
            return []
        out = []
        for x in value:
            try:
                if not isinstance(x, str):
                    raise CardParseError(f"not a card: {x!r}")
                if "=" in x:
                    raise CardParseError(
                        f"{x!r}: a joker names the card it stands for only in a meld; here "
                        "write JK (docs/rules.md §5)"
                    )
                out.append(parse_card(x))
            except CardParseError as e:
                self.bad(f"{where}: {e}")
        return out

    def places(self, value: Any, where: str) -> tuple[list[Card], int, int]:
        """A meld's cards: each a card or ``JK=9D``. Returns the cards (the jokers as the cards
        they stand for), the mask of the jokers' cards, and the count of bare ``JK``."""
        if not isinstance(value, list):
            self.bad(f"{where} must be a list of cards, got {value!r}")
            return [], 0, 0
        out, jokers, bare = [], 0, 0
        for x in value:
            head, eq, stands = x.partition("=") if isinstance(x, str) else ("", "", "")
            if not eq:
                got = self.cards([x], where)
                if got == [JOKER]:
                    self.bad(
                        f"{where}: a joker in a meld names the card it stands for, e.g. JK=9D "
                        "(docs/rules.md §5)"
                    )
                    bare += 1
                out += [c for c in got if c != JOKER]
                continue
            got = self.cards([head, stands], where)
            if len(got) != 2 or got[0] != JOKER or got[1] == JOKER:
                self.bad(f"{where}: {x!r} is no joker place; write JK=9D (docs/rules.md §5)")
                continue
            if jokers >> got[1] & 1:
                self.bad(f"{where}: two jokers stand for {card_str(got[1])}")
            jokers |= 1 << got[1]
            out.append(got[1])
        return out, jokers, bare

    def card(self, value: Any, where: str) -> Card | None:
        if value is None:
            return None
        got = self.cards([value], where)
        return got[0] if got else None

    def integer(self, key: str, low: int | None, high: int | None) -> int:
        v = self.d.get(key, OPTIONAL_KEYS.get(key))
        if type(v) is not int or (low is not None and v < low) or (high is not None and v > high):
            rng = "" if low is None else f" {low}..{high}" if high is not None else f" >= {low}"
            self.bad(f"{key} must be an int{rng}, got {shown(v)}")
            return low or 0
        return v

    def per_player(self, value: Any, key: str, n: int) -> tuple[tuple[Card, ...], ...]:
        if not isinstance(value, list) or len(value) != n:
            self.bad(f"{key} must be a list of {n} lists of cards (players={n}), got {value!r}")
            return ((),) * n
        out = tuple(tuple(self.cards(v, f"{key}[{q}]")) for q, v in enumerate(value))
        for q, cs in enumerate(out):
            third = [c for c, k in Counter(cs).items() if k > 2 and c != JOKER]
            if third:
                self.bad(f"{key}[{q}]: {cards_str(third)} appear(s) more than twice")
        return out

    def totals(self, value: Any, n: int) -> tuple[int, ...] | None:
        if not isinstance(value, list) or len(value) != n or any(type(t) is not int for t in value):
            self.bad(f"totals must be a list of {n} ints, got {shown(value, TOTALS_SHOWN)}")
            return None
        return tuple(value)

    def melds(self, value: Any, n: int) -> tuple[Meld, ...]:
        if not isinstance(value, list):
            self.bad(f"melds must be a list, got {value!r}")
            return ()
        out = []
        for i, md in enumerate(value):
            where = f"melds[{i}]"
            if not isinstance(md, dict) or set(md) != {"cards", "owners"}:
                self.bad(f"{where} must be a dict with keys 'cards' and 'owners', got {md!r}")
                if isinstance(md, dict) and isinstance(md.get("cards"), list):
                    self.loose += _physical(*self.places(md["cards"], f"{where}.cards"))
                continue
            cs, jokers, bare = self.places(md["cards"], f"{where}.cards")
            owners = md["owners"]
            if (
                not isinstance(owners, list)
                or len(owners) != len(cs) + bare
                or any(type(o) is not int or not 0 <= o < n for o in owners)
            ):
                self.bad(f"{where}.owners must list one player 0..{n - 1} per card, got {owners!r}")
                self.loose += _physical(cs, jokers, bare)
                continue
            m = None if bare else meld_from_cards(cs, tuple(owners), jokers)
            if m is None or not natural_start(m):
                if not bare:
                    self.bad(_meld_problem(where, cs, jokers, m))
                self.loose += _physical(cs, jokers, bare)
                continue
            out.append(m)
        return tuple(out)


def _physical(cards: list[Card], jokers: int, bare: int) -> list[Card]:
    """The cards a meld's places hold: a joker's place holds a joker (plus `bare` jokers)."""
    return [JOKER if jokers >> c & 1 else c for c in cards] + [JOKER] * bare


def _meld_problem(where: str, cards: list[Card], jokers: int, m: Meld | None) -> str:
    """Why the places of a meld are no meld, naming the rule (docs/rules.md §1, §5)."""
    text = " ".join(place_str(c, jokers) for c in cards)
    if m is not None:
        return (
            f"{where} {text} could never have gone down: every meld starts as three cards of "
            "which at least two are natural, then grows by lay-offs (docs/rules.md §5)"
        )
    if jokers:
        return (
            f"{where} {text} is not a meld: a joker stands for a card its meld could take at "
            "that place (a suit missing from a set, never a fifth card; the next rank of a "
            "run), the meld read as if each joker were its card (docs/rules.md §5)"
        )
    return (
        f"{where} {cards_str(cards)} is not a meld (sets: 3-4 cards of one rank, distinct "
        "suits; runs: 3+ consecutive cards of one suit, low to high)"
    )
