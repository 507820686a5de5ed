"""Playing agents against each other: one game or hand per call, deterministic for a seed.

`play` is the one loop in which the package's tournaments (`training.evaluate`, training's
evaluations) ask agents for their moves; `tournament.play_task` builds the agents and calls it.
Each move is asked for by `rl.opponents.choose`: a bot decides on its seat's information
state, any other agent acts on its observation and mask. A game record is written by
watching the game as it is played (`Recorder.watching`); an agent with ``take_notes()`` (an
`LLMAgent`: its exchanges with its endpoint) has what it returns kept in the record's
``meta["agent_notes"]`` under its seat. An agent that counts its endpoint's replies
(`reply_counts`) has the game's counts in the result, so that a tournament can show how many
of its decisions were the fallback's, not the model's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from typing import Any

from rummy500_env.agents.ask import ReplyCounts
from rummy500_env.engine.records import Record, Recorder
from rummy500_env.engine.rules import Rules
from rummy500_env.rl.opponents import Agent, choose
from rummy500_env.rl.rummy500_v0 import raw_env


@dataclass
class Result:
    """The outcome of one game (or hand) from the seats' point of view."""

    winner: int | None
    totals: list[int]
    hand_scores: list[list[int]]
    truncated: bool
    record: Record | None = None
    """The game's record, when `play` was asked for one."""
    reply_counts: list[dict[str, int] | None] = field(default_factory=list)
    """Per seat, its agent's `ReplyCounts` over this game (as a dict), or None for an agent
    that keeps none."""


def reply_counts(agent: Agent) -> dict[str, int] | None:
    """The counts of an agent that asks an endpoint (an `LLMAgent`'s ``counts``), or None."""
    counts = getattr(agent, "counts", None)
    return counts.to_dict() if isinstance(counts, ReplyCounts) else None


def add_counts(a: dict[str, int] | None, b: dict[str, int] | None) -> dict[str, int] | None:
    """Two sets of counts added up, key by key; None (no counts) adds nothing."""
    if a is None or b is None:
        return a if b is None else b
    return {k: a.get(k, 0) + b.get(k, 0) for k in a.keys() | b.keys()}


def play(
    agents: list[Agent],
    rules: Rules | str | dict[str, Any],
    seed: int,
    episode: str = "game",
    record_as: list[str] | None = None,
    meta: dict[str, Any] | None = None,
) -> Result:
    """Play one game (or one hand) with `agents[i]` in seat i, dealt from `seed`. With
    `record_as` (a name per seat) the result carries the game's record, with `meta`."""
    e = raw_env(rules=rules, episode=episode)
    e.reset(seed=seed)
    game = e.game
    assert game is not None
    recorder = None if record_as is None else Recorder.watching(game, record_as, meta)
    counts_before = [reply_counts(a) for a in agents]  # an agent may have played before
    hands: list[list[int]] = []
    while True:
        agent = e.agent_selection
        if e.terminations[agent] or e.truncations[agent]:
            break
        seat = e.agent_name_mapping[agent]
        action_id = choose(agents[seat], game, e.codec, partial(e.observe, agent))
        action = None if recorder is None else e.codec.decode(game, action_id)
        e.step(action_id)
        ended = "hand_scores" in e.infos[agent]  # set by the step that ended a hand
        if ended:
            hands.append(list(e.infos[agent]["hand_scores"]))
        if recorder is not None and action is not None:
            dealt = ended and not game.is_hand_over  # the env dealt the next hand at once
            recorder.note(seat, action, e.hand_result if dealt else None)
            if dealt:
                recorder.note_deal()
    counts = [_since(reply_counts(a), b) for a, b in zip(agents, counts_before, strict=True)]
    record = None if recorder is None else recorder.record
    if record is not None:  # e.g. an LLMAgent's exchanges with its endpoint
        for seat, player in enumerate(agents):
            take_notes = getattr(player, "take_notes", None)
            if take_notes is not None:
                record.meta.setdefault("agent_notes", {})[str(seat)] = take_notes()
    totals = game.totals
    if episode == "hand":
        winner = None
        best = max(totals)
        if totals.count(best) == 1:
            winner = totals.index(best)
        return Result(winner, totals, hands, False, record, counts)
    return Result(game.winner, totals, hands, game.truncated, record, counts)


def _since(now: dict[str, int] | None, before: dict[str, int] | None) -> dict[str, int] | None:
    """What counts grew by since `before`."""
    if now is None or before is None:
        return now
    return {k: v - before.get(k, 0) for k, v in now.items()}
