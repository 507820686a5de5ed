"""One game at the table: the human in seat 0 against computer agents, recorded as it goes.

A `Table` owns a `Recorder` (the game and its record), so the record is the saved game: the
server stores it after every move and `Table.resume` rebuilds the exact game from it. The
computers (`Computers`) see only what their seat may, as in training and tournaments: a bot
decides on its seat's information state, a policy on its seat's observation and mask.
"""

from __future__ import annotations

import datetime
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from rummy500_env.agents.llm import EndpointError
from rummy500_env.agents.registry import make_agent
from rummy500_env.engine.cards import card_str
from rummy500_env.engine.errors import ActionParseError, Rummy500Error
from rummy500_env.engine.game import Game
from rummy500_env.engine.notation import Action
from rummy500_env.engine.records import Record, Recorder
from rummy500_env.engine.rules import Rules
from rummy500_env.play.plan import Mark, hand_marks, put_down_plan
from rummy500_env.play.view import describe, display_key, table_view
from rummy500_env.rl.actions import ActionCodec
from rummy500_env.rl.observation import ObservationEncoder
from rummy500_env.rl.opponents import Agent, choose

HUMAN = 0
"""The human's seat. Seat 0 leads the first hand (docs/rules.md §1: the last seat deals)."""
LOG_LENGTH = 40
"""Moves of the current hand sent with each view (the page shows the latest)."""
Waiting = Literal["you", "computer", "next_hand", "game_over"]


class PlayError(Rummy500Error):
    """A request the table refuses; `status` is the HTTP status the server answers with
    (400 malformed, 404 unknown game, 409 not now, 422 against the rules)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Setup:
    """The command line's choices, the same for every game the server deals."""

    rules: Rules
    opponent: str
    """The computers' agent spec (a policy file as an absolute path)."""

    def labels(self) -> list[str]:
        """Who sits in each seat, as the record writes it."""
        return ["human"] + [self.opponent] * (self.rules.players - 1)

    def names(self) -> list[str]:
        """How the page names each seat."""
        n = self.rules.players
        if n == 2:
            return ["You", "Computer"]
        return ["You"] + [f"Computer {q}" for q in range(1, n)]

    def opponent_label(self) -> str:
        """The computer's spec as the page shows it (a policy file by its name)."""
        return Path(self.opponent).name if self.opponent.endswith(".pt") else self.opponent


class Computers:
    """The computer seats' agents. A bot decides on its seat's information state
    (`Game.seat_view`) and the legal actions; a policy on its seat's observation and mask,
    encoded from that same position. Either way the agent sees only what its seat may."""

    def __init__(self, setup: Setup) -> None:
        rules = setup.rules
        self.spec = setup.opponent
        self.agents: dict[int, Agent] = {
            seat: make_agent(setup.opponent, rules, seed=seat) for seat in range(1, rules.players)
        }
        self.codec = ActionCodec(rules)
        self.encoder = ObservationEncoder(rules)
        self.lock = threading.Lock()
        """One decision at a time: the agents (and their random streams) serve every game
        of the server, which may ask from several threads."""

    def choose(self, game: Game) -> Action:
        """The action the agent of the seat to act picks."""
        with self.lock:
            return self._choose(game)

    def _choose(self, game: Game) -> Action:
        seat = game.current_player
        mask = self.codec.mask(game)
        try:
            choice = choose(
                self.agents[seat], game, self.codec, lambda: self._observation(game, seat, mask)
            )
        except EndpointError as e:  # a chat endpoint that is down: the page may try again
            raise PlayError(503, f"the computer ({self.spec}) cannot move now: {e}") from None
        if not (isinstance(choice, int) and 0 <= choice < len(mask) and mask[choice]):
            raise PlayError(
                500, f"the computer ({self.spec}) chose {choice!r}, which is no legal action id"
            )
        return self.codec.decode(game, choice)

    def _observation(self, game: Game, seat: int, mask: Any) -> dict[str, Any]:
        return {"observation": self.encoder.encode(game, seat), "action_mask": mask}


class Table:
    """One game: the human's moves, the computers' moves, and the human's view of it."""

    def __init__(self, game_id: str, setup: Setup, computers: Computers, recorder: Recorder):
        self.id = game_id
        self.setup = setup
        self.computers = computers
        self.recorder = recorder
        self.names = setup.names()
        self.log: list[dict[str, Any]] = []
        """This hand's moves in words, as the human may know them."""
        self.version = 0
        """The saved row's version this table was read from or last written as (0: never
        saved; `store.Store.save` checks it)."""

    @classmethod
    def new(cls, game_id: str, setup: Setup, computers: Computers, seed: int) -> Table:
        """A fresh game dealt from `seed`."""
        meta = {
            "source": "rummy500_env.play",
            "game_id": game_id,
            "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        }
        return cls(game_id, setup, computers, Recorder(setup.rules, seed, setup.labels(), meta))

    @classmethod
    def resume(cls, game_id: str, setup: Setup, computers: Computers, record: Record) -> Table:
        """The saved game, replayed move by move to the exact position (and this hand's log).

        A game saved under other rules or against another computer is refused (409): the
        server plays the setup its command line chose.
        """
        if record.rules != setup.rules or record.players != setup.labels():
            raise PlayError(
                409,
                f"the saved game {game_id} was played with rules "
                f"{record.rules.preset_name() or record.rules.to_dict()} by {record.players}; "
                f"this server plays {setup.rules.preset_name() or setup.rules.to_dict()} by "
                f"{setup.labels()}. Start a new game, or restart the server with that game's "
                "--rules, --players and --opponent",
            )
        record.replay()  # every action and score checked before anything is built on it
        table = cls.new(game_id, setup, computers, record.seed)
        table.recorder.record.meta = record.meta
        for h, hand in enumerate(record.hands):
            if h:
                table.recorder.next_hand()
                table.log.clear()
            for player, text in hand.actions:
                table._play(player, Action.parse(text))
        return table

    @property
    def game(self) -> Game:
        return self.recorder.game

    @property
    def record(self) -> Record:
        return self.recorder.record

    @property
    def waiting(self) -> Waiting:
        """Who the game waits for: the human, a computer, the human's "next hand", or nobody."""
        g = self.game
        if g.phase == "game_over":
            return "game_over"
        if g.phase == "hand_over":
            return "next_hand"
        return "you" if g.current_player == HUMAN else "computer"

    # --- moves ---------------------------------------------------------------------------------

    def act(self, texts: list[str]) -> list[dict[str, Any]]:
        """Play the human's actions, all or none: each is checked on a copy first, so a
        "Put down all" that fails halfway changes nothing. Returns the moves in words."""
        self._require("you")
        actions = []
        for text in texts:
            try:
                actions.append(Action.parse(text))
            except ActionParseError as e:
                raise PlayError(400, str(e)) from None
        trial = self.game.copy()
        for a in actions:
            if trial.is_hand_over or trial.current_player != HUMAN:
                raise PlayError(422, f"{a} is not allowed: your turn is over before it")
            why = trial.why_illegal(a)
            if why is not None:
                raise PlayError(422, f"{a} is not allowed: {why}")
            trial.apply(a)
        return [self._play(HUMAN, a) for a in actions]

    def advance(self) -> dict[str, Any]:
        """Let the computer to act play one action; returns it in words."""
        self._require("computer")
        seat = self.game.current_player
        return self._play(seat, self.computers.choose(self.game))

    def next_hand(self) -> None:
        """Deal the next hand once the human has seen the end of this one."""
        self._require("next_hand")
        self.recorder.next_hand()
        self.log.clear()

    def _play(self, player: int, action: Action) -> dict[str, Any]:
        before = self.game.seat_view(HUMAN)
        self.recorder.play(action)
        event = describe(before, self.game.seat_view(HUMAN), action, self.names)
        self.log.append(event)
        return event

    def _require(self, want: Waiting) -> None:
        now = self.waiting
        if now == want:
            return
        why = {
            "you": "it is your turn",
            "computer": f"it is {self.names[self.game.current_player]}'s turn",
            "next_hand": "the hand is over: deal the next hand first",
            "game_over": "the game is over: start a new game",
        }[now]
        doing = {
            "you": "you cannot play now",
            "computer": "the computer cannot play now",
            "next_hand": "the next hand cannot be dealt now",
            "game_over": "",
        }[want]
        raise PlayError(409, f"{doing}: {why}")

    # --- the human's view ----------------------------------------------------------------------

    def view(self) -> dict[str, Any]:
        """Everything the page shows, as the human may know it (see `view.table_view`)."""
        g, waiting = self.game, self.waiting
        shown = [g.hand(q) for q in range(g.players)] if g.is_hand_over else None
        v = table_view(g.seat_view(HUMAN), self.names, shown)
        hand = g.hand(HUMAN)
        marks = hand_marks(g, HUMAN) or [None] * len(hand)
        order = sorted(range(len(hand)), key=lambda i: display_key(hand[i]))
        v["hand"] = [card_str(hand[i]) for i in order]  # the same order as table_view's
        v["marks"] = [_mark(marks[i]) for i in order]
        mine = waiting == "you"
        v.update(
            id=self.id,
            waiting=waiting,
            opponent=self.setup.opponent_label(),
            legal=[str(a) for a in g.legal_actions()] if mine else [],
            plan=[str(a) for a in put_down_plan(g)] if mine else [],
            log=self.log[-LOG_LENGTH:],
            record_url=f"/api/games/{self.id}/record" if self.record.finished else None,
        )
        return v


def _mark(mark: Mark | None) -> dict[str, int | None] | None:
    return None if mark is None else {"group": mark.group, "onto": mark.onto}
