"""What the play server answers, and to whom (issue 20): other web pages cannot drive it, a
server open to the network wants its token, an IPv6 loopback works, and bodies are bounded.
docs/play.md "What is protected" says the same in words."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import tracemalloc
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette", reason="the play extra is not installed")
from starlette.datastructures import URL
from starlette.requests import HTTPConnection
from starlette.testclient import TestClient

from rummy500_env import Rules
from rummy500_env.play.__main__ import addresses
from rummy500_env.play.guard import MAX_BODY, host_name, is_loopback
from rummy500_env.play.server import create_app
from rummy500_env.play.table import Setup

ROOT = Path(__file__).resolve().parents[1]
SETUP = Setup(Rules(), "random")


def client(tmp_path: Path, base: str = "http://127.0.0.1:8000", **kw: Any) -> TestClient:
    return TestClient(create_app(SETUP, tmp_path, seed=1, **kw), base_url=base)


def new_game(c: TestClient, **kw: Any) -> str:
    r = c.post("/api/games", **kw)
    assert r.status_code == 201, r.text
    return str(r.json()["state"]["id"])


# --- item 4: other web pages ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "http://evil.example"},
        {"Origin": "http://127.0.0.1:9999"},  # another local server is another origin
        {"Origin": "null"},  # a sandboxed frame, a file:// page
        {"Referer": "http://evil.example/attack.html"},
        {"Sec-Fetch-Site": "cross-site"},
    ],
    ids=["origin", "other-port", "null-origin", "referer", "sec-fetch-site"],
)
def test_a_cross_site_post_can_neither_deal_nor_play(tmp_path, headers):
    c = client(tmp_path)
    gid = new_game(c)
    simple = {"Content-Type": "text/plain", **headers}  # a form post: no CORS preflight
    r = c.post("/api/games", content='{"x": 1}', headers=simple)
    assert r.status_code == 403 and "only this server's own page" in r.json()["error"]
    r = c.post(f"/api/games/{gid}/actions", content='{"action": "draw"}', headers=simple)
    assert r.status_code == 403
    assert c.get(f"/api/games/{gid}").json()["state"]["phase"] == "draw"  # nothing played
    assert len(c.app.state.service.tables) == 1  # nothing dealt


def test_the_servers_own_page_and_scripts_without_origin_may_post(tmp_path):
    c = client(tmp_path)
    own = {"Origin": "http://127.0.0.1:8000", "Sec-Fetch-Site": "same-origin"}
    gid = new_game(c, headers=own)
    r = c.post(f"/api/games/{gid}/actions", json={"action": "draw"}, headers=own)
    assert r.status_code == 200
    referer = {"Referer": "http://127.0.0.1:8000/?pace=0"}
    assert c.post("/api/games", headers=referer).status_code == 201
    assert c.post("/api/games").status_code == 201  # curl, a script: no browser page


def test_reading_is_not_refused_by_origin(tmp_path):
    """A GET changes nothing; the browser's same-origin policy keeps its answer from the
    other page (no CORS header is ever sent)."""
    c = client(tmp_path)
    r = c.get("/api/config", headers={"Origin": "http://evil.example"})
    assert r.status_code == 200 and "access-control-allow-origin" not in r.headers


def test_the_host_check_stays(tmp_path):
    r = client(tmp_path, base="http://evil.example").get("/api/config")
    assert r.status_code == 400 and "invalid host header 'evil.example'" in r.json()["error"]


# --- items 5 and 6: beyond loopback, and IPv6 -----------------------------------------------------


def test_an_exposed_server_wants_its_token_on_every_api_request(tmp_path):
    c = client(tmp_path, base="http://evil.example.com", host="0.0.0.0", token="s3cret")
    r = c.get("/api/config")
    assert r.status_code == 403 and "needs its token" in r.json()["error"]
    assert c.get("/api/config", headers={"X-Rummy500-Token": "wrong"}).status_code == 403
    assert c.get("/api/config?token=s3cret").status_code == 200
    gid = new_game(c, headers={"X-Rummy500-Token": "s3cret"})
    assert c.get(f"/api/games/{gid}").status_code == 403
    assert c.get("/").status_code == 200  # the page itself holds nothing; its API does


def url_from_the_raw_host_header(self: HTTPConnection) -> URL:
    """``request.url`` as Starlette 0.37 to 1.0.0 built it: from the Host header as sent, so
    ``Host: evil/`` made the URL ``http://evil//api/config``, whose path is ``//api/config``."""
    query = self.scope.get("query_string", b"").decode()
    return URL(f"http://{self.headers['host']}{self.scope['path']}" + (f"?{query}" * bool(query)))


@pytest.mark.parametrize("starlette_url", ["as-installed", "from-raw-host"])
@pytest.mark.parametrize(
    "host", ["evil/", "evil?", "evil#", "evil/x", "evil:80/", "evil?token=s3cret", "a@b", "a b"]
)
def test_a_host_header_that_is_no_host_cannot_skip_the_token(
    tmp_path, monkeypatch, host, starlette_url
):
    """With the Starlettes that built ``request.url`` from the raw Host header, a guard that
    read ``request.url.path`` saw ``//api/...`` and let every API request through without
    the token; the guard reads the routed path, and refuses such a header first."""
    if starlette_url == "from-raw-host":
        monkeypatch.setattr(HTTPConnection, "url", property(url_from_the_raw_host_header))
    c = client(tmp_path, base="http://192.168.1.5:8000", host="0.0.0.0", token="s3cret")
    gid = new_game(c, headers={"X-Rummy500-Token": "s3cret"})
    bad = {"Host": host}
    r = c.get("/api/config", headers=bad)
    assert r.status_code == 400 and "invalid host header" in r.json()["error"], r.text
    r = c.post("/api/games", headers=bad)
    assert r.status_code == 400 and "state" not in r.json()
    r = c.post(f"/api/games/{gid}/actions", json={"action": "draw"}, headers=bad)
    assert r.status_code == 400
    assert len(c.app.state.service.tables) == 1  # nothing dealt
    mine = {"X-Rummy500-Token": "s3cret"}
    assert c.get(f"/api/games/{gid}", headers=mine).json()["state"]["phase"] == "draw"


def test_the_token_check_reads_the_routed_path_not_request_url(tmp_path, monkeypatch):
    """Whatever ``request.url`` says, the path the router serves decides."""
    monkeypatch.setattr(HTTPConnection, "url", property(lambda self: URL("http://x/")))
    c = client(tmp_path, base="http://192.168.1.5:8000", host="0.0.0.0", token="s3cret")
    assert c.get("/api/config").status_code == 403
    assert c.post("/api/games").status_code == 403
    assert c.get("/api/config?token=s3cret").status_code == 200
    assert c.get("/nothing").status_code == 403  # only the page and its files are public
    assert c.get("/").status_code == 200 and c.get("/static/app.js").status_code == 200


@pytest.mark.parametrize(
    "host", ["192.168.1.5:8000", "my-box.local", "my_box", "[fe80::1]:8000", "[::1]", "10.0.0.2"]
)
def test_real_host_headers_are_served(tmp_path, host):
    c = client(tmp_path, base="http://192.168.1.5:8000", host="0.0.0.0", token="s3cret")
    assert c.get("/api/config?token=s3cret", headers={"Host": host}).status_code == 200


def test_the_play_extra_needs_a_starlette_that_checks_the_host_header():
    """Starlette 1.0.1 is the first whose ``request.url`` ignores a Host header that is no
    host; the guard does not rely on it, but other code reading ``request.url`` may."""
    bound = re.search(r'"starlette>=([\d.]+)"', (ROOT / "pyproject.toml").read_text())
    assert bound is not None, "the play extra names no lower bound for starlette"
    assert tuple(int(p) for p in bound.group(1).split(".")) >= (1, 0, 1)


@pytest.mark.parametrize(
    ("header", "name"),
    [
        ("[::1]:8000", "::1"),
        ("[::1]", "::1"),
        ("127.0.0.1:80", "127.0.0.1"),
        ("LocalHost", "localhost"),
    ],
)
def test_host_headers_are_read_with_ipv6_brackets_and_ports(header, name):
    assert host_name(header) == name


def test_ipv6_loopback_is_served(tmp_path):
    c = client(tmp_path, base="http://[::1]:8000", host="::1")
    assert c.get("/api/config").status_code == 200
    assert new_game(c, headers={"Origin": "http://[::1]:8000"})


def test_loopback_addresses_are_told_from_exposed_ones():
    assert [is_loopback(h) for h in ("127.0.0.1", "::1", "localhost", "127.0.0.5")] == [True] * 4
    assert [is_loopback(h) for h in ("0.0.0.0", "::", "192.168.1.5", "example.org")] == [False] * 4


def run_server(args: list[str]) -> tuple[subprocess.Popen[str], list[str]]:
    """Start the command; return it and its output up to the line after its last address."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "rummy500_env.play", "--no-browser", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=ROOT,
        env=dict(os.environ, PYTHONUNBUFFERED="1"),
    )
    assert proc.stdout is not None
    lines: list[str] = []
    for line in proc.stdout:
        lines.append(line)
        if "Ctrl+C" in line:
            return proc, lines
    proc.kill()
    raise AssertionError("the server did not start: " + "".join(lines))


def fetch(url: str, host: str | None = None) -> int:
    req = urllib.request.Request(url, headers={"Host": host} if host else {})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return int(r.status)
    except urllib.error.HTTPError as e:
        return int(e.code)


def test_host_0000_warns_prints_real_addresses_and_a_token(tmp_path):
    proc, lines = run_server(["--host", "0.0.0.0", "--data-dir", str(tmp_path)])
    try:
        out = "".join(lines)
        assert "WARNING: serving on 0.0.0.0, beyond this machine" in out
        urls = re.findall(r"http://\S+", out)
        assert urls and all("?token=" in u for u in urls)
        hosts = [u.split("//")[1].rsplit(":", 1)[0].strip("[]") for u in urls]
        assert hosts == addresses("0.0.0.0")  # this machine's own, loopback only alone
        port = re.search(r":(\d+)/", urls[0]).group(1)  # type: ignore[union-attr]
        token = urls[0].split("?token=")[1]
        assert fetch(urls[0].replace("/?token=", "/api/config?token=")) == 200
        api = f"http://127.0.0.1:{port}/api/config"
        assert fetch(api, host="evil.example.com") == 403
        assert fetch(f"{api}?token={token}") == 200
        assert out.count(token) == len(urls)  # printed with the addresses, nowhere else
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def has_ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


@pytest.mark.skipif(not has_ipv6_loopback(), reason="this machine has no IPv6 loopback")
def test_host_ipv6_loopback_answers_through_the_command(tmp_path):
    proc, lines = run_server(["--host", "::1", "--data-dir", str(tmp_path)])
    try:
        url = re.search(r"http://\[::1\]:\d+/", "".join(lines)).group(0)  # type: ignore[union-attr]
        assert "WARNING" not in "".join(lines) and "token" not in "".join(lines)
        assert fetch(url + "api/config") == 200
    finally:
        proc.terminate()
        proc.wait(timeout=10)


# --- item 7: bodies -------------------------------------------------------------------------------


def test_a_huge_body_is_refused_unread_and_not_echoed(tmp_path):
    c = client(tmp_path)
    gid = new_game(c)
    body = b'{"action": "' + b"x" * (50 * 1024 * 1024) + b'"}'
    tracemalloc.start()
    r = c.post(f"/api/games/{gid}/actions", content=body)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert r.status_code == 413 and f"at most {MAX_BODY} bytes" in r.json()["error"]
    assert len(r.content) < 500
    assert peak < 3 * len(body)  # the test's own body, not copies of it on the server side


def test_a_body_without_length_is_cut_at_the_limit(tmp_path):
    c = client(tmp_path)
    gid = new_game(c)

    def chunks() -> Any:
        for _ in range(100):
            yield b"[" * 4096

    r = c.post(f"/api/games/{gid}/actions", content=chunks())
    assert r.status_code == 413


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ("[" * 30_000 + "]" * 30_000, "nested too deeply"),
        ('{"action": [' + "[" * 20_000 + "]" * 20_000 + "]}", "nested too deeply"),
        (json.dumps({"action": "meld " + "9D " * 5000}), "at most 100 characters"),
        (json.dumps({"x" * 10_000: 1}), "unknown field(s)"),
        (b'{"action": "\xff"}', "not UTF-8"),
    ],
    ids=["deep-list", "deep-in-object", "long-action", "long-key", "not-utf8"],
)
def test_bad_bodies_get_a_short_400(tmp_path, body, words):
    c = client(tmp_path)
    gid = new_game(c)
    r = c.post(f"/api/games/{gid}/actions", content=body)
    assert r.status_code == 400, r.text
    assert words in r.json()["error"] and len(r.content) < 400
