"""The policy-guided search (`PolicySearchAgent`, agent spec ``psearch``): legal moves only,
seeded runs replay, the budget is kept, and a world never shows the seat a card it could not
know."""

from __future__ import annotations

import random
import statistics
import time
from typing import Any

import numpy as np
import pytest

from rummy500_env import Game, Rules
from rummy500_env.agents import ExpertAgent, PolicySearchAgent
from rummy500_env.agents.policy import shipped_rules
from rummy500_env.agents.psearch import PolicySearchError
from rummy500_env.agents.registry import AgentSpecError, check_spec, make_agent, parse_spec
from rummy500_env.evaluation.arena import play
from rummy500_env.rl.actions import ActionCodec
from rummy500_env.rl.observation import ObservationEncoder
from tests.helpers import reshuffle_hidden

RULES = Rules()


@pytest.fixture(scope="module")
def positions() -> list[Game]:
    """Positions of two ExpertAgent hands where the seat to act has a real choice."""
    expert = ExpertAgent(RULES)
    out = []
    for seed in (3, 4):
        g = Game.new(RULES, seed=seed)
        while not g.is_hand_over:
            legal = g.legal_actions()
            if len(legal) > 1:
                out.append(g.copy())
            g.play_unchecked(expert.decide(g.seat_view(g.current_player), legal))
    return out


PAPER = {"candidates": 8, "leaf": "playout", "gumbel": True, "evidence": 0}
"""The paper's setting with the cheap leaf: the halving over many candidates, fast."""


def search(**kwargs: Any) -> PolicySearchAgent:
    return PolicySearchAgent(RULES, **({"simulations": 24, "seed": 5} | PAPER | kwargs))


def test_a_hand_against_expert_plays_legal_moves_only() -> None:
    """Every move of a whole hand is legal: the engine refuses an illegal one (arena plays
    through the env, which checks), for each way of valuing a candidate."""
    for leaf in ("value", "playout"):
        agents = [search(leaf=leaf), ExpertAgent(RULES)]
        result = play(agents, RULES, seed=11, episode="hand")
        assert len(result.hand_scores) == 1


def test_act_picks_an_id_of_the_mask(positions: list[Game]) -> None:
    agent, codec, enc = search(), ActionCodec(RULES), ObservationEncoder(RULES)
    for g in positions[:10]:
        mask = codec.mask(g)
        assert mask[agent.act(enc.encode(g, g.current_player), mask)] == 1


@pytest.mark.slow
def test_jokers_and_calls_search_with_their_shipped_policy() -> None:
    """``psearch`` picks the policy made for the table, as ``model`` does, and plays a hand
    of the variant (calls, jokers) legally."""
    rules = shipped_rules()["jokers-calls"]
    assert rules.jokers and rules.rummy_calls
    agent = make_agent("psearch:8", rules, seed=1)
    assert isinstance(agent, PolicySearchAgent)
    assert agent.policy.path.endswith("rummy500-ppo-jokers-calls.pt")
    result = play([agent, ExpertAgent(rules)], rules, seed=2, episode="hand")
    assert len(result.hand_scores) == 1


def test_same_seed_same_moves(positions: list[Game]) -> None:
    for leaf in ("value", "playout"):
        a, b = search(leaf=leaf), search(leaf=leaf)
        for g in positions[:12]:
            view, legal = g.seat_view(g.current_player), g.legal_actions()
            assert a.decide(view, legal) == b.decide(view, legal)
            assert a.last_simulations == b.last_simulations > 0


def test_other_seeds_sample_other_worlds(positions: list[Game]) -> None:
    g = positions[5]
    view, legal = g.seat_view(g.current_player), g.legal_actions()
    a, b = search(seed=1), search(seed=2)
    a.decide(view, legal)
    b.decide(view, legal)
    assert [w.stock for w in a.last_worlds] != [w.stock for w in b.last_worlds]


def test_analyse_gives_the_choice_its_improved_policy_and_value(positions: list[Game]) -> None:
    """`analyse` (what expert iteration labels with): the choice `decide` makes, a policy over
    the legal actions' ids that sums to one and moves towards the actions the search valued,
    and a finite value."""
    codec = ActionCodec(RULES)
    for g in positions[:12]:
        view, legal = g.seat_view(g.current_player), g.legal_actions()
        result = search().analyse(view, legal)
        assert result.action == search().decide(view, legal)
        assert sorted(result.ids) == sorted(codec.encode(g, a) for a in legal)
        assert result.improved.sum() == pytest.approx(1.0, abs=1e-5)
        seen = result.visits > 0
        assert seen.sum() >= 2
        best, worst = (
            np.argmax(np.where(seen, result.q, -np.inf)),
            np.argmin(np.where(seen, result.q, np.inf)),
        )
        ratio_before = result.prior[best] / result.prior[worst]
        if result.q[best] > result.q[worst]:
            assert result.improved[best] / result.improved[worst] > ratio_before
        assert np.isfinite(result.value)


@pytest.mark.parametrize("leaf", ["rollout", "value", "playout"])
def test_lockstep_searches_are_the_searches_one_at_a_time(positions: list[Game], leaf: str) -> None:
    """`analyse_many` (expert iteration's labelling: every position's simulations valued in
    one batch) gives one position exactly what `analyse` gives it on the same seed, and
    several positions each a search within its budget over its own legal actions."""
    some = positions[:: max(1, len(positions) // 5)][:5]
    for g in some[:2]:
        view, legal = g.seat_view(g.current_player), g.legal_actions()
        one = search(leaf=leaf, simulations=8).analyse(view, legal)
        [many] = search(leaf=leaf, simulations=8).analyse_many([(view, legal)])
        assert many.action == one.action and many.ids == one.ids
        assert np.array_equal(many.visits, one.visits)
        assert np.allclose(many.improved, one.improved) and many.value == pytest.approx(one.value)
    agent = search(leaf=leaf, simulations=8)
    results = agent.analyse_many([(g.seat_view(g.current_player), g.legal_actions()) for g in some])
    codec = ActionCodec(RULES)
    for g, r in zip(some, results, strict=True):
        assert sorted(r.ids) == sorted(codec.encode(g, a) for a in g.legal_actions())
        assert r.action in g.legal_actions() and 0 < r.visits.sum() <= 8
        assert r.improved.sum() == pytest.approx(1.0, abs=1e-5)
    assert agent.last_simulations == sum(int(r.visits.sum()) for r in results)
    with pytest.raises(PolicySearchError, match="simulation budget"):
        search(simulations=None, ms=5.0).analyse_many([])
    two = [(g.seat_view(g.current_player), g.legal_actions()) for g in some[:2]]
    with pytest.raises(PolicySearchError, match="evidence is given for 1 positions, not the 2"):
        PolicySearchAgent(RULES, simulations=8, evidence=2).analyse_many(two, [()])


def test_a_single_legal_action_costs_nothing() -> None:
    g = Game.new(RULES, seed=1)
    agent = search()
    legal = g.legal_actions()[:1]
    assert agent.decide(g.seat_view(g.current_player), legal) == legal[0]
    assert agent.last_simulations == 0


def test_simulation_budget_is_kept(positions: list[Game]) -> None:
    """``psearch:N``: at most N simulations (one world × one candidate each), and most of
    them spent when there are candidates to split them between (the halving's floors waste
    some)."""
    for budget in (2, 5, 64):
        agent = search(simulations=budget)
        for g in positions[:20]:
            agent.decide(g.seat_view(g.current_player), g.legal_actions())
            assert 0 < agent.last_simulations <= budget
            if budget == 64 and len(g.legal_actions()) >= 8:
                assert agent.last_simulations >= 32


def test_millisecond_budget_is_kept_on_an_injected_clock(positions: list[Game]) -> None:
    """Time is a clock that moves only when simulations run (0.25 ms each): a 50 ms decision
    stops inside its budget, after spending most of it."""
    now = [0.0]
    agent = search(simulations=None, ms=50.0, clock=lambda: now[0])
    evaluate = agent._evaluate

    def costly(worlds: list[Game], cands: list[Any], seat: int) -> np.ndarray[Any, Any]:
        now[0] += 0.00025 * len(worlds) * len(cands)
        return evaluate(worlds, cands, seat)

    agent._evaluate = costly  # type: ignore[method-assign]
    for g in positions[:15]:
        now[0] = 0.0
        agent.decide(g.seat_view(g.current_player), g.legal_actions())
        assert now[0] <= 0.050
        assert agent.last_simulations >= 0.5 * 0.050 / 0.00025
        assert agent.last_simulations == round(now[0] / 0.00025)


def test_millisecond_budget_median_in_real_time(positions: list[Game]) -> None:
    """A loose wall-clock check (a loaded machine slows everything, and a batch under way
    finishes): the median decision of ``psearch:50ms`` stays under three times its budget.
    The exact check is the injected clock's above."""
    agent = make_agent("psearch:50ms", RULES, seed=1)
    times = []
    for g in positions[:9]:
        view, legal = g.seat_view(g.current_player), g.legal_actions()
        start = time.perf_counter()
        agent.decide(view, legal)  # type: ignore[attr-defined]
        times.append(time.perf_counter() - start)
    assert statistics.median(times) < 0.150


def test_every_world_agrees_with_the_seat_view(positions: list[Game]) -> None:
    """What the seat sees of each sampled world is exactly its view: its hand, the pile, the
    table, what it knows of the others' hands, every size and total."""
    agent = search(simulations=48)
    for g in positions[:15]:
        seat = g.current_player
        view = g.seat_view(seat)
        agent.decide(view, g.legal_actions())
        assert agent.last_worlds
        for world in agent.last_worlds:
            assert world.seat_view(seat) == view


def test_the_search_reads_only_the_seat_view(positions: list[Game]) -> None:
    """Two real positions the seat cannot tell apart (the hidden cards dealt again) get the
    same search: the same worlds, the same move. And the worlds are not the real deal."""
    rng = random.Random(0)
    for g in positions[:10]:
        seat = g.current_player
        other = reshuffle_hidden(g, seat, rng)
        view = g.seat_view(seat)
        assert other.seat_view(seat) == view
        a, b = search(), search()
        assert a.decide(view, g.legal_actions()) == b.decide(
            other.seat_view(seat), other.legal_actions()
        )
        assert [w.stock for w in a.last_worlds] == [w.stock for w in b.last_worlds]
    g = positions[3]
    seat = g.current_player
    agent = search(simulations=64)
    agent.decide(g.seat_view(seat), g.legal_actions())
    real = g.hand(1 - seat)
    assert any(world.hand(1 - seat) != real for world in agent.last_worlds)


@pytest.mark.parametrize(
    ("spec", "ms", "simulations", "path"),
    [
        ("psearch", 200, None, None),
        ("psearch:50ms", 50, None, None),
        ("psearch:64", None, 64, None),
        ("psearch:200ms:standard", 200, None, "standard"),
        ("psearch:32:models/rummy500-ppo-standard.pt", None, 32, "models/rummy500-ppo-standard.pt"),
    ],
)
def test_specs(spec: str, ms: int | None, simulations: int | None, path: str | None) -> None:
    assert check_spec(spec) == spec
    s = parse_spec(spec)
    assert (s.kind, s.ms, s.simulations, s.path) == ("psearch", ms, simulations, path)


def test_spec_builds_the_agent_with_its_budget() -> None:
    agent = make_agent("psearch:50ms:standard", RULES, seed=3)
    assert isinstance(agent, PolicySearchAgent)
    assert (agent.ms, agent.simulations) == (50.0, None)
    assert agent.policy.path.endswith("rummy500-ppo-standard.pt")
    assert make_agent("psearch:12", RULES, seed=3).simulations == 12  # type: ignore[attr-defined]


def test_the_spec_plays_the_strongest_measured_setting() -> None:
    """``psearch`` plays the constructor's defaults (and `for_play`'s): the top two moves by
    prior, no Gumbel noise, rollouts, worlds weighed by the other seat's last two turns."""

    def setting(agent: Any) -> tuple[Any, ...]:
        assert isinstance(agent, PolicySearchAgent)
        return (agent.candidates, agent.leaf, agent.gumbel, agent.c_scale, agent.evidence)

    played = setting(make_agent("psearch:50ms", RULES, seed=3))
    assert played == (2, "rollout", False, 1.0, 2)
    assert setting(PolicySearchAgent(RULES, ms=50)) == played
    assert setting(PolicySearchAgent.for_play(RULES, ms=50)) == played


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ("psearch:0", "bad psearch budget in 'psearch:0'"),
        ("psearch:50s", "bad psearch budget in 'psearch:50s'"),
        ("psearch:", "bad psearch budget in 'psearch:'"),
        ("psearch:ms", "bad psearch budget"),
        ("psearch:50ms:nowhere.pt", "no policy 'nowhere.pt'"),
        ("psearch:50ms:", "no policy ''"),
    ],
)
def test_bad_specs_say_what_is_allowed(spec: str, words: str) -> None:
    with pytest.raises(AgentSpecError, match=words.replace("(", r"\(")):
        check_spec(spec)


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"leaf": "deep"}, "leaf 'deep' is unknown"),
        ({"ms": 50.0, "simulations": 8}, "not both"),
        ({"simulations": 0}, "simulations must be a positive whole number"),
        ({"simulations": None, "ms": -1.0}, "ms must be a positive number"),
        ({"candidates": 0}, "candidates must be a positive whole number"),
        ({"c_scale": -1.0}, "c_scale must be a number >= 0"),
    ],
)
def test_bad_arguments_say_what_is_allowed(kwargs: dict[str, Any], words: str) -> None:
    with pytest.raises(PolicySearchError, match=words):
        search(**kwargs)


def test_a_policy_for_other_rules_is_refused() -> None:
    from rummy500_env.agents.policy import PolicyLoadError

    with pytest.raises(PolicyLoadError, match="other rules"):
        PolicySearchAgent(Rules(players=3), policy="standard", simulations=8)


@pytest.mark.slow
def test_it_plays_in_training_evaluate_and_replays_for_a_seed(tmp_path: Any) -> None:
    """``training.evaluate`` builds it from its spec in every game; a simulation budget makes
    the tournament replay exactly."""
    from rummy500_env.evaluation.tournament import Config, run

    cfg = Config(["psearch:6", "greedy"], games=2, workers=1, seed=2, out=str(tmp_path))
    cfg.episode = "hand"
    a, b = run(cfg, progress=False), run(cfg, progress=False)
    assert a["games"] == b["games"] and len(a["games"]) == 2


@pytest.mark.slow
def test_the_knowing_search_benchmark_plays_evaluates_deals_and_pairs_them(tmp_path, capsys):
    """``benchmarks/studies/psearch_knows.py``: the search knowing GreedyAgent plays it on the deals
    ``training.evaluate --episode hand`` plays for the seed, and pairs its margins a deal with
    that command's results."""
    import sys
    from pathlib import Path

    from rummy500_env.evaluation.evaluate import main as evaluate

    sys.path.insert(0, str(Path(__file__).parents[1] / "benchmarks" / "studies"))
    from psearch_knows import main as knows

    flags = ["--episode", "hand", "--games", "4", "--seed", "3", "--workers", "1"]
    assert evaluate(["greedy", "greedy", *flags, "--out", str(tmp_path)]) == 0
    capsys.readouterr()
    assert knows(["greedy", "--simulations", "2", "--games", "4", "--seed", "3",
                  "--paired", str(tmp_path / "results.json")]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert out.count("deal ") == 4 and "against it:" in out and ", 2 deals, " in out
    assert "minus greedy's margin on the same deals:" in out and out.rstrip().endswith("2 deals")
