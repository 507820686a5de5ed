"""`Rules.parse`: the one ``--rules`` parser of every command (a preset, ``preset,field=value``,
or a JSON object), each form and each bad input's message."""

from __future__ import annotations

import pytest

from rummy500_env import Rules
from rummy500_env.engine.errors import RulesError


@pytest.mark.parametrize(
    ("text", "players", "expected"),
    [
        ("standard", None, Rules()),
        ("nordic", None, Rules.preset("nordic")),
        ("  fives ", None, Rules.preset("fives")),
        ("nordic", 3, Rules.preset("nordic", players=3)),
        ("standard,target=300", None, Rules(target=300)),
        ("target=300", None, Rules(target=300)),  # the preset may be left out
        (
            "target=300, discard_to_go_out=TRUE,",
            4,
            Rules(target=300, discard_to_go_out=True, players=4),
        ),
        ("fives,turn_limit=none,decks=null", None, Rules.preset("fives", turn_limit=None)),
        ("standard,scoring=fives,players=3", 3, Rules(scoring="fives", players=3)),
        ('{"preset": "nordic", "target": 300}', None, Rules.preset("nordic", target=300)),
        ('{"jokers": 2, "rummy_calls": true}', None, Rules(jokers=2, rummy_calls=True)),
        ("{}", 5, Rules(players=5)),
    ],
)
def test_each_form_gives_the_rules_it_names(text, players, expected):
    assert Rules.parse(text, players=players) == expected


@pytest.mark.parametrize(
    ("text", "players", "words"),
    [
        ("", None, "rules '' are empty: give a preset (standard, pagat, nordic, fives, app)"),
        (" , ", None, "are empty"),
        ("gin", None, "rules 'gin': unknown preset 'gin'; give a preset (standard, pagat"),
        ("gin,target=3", None, "unknown preset 'gin'"),
        ("standard,target", None, "'target' is not field=value (only the first item may be"),
        ("standard,nordic", None, "'nordic' is not field=value"),
        ("standard,=3", None, "'=3' is not field=value"),
        ("target=3,target=4", None, "set target twice: give each field once"),
        (
            "standard,colour=red",
            None,
            "rules 'standard,colour=red': unknown rules field(s) ['colour']; known fields: [",
        ),
        ("standard,target=abc", None, "target='abc' is not allowed: use an int >= 1"),
        ("standard,target=0", None, "target=0 is not allowed: use an int >= 1"),
        ("rummy_calls=yes", None, "rummy_calls='yes' is not allowed: use True or False"),
        ("players=8,hand_size=13", None, "leaves no card for the pile"),
        ("players=3", 2, "set players=3, but players=2 is given too (--players)"),
        ('{"players": 4}', 3, "set players=4, but players=3 is given too"),
        ("{target: 3}", None, "rules '{target: 3}': not valid JSON (Expecting property"),
        ('{"preset": 3}', None, '"preset" must be a preset name, not 3'),
        ('{"preset": "gin"}', None, "unknown preset 'gin'"),
        ('{"jokers": 3}', None, "jokers=3 is not allowed: use 0 or 2"),
    ],
)
def test_bad_text_is_a_rules_error_that_quotes_it_and_says_what_is_allowed(text, players, words):
    with pytest.raises(RulesError) as e:
        Rules.parse(text, players=players)
    assert words in str(e.value)


def test_only_text_that_starts_with_a_brace_is_read_as_json():
    # A JSON list is not an object of fields: it is taken for a preset name, and refused as one.
    with pytest.raises(RulesError, match=r"unknown preset '\[1\]'"):
        Rules.parse("[1]")
    assert Rules.parse(' {"target": 300}') == Rules(target=300)


def test_every_preset_parses_to_itself():
    from rummy500_env.engine.rules import PRESETS

    for name in PRESETS:
        assert Rules.parse(name) == Rules.preset(name)


def test_every_command_reads_rules_with_it(capsys):
    """``--rules nordic,target=300`` means the same to every command, and a bad one is the
    engine's message there."""
    from rummy500_env import bench
    from rummy500_env.__main__ import main as watch
    from rummy500_env.evaluation import evaluate
    from rummy500_env.training import ppo, rllib

    expected = Rules.preset("nordic", target=300)
    assert bench._rules_arg("nordic,target=300") == expected
    cfg = evaluate.parse_args(["greedy", "random", "--rules", "nordic,target=300"])
    assert cfg.game_rules() == expected
    assert rllib.parse_args(["--rules", "nordic,target=300"])[0].game_rules() == expected
    assert ppo.parse_args(["--rules", "nordic,target=300"])[0].game_rules() == expected
    watch(["--rules", "nordic,target=100", "--players", "greedy", "random", "--seed", "1"])
    assert "final totals" in capsys.readouterr().out
    for command in (watch, bench.main):
        with pytest.raises(SystemExit):
            command(["--rules", "standard,target"])
        assert "'target' is not field=value" in capsys.readouterr().err
