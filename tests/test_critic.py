"""training.ppo's ``critic``: ``obs`` trains exactly as before the field existed; ``full``
gives the critic the other seats' hands (seat-relative, and only the critic), trains with the
local and the parallel collectors, exports the same actor, resumes, and refuses to resume as
``obs``; training.exit refuses ``full``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("tyro")

import torch

from rummy500_env import Game, Rules
from rummy500_env.agents.networks import build_network
from rummy500_env.agents.policy import PolicyAgent
from rummy500_env.rl.hidden import hidden_hands, hidden_hands_size
from rummy500_env.rl.rummy500_v0 import Rummy500Env
from rummy500_env.training.common import ConfigError
from rummy500_env.training.ppo import (
    Trainer,
    args_from_dict,
    load_yaml,
    main,
    parse_args,
    ppo_update,
)
from rummy500_env.training.rollouts import Collector, new_model, opponent_pool
from rummy500_env.training.selfplay import SelfPlayGames

SMALL = {
    "n_games": 4,
    "n_steps": 16,
    "minibatch_size": 32,
    "channels": 4,
    "blocks": 1,
    "hidden": 8,
    "bc_decisions": 100,
    "bc_epochs": 1,
    "progress": False,
    "collect_workers": 1,
    "threads": 1,
    "net_arch": [16],
}
"""A tiny run: 100 imitated decisions, then PPO updates of 64 decisions."""

BEFORE = {
    "cards": [-0.31544255050539505, 64.04686567174213, 1.1358320703332432],
    "mlp": [16.828467335792084, 1204.6713878282208, -7.886098889584648],
}
"""`digest` of the weights `trained` leaves with the ``obs`` critic, written by the code
at the commit before the field existed (same seed, one torch thread); the new code gave the
same numbers to the last digit."""


def trainer(tmp_path: Path, **fields: Any) -> Trainer:
    args = args_from_dict(load_yaml("ppo") | SMALL | fields | {"run_dir": str(tmp_path / "run")})
    return Trainer(args, resume=False)


def trained(t: Trainer, updates: int = 2) -> dict[str, torch.Tensor]:
    """Imitation, a snapshot, then `updates` PPO updates: the model's weights after them."""
    args = t.args
    t.warm_start()
    t.snapshot()
    for u in range(updates):
        rollout = t.collector.collect(t.model, args.n_steps, args.gamma, args.gae_lambda)
        ppo_update(t.model, t.optimizer, rollout, args, args.seed + u)
    return {k: v.clone() for k, v in t.model.state_dict().items()}


def digest(state: dict[str, torch.Tensor]) -> list[float]:
    """Three numbers that move with any weight: the sum, the absolute sum and a fixed random
    projection (compared to a tolerance of 1e-4, so that the last bits in which CPUs' float
    kernels differ are no failure, while any change of what training does, which moves them
    by orders of magnitude more, is)."""
    v = torch.cat([state[k].double().flatten() for k in sorted(state)]).numpy()
    projection = np.random.default_rng(0).standard_normal(len(v))
    return [float(v.sum()), float(np.abs(v).sum()), float(v @ projection)]


@pytest.mark.parametrize("network", ["cards", "mlp"])
def test_the_obs_critic_trains_the_same_weights_as_before_the_field(tmp_path, network):
    weights = trained(trainer(tmp_path, network=network, critic="obs"))
    assert not any(k.startswith("table.") for k in weights)
    assert digest(weights) == pytest.approx(BEFORE[network], rel=1e-4, abs=1e-4)


@pytest.mark.parametrize("config", ["ppo", "ppo_long", "ppo_3p", "ppo_4p", "ppo_jokers_calls"])
def test_the_packaged_configs_and_a_config_without_the_field_are_the_obs_critic(config):
    fields = load_yaml(config)
    assert args_from_dict(fields).critic == "obs"
    assert args_from_dict({k: v for k, v in fields.items() if k != "critic"}).critic == "obs"


def position_and_twin(seed: int = 5) -> tuple[dict[str, Any], dict[str, Any]]:
    """A dealt position, and the same with a card of seat 1's hand swapped for one in the
    stock: seat 0 sees nothing of either, so its observation is the same."""
    d = Game.new(Rules(), seed=seed).to_dict()
    twin = json.loads(json.dumps(d))
    twin["hands"][1][0], twin["stock"][-1] = d["stock"][-1], d["hands"][1][0]
    return d, twin


def test_two_positions_seat_0_cannot_tell_apart_reach_the_critic_differently(tmp_path):
    d, twin = position_and_twin()
    env = Rummy500Env(episode="hand")
    views, hidden = [], []
    for position in (d, twin):
        env.reset(options={"position": position})
        views.append(env.observe("player_0")["observation"])
        assert env.game is not None
        hidden.append(hidden_hands(env.game, 0))
        assert np.array_equal(hidden[-1], env.state()[env.encoder.features_size :])
    assert np.array_equal(views[0], views[1])
    assert not np.array_equal(hidden[0], hidden[1])

    model = trainer(tmp_path, critic="full").model
    obs, seen = torch.as_tensor(np.stack(views)), torch.as_tensor(np.stack(hidden))
    with torch.no_grad():
        logits, values, own = model.heads(obs, seen)
    assert torch.equal(logits[0], logits[1]), "the actor reads only the observation"
    assert own is not None and torch.equal(own[0], own[1])
    assert values[0] != values[1], "the critic reads the hidden hands"


def test_hidden_hands_are_the_other_seats_in_turn_order_after_the_learner():
    rules = Rules(players=3)
    g = Game.new(rules, seed=2)
    for seat in range(3):
        rows = hidden_hands(g, seat).reshape(2, 52)
        for k, row in enumerate(rows, start=1):
            held = np.zeros(52, np.float32)
            held[g.hand((seat + k) % 3)] = 1.0
            assert np.array_equal(row, held), (seat, k)
    jokers = Rules(jokers=2)
    g = Game.new(jokers, seed=1)
    width = 53
    assert hidden_hands_size(jokers) == width
    row = hidden_hands(g, 1)
    assert row.shape == (width,)
    assert row.sum() == pytest.approx(
        sum(1 / jokers.deck_count if c < 52 else 1 / jokers.joker_count for c in g.hand(0))
    )


def test_the_collector_hands_the_critic_the_hidden_hands_of_each_decision(tmp_path):
    t = trainer(tmp_path, critic="full", bc_decisions=0)
    args = t.args
    pool, weights = opponent_pool(args, [])
    games = SelfPlayGames(args.game_rules(), 3, pool, weights, episode=args.episode, seed=4)
    collector = Collector(games, 0, hidden=True)
    first = torch.as_tensor(games.hidden_hands())
    rollout = collector.collect(t.model, 5, args.gamma, args.gae_lambda)
    assert rollout.hidden.shape == (5, 3, hidden_hands_size(args.game_rules()))
    assert torch.equal(rollout.hidden[0], first)
    with torch.no_grad():
        values = t.model.table(rollout.obs[0], rollout.hidden[0])
    assert torch.allclose(rollout.values[0], values), "GAE uses the table critic's values"
    games = SelfPlayGames(args.game_rules(), 3, pool, weights, episode=args.episode, seed=4)
    model = trainer(tmp_path / "obs", bc_decisions=0).model
    assert Collector(games, 0).collect(model, 2, 0.9, 0.9).hidden.shape == (2, 3, 0)


def test_the_full_critic_learns_beside_the_actor_which_stays_the_exported_network(tmp_path):
    for network in ("cards", "mlp"):
        t = trainer(tmp_path / network, critic="full", network=network)
        before = {k: v.clone() for k, v in t.model.state_dict().items()}
        after = trained(t, updates=1)
        assert not torch.equal(before["table.net.0.0.weight"], after["table.net.0.0.weight"])
        actor = build_network(t.args.game_rules(), t.args.network_spec())
        assert set(t.model.actor.state_dict()) == set(actor.state_dict())
        if network == "cards":  # its own value head learns alongside, for psearch's leaf
            k = "actor.value_head.weight"
            assert not torch.equal(before[k], after[k])
        else:  # the flat actor's critic is the table critic alone
            assert t.model.critic is None


RUN = [
    "--rules", "standard,target=100", "--n-games", "4", "--n-steps", "16",
    "--minibatch-size", "64", "--checkpoint-every", "64", "--snapshot-every", "64",
    "--eval-every", "100000", "--eval-games", "1", "--final-eval-games", "1",
    "--eval-bots", "random", "--channels", "4", "--blocks", "1", "--hidden", "8",
    "--net-arch", "16", "--threads", "1", "--bc-decisions", "50", "--bc-epochs", "1",
    "--no-progress", "--critic", "full",
]  # fmt: skip


def test_a_full_critic_run_with_two_collectors_exports_a_playable_policy_and_resumes(tmp_path):
    from rummy500_env.agents import GreedyAgent
    from rummy500_env.training.arena import play

    run = tmp_path / "run"
    argv = [*RUN, "--collect-workers", "2", "--run-dir", str(run)]
    assert main([*argv, "--total-timesteps", "128"]) == 0
    agent = PolicyAgent.load(run / "policy.pt")
    assert agent.metadata["network"] == {"kind": "cards", "channels": 4, "blocks": 1, "hidden": 8}
    rules = Rules.parse("standard,target=100")
    actor = build_network(rules, agent.metadata["network"])
    assert set(agent.network.state_dict()) == set(actor.state_dict())
    result = play([agent, GreedyAgent()], rules, seed=1, episode="hand")
    assert len(result.hand_scores) == 1

    checkpoint = sorted((run / "checkpoints").glob("step_*.pt"))[-1]
    blob = torch.load(checkpoint, weights_only=True)
    assert any(k.startswith("table.") for k in blob["model"])
    model = new_model(parse_args(["--resume", str(run)])[0])
    assert set(blob["model"]) == set(model.state_dict())
    assert len(blob["optimizer"]["state"]) == len(list(model.parameters())), "every moment"

    with pytest.raises(ConfigError, match=r"critic='obs' given, critic='full' in the run"):
        parse_args(["--resume", str(run), "--critic", "obs"])
    assert main(["--resume", str(run), "--total-timesteps", "192", "--collect-workers", "1"]) == 0
    assert json.loads((run / "state.json").read_text())["timesteps"] == 192


def test_bad_critic_values_and_exit_with_a_full_critic_are_clear_errors():
    with pytest.raises(ConfigError, match=r"critic='oracle' is not allowed: use one of"):
        parse_args(["--critic", "oracle"])
    from rummy500_env.training.exit import parse_args as exit_args

    with pytest.raises(ConfigError, match=r"critic='full' is not allowed: expert iteration"):
        exit_args(["--critic", "full"])


def test_the_curves_script_tables_and_draws_each_runs_evaluations(tmp_path, capsys, monkeypatch):
    import importlib.util
    import sys

    root = Path(__file__).resolve().parents[1]
    spec = importlib.util.spec_from_file_location("curves", root / "benchmarks/critic_curves.py")
    assert spec is not None and spec.loader is not None
    curves = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(curves)
    runs = []
    for critic, seed, rates in (("obs", 0, (0.2, 0.5)), ("full", 0, (0.3, 0.75))):
        run = tmp_path / f"{critic}{seed}"
        run.mkdir()
        (run / "config.json").write_text(json.dumps({"critic": critic, "seed": seed}))
        (run / "state.json").write_text(json.dumps({"wall_s": 61.0}))
        rows = ["timesteps,win_rate_vs_expert"] + [
            f"{s},{r}" for s, r in zip((100, 200), rates, strict=True)
        ]
        (run / "evaluations.csv").write_text("\n".join(rows) + "\n")
        runs.append(str(run))
    out = tmp_path / "curves.png"
    monkeypatch.setattr(sys, "argv", ["critic_curves.py", *runs, "--out", str(out)])
    curves.main()
    printed = capsys.readouterr().out
    assert "| full | 0 | 61 s | 30.0% | 75.0% |" in printed
    assert "| obs | 0 | 61 s | 20.0% | 50.0% |" in printed
    assert out.stat().st_size > 1000
