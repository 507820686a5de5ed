"""``python -m rummy500_env.play``: its options, its errors, and the server it starts."""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
import urllib.request
from fnmatch import fnmatch
from pathlib import Path

import pytest

pytest.importorskip("uvicorn", reason="the play extra is not installed")

from rummy500_env import Rules
from rummy500_env.engine.errors import RulesError
from rummy500_env.engine.records import Recorder
from rummy500_env.play.__main__ import main, page_rules

ROOT = Path(__file__).resolve().parents[1]


def test_rules_are_the_engines_parser_with_the_players_and_the_pages_seats():
    """The forms and their errors are `Rules.parse`'s (tests/test_rules_parse.py); the page
    adds --players and its 2 to 4 seats."""
    assert page_rules("nordic,target=300", 3) == Rules.preset("nordic", target=300, players=3)
    assert page_rules('{"preset": "fives"}', None) == Rules.preset("fives")
    with pytest.raises(RulesError, match="set players=3, but players=2 is given too"):
        page_rules("players=3", 2)
    with pytest.raises(RulesError, match="the play page seats 2 to 4 players"):
        page_rules("players=6", None)


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--opponent", "wizard"], "unknown agent 'wizard'"),
        (["--opponent", "missing.pt"], "no checkpoint at 'missing.pt'"),
        (["--rules", "standard,target=0"], "target=0"),
        (["--rules", "gin"], "unknown preset 'gin'"),
        (["--rules", "players=5"], "seats 2 to 4 players"),
        (["--replay", "missing.json"], "cannot read the record 'missing.json'"),
        (["--pace", "-1"], "--pace must be 0 or more"),
    ],
)
def test_bad_options_stop_before_serving(argv, words, capsys, tmp_path):
    assert main([*argv, "--no-browser", "--data-dir", str(tmp_path)]) == 2
    assert words in capsys.readouterr().err


def test_players_outside_two_to_four_are_refused(capsys):
    with pytest.raises(SystemExit):
        main(["--players", "5"])
    assert "invalid choice: 5" in capsys.readouterr().err


def serve(args: list[str]) -> tuple[subprocess.Popen[str], str]:
    """Start the command, wait for the address it prints, return the process and the URL."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen(
        [sys.executable, "-m", "rummy500_env.play", "--no-browser", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=ROOT,
        env=env,
    )
    assert proc.stdout is not None
    lines = []
    for line in proc.stdout:
        lines.append(line)
        m = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
        if m:
            return proc, m.group(0)
    proc.kill()
    raise AssertionError("no address printed: " + "".join(lines))


def get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.load(r)


def test_the_command_serves_the_page_on_localhost_at_a_free_port(tmp_path):
    proc, url = serve(["--opponent", "random", "--data-dir", str(tmp_path), "--players", "3"])
    try:
        assert get(url + "api/config")["players"] == 3
        with urllib.request.urlopen(url, timeout=10) as r:
            assert b'data-testid="hand"' in r.read()
        req = urllib.request.Request(url + "api/games", method="POST")
        with urllib.request.urlopen(req, timeout=10) as r:
            assert json.load(r)["state"]["waiting"] == "you"
        assert (tmp_path / "games.sqlite3").exists()
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_replay_serves_a_recorded_game(tmp_path):
    rng = random.Random(3)
    r = Recorder(Rules(), seed=3, players=["random", "random"])
    for _ in range(30):
        r.play(rng.choice(r.game.legal_actions()))
    path = r.record.save(tmp_path / "game.json")
    proc, url = serve(["--replay", str(path)])
    try:
        config = get(url + "api/config")
        assert config["mode"] == "replay" and config["file"] == "game.json"
        assert len(get(url + "api/replay")["steps"]) == 31
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_the_page_files_are_package_data():
    """A wheel carries the page: every file of play/static matches a package-data pattern."""
    tomllib = pytest.importorskip("tomllib", reason="tomllib is in the standard library from 3.11")
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    patterns = config["tool"]["setuptools"]["package-data"]["rummy500_env"]
    files = [f"play/static/{p.name}" for p in (ROOT / "rummy500_env/play/static").iterdir()]
    assert {"play/static/index.html", "play/static/app.js", "play/static/style.css"} <= set(files)
    assert [f for f in files if not any(fnmatch(f, pattern) for pattern in patterns)] == []
