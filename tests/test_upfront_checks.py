"""Every command that takes agent specs loads and checks each agent, against the rules of the
run, before any game: a file that is no policy, or a policy made for other rules, is one
``error:`` line and exit 2, not a traceback once the games (or their workers) have started."""

from __future__ import annotations

import pytest

from rummy500_env.agents.registry import check_spec

pytest.importorskip("torch")

NOT_A_POLICY = "/etc/passwd"
"""A file that exists, so `check_spec` takes it for a policy path: only loading refuses it."""


@pytest.fixture
def no_games(monkeypatch):
    """Fail the test if a tournament starts."""
    from rummy500_env.evaluation import evaluate

    def run(*args: object, **kwargs: object) -> None:
        raise AssertionError("a game started before the agents were checked")

    monkeypatch.setattr(evaluate, "run", run)


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        ([NOT_A_POLICY, "random"], "'/etc/passwd' is not a rummy500 policy file"),
        (["standard", "random", "--players", "3"], "was trained for other rules"),
        (["standard", "random", "--rules", "nordic", "--workers", "2"], "trained for other rules"),
        (["random", "model", "--rules", "nordic"], "no shipped policy is made for the rules"),
    ],
    ids=["not-a-policy", "three-players", "other-rules-workers", "model-for-nothing"],
)
def test_evaluate_checks_every_agent_before_any_game(argv, words, no_games, capsys, tmp_path):
    from rummy500_env.evaluation.evaluate import main

    assert main([*argv, "--games", "2", "--out", str(tmp_path)]) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith("error: ") and words in captured.err
    assert "Traceback" not in captured.err and captured.out == ""


def test_evaluate_still_plays_agents_that_load(tmp_path, capsys):
    from rummy500_env.evaluation.evaluate import main

    argv = ["standard", "random", "--games", "2", "--workers", "1", "--out", str(tmp_path)]
    assert main(argv) == 0
    assert "standard" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--players", NOT_A_POLICY, "random"], "is not a rummy500 policy file"),
        (["--players", "standard", "random", "--rules", "nordic"], "trained for other rules"),
        (["--players", "standard", "random", "greedy"], "trained for other rules"),
    ],
    ids=["not-a-policy", "other-rules", "three-players"],
)
def test_watch_command_checks_every_agent_before_the_game(argv, words, capsys):
    from rummy500_env.__main__ import main

    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    captured = capsys.readouterr()
    assert "error: " in captured.err and words in captured.err
    assert "Traceback" not in captured.err and "final totals" not in captured.out


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--opponent", NOT_A_POLICY], "is not a rummy500 policy file"),
        (["--opponent", "standard", "--rules", "nordic"], "trained for other rules"),
    ],
)
def test_play_checks_its_opponent_before_serving(argv, words, capsys, tmp_path):
    pytest.importorskip("uvicorn", reason="the play extra is not installed")
    from rummy500_env.play.__main__ import main

    assert main([*argv, "--no-browser", "--data-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and words in err and "Traceback" not in err


def test_check_spec_alone_accepts_any_existing_file():
    """Why loading is needed: the spec check is about the text, and a path that exists passes."""
    assert check_spec(NOT_A_POLICY) == NOT_A_POLICY
