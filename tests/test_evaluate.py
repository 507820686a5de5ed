"""training.evaluate: statistics (`evaluation.stats`), the tournament's determinism and seatings
(`evaluation.tournament`), its outputs and the command's argument errors."""

from __future__ import annotations

import json
import math
import sys

import pytest

from rummy500_env.agents.ask import ReplyCounts
from rummy500_env.agents.registry import AgentSpecError
from rummy500_env.engine.errors import RulesError, Rummy500Error
from rummy500_env.engine.rules import Rules
from rummy500_env.evaluation import tournament
from rummy500_env.evaluation.evaluate import main, parse_args
from rummy500_env.evaluation.stats import elo, mean_ci, wilson
from rummy500_env.evaluation.tournament import (
    MAX_GAMES_PER_TASK,
    Config,
    EvaluateError,
    field_seatings,
    games_per_task,
    run,
    tasks_for,
)

REAL_PLAY_TASK = tournament.play_task


def test_wilson_interval_matches_known_values():
    lo, hi = wilson(50, 100)
    assert lo == pytest.approx(0.4038, abs=1e-3) and hi == pytest.approx(0.5962, abs=1e-3)
    assert wilson(0, 10)[0] == 0.0 and wilson(10, 10)[1] == 1.0


def test_mean_interval():
    m, lo, hi = mean_ci([1.0, 2.0, 3.0, 4.0])
    assert m == 2.5 and lo < 2.5 < hi
    assert hi - m == pytest.approx(1.96 * math.sqrt(5 / 3) / 2)


def test_elo_recovers_the_order_and_a_known_gap():
    # A beats B 3 times in 4 (76% -> about +191 Elo); B beats C the same.
    results = [(0, 1, 1.0)] * 75 + [(0, 1, 0.0)] * 25 + [(1, 2, 1.0)] * 75 + [(1, 2, 0.0)] * 25
    r, half = elo(3, results)
    assert r[0] > r[1] > r[2] and r.sum() == pytest.approx(0, abs=1e-6)
    assert r[0] - r[1] == pytest.approx(400 * math.log10(3), rel=0.02)
    assert (half > 0).all() and (half < 200).all()


def test_rules_take_every_form_of_the_engines_parser():
    cfg = parse_args(["greedy", "random", "--rules", "nordic,target=100", "--players", "3"])
    assert cfg.game_rules() == Rules.preset("nordic", target=100, players=3)
    assert parse_args(["greedy", "random", "--rules", '{"jokers": 2}']).game_rules().jokers == 2


def test_a_tiny_tournament_is_deterministic_and_duplicate(tmp_path):
    cfg = Config(["greedy", "random"], games=4, workers=1, seed=3, out=str(tmp_path))
    a, b = run(cfg, progress=False), run(cfg, progress=False)
    assert a["pairs"] == b["pairs"]
    games = a["games"]
    assert len(games) == 4 and sorted((g["deal"], g["seats"]) for g in games) == [
        (0, [0, 1]),
        (0, [1, 0]),
        (1, [0, 1]),
        (1, [1, 0]),
    ]
    row = a["pairs"][0]
    assert row["wins_a"] + row["wins_b"] + row["draws"] == 4


@pytest.mark.slow
def test_parallel_workers_give_the_same_results(tmp_path):
    base = Config(["greedy", "random"], games=4, seed=1, out=str(tmp_path), episode="hand")
    one = run(Config(**{**base.__dict__, "workers": 1}), progress=False)
    two = run(Config(**{**base.__dict__, "workers": 2}), progress=False)
    assert one["games"] == two["games"]


def test_cli_writes_json_csv_and_png(tmp_path, capsys):
    assert main(["greedy", "random", "--games", "2", "--workers", "1", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "greedy" in out and "Elo" in out
    data = json.loads((tmp_path / "results.json").read_text())
    assert data["pairs"][0]["games"] == 2
    assert (tmp_path / "pairs.csv").read_text().startswith("a,b,games")
    assert (tmp_path / "ratings.png").stat().st_size > 1000


def test_three_player_tables_rotate_seats_and_give_each_agent_the_extra_seat(tmp_path):
    cfg = Config(
        ["greedy", "random"], games=3, players=3, workers=1, out=str(tmp_path), episode="hand"
    )
    games = run(cfg, progress=False)["games"]
    assert {g["deal"] for g in games} == {0}  # one deal, played in all six seatings
    seats = sorted(g["seats"] for g in games)
    assert seats == [[0, 0, 1], [0, 1, 0], [0, 1, 1], [1, 0, 0], [1, 0, 1], [1, 1, 0]]


@pytest.mark.parametrize("players", [2, 3, 4, 5])
def test_both_agents_get_the_same_seats_over_each_deal(players):
    """Over a deal's games each agent holds as many seats as the other, and sits in every seat
    as often: with 3 or 5 players the rotation alone gave one agent the extra seat every
    time (A, B, A), so their win rates favoured it."""
    tasks = tasks_for(Config(["greedy", "random"], games=20, players=players))
    deals = {t.deal for t in tasks}
    assert len(deals) >= 2
    for deal in deals:
        seatings = [t.seats for t in tasks if t.deal == deal]
        assert len({tuple(s) for s in seatings}) == len(seatings)  # no game played twice
        for seat in range(players):
            sitting = [s[seat] for s in seatings]
            assert sitting.count(0) == sitting.count(1)


@pytest.mark.parametrize("players", [2, 3, 4])
def test_a_field_tournament_seats_the_first_agent_once_per_game_in_every_seat(players):
    tasks = tasks_for(
        Config(["expert", "greedy", "random"], games=2 * players, players=players, field=True)
    )
    assert {t.pair for t in tasks} == {0, 1}  # expert with each field; no greedy-random pair
    for pair in (0, 1):
        for deal in (0, 1):
            seatings = [t.seats for t in tasks if t.pair == pair and t.deal == deal]
            assert seatings == field_seatings(players)
            for seat in range(players):
                assert [s[seat] for s in seatings].count(0) == 1
                assert sum(s.count(0) for s in seatings) == players  # one seat a game


def test_a_field_tournament_reports_the_single_seats_win_share(tmp_path, capsys):
    """Random alone against two experts wins (almost) nothing and ExpertAgent alone against two
    random players (almost) everything: a field summary that counted the field's seats for the
    first agent, or scored a two-player rate, would report neither."""
    common = {"games": 6, "players": 3, "workers": 1, "field": True, "out": str(tmp_path)}
    weak = run(Config(["random", "expert"], **common), progress=False)
    strong = run(Config(["expert", "random"], **common), progress=False)
    (w,), (s,) = weak["pairs"], strong["pairs"]
    assert w["games"] == s["games"] == 6 and weak["elo"] == []
    assert w["wins_a"] == 0 and w["wins_b"] == 6 and w["share_over_fair"] == 0.0
    assert s["wins_a"] == 6 and s["fair_share"] == pytest.approx(1 / 3)
    assert s["share_over_fair"] == pytest.approx(3.0) and s["win_rate_a_ci95"][0] > 1 / 3
    assert (
        main(
            [
                "expert",
                "random",
                "--field",
                "--players",
                "3",
                "--games",
                "3",
                "--workers",
                "1",
                "--out",
                str(tmp_path),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "expert vs field of random" in out and "33.3%" in out and "Elo" not in out
    assert (
        (tmp_path / "pairs.csv").read_text().splitlines()[0].endswith("fair_share,share_over_fair")
    )


@pytest.mark.parametrize(
    ("argv", "error", "words"),
    [
        (["greedy"], EvaluateError, "at least two agents"),
        (["greedy", "wizard"], AgentSpecError, "unknown agent 'wizard'"),
        (["greedy", "search:fast"], AgentSpecError, "bad search budget"),
        (["greedy", "search:50s"], AgentSpecError, "bad search budget in 'search:50s'"),
        (["greedy", "missing.pt"], AgentSpecError, "no checkpoint at 'missing.pt'"),
        (["greedy", "random", "--games", "0"], EvaluateError, "--games 0"),
        (["greedy", "random", "--rules", "gin"], RulesError, "rules 'gin': unknown preset 'gin'"),
        (
            ["greedy", "random", "--rules", "standard,target"],
            RulesError,
            "'target' is not field=value",
        ),
        (
            ["greedy", "random", "--rules", "players=3", "--players", "4"],
            RulesError,
            "players=4 is given",
        ),
        (["greedy", "random", "--episode", "set"], EvaluateError, "--episode 'set'"),
        (["greedy", "random", "--players", "9"], RulesError, "players=9"),
        (["greedy", "random", "--address", "auto"], EvaluateError, "'auto' needs --ray"),
    ],
)
def test_bad_arguments_are_clear_errors(argv, error, words, capsys):
    """Each bad argument is the project's own error of its kind (exactly that class: a bare
    ValueError or another check's error fails), and the command prints it as one line."""
    with pytest.raises(Rummy500Error) as e:
        parse_args(argv)
    assert type(e.value) is error and words in str(e.value)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and words in err and "Traceback" not in err


def test_ray_without_ray_is_a_clear_error_before_any_game(monkeypatch, capsys):
    """``--ray`` on an install without Ray: one ``error:`` line and exit 2, before a game is
    played (it was a traceback from the first game's dispatch)."""
    monkeypatch.setitem(sys.modules, "ray", None)  # importing ray now fails; find_spec: None
    argv = ["greedy", "random", "--ray", "--games", "2", "--workers", "1"]
    with pytest.raises(EvaluateError, match=r"--ray needs Ray: pip install"):
        parse_args(argv)
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith("error: --ray needs Ray") and "Traceback" not in captured.err
    assert "games:" not in captured.err and captured.out == ""


def test_games_played_in_this_process_use_one_torch_thread_and_restore_the_count(tmp_path):
    torch = pytest.importorskip("torch")
    from rummy500_env.evaluation.tournament import torch_threads

    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        with torch_threads(1, ["standard", "expert"]):
            assert torch.get_num_threads() == 1
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_a_worker_is_handed_few_games_at_once():
    """A task's games reach the journal when the task ends: a ladder of 5,760 games must not
    hand a worker 144 one-second-a-decision hands at once (40 minutes lost to a stop)."""
    assert games_per_task(5760, 2) == MAX_GAMES_PER_TASK == 4
    assert games_per_task(5760, 64) == 4
    assert games_per_task(100, 2) == 2
    assert games_per_task(10, 2) == 1


def test_a_stopped_tournament_resumes_with_only_the_games_it_lacks(tmp_path, monkeypatch, capsys):
    """The CLI writes each game to games.jsonl as it ends; ``--resume`` keeps them (a torn
    last line is played again) and plays only the rest, giving the whole run's results."""
    from rummy500_env.evaluation import tournament

    argv = ["greedy", "random", "expert", "--games", "4", "--workers", "1", "--episode", "hand"]
    whole, stopped = tmp_path / "whole", tmp_path / "stopped"
    assert main([*argv, "--seed", "2", "--out", str(whole)]) == 0
    lines = (whole / "games.jsonl").read_text().splitlines()
    assert len(lines) == 1 + 12 and json.loads(lines[0])["tournament"]["games"] == 4
    stopped.mkdir()  # as if stopped during the sixth game's line
    (stopped / "games.jsonl").write_text("\n".join(lines[:6]) + "\n" + lines[6][:20])
    played: list[object] = []
    real = tournament.play_task
    monkeypatch.setattr(tournament, "play_task", lambda w: played.append(w) or real(w))
    assert main([*argv, "--seed", "2", "--out", str(stopped), "--resume"]) == 0
    assert len(played) == 12 - 5
    results = [json.loads((d / "results.json").read_text()) for d in (whole, stopped)]
    assert results[0]["games"] == results[1]["games"] and results[0]["elo"] == results[1]["elo"]
    assert len((stopped / "games.jsonl").read_text().splitlines()) == 13
    capsys.readouterr()

    assert main([*argv, "--seed", "3", "--out", str(stopped), "--resume"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --resume:") and "differs in: seed" in err
    assert main([*argv, "--out", str(tmp_path / "none"), "--resume"]) == 2
    assert "no games.jsonl" in capsys.readouterr().err


def test_ctrl_c_while_a_resume_rewrites_the_journal_keeps_every_game(tmp_path, monkeypatch):
    """``--resume`` rewrites games.jsonl (dropping a torn line); it did so in place, and a
    Ctrl+C then left 0 of 60,000 games and a folder the next resume refused. Now the old
    journal stays whole until the new one replaces it, and no temporary file is left."""
    from rummy500_env.evaluation import tournament

    argv = ["greedy", "random", "--games", "4", "--workers", "1", "--episode", "hand"]
    assert main([*argv, "--out", str(tmp_path)]) == 0
    journal = tmp_path / "games.jsonl"
    before = journal.read_text()
    real, calls = tournament.asdict, []

    def asdict_then_ctrl_c(obj: object) -> dict[str, object]:
        calls.append(obj)
        if len(calls) == 3:  # the rewrite is under way
            raise KeyboardInterrupt
        return real(obj)  # type: ignore[call-overload,no-any-return]

    monkeypatch.setattr(tournament, "asdict", asdict_then_ctrl_c)
    assert main([*argv, "--out", str(tmp_path), "--resume"]) == 130  # one line: stopped
    assert journal.read_text() == before
    assert sorted(p.name for p in tmp_path.iterdir() if "games" in p.name) == ["games.jsonl"]


def test_a_resume_drops_the_journal_lines_that_are_not_games_of_this_tournament(tmp_path, capsys):
    """games.jsonl lines were trusted: a game the tournament does not have was counted (5 of
    4), a winner of 7 removed a win, a NaN margin reached the table, odd types crashed the
    resume. Each line is now checked like a torn one: dropped, its game played again, and one
    warning line says how many and why."""
    argv = ["greedy", "random", "--games", "4", "--workers", "1", "--episode", "hand"]
    whole, edited = tmp_path / "whole", tmp_path / "edited"
    assert main([*argv, "--out", str(whole)]) == 0
    head, *games = (whole / "games.jsonl").read_text().splitlines()
    assert len(games) == 4
    g = [json.loads(line) for line in games]
    lines = [
        head,
        games[0],
        json.dumps(g[0] | {"deal": 9}),  # no deal 9 in a tournament of 2 deals
        json.dumps(g[1] | {"winner": 7}),
        json.dumps(g[2] | {"margin": math.nan}),  # json writes NaN, and reads it back
        json.dumps(g[3] | {"hands": "3", "seats": None}),
        json.dumps(g[3] | {"seats": [0, 0]}),
        json.dumps(g[3] | {"truncated": 1, "extra": True}),
        json.dumps(g[1] | {"reply_counts": [{"failed": -1}, None]}),
        json.dumps(g[0]),  # a repeat
        "[1, 2]",
        games[3][:30],  # torn
    ]
    edited.mkdir()
    (edited / "games.jsonl").write_text("\n".join(lines) + "\n")
    capsys.readouterr()
    assert main([*argv, "--out", str(edited), "--resume"]) == 0
    err = [line for line in capsys.readouterr().err.splitlines() if "warning" in line]
    assert len(err) == 1 and err[0].startswith("warning: --resume: dropped 10 of 11 game lines of")
    for why in ("1 not a game of this tournament", "1 with a bad winner", "1 with a bad margin"):
        assert why in err[0]
    for why in ("1 with a bad seats", "1 with other seats", "1 with other fields", "2 torn"):
        assert why in err[0]
    assert "1 repeating a game" in err[0] and "1 with a bad reply_counts" in err[0]
    results = [json.loads((d / "results.json").read_text()) for d in (whole, edited)]
    assert results[1]["games"] == results[0]["games"] and results[1]["pairs"] == results[0]["pairs"]
    assert len((edited / "games.jsonl").read_text().splitlines()) == 1 + 4


class FailingEndpoint:
    """An ``llm:`` agent whose endpoint fails every request: each decision is three failed
    requests, then the fallback's first legal action (as `LLMAgent` counts them)."""

    def __init__(self) -> None:
        self.counts = ReplyCounts()

    def decide(self, view: object, legal: list[object]) -> object:
        self.counts.decisions += 1
        self.counts.failed += 3
        self.counts.fallbacks += 1
        return legal[0]


def play_against_a_failing_endpoint(work: tournament.Work) -> tournament.GameRecord:
    """`tournament.play_task` in a worker process, its ``llm:`` agents a `FailingEndpoint`."""
    real = tournament.make_agent
    tournament.make_agent = lambda spec, rules, seed: (  # type: ignore[assignment]
        FailingEndpoint() if spec.startswith("llm:") else real(spec, rules, seed)
    )
    try:
        return REAL_PLAY_TASK(work)
    finally:
        tournament.make_agent = real


def test_an_endpoint_that_fails_every_request_shows_its_fallbacks(tmp_path, monkeypatch, capsys):
    """An endpoint that failed every request was ranked as a player, the fallback's moves
    credited to the model. Its failed requests and fallbacks now come back from the workers
    with each game, added up per agent in the table and results.json; the bots show none."""
    from rummy500_env.evaluation.reports import print_table, write_outputs

    monkeypatch.setattr(tournament, "play_task", play_against_a_failing_endpoint)
    llm = "llm:http://127.0.0.1:9/v1"
    cfg = Config([llm, "greedy"], games=4, workers=2, episode="hand", out=str(tmp_path))
    cfg.journal = True
    summary = run(cfg, progress=False)
    counts = summary["reply_counts"]
    assert list(counts) == [llm] and counts[llm]["decisions"] > 0
    assert counts[llm]["failed"] == 3 * counts[llm]["decisions"]
    assert counts[llm]["fallbacks"] == counts[llm]["decisions"]
    row = summary["pairs"][0]
    assert row["reply_counts_a"] == counts[llm] and "reply_counts_b" not in row
    print_table(summary)
    out = capsys.readouterr().out
    assert "failed requests" in out and "fallbacks" in out
    lines = out.splitlines()
    line = lines[next(i for i, x in enumerate(lines) if "failed requests" in x) + 1]
    n = counts[llm]["decisions"]
    assert line.split() == [llm, str(n), str(3 * n), str(n), "(100.0%)"]
    write_outputs(summary, tmp_path)
    assert json.loads((tmp_path / "results.json").read_text())["reply_counts"] == counts
    monkeypatch.setattr(tournament, "play_task", None)  # every game is in the journal
    resumed = run(Config(**{**cfg.__dict__, "resume": True, "workers": 1}), progress=False)
    assert resumed["reply_counts"] == counts and resumed["games"] == summary["games"]
    monkeypatch.setattr(tournament, "play_task", REAL_PLAY_TASK)

    plain = run(Config(["random", "greedy"], games=2, workers=1, out=str(tmp_path)), False)
    assert plain["reply_counts"] == {} and "reply_counts_a" not in plain["pairs"][0]
    print_table(plain)
    assert "failed requests" not in capsys.readouterr().out
