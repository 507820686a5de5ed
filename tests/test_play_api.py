"""The play server's API through Starlette's TestClient: a whole game, fairness (no hidden card
in any response), clean 4xx errors, saving after every move, resuming after a restart, and
the record of a finished game."""

from __future__ import annotations

import json
import re
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette", reason="the play extra is not installed")
from starlette.testclient import TestClient

from rummy500_env import Game, Rules
from rummy500_env.engine.cards import card_str
from rummy500_env.engine.records import Record
from rummy500_env.play.server import create_app
from rummy500_env.play.store import Store
from rummy500_env.play.table import Setup

BASE = "http://127.0.0.1"
SHORT = Rules(target=250)
"""Games to 250 take a few hands."""
CARD = re.compile(r"^(?:10|[2-9AJQK])[CDHS]$")


def client(data_dir: Path, rules: Rules = SHORT, opponent: str = "greedy", seed: int = 5):
    app = create_app(Setup(rules, opponent), data_dir, seed=seed)
    return TestClient(app, base_url=BASE)


def live_game(c: TestClient, game_id: str) -> Game:
    """The server's own game (white box: the test compares responses with the truth)."""
    return c.app.state.service.tables[game_id].game


# --- fairness -------------------------------------------------------------------------------------


SKIP = ("id", "record_url", "fits")
"""Keys the leak check does not read: the game id and its URL are random text that may hold
"9D"; a meld's `fits` names the cards that would fit it, read from the table alone (a
separate check holds them to the engine's meld)."""


def card_tokens(value: Any, skip: tuple[str, ...] = SKIP) -> set[str]:
    """Every card named anywhere in a JSON value (in lists, in words, in "JK=9D" or "9D#2")."""
    out: set[str] = set()
    if isinstance(value, dict):
        for k, v in value.items():
            if k not in skip:
                out |= card_tokens(v, skip)
    elif isinstance(value, list):
        for v in value:
            out |= card_tokens(v, skip)
    elif isinstance(value, str):
        out |= {t for t in re.split(r"[^0-9A-Z]+", value) if CARD.match(t)}
    return out


def hidden_cards(game: Game, viewer: int = 0) -> set[str]:
    """What `viewer` may not know: the stock, and while the hand goes on every other player's
    cards that were not seen taken from the pile."""
    hidden = {card_str(c) for c in game.stock_cards}
    if not game.is_hand_over:
        for q in range(game.players):
            if q != viewer:
                unseen = Counter(game.hand(q)) - Counter(game.known(q))
                hidden |= {card_str(c) for c in unseen}
    return hidden


def test_the_leak_check_can_fail():
    g = Game.new(Rules(), seed=1)
    leaked = {"state": {"log": [{"text": f"Computer draws {card_str(g.stock_cards[0])}"}]}}
    assert card_tokens(leaked) & hidden_cards(g)
    assert not card_tokens({"id": "x_9D-y", "state": {"hand": []}}) & {"9D"}


def play_through(c: TestClient, check) -> dict[str, Any]:
    """Play a whole game through the API (draw, put everything down, discard the highest
    card), calling `check(response_json, game_id)` on every response; returns the last state."""
    r = c.post("/api/games")
    assert r.status_code == 201
    s = r.json()["state"]
    gid = s["id"]
    check(r.json(), gid)
    for _ in range(5000):
        w = s["waiting"]
        if w == "game_over":
            return s
        if w == "you":
            if s["phase"] == "draw":
                body: dict[str, Any] = {"action": "draw"}
            elif s["plan"]:
                body = {"actions": s["plan"]}
            else:
                discards = [a for a in s["legal"] if a.startswith("discard")]
                body = {"action": discards[-1]}
            r = c.post(f"/api/games/{gid}/actions", json=body)
        elif w == "computer":
            r = c.post(f"/api/games/{gid}/advance")
        else:
            r = c.post(f"/api/games/{gid}/next-hand")
        assert r.status_code == 200, r.text
        check(r.json(), gid)
        s = r.json()["state"]
        if s["waiting"] != "game_over":
            seen = c.get(f"/api/games/{gid}/record")
            assert seen.status_code == 409 and "once the game is over" in seen.json()["error"]
    raise AssertionError("the game did not end")


def test_no_response_names_a_hidden_card_during_a_whole_game(tmp_path):
    c = client(tmp_path)
    checked = Counter[str]()

    def check(body: dict[str, Any], gid: str) -> None:
        game = live_game(c, gid)
        leaks = card_tokens(body) & hidden_cards(game)
        assert not leaks, f"{leaks} leaked in phase {game.phase}: {json.dumps(body)[:400]}"
        assert "seed" not in json.dumps(body)
        melds = body["state"]["melds"]
        assert [m["fits"] for m in melds] == [[card_str(c) for c in m.fits] for m in game.melds]
        checked[game.phase] += 1

    final = play_through(c, check)
    assert final["result"]["game_over"] and checked["draw"] > 10 and checked["hand_over"] >= 1


def test_the_computer_is_chosen_on_the_command_line_never_by_the_page(tmp_path):
    c = client(tmp_path)
    r = c.post("/api/games", json={"opponent": "models/rummy500-ppo-standard.pt"})
    assert r.status_code == 400
    assert "unknown field(s) ['opponent']" in r.json()["error"]
    assert "set on the command line" in r.json()["error"]


# --- a game, its saves and its record -------------------------------------------------------------


def saved_actions(data_dir: Path, gid: str) -> int:
    with sqlite3.connect(data_dir / "games.sqlite3") as db:
        (text,) = db.execute("SELECT record FROM games WHERE id = ?", (gid,)).fetchone()
    return Record.from_dict(json.loads(text)).action_count


def test_every_move_is_saved_before_the_answer(tmp_path):
    c = client(tmp_path)

    def check(body: dict[str, Any], gid: str) -> None:
        played = c.app.state.service.tables[gid].record.action_count
        assert saved_actions(tmp_path, gid) == played

    play_through(c, check)


def test_a_finished_game_writes_its_record_which_replays(tmp_path):
    c = client(tmp_path)
    final = play_through(c, lambda body, gid: None)
    gid = final["id"]
    assert final["record_url"] == f"/api/games/{gid}/record"
    served = c.get(final["record_url"]).json()
    on_disk = Record.load(Store(tmp_path).record_file(gid))
    assert on_disk.to_dict() == served
    game = on_disk.replay()
    assert game.phase == "game_over" and game.totals == final["result"]["totals"]
    assert on_disk.players == ["human", "greedy"]


def test_a_restarted_server_resumes_the_exact_game(tmp_path):
    first = client(tmp_path)
    s = first.post("/api/games").json()["state"]
    gid = s["id"]
    s = first.post(f"/api/games/{gid}/actions", json={"action": "draw"}).json()["state"]
    second = client(tmp_path)  # a new process: nothing in memory
    assert second.get(f"/api/games/{gid}").json()["state"] == s
    card = next(a for a in s["legal"] if a.startswith("discard"))
    r = second.post(f"/api/games/{gid}/actions", json={"action": card})
    assert r.status_code == 200 and r.json()["state"]["waiting"] == "computer"


def test_a_new_game_is_a_new_id(tmp_path):
    c = client(tmp_path)
    a = c.post("/api/games").json()["state"]["id"]
    b = c.post("/api/games").json()["state"]["id"]
    assert a != b and c.get(f"/api/games/{a}").status_code == 200


def test_a_saved_game_from_other_rules_says_how_to_resume_it(tmp_path):
    gid = client(tmp_path).post("/api/games").json()["state"]["id"]
    r = client(tmp_path, rules=Rules()).get(f"/api/games/{gid}")
    assert r.status_code == 409 and "--rules" in r.json()["error"]


def test_three_players_see_two_computers(tmp_path):
    c = client(tmp_path, rules=Rules(players=3))
    s = c.post("/api/games").json()["state"]
    assert [p["name"] for p in s["players"]] == ["You", "Computer 1", "Computer 2"]
    assert [p.get("hand") is None for p in s["players"]] == [False, True, True]


# --- errors ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def game_client(tmp_path_factory):
    c = client(tmp_path_factory.mktemp("errors"))
    gid = c.post("/api/games").json()["state"]["id"]
    return c, gid


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "words"),
    [
        ("get", "/api/games/nope-nope-nope", None, 404, "no saved game with id"),
        ("get", "/api/games/a%20b", None, 404, "no game with id 'a b'"),
        ("post", "/api/games/{id}/actions", "{not json", 400, "not JSON"),
        ("post", "/api/games/{id}/actions", "[1]", 400, "must be a JSON object"),
        ("post", "/api/games/{id}/actions", {}, 400, 'give "action"'),
        ("post", "/api/games/{id}/actions", {"action": 3}, 400, "'action' must be a JSON string"),
        ("post", "/api/games/{id}/actions", {"actions": []}, 400, "1 to 64 action texts"),
        ("post", "/api/games/{id}/actions", {"action": "fly"}, 400, "not an action: 'fly'"),
        (
            "post",
            "/api/games/{id}/actions",
            {"action": "discard 2C"},
            422,
            "discard 2C is not allowed",
        ),
        ("post", "/api/games/{id}/actions", {"action": "meld 2C 5D 9H"}, 422, "is not allowed"),
        (
            "post",
            "/api/games/{id}/actions",
            {"action": "draw", "x": 1},
            400,
            "unknown field(s) ['x']",
        ),
        ("post", "/api/games/{id}/advance", None, 409, "it is your turn"),
        ("post", "/api/games/{id}/next-hand", None, 409, "cannot be dealt now"),
        ("get", "/api/games/{id}/record", None, 409, "once the game is over"),
        ("get", "/api/nothing", None, 404, "no such page or API: /api/nothing"),
        ("delete", "/api/games/{id}", None, 405, "DELETE is not allowed"),
    ],
)
def test_bad_requests_get_a_4xx_with_a_clear_message(
    game_client, method, path, body, status, words
):
    c, gid = game_client
    kwargs: dict[str, Any] = {}
    if isinstance(body, str):
        kwargs["content"] = body
    elif body is not None:
        kwargs["json"] = body
    r = c.request(method.upper(), path.replace("{id}", gid), **kwargs)
    assert r.status_code == status, r.text
    assert r.headers["content-type"] == "application/json"
    assert words in r.json()["error"]
    assert "Traceback" not in r.text


def test_the_engine_says_why_a_move_is_illegal(game_client):
    c, gid = game_client
    r = c.post(f"/api/games/{gid}/actions", json={"action": "discard 2C"})
    assert r.status_code == 422
    assert r.json()["error"] == (  # the engine's own reason, naming the rule
        "discard 2C is not allowed: you must draw first: draw, take or dig "
        "(docs/rules.md §1, a turn)"
    )


def test_a_bug_is_a_500_with_one_line_not_a_traceback(tmp_path):
    app = create_app(Setup(SHORT, "greedy"), tmp_path, seed=1)

    def broken() -> None:
        raise RuntimeError("boom")

    app.state.service.new_game = broken
    c = TestClient(app, base_url=BASE, raise_server_exceptions=False)
    r = c.post("/api/games")
    assert r.status_code == 500 and r.json() == {
        "error": "internal error (RuntimeError: boom); the server's console has more"
    }


def test_requests_for_another_host_are_refused(tmp_path):
    """A page elsewhere that points a name at 127.0.0.1 (DNS rebinding) gets nothing."""
    c = TestClient(create_app(Setup(SHORT, "greedy"), tmp_path), base_url="http://evil.example")
    assert c.get("/api/config").status_code == 400


def test_the_page_and_its_files_are_served(tmp_path):
    c = client(tmp_path)
    page = c.get("/")
    assert page.status_code == 200 and 'data-testid="stock"' in page.text
    for name in ("app.js", "style.css"):
        assert c.get(f"/static/{name}").status_code == 200
    assert c.get("/api/config").json() == {
        "mode": "play",
        "opponent": "greedy",
        "players": 2,
        "rules": SHORT.to_dict(),
        "target": 250,
        "pace_ms": 700,
    }


def test_the_replay_app_serves_every_step_with_every_hand(tmp_path):
    from rummy500_env.play.server import create_replay_app

    c = client(tmp_path)
    final = play_through(c, lambda body, gid: None)
    record = Record.from_dict(c.get(final["record_url"]).json())
    r = TestClient(create_replay_app(record, "game.json"), base_url=BASE)
    summary = r.get("/api/replay").json()
    steps = summary["steps"]
    assert len(steps) == record.action_count + len(record.hands)
    assert steps[1]["text"].startswith("human (seat 0) draws ")  # every draw is named
    last = r.get(f"/api/replay/frames/{len(steps) - 1}").json()["state"]
    assert last["result"]["totals"] == record.final_totals
    middle = r.get("/api/replay/frames/5").json()["state"]
    assert all(len(p["hand"]) == p["hand_size"] for p in middle["players"])
    assert r.get(f"/api/replay/frames/{len(steps)}").status_code == 404
