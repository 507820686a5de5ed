"""The text protocol: what a seat may know, as a prompt for a language model, and its reply read.

A prompt is built from the seat's `SeatView` alone (never from the `Game`), so it cannot show
a card the seat could not know: the table's rules in a few lines, the seat's hand, the pile in
order, the melds with the owner of each card, the scores, the cards each player is known to
hold, the hand and stock sizes, the phase and its obligations, and every legal action in the
notation (one a line, or grouped by kind when there are many). `prompt_json` is the same as a
JSON object for tool-calling models, with `tool_schema` the function they call.

The prompt is also machine-readable: `read_prompt` (and `read_prompt_json`) rebuild the exact
`SeatView` and legal actions from it, which is how the offline baseline proves that a bot
deciding from the parsed prompt plays exactly as it does through the env.

A reply is read leniently (`find_action`): a JSON object with an ``"action"``, else the last
bracketed action (``[discard 5C]``, TextArena's convention), else the last action in the
notation anywhere in the text; `refusal` says, in the engine's words, why an action read is
not legal now. The loop that asks a model and retries is the agents' (`rummy500_env.agents.ask`).
docs/text.md has the format and the measured lengths.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import fields
from typing import Any

from rummy500_env.engine.cards import Card, card_str, cards_str, parse_card, parse_cards
from rummy500_env.engine.errors import Rummy500Error
from rummy500_env.engine.game import Game
from rummy500_env.engine.melds import Meld, meld_from_cards
from rummy500_env.engine.notation import SYNTAX, Action
from rummy500_env.engine.numbers import read_json
from rummy500_env.engine.positions import Phase
from rummy500_env.engine.rules import Rules
from rummy500_env.engine.seat_view import SeatView

PROTOCOL = "rummy500-text"
VERSION = 1
"""The prompt format's version: it changes when a line a parser reads changes."""
FULL_LIST_LIMIT = 30
"""Up to this many legal actions are listed one a line; more are grouped by kind."""
REPLY_HINT = (
    "Reply with exactly one legal action in square brackets, e.g. [discard 5C] or "
    "[meld 9D 9H 9S]. You may reason first; the last bracketed action in your reply counts."
)
PHASES: dict[str, str] = {
    "draw": "draw: draw, take the top card, or dig into the pile",
    "play": "play: meld and lay off as you like, then discard",
    "call": "call: call a pile card (Rummy!) or pass",
    "called": "called: you called; meld and lay off, then done",
    "hand_over": "hand over",
    "game_over": "game over",
}


class PromptReadError(Rummy500Error):
    """Text that is not a prompt of this protocol; says which line was wrong."""


class ReplyError(Rummy500Error):
    """A reply in which no action could be found; says what a reply must hold."""


# --- the prompt ------------------------------------------------------------------------------


def rules_text(rules: Rules) -> str:
    """The rules as `Rules.parse` reads them: ``standard`` and the fields that differ from its
    defaults (``standard,players=4,jokers=2``)."""
    default = Rules()
    parts = ["standard"]
    for f in fields(Rules):
        value = getattr(rules, f.name)
        if value != getattr(default, f.name):
            shown = (
                "none" if value is None else str(value).lower() if type(value) is bool else value
            )
            parts.append(f"{f.name}={shown}")
    return ",".join(parts)


def rules_brief(rules: Rules) -> list[str]:
    """The table's rules in a few lines (docs/rules.md, §1, §2 and §5, condensed)."""
    r = rules
    deck = f"{r.deck_count} deck{'s' if r.deck_count > 1 else ''} of 52"
    if r.jokers:
        deck += f" plus {r.joker_count} jokers"
    lines = [
        f"Deal: {r.cards_per_hand} cards each from {deck}; the rest is the stock, one card "
        "starts the face-up discard pile (everyone sees the pile in order).",
        "Turn: first draw (top of the stock), take (top of the pile) or dig CARD (a card below "
        "the top and every card above it; the dug card must go on the table this turn, in a "
        "new meld or a lay-off, and nothing may be discarded until it does); then meld and "
        "lay off as you like; then discard one card, which may not be the card you took from "
        "the top of the pile this turn unless it is your last.",
        "Melds: a set is 3 or 4 cards of one rank in different suits; a run is 3 or more "
        "cards of one suit in sequence (A-2-3 or Q-K-A, never K-A-2). Lay off: add one card "
        "of yours to any meld on the table (meld #N as listed); it scores for you.",
        _hand_end(r),
    ]
    values = {
        "pip": "2-10 their number, J Q K 10, ace 15 (1 at the bottom of a run on the table)",
        "fives": "2-9 5, 10 J Q K 10, ace 15 (5 at the bottom of a run on the table)",
    }[r.scoring]
    if r.jokers:
        values += ", joker 15 anywhere"
    lines.append(
        "Score each hand: the value of the cards you put on the table minus the value of the "
        f"cards left in your hand. Values: {values}."
    )
    lines.append(_game_end(r))
    if r.top_card_must_meld:
        lines.append("Taking the top card obliges you to put it on the table this turn, as a dig.")
    if r.jokers:
        lines.append(
            "Jokers (JK) are wild: in a meld or a lay-off write what a joker stands for "
            "(meld 9S 9H JK=9D, layoff JK=10C 2); it stays that card."
        )
    if r.rummy_calls:
        lines.append(
            "Rummy! calls: after a discard the others, in seat order, may call a pile card they "
            "can put down at once (call 9D: it and the cards above it), then meld and lay off "
            "out of turn and end with done; pass declines."
        )
    return lines


def _hand_end(r: Rules) -> str:
    """The line of `rules_brief` on how a hand ends, which two rules (going out, an empty
    stock) shape."""
    out = "The hand ends when a player has no cards left (going out"
    out += ", and the last card must be a discard)" if r.discard_to_go_out else ")"
    stock = {
        "pile_only": "once the stock is empty you may still take or dig, or decline, which "
        "ends the hand",
        "ends_hand": "the hand ends when the stock is empty",
        "pile_must_use": "once the stock is empty, a card taken from the pile must be put "
        "on the table at once, or you decline, which ends the hand",
    }[r.stock_out]
    return f"{out}; {stock}."


def _game_end(r: Rules) -> str:
    """The line of `rules_brief` on how the game ends: the target, who may end it and the
    limits, when the rules set them."""
    end = (
        f"The game ends after a hand in which a total reaches {r.target}: the highest total "
        "wins (a tie for the lead plays on)"
    )
    if r.winner_must_go_out:
        end += "; only the player who went out can end it"
    limits = []
    if r.turn_limit is not None:
        limits.append(f"a hand stops after {r.turn_limit} turns")
    if r.hand_limit is not None:
        limits.append(f"the game after {r.hand_limit} hands")
    return end + (f". Limits: {', '.join(limits)}." if limits else ".")


def _seat(q: int, you: int) -> str:
    return f"P{q} (you)" if q == you else f"P{q}"


def group_actions(legal: Sequence[Action]) -> list[tuple[str, list[str]]]:
    """The legal actions by kind, in the engine's order: (kind, the arguments of each)."""
    groups: dict[str, list[str]] = {}
    for a in legal:
        kind, _, rest = str(a).partition(" ")
        groups.setdefault(kind, []).append(rest)
    return list(groups.items())


def render_prompt(
    view: SeatView,
    legal: Sequence[Action],
    refusal: str | None = None,
    full_list_limit: int = FULL_LIST_LIMIT,
) -> str:
    """The prompt for the seat of `view` (which is to act) with its `legal` actions; with a
    `refusal`, the engine's reason the last reply was refused comes first."""
    v, n = view, view.players
    you = v.seat
    lines: list[str] = []
    if refusal is not None:
        lines += [f"REFUSED: {refusal}", "Choose again from the legal actions below.", ""]
    lines += [
        f"You are playing Rummy 500 as P{you}, one of {n} players (P0 to P{n - 1}).",
        f"rules: {rules_text(v.rules)}",
        *(f"- {line}" for line in rules_brief(v.rules)),
        "Cards: rank A 2-10 J Q K then suit C D H S (10H, QS, AC); JK is a joker.",
        "",
        "STATE",
        f"hand: {v.hands_played + 1}, dealer: P{v.dealer}, turns played: {v.turns}",
        f"phase: {PHASES[v.phase]}",
        f"to act: {_seat(v.turn, you)}",
        "totals before this hand: " + ", ".join(f"P{q} {t}" for q, t in enumerate(v.totals)),
        f"your hand ({len(v.hand)}): {cards_str(v.hand) or '(empty)'}",
    ]
    if v.known[you]:
        lines.append(f"others know you hold: {cards_str(v.known[you])}")
    for q in v.opponents:
        known = f"; known to hold: {cards_str(v.known[q])}" if v.known[q] else ""
        lines.append(f"P{q} holds {v.hand_sizes[q]} cards{known}")
    lines.append(f"stock: {v.stock_size} cards")
    pile = cards_str(v.pile) if v.pile else "(empty)"
    lines.append(f"pile, bottom to top ({len(v.pile)}): {pile}")
    lines.append(f"melds ({len(v.melds)}):" + ("" if v.melds else " none"))
    for i, m in enumerate(v.melds):
        owned = " ".join(f"{c}/P{o}" for c, o in zip(m.labels(), m.owners, strict=True))
        lines.append(f"  #{i} {m.kind}: {owned}")
    if v.must_play is not None:
        lines.append(f"must play this turn: {card_str(v.must_play)}")
    if v.taken_top is not None:
        lines.append(f"may not discard: {card_str(v.taken_top)}")
    if v.discarder is not None:
        lines.append(f"call window after: P{v.discarder}'s discard")
    lines += ["", f"LEGAL ACTIONS ({len(legal)})"]
    if len(legal) <= full_list_limit:
        lines += [f"  {a}" for a in legal]
    else:
        lines.append("  (grouped by kind: write the kind word, then one item of its list)")
        lines += [
            f"  {kind}: {', '.join(items)}" if items[0] else f"  {kind}"
            for kind, items in group_actions(legal)
        ]
    lines += ["", REPLY_HINT]
    return "\n".join(lines)


def prompt_json(
    view: SeatView, legal: Sequence[Action], refusal: str | None = None
) -> dict[str, Any]:
    """The prompt as a JSON-compatible object, for tool-calling models (`tool_schema`)."""
    v = view
    return {
        "protocol": PROTOCOL,
        "version": VERSION,
        "refused": refusal,
        "rules": rules_text(v.rules),
        "rules_brief": rules_brief(v.rules),
        "you": v.seat,
        "players": v.players,
        "hand_number": v.hands_played + 1,
        "dealer": v.dealer,
        "turns": v.turns,
        "phase": v.phase,
        "to_act": v.turn,
        "totals": list(v.totals),
        "hand": [card_str(c) for c in v.hand],
        "known": [[card_str(c) for c in k] for k in v.known],
        "hand_sizes": list(v.hand_sizes),
        "stock": v.stock_size,
        "pile": [card_str(c) for c in v.pile],
        "melds": [{"kind": m.kind, "cards": m.labels(), "owners": list(m.owners)} for m in v.melds],
        "must_play": None if v.must_play is None else card_str(v.must_play),
        "may_not_discard": None if v.taken_top is None else card_str(v.taken_top),
        "discarder": v.discarder,
        "legal": [str(a) for a in legal],
        "grammar": SYNTAX,
    }


def render_prompt_json(view: SeatView, legal: Sequence[Action], refusal: str | None = None) -> str:
    """`prompt_json` as compact JSON text: the prompt of the ``tools`` mode (`ask`'s
    `render`); `read_prompt_json(json.loads(text))` reads it back."""
    return json.dumps(prompt_json(view, legal, refusal), separators=(",", ":"))


def tool_schema(legal: Sequence[Action] | None = None) -> dict[str, Any]:
    """The OpenAI-style function tool a model calls to act; with `legal`, its argument is
    limited to those actions (an ``enum``)."""
    action: dict[str, Any] = {"type": "string", "description": "one legal action in notation"}
    if legal is not None:
        action["enum"] = [str(a) for a in legal]
    return {
        "type": "function",
        "function": {
            "name": "play",
            "description": "Play one legal Rummy 500 action, e.g. 'discard 5C'.",
            "parameters": {
                "type": "object",
                "properties": {"action": action},
                "required": ["action"],
            },
        },
    }


# --- reading a prompt back -------------------------------------------------------------------

_PHASE_OF = {text.partition(":")[0]: phase for phase, text in PHASES.items()}


def read_prompt(text: str) -> tuple[SeatView, list[Action]]:
    """The `SeatView` and legal actions a prompt of `render_prompt` shows (`PromptReadError`
    naming the line when it is not one). The view's ``result`` is None: a prompt is asked of
    a seat that is to act."""
    lines = text.split("\n")
    at = {"i": 0}

    def find(prefix: str, optional: bool = False) -> str | None:
        for i in range(at["i"], len(lines)):
            if lines[i].startswith(prefix):
                at["i"] = i + 1
                return lines[i][len(prefix) :]
        if optional:
            return None
        raise PromptReadError(f"no line starting {prefix!r} in the prompt")

    def need(prefix: str) -> str:
        got = find(prefix)
        assert got is not None
        return got

    try:
        you_line = next(x for x in lines if x.startswith("You are playing"))
        head = re.match(r"You are playing Rummy 500 as P(\d+), one of (\d+)", you_line)
        if head is None:
            raise PromptReadError("no 'You are playing Rummy 500 as P<n>' line")
        you = int(head[1])
        at["i"] = lines.index(you_line) + 1
        rules = Rules.parse(need("rules: "))
        n = rules.players
        m = re.fullmatch(r"(\d+), dealer: P(\d+), turns played: (\d+)", need("hand: "))
        if m is None:
            raise PromptReadError("the 'hand:' line is not 'N, dealer: PN, turns played: N'")
        hands_played, dealer, turns = int(m[1]) - 1, int(m[2]), int(m[3])
        phase = _phase(_PHASE_OF[need("phase: ").partition(":")[0]])
        turn = int(need("to act: P").split()[0])
        totals = tuple(int(x.split()[1]) for x in need("totals before this hand: ").split(", "))
        hand = tuple(_cards(need("your hand (").partition("): ")[2]))
        known: list[tuple[Card, ...]] = [()] * n
        sizes = [0] * n
        sizes[you] = len(hand)
        mine = find("others know you hold: ", optional=True)
        if mine is not None:
            known[you] = tuple(_cards(mine))
        for q in [(you + k) % n for k in range(1, n)]:
            size, _, cards = need(f"P{q} holds ").partition(" cards")
            sizes[q] = int(size)
            known[q] = tuple(_cards(cards.partition("; known to hold: ")[2]))
        stock = int(need("stock: ").split()[0])
        pile = tuple(_cards(need("pile, bottom to top (").partition("): ")[2]))
        count = int(need("melds (").partition(")")[0])
        melds = tuple(_meld(need(f"  #{i} ")) for i in range(count))
        must = find("must play this turn: ", optional=True)
        top = find("may not discard: ", optional=True)
        window = find("call window after: P", optional=True)
        listed = int(need("LEGAL ACTIONS (").partition(")")[0])
        legal = _legal_lines(lines[at["i"] :], listed)
    except (Rummy500Error, ValueError, KeyError, IndexError, StopIteration) as e:
        if isinstance(e, PromptReadError):
            raise
        raise PromptReadError(f"not a prompt of this protocol: {e}") from None
    view = SeatView(
        rules=rules,
        seat=you,
        dealer=dealer,
        turn=turn,
        phase=phase,
        hand=hand,
        pile=pile,
        melds=melds,
        known=tuple(known),
        hand_sizes=tuple(sizes),
        stock_size=stock,
        totals=totals,
        taken_top=None if top is None else parse_card(top),
        must_play=None if must is None else parse_card(must),
        discarder=None if window is None else int(window.partition("'")[0]),
        turns=turns,
        hands_played=hands_played,
        result=None,
    )
    return view, legal


def _cards(text: str) -> list[Card]:
    text = text.strip()
    return [] if text in ("", "(empty)") else parse_cards(text)


def _meld(line: str) -> Meld:
    """A meld line's cards and owners (``run: 9S/P0 10S/P0 JS/P1``) as the engine's `Meld`."""
    cards: list[Card] = []
    owners: list[int] = []
    jokers = 0
    for place in line.partition(": ")[2].split():
        label, _, owner = place.partition("/P")
        head, eq, stands = label.partition("=")
        card = parse_card(stands if eq else head)
        if eq:
            jokers |= 1 << card
        cards.append(card)
        owners.append(int(owner))
    m = meld_from_cards(cards, tuple(owners), jokers)
    if m is None:
        raise PromptReadError(f"meld line {line!r} is no meld")
    return m


def _legal_lines(lines: list[str], listed: int) -> list[Action]:
    """The actions of the LEGAL ACTIONS block, one a line or grouped by kind."""
    out: list[Action] = []
    for line in lines:
        if not line.startswith("  "):
            break
        body = line.strip()
        if body.startswith("("):
            continue
        kind, colon, items = body.partition(": ")
        if colon and kind.isalpha():
            out += [Action.parse(f"{kind} {item}") for item in items.split(", ")]
        else:
            out.append(Action.parse(body))
    if len(out) != listed:
        raise PromptReadError(f"the prompt says {listed} legal actions and lists {len(out)}")
    return out


def read_prompt_json(d: dict[str, Any]) -> tuple[SeatView, list[Action]]:
    """The `SeatView` and legal actions of a `prompt_json` object."""
    try:
        if d.get("protocol") != PROTOCOL or d.get("version") != VERSION:
            raise PromptReadError(f"not a {PROTOCOL} version {VERSION} object")
        rules = Rules.parse(d["rules"])
        melds = []
        for md in d["melds"]:
            places = " ".join(f"{c}/P{o}" for c, o in zip(md["cards"], md["owners"], strict=True))
            melds.append(_meld(f"{md['kind']}: {places}"))
        view = SeatView(
            rules=rules,
            seat=int(d["you"]),
            dealer=int(d["dealer"]),
            turn=int(d["to_act"]),
            phase=_phase(d["phase"]),
            hand=tuple(parse_card(c) for c in d["hand"]),
            pile=tuple(parse_card(c) for c in d["pile"]),
            melds=tuple(melds),
            known=tuple(tuple(parse_card(c) for c in k) for k in d["known"]),
            hand_sizes=tuple(int(s) for s in d["hand_sizes"]),
            stock_size=int(d["stock"]),
            totals=tuple(int(t) for t in d["totals"]),
            taken_top=None if d["may_not_discard"] is None else parse_card(d["may_not_discard"]),
            must_play=None if d["must_play"] is None else parse_card(d["must_play"]),
            discarder=d["discarder"],
            turns=int(d["turns"]),
            hands_played=int(d["hand_number"]) - 1,
            result=None,
        )
        return view, [Action.parse(a) for a in d["legal"]]
    except PromptReadError:
        raise
    except (Rummy500Error, ValueError, KeyError, TypeError) as e:
        raise PromptReadError(f"not a {PROTOCOL} object: {e!r}") from None


def _phase(text: object) -> Phase:
    if text not in PHASES:
        raise PromptReadError(f"unknown phase {text!r}; phases are {', '.join(PHASES)}")
    return text  # type: ignore[return-value]  # checked just above


# --- reading a reply -------------------------------------------------------------------------

_CARD = r"(?:10|[2-9TJQKA])[CDHS\u2663\u2666\u2665\u2660]"
_ONE = rf"(?:{_CARD}|JK)"
_PLACE = rf"(?:JK=)?{_CARD}|JK"
_ACTION = re.compile(
    rf"(?<![\w=])(?:draw|take|decline|pass|done|(?:dig|call)\s+{_ONE}(?:#\d)?"
    rf"|meld(?:[\s,]+(?:{_PLACE})){{3,}}|layoff\s+(?:{_PLACE})\s+\d{{1,3}}|discard\s+{_ONE})(?![\w=])",
    re.IGNORECASE,
)
_BRACKETED = re.compile(r"\[([^\[\]\n]{1,200})\]")


def find_action(reply: str) -> Action:
    """The action a reply names (`ReplyError` when none): a JSON object's ``"action"``, else
    the last bracketed action, else the last action in the notation anywhere in the text.
    Whether it is legal is the caller's to judge."""
    if not isinstance(reply, str):
        raise ReplyError(f"a reply must be text, got {type(reply).__name__}")
    text = _unfenced(reply.strip())
    if text.startswith("{"):
        try:  # not JSON, nested too deeply or a number too long to read: read on as text
            obj = read_json(text, "the reply", ReplyError)
        except ReplyError:
            obj = None
        if isinstance(obj, dict) and isinstance(obj.get("action"), str):
            return Action.parse(obj["action"])
    for inside in reversed(_BRACKETED.findall(reply)):
        try:
            return Action.parse(inside)
        except Rummy500Error:
            continue
    found = _ACTION.findall(reply)
    if found:
        return Action.parse(found[-1])
    raise ReplyError(
        f"no action found in the reply; {REPLY_HINT[0].lower()}{REPLY_HINT[1:]} ({SYNTAX})"
    )


def _unfenced(text: str) -> str:
    """The text inside a Markdown code fence (```json ... ```), else the text. No regex: a
    reply is raw model output, and a pattern that backtracks over long whitespace would make
    reading it quadratic."""
    if text.startswith("```") and text.endswith("```") and len(text) >= 6:
        first_line_end = text.find("\n")
        return text[first_line_end + 1 if first_line_end >= 0 else 3 : -3].strip()
    return text


def refusal(view: SeatView, legal: Sequence[Action], action: Action) -> str | None:
    """Why `action` is refused for the seat of `view`, in the engine's words (`Game.why_illegal`
    on a position the seat cannot tell from the real one, which only its own cards and the
    public table decide); None when it is one of `legal`."""
    if action in legal:
        return None
    if not action.has_card_ids():
        return f"{action!r} names no cards"
    why = Game.from_seat_view(view, 0, check=False).why_illegal(action)
    if why is None:  # legal to the engine, yet not listed: a meld of more than three cards
        why = (
            "melds are played in their three-card form (lay off the other cards next)"
            if action.kind == "meld"
            else "it is not among the legal actions listed"
        )
    return f"{action} is illegal: {why}"
