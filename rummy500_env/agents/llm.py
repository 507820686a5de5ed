"""`LLMAgent`: any OpenAI-compatible chat endpoint at the table (agent spec ``llm:URL[:MODEL]``).

The agent is a bot: it decides on the seat's `SeatView` (`decide(view, legal)`), so it plays
wherever a bot plays (``training.evaluate``, tournaments, the play page, the ladder). Each
decision goes through the text protocol (`rummy500_env.agents.ask.ask`): the prompt is built
from the view alone, the reply read leniently, an illegal or unreadable reply sent back with
the engine's refusal at most `ReplyPolicy.retries` times, then the stated fallback (the first
legal action); everything counted in `counts`.

HTTP is the standard library's (``urllib``), so the spec needs no extra package. An endpoint
is not trusted (docs/text.md, "Limits"): each try of a request has a deadline of `TIMEOUT_S`
seconds that bounds every read of the answer, not just each one; at most `MAX_BODY_BYTES` of
an answer are read; a redirect is refused, never followed (the key would go with it); an
answer that is not HTTP, is cut short or is not JSON is a failed try, like a network error. A
request is tried at most `REQUEST_ATTEMPTS` times in all (network errors, timeouts, broken
answers, HTTP `RETRY_STATUS`; waits of `BACKOFF_S`, doubled each time, between tries); any
other HTTP status, and JSON not of a chat answer's shape, fails at once. A decision whose
request fails after its tries falls back and is counted as ``failed``; after
`FAILED_DECISIONS_TO_STOP` such decisions in a row the agent raises `EndpointError` instead,
as it does when the endpoint's models cannot be listed: an endpoint that is down is not a
player. The key, if the endpoint needs one, is read from the environment variable `KEY_ENV`
(else ``OPENAI_API_KEY``) and sent as a bearer token; any text of the endpoint's that an
error, a log or a record shows goes through `safe_text` (the key masked, control characters
removed, the length bounded). For tool-calling models, ``RUMMY500_LLM_MODE=tools``
(`MODE_ENV`) sends the JSON prompt and a ``play`` function whose argument is limited to the
legal actions.

`ThroughText` is the offline baseline: any agent (a bot or a policy) deciding from the
*parsed* prompt (`read_prompt`), never from the engine, which proves that the prompt carries
everything a player needs (docs/text.md).
"""

from __future__ import annotations

import http.client
import io
import json
import math
import os
import random
import re
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from rummy500_env.agents.ask import AnswerError, Exchange, ReplyCounts, ReplyPolicy, ask
from rummy500_env.agents.bot import Bot
from rummy500_env.engine.errors import Rummy500Error
from rummy500_env.engine.game import Game
from rummy500_env.engine.notation import Action
from rummy500_env.engine.numbers import read_json, shown
from rummy500_env.engine.rules import Rules
from rummy500_env.engine.seat_view import SeatView
from rummy500_env.rl.actions import ActionCodec
from rummy500_env.rl.observation import ObservationEncoder
from rummy500_env.text.protocol import (
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
"""Each try's deadline, in seconds: connecting and sending are bounded by it, and every read
of the answer (status line, headers, body) by the time left, so an endpoint dripping a byte
at a time cannot hold a request longer (a socket timeout alone bounds one read)."""
MAX_BODY_BYTES = 1 << 20
"""The most bytes of an answer read (1 MiB): a chat answer is a few KiB (a reply of 4,000
characters is about 10 KiB of JSON), so a verbose model has a hundred times that, while a huge
or endless body ends as a failed try instead of filling the memory."""
ERROR_BODY_BYTES = 2048
"""The most bytes of an error status's body read, to quote its start in the error."""
SHOWN_CHARS = 300
"""Characters of the endpoint's own text (an error body, an answer of the wrong shape) that a
message quotes (`safe_text`)."""
KEY_MASK = "***"
"""What the key is replaced by wherever the endpoint's text is shown (it may echo it)."""
FAILED_DECISIONS_TO_STOP = 5
"""Decisions in a row whose requests all failed after which the agent raises `EndpointError`
instead of playing the fallback again: a ranking of the fallback is not the model's."""
REQUEST_ATTEMPTS = 3
"""Tries of one request in all, before the decision falls back."""
BACKOFF_S = 1.0
"""Wait before the second try; doubled before each later one."""
RETRY_STATUS = frozenset((408, 409, 429, 500, 502, 503, 504))
"""HTTP statuses worth another try; any other error status fails at once."""
LOG_MODES = ("replies", "full", "counts")
REPLY_LOG_CHARS = 4000
"""A logged reply (and refusal) keeps at most this many characters (reasoning models write
long ones)."""
PROMPT_LOG_CHARS = 20_000
"""A prompt logged with ``full`` keeps at most this many characters (the longest measured is
about 3,100, docs/text.md; a refusal adds a bounded quote of the reply)."""
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


class EndpointError(Rummy500Error):
    """An endpoint that cannot play: its models cannot be listed, it failed
    `FAILED_DECISIONS_TO_STOP` decisions in a row, or (inside `ChatClient`, where each is a
    failed try) an answer no client can use. Commands print it as their one error line."""


_UNSHOWABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
"""Control characters (a terminal runs the escapes among them) and bidirectional overrides
(which make text read otherwise than it is), all but tab and line feed."""
_BREAKS = re.compile("[\t\n\r]")


def safe_text(text: str, limit: int, key: str | None = None, *, keep_newlines: bool = False) -> str:
    """The endpoint's `text` fit to show in an error, a log or a record: control characters
    removed (line breaks and tabs become spaces, unless `keep_newlines` keeps them), then the
    key replaced by `KEY_MASK` wherever it appears (an endpoint may echo it), then at most
    `limit` characters, the full length said when cut."""
    if keep_newlines:
        clean = _UNSHOWABLE.sub("", text)
    else:
        clean = _UNSHOWABLE.sub("", _BREAKS.sub(" ", text))
    if key:
        clean = clean.replace(key, KEY_MASK)
    return clean if len(clean) <= limit else f"{clean[:limit]}... ({len(text)} characters)"


class _DeadlineReader(io.RawIOBase):
    """A socket's reads, each with its timeout set to the time left before `deadline`."""

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        super().__init__()
        self._sock, self._deadline = sock, deadline
        self._raw = sock.makefile("rb", buffering=0)  # holds the socket open, as http.client's

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int | None:
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("the deadline passed")
        self._sock.settimeout(left)
        return self._raw.readinto(buffer)

    def close(self) -> None:
        if not self.closed:
            self._raw.close()
        super().close()


class _DeadlineResponse(http.client.HTTPResponse):
    """An `HTTPResponse` whose every read (status line, headers, body) ends by `deadline`
    (`time.monotonic`), set on a subclass made for each connection."""

    deadline = math.inf

    def __init__(self, sock: socket.socket, *args: Any, **kwargs: Any) -> None:
        super().__init__(sock, *args, **kwargs)
        self.fp.close()  # the reader below takes its place, and its hold on the socket
        self.fp = io.BufferedReader(_DeadlineReader(sock, self.deadline))


class _Deadline(urllib.request.AbstractHTTPHandler):
    """Makes each connection's answer end by its deadline: the request's timeout from when
    the connection is made."""

    def do_open(
        self, http_class: Any, req: urllib.request.Request, **http_conn_args: Any
    ) -> http.client.HTTPResponse:
        def connection(host: str, /, **kwargs: Any) -> http.client.HTTPConnection:
            made: http.client.HTTPConnection = http_class(host, **kwargs)

            class Response(_DeadlineResponse):
                deadline = time.monotonic() + kwargs["timeout"]  # urllib passes the request's

            made.response_class = Response
            return made

        return super().do_open(connection, req, **http_conn_args)


class _DeadlineHTTPHandler(_Deadline, urllib.request.HTTPHandler):
    """``http://`` with the deadline."""


class _DeadlineHTTPSHandler(_Deadline, urllib.request.HTTPSHandler):
    """``https://`` with the deadline (and urllib's certificate checks)."""


class _RefuseRedirects(urllib.request.HTTPRedirectHandler):
    """Follows no redirect: urllib would send the key to the host in ``Location`` and turn
    a POST into a GET whose answer would be played as the model's. The 3xx is then an
    `HTTPError`, a failed request."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def _origin(url: str, location: str | None) -> str:
    """The scheme, host and port a redirect points to (its path and query may hold tokens)."""
    try:
        target = urllib.parse.urlsplit(urllib.parse.urljoin(url, location or ""))
    except ValueError:
        return "a malformed address"
    return f"{target.scheme}://{target.netloc.rpartition('@')[2]}"


def _read_at_most(response: Any, limit: int) -> bytes:
    """At most `limit` + 1 bytes of a body (one more than `limit` tells a longer body), read
    in chunks, so a huge or endless body costs no more memory than that."""
    chunks: list[bytes] = []
    size = 0
    while size <= limit:
        chunk = response.read(min(1 << 16, limit + 1 - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


class ChatClient:
    """A minimal client of an OpenAI-compatible chat endpoint (``POST URL/chat/completions``,
    ``GET URL/models``) with the deadline, body cap, tries and refused redirects of the module
    docstring (`timeout_s`, `max_body_bytes`, `attempts`, `backoff_s`; a test makes them
    small). Without `model`, the endpoint's first listed model, `EndpointError` if none."""

    def __init__(
        self,
        url: str,
        model: str | None = None,
        key: str | None = None,
        timeout_s: float = TIMEOUT_S,
        attempts: int = REQUEST_ATTEMPTS,
        backoff_s: float = BACKOFF_S,
        sleep: Callable[[float], None] = time.sleep,
        max_body_bytes: int = MAX_BODY_BYTES,
    ) -> None:
        if attempts < 1 or not 0 < timeout_s < math.inf or backoff_s < 0 or max_body_bytes < 1:
            raise ValueError(
                "attempts must be >= 1, timeout_s > 0 and finite, backoff_s >= 0 and "
                f"max_body_bytes >= 1; got {attempts}, {timeout_s}, {backoff_s}, "
                f"{max_body_bytes}"
            )
        self.url = url.rstrip("/")
        self.key = key
        self.timeout_s, self.attempts, self.backoff_s = timeout_s, attempts, backoff_s
        self.max_body_bytes = max_body_bytes
        self.sleep = sleep
        self._opener = urllib.request.build_opener(
            _RefuseRedirects(), _DeadlineHTTPHandler(), _DeadlineHTTPSHandler()
        )
        self.model = model if model is not None else self.first_model()

    def safe(self, text: str, limit: int = SHOWN_CHARS) -> str:
        """`safe_text` of the endpoint's `text`, this client's key masked."""
        return safe_text(text, limit, self.key)

    def endpoint(self, path: str) -> str:
        """The URL of `path` (``chat/completions``); a URL given with that path is kept."""
        return self.url if self.url.endswith("/" + path) else f"{self.url}/{path}"

    def first_model(self) -> str:
        """The first model the endpoint lists (``GET /models``); `EndpointError` if the list
        cannot be had or names no model fit to use (a name of 1 to 200 printable characters
        and no space)."""
        base = self.url.removesuffix("/chat/completions")
        try:
            data = self._request(f"{base}/models", None)
        except AnswerError as e:
            raise EndpointError(
                f"cannot list the models of {base}: {e}; check that the endpoint is up, or "
                "name the model: llm:URL:MODEL"
            ) from None
        listed = data.get("data") if isinstance(data, dict) else None
        first = listed[0] if isinstance(listed, list) and listed else None
        name = first.get("id") if isinstance(first, dict) else None
        if isinstance(name, str) and 0 < len(name) <= 200 and name.isprintable():
            if " " not in name:  # printable, no space: a name the spec could have given
                return name
        raise EndpointError(
            f"{base}/models lists no model fit to use (its first: {self.safe(shown(first))}); "
            f"name one: llm:{self.url}:MODEL"
        )

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
        return self._reply(self._request(self.endpoint("chat/completions"), body))

    def _reply(self, data: Any) -> str:
        """The reply in a chat answer: the message's text, else its first tool call's
        arguments (a JSON string, or an object some servers send). The shape is checked, not
        trusted: any other is `AnswerError`, a failed request."""
        choices = data.get("choices") if isinstance(data, dict) else None
        choice = choices[0] if isinstance(choices, list) and choices else None
        message = choice.get("message") if isinstance(choice, dict) else None
        if not isinstance(message, dict):
            raise AnswerError(f"the answer has no choices[0].message: {self.safe(shown(data))}")
        content, calls = message.get("content"), message.get("tool_calls")
        if not (content is None or isinstance(content, str)):
            raise AnswerError(f"the message's content is no text: {self.safe(shown(content))}")
        if (content and content.strip()) or not calls:
            return content or ""
        call = calls[0] if isinstance(calls, list) else None
        function = call.get("function") if isinstance(call, dict) else None
        arguments = function.get("arguments") if isinstance(function, dict) else None
        if isinstance(arguments, str):
            return arguments
        if isinstance(arguments, dict):
            try:
                return json.dumps(arguments)
            except RecursionError:  # read, so a level or two short of the limit
                pass
        raise AnswerError(f"the tool call has no arguments to read: {self.safe(shown(calls))}")

    def _request(self, url: str, body: dict[str, Any] | None) -> Any:
        """One request with its tries; the decoded JSON answer, or `AnswerError` saying why
        the last try failed."""
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
                with self._opener.open(request, timeout=self.timeout_s) as response:
                    answer = self._body(url, response)
                return read_json(answer.decode("utf-8"), f"{url}'s answer", EndpointError)
            except urllib.error.HTTPError as e:
                last = self._status(url, e)
                if e.code not in RETRY_STATUS:
                    break
            except urllib.error.URLError as e:  # could not connect, or send the request
                last = self._failure(url, e.reason)
            except (http.client.HTTPException, OSError) as e:  # not HTTP, cut short, timed out
                last = self._failure(url, e)
            except EndpointError as e:  # too long, not JSON, nested too deep: no text of its
                last = str(e)
            except ValueError as e:  # not UTF-8, a chunk size that is no number
                last = self._failure(url, e)
        tries = "1 try" if attempt == 0 else f"{attempt + 1} tries"
        raise AnswerError(f"no answer after {tries}: {last}")

    def _body(self, url: str, response: http.client.HTTPResponse) -> bytes:
        """The answer's body; `EndpointError` past `max_body_bytes` (a longer declared length
        fails before any of it is read)."""
        too_long = EndpointError(f"{url}'s answer is more than {self.max_body_bytes} bytes")
        if response.length is not None and response.length > self.max_body_bytes:
            raise too_long
        body = _read_at_most(response, self.max_body_bytes)
        if len(body) > self.max_body_bytes:
            raise too_long
        return body

    def _status(self, url: str, e: urllib.error.HTTPError) -> str:
        """What an error status says: where a redirect points (its origin only), or the
        start of the body, read by the deadline and at most `ERROR_BODY_BYTES` of it."""
        with e:
            if 300 <= e.code < 400:
                where = self.safe(_origin(url, e.headers.get("Location")))
                return (
                    f"{url} redirected to {where} (HTTP {e.code}); redirects are not "
                    "followed: give the address the endpoint answers at"
                )
            try:
                detail = self.safe(_read_at_most(e, ERROR_BODY_BYTES).decode("utf-8", "replace"))
            except (http.client.HTTPException, OSError, ValueError) as failure:
                detail = f"(its body could not be read: {type(failure).__name__})"
        return f"HTTP {e.code} from {url}: {detail}"

    def _failure(self, url: str, reason: object) -> str:
        """A failed try's reason in one line: a timeout as the deadline missed."""
        if isinstance(reason, TimeoutError):
            return f"{url}: no whole answer within {self.timeout_s:g} s"
        return f"{url}: {type(reason).__name__}: {self.safe(str(reason))}"


class LLMAgent(Bot):
    """A chat model deciding through the text protocol (module docstring). `client`: a
    `ChatClient`, or any function from prompt to reply. `mode`: ``text`` (the text prompt) or
    ``tools`` (the JSON prompt, and a `ChatClient` offers the ``play`` function whose argument
    is limited to the legal actions). `log`: what each exchange leaves for the game record
    (`take_notes`): ``replies`` (reply, outcome, action, refusal, seconds; the prompt is a
    function of the recorded position, so it is left out), ``full`` (the prompt too) or
    ``counts`` (only the counts); the endpoint's text in them through `safe_text`, the reply
    and refusal at most `REPLY_LOG_CHARS`. After `failed_decisions_to_stop` decisions in a row
    whose requests all failed, a decision whose requests fail raises `EndpointError` instead
    of falling back; one that gets any reply starts the count afresh."""

    def __init__(
        self,
        rules: Rules | str | dict[str, Any],
        client: ChatClient | Callable[[str], str],
        policy: ReplyPolicy | None = None,
        seed: int = 0,
        log: str = "replies",
        name: str = "llm",
        mode: str = "text",
        failed_decisions_to_stop: int = FAILED_DECISIONS_TO_STOP,
    ) -> None:
        super().__init__(rules)
        if type(failed_decisions_to_stop) is not int or failed_decisions_to_stop < 1:
            raise ValueError(
                f"failed_decisions_to_stop must be an int >= 1, got {failed_decisions_to_stop!r}"
            )
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
        self.failed_decisions_to_stop = failed_decisions_to_stop
        self.failed_in_a_row = 0
        """Decisions in a row whose requests all failed (`AnswerError`, no reply at all)."""
        self._last_prompt = self._last_failure = ""
        self._key = client.key if isinstance(client, ChatClient) else None

    def decide(self, view: SeatView, legal: Sequence[Action]) -> Action:
        self._legal = legal
        render = render_prompt if self.mode == "text" else render_prompt_json
        counts = self.counts
        replies, failed = counts.replies, counts.failed
        action = ask(view, legal, self._ask, self.policy, counts, self.rng, self._note, render)
        if counts.replies > replies or counts.failed == failed:
            self.failed_in_a_row = 0
            return action
        self.failed_in_a_row += 1
        if self.failed_in_a_row < self.failed_decisions_to_stop:
            return action
        where = self.client.url if isinstance(self.client, ChatClient) else self.name
        raise EndpointError(
            f"{where} failed {self.failed_in_a_row} decisions in a row, so it plays no more "
            "(its moves would all be the fallback); the last error: "
            f"{safe_text(self._last_failure, REPLY_LOG_CHARS, self._key)}"
        )

    def _ask(self, prompt: str) -> str:
        self._last_prompt = prompt
        try:
            if self.mode == "tools" and isinstance(self.client, ChatClient):
                return self.client.chat(prompt, tools=[tool_schema(self._legal)])
            return self.answer(prompt)
        except AnswerError as e:
            self._last_failure = str(e)
            raise

    def _note(self, exchange: Exchange) -> None:
        if self.log == "counts":
            return
        d = exchange.to_dict()
        for text in ("reply", "refusal"):  # the endpoint's text, or quoting it
            if isinstance(d.get(text), str):
                d[text] = safe_text(d[text], REPLY_LOG_CHARS, self._key, keep_newlines=True)
        if self.log == "full":
            d["prompt"] = safe_text(
                self._last_prompt, PROMPT_LOG_CHARS, self._key, keep_newlines=True
            )
        self.exchanges.append(d)

    def take_notes(self) -> dict[str, Any]:
        """What the game record keeps of this agent (`evaluation.arena.play` writes it under
        ``meta["agent_notes"]``): the counts and the exchanges since the last call, which
        start afresh."""
        notes: dict[str, Any] = {"agent": self.name, "counts": self.counts.to_dict()}
        if isinstance(self.client, ChatClient):
            notes |= {"url": self.client.url, "model": self.client.model}
        if self.log != "counts":
            notes["exchanges"] = self.exchanges
        self.counts, self.exchanges = ReplyCounts(), []
        return notes


def llm_settings() -> tuple[str, str]:
    """The log mode (`LOG_ENV`) and the asking mode (`MODE_ENV`) of a spec-built agent;
    `ValueError` saying what is allowed for any other value (the registry checks them with
    the spec, so a command says so in one line before any game)."""
    log = os.environ.get(LOG_ENV, "replies")
    mode = os.environ.get(MODE_ENV, "text")
    for variable, value, allowed in ((LOG_ENV, log, LOG_MODES), (MODE_ENV, mode, MODES)):
        if value not in allowed:
            raise ValueError(
                f"{variable}={shown(value, 40)} is not allowed: use one of {', '.join(allowed)}"
            )
    return log, mode


def make_llm_agent(spec: str, rules: Rules, seed: int) -> LLMAgent:
    """The agent of an ``llm:URL[:MODEL]`` spec (the registry's factory): the key from
    `KEY_ENV`, the modes from `llm_settings`."""
    url, model = parse_llm_spec(spec)
    key = os.environ.get(KEY_ENV) or os.environ.get("OPENAI_API_KEY")
    log, mode = llm_settings()
    client = ChatClient(url, model, key)  # without a model, its look-up: EndpointError
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
