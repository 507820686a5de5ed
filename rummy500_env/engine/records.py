"""Game records: one game as JSON (rules, seed, every action, hand scores) that replays exactly.

A record is what you keep to look at a game again: ``training.evaluate --record DIR`` writes one
per game, the play page one per finished game (and saves the game in progress in the same
form), and ``python -m rummy500_env.play --replay FILE`` shows one step by step. It holds no
positions, only what is needed to rebuild every one of them: the rules and the seed deal
every hand (`Game.new` then `next_hand`, docs/rules.md §1 "Cards and deal"), and the actions
in the engine notation move the game on. The derived facts (each hand's dealer, scores,
totals, who went out, the winner) are written too, for readers, and checked on replay, so a
record that does not replay to what it says is refused rather than shown wrongly.

Format (version 1; docs/play.md has it with an example)::

    {
      "format": "rummy500-record", "version": 1,
      "rules": "standard",              # a preset name or a dict of Rules fields
      "seed": 8127319,                  # Game.new(rules, seed) deals every hand of the game
      "players": ["human", "expert"],   # who sat in each seat (free text, e.g. agent specs)
      "hands": [
        {"dealer": 1,
         "actions": [[0, "draw"], [0, "discard KS"], [1, "take"], ...],  # [player, action]
         "scores": [45, -12], "totals": [45, -12], "went_out": 0}         # once the hand is over
      ],
      "result": {"winner": 0, "totals": [512, 300]},  # once the game is over, else null
      "meta": {"source": "play", ...}                  # free-form
    }

Only the standard library and the engine are used here, so records can be read, checked and
replayed anywhere the engine runs.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rummy500_env.engine.errors import Rummy500Error
from rummy500_env.engine.files import write_atomically
from rummy500_env.engine.game import Game
from rummy500_env.engine.notation import Action
from rummy500_env.engine.numbers import read_json, shown
from rummy500_env.engine.positions import Position
from rummy500_env.engine.rules import Rules
from rummy500_env.engine.scoring import HandResult

FORMAT = "rummy500-record"
VERSION = 1
KEYS = ("format", "version", "rules", "seed", "players", "hands", "result", "meta")
HAND_KEYS = ("dealer", "actions", "scores", "totals", "went_out")


class RecordError(Rummy500Error):
    """A record that cannot be read or does not replay to what it says; the message names the
    hand and the action (counted from 1) and what was wrong."""


@dataclass
class HandRecord:
    """One hand: its dealer, its actions, and once it is over its scores and the totals after it."""

    dealer: int
    actions: list[tuple[int, str]] = field(default_factory=list)
    """(player, action in the notation), in the order played."""
    scores: list[int] | None = None
    """Each player's hand score (table value - hand value); None while the hand goes on."""
    totals: list[int] | None = None
    """Running totals after this hand; None while the hand goes on."""
    went_out: int | None = None
    """The player who went out, if anyone did."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "dealer": self.dealer,
            "actions": [[p, a] for p, a in self.actions],
            "scores": self.scores,
            "totals": self.totals,
            "went_out": self.went_out,
        }


@dataclass
class Record:
    """A game as played (see the module docstring for the JSON form)."""

    rules: Rules
    seed: int
    players: list[str]
    hands: list[HandRecord] = field(default_factory=list)
    winner: int | None = None
    """The winner once the game is over (None: not over, or a draw at `hand_limit`)."""
    final_totals: list[int] | None = None
    """The totals once the game is over; None while it goes on."""
    meta: dict[str, Any] = field(default_factory=dict)
    """Free-form facts about where the game came from (source, time, agents' files)."""

    @property
    def finished(self) -> bool:
        """Whether the game is over."""
        return self.final_totals is not None

    @property
    def action_count(self) -> int:
        """Actions played in the whole game."""
        return sum(len(h.actions) for h in self.hands)

    # --- the JSON form -------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """The JSON-compatible dict (the format in the module docstring)."""
        name = self.rules.preset_name()
        result = None
        if self.final_totals is not None:
            result = {"winner": self.winner, "totals": self.final_totals}
        return {
            "format": FORMAT,
            "version": VERSION,
            "rules": name if name is not None else self.rules.to_dict(),
            "seed": self.seed,
            "players": list(self.players),
            "hands": [h.to_dict() for h in self.hands],
            "result": result,
            "meta": self.meta,
        }

    @classmethod
    def from_dict(cls, d: Any) -> Record:
        """Read a record dict; raises `RecordError` saying what is missing or malformed. The
        shape is checked here; whether it replays is `replay`'s to check."""
        if not isinstance(d, dict) or d.get("format") != FORMAT:
            raise RecordError(f"not a game record: expected a JSON object with format {FORMAT!r}")
        if d.get("version") != VERSION:
            raise RecordError(
                f"record version {shown(d.get('version'))} is not supported: use {VERSION}"
            )
        unknown = sorted(set(d) - set(KEYS))
        if unknown:
            raise RecordError(f"unknown key(s) {unknown} in the record; allowed: {list(KEYS)}")
        try:
            rules = Rules.coerce(d.get("rules"))
        except Rummy500Error as e:
            raise RecordError(f"the record's rules: {e}") from None
        seed = d.get("seed")
        if type(seed) is not int:
            raise RecordError(f"the record's seed must be an int, got {shown(seed)}")
        players = d.get("players")
        if (
            not isinstance(players, list)
            or len(players) != rules.players
            or not all(isinstance(p, str) for p in players)
        ):
            raise RecordError(
                f"players must be a list of {rules.players} names (one per seat), got "
                f"{shown(players)}"
            )
        hands = d.get("hands")
        if not isinstance(hands, list):
            raise RecordError(f"hands must be a list, got {type(hands).__name__}")
        record = cls(rules, seed, players, [_read_hand(h, i, rules) for i, h in enumerate(hands)])
        result = d.get("result")
        if result is not None:
            if not isinstance(result, dict) or set(result) != {"winner", "totals"}:
                raise RecordError(f"result must be null or {{winner, totals}}, got {shown(result)}")
            record.winner = result["winner"]
            record.final_totals = _ints(result["totals"], rules.players, "result totals")
        meta = d.get("meta", {})
        if not isinstance(meta, dict):
            raise RecordError(f"meta must be an object, got {shown(meta)}")
        record.meta = meta
        return record

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the record as JSON, atomically (`write_atomically`), so a reader never sees
        half a file; returns the path. A full disk is a `DiskFullError` naming it."""
        text = self.to_json()
        return write_atomically(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))

    def to_json(self) -> str:
        """The record as JSON text for people too: one action, one list of scores per line."""
        text = json.dumps(self.to_dict(), indent=1)
        # Put every list of plain values on one line. json.dumps writes no raw newline inside
        # a string, so dropping newlines and indents only removes whitespace between tokens.
        flat = re.sub(
            r"\[[^\[\]{}]*\]", lambda m: "[" + re.sub(r"\n\s*", " ", m[0][1:-1]).strip() + "]", text
        )
        return flat + "\n"

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Record:
        """Read a record file; raises `RecordError` naming the file for anything unreadable."""
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as e:
            raise RecordError(f"cannot read the record {str(path)!r}: {e.strerror}") from None
        except UnicodeDecodeError as e:
            raise RecordError(
                f"{str(path)!r} is not a record: not UTF-8 text (byte {e.start}); a record is "
                "JSON as `Record.save` writes it"
            ) from None
        except ValueError as e:  # a name no file can have: a NUL byte in it
            raise RecordError(f"cannot read the record {str(path)!r}: {e}") from None
        data = read_json(
            text, repr(str(path)), RecordError, "a record is JSON as `Record.save` writes it"
        )
        try:
            return cls.from_dict(data)
        except RecordError as e:
            raise RecordError(f"{str(path)!r}: {e}") from None

    # --- replaying -----------------------------------------------------------------------------

    def replay(self) -> Game:
        """The game as it stands after the last recorded action, every step checked."""
        game = Game.new(self.rules, seed=self.seed)
        for _ in self._replay(game):
            pass
        return game

    def frames(self) -> Iterator[Frame]:
        """Every position of the game in order: each hand's deal, then one after each action
        (for watching a game step by step). Checked as `replay` checks."""
        game = Game.new(self.rules, seed=self.seed)
        for hand, step, player, action in self._replay(game):
            yield Frame(hand, step, player, action, game.position())

    def _replay(self, game: Game) -> Iterator[tuple[int, int, int | None, str | None]]:
        """Play the record on `game` (fresh from `Game.new`), yielding (hand, step, player,
        action) after each deal (step 0, no action) and each action; raises `RecordError` at
        the first thing that differs from the record."""
        for h, hand in enumerate(self.hands):
            where = f"hand {h + 1}"
            if h:
                if game.phase != "hand_over":
                    raise RecordError(f"{where}: the previous hand is not over ({game.phase})")
                game.next_hand()
            if hand.dealer != game.dealer:
                raise RecordError(f"{where}: the dealer is {game.dealer}, not {hand.dealer}")
            yield h, 0, None, None
            for i, (player, text) in enumerate(hand.actions):
                here = f"{where}, action {i + 1} ({player}: {shown(text)})"
                if game.is_hand_over:
                    raise RecordError(f"{here}: the hand is already over")
                if player != game.current_player:
                    raise RecordError(f"{here}: it is player {game.current_player}'s turn")
                try:
                    game.apply(text)
                except Rummy500Error as e:
                    raise RecordError(f"{here}: {e}") from None
                yield h, i + 1, player, text
            self._check_hand_end(game, hand, where, last=h == len(self.hands) - 1)
        self._check_result(game)

    def _check_hand_end(self, game: Game, hand: HandRecord, where: str, last: bool) -> None:
        """The recorded scores are there exactly when the hand is over, and are the engine's."""
        if not game.is_hand_over:
            if hand.scores is not None or not last:
                raise RecordError(f"{where}: the recorded actions do not end the hand")
            return
        result = game.result()
        found = (list(result.scores), list(result.totals), result.went_out)
        if (hand.scores, hand.totals, hand.went_out) != found:
            raise RecordError(
                f"{where}: the replay gives scores {found[0]}, totals {found[1]}, went_out "
                f"{found[2]}; the record says {hand.scores}, {hand.totals}, {hand.went_out}"
            )

    def _check_result(self, game: Game) -> None:
        over = game.phase == "game_over"
        if over != self.finished:
            said = "over" if self.finished else "not over"
            raise RecordError(f"the record says the game is {said}; the replay says {game.phase}")
        result = game.result() if over else None
        if result is not None and (self.winner, self.final_totals) != (
            result.winner,
            list(result.totals),
        ):
            raise RecordError(
                f"the replay gives winner {result.winner}, totals {list(result.totals)}; the "
                f"record says {self.winner}, {self.final_totals}"
            )


@dataclass(frozen=True)
class Frame:
    """One position of a replayed game: after hand `hand`'s deal (`step` 0) or its `step`-th
    action, played by `player`."""

    hand: int
    step: int
    player: int | None
    action: str | None
    position: Position


class Recorder:
    """Records a game as it is played: the play page and ``--record`` use one, so what is
    recorded is what was played. Either the recorder plays the game (`play`, `next_hand`), or
    it watches a game its caller plays (`watching`, then `note` after each action and
    `note_deal` after each new hand).

    >>> r = Recorder(Rules(), seed=7, players=["expert", "greedy"])
    >>> r.play("draw")
    Action(kind='draw', cards=(), target=-1, copy=1)
    >>> r.record.hands[0].actions
    [(0, 'draw')]
    """

    def __init__(
        self, rules: Rules, seed: int, players: list[str], meta: dict[str, Any] | None = None
    ) -> None:
        self.game = Game.new(rules, seed=seed)
        self.record = Record(rules, seed, list(players), meta=dict(meta or {}))
        self.note_deal()

    @classmethod
    def watching(
        cls, game: Game, players: list[str], meta: dict[str, Any] | None = None
    ) -> Recorder:
        """Record `game`, which the caller plays, from its deal: it must be fresh from
        `Game.new` (a record replays from the rules and the seed)."""
        if game.hands_played or game.turns or game.phase not in ("draw", "hand_over"):
            raise RecordError(
                "a recorder watches a game from its first deal (Game.new): this one has "
                f"{game.hands_played} hands and {game.turns} turns played, phase {game.phase!r}"
            )
        r = cls.__new__(cls)
        r.game = game
        r.record = Record(game.rules, game.seed, list(players), meta=dict(meta or {}))
        r.note_deal()
        return r

    @classmethod
    def resume(cls, record: Record) -> Recorder:
        """Carry on recording a game from its record (the play page's saved games)."""
        r = cls.__new__(cls)
        r.game = record.replay()
        r.record = record
        return r

    def play(self, action: Action | str) -> Action:
        """Apply an action for the player to act and record it; raises the engine's errors
        (`ActionParseError`, `IllegalActionError`) with the game unchanged."""
        a = action if isinstance(action, Action) else Action.parse(action)
        player = self.game.current_player
        self.game.apply(a)
        self.note(player, a)
        return a

    def next_hand(self) -> None:
        """Deal the next hand once one is over (`IllegalActionError` otherwise)."""
        self.game.next_hand()
        self.note_deal()

    def note(self, player: int, action: Action, ended: HandResult | None = None) -> None:
        """Record the action `player` has just played on the watched game. `ended`: the
        hand's result, when that action ended the hand and the caller has dealt the next one
        already (an env that plays whole games); call `note_deal` then too."""
        self.record.hands[-1].actions.append((player, str(action)))
        if ended is not None:
            self._close_hand(ended)
        elif self.game.is_hand_over:
            self._close_hand(self.game.result())

    def note_deal(self) -> None:
        """Record that the watched game has dealt a hand (its first, or after `next_hand`)."""
        self.record.hands.append(HandRecord(self.game.dealer))
        if self.game.is_hand_over:  # a deal can end the hand at once (§2 `ends_hand`)
            self._close_hand(self.game.result())

    def _close_hand(self, result: HandResult) -> None:
        hand = self.record.hands[-1]
        hand.scores, hand.totals = list(result.scores), list(result.totals)
        hand.went_out = result.went_out
        if result.game_over:
            self.record.winner, self.record.final_totals = result.winner, list(result.totals)


def _read_hand(d: Any, index: int, rules: Rules) -> HandRecord:
    where = f"hand {index + 1}"
    if not isinstance(d, dict) or set(d) != set(HAND_KEYS):
        raise RecordError(
            f"{where} must be an object with keys {list(HAND_KEYS)}, got {shown(d, 200)}"
        )
    actions = d["actions"]
    if not isinstance(actions, list):
        raise RecordError(f"{where}: actions must be a list of [player, action]")
    out: list[tuple[int, str]] = []
    for i, a in enumerate(actions):
        if (
            not isinstance(a, list)
            or len(a) != 2
            or type(a[0]) is not int
            or not isinstance(a[1], str)
        ):
            raise RecordError(f"{where}, action {i + 1}: expected [player, action], got {shown(a)}")
        out.append((a[0], a[1]))
    n = rules.players
    scores = None if d["scores"] is None else _ints(d["scores"], n, f"{where} scores")
    totals = None if d["totals"] is None else _ints(d["totals"], n, f"{where} totals")
    if type(d["dealer"]) is not int:
        raise RecordError(f"{where}: dealer must be an int, got {shown(d['dealer'])}")
    return HandRecord(d["dealer"], out, scores, totals, d["went_out"])


def _ints(value: Any, n: int, what: str) -> list[int]:
    if not isinstance(value, list) or len(value) != n or any(type(v) is not int for v in value):
        raise RecordError(f"{what} must be a list of {n} ints, got {shown(value)}")
    return list(value)
