"""Rummy 500 as a TextArena game: ``ta.make("Rummy500-v0")`` (the ``text`` extra).

`Rummy500TextEnv` plays through TextArena's own loop (``reset(num_players, seed)``,
``get_observation()``, ``step(action=...)``, ``close()``) with the package's engine
underneath. Each player is sent a short introduction (TextArena's ``PROMPT``); at each turn the
player to act gets the text protocol's prompt (`rummy500_env.text.protocol.render_prompt`, built
from its `SeatView`: what it may know) as the ``GAME_BOARD``, and every player sees each
action played (``Player 1: discard 5C``; all actions are public, a stock draw names no
card). A reply is read as the protocol reads one (``[discard 5C]``, or the action anywhere in
the text); it is shown to its author alone, as a bounded excerpt (`quoted`), since it may
hold the author's hand or text meant for another model's context. An illegal or unreadable
reply is refused with the engine's reason and the player answers again, `error_allowance`
times per decision (TextArena's convention, default 1); past that the player loses (reward
-1, every other player +1). At the end the highest total wins (+1, the others -1; a draw at
the hand limit, 0 each), and the step's info carries the totals and the hand scores.

Ids (registered with TextArena by `rummy500_env.rl.registration` after ``import
rummy500_env``, whichever of the two is imported first): ``Rummy500-v0`` (the standard rules)
and ``Rummy500-v0-<preset>`` for the other presets, ``Rummy500-v0-jokers`` (two jokers a
deck) and ``Rummy500-v0-calls`` (jokers and Rummy! calls); each with TextArena's ``-train``
and ``-raw`` suffixes. The default wrappers show the introduction and the latest board (the
board holds the whole information state, so no history is needed), and bracket a bare reply.
The player count comes from ``reset(num_players=...)`` (2 to 8).
"""

from __future__ import annotations

import random
from typing import Any

import textarena as ta

from rummy500_env.engine.errors import Rummy500Error
from rummy500_env.engine.game import Game
from rummy500_env.engine.numbers import quoted
from rummy500_env.engine.render import render
from rummy500_env.engine.rules import Rules
from rummy500_env.text.protocol import FULL_LIST_LIMIT, find_action, render_prompt

ENTRY_POINT = "rummy500_env.text.textarena:Rummy500TextEnv"
VARIANTS: dict[str, dict[str, Any]] = {
    "Rummy500-v0": {"rules": "standard"},
    "Rummy500-v0-pagat": {"rules": "pagat"},
    "Rummy500-v0-nordic": {"rules": "nordic"},
    "Rummy500-v0-fives": {"rules": "fives"},
    "Rummy500-v0-app": {"rules": "app"},
    "Rummy500-v0-jokers": {"rules": {"jokers": 2}},
    "Rummy500-v0-calls": {"rules": {"jokers": 2, "rummy_calls": True}},
}
"""The registered ids and their constructor arguments."""


class Rummy500TextEnv(ta.Env):  # type: ignore[misc]  # textarena is untyped
    """Rummy 500 for TextArena (module docstring). `rules`: a preset name, a dict of fields or
    a `Rules`; its ``players`` is replaced by ``reset``'s `num_players`. `episode`: ``game``
    (to the target) or ``hand`` (one hand, the highest hand score winning)."""

    def __init__(
        self,
        rules: Rules | str | dict[str, Any] = "standard",
        episode: str = "game",
        error_allowance: int = 1,
        full_list_limit: int = FULL_LIST_LIMIT,
    ) -> None:
        super().__init__()
        self.rules = Rules.coerce(rules)
        if episode not in ("game", "hand"):
            raise ValueError(f"episode must be 'game' or 'hand', got {episode!r}")
        if type(error_allowance) is not int or error_allowance < 0:
            raise ValueError(f"error_allowance must be an int >= 0, got {error_allowance!r}")
        self.episode = episode
        self.error_allowance = error_allowance
        self.full_list_limit = full_list_limit
        self.game: Game | None = None
        self.hand_scores: list[list[int]] = []

    def reset(self, num_players: int = 2, seed: int | None = None) -> None:
        """Deal a new game for `num_players` (2 to 8); `seed` deals it (None: a fresh seed from
        the operating system). Python's global `random` state is left alone (TextArena's
        ``State(seed=...)`` would reseed it, so the state gets no seed)."""
        fields = self.rules.to_dict() | {"players": num_players}
        try:
            rules = Rules.from_dict(fields)
        except Rummy500Error as e:
            raise ValueError(f"Rummy500 cannot seat {num_players!r} players: {e}") from None
        self.state = ta.MinimalMultiPlayerState(
            num_players=num_players, seed=None, error_allowance=self.error_allowance
        )
        game_seed = seed if seed is not None else random.SystemRandom().getrandbits(32)
        self.game = Game.new(rules, seed=game_seed)
        self.hand_scores = []
        self.state.reset(
            game_state={"rules": rules.to_dict(), "seed": game_seed},
            player_prompt_function=self._introduction,
            role_mapping={p: f"Player {p}" for p in range(num_players)},
        )
        self._deal_until_play()
        if not self.state.done:
            self.state.manually_set_current_player_id(self.game.current_player, force=True)
            self._board(self.game.current_player)

    def _introduction(self, player_id: int, game_state: dict[str, Any]) -> str:
        assert self.game is not None
        n = self.game.rules.players
        return (
            f"You are Player {player_id} (P{player_id}) in a game of Rummy 500 with {n} "
            f"players. At each of your turns the game shows you the table as you may see it, "
            "the rules in brief and every legal action; answer with one legal action in "
            "square brackets, e.g. [draw] or [discard 5C]. A refused answer is explained and "
            f"you may answer again {self.error_allowance} time(s); after that you lose."
        )

    def _board(self, player: int, refusal: str | None = None) -> None:
        """The player to act's prompt, as its `GAME_BOARD`."""
        assert self.game is not None
        prompt = render_prompt(
            self.game.seat_view(player),
            self.game.legal_actions(),
            refusal=refusal,
            full_list_limit=self.full_list_limit,
        )
        self.state.add_observation(
            to_id=player, message=prompt, observation_type=ta.ObservationType.GAME_BOARD
        )

    def step(self, action: str) -> tuple[bool, dict[str, Any]]:
        assert self.game is not None, "call reset() before step()"
        player = self.state.current_player_id
        self.state.add_observation(  # to its author alone, cut short: it may hold the
            from_id=player,  # author's hand or text aimed at another model, and the state
            to_id=player,  # keeps it for the episode; the move itself is announced below
            message=quoted(action),
            observation_type=ta.ObservationType.PLAYER_ACTION,
        )
        why: str | None
        try:
            chosen = find_action(action)
            why = None if chosen in self.game.legal_actions() else self.game.why_illegal(chosen)
            if why is not None:
                why = f"{chosen} is illegal: {why}"
            elif chosen not in self.game.legal_actions():  # a longer meld: legal, not listed
                why = f"{chosen} is illegal: melds are played in their three-card form"
        except Rummy500Error as e:
            why = f"no action could be read from your reply: {e}"
        if why is not None:
            if self.state.set_invalid_move(reason=why):  # past the allowance: the player loses
                others = [q for q in range(self.state.num_players) if q != player]
                self.state.set_winners(
                    others, reason=f"Player {player} made an invalid move: {why}"
                )
                self._final_info()
            else:
                self._board(player, refusal=why)
            return self.state.step(rotate_player=False)  # type: ignore[no-any-return]  # untyped
        self.game.apply(chosen)
        self.state.add_observation(
            message=f"Player {player}: {chosen}",
            observation_type=ta.ObservationType.GAME_ACTION_DESCRIPTION,
        )
        self._deal_until_play()
        done, info = self.state.step(rotate_player=False)
        if not done:
            self.state.manually_set_current_player_id(self.game.current_player, force=True)
            self._board(self.game.current_player)
        return done, info

    def _deal_until_play(self) -> None:
        """After a hand ends: announce it, then end the game or deal the next hand (a deal can
        end a hand at once, so until a hand is in play)."""
        game = self.game
        assert game is not None
        while game.is_hand_over:
            result = game.result()
            self.hand_scores.append(list(result.scores))
            out = "no one went out" if result.went_out is None else f"P{result.went_out} went out"
            self.state.add_observation(
                message=f"Hand {game.hands_played} is over ({out}): hand scores "
                f"{list(result.scores)}, totals {list(result.totals)}.",
                observation_type=ta.ObservationType.GAME_MESSAGE,
            )
            if game.phase == "game_over" or self.episode == "hand":
                self._finish()
                return
            game.next_hand()

    def _finish(self) -> None:
        game = self.game
        assert game is not None
        totals = game.totals
        if self.episode == "hand":
            best = max(totals)
            winner = totals.index(best) if totals.count(best) == 1 else None
        else:
            winner = game.winner
        if winner is None:
            self.state.set_draw(reason=f"a draw: totals {list(totals)}")
        else:
            self.state.set_winners(
                [winner], reason=f"Player {winner} wins with totals {list(totals)}"
            )
        self._final_info()

    def _final_info(self) -> None:
        game = self.game
        assert game is not None
        self.state.step_info.update(
            {"totals": list(game.totals), "hand_scores": self.hand_scores, "seed": game.seed}
        )

    def get_board_str(self) -> str:
        """The whole table for a spectator (every hand shown), as TextArena's renderers ask."""
        assert self.game is not None
        return render(self.game.position())


def register() -> None:
    """Register every id of `VARIANTS` with TextArena (idempotent), each with its default,
    ``-train`` and ``-raw`` wrappers."""
    from textarena.envs.registration import ENV_REGISTRY, register_with_versions
    from textarena.wrappers import (
        ActionFormattingWrapper,
        GameBoardObservationWrapper,
    )

    wrappers = [GameBoardObservationWrapper, ActionFormattingWrapper]
    for env_id, kwargs in VARIANTS.items():
        if env_id not in ENV_REGISTRY:
            register_with_versions(
                id=env_id,
                entry_point=ENTRY_POINT,
                wrappers={"default": wrappers, "-train": wrappers},
                **kwargs,
            )
