"""One decision through text: `ask` asks a model the seat's prompt (`rummy500_env.text.protocol`),
judges the reply, sends an illegal or unreadable one back with the engine's refusal, at most
`ReplyPolicy.retries` times, then falls back (the first legal action, or a random one), and
counts all of it in `ReplyCounts`. `LLMAgent` (`rummy500_env.agents.llm`) asks a chat endpoint
through it.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Literal

from rummy500_env.engine.errors import Rummy500Error
from rummy500_env.engine.notation import Action
from rummy500_env.engine.seat_view import SeatView
from rummy500_env.text.protocol import find_action, refusal, render_prompt


class AnswerError(RuntimeError):
    """The answerer (an endpoint) gave no reply at all, after its own retries."""


@dataclass(frozen=True)
class ReplyPolicy:
    """How a decision treats bad replies: `retries` more asks with the refusal text, then the
    `fallback` (``first``: the first legal action, the engine's order; ``random``: a seeded
    random one)."""

    retries: int = 2
    fallback: Literal["first", "random"] = "first"

    def __post_init__(self) -> None:
        if type(self.retries) is not int or not 0 <= self.retries <= 10:
            raise ValueError(f"retries must be an int 0..10, got {self.retries!r}")
        if self.fallback not in ("first", "random"):
            raise ValueError(f"fallback must be 'first' or 'random', got {self.fallback!r}")


@dataclass
class ReplyCounts:
    """What happened over many decisions, each count a whole number."""

    decisions: int = 0
    replies: int = 0
    """Replies received (one per ask answered)."""
    first_try: int = 0
    """Decisions whose first reply was a legal action."""
    illegal: int = 0
    """Replies naming an action that is not legal now."""
    unreadable: int = 0
    """Replies in which no action was found."""
    failed: int = 0
    """Asks that got no reply at all (`AnswerError`)."""
    fallbacks: int = 0
    """Decisions settled by the fallback."""

    def to_dict(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


Outcome = Literal["legal", "illegal", "unreadable", "failed"]


@dataclass
class Exchange:
    """One ask and its reply, as a game record keeps it (`to_dict`)."""

    seat: int
    hand: int
    turns: int
    attempt: int
    prompt_chars: int
    reply: str | None
    outcome: Outcome
    action: str | None = None
    refusal: str | None = None
    seconds: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        d = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "extra"}
        return d | self.extra


def ask(
    view: SeatView,
    legal: Sequence[Action],
    answer: Callable[[str], str],
    policy: ReplyPolicy,
    counts: ReplyCounts,
    rng: random.Random,
    log: Callable[[Exchange], None] | None = None,
    render: Callable[[SeatView, Sequence[Action], str | None], str] = render_prompt,
) -> Action:
    """One decision through text: ask `answer` the prompt (`render`: `render_prompt`, or
    `render_prompt_json` for tool-calling models), judge the reply, send a refused one back
    with its refusal (`policy.retries` times at most), then fall back; every step is counted
    in `counts` and passed to `log`. Returns one of `legal`."""
    if not legal:
        raise ValueError("no legal action given: is this seat to act?")
    counts.decisions += 1
    why: str | None = None

    def note(attempt: int, prompt: str, reply: str | None, outcome: Outcome, **more: Any) -> None:
        if log is not None:
            where = (view.seat, view.hands_played + 1, view.turns, attempt, len(prompt))
            log(Exchange(*where, reply, outcome, **more))

    for attempt in range(policy.retries + 1):
        prompt = render(view, legal, why)
        started = time.perf_counter()
        try:
            reply = answer(prompt)
        except AnswerError as e:
            counts.failed += 1
            note(attempt, prompt, None, "failed", refusal=str(e))
            break
        seconds = round(time.perf_counter() - started, 3)
        counts.replies += 1
        action: Action | None
        try:
            action = find_action(reply)
            why = refusal(view, legal, action)
        except Rummy500Error as e:
            action, why = None, f"no action could be read from your reply: {e}"
        outcome: Outcome = "unreadable" if action is None else "illegal" if why else "legal"
        shown = None if action is None else str(action)
        note(attempt, prompt, reply, outcome, action=shown, refusal=why, seconds=seconds)
        if action is not None and why is None:
            if attempt == 0:
                counts.first_try += 1
            return legal[legal.index(action)]
        if action is None:
            counts.unreadable += 1
        else:
            counts.illegal += 1
    counts.fallbacks += 1
    return legal[0] if policy.fallback == "first" else rng.choice(list(legal))
