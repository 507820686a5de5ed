"""`Rules`: every variant of docs/rules.md §2, §4 and §5 as one frozen dataclass, with presets.

Variants are fields, not subclasses, so any combination can be built and checked in one place
(`__post_init__` raises `RulesError` naming the field, the value and what is allowed).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Literal

from rummy500_env.engine.errors import RulesError
from rummy500_env.engine.numbers import int_range, read_int, read_json, shown

Scoring = Literal["pip", "fives"]
StockOut = Literal["pile_only", "ends_hand", "pile_must_use"]

SCORINGS: tuple[str, ...] = ("pip", "fives")
STOCK_OUTS: tuple[str, ...] = ("pile_only", "ends_hand", "pile_must_use")
MIN_PLAYERS, MAX_PLAYERS = 2, 8


@dataclass(frozen=True)
class Rules:
    """One playable rules configuration (docs/rules.md §2, §4, §5); the defaults are `standard`."""

    players: int = 2
    """Number of players, 2 to 8."""
    hand_size: int | None = None
    """Cards dealt to each player; None means 13 with 2 players, 7 with 3 or more."""
    decks: int | None = None
    """1 or 2 decks; None means 1, or 2 from 5 players on."""
    scoring: Scoring = "pip"
    """"pip" (2-10 pip, JQK 10, ace 15 or 1 low) or "fives" (2-9 5, 10-K 10, ace 15 or 5 low)."""
    stock_out: StockOut = "pile_only"
    """What happens when the stock is empty: "pile_only", "ends_hand" or "pile_must_use"."""
    discard_to_go_out: bool = False
    """The last card must be discarded: a meld or lay-off that empties the hand is illegal."""
    top_card_must_meld: bool = False
    """Taking the top discard carries the same obligation as a dig."""
    winner_must_go_out: bool = False
    """The game ends only when the player who went out reaches the target; that player wins."""
    target: int = 500
    """Running total that ends the game."""
    jokers: int = 0
    """0, or 2 wild jokers added to each deck (docs/rules.md §5)."""
    rummy_calls: bool = False
    """Out-of-turn "Rummy!" calls on the pile after every discard (docs/rules.md §5)."""
    turn_limit: int | None = 200
    """Turns in one hand after which it ends as if the stock were empty (docs/rules.md §4)."""
    hand_limit: int | None = 100
    """Hands in one game after which it stops, highest total winning (docs/rules.md §4)."""

    def __post_init__(self) -> None:
        _check_int("players", self.players, MIN_PLAYERS, MAX_PLAYERS)
        if self.decks is not None and (type(self.decks) is not int or self.decks not in (1, 2)):
            raise RulesError(f"decks={shown(self.decks)} is not allowed: use 1, 2 or None (auto)")
        if self.hand_size is not None:
            _check_int("hand_size", self.hand_size, 1, None)
        _check_choice("scoring", self.scoring, SCORINGS)
        _check_choice("stock_out", self.stock_out, STOCK_OUTS)
        for name in ("discard_to_go_out", "top_card_must_meld", "winner_must_go_out"):
            _check_choice(name, getattr(self, name), (True, False))
        _check_int("target", self.target, 1, None)
        _check_choice("jokers", self.jokers, (0, 2))
        self._check_hand_size()  # reads players, decks and jokers, checked above
        _check_choice("rummy_calls", self.rummy_calls, (True, False))
        for name in ("turn_limit", "hand_limit"):
            if getattr(self, name) is not None:
                _check_int(name, getattr(self, name), 1, None, none_ok=True)

    def _check_hand_size(self) -> None:
        """The hands dealt, given or by default, must leave at least one card for the pile
        (docs/rules.md §2)."""
        deck, size = self.deck_size, self.cards_per_hand
        if self.players * size + 1 > deck:
            most = (deck - 1) // self.players
            default_note = " (the default for this many players)" if self.hand_size is None else ""
            raise RulesError(
                f"hand_size={size}{default_note} with players={self.players} and "
                f"decks={self.deck_count} leaves no card for the pile: "
                f"{self.players}x{size}+1 > {deck} cards; allowed: hand_size 1..{most}"
                + (", or decks=2" if self.deck_count == 1 else "")
            )

    @property
    def deck_count(self) -> int:
        """Decks in play, with the `None` default resolved."""
        if self.decks is not None:
            return self.decks
        return 2 if self.players >= 5 else 1

    @property
    def cards_per_hand(self) -> int:
        """Cards dealt to each player, with the `None` default resolved."""
        if self.hand_size is not None:
            return self.hand_size
        return 13 if self.players == 2 else 7

    @property
    def deck_size(self) -> int:
        """Total cards in play: 52 per deck, 54 with jokers."""
        return (52 + self.jokers) * self.deck_count

    @property
    def joker_count(self) -> int:
        """Jokers in play: `jokers` per deck."""
        return self.jokers * self.deck_count

    @classmethod
    def preset(cls, name: str, **overrides: Any) -> Rules:
        """A named bundle of fields (docs/rules.md §2), with any field overridden.

        >>> Rules.preset("nordic", players=4).stock_out
        'ends_hand'
        """
        if name not in PRESETS:
            raise RulesError(f"unknown preset {shown(name)}: use one of {tuple(PRESETS)}")
        fields = dict(PRESETS[name])
        fields.update(overrides)
        return cls.from_dict(fields)

    @classmethod
    def from_dict(cls, fields: dict[str, Any]) -> Rules:
        """Build from a dict of fields, rejecting unknown names with the list of known ones."""
        if not isinstance(fields, dict):
            raise RulesError(
                f"rules must be a preset name or a dict of fields, not {shown(fields)}"
            )
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(str(name) for name in set(fields) - known)
        if unknown:
            raise RulesError(
                f"unknown rules field(s) {shown(unknown, 200)}; known fields: {sorted(known)}"
            )
        return cls(**fields)

    @classmethod
    def parse(cls, text: str, players: int | None = None) -> Rules:
        """Rules from command-line text, the one ``--rules`` parser of every command.

        Three forms: a preset name (``nordic``); a preset and ``field=value`` overrides, comma
        separated, the preset optional (``standard,target=300``, ``target=300``; values
        ``true``/``false``, ``none``, ints, else text); or a JSON object of fields, with an
        optional ``"preset"`` key (``{"jokers": 2, "rummy_calls": true}``). `players` comes from
        a separate option (``--players``): the text may leave it out or agree with it. Every
        mistake is a `RulesError` that quotes the text and says what is allowed; a number is
        read as `numbers.read_int` reads one (ASCII digits, at most 20), so ``target=٣٠٠``
        or a 5,000-digit target is refused, not read.

        >>> Rules.parse("nordic,target=300", players=3).target
        300
        >>> Rules.parse('{"preset": "fives", "jokers": 2}').jokers
        2
        """
        if not isinstance(text, str):
            raise RulesError(f"rules must be text, not {shown(text)}: {_forms()}")
        preset, fields = _parse_json(text) if text.lstrip().startswith("{") else _parse_text(text)
        if preset not in PRESETS:
            raise RulesError(f"rules {_quoted(text)}: unknown preset {shown(preset)}; {_forms()}")
        if players is not None:
            if fields.get("players", players) != players:
                raise RulesError(
                    f"rules {_quoted(text)} set players={shown(fields['players'])}, but "
                    f"players={players} "
                    "is given too (--players): give it once, or the same number"
                )
            fields["players"] = players
        try:
            return cls.preset(preset, **fields)
        except RulesError as e:  # a field or a combination: quote the text it came from
            raise RulesError(f"rules {_quoted(text)}: {e}") from None

    @classmethod
    def coerce(cls, rules: Rules | str | dict[str, Any] | None) -> Rules:
        """Accept a `Rules`, a preset name or a dict of fields (None: the standard preset)."""
        if rules is None:
            return cls()
        if isinstance(rules, Rules):
            return rules
        if isinstance(rules, str):
            return cls.preset(rules)
        return cls.from_dict(rules)

    def to_dict(self) -> dict[str, Any]:
        """The fields as a JSON-compatible dict."""
        return dataclasses.asdict(self)

    def preset_name(self) -> str | None:
        """The name of the preset these rules equal exactly, if any."""
        for name, fields in PRESETS.items():
            if Rules(**fields) == self:
                return name
        return None


def _forms() -> str:
    """What `Rules.parse` accepts, for its error messages."""
    return (
        f"give a preset ({', '.join(PRESETS)}), optionally followed by field=value overrides "
        "(standard,target=300), or a JSON object of fields "
        """('{"preset": "nordic", "jokers": 2}')"""
    )


def _parse_text(text: str) -> tuple[str, dict[str, Any]]:
    """``preset,field=value,...`` -> (preset, fields); the preset may be left out."""
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if not parts:
        raise RulesError(f"rules {_quoted(text)} are empty: {_forms()}")
    preset = parts.pop(0) if "=" not in parts[0] else "standard"
    fields: dict[str, Any] = {}
    for part in parts:
        key, eq, value = (s.strip() for s in part.partition("="))
        if not eq or not key:
            raise RulesError(
                f"rules {_quoted(text)}: {shown(part)} is not field=value (only the first item "
                "may be a preset name), e.g. standard,target=300"
            )
        if key in fields:
            raise RulesError(f"rules {_quoted(text)} set {key[:40]} twice: give each field once")
        try:
            fields[key] = _value(key, value)
        except RulesError as e:
            raise RulesError(f"rules {_quoted(text)}: {e}") from None
    return preset, fields


def _parse_json(text: str) -> tuple[str, dict[str, Any]]:
    """A JSON object of fields -> (its ``"preset"``, default standard; the other fields)."""
    # an object, as the text starts with "{" (anything after it is not valid JSON)
    fields: dict[str, Any] = read_json(text, f"rules {_quoted(text)}", RulesError, _forms())
    preset = fields.pop("preset", "standard")
    if not isinstance(preset, str):
        raise RulesError(
            f'rules {_quoted(text)}: "preset" must be a preset name, not {shown(preset)}'
        )
    return preset, fields


def _quoted(text: str) -> str:
    """The rules text as a message quotes it: the start of a long one is enough to find it."""
    return shown(text, 100)


INT_FIELDS: dict[str, tuple[int | None, int | None]] = {
    "players": (MIN_PLAYERS, MAX_PLAYERS),
    "hand_size": (1, None),
    "decks": (None, None),
    "target": (1, None),
    "jokers": (None, None),
    "turn_limit": (1, None),
    "hand_limit": (1, None),
}
"""The int fields with the range `Rules` checks (decks and jokers are a choice, which
`Rules` names); `Rules.parse` reads their values with `read_int`."""


def _value(key: str, text: str) -> Any:
    """A field value from text: true/false, none/null, an int for an int field (`read_int`,
    so ``٣٠٠`` or ``5²`` is refused here, not read as 300 or a crash), or the text itself (a
    wrong type is then reported by `Rules` with the field's allowed values)."""
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("none", "null"):
        return None
    if key in INT_FIELDS:
        low_end, high_end = INT_FIELDS[key]
        return read_int(text, key, low_end, high_end, RulesError)
    return text


def _check_choice(name: str, value: object, allowed: tuple[object, ...]) -> None:
    """`value` is one of `allowed`, with its exact type (so True is not the int 1)."""
    if not any(value == a and type(value) is type(a) for a in allowed):
        use = " or ".join(repr(a) for a in allowed)
        raise RulesError(f"{name}={shown(value)} is not allowed: use {use}")


def _check_int(name: str, value: object, low: int, high: int | None, none_ok: bool = False) -> None:
    allowed = int_range(low, high) + (" or None" if none_ok else "")
    if type(value) is not int or value < low or (high is not None and value > high):
        raise RulesError(f"{name}={shown(value)} is not allowed: use {allowed}")


PRESETS: dict[str, dict[str, Any]] = {
    "standard": {},
    "pagat": {},
    "nordic": {"scoring": "fives", "stock_out": "ends_hand"},
    "fives": {"scoring": "fives"},
    "app": {"stock_out": "pile_must_use"},
}
"""docs/rules.md §2 presets as field overrides of the defaults. `pagat` equals `standard` for two
players; it differs in being meant for 2-8 players with its house-rule fields switched on."""
