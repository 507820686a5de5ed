"""The ``llm:URL[:MODEL]`` agent against a fake OpenAI-compatible endpoint on this machine.

`FakeEndpoint` is a small HTTP server whose "model" reads the prompt text alone: it finds the
legal actions listed there and answers one, and on purpose sometimes answers nonsense or an
illegal move, so the retries with the refusal text, the fallback and the counts can be
checked against what it did. No network beyond the loopback is used.
"""

from __future__ import annotations

import json
import random
import re
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from rummy500_env import Game, Rules
from rummy500_env.agents import RandomAgent
from rummy500_env.agents.ask import AnswerError, ReplyCounts, ReplyPolicy, ask
from rummy500_env.agents.llm import (
    ChatClient,
    LLMAgent,
    make_llm_agent,
    parse_llm_spec,
)
from rummy500_env.agents.registry import AgentSpecError, check_spec, make_agent
from rummy500_env.engine.notation import Action
from rummy500_env.engine.records import Record
from rummy500_env.evaluation.arena import play
from rummy500_env.text.protocol import REPLY_HINT

CARD = re.compile(r"(?<![\w=])(?:10|[2-9JQKA])[CDHS](?![\w])")


def legal_in_prompt(prompt: str) -> list[str]:
    """The legal actions a prompt lists, read from its text alone (one a line or grouped)."""
    block = prompt.split("\nLEGAL ACTIONS (", 1)[1].split("\n")[1:]
    out: list[str] = []
    for line in block:
        if not line.startswith("  "):
            break
        body = line.strip()
        if body.startswith("("):
            continue
        kind, colon, items = body.partition(": ")
        out += [f"{kind} {i}" for i in items.split(", ")] if colon else [body]
    return out


def hand_in_prompt(prompt: str) -> list[str]:
    line = next(x for x in prompt.split("\n") if x.startswith("your hand ("))
    return line.partition("): ")[2].split()


class FakeModel:
    """Answers a prompt: usually ``[a legal action]``, with `p_nonsense` a reply holding no
    action, with `p_illegal` a move it makes illegal (a card it does not hold, or the wrong
    phase). Keeps what it did, so a test can check the agent's counts against it."""

    def __init__(self, seed: int, p_nonsense: float = 0.08, p_illegal: float = 0.08) -> None:
        self.rng = random.Random(seed)
        self.p_nonsense, self.p_illegal = p_nonsense, p_illegal
        self.answers = self.bad = 0
        self.refused_then_not_told = 0
        self.prompts: list[str] = []
        self._last_bad = False
        self.lock = threading.Lock()

    def __call__(self, prompt: str) -> str:
        with self.lock:
            self.prompts.append(prompt)
            as_json = json.loads(prompt) if prompt.startswith("{") else None
            refused = (
                prompt.startswith("REFUSED: ") if as_json is None else bool(as_json["refused"])
            )
            if self._last_bad and not refused:
                self.refused_then_not_told += 1
            self.answers += 1
            legal = legal_in_prompt(prompt) if as_json is None else as_json["legal"]
            r = self.rng.random()
            self._last_bad = r < self.p_nonsense + self.p_illegal
            if r < self.p_nonsense:
                self.bad += 1
                return self.rng.choice(["I am not sure.", "", '{"move": 3}', "[[]]"])
            if r < self.p_nonsense + self.p_illegal:
                self.bad += 1
                held = set(hand_in_prompt(prompt) if as_json is None else as_json["hand"])
                missing = next(c for c in ("2C", "3D", "4H", "5S", "6C", "7D") if c not in held)
                wrong = (
                    "discard"
                    if any(a.startswith(("draw", "take", "call", "pass")) for a in legal)
                    else "draw"
                )
                return self.rng.choice(
                    [
                        f"[discard {missing}]",
                        f"Let me {wrong}: [{wrong if wrong == 'draw' else 'discard ' + missing}]",
                    ]
                )
            choice = self.rng.choice(legal)
            return self.rng.choice(
                [f"[{choice}]", f"I will play {choice}.", json.dumps({"action": choice})]
            )


class FakeEndpoint:
    """A local OpenAI-compatible endpoint (``/v1/models``, ``/v1/chat/completions``) answering
    with `model`; `fail_first` requests answer `fail_status` first, `delay_s` delays each."""

    def __init__(
        self, model: Any, fail_first: int = 0, fail_status: int = 503, delay_s: float = 0.0
    ) -> None:
        self.model = model
        self.fail_first, self.fail_status, self.delay_s = fail_first, fail_status, delay_s
        self.requests = 0
        self.tool_enums_right = 0
        self.keys: list[str | None] = []
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if self.path == "/v1/models":
                    self._send(
                        200, {"object": "list", "data": [{"id": "fake-rummy", "object": "model"}]}
                    )
                else:
                    self._send(404, {"error": "no such path"})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length))
                endpoint.requests += 1
                endpoint.keys.append(self.headers.get("Authorization"))
                if endpoint.delay_s:
                    time.sleep(endpoint.delay_s)
                if endpoint.requests <= endpoint.fail_first:
                    self._send(endpoint.fail_status, {"error": "try later"})
                    return
                if self.path != "/v1/chat/completions" or body["messages"][-1]["role"] != "user":
                    self._send(400, {"error": "bad request"})
                    return
                prompt = body["messages"][-1]["content"]
                reply = endpoint.model(prompt)
                message: dict[str, Any] = {"role": "assistant", "content": reply}
                if "tools" in body:  # the play function, offered with the legal actions only
                    enum = body["tools"][0]["function"]["parameters"]["properties"]["action"]
                    endpoint.tool_enums_right += enum["enum"] == json.loads(prompt)["legal"]
                    call = re.fullmatch(r"\[(.*)\]", reply)
                    if call is not None:
                        arguments = json.dumps({"action": call[1]})
                        function = {"name": "play", "arguments": arguments}
                        calls = [{"id": "c1", "type": "function", "function": function}]
                        message = {"role": "assistant", "content": None, "tool_calls": calls}
                self._send(200, {"choices": [{"index": 0, "message": message}]})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    def __enter__(self) -> FakeEndpoint:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def endpoint() -> Iterator[FakeEndpoint]:
    with FakeEndpoint(FakeModel(seed=1)) as e:
        yield e


def test_spec_forms_are_checked_before_any_game() -> None:
    assert parse_llm_spec("llm:http://localhost:8000/v1:llama3:8b") == (
        "http://localhost:8000/v1",
        "llama3:8b",
    )
    assert parse_llm_spec("llm:https://api.example.com/v1/") == ("https://api.example.com/v1", None)
    assert check_spec("llm:http://127.0.0.1:9/v1:m") == "llm:http://127.0.0.1:9/v1:m"
    for bad in ("llm:", "llm:localhost:8000", "llm:ftp://host/v1", "llm:http://"):
        with pytest.raises(AgentSpecError, match="llm:URL"):
            check_spec(bad)


def test_a_whole_game_through_the_spec_retries_refusals_and_counts_right(
    endpoint: FakeEndpoint, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RUMMY500_LLM_API_KEY", "sk-test")
    rules = Rules()
    agent = make_agent(f"llm:{endpoint.url}", rules, seed=3)  # no model named: /models is asked
    assert isinstance(agent, LLMAgent) and isinstance(agent.client, ChatClient)
    assert agent.client.model == "fake-rummy"
    counts = agent.counts
    result = play([agent, RandomAgent(5)], rules, seed=11, record_as=["llm", "random"])
    assert result.record is not None and result.record.finished
    model = endpoint.model
    assert isinstance(model, FakeModel)
    decisions = sum(1 for h in result.record.hands for p, _ in h.actions if p == 0)
    notes = result.record.meta["agent_notes"]["0"]
    got = ReplyCounts(**notes["counts"])
    assert got.decisions == decisions > 50
    assert got.replies == model.answers == endpoint.requests
    assert got.illegal + got.unreadable == model.bad > 0
    assert got.illegal > 0 and got.unreadable > 0
    assert got.failed == 0
    # every decision ends legal at once, after retries, or by the fallback
    first_bad = got.decisions - got.first_try
    assert got.replies == got.decisions + got.illegal + got.unreadable - got.fallbacks
    assert first_bad >= got.fallbacks
    assert model.refused_then_not_told == 0  # a refused reply is answered with REFUSED: why
    assert len(notes["exchanges"]) == got.replies
    refused = [x for x in notes["exchanges"] if x["outcome"] == "illegal"]
    assert all(" is illegal: " in x["refusal"] for x in refused)
    assert set(endpoint.keys) == {"Bearer sk-test"}
    # the notes survive the record's JSON and the record still replays
    path = result.record.save(tmp_path / "game.json")
    again = Record.load(path)
    assert again.meta["agent_notes"]["0"]["counts"] == notes["counts"]
    again.replay()
    assert agent.take_notes()["counts"]["decisions"] == 0  # taken: they start afresh
    del counts


@pytest.mark.slow
def test_a_tournament_with_the_spec_finishes(endpoint: FakeEndpoint, tmp_path: Path) -> None:
    from rummy500_env.evaluation.evaluate import main

    out = tmp_path / "eval"
    rc = main(
        [
            f"llm:{endpoint.url}:fake-rummy",
            "random",
            "--games",
            "2",
            "--out",
            str(out),
            "--record",
            str(tmp_path / "rec"),
            "--seed",
            "4",
        ]
    )
    assert rc == 0
    summary = json.loads((out / "results.json").read_text())
    assert "llm:" in json.dumps(summary)
    records = [Record.load(p) for p in sorted((tmp_path / "rec").glob("*.json"))]
    assert len(records) == 2 and all(r.finished for r in records)
    assert all("agent_notes" in r.meta for r in records)


def scripted(replies: list[str]) -> Any:
    it = iter(replies)
    return lambda prompt: next(it)


def test_retries_then_the_stated_fallback_each_counted() -> None:
    g = Game.new(Rules(), seed=2)
    view, legal = g.seat_view(g.current_player), g.legal_actions()
    counts = ReplyCounts()
    seen: list[str] = []

    def answer(prompt: str) -> str:
        seen.append(prompt)
        return ["nothing here", "[discard 2C]", "[meld 2C 3C 4C]"][len(seen) - 1]

    a = ask(view, legal, answer, ReplyPolicy(retries=2, fallback="first"), counts, random.Random(0))
    assert a == legal[0]
    assert counts == ReplyCounts(
        decisions=1, replies=3, first_try=0, illegal=2, unreadable=1, failed=0, fallbacks=1
    )
    assert seen[1].startswith("REFUSED: no action could be read from your reply")
    assert seen[2].startswith("REFUSED: discard 2C is illegal: you must draw first")
    # a legal answer after one refusal, and the random fallback drawn from its seeded generator
    counts = ReplyCounts()
    a = ask(
        view,
        legal,
        scripted(["[dance]", f"[{legal[-1]}]"]),
        ReplyPolicy(),
        counts,
        random.Random(0),
    )
    assert a == legal[-1] and (counts.replies, counts.first_try, counts.unreadable) == (2, 0, 1)
    picks = {
        ask(
            view,
            legal,
            scripted(["x"]),
            ReplyPolicy(retries=0, fallback="random"),
            ReplyCounts(),
            random.Random(s),
        )
        for s in range(20)
    }
    assert picks <= set(legal) and len(picks) > 1
    with pytest.raises(ValueError, match="retries"):
        ReplyPolicy(retries=-1)
    with pytest.raises(ValueError, match="fallback"):
        ReplyPolicy(fallback="best")  # type: ignore[arg-type]


@pytest.mark.slow
def test_requests_retry_on_busy_answers_and_give_up_on_bad_ones() -> None:
    sleeps: list[float] = []
    with FakeEndpoint(FakeModel(0, 0, 0), fail_first=2, fail_status=503) as e:
        client = ChatClient(e.url, "m", sleep=sleeps.append, attempts=3, backoff_s=0.5)
        g = Game.new(Rules(), seed=2)
        reply = client.chat("x\nLEGAL ACTIONS (1)\n  draw\n\nyour hand (0): ")
        assert reply and e.requests == 3 and sleeps == [0.5, 1.0]
    with FakeEndpoint(FakeModel(0), fail_first=5, fail_status=400) as e:
        client = ChatClient(e.url, "m", sleep=sleeps.append)
        with pytest.raises(AnswerError, match="HTTP 400"):
            client.chat("hello")
        assert e.requests == 1  # a client error is not tried again
        agent = LLMAgent(Rules(), client)
        g = Game.new(Rules(), seed=2)
        a = agent.decide(g.seat_view(g.current_player), g.legal_actions())
        assert a == g.legal_actions()[0]
        assert (agent.counts.failed, agent.counts.fallbacks, agent.counts.replies) == (1, 1, 0)
    with FakeEndpoint(FakeModel(0), delay_s=1.0) as e:
        client = ChatClient(e.url, "m", timeout_s=0.2, attempts=2, sleep=sleeps.append)
        started = time.perf_counter()
        with pytest.raises(AnswerError, match="no answer after 2 tries"):
            client.chat("hello")
        assert time.perf_counter() - started < 1.5


def test_key_comes_from_the_environment(
    endpoint: FakeEndpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RUMMY500_LLM_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")
    agent = make_llm_agent(f"llm:{endpoint.url}:fake-rummy", Rules(), seed=0)
    g = Game.new(Rules(), seed=2)
    agent.decide(g.seat_view(g.current_player), g.legal_actions())
    assert endpoint.keys[-1] == "Bearer sk-openai"


@pytest.mark.parametrize(("variable", "value"), [("MODE", "json"), ("LOG", "everything")])
def test_a_bad_mode_or_log_setting_is_one_spec_error(
    variable: str, value: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Read when the agent is built, so a command says it in one line and exits 2."""
    monkeypatch.setenv(f"RUMMY500_LLM_{variable}", value)
    with pytest.raises(AgentSpecError, match=f"RUMMY500_LLM_{variable}='{value}' is not allowed"):
        make_agent("llm:http://127.0.0.1:9/v1:m", Rules(), seed=0)


@pytest.mark.parametrize(
    "rules",
    [Rules(), Rules(players=4), Rules(jokers=2), Rules(players=4, jokers=2, rummy_calls=True)],
    ids=["2p", "4p", "2p-jokers", "4p-jokers-calls"],
)
def test_no_prompt_shows_a_card_the_seat_could_not_know(rules: Rules) -> None:
    """Every prompt (and every refusal) an agent is sent names only cards its seat knows:
    checked against `Game.seat_view` of the real game at that moment."""
    game = Game.new(rules, seed=21)
    model = FakeModel(seed=4, p_nonsense=0.1, p_illegal=0.1)
    current: dict[str, int] = {}

    def answer(prompt: str) -> str:
        view = game.seat_view(current["seat"])
        allowed = {*view.hand, *view.pile, *(c for m in view.melds for c in m.cards)}
        allowed |= {c for k in view.known for c in k}
        from rummy500_env.engine.cards import parse_card

        body = prompt.split("\nSTATE\n", 1)[1].replace(REPLY_HINT, "")  # its examples are fixed
        named = {parse_card(c) for c in CARD.findall(body)}
        assert named <= allowed, sorted(named - allowed)
        first = prompt.split("\n", 1)[0]
        if first.startswith("REFUSED: ") and " is illegal: " in first:
            # the refusal, worked out on a position the seat cannot tell from the real one, is
            # word for word the real game's: it depends on nothing the seat does not know
            shown, _, why = first.removeprefix("REFUSED: ").partition(" is illegal: ")
            assert why == game.why_illegal(Action.parse(shown))
        return model(prompt)

    agents = [LLMAgent(rules, answer, seed=s) for s in range(rules.players)]
    steps = 0
    while game.phase != "game_over" and steps < 600:
        if game.phase == "hand_over":
            game.next_hand()
            continue
        current["seat"] = seat = game.current_player
        game.apply(agents[seat].decide(game.seat_view(seat), game.legal_actions()))
        steps += 1
    assert sum(a.counts.illegal + a.counts.unreadable for a in agents) == model.bad > 0


def test_the_tools_mode_sends_the_json_prompt_and_a_function_limited_to_the_legal_actions(
    endpoint: FakeEndpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RUMMY500_LLM_MODE", "tools")
    rules = Rules(players=3, jokers=2)
    agent = make_agent(f"llm:{endpoint.url}:fake-rummy", rules, seed=1)
    assert isinstance(agent, LLMAgent) and agent.mode == "tools"
    result = play([agent, RandomAgent(1), RandomAgent(2)], rules, seed=6, episode="hand")
    model = endpoint.model
    assert isinstance(model, FakeModel)
    assert agent.counts.replies == model.answers == endpoint.requests == endpoint.tool_enums_right
    assert agent.counts.illegal + agent.counts.unreadable == model.bad
    assert agent.counts.decisions > 5 and model.refused_then_not_told == 0
    assert result.hand_scores
    with pytest.raises(ValueError, match="mode must be one of text, tools"):
        LLMAgent(rules, lambda prompt: "", mode="json")
