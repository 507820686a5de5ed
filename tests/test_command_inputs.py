"""Inputs the command lines check before any work: the play server's --host and --data-dir,
training.evaluate's --out, saved and sent JSON read through `numbers.read_json`, ints in
training flags and positions. Each case once ended in a traceback, or after the work."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

# --- python -m rummy500_env.play


@pytest.fixture
def play_main(monkeypatch: pytest.MonkeyPatch) -> Any:
    """The play command's main, stopping where it would serve (the socket closed)."""
    pytest.importorskip("uvicorn", reason="the play extra is not installed")
    import rummy500_env.play.__main__ as play

    served: list[bool] = []

    def closed(app: Any, sock: Any, *args: Any, **kwargs: Any) -> None:
        served.append(True)
        sock.close()

    monkeypatch.setattr(play, "serve", closed)
    play.served = served  # type: ignore[attr-defined]
    return play


@pytest.mark.parametrize(
    ("host", "words"),
    [
        ("\xad", "--host '\\xad' is not an address to serve on"),
        ("\n", "--host '\\n' is not an address to serve on"),
        ("evil/", "--host 'evil/' is not an address to serve on"),
        ("", "--host '' is not an address"),
    ],
)
def test_a_host_that_is_no_address_is_one_error_line_before_the_data_folder(
    play_main: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str], host: str, words: str
) -> None:
    data = tmp_path / "data"
    code = play_main.main(["--no-browser", "--host", host, "--data-dir", str(data)])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert words in err
    assert not data.exists() and not play_main.served  # nothing written, nothing served


@pytest.mark.parametrize(
    "host", ["127.0.0.1", "localhost", "::1", "[::1]", "0.0.0.0", "fe80::1%lo", "my_box.lan"]
)
def test_addresses_and_host_names_are_hosts(play_main: Any, host: str) -> None:
    assert play_main.host_problem(host) is None


def test_a_host_that_cannot_be_listened_on_is_quoted_in_one_line(
    play_main: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    code = play_main.main(["--no-browser", "--host", "192.0.2.1", "--data-dir", str(data)])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error: cannot listen on '192.0.2.1' port 0"), err
    assert err.count("\n") == 1
    assert not data.exists()  # the port is taken before the folder is made


@pytest.mark.parametrize("where", ["file", "under_file"])
def test_a_data_dir_that_is_no_folder_is_one_error_line(
    play_main: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str], where: str
) -> None:
    file = tmp_path / "file.txt"
    file.write_text("not a folder")
    data = file if where == "file" else file / "data"
    code = play_main.main(["--no-browser", "--data-dir", str(data)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.startswith(f"error: cannot use {str(data)!r} as the data folder"), err
    assert err.count("\n") == 1 and not play_main.served
    assert file.read_text() == "not a folder"


def test_a_data_dir_no_folder_can_be_named_is_one_error_line(
    play_main: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """A NUL byte in --data-dir was a bare ValueError from mkdir (found by the fuzz test)."""
    code = play_main.main(["--no-browser", "--data-dir", "bad\x00name"])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error: cannot use 'bad\\x00name' as the data folder"), err
    assert err.count("\n") == 1 and not play_main.served


def test_a_saved_row_with_a_huge_number_is_a_record_error(tmp_path: Path) -> None:
    pytest.importorskip("starlette", reason="the play extra is not installed")
    from rummy500_env.engine.records import RecordError
    from rummy500_env.play.store import Store

    store = Store(tmp_path)
    with sqlite3.connect(store.path) as db:
        db.execute(
            "INSERT INTO games (id, updated, record, version) VALUES (?, 0, ?, 1)",
            ("g", '{"seed": ' + "9" * 5000 + "}"),
        )
        db.execute(
            "INSERT INTO games (id, updated, record, version) VALUES (?, 0, ?, 1)",
            ("deep", "[" * 100_000 + "]" * 100_000),
        )
    with pytest.raises(RecordError, match=r"saved game 'g'.*too long to read"):
        store.fetch("g")
    with pytest.raises(RecordError, match=r"saved game 'deep'.*nested too deeply"):
        store.fetch("deep")


def test_a_request_body_with_a_huge_number_is_a_400_saying_so(tmp_path: Path) -> None:
    pytest.importorskip("httpx", reason="starlette's TestClient needs httpx")
    from starlette.testclient import TestClient

    from rummy500_env import Rules
    from rummy500_env.play.server import create_app
    from rummy500_env.play.table import Setup

    app = create_app(Setup(Rules.preset("standard"), "random"), tmp_path, 0, 0)
    client = TestClient(app, base_url="http://127.0.0.1:8000")
    r = client.post("/api/games", content='{"seed": ' + "9" * 5000 + "}")
    assert r.status_code == 400
    assert "a number in it is too long to read" in r.json()["error"], r.text
    r = client.post("/api/games", content=b"\xff\xfe")
    assert r.status_code == 400 and "not UTF-8" in r.json()["error"], r.text


# --- python -m training.evaluate


def test_evaluate_refuses_an_out_that_is_a_file_before_any_game(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import rummy500_env.evaluation.evaluate as evaluate

    def no_games(cfg: Any) -> Any:
        raise AssertionError("a game was played before --out was checked")

    monkeypatch.setattr(evaluate, "run", no_games)
    file = tmp_path / "out.txt"
    file.write_text("kept")
    for out, words in [
        (file, f"--out {str(file)!r} is a file, not a folder"),
        (file / "deeper", f"--out {str(file / 'deeper')!r} lies under {str(file)!r}, which is"),
    ]:
        code = evaluate.main(["random", "random", "--games", "1", "--out", str(out)])
        err = capsys.readouterr().err
        assert code == 2 and err.startswith("error: ") and err.count("\n") == 1, err
        assert words in err, err
    code = evaluate.main(["random", "random", "--games", "1", "--record", str(file)])
    err = capsys.readouterr().err
    assert code == 2 and f"--record {str(file)!r} is a file, not a folder" in err, err
    assert file.read_text() == "kept"


def test_reports_folder_problem_names_what_is_wrong(tmp_path: Path) -> None:
    from rummy500_env.evaluation.reports import folder_problem

    assert folder_problem(tmp_path / "new" / "deeper", "--out") is None
    assert folder_problem(tmp_path, "--out") is None
    too_long = folder_problem(tmp_path / ("x" * 300), "--out")
    assert too_long is not None and too_long.startswith("--out '")


# --- positions


@pytest.mark.parametrize("field", ["turn", "dealer", "turns", "hands_played", "discarder"])
def test_a_position_with_a_huge_int_is_an_invalid_position(field: str) -> None:
    """The problem names the field and shows the number's size (repr of an int of over 4300
    digits raises ValueError)."""
    from rummy500_env.engine.errors import InvalidPositionError
    from rummy500_env.engine.game import Game

    data = Game.new("standard", seed=1).to_dict()
    data[field] = 10**5000
    with pytest.raises(InvalidPositionError, match=rf"{field}\b.*<an int of about 5001 digits"):
        Game.from_dict(data)


# --- ints in the training flags (tyro)


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (["--total-timesteps", "٣٠٠"], "--total-timesteps"),
        (["--total-timesteps=٣٠٠"], "--total-timesteps"),
        (["--seed", "٣"], "--seed"),
        (["--net-arch", "64", "٦٤"], "--net-arch"),
    ],
)
def test_training_int_flags_refuse_digits_other_than_ascii(argv: list[str], flag: str) -> None:
    pytest.importorskip("tyro")
    from rummy500_env.training.ppo import Args
    from rummy500_env.training.settings import ConfigError, command_line

    with pytest.raises(ConfigError, match=f"{flag}=.* is not allowed: use an int"):
        command_line(Args, argv, None)


def test_training_int_flags_take_ascii_digits() -> None:
    pytest.importorskip("tyro")
    from rummy500_env.training.ppo import Args
    from rummy500_env.training.settings import command_line

    argv = ["--total-timesteps", "300", "--seed=7", "--net-arch", "64", "32"]
    args, resuming = command_line(Args, argv, None)
    assert (args.total_timesteps, args.seed, args.net_arch, resuming) == (300, 7, (64, 32), False)


# --- training.rllib: a checkpoint's counters and the run's state.json


def _rllib_checkpoint(run: Path, steps: int) -> Path:
    """A checkpoint folder as `rllib.save_checkpoint` writes one, with a stand-in for RLlib's
    own files (restored by `_Algo`)."""
    folder = run / "checkpoints" / f"step_{steps:010d}"
    folder.mkdir(parents=True)
    (folder / "weights").write_text(str(steps))
    return folder


class _Algo:
    weights = 0

    def restore_from_path(self, path: str) -> None:
        self.weights = int((Path(path) / "weights").read_text())


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ('{"timesteps": ' + "9" * 5000 + "}", "a number in it is too long to read"),
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
        ('{"timesteps": 8', "not valid JSON"),
        ("[1, 2]", "a list, not a JSON object"),
    ],
)
def test_a_checkpoint_with_damaged_counters_is_skipped_naming_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, words: str
) -> None:
    from rummy500_env.training import rllib
    from rummy500_env.training.run import Checkpoints

    run = tmp_path / "run"
    older = _rllib_checkpoint(run, 400)
    (older / rllib.COUNTERS).write_text('{"timesteps": 400, "iterations": 1}')
    newest = _rllib_checkpoint(run, 800)
    (newest / rllib.COUNTERS).write_text(text)
    algo = _Algo()
    state = Checkpoints(run, 3).load(lambda path: rllib.restore(algo, path))
    assert (state["timesteps"], algo.weights) == (400, 400)
    err = capsys.readouterr().err
    assert "skipping unreadable checkpoint step_0000000800" in err
    assert str(newest / rllib.COUNTERS) in err and words in err, err


def test_a_damaged_state_json_is_one_error_naming_it_not_every_checkpoint_unreadable(
    tmp_path: Path,
) -> None:
    """A checkpoint from before checkpoints held their counters reads them from the run's
    state.json: a damaged one is that file's error (delete it), not 'start it again'."""
    from rummy500_env.training import rllib
    from rummy500_env.training.run import Checkpoints
    from rummy500_env.training.settings import ConfigError

    run = tmp_path / "run"
    _rllib_checkpoint(run, 400)
    (run / "state.json").write_text('{"timesteps": 400, "checkpoint": "step_00')
    with pytest.raises(ConfigError, match=r"state\.json' is damaged .*delete it"):
        Checkpoints(run, 3).load(lambda path: rllib.restore(_Algo(), path))
    (run / "state.json").write_text('{"checkpoint": "step_0000000400", "t": ' + "9" * 5000 + "}")
    with pytest.raises(ConfigError, match=r"state\.json' is damaged .*too long to read"):
        Checkpoints(run, 3).load(lambda path: rllib.restore(_Algo(), path))
    (run / "state.json").unlink()  # none at all: that checkpoint cannot be read
    with pytest.raises(ConfigError, match="every checkpoint is unreadable"):
        Checkpoints(run, 3).load(lambda path: rllib.restore(_Algo(), path))


def test_a_deeply_nested_config_json_on_resume_is_one_error_naming_it(tmp_path: Path) -> None:
    pytest.importorskip("tyro")
    from rummy500_env.training.ppo import Args
    from rummy500_env.training.settings import ConfigError, command_line

    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text('{"rules": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(ConfigError, match=r"config\.json' is damaged .*nested too deeply"):
        command_line(Args, ["--resume", str(run)], None)


# --- python -m rummy500_env.bench


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--games", "٣", "--seconds", "0.01"], "argument --games: games='٣' is not allowed"),
        (["--games", "-3"], "argument --games: games=-3 is not allowed: use an int >= 0"),
        (["--seconds", "٠.٠١"], "argument --seconds: '٠.٠١' is not a number of seconds"),
    ],
)
def test_bench_takes_ascii_digits_only(
    argv: list[str], words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    import os

    from rummy500_env.bench import main

    cpus = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    try:
        with pytest.raises(SystemExit) as stop:
            main([*argv, "--no-peers", "--engine"])
    finally:
        if cpus is not None:  # bench pins itself to one CPU once it measures
            os.sched_setaffinity(0, cpus)
    assert stop.value.code == 2
    assert words in capsys.readouterr().err
