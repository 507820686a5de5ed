"""A client that goes away while it sends a body (a closed tab, a dropped connection) ends its
request quietly: no "Exception in ASGI application" traceback on the server's console
(Starlette raises ``ClientDisconnect`` from the body's stream), and nothing dealt or played."""

from __future__ import annotations

import asyncio
import os
import re
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette", reason="the play extra is not installed")
from starlette.testclient import TestClient

from rummy500_env import Rules
from rummy500_env.play.server import create_app
from rummy500_env.play.table import Setup


def call_and_hang_up(app: Any, path: str, first_part: bytes) -> list[dict[str, Any]]:
    """POST to `path` with a body whose first part arrives, then the client disconnects;
    what the app sent back (an exception escaping the app fails the test)."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": b"",
        "headers": [
            (b"host", b"127.0.0.1:8000"),
            (b"content-type", b"application/json"),
            (b"content-length", b"400"),
        ],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
    }
    incoming = [
        {"type": "http.request", "body": first_part, "more_body": True},
        {"type": "http.disconnect"},
    ]
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        if incoming:
            return incoming.pop(0)
        await asyncio.sleep(3600)  # a client that is gone says nothing more
        raise AssertionError("unreachable")

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    # A thread of its own: this one may already run an event loop (another test's, or a
    # plugin's), and asyncio.run refuses to start a second one in the same thread.
    runner = threading.Thread(target=asyncio.run, args=(app(scope, receive, send),))
    runner.start()
    runner.join()
    return sent


def test_a_client_gone_mid_body_is_no_server_error(tmp_path: Path, capsys) -> None:
    app = create_app(Setup(Rules(), "random"), tmp_path, seed=1)
    with TestClient(app, base_url="http://127.0.0.1:8000") as c:
        gid = c.post("/api/games").json()["state"]["id"]
        before = c.get(f"/api/games/{gid}").json()["state"]
    games = len(app.state.service.tables)
    capsys.readouterr()
    for path in ("/api/games", f"/api/games/{gid}/actions", f"/api/games/{gid}/advance"):
        sent = call_and_hang_up(app, path, b'{"action": "dr')
        statuses = [m["status"] for m in sent if m["type"] == "http.response.start"]
        assert all(s < 500 for s in statuses), (path, statuses)
    out = capsys.readouterr()
    assert "Traceback" not in out.err + out.out and "ClientDisconnect" not in out.err + out.out
    assert len(app.state.service.tables) == games  # nothing dealt
    with TestClient(app, base_url="http://127.0.0.1:8000") as c:
        assert c.get(f"/api/games/{gid}").json()["state"] == before  # nothing played


@pytest.mark.slow
def test_the_server_console_stays_quiet_when_a_client_hangs_up(tmp_path: Path) -> None:
    """The same through uvicorn, as ``python -m rummy500_env.play`` serves: a client sends
    half a body and closes the connection; the server prints no traceback and serves on."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "rummy500_env.play", "--no-browser", "--data-dir", str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=dict(os.environ, PYTHONUNBUFFERED="1"),
    )
    assert proc.stdout is not None
    port = None
    try:
        for line in proc.stdout:
            if "Ctrl+C" in line:
                break
            found = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
            port = int(found.group(1)) if found else port
        assert port is not None, "the server printed no address"
        for path in ("/api/games", "/api/games/abcdefgh12345678/actions"):
            with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
                s.sendall(
                    f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                    "Content-Type: application/json\r\nContent-Length: 400\r\n\r\n"
                    '{"action": "dr'.encode()
                )
                time.sleep(0.3)  # the server is reading the body when the client goes
        time.sleep(0.5)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/config", timeout=10) as r:
            assert r.status == 200  # serving on
    finally:
        proc.terminate()
        rest, _ = proc.communicate(timeout=10)
    assert "Exception in ASGI application" not in rest and "Traceback" not in rest, rest
