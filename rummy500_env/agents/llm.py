"""`LLMAgent`: any OpenAI-compatible chat endpoint at the table (agent spec ``llm:URL[:MODEL]``).

The agent is a bot: it decides on the seat's `SeatView` (`decide(view, legal)`), so it plays
wherever a bot plays (``training.evaluate``, tournaments, the play page, the ladder). Each
decision goes through the text protocol (`rummy500_env.rl.text.ask`): the prompt is built
from the view alone, the reply read leniently, an illegal or unreadable reply sent back with
the engine's refusal at most `ReplyPolicy.retries` times, then the stated fallback (the first
legal action); everything counted in `counts`.

HTTP is the standard library's (``urllib``), so the spec needs no extra package. Limits: a
request times out after `TIMEOUT_S` seconds and is tried at most `REQUEST_ATTEMPTS` times in
all (network errors, timeouts, HTTP `RETRY_STATUS`; waits of `BACKOFF_S`, doubled each
time, between tries); any other HTTP error fails at once. A decision whose request fails after
its tries falls back and is counted as ``failed``. The key, if the endpoint needs one, is read
from the environment variable `KEY_ENV` (else ``OPENAI_API_KEY``) and sent as a bearer token.
For tool-calling models, ``RUMMY500_LLM_MODE=tools`` (`MODE_ENV`) sends the JSON prompt and a
``play`` function whose argument is limited to the legal actions.

`ThroughText` is the offline baseline: any agent (a bot or a policy) deciding from the
*parsed* prompt (`read_prompt`), never from the engine, which proves that the prompt carries
everything a player needs (docs/text.md).
"""

from __future__ import annotations

import json
import os
import random
import re
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from rummy500_env.agents.bot import Bot
from rummy500_env.engine.game import Game
from rummy500_env.engine.notation import Action
from rummy500_env.engine.rules import Rules
from rummy500_env.engine.seat_view import SeatView
from rummy500_env.rl.actions import ActionCodec
from rummy500_env.rl.observation import ObservationEncoder
from rummy500_env.rl.text import (
    AnswerError,
    Exchange,
    ReplyCounts,
    ReplyPolicy,
    ask,
    read_prompt,
    render_prompt,
    render_prompt_json,
    tool_schema,
)

KEY_ENV = "RUMMY500_LLM_API_KEY"
"""The environment variable holding the endpoint's key (``OPENAI_API_KEY`` if it is unset)."""
MODE_ENV = "RUMMY500_LLM_MODE"
"""The environment variable choosing how a spec-built agent asks: ``text`` (the default: the
text prompt, a reply in words) or ``tools`` (the JSON prompt and a ``play`` function to call,
its argument limited to the legal actions)."""
MODES = ("text", "tools")
LOG_ENV = "RUMMY500_LLM_LOG"
"""The environment variable choosing what a spec-built agent logs: ``replies`` (the default),
``full`` (the prompts too) or ``counts``."""
TIMEOUT_S = 60.0
"""Seconds a request may take."""
REQUEST_ATTEMPTS = 3
"""Tries of one request in all, before the decision falls back."""
BACKOFF_S = 1.0
"""Wait before the second try; doubled before each later one."""
RETRY_STATUS = frozenset((408, 409, 429, 500, 502, 503, 504))
"""HTTP statuses worth another try; any other error status fails at once."""
LOG_MODES = ("replies", "full", "counts")
REPLY_LOG_CHARS = 4000
"""A logged reply keeps at most this many characters (reasoning models write long ones)."""
SYSTEM_PROMPT = (
    "You are playing a card game of Rummy 500. Read the state and the list of legal actions, "
    "then answer with exactly one of them in square brackets."
)
TOOLS_SYSTEM_PROMPT = (
    "You are playing a card game of Rummy 500. The user sends the state as JSON, with the "
    "legal actions in 'legal'; call the function play with exactly one of them."
)
SPEC_FORM = (
    "llm:URL or llm:URL:MODEL, the URL of an OpenAI-compatible endpoint starting http:// or "
    "https:// (e.g. llm:http://localhost:8000/v1:my-model; without MODEL the endpoint's first "
    "listed model)"
)
_SPEC = re.compile(
    r"llm:(?P<url>https?://[^/\s:]+(?::[0-9]{1,5})?(?:/[^\s:]*)?)(?::(?P<model>\S+))?"
)


def parse_llm_spec(spec: str) -> tuple[str, str | None]:
    """The URL and the model (None: ask the endpoint) of ``llm:URL[:MODEL]``; `ValueError`
    saying the form otherwise. The model may hold colons (``llama3:8b``); the URL's path may
    not."""
    m = _SPEC.fullmatch(spec) if isinstance(spec, str) else None
    if m is None:
        raise ValueError(f"bad llm spec {spec!r}: use {SPEC_FORM}")
    return m["url"].rstrip("/"), m["model"]


class ChatClient:
    """A minimal client of an OpenAI-compatible chat endpoint (``POST URL/chat/completions``,
    ``GET URL/models``) with the timeout and tries of the module docstring."""

    def __init__(
        self,
        url: str,
        model: str | None = None,
        key: str | None = None,
        timeout_s: float = TIMEOUT_S,
        attempts: int = REQUEST_ATTEMPTS,
        backoff_s: float = BACKOFF_S,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if attempts < 1 or timeout_s <= 0 or backoff_s < 0:
            raise ValueError(
                f"attempts must be >= 1, timeout_s > 0 and backoff_s >= 0; got {attempts}, "
                f"{timeout_s}, {backoff_s}"
            )
        self.url = url.rstrip("/")
        self.key = key
        self.timeout_s, self.attempts, self.backoff_s = timeout_s, attempts, backoff_s
        self.sleep = sleep
        self.model = model if model is not None else self.first_model()

    def endpoint(self, path: str) -> str:
        """The URL of `path` (``chat/completions``); a URL given with that path is kept."""
        return self.url if self.url.endswith("/" + path) else f"{self.url}/{path}"

    def first_model(self) -> str:
        """The first model the endpoint lists (``GET /models``)."""
        base = self.url.removesuffix("/chat/completions")
        data = self._request(f"{base}/models", None)
        try:
            return str(data["data"][0]["id"])
        except (KeyError, IndexError, TypeError):
            raise AnswerError(
                f"{base}/models lists no model; name one: llm:{self.url}:MODEL"
            ) from None

    def chat(self, prompt: str, tools: list[dict[str, Any]] | None = None) -> str:
        """The reply's text to `prompt` (a system line, then the prompt as the user's turn);
        with `tools`, the model may call one, and the call's arguments are the reply."""
        system = SYSTEM_PROMPT if tools is None else TOOLS_SYSTEM_PROMPT
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [
                {"role": "system", "content": system},
                {"role": "user", "content": prompt},
            ],
            "temperature": 0,
        }
        if tools is not None:
            body["tools"] = tools
        data = self._request(self.endpoint("chat/completions"), body)
        try:
            message = data["choices"][0]["message"]
        except (KeyError, IndexError, TypeError):
            raise AnswerError(
                f"the endpoint's answer has no choices[0].message: {data!r:.300}"
            ) from None
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str) and content.strip():
            return content
        calls = message.get("tool_calls") if isinstance(message, dict) else None
        if isinstance(calls, list) and calls:  # a tool call's arguments: {"action": "..."}
            return str(calls[0].get("function", {}).get("arguments", ""))
        return "" if content is None else str(content)

    def _request(self, url: str, body: dict[str, Any] | None) -> Any:
        """One request with its tries; the decoded JSON answer, or `AnswerError`."""
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.key:
            headers["Authorization"] = f"Bearer {self.key}"
        data = None if body is None else json.dumps(body).encode()
        wait, last = self.backoff_s, ""
        for attempt in range(self.attempts):
            if attempt:
                self.sleep(wait)
                wait *= 2
            request = urllib.request.Request(url, data=data, headers=headers)
            try:
                with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                    return json.loads(response.read().decode("utf-8"))
            except urllib.error.HTTPError as e:
                detail = e.read(300).decode("utf-8", "replace")
                last = f"HTTP {e.code} from {url}: {detail}"
                if e.code not in RETRY_STATUS:
                    break
            except (urllib.error.URLError, TimeoutError, ConnectionError, OSError) as e:
                last = f"{url}: {getattr(e, 'reason', e)}"
            except (json.JSONDecodeError, UnicodeDecodeError) as e:
                last = f"{url} answered no JSON: {e}"
        raise AnswerError(f"no answer after {attempt + 1} tries: {last}")


class LLMAgent(Bot):
    """A chat model deciding through the text protocol (module docstring). `client`: a
    `ChatClient`, or any function from prompt to reply. `mode`: ``text`` (the text prompt) or
    ``tools`` (the JSON prompt, and a `ChatClient` offers the ``play`` function whose argument
    is limited to the legal actions). `log`: what each exchange leaves for the game record
    (`take_notes`): ``replies`` (reply, outcome, action, refusal, seconds; the prompt is a
    function of the recorded position, so it is left out), ``full`` (the prompt too) or
    ``counts`` (only the counts)."""

    def __init__(
        self,
        rules: Rules | str | dict[str, Any],
        client: ChatClient | Callable[[str], str],
        policy: ReplyPolicy | None = None,
        seed: int = 0,
        log: str = "replies",
        name: str = "llm",
        mode: str = "text",
    ) -> None:
        super().__init__(rules)
        if log not in LOG_MODES:
            raise ValueError(f"log must be one of {', '.join(LOG_MODES)}, got {log!r}")
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
        self.mode = mode
        self._legal: Sequence[Action] = ()
        self.client = client
        self.answer: Callable[[str], str] = (
            client.chat if isinstance(client, ChatClient) else client
        )
        self.policy = policy or ReplyPolicy()
        self.rng = random.Random(seed)
        self.log, self.name = log, name
        self.counts = ReplyCounts()
        self.exchanges: list[dict[str, Any]] = []
        self._last_prompt = ""

    def decide(self, view: SeatView, legal: Sequence[Action]) -> Action:
        self._legal = legal
        render = render_prompt if self.mode == "text" else render_prompt_json
        return ask(view, legal, self._ask, self.policy, self.counts, self.rng, self._note, render)

    def _ask(self, prompt: str) -> str:
        self._last_prompt = prompt
        if self.mode == "tools" and isinstance(self.client, ChatClient):
            return self.client.chat(prompt, tools=[tool_schema(self._legal)])
        return self.answer(prompt)

    def _note(self, exchange: Exchange) -> None:
        if self.log == "counts":
            return
        d = exchange.to_dict()
        if isinstance(d.get("reply"), str):
            d["reply"] = d["reply"][:REPLY_LOG_CHARS]
        if self.log == "full":
            d["prompt"] = self._last_prompt
        self.exchanges.append(d)

    def take_notes(self) -> dict[str, Any]:
        """What the game record keeps of this agent (`training.arena.play` writes it under
        ``meta["agent_notes"]``): the counts and the exchanges since the last call, which
        start afresh."""
        notes: dict[str, Any] = {"agent": self.name, "counts": self.counts.to_dict()}
        if isinstance(self.client, ChatClient):
            notes |= {"url": self.client.url, "model": self.client.model}
        if self.log != "counts":
            notes["exchanges"] = self.exchanges
        self.counts, self.exchanges = ReplyCounts(), []
        return notes


def make_llm_agent(spec: str, rules: Rules, seed: int) -> LLMAgent:
    """The agent of an ``llm:URL[:MODEL]`` spec (the registry's factory): the key from
    `KEY_ENV`, the asking mode from `MODE_ENV`, the log mode from `LOG_ENV`."""
    url, model = parse_llm_spec(spec)
    key = os.environ.get(KEY_ENV) or os.environ.get("OPENAI_API_KEY")
    log = os.environ.get(LOG_ENV, "replies")
    mode = os.environ.get(MODE_ENV, "text")
    client = ChatClient(url, model, key)
    return LLMAgent(rules, client, seed=seed, log=log, name=spec, mode=mode)


class ThroughText:
    """The offline baseline: `agent` (a bot with ``decide``, or anything with ``act``, e.g. a
    `PolicyAgent`) decides from the prompt as `read_prompt` parses it back, and answers in
    text, which `ask` reads as it reads a model's reply. A bot sees the parsed `SeatView`; an
    ``act`` agent the observation and mask encoded from it (on a position the seat cannot tell
    from the real one). Nothing of the engine's own game reaches the agent."""

    def __init__(self, agent: Any, rules: Rules | str | dict[str, Any]) -> None:
        self.agent = agent
        self.rules = Rules.coerce(rules)
        self.codec = ActionCodec(self.rules)
        self.encoder = ObservationEncoder(self.rules)
        self.counts = ReplyCounts()
        self.policy = ReplyPolicy(retries=0)
        self.rng = random.Random(0)

    def decide(self, view: SeatView, legal: Sequence[Action]) -> Action:
        return ask(view, legal, self._answer, self.policy, self.counts, self.rng)

    def _answer(self, prompt: str) -> str:
        seen, options = read_prompt(prompt)
        decide = getattr(self.agent, "decide", None)
        if decide is not None:
            return f"[{decide(seen, options)}]"
        game = Game.from_seat_view(seen, 0, check=False)
        observation = self.encoder.encode(game, seen.seat)
        mask = np.zeros(self.codec.size, dtype=np.int8)
        for a in options:
            mask[self.codec.encode(game, a)] = 1
        return f"[{self.codec.decode(game, int(self.agent.act(observation, mask)))}]"
