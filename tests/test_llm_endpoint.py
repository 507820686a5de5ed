"""The ``llm:`` client against endpoints that misbehave on purpose (docs/text.md, "Limits").

`RawEndpoint` is a TCP server on the loopback (its port chosen by the system) that answers
each connection with a script: a redirect to another server, a body dripped a byte at a
time, a body larger than the cap or without end, a cut answer, an answer that is not HTTP,
JSON nested too deep, a reply of the wrong shape, an error body that echoes the key. Each
must end as a failed request (counted, then the fallback), in bounded time and memory,
without the key going anywhere or reaching a message unmasked. The handler threads end when
the client hangs up, when the test stops the server, or after `SCRIPT_LIMIT_S`.
"""

from __future__ import annotations

import gc
import json
import os
import socket
import socketserver
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from rummy500_env import Game, Rules
from rummy500_env.agents import RandomAgent
from rummy500_env.agents.ask import AnswerError
from rummy500_env.agents.llm import (
    KEY_MASK,
    REPLY_LOG_CHARS,
    ChatClient,
    EndpointError,
    LLMAgent,
    safe_text,
)
from rummy500_env.engine.errors import Rummy500Error
from rummy500_env.evaluation.arena import play

KEY = "sk-secret-0123456789"
SCRIPT_LIMIT_S = 10.0
"""No script runs longer than this, whatever the client does."""
FLOOD_LIMIT_BYTES = 64 << 20
"""No script sends more than this (a client without a cap would hold it all in memory)."""
DRIP_S = 0.05
"""Seconds between two bytes of a dripped answer."""
Script = Callable[[socket.socket, dict[str, str]], None]


def no_sleep(seconds: float) -> None:
    """The backoff between tries, skipped: these tests time the requests, not the waits."""


class RawEndpoint:
    """A loopback TCP server answering every connection with `script` (after reading the
    request); `requests` keeps each request's method, path and headers (lower-case names)."""

    def __init__(self, script: Script) -> None:
        self.requests: list[dict[str, str]] = []
        self.stopping = threading.Event()
        endpoint = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                conn: socket.socket = self.request
                conn.settimeout(SCRIPT_LIMIT_S)
                try:
                    head = read_request(conn)
                    endpoint.requests.append(head)
                    script(conn, head)
                except OSError:  # the client hung up: what a deadline or a cap does
                    pass

        self.server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    def __enter__(self) -> RawEndpoint:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopping.set()
        self.server.shutdown()
        self.server.server_close()

    def drip(self, conn: socket.socket, data: bytes) -> None:
        """Send `data` a byte every `DRIP_S` seconds, until stopped or `SCRIPT_LIMIT_S`."""
        ends = time.monotonic() + SCRIPT_LIMIT_S
        for byte in data:
            if self.stopping.is_set() or time.monotonic() > ends:
                return
            conn.sendall(bytes([byte]))
            time.sleep(DRIP_S)

    def flood(self, conn: socket.socket, chunk: bytes) -> None:
        """Send `chunk` again and again, until the client hangs up, stopped or the limits."""
        ends = time.monotonic() + SCRIPT_LIMIT_S
        for _ in range(FLOOD_LIMIT_BYTES // len(chunk)):
            if self.stopping.is_set() or time.monotonic() > ends:
                return
            conn.sendall(chunk)


def read_request(conn: socket.socket) -> dict[str, str]:
    data = b""
    while b"\r\n\r\n" not in data:
        got = conn.recv(65536)
        if not got:
            raise ConnectionError("the client sent no whole request")
        data += got
    head, _, body = data.partition(b"\r\n\r\n")
    first, *lines = head.decode("latin-1").split("\r\n")
    method, path, _ = first.split(" ", 2)
    headers = {k.strip().lower(): v.strip() for k, _, v in (x.partition(":") for x in lines)}
    while len(body) < int(headers.get("content-length", 0)):
        body += conn.recv(65536)
    return {"method": method, "path": path, **headers}


def answer(status: str, body: bytes, *headers: str) -> Script:
    """A script answering once: `status` (``302 Found``), `headers`, then `body`."""

    def script(conn: socket.socket, head: dict[str, str]) -> None:
        lines = [f"HTTP/1.1 {status}", f"Content-Length: {len(body)}", *headers]
        conn.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)

    return script


def reply_body(message: Any) -> bytes:
    return json.dumps({"choices": [{"index": 0, "message": message}]}).encode()


GOOD = answer("200 OK", reply_body({"role": "assistant", "content": "[draw]"}))


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A loopback port bound but not listening, held for the test: connections are refused."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        yield s.getsockname()[1]


@contextmanager
def no_leaks() -> Iterator[None]:
    """Fails if the block leaves a socket or file for the garbage collector to close."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        yield
        gc.collect()
    assert [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)] == []


def decide_once(agent: LLMAgent, seed: int = 2) -> tuple[Any, list[Any]]:
    g = Game.new(Rules(), seed=seed)
    legal = g.legal_actions()
    return agent.decide(g.seat_view(g.current_player), legal), legal


# --- item 1: redirects ------------------------------------------------------------------------


@pytest.mark.parametrize("status", ["301 Moved", "302 Found", "303 See Other", "307 Temp", "308 X"])
def test_a_redirect_is_refused_and_nothing_reaches_the_other_host(status: str) -> None:
    with RawEndpoint(GOOD) as elsewhere:
        location = f"Location: http://127.0.0.1:{elsewhere.port}/steal?token=abc"
        with RawEndpoint(answer(status, b"moved", location)) as endpoint:
            client = ChatClient(endpoint.url, "m", key=KEY, sleep=no_sleep)
            with no_leaks(), pytest.raises(AnswerError) as e:
                client.chat("hello")
            with pytest.raises(EndpointError, match="redirected to"):
                ChatClient(endpoint.url, key=KEY, sleep=no_sleep)  # the /models look-up too
        message = str(e.value)
        assert f"redirected to http://127.0.0.1:{elsewhere.port}" in message
        assert "not followed" in message and "steal" not in message and "abc" not in message
        assert len(endpoint.requests) == 2  # one each: a redirect is not tried again
        assert endpoint.requests[0]["authorization"] == f"Bearer {KEY}"
        assert elsewhere.requests == []  # neither the key nor anything else went there


# --- item 3: the deadline and the body cap ----------------------------------------------------


def drip_body(endpoint: RawEndpoint) -> Script:
    def script(conn: socket.socket, head: dict[str, str]) -> None:
        body = reply_body({"role": "assistant", "content": "[draw]" + " " * 1000})
        conn.sendall(f"HTTP/1.1 200 OK\r\nContent-Length: {len(body)}\r\n\r\n".encode())
        endpoint.drip(conn, body)

    return script


def drip_headers(endpoint: RawEndpoint) -> Script:
    def script(conn: socket.socket, head: dict[str, str]) -> None:
        endpoint.drip(conn, b"HTTP/1.1 200 OK\r\nX-Slow: " + b"z" * 10_000)

    return script


@pytest.mark.parametrize("drip", [drip_body, drip_headers], ids=["body", "headers"])
@pytest.mark.slow
def test_an_answer_dripped_a_byte_at_a_time_ends_at_the_deadline(
    drip: Callable[[RawEndpoint], Script],
) -> None:
    holder: list[RawEndpoint] = []  # the script needs its endpoint: set once made
    with RawEndpoint(lambda conn, head: drip(holder[0])(conn, head)) as endpoint:
        holder.append(endpoint)
        client = ChatClient(endpoint.url, "m", timeout_s=0.5, attempts=2, sleep=no_sleep)
        started = time.monotonic()
        with no_leaks(), pytest.raises(AnswerError, match=r"no whole answer within 0\.5 s"):
            client.chat("hello")
        assert time.monotonic() - started < 2.0  # two tries of 0.5 s, not the drip's 10 s
        assert len(endpoint.requests) == 2  # a timeout is tried again


def flood_with(head: bytes, chunk: bytes) -> Callable[[RawEndpoint], Script]:
    def make(endpoint: RawEndpoint) -> Script:
        def script(conn: socket.socket, request: dict[str, str]) -> None:
            conn.sendall(head)
            endpoint.flood(conn, chunk)

        return script

    return make


BIG = b"[" + b" " * 65536
FLOODS = {
    "declared-too-long": flood_with(b"HTTP/1.1 200 OK\r\nContent-Length: 300000000\r\n\r\n", BIG),
    "no-length": flood_with(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n", BIG),
    "endless-chunks": flood_with(
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
        b"10000\r\n" + b" " * 65536 + b"\r\n",
    ),
    "error-body": flood_with(b"HTTP/1.1 500 Oops\r\nConnection: close\r\n\r\n", BIG),
}


@pytest.mark.parametrize("flood", FLOODS.values(), ids=FLOODS.keys())
def test_an_answer_over_the_body_cap_is_a_failed_request(
    flood: Callable[[RawEndpoint], Script],
) -> None:
    holder: list[RawEndpoint] = []
    with RawEndpoint(lambda conn, head: flood(holder[0])(conn, head)) as endpoint:
        holder.append(endpoint)
        client = ChatClient(
            endpoint.url, "m", timeout_s=5.0, attempts=1, max_body_bytes=4096, sleep=no_sleep
        )
        started = time.monotonic()
        with no_leaks(), pytest.raises(AnswerError, match=r"more than 4096 bytes|HTTP 500"):
            client.chat("hello")
        assert time.monotonic() - started < 2.0


@pytest.mark.slow
def test_the_drip_fixture_holds_a_plain_client_for_as_long_as_it_drips() -> None:
    """The dripping script is what the deadline is for: urllib's own timeout, a bound on each
    socket read, does not end it (checked on a short drip, so the test stays fast)."""
    import urllib.request

    holder: list[RawEndpoint] = []

    def script(conn: socket.socket, head: dict[str, str]) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 20\r\n\r\n")
        holder[0].drip(conn, b"x" * 20)

    with RawEndpoint(script) as endpoint:
        holder.append(endpoint)
        started = time.monotonic()
        with urllib.request.urlopen(endpoint.url, timeout=0.5) as response:
            assert response.read() == b"x" * 20
        assert time.monotonic() - started > 20 * DRIP_S * 0.9


# --- item 4: broken answers -------------------------------------------------------------------


def cut(conn: socket.socket, head: dict[str, str]) -> None:
    conn.sendall(b'HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n{"choices": [')


def not_http(conn: socket.socket, head: dict[str, str]) -> None:
    conn.sendall(b"SSH-2.0-OpenSSH_9.6\r\n\r\n")


def hang_up(conn: socket.socket, head: dict[str, str]) -> None:
    conn.close()


def too_many_headers(conn: socket.socket, head: dict[str, str]) -> None:
    conn.sendall(b"HTTP/1.1 200 OK\r\n" + b"X-A: b\r\n" * 200 + b"\r\n")


def bad_chunk(status: bytes) -> Script:
    def script(conn: socket.socket, head: dict[str, str]) -> None:
        conn.sendall(b"HTTP/1.1 " + status + b"\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n")

    return script


BROKEN: dict[str, Script] = {
    "gateway-cut": cut,
    "not-http": not_http,
    "hung-up": hang_up,
    "too-many-headers": too_many_headers,
    "bad-chunk-size": bad_chunk(b"200 OK"),
    "bad-chunk-size-in-an-error": bad_chunk(b"502 Bad Gateway"),
    "nested-json": answer("200 OK", b"[" * 100_000),
    "nested-json-object": answer("200 OK", b'{"choices": ' + b"[" * 100_000),
    "not-utf8": answer("200 OK", b'{"choices": "\xff\xfe"}'),
    "huge-number": answer("200 OK", b"1" * 5000),
    "not-json": answer("200 OK", b"<html>Bad gateway</html>"),
    "tool-calls-strings": answer(
        "200 OK", reply_body({"role": "assistant", "content": None, "tool_calls": ["x"]})
    ),
    "tool-function-string": answer(
        "200 OK", reply_body({"content": None, "tool_calls": [{"function": "play"}]})
    ),
    "tool-arguments-number": answer(
        "200 OK", reply_body({"content": None, "tool_calls": [{"function": {"arguments": 5}}]})
    ),
    "message-string": answer("200 OK", reply_body("[draw]")),
    "choices-object": answer("200 OK", b'{"choices": {"0": 1}}'),
    "choices-strings": answer("200 OK", b'{"choices": ["x"]}'),
    "answer-list": answer("200 OK", b"[1, 2]"),
}


@pytest.mark.parametrize("script", BROKEN.values(), ids=BROKEN.keys())
@pytest.mark.parametrize("mode", ["text", "tools"])
def test_a_broken_answer_is_a_failed_request_counted_then_the_fallback(
    script: Script, mode: str
) -> None:
    with RawEndpoint(script) as endpoint:
        client = ChatClient(endpoint.url, "m", key=KEY, timeout_s=2.0, sleep=no_sleep)
        agent = LLMAgent(Rules(), client, mode=mode)
        with no_leaks():
            action, legal = decide_once(agent)
        assert action == legal[0]
        counts = agent.counts
        assert (counts.failed, counts.fallbacks, counts.replies) == (1, 1, 0)
        failure = agent.take_notes()["exchanges"][0]
        assert failure["outcome"] == "failed" and failure["refusal"]
        assert len(failure["refusal"]) < 1000 and KEY not in failure["refusal"]


def test_tool_arguments_given_as_an_object_are_read_as_json() -> None:
    arguments = {"action": "draw"}
    body = reply_body({"content": None, "tool_calls": [{"function": {"arguments": arguments}}]})
    with RawEndpoint(answer("200 OK", body)) as endpoint:
        reply = ChatClient(endpoint.url, "m").chat("hello")
    assert json.loads(reply) == arguments


# --- item 9: an endpoint that fails every request ---------------------------------------------


def test_an_endpoint_failing_decision_after_decision_stops_with_one_error() -> None:
    with RawEndpoint(answer("401 Unauthorized", b'{"error": "bad key"}')) as endpoint:
        client = ChatClient(endpoint.url, "m", sleep=no_sleep)
        agent = LLMAgent(Rules(), client, failed_decisions_to_stop=3)
        for _ in range(2):
            decide_once(agent)  # the fallback, counted
        with pytest.raises(EndpointError) as e:
            decide_once(agent)
        assert isinstance(e.value, Rummy500Error)
        message = str(e.value)
        assert f"{endpoint.url} failed 3 decisions in a row" in message
        assert "HTTP 401" in message and "bad key" in message and "\n" not in message
        assert agent.counts.failed == 3 and len(endpoint.requests) == 3
        with pytest.raises(EndpointError):  # still down: the next decision stops too
            decide_once(agent)

    # a decision that gets any reply starts the run afresh
    replies = iter(["[draw]", "x", "x", "[draw]", "x", "x"])

    def flaky(prompt: str) -> str:
        reply = next(replies)
        if reply == "x":
            raise AnswerError("no answer after 3 tries: down")
        return reply

    agent = LLMAgent(Rules(), flaky, failed_decisions_to_stop=3)
    for _ in range(6):
        decide_once(agent)
    assert (agent.counts.failed, agent.counts.decisions) == (4, 6)
    with pytest.raises(ValueError, match="failed_decisions_to_stop"):
        LLMAgent(Rules(), flaky, failed_decisions_to_stop=0)


def test_a_game_against_a_dead_endpoint_ends_with_the_error_not_a_ranking(
    closed_port: int,
) -> None:
    client = ChatClient(f"http://127.0.0.1:{closed_port}/v1", "m", attempts=1, sleep=no_sleep)
    agent = LLMAgent(Rules(), client)
    started = time.monotonic()
    with pytest.raises(EndpointError, match=r"failed 5 decisions in a row.*refused"):
        play([agent, RandomAgent(1)], Rules(), seed=3)
    assert time.monotonic() - started < 5.0


def test_a_tournament_against_a_failing_endpoint_ends_with_one_error_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from rummy500_env.evaluation.evaluate import main

    with RawEndpoint(answer("401 Unauthorized", b"bad key \x1b[2J")) as endpoint:
        args = [f"llm:{endpoint.url}:m", "random", "--games", "2", "--workers", "1"]
        assert main([*args, "--out", str(tmp_path / "eval")]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith(f"error: {endpoint.url} failed 5 decisions in a row")
    assert err.endswith("HTTP 401 from " + endpoint.url + "/chat/completions: bad key [2J")
    assert not (tmp_path / "eval" / "results.json").exists()  # no table ranking the fallback


# --- item 16 and 6: endpoint text as shown ----------------------------------------------------


def test_safe_text_strips_controls_masks_the_key_and_bounds_the_length() -> None:
    text = f"a\x1b[2J\x1b]0;pwned\x07b\x9bc\u202e {KEY}\r\nnext\tline"
    assert safe_text(text, 200, KEY) == f"a[2J]0;pwnedbc {KEY_MASK}  next line"
    assert safe_text(text, 200, KEY, keep_newlines=True).endswith(f"{KEY_MASK}\nnext\tline")
    long = safe_text("y" * 10_000, 50, None)
    assert long.startswith("y" * 50) and long.endswith("(10000 characters)") and len(long) < 80
    # a key cut across the bound is masked first, and one hidden by control characters too
    assert KEY[:6] not in safe_text("z" * 45 + KEY, 50, KEY)
    assert safe_text(KEY[:4] + "\x00" + KEY[4:], 100, KEY) == KEY_MASK


def test_an_error_body_reaches_no_message_or_record_with_the_key_or_escapes() -> None:
    echo = f"bad key: Bearer {KEY} \x1b[2J\x1b]0;pwned\x07\n" + "#" * 100_000
    with RawEndpoint(answer("403 Forbidden", echo.encode())) as endpoint:
        client = ChatClient(endpoint.url, "m", key=KEY, sleep=no_sleep)
        with pytest.raises(AnswerError) as e:
            client.chat("hello")
        agent = LLMAgent(Rules(), client, log="full")
        decide_once(agent)
        with pytest.raises(EndpointError) as lookup:
            ChatClient(endpoint.url, key=KEY, sleep=no_sleep)
    for message in (str(e.value), str(lookup.value), json.dumps(agent.take_notes())):
        assert KEY not in message and KEY_MASK in message
        assert not any(c in message for c in "\x1b\x07")
    assert "\n" not in str(e.value) and len(str(e.value)) < 1000


def test_a_logged_reply_is_a_bounded_excerpt_without_the_key_or_escapes() -> None:
    reply = f"[draw] \x1b[31m{KEY}\x1b[0m\n" + "why " * 5000
    body = reply_body({"role": "assistant", "content": reply})
    with RawEndpoint(answer("200 OK", body)) as endpoint:
        agent = LLMAgent(Rules(), ChatClient(endpoint.url, "m", key=KEY), log="full")
        decide_once(agent)
    notes = agent.take_notes()
    logged = notes["exchanges"][0]["reply"]
    assert logged.startswith("[draw] [31m" + KEY_MASK + "[0m\nwhy why")
    assert len(logged) < REPLY_LOG_CHARS + 40 and logged.endswith(f"({len(reply)} characters)")
    assert KEY not in json.dumps(notes) and "\x1b" not in json.dumps(notes)


def test_a_model_name_the_endpoint_lists_is_checked() -> None:
    for listed in ([{"id": "x\x1b[2J" + "y" * 1000}], [{"id": 5}], [], "m"):
        body = json.dumps({"data": listed}).encode()
        with RawEndpoint(answer("200 OK", body)) as endpoint:
            with pytest.raises(EndpointError, match="lists no model") as e:
                ChatClient(endpoint.url, sleep=no_sleep)
        assert "\x1b" not in str(e.value) and len(str(e.value)) < 600


# --- item 5: commands with the endpoint down --------------------------------------------------


@pytest.mark.slow
def test_commands_with_the_endpoint_down_say_one_error_line(
    closed_port: int, tmp_path: Path
) -> None:
    spec = f"llm:http://127.0.0.1:{closed_port}/v1"
    commands = [
        ["rummy500_env.evaluation.evaluate", spec, "random", "--games", "1"],
        ["rummy500_env.play", "--opponent", spec, "--port", "0", "--no-browser"],
    ]
    extra = [["--out", str(tmp_path / "eval")], ["--data-dir", str(tmp_path / "data")]]
    running = [
        subprocess.Popen(
            [sys.executable, "-m", *c, *more],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=tmp_path,
            env=os.environ | {"PYTHONWARNINGS": "ignore"},  # (a stale compiled core's)
        )
        for c, more in zip(commands, extra, strict=True)
    ]
    for proc in running:
        err = proc.communicate(timeout=60)[1]
        assert proc.returncode == 2, err
        assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
        assert err.startswith("error: ") and f"127.0.0.1:{closed_port}/v1" in err
        assert "refused" in err and "llm:URL:MODEL" in err
