"""The ``gumbel`` agent spec: the fair JAX search (`rummy500_env.jax.search`) as a player.

It decides from the seat view alone (the world it turns into a JAX state does not change its
choice), plays legal moves in ``training.evaluate`` and replays for a seed; its specs and the
errors for bad ones, rules the JAX engine does not play and a missing JAX.
"""

from __future__ import annotations

import importlib.util
import random
from typing import Any

import pytest

pytest.importorskip("jax")
pytest.importorskip("torch")

from rummy500_env import Game, Rules, RulesError
from rummy500_env.agents.gumbel import SIMULATIONS, WORLDS, GumbelAgent
from rummy500_env.agents.registry import (
    AgentSpecError,
    check_spec,
    make_agent,
    parse_spec,
)

RULES = Rules.preset("standard")
SPEC = "gumbel:8x2"
"""One small budget for every test here: the search compiles once for the module."""


@pytest.fixture(scope="module")
def positions() -> list[Game]:
    """Positions of a seeded game with more than one legal action."""
    rng, out = random.Random(4), []
    g = Game.new(RULES, seed=4)
    while len(out) < 6:
        if g.is_hand_over:
            g = Game.new(RULES, seed=rng.randrange(1000))
        if len(g.legal_actions()) > 1 and rng.random() < 0.3:
            out.append(g.copy())
        g.apply(rng.choice(g.legal_actions()))
    return out


def test_the_choice_does_not_depend_on_the_world_it_starts_from(positions: list[Game]) -> None:
    """The agent turns one world of the view into a JAX state; the search deals its own
    worlds for the seat, so another starting world gives the same choice."""
    a, b = make_agent(SPEC, RULES, seed=5), make_agent(SPEC, RULES, seed=5)
    assert isinstance(a, GumbelAgent) and isinstance(b, GumbelAgent)
    b.rng = random.Random(12345)  # other starting worlds, the same search keys
    for g in positions:
        view = g.seat_view(g.current_player)
        assert a.decide(view, g.legal_actions()) == b.decide(view, g.legal_actions())


def test_it_plays_in_training_evaluate_and_replays_for_a_seed(tmp_path: Any) -> None:
    from rummy500_env.evaluation.tournament import Config, run

    cfg = Config([SPEC, "greedy"], games=2, workers=1, seed=2, out=str(tmp_path))
    cfg.episode = "hand"
    a, b = run(cfg, progress=False), run(cfg, progress=False)
    assert a["games"] == b["games"] and len(a["games"]) == 2


@pytest.mark.parametrize(
    ("spec", "simulations", "worlds", "path"),
    [
        ("gumbel", SIMULATIONS, WORLDS, None),
        ("gumbel:16", 16, WORLDS, None),
        ("gumbel:16x4", 16, 4, None),
        ("gumbel:16x4:standard", 16, 4, "standard"),
        ("gumbel:8:models/rummy500-ppo-standard.pt", 8, WORLDS, "models/rummy500-ppo-standard.pt"),
    ],
)
def test_specs(spec: str, simulations: int, worlds: int, path: str | None) -> None:
    assert check_spec(spec) == spec
    s = parse_spec(spec)
    assert (s.kind, s.simulations, s.worlds, s.path) == ("gumbel", simulations, worlds, path)


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ("gumbel:0", "bad gumbel budget"),
        ("gumbel:16ms", "bad gumbel budget"),
        ("gumbel:16x", "bad gumbel budget"),
        ("gumbel:16x4x2", "bad gumbel budget"),
        ("gumbel:16:nosuch.pt", "no policy 'nosuch.pt'"),
    ],
)
def test_bad_specs_say_what_is_allowed(spec: str, words: str) -> None:
    with pytest.raises(AgentSpecError, match=words) as e:
        check_spec(spec)
    assert "gumbel" in str(e.value)


def test_without_jax_the_spec_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "jax" else real(name, *a)
    )
    with pytest.raises(AgentSpecError, match=r'needs JAX.*pip install "rummy500_env\[jax\]"'):
        check_spec("gumbel:16")


def test_rules_the_jax_engine_does_not_play_are_refused() -> None:
    with pytest.raises(RulesError, match=r"gumbel searches on the JAX engine.*psearch plays any"):
        GumbelAgent(Rules(jokers=2, rummy_calls=True), "jokers-calls")
