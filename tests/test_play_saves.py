"""Saving the play page's games when things go wrong (issue 20): a move that cannot be saved
is not played, two servers on one folder cannot overwrite each other's moves, and a damaged
database is found at start and set aside, never written over."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette", reason="the play extra is not installed")
from starlette.testclient import TestClient

from rummy500_env import Rules
from rummy500_env.play import store as store_module
from rummy500_env.play.server import create_app
from rummy500_env.play.store import Store
from rummy500_env.play.table import Setup

SETUP = Setup(Rules(), "random")


def client(data_dir: Path) -> TestClient:
    return TestClient(create_app(SETUP, data_dir, seed=3), base_url="http://127.0.0.1")


def state(c: TestClient, gid: str) -> dict[str, Any]:
    r = c.get(f"/api/games/{gid}")
    assert r.status_code == 200, r.text
    return dict(r.json()["state"])


def discard(s: dict[str, Any]) -> str:
    return next(a for a in s["legal"] if a.startswith("discard"))


# --- item 2: a failed save ------------------------------------------------------------------------


def test_a_move_that_cannot_be_saved_is_not_played(tmp_path, monkeypatch):
    monkeypatch.setattr(store_module, "BUSY_TIMEOUT_S", 0.2, raising=False)
    c = client(tmp_path)
    gid = c.post("/api/games").json()["state"]["id"]
    before = state(c, gid)
    blocker = sqlite3.connect(tmp_path / "games.sqlite3", isolation_level=None)
    blocker.execute("BEGIN EXCLUSIVE")  # another program holds the database
    try:
        r = c.post(f"/api/games/{gid}/actions", json={"action": "draw"})
        assert r.status_code == 503, r.text
        assert "was not played" in r.json()["error"] and "locked" in r.json()["error"]
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    assert state(c, gid) == before  # in memory as on disk: not drawn
    assert state(client(tmp_path), gid) == before  # a restart (kill -9) finds the same
    r = c.post(f"/api/games/{gid}/actions", json={"action": "draw"})  # the retry plays it
    assert r.status_code == 200 and r.json()["state"]["phase"] == "play"
    assert state(client(tmp_path), gid) == r.json()["state"]


def test_a_new_game_that_cannot_be_saved_is_not_dealt(tmp_path, monkeypatch):
    monkeypatch.setattr(store_module, "BUSY_TIMEOUT_S", 0.2, raising=False)
    c = client(tmp_path)
    blocker = sqlite3.connect(tmp_path / "games.sqlite3", isolation_level=None)
    blocker.execute("BEGIN EXCLUSIVE")
    try:
        assert c.post("/api/games").status_code == 503
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    assert c.app.state.service.tables == {}


# --- item 3: two servers, one folder --------------------------------------------------------------


def test_a_second_server_with_a_stale_copy_is_refused_not_obeyed(tmp_path):
    a, b = client(tmp_path), client(tmp_path)
    gid = a.post("/api/games").json()["state"]["id"]
    s = a.post(f"/api/games/{gid}/actions", json={"action": "draw"}).json()["state"]
    state(b, gid)  # b reads the game after the draw: both servers hold it
    first = discard(s)
    assert a.post(f"/api/games/{gid}/actions", json={"action": first}).status_code == 200
    second = next(x for x in s["legal"] if x.startswith("discard") and x != first)
    r = b.post(f"/api/games/{gid}/actions", json={"action": second})  # b's copy is stale
    assert r.status_code == 409, r.text
    assert "changed by another server using the same data folder" in r.json()["error"]
    saved = Store(tmp_path).load(gid)
    assert saved is not None and saved.hands[0].actions[-1] == (0, first)  # a's move stands
    assert state(b, gid) == state(a, gid)  # b carries on from the saved game


def test_a_database_from_before_versions_gets_one(tmp_path):
    with sqlite3.connect(tmp_path / "games.sqlite3") as db:
        db.execute("CREATE TABLE games (id TEXT PRIMARY KEY, updated REAL NOT NULL, record TEXT)")
    c = client(tmp_path)
    gid = c.post("/api/games").json()["state"]["id"]
    assert c.post(f"/api/games/{gid}/actions", json={"action": "draw"}).status_code == 200


# --- item 11: a damaged database ------------------------------------------------------------------


def saved_game(data_dir: Path) -> str:
    c = client(data_dir)
    gid = str(c.post("/api/games").json()["state"]["id"])
    for _ in range(30):  # some rows, so the file has data pages
        c.post("/api/games")
    return gid


def damage_a_data_page(path: Path) -> None:
    data = bytearray(path.read_bytes())
    page = int.from_bytes(data[16:18], "big") or 65536
    data[page + 8 : 3 * page] = b"\x5a" * (3 * page - page - 8)
    path.write_bytes(bytes(data))


@pytest.mark.parametrize(
    "damage",
    [
        lambda p: p.write_bytes(b"this is not a database, it is a shopping list\n" * 100),
        lambda p: p.write_bytes(p.read_bytes()[:5000]),
        lambda p: p.write_bytes(b""),
        damage_a_data_page,
    ],
    ids=["junk", "truncated", "empty", "junk-in-a-page"],
)
def test_a_damaged_database_is_found_at_start_and_set_aside(tmp_path, damage):
    saved_game(tmp_path)
    path = tmp_path / "games.sqlite3"
    damage(path)
    damaged = path.read_bytes()
    c = client(tmp_path)  # starts, with a clear word, instead of a traceback or silent 404s
    message = c.app.state.service.store.damaged
    assert message is not None and str(path) in message and "is damaged" in message
    aside = [
        p for p in tmp_path.iterdir() if re.fullmatch(r"games\.sqlite3\.damaged-[\d-]+", p.name)
    ]
    assert len(aside) == 1 and aside[0].read_bytes() == damaged  # kept as it was
    assert not list(tmp_path.glob("games.sqlite3-*"))  # its journal went with it
    assert str(aside[0]) in message and ".recover" in message
    assert c.post("/api/games").status_code == 201  # a fresh database works


def test_a_sound_database_is_left_alone(tmp_path):
    gid = saved_game(tmp_path)
    c = client(tmp_path)
    assert c.app.state.service.store.damaged is None
    assert c.get(f"/api/games/{gid}").status_code == 200


def test_the_command_warns_about_a_damaged_database(tmp_path, capsys):
    from rummy500_env.play import __main__ as cli

    saved_game(tmp_path)
    (tmp_path / "games.sqlite3").write_bytes(b"junk" * 1000)
    args = cli._parser().parse_args(["--data-dir", str(tmp_path), "--opponent", "random"])
    cli._play_app(args, None)
    err = capsys.readouterr().err
    assert "WARNING: the game database" in err and "moved to" in err
