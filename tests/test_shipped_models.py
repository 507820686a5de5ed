"""Every shipped policy: found by name and, through the spec ``model``, by the rules it was made
for; playing legally at its own table; with a model card that names its file and its bar."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("torch")

from rummy500_env.agents.policy import (
    PolicyAgent,
    PolicyLoadError,
    shipped_policies,
    shipped_rules,
)
from rummy500_env.agents.registry import make_agent, resolve_spec
from rummy500_env.engine.rules import Rules
from rummy500_env.evaluation.arena import play

ROOT = Path(__file__).resolve().parents[1]
MODELS = sorted(shipped_policies())
EXPECTED = {
    "standard": Rules(),
    "standard-3p": Rules.parse("standard,players=3"),
    "standard-4p": Rules.parse("standard,players=4"),
    "jokers-calls": Rules.parse("standard,jokers=2,rummy_calls=true"),
}
"""The tables a shipped model covers (a model added to models/ is added here with its rules)."""


def test_every_shipped_model_is_listed_here_with_its_rules():
    assert MODELS == sorted(EXPECTED)
    assert shipped_rules() == EXPECTED


@pytest.mark.parametrize("name", MODELS)
def test_model_finds_the_shipped_policy_of_its_rules_and_it_plays_legally(name):
    rules = EXPECTED[name]
    assert resolve_spec("model", rules) == name
    agent = make_agent("model", rules, seed=0)
    assert isinstance(agent, PolicyAgent) and Path(str(agent.path)).stem.endswith(name)
    seats = [agent] + [make_agent("expert", rules, seed=s) for s in range(1, rules.players)]
    result = play(seats, rules, seed=11, episode="hand")  # the env refuses an illegal id
    assert len(result.hand_scores) == 1 and len(result.totals) == rules.players


@pytest.mark.parametrize("name", MODELS)
def test_a_shipped_policy_refuses_another_table_naming_the_one_that_fits(name):
    other = MODELS[(MODELS.index(name) + 1) % len(MODELS)]  # another shipped model's table
    with pytest.raises(PolicyLoadError, match="other rules") as e:
        PolicyAgent.load(name, rules=EXPECTED[other])
    assert str(e.value).endswith(f"shipped policies for the current rules: {other}")
    with pytest.raises(PolicyLoadError, match="other rules") as e:
        PolicyAgent.load(name, rules=Rules.preset("nordic"))
    assert str(e.value).endswith("no shipped policy is made for the current rules")


@pytest.mark.parametrize("name", MODELS)
def test_each_shipped_model_has_a_card_with_its_checksum(name):
    card = ROOT / "models" / ("README.md" if name == "standard" else f"rummy500-ppo-{name}.md")
    text = card.read_text()
    assert f"`rummy500-ppo-{name}.pt`" in text and "## Evaluation" in text
    assert f"models/{card.name}" in (ROOT / "docs" / "models.md").read_text() or name == "standard"
