"""Agent specs: one registry checks and builds every bot a command line or config names."""

from __future__ import annotations

import pytest

from rummy500_env import Rules
from rummy500_env.agents import ExpertAgent, GreedyAgent, RandomAgent, SearchAgent
from rummy500_env.agents.registry import AgentSpecError, check_spec, make_agent, parse_spec
from rummy500_env.engine.errors import Rummy500Error


@pytest.mark.parametrize(
    ("spec", "kind", "ms", "rollouts"),
    [
        ("random", RandomAgent, None, None),
        ("greedy", GreedyAgent, None, None),
        ("expert", ExpertAgent, None, None),
        ("search", SearchAgent, 50.0, None),
        ("search:50ms", SearchAgent, 50.0, None),
        ("search:200", SearchAgent, None, 200),
    ],
)
def test_each_spec_builds_its_agent(spec, kind, ms, rollouts):
    assert check_spec(spec) == spec
    agent = make_agent(spec, Rules(), seed=1)
    assert type(agent) is kind
    if kind is SearchAgent:
        assert (agent.ms, agent.rollouts) == (ms, rollouts)


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ("search:50s", "bad search budget in 'search:50s'"),  # used to pass, then crash
        ("search:5m", "bad search budget in 'search:5m'"),
        ("search:0ms", "bad search budget in 'search:0ms'"),
        ("search:0", "bad search budget in 'search:0'"),
        ("search:-3", "bad search budget in 'search:-3'"),
        ("search:ms", "bad search budget in 'search:ms'"),
        ("search:", "bad search budget in 'search:'"),
        ("greedy:2", "unknown agent 'greedy:2'"),
        ("wizard", "unknown agent 'wizard'"),
        ("missing.pt", "no checkpoint at 'missing.pt'"),
    ],
)
def test_a_bad_spec_is_refused_before_any_game_saying_what_is_allowed(spec, words):
    with pytest.raises(AgentSpecError, match=words) as e:
        check_spec(spec)
    assert isinstance(e.value, Rummy500Error)
    if not spec.endswith(".pt"):
        assert "search:50ms" in str(e.value) and "search:200" in str(e.value)
    with pytest.raises(AgentSpecError):
        make_agent(spec, Rules(), seed=0)


def test_python_m_rummy500_env_takes_any_spec_and_refuses_a_bad_one(capsys):
    from rummy500_env.__main__ import main

    main(["--seed", "3", "--players", "search:1", "random", "greedy"])
    assert "final totals" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["--players", "expert", "search:50s"])
    assert "bad search budget in 'search:50s'" in capsys.readouterr().err


def test_the_ismcts_spec_names_openspiels_bot_and_is_refused_before_any_game_without_it(
    monkeypatch,
):
    """``ismcts``/``ismcts:N`` build `ISMCTSAgent` (N simulations a decision, 100 without);
    a bad budget, or OpenSpiel not installed, is one clear error from `check_spec`."""
    import importlib.util

    from rummy500_env.agents import registry

    for bad in ("ismcts:0", "ismcts:-2", "ismcts:5ms", "ismcts:"):
        with pytest.raises(AgentSpecError, match="bad ismcts budget"):
            check_spec(bad)
    real = importlib.util.find_spec
    monkeypatch.setattr(
        registry.importlib.util,
        "find_spec",
        lambda name, *a: None if name == "pyspiel" else real(name, *a),
    )
    with pytest.raises(AgentSpecError, match=r"needs OpenSpiel: pip install -e '.\[openspiel\]'"):
        check_spec("ismcts:50")
    monkeypatch.undo()
    if real("pyspiel") is None:
        pytest.skip("building the agent needs the openspiel extra: pip install -e '.[openspiel]'")
    from rummy500_env.agents.ismcts import ISMCTSAgent

    agent = make_agent("ismcts:50", Rules(), seed=3)
    assert isinstance(agent, ISMCTSAgent) and agent.simulations == 50
    assert make_agent("ismcts", Rules(), seed=3).simulations == 100


@pytest.mark.parametrize("spec", ["x" * 300, "x" * 300 + ".pt", "a\0b", "dir/" + "y" * 300])
def test_a_spec_no_file_can_be_named_is_an_agent_spec_error(spec):
    """A name too long for the file system (or holding a NUL) was a bare OSError (ValueError)
    from the path checks."""
    with pytest.raises(AgentSpecError):
        check_spec(spec)


def test_a_new_bot_joins_the_registry_with_one_entry(monkeypatch):
    """Adding a bot is one `Kind` in `KINDS`: its spec parses, builds, and is listed."""
    from rummy500_env.agents import registry

    class Lazy:
        def act(self, observation, action_mask):
            return int(action_mask.nonzero()[0][0])

    entry = registry.Kind("lazy", "lazy (the first legal action)", registry._word("lazy"),
                          lambda s, rules, seed: Lazy())  # fmt: skip
    monkeypatch.setitem(registry.KINDS, "lazy", entry)
    assert isinstance(make_agent("lazy", Rules(), seed=0), Lazy)
    assert parse_spec("lazy").kind == "lazy"
    with pytest.raises(AgentSpecError, match="unknown agent 'lazy:3'"):
        check_spec("lazy:3")


def test_every_kind_is_listed_in_the_allowed_text():
    from rummy500_env.agents.registry import ALLOWED, KINDS

    for kind in KINDS.values():
        assert kind.allowed in ALLOWED


@pytest.mark.parametrize("command", ["training.evaluate", "rummy500_env"])
def test_help_lists_every_kind_of_agent_and_the_shipped_policies(command, capsys):
    from rummy500_env.__main__ import main as watch
    from rummy500_env.agents.registry import KINDS
    from rummy500_env.agents.shipped import shipped_policies
    from rummy500_env.evaluation.evaluate import parse_args

    with pytest.raises(SystemExit):
        parse_args(["--help"]) if command == "training.evaluate" else watch(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    for kind in KINDS.values():
        assert " ".join(kind.allowed.split()) in text, kind.name
    assert all(name in text for name in shipped_policies()) and "model" in text
