"""Game records: the JSON form round-trips, a record replays to exactly the game played, a
record that does not replay is refused saying where, and training.evaluate --record writes
records that replay to the tournament's own results."""

from __future__ import annotations

import json
import random
import subprocess
import sys

import pytest

from rummy500_env import Rules
from rummy500_env.engine.records import Record, Recorder, RecordError
from rummy500_env.evaluation.evaluate import Config, run

SHORT = Rules(target=150)
"""Games to 150 end in a few hands."""


def random_game(seed: int, rules: Rules = SHORT) -> Recorder:
    """A whole game of seeded random legal actions, recorded."""
    rng = random.Random(seed)
    r = Recorder(rules, seed=seed, players=["random", "random"], meta={"test": seed})
    while r.game.phase != "game_over":
        if r.game.phase == "hand_over":
            r.next_hand()
        else:
            r.play(rng.choice(r.game.legal_actions()))
    return r


def test_a_recorded_game_replays_to_the_same_position():
    r = random_game(1)
    record = Record.from_dict(json.loads(json.dumps(r.record.to_dict())))
    assert record.replay().to_dict() == r.game.to_dict()
    assert record.finished and record.winner == r.game.winner
    assert record.final_totals == r.game.totals
    assert len(record.hands) == r.game.hands_played > 1
    for hand in record.hands:
        assert hand.totals is not None and hand.scores is not None


def test_the_record_holds_rules_seed_every_action_and_hand_scores(tmp_path):
    r = random_game(2)
    path = r.record.save(tmp_path / "game.json")
    text = path.read_text()
    data = json.loads(text)
    assert set(data) == {
        "format", "version", "rules", "seed", "players", "hands", "result", "meta",
    }  # fmt: skip
    assert data["rules"] == SHORT.to_dict() and data["seed"] == 2
    seat, first = data["hands"][0]["actions"][0]  # a hand opens with a draw or a pile take
    assert seat in (0, 1) and first.split()[0] in ("draw", "take", "dig"), (seat, first)
    assert sum(len(h["actions"]) for h in data["hands"]) == r.record.action_count
    assert data["result"] == {"winner": r.game.winner, "totals": r.game.totals}
    assert '[0, "' in text  # one action a line, for people reading it
    assert Record.load(path).to_dict() == r.record.to_dict()


def test_a_preset_is_written_by_name():
    r = Recorder(Rules.preset("nordic"), seed=3, players=["a", "b"])
    assert r.record.to_dict()["rules"] == "nordic"
    assert r.record.to_dict()["result"] is None  # the game goes on


def test_frames_show_each_deal_and_each_action():
    record = random_game(4).record
    frames = list(record.frames())
    assert len(frames) == sum(len(h.actions) + 1 for h in record.hands)
    assert [f.step for f in frames[:3]] == [0, 1, 2] and frames[0].action is None
    last = frames[-1].position
    assert last.phase == "game_over"


def test_a_game_in_progress_resumes():
    full = random_game(5)
    partial = Record.from_dict(full.record.to_dict())
    partial.hands = partial.hands[:2]
    partial.hands[1].actions = partial.hands[1].actions[:7]
    partial.hands[1].scores = partial.hands[1].totals = partial.hands[1].went_out = None
    partial.winner = partial.final_totals = None
    resumed = Recorder.resume(partial)
    assert resumed.game.hands_played == 1 and resumed.game.phase in ("draw", "play")
    for _, text in full.record.hands[1].actions[7:]:
        resumed.play(text)
    assert resumed.record.hands[1].scores == full.record.hands[1].scores


def _tampered(change) -> Record:
    d = random_game(8).record.to_dict()  # two hands
    change(d)
    return Record.from_dict(d)


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (lambda d: d["hands"][0]["actions"].__setitem__(1, [0, "discard 2X"]), "action 2"),
        (
            lambda d: d["hands"][0]["actions"].insert(0, [0, "discard AS"]),
            "action 1 (0: 'discard AS')",
        ),
        (lambda d: d["hands"][0]["actions"].__setitem__(0, [1, "draw"]), "player 0's turn"),
        (lambda d: d["hands"][0]["scores"].__setitem__(0, 999), "the record says"),
        (lambda d: d["hands"][0]["actions"].pop(), "do not end the hand"),
        (lambda d: d["hands"][1].__setitem__("dealer", 1), "hand 2: the dealer is 0"),
        (lambda d: d.__setitem__("result", None), "the game is not over"),
        (lambda d: d["result"].__setitem__("winner", 7), "the replay gives winner"),
        (lambda d: d.__setitem__("seed", 7), "hand 1"),
    ],
)
def test_a_record_that_does_not_replay_is_refused_saying_where(change, words):
    with pytest.raises(RecordError, match=None) as e:
        _tampered(change).replay()
    assert words in str(e.value)


@pytest.mark.parametrize(
    ("data", "words"),
    [
        ([], "not a game record"),
        ({"format": "rummy500-record", "version": 9}, "version 9"),
        ({"format": "rummy500-record", "version": 1, "rules": "gin"}, "unknown preset 'gin'"),
        (
            {"format": "rummy500-record", "version": 1, "rules": "standard", "seed": "7"},
            "seed must be an int",
        ),
        (
            {"format": "rummy500-record", "version": 1, "seed": 7, "players": ["a"]},
            "list of 2 names",
        ),
        (
            {
                "format": "rummy500-record",
                "version": 1,
                "seed": 7,
                "players": ["a", "b"],
                "hands": [
                    {
                        "dealer": 1,
                        "actions": [["0", "draw"]],
                        "scores": None,
                        "totals": None,
                        "went_out": None,
                    }
                ],
            },
            "hand 1, action 1: expected [player, action]",
        ),
        ({"format": "rummy500-record", "version": 1, "extra": 1}, "unknown key(s) ['extra']"),
    ],
)
def test_malformed_records_are_clear_errors(data, words):
    with pytest.raises(RecordError) as e:
        Record.from_dict(data)
    assert words in str(e.value)


def test_unreadable_files_are_clear_errors(tmp_path):
    with pytest.raises(RecordError, match="cannot read the record"):
        Record.load(tmp_path / "missing.json")
    with pytest.raises(RecordError, match="cannot read the record"):  # was a bare ValueError
        Record.load("bad\x00name.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    with pytest.raises(RecordError, match=r"bad\.json': not valid JSON"):
        Record.load(bad)


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (b'{"format": "rummy500-record/1", "caf\xe9": 1}', "not UTF-8 text"),
        (b"\xff\xfe\x00\x00", "not UTF-8 text"),
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
        (b'{"a": ' * 50_000 + b"1" + b"}" * 50_000, "nested too deeply"),
    ],
    ids=["latin-1", "binary", "deep-list", "deep-object"],
)
def test_files_no_record_could_be_are_record_errors_naming_the_file(tmp_path, content, words):
    """Issue 20: these were a bare UnicodeDecodeError or RecursionError, without the path."""
    path = tmp_path / "odd.json"
    path.write_bytes(content)
    with pytest.raises(RecordError, match=words) as e:
        Record.load(path)
    assert str(path) in str(e.value) and len(str(e.value)) < 300


@pytest.mark.parametrize("content", [b"\xff\xfe junk", b"[" * 100_000])
def test_replay_of_a_bad_file_is_one_line_not_a_traceback(tmp_path, content):
    pytest.importorskip("uvicorn", reason="the play extra is not installed")
    path = tmp_path / "odd.json"
    path.write_bytes(content)
    out = subprocess.run(
        [sys.executable, "-m", "rummy500_env.play", "--no-browser", "--replay", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert out.stderr.startswith("error: ") and str(path) in out.stderr


def test_records_need_only_the_engine():
    code = (
        "import sys, rummy500_env.engine.records;"
        "print(','.join(m for m in ('numpy', 'gymnasium', 'torch') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_evaluate_record_writes_one_replayable_record_per_game(tmp_path):
    cfg = Config(
        ["greedy", "random"], games=2, workers=1, seed=3, out=str(tmp_path / "out"),
        record=str(tmp_path / "records"),
    )  # fmt: skip
    games = run(cfg, progress=False)["games"]
    files = sorted((tmp_path / "records").glob("*.json"))
    assert [f.name for f in files] == ["pair0-deal0-seating0.json", "pair0-deal0-seating1.json"]
    for f, g in zip(files, sorted(games, key=lambda g: g["rotation"]), strict=True):
        record = Record.load(f)
        final = record.replay()
        assert final.phase == "game_over" and len(record.hands) == g["hands"]
        seats = g["seats"]  # which agent of the pair sat in each seat
        assert record.players == [["greedy", "random"][a] for a in seats]
        assert (None if final.winner is None else seats[final.winner]) == g["winner"]
        assert record.meta["source"] == "training.evaluate"


def test_a_recorder_watching_a_game_records_what_its_caller_plays():
    """`Recorder.watching`: the caller plays the game (as a tournament's env does) and
    notes each action; the record replays to the same game, as one the recorder played."""
    import random

    from rummy500_env import Game
    from rummy500_env.engine.records import Recorder, RecordError

    g = Game.new("standard", seed=5)
    watched = Recorder.watching(g, ["a", "b"])
    played = Recorder(g.rules, 5, ["a", "b"])
    rng = random.Random(1)
    for _ in range(3):
        while not g.is_hand_over:
            player, a = g.current_player, rng.choice(g.legal_actions())
            g.apply(a)
            watched.note(player, a)
            played.play(a)
        if g.phase == "game_over":
            break
        g.next_hand()
        watched.note_deal()
        played.next_hand()
    assert watched.record.to_dict() == played.record.to_dict()
    assert watched.record.replay() == g
    with pytest.raises(RecordError, match="first deal"):
        Recorder.watching(g, ["a", "b"])
