"""A deliberately simple, slow model of docs/rules.md: which actions are legal, where each one
leads, and what a hand scores, worked out by brute force over the cards a position holds.

It reads positions in their dict form (docs/rules.md §7) and answers in the canonical action
text (§6), so a test compares it with the engine as sets of strings. From the engine it takes
only what reads inputs: card text (``parse_card``, ``card_str``) and `Rules` (the fields of a
rules configuration). It never calls the engine's meld finder, lay-off fits, scoring or
legality predicates, so a bug in one of those cannot hide on both sides of a comparison.

Card ids are docs/rules.md §6's: suit × 13 + rank, suits C D H S, the ace rank 0; 52 is JK.
A meld is a list of places ``(card, joker, owner)``: the card the place holds or a joker stands
for, whether a joker fills it, and who put it there; runs low to high.
"""

from __future__ import annotations

import copy
import itertools
from dataclasses import dataclass
from functools import cache
from typing import Any

from rummy500_env.engine.cards import card_str, parse_card
from rummy500_env.engine.rules import Rules

JK = 52
NATURALS = range(52)
Place = tuple[int, bool, int]
"""A meld place: (the card it holds or a joker stands for, a joker fills it, its owner)."""
Start = tuple[tuple[int, bool], ...]
"""Three cards going down as a new meld: (card, a joker standing for it)."""


def rank(card: int) -> int:
    """0 = ace .. 12 = king (docs/rules.md §6 card ids)."""
    return card % 13


def suit(card: int) -> int:
    """0 = clubs, 1 = diamonds, 2 = hearts, 3 = spades."""
    return card // 13


# --- what a meld is (docs/rules.md §1 "Melds", §2 `decks`) -------------------------------------


def _consecutive(ordinals: list[int]) -> bool:
    return all(b == a + 1 for a, b in itertools.pairwise(sorted(ordinals)))


@cache
def _is_meld(cards: tuple[int, ...]) -> bool:
    if len(cards) < 3:
        return False
    if len({rank(c) for c in cards}) == 1:  # a set: 3-4 cards, every suit different
        return len(cards) <= 4 and len({suit(c) for c in cards}) == len(cards)
    if len({suit(c) for c in cards}) != 1 or len(set(cards)) != len(cards):
        return False  # a run: one suit, never the same card twice
    low = [rank(c) + 1 for c in cards]  # the ace below the 2 ...
    high = [14 if rank(c) == 0 else rank(c) + 1 for c in cards]  # ... or above the king
    return _consecutive(low) or _consecutive(high)


def is_meld(cards: list[int]) -> bool:
    """Whether natural cards (a joker given as the card it stands for) form a set or a run."""
    return _is_meld(tuple(sorted(cards)))


def stands_for(meld: list[Place]) -> list[int]:
    """The cards a meld's places hold, a joker read as its card (docs/rules.md §5)."""
    return [c for c, _, _ in meld]


def fits(meld: list[Place], card: int) -> bool:
    """`card` can be laid off on `meld`: its place is free and the meld stays a meld."""
    cards = stands_for(meld)
    return card not in cards and is_meld([*cards, card])


def is_run(meld: list[Place]) -> bool:
    return len({rank(c) for c in stands_for(meld)}) > 1


def could_have_started(meld: list[Place]) -> bool:
    """docs/rules.md §5: a three-card start with two natural cards, grown by lay-offs: a set
    needs two natural cards, a run three adjacent places holding at most one joker."""
    wild = [j for _, j, _ in meld]
    if not is_run(meld):
        return wild.count(False) >= 2
    return any(wild[i : i + 3].count(True) <= 1 for i in range(len(wild) - 2))


# --- what the cards are worth (docs/rules.md §1 "Scoring", §2 `scoring`, §5) ------------------


def hand_value(card: int, scoring: str) -> int:
    """What a card left in hand costs."""
    if card == JK or rank(card) == 0:
        return 15
    if scoring == "fives":
        return 5 if rank(card) < 9 else 10
    return min(rank(card) + 1, 10)


def table_value(meld: list[Place], place: int, scoring: str) -> int:
    """What the card at `place` of a meld on the table is worth, read from the meld's shape."""
    card, joker, _ = meld[place]
    if joker:
        return 15
    cards = stands_for(meld)
    low_ace = (
        rank(card) == 0
        and is_run(meld)
        and any(rank(c) == 1 for c in cards)  # the 2 is there, so the ace is low ...
        and not any(rank(c) == 12 for c in cards)  # ... unless all thirteen ranks are
    )
    if low_ace:
        return 1 if scoring == "pip" else 5
    return hand_value(card, scoring)


# --- a position ----------------------------------------------------------------------------


@dataclass
class State:
    """A position in the model's terms: hands as lists of ids, melds as lists of places."""

    rules: Rules
    rules_field: Any
    dealer: int
    turn: int
    phase: str
    hands: list[list[int]]
    stock: list[int]  # top first
    pile: list[int]  # bottom first
    melds: list[list[Place]]
    totals: list[int]
    taken_top: int | None
    must_play: int | None
    known: list[list[int]]
    turns: int
    hands_played: int
    seed: int
    discarder: int | None = None


def _card(text: str | None) -> int | None:
    return None if text is None else parse_card(text)


def _place(text: str, owner: int) -> Place:
    if text.upper().startswith("JK="):
        return parse_card(text[3:]), True, owner
    return parse_card(text), False, owner


def read(d: dict[str, Any]) -> State:
    """A position dict (docs/rules.md §7) in the model's terms."""
    rules = Rules.coerce(d["rules"])
    return State(
        rules=rules,
        rules_field=d["rules"],
        dealer=d["dealer"],
        turn=d["turn"],
        phase=d["phase"],
        hands=[[parse_card(c) for c in h] for h in d["hands"]],
        stock=[parse_card(c) for c in d["stock"]],
        pile=[parse_card(c) for c in d["pile"]],
        melds=[
            [_place(c, o) for c, o in zip(m["cards"], m["owners"], strict=True)] for m in d["melds"]
        ],
        totals=list(d["totals"]),
        taken_top=_card(d.get("taken_top")),
        must_play=_card(d.get("must_play")),
        known=[[parse_card(c) for c in k] for k in d["known"]],
        turns=d.get("turns", 0),
        hands_played=d.get("hands_played", 0),
        seed=d.get("seed", 0),
        discarder=d.get("discarder"),
    )


def _place_text(card: int, joker: bool) -> str:
    return f"JK={card_str(card)}" if joker else card_str(card)


def write(s: State) -> dict[str, Any]:
    """The position dict of a state (the inverse of `read`)."""
    d: dict[str, Any] = {
        "rules": s.rules_field,
        "dealer": s.dealer,
        "turn": s.turn,
        "phase": s.phase,
        "hands": [[card_str(c) for c in h] for h in s.hands],
        "stock": [card_str(c) for c in s.stock],
        "pile": [card_str(c) for c in s.pile],
        "melds": [
            {"cards": [_place_text(c, j) for c, j, _ in m], "owners": [o for _, _, o in m]}
            for m in s.melds
        ],
        "totals": list(s.totals),
        "taken_top": None if s.taken_top is None else card_str(s.taken_top),
        "must_play": None if s.must_play is None else card_str(s.must_play),
        "known": [[card_str(c) for c in k] for k in s.known],
        "turns": s.turns,
        "hands_played": s.hands_played,
        "seed": s.seed,
    }
    if s.rules.rummy_calls:
        d["discarder"] = s.discarder
    return d


def normal(d: dict[str, Any]) -> dict[str, Any]:
    """A position dict with the orders no rule fixes taken out: hands and known cards sorted,
    a set's places sorted (a run keeps its low-to-high order), the rules as their fields."""
    out = dict(d)
    out["rules"] = Rules.coerce(d["rules"]).to_dict()
    out["hands"] = [sorted(h) for h in d["hands"]]
    out["known"] = [sorted(k) for k in d["known"]]
    melds = []
    for m in d["melds"]:
        places = list(zip(m["cards"], m["owners"], strict=True))
        ranks = {c.split("=")[-1][:-1] for c in m["cards"]}
        melds.append(places if len(ranks) > 1 else sorted(places))
    out["melds"] = melds
    return out


# --- scoring ---------------------------------------------------------------------------------


def hand_scores(s: State) -> list[int]:
    """Per player: what they put on the table minus what is left in their hand (§1)."""
    scoring = s.rules.scoring
    scores = [0] * s.rules.players
    for m in s.melds:
        for i, (_, _, owner) in enumerate(m):
            scores[owner] += table_value(m, i, scoring)
    for p, hand in enumerate(s.hands):
        scores[p] -= sum(hand_value(c, scoring) for c in hand)
    return scores


def game_ends(s: State, totals: list[int]) -> bool:
    """Whether totals after a hand end the game (§1 end of the game, §2 `winner_must_go_out`,
    §4 `hand_limit`); `s.hands_played` already counts the hand."""
    r = s.rules
    if r.hand_limit is not None and s.hands_played >= r.hand_limit:
        return True
    if r.winner_must_go_out:
        out = [p for p, h in enumerate(s.hands) if not h]
        return bool(out) and totals[out[0]] >= r.target
    best = max(totals)
    return best >= r.target and totals.count(best) == 1


# --- can a card go down at once (§1 dig, §3, §5) ---------------------------------------------


def starts_in(cards: list[int]) -> list[Start]:
    """Every three-card start these cards can make: three natural cards that form a meld, or
    two natural ones and a joker standing for any card that completes them (§5)."""
    distinct = sorted(set(cards))
    out: list[Start] = []
    for three in itertools.combinations(distinct, 3):
        if JK not in three and is_meld(list(three)):
            out.append(tuple((c, False) for c in three))
    if JK in distinct:
        naturals = [c for c in distinct if c != JK]
        for a, b in itertools.combinations(naturals, 2):
            out += [((a, False), (b, False), (x, True)) for x in NATURALS if is_meld([a, b, x])]
    return out


def _starts_holding(card: int, cards: list[int]) -> bool:
    """`card` (a natural card, or JK) is in a three-card start made from `cards` (which hold
    it): the other two from the rest, at most one joker among the three."""
    rest = list(cards)
    rest.remove(card)
    for a, b in itertools.combinations(sorted(set(rest)), 2):
        three = [card, a, b]
        naturals = [c for c in three if c != JK]
        if len(naturals) == 3 and is_meld(naturals):
            return True
        if len(naturals) == 2 and any(is_meld([*naturals, x]) for x in NATURALS):
            return True
    return False


def may_keep_none(s: State) -> bool:
    return not s.rules.discard_to_go_out


def can_go_down_first(s: State, card: int, cards: list[int]) -> bool:
    """`card` can be the first thing put down from a hand of `cards`: in a new meld, or laid
    off on a table meld (a joker: on any meld that takes some card), leaving a card to
    discard under `discard_to_go_out` (§3)."""
    size = len(cards)
    if (may_keep_none(s) or size > 3) and _starts_holding(card, cards):
        return True
    if not (may_keep_none(s) or size > 1):
        return False
    if card == JK:
        return any(fits(m, x) for m in s.melds for x in NATURALS)
    return any(fits(m, card) for m in s.melds)


def top_take_owes(s: State) -> bool:
    """Taking the top card carries the dig obligation (§2 `top_card_must_meld`, and
    `pile_must_use` once the stock is empty)."""
    r = s.rules
    return r.top_card_must_meld or (r.stock_out == "pile_must_use" and not s.stock)


def pile_takes(s: State, player: int, first: int) -> list[tuple[int, int, int]]:
    """The pile cards from `first` below the top down (1: a dig, 0: a call) that `player` may
    take the pile down to: (depth, card, copy counted from `first`)."""
    out = []
    pile = s.pile
    for depth in range(first, len(pile)):
        i = len(pile) - 1 - depth
        card = pile[i]
        copy_no = pile[i : len(pile) - first].count(card)
        if can_go_down_first(s, card, s.hands[player] + pile[i:]):
            out.append((depth, card, copy_no))
    return out


def _named(kind: str, card: int, copy_no: int) -> str:
    return f"{kind} {card_str(card)}" + (f"#{copy_no}" if copy_no > 1 else "")


# --- legal actions (§1 a turn, §3, §5) -------------------------------------------------------


def legal_actions(s: State) -> set[str]:
    """Every legal action of the position, in canonical text."""
    if s.phase == "draw":
        return _draw_actions(s)
    if s.phase in ("play", "called"):
        return _play_actions(s)
    if s.phase == "call":
        return {_named("call", c, k) for _, c, k in pile_takes(s, s.turn, 0)} | {"pass"}
    return set()


def _draw_actions(s: State) -> set[str]:
    acts = {"draw"} if s.stock else {"decline"}
    if s.pile:
        top = s.pile[-1]
        if not top_take_owes(s) or can_go_down_first(s, top, [*s.hands[s.turn], top]):
            acts.add("take")
        acts |= {_named("dig", c, k) for _, c, k in pile_takes(s, s.turn, 1)}
    return acts


def meld_text(start: Start) -> str:
    """``meld`` and the cards in table order: a set by suit, a run low to high (§6)."""
    cards = [c for c, _ in start]
    if is_run([(c, False, 0) for c in cards]):
        ace = 14 if any(rank(c) == 12 for c in cards) else 1
        key = [(ace if rank(c) == 0 else rank(c) + 1) for c, _ in start]
    else:
        key = [suit(c) for c, _ in start]
    ordered = [p for _, p in sorted(zip(key, start, strict=True))]
    return "meld " + " ".join(_place_text(c, j) for c, j in ordered)


def _meets(start: Start, owed: int | None) -> bool:
    """A start meets an open obligation: it holds the owed natural card as itself, or, for an
    owed joker, any joker (§5)."""
    if owed is None:
        return True
    if owed == JK:
        return any(j for _, j in start)
    return (owed, False) in start


def _play_actions(s: State) -> set[str]:
    hand, owed = s.hands[s.turn], s.must_play
    acts: set[str] = set()
    if may_keep_none(s) or len(hand) > 3:
        acts |= {meld_text(t) for t in starts_in(hand) if _meets(t, owed)}
    if may_keep_none(s) or len(hand) > 1:
        acts |= _layoffs(s, hand, owed)
    if s.phase == "play" and owed is None:
        acts |= {f"discard {card_str(c)}" for c in set(hand) if _may_discard(s, c)}
    if s.phase == "called" and owed is None:
        acts.add("done")
    return acts


def _layoffs(s: State, hand: list[int], owed: int | None) -> set[str]:
    acts = set()
    for i, m in enumerate(s.melds):
        for c in set(hand):
            if c != JK and owed in (None, c) and fits(m, c):
                acts.add(f"layoff {card_str(c)} {i}")
            if c == JK and owed in (None, JK):
                acts |= {f"layoff JK={card_str(x)} {i}" for x in NATURALS if fits(m, x)}
    return acts


def _may_discard(s: State, card: int) -> bool:
    """Not the card taken from the top this turn (any copy; any joker after a joker), unless
    the hand holds nothing else (§1 draw, §3, §5)."""
    tt = s.taken_top
    return card != tt or all(c == tt for c in s.hands[s.turn])


# --- where an action leads -------------------------------------------------------------------


def after(s: State, text: str) -> State:
    """The position after a legal action `text` (canonical), as the rules say it moves."""
    t = copy.deepcopy(s)
    kind, *args = text.split()
    _STEPS[kind](t, args)
    return t


def _take(s: State, cards: list[int]) -> None:
    s.hands[s.turn] += cards
    s.known[s.turn] += cards


def _remove(s: State, card: int) -> None:
    """A card leaves the hand in view of the table; one known copy of it stops being known,
    since the table cannot tell which copy was played (§3)."""
    hand, known = s.hands[s.turn], s.known[s.turn]
    hand.remove(card)
    if card in known:
        known.remove(card)


def _step_draw(s: State, args: list[str]) -> None:
    s.hands[s.turn].append(s.stock.pop(0))
    s.phase = "play"


def _step_take(s: State, args: list[str]) -> None:
    owes = top_take_owes(s)
    top = s.pile.pop()
    _take(s, [top])
    s.taken_top = top
    s.must_play = top if owes else None
    s.phase = "play"


def _depth_of(s: State, word: str, first: int) -> int:
    name, _, copy_no = word.partition("#")
    card, wanted = parse_card(name), int(copy_no or 1)
    seen = 0
    for depth in range(first, len(s.pile)):
        seen += s.pile[-1 - depth] == card
        if s.pile[-1 - depth] == card and seen == wanted:
            return depth
    raise AssertionError(f"{word} is not in the pile")


def _take_down_to(s: State, word: str, first: int) -> None:
    i = len(s.pile) - 1 - _depth_of(s, word, first)
    taken = s.pile[i:]
    del s.pile[i:]
    _take(s, taken)
    s.must_play = taken[0]


def _step_dig(s: State, args: list[str]) -> None:
    _take_down_to(s, args[0], 1)
    s.phase = "play"


def _step_call(s: State, args: list[str]) -> None:
    _take_down_to(s, args[0], 0)
    s.phase = "called"


def _step_decline(s: State, args: list[str]) -> None:
    end_hand(s)


def _step_meld(s: State, args: list[str]) -> None:
    places = [_place(a, s.turn) for a in args]
    for c, j, _ in places:
        _remove(s, JK if j else c)
    s.melds.append(places)
    _put_down(s)


def _step_layoff(s: State, args: list[str]) -> None:
    card, joker, _ = _place(args[0], s.turn)
    _remove(s, JK if joker else card)
    m = s.melds[int(args[1])]
    place = (card, joker, s.turn)
    if not is_run(m):
        m.append(place)
    elif _goes_high(m, card):
        m.append(place)
    else:
        m.insert(0, place)
    _put_down(s)


def _goes_high(run: list[Place], card: int) -> bool:
    """A run grows at the end the card continues; an ace on 2..K goes high (docs/rules.md §3,
    the engine's clarification: the run is full either way)."""
    top = run[-1][0]
    top_ordinal = 14 if rank(top) == 0 else rank(top) + 1  # an ace on top is a high ace
    if top_ordinal == 14:
        return False
    ordinal = 14 if rank(card) == 0 and top_ordinal == 13 else rank(card) + 1
    return ordinal == top_ordinal + 1


def _put_down(s: State) -> None:
    s.must_play = None
    if not s.hands[s.turn]:
        end_hand(s)  # going out needs no discard (§1)


def _step_discard(s: State, args: list[str]) -> None:
    _remove(s, parse_card(args[0]))
    s.pile.append(parse_card(args[0]))
    s.taken_top = None
    if not s.hands[s.turn]:
        end_hand(s)
        return
    s.turns += 1
    discarder = s.turn
    s.turn = (discarder + 1) % s.rules.players
    s.phase = "draw"
    limit = s.rules.turn_limit
    # The two ends below leave `turn` at the seat that would act next, as the engine does:
    # §4 reads "as if the player to act declined", §2 "at the start of that player's turn";
    # §7 says a finished hand's `turn` is "the seat that acted last" (open: issue 23 report).
    if limit is not None and s.turns >= limit:
        end_hand(s)  # §4: as if the stock were empty and the player to act declined
    elif not s.stock and s.rules.stock_out == "ends_hand":
        end_hand(s)  # §2: the player to act would have to draw from an empty stock
    elif s.rules.rummy_calls:
        _ask_from(s, discarder, discarder)


def _ask_from(s: State, discarder: int, asked: int) -> None:
    """The call window (§5): the next player after `asked`, in seat order from the discarder's
    left, who has a legal call decides; with none left, the discarder's left neighbour draws."""
    n = s.rules.players
    q = (asked + 1) % n
    while q != discarder:
        if pile_takes(s, q, 0):
            s.turn, s.phase, s.discarder = q, "call", discarder
            return
        q = (q + 1) % n
    _resume(s, discarder)


def _resume(s: State, discarder: int) -> None:
    s.turn, s.phase, s.discarder, s.must_play = (
        (discarder + 1) % s.rules.players,
        "draw",
        None,
        None,
    )
    if not s.stock and not s.pile:
        end_hand(s)  # §1: nothing to draw or take (a call took the whole pile)


def _step_pass(s: State, args: list[str]) -> None:
    assert s.discarder is not None
    _ask_from(s, s.discarder, s.turn)


def _step_done(s: State, args: list[str]) -> None:
    assert s.discarder is not None
    _resume(s, s.discarder)


def end_hand(s: State) -> None:
    """The hand is over: scored, and the game over if these totals end it."""
    s.taken_top = s.must_play = s.discarder = None
    s.hands_played += 1
    totals = [t + h for t, h in zip(s.totals, hand_scores(s), strict=True)]
    s.phase = "game_over" if game_ends(s, totals) else "hand_over"


def totals_now(s: State) -> list[int]:
    """Running totals: once the hand is over, with its scores added."""
    if s.phase in ("hand_over", "game_over"):
        return [t + h for t, h in zip(s.totals, hand_scores(s), strict=True)]
    return list(s.totals)


_STEPS = {
    "draw": _step_draw,
    "take": _step_take,
    "dig": _step_dig,
    "call": _step_call,
    "decline": _step_decline,
    "meld": _step_meld,
    "layoff": _step_layoff,
    "discard": _step_discard,
    "pass": _step_pass,
    "done": _step_done,
}


# --- any action text, longer melds included ---------------------------------------------------


def _windows(places: list[tuple[int, bool]], run: bool) -> list[Start]:
    """The three-card starts a meld could have grown from: any three cards of a set, three
    adjacent places of a run (a run grows only at its ends), at most one joker (§5)."""
    if run:
        triples = [tuple(places[i : i + 3]) for i in range(len(places) - 2)]
    else:
        triples = list(itertools.combinations(places, 3))
    return [t for t in triples if sum(j for _, j in t) <= 1]


def meld_is_legal(s: State, places: list[tuple[int, bool]]) -> bool:
    """A `meld` of any length is legal when it is a three-card start followed by lay-offs
    (§5: the start holds the owed card), of cards in hand, leaving a card to discard where
    that is required (§2 `discard_to_go_out`)."""
    hand = list(s.hands[s.turn])
    for c, j in places:
        if (JK if j else c) not in hand:
            return False
        hand.remove(JK if j else c)
    cards = [c for c, _ in places]
    if s.phase not in ("play", "called") or not is_meld(cards):
        return False
    if not (may_keep_none(s) or hand):
        return False
    run = is_run([(c, False, 0) for c in cards])
    return any(_meets(t, s.must_play) for t in _windows(places, run))


def is_legal(s: State, text: str, legal: set[str] | None = None) -> bool:
    """Whether canonical action text is legal: in `legal_actions` (or `legal`, that set
    worked out once), or a longer meld that `meld_is_legal` reads as a start and lay-offs."""
    if text in (legal_actions(s) if legal is None else legal):
        return True
    kind, *args = text.split()
    if kind != "meld" or len(args) <= 3:
        return False
    return meld_is_legal(s, [_place(a, s.turn)[:2] for a in args])
