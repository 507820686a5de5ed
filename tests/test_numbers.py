"""Numbers read from text (`rummy500_env.engine.numbers`): ASCII digits only, a bounded
length, and every refusal the package's own error for its context (a `RulesError` for
``--rules``, an `AgentSpecError` for an agent spec, a `RecordError` for a record), never a
bare ``ValueError`` or ``RecursionError`` from `int` or `json`; and every command says so in
one ``error:`` line."""

from __future__ import annotations

import json

import pytest

from rummy500_env import Rules
from rummy500_env.agents.registry import AgentSpecError, parse_spec
from rummy500_env.engine.errors import RulesError, Rummy500Error
from rummy500_env.engine.numbers import MAX_DIGITS, read_int, read_json, shown
from rummy500_env.engine.records import Record, RecordError

HUGE = "9" * 5000
"""More digits than CPython's `int` converts from text (4300): a bare ValueError there."""
DEEP = '{"target": ' + "[" * 100_000 + "]" * 100_000 + "}"
"""JSON nested deeper than `json.loads` recurses: a bare RecursionError there."""


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("standard,target=5²", "target='5²' is not allowed: use an int >= 1, in the digits 0-9"),
        ("standard,target=--5", "target='--5' is not allowed"),
        ("target=+5", "target='+5' is not allowed"),
        ("target=٣٠٠", "target='٣٠٠' is not allowed"),  # int() reads it as 300
        ("target=1_000", "target='1_000' is not allowed"),  # int() reads it as 1000
        (f"target={HUGE}", f"at most {MAX_DIGITS} of them"),
        ("players=٣", "players='٣' is not allowed: use an int 2..8, in the digits 0-9"),
        ("decks=²", "decks='²' is not allowed"),
        ("turn_limit=-", "turn_limit='-' is not allowed"),
        ("standard,players=9", "players=9 is not allowed: use an int 2..8"),
        (f'{{"target": {HUGE}}}', "a number in it is too long to read"),
        (DEEP, "nested too deeply to read"),
        ("{" + '"a":' * 5 + "}", "not valid JSON"),
    ],
)
def test_rules_text_with_a_number_that_is_no_number_is_a_rules_error(text, words):
    with pytest.raises(Rummy500Error) as e:
        Rules.parse(text)
    assert type(e.value) is RulesError, repr(e.value)
    assert words in str(e.value)
    assert len(str(e.value)) < 1000  # a long text is quoted cut short


def test_rules_text_reads_plain_numbers_and_leaves_words_to_the_fields():
    assert Rules.parse("target=300").target == 300
    assert Rules.parse("players=003").players == 3
    with pytest.raises(RulesError, match="turn_limit=-5 is not allowed: use an int >= 1"):
        Rules.parse("turn_limit=-5")
    with pytest.raises(RulesError, match="scoring='5' is not allowed: use 'pip' or 'fives'"):
        Rules.parse("scoring=5")


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ("ismcts:²", "bad ismcts budget in 'ismcts:²'"),
        ("ismcts:٣", "bad ismcts budget in 'ismcts:٣'"),
        (f"ismcts:{HUGE}", "bad ismcts budget"),
        (f"search:{HUGE}", "bad search budget"),
        (f"search:{HUGE}ms", "bad search budget"),
        ("search:٣", "bad search budget in 'search:٣'"),
        ("search:٣ms", "bad search budget in 'search:٣ms'"),
        ("search:5²", "bad search budget in 'search:5²'"),
    ],
)
def test_an_agent_spec_with_a_number_that_is_no_number_is_a_spec_error(spec, words):
    with pytest.raises(Rummy500Error) as e:
        parse_spec(spec)
    assert type(e.value) is AgentSpecError, repr(e.value)
    assert words in str(e.value)
    assert len(str(e.value)) < 1000


def test_a_record_holding_a_number_too_long_to_read_is_a_record_error(tmp_path):
    path = tmp_path / "long.json"
    path.write_text(f'{{"format": "rummy500-record", "version": 1, "seed": {HUGE}}}')
    with pytest.raises(Rummy500Error) as e:
        Record.load(path)
    assert type(e.value) is RecordError, repr(e.value)
    assert "long.json" in str(e.value) and "too long to read" in str(e.value)


def test_read_int_takes_ascii_digits_in_range_and_names_the_field():
    assert read_int("42", "games", 1, None) == 42
    assert read_int("-7", "seed") == -7
    assert read_int("0" * MAX_DIGITS, "seed") == 0
    for bad in ("", "-", "²", "٣", "4 2", " 42", "42 ", "+4", "1_0", "0x10", "1e3", "9" * 21):
        with pytest.raises(RulesError, match=r"^n='.*' is not allowed: use an int 1\.\.5, in"):
            read_int(bad, "n", 1, 5, RulesError)
    with pytest.raises(RulesError, match=r"^n=6 is not allowed: use an int 1\.\.5$"):
        read_int("6", "n", 1, 5, RulesError)
    with pytest.raises(Rummy500Error, match=r"n=None is not allowed: use an int"):
        read_int(None, "n")  # type: ignore[arg-type]


def test_read_json_turns_every_failure_into_the_callers_error():
    assert read_json('{"a": [1, 2]}', "x", RulesError) == {"a": [1, 2]}
    for text, words in ((f"[{HUGE}]", "too long"), ("[" * 100_000, "nested too deeply")):
        with pytest.raises(RecordError, match=words):
            read_json(text, "the file", RecordError)
    with pytest.raises(RecordError, match=r"^the file: not valid JSON \(Expecting"):
        read_json("{", "the file", RecordError)


def test_shown_cuts_long_values_and_survives_numbers_too_long_to_print():
    assert shown("abc") == "'abc'"
    assert shown("x" * 500, 20) == "'xxxxxxxxxxxxxxxx..."
    assert "too long" in shown(10**5000) and "too long" in shown([1, {"a": 10**5000}])
    nested: list[object] = []
    for _ in range(100_000):
        nested = [nested]
    assert "nested too deeply" in shown(nested)


# --- the commands: one error line, exit 2, no traceback -----------------------------------------


@pytest.mark.parametrize(
    "rules",
    ["standard,target=5²", "target=--5", f"target={HUGE}", f'{{"target": {HUGE}}}', DEEP],
    ids=["superscript", "double-minus", "huge", "huge-json", "deep-json"],
)
def test_evaluate_refuses_bad_numbers_in_rules_in_one_line(rules, capsys):
    from rummy500_env.evaluation.evaluate import main

    assert main(["greedy", "random", "--rules", rules]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: rules ") and "Traceback" not in err


@pytest.mark.parametrize(
    "argv",
    [
        ["greedy", f"search:{HUGE}"],
        ["greedy", "ismcts:²"],
    ],
    ids=["search-huge", "ismcts-superscript"],
)
def test_evaluate_refuses_bad_numbers_in_specs_in_one_line(argv, capsys):
    from rummy500_env.evaluation.evaluate import main

    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: bad ") and "Traceback" not in err


@pytest.mark.parametrize("option", ["--games", "--seed", "--workers", "--players"])
@pytest.mark.parametrize("value", ["٣", "²", HUGE, "1_0"])
def test_evaluate_number_options_take_ascii_digits_only(option, value, capsys):
    from rummy500_env.evaluation.evaluate import main

    with pytest.raises(SystemExit) as e:
        main(["greedy", "random", option, value])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert f"error: argument {option}: " in err and "Traceback" not in err
    assert "is not allowed: use an int" in err


def test_watch_command_refuses_bad_numbers(capsys):
    from rummy500_env.__main__ import main

    for argv in (["--seed", "٣"], ["--rules", "target=5²"], ["--players", "ismcts:²", "random"]):
        with pytest.raises(SystemExit) as e:
            main(argv)
        assert e.value.code == 2, argv
        err = capsys.readouterr().err
        assert "error: " in err and ("is not allowed" in err or "bad ismcts" in err), err


@pytest.mark.parametrize(
    "argv",
    [
        ["--rules", "standard,target=5²"],
        ["--rules", f"target={HUGE}"],
        ["--rules", DEEP],
        ["--opponent", "ismcts:²"],
        ["--opponent", f"search:{HUGE}"],
    ],
    ids=["superscript", "huge", "deep-json", "ismcts", "search"],
)
def test_play_refuses_bad_numbers_before_serving(argv, capsys, tmp_path):
    pytest.importorskip("uvicorn", reason="the play extra is not installed")
    from rummy500_env.play.__main__ import main

    assert main([*argv, "--no-browser", "--data-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "Traceback" not in err


@pytest.mark.parametrize("option", ["--seed", "--port", "--pace"])
def test_play_number_options_take_ascii_digits_only(option, capsys, tmp_path):
    pytest.importorskip("uvicorn", reason="the play extra is not installed")
    from rummy500_env.play.__main__ import main

    with pytest.raises(SystemExit) as e:
        main([option, "٣", "--no-browser", "--data-dir", str(tmp_path)])
    assert e.value.code == 2
    assert f"argument {option}: " in capsys.readouterr().err


def test_play_replay_of_a_record_with_a_huge_number_is_one_error_line(capsys, tmp_path):
    pytest.importorskip("uvicorn", reason="the play extra is not installed")
    from rummy500_env.play.__main__ import main

    path = tmp_path / "huge.json"
    record = {"format": "rummy500-record", "version": 1, "rules": "standard", "seed": 1}
    path.write_text(json.dumps(record).replace('"seed": 1', f'"seed": {HUGE}'))
    assert main(["--replay", str(path), "--no-browser"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "huge.json" in err and "Traceback" not in err
