"""training.rllib: self-play PPO on Ray RLlib, exported to the package's policy file.

The configuration, the opponent draw and the missing-Ray error are plain Python and run
everywhere. The rest needs the ``rllib`` extra and is skipped without it (the test extra
does not install Ray): one local Ray instance serves a short training run (a remote env
runner, so the env factory and the modules really cross process boundaries), its export
loaded by `PolicyAgent` with torch alone and played, a resume, the snapshot copy, and
``training.evaluate --ray`` against the local pool; for the card network (`CardActorCritic`)
its one-pass values, a short run's export (the learner's weights, as `training.ppo`'s file
holds them) and the refusal to resume a run of another network.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from rummy500_env.training import rllib
from rummy500_env.training.settings import ConfigError

pytestmark = pytest.mark.slow  # the whole module: see docs/contributing.md

TINY = [
    "--train-batch-size",
    "400",
    "--batch-size",
    "128",
    "--n-epochs",
    "1",
    "--net-arch",
    "32",
    "32",
    "--snapshot-every",
    "400",
    "--checkpoint-every",
    "400",
    "--eval-every",
    "1000000",
    "--final-eval-games",
    "2",
    "--eval-bots",
    "greedy",
    "--num-cpus",
    "2",
]


# --- plain Python: no Ray needed


def test_packaged_config_is_valid_and_flags_override_it():
    args, resuming = rllib.parse_args(["--num-env-runners", "3", "--opponents.self", "0.5"])
    assert not resuming
    assert args.network_spec() == {"kind": "cards", "channels": 32, "blocks": 2, "hidden": 128}
    assert args.num_env_runners == 3
    assert args.opponents["self"] == 0.5
    assert args.address is None  # local Ray unless a cluster is named


@pytest.mark.parametrize(
    "flags, field",
    [
        (["--num-env-runners", "-1"], "num_env_runners"),
        (["--batch-size", "9000"], "batch_size"),
        (["--opponents.greedy", "-1"], "opponents"),
        (["--rules", "martian"], "rules"),
        (["--activation", "sigmoid"], "activation"),
        (["--sample-timeout-s", "0"], "sample_timeout_s"),
        (["--network", "conv"], "network"),
        (["--channels", "0"], "channels"),
        (["--max-grad-norm", "0"], "max_grad_norm"),
    ],
)
def test_bad_values_name_the_field(flags, field):
    with pytest.raises(ConfigError, match=field):
        rllib.parse_args(flags)


@pytest.mark.parametrize(
    "fields",
    [
        {"network": "cards", "channels": 8, "blocks": 1, "hidden": 16},
        {"network": "mlp", "net_arch": (32, 16), "activation": "relu"},
    ],
)
def test_network_metadata_is_training_ppos(fields):
    """The same network fields describe the same network in both trainers' policy files."""
    from rummy500_env.training import ppo

    assert rllib.Args(**fields).network_spec() == ppo.Args(**fields).network_spec()


def test_the_card_network_is_the_default_of_any_config_but_an_older_runs(tmp_path):
    """training.rllib defaults to the card network, as training.ppo does: a config file that
    names no network trains it. Only a run's config.json from before the card network means
    the mlp (the next test)."""
    from rummy500_env.training import ppo

    assert rllib.Args().network_spec() == ppo.Args().network_spec()
    config = tmp_path / "config.yaml"
    config.write_text("total_timesteps: 1000\n")
    args, _ = rllib.parse_args(["--config", str(config)])
    assert args.network_spec() == {"kind": "cards", "channels": 32, "blocks": 2, "hidden": 128}


def test_an_older_runs_config_without_network_resumes_its_mlp(tmp_path):
    """A run's config.json from before the card network names none: it is the mlp it was,
    and its checkpoints' counters (no ``network`` either) pass the check; a card network
    asked of such a run is refused."""
    (tmp_path / "config.json").write_text(json.dumps({"net_arch": [32, 32]}))
    (tmp_path / "checkpoints" / "step_0000000400").mkdir(parents=True)
    args, resuming = rllib.parse_args(["--resume", str(tmp_path)])
    assert resuming and args.network == "mlp"
    rllib.check_network({"timesteps": 400}, args, tmp_path)
    with pytest.raises(ConfigError, match="network='cards' given, network='mlp' in the run"):
        rllib.parse_args(["--resume", str(tmp_path), "--network", "cards"])
    args = rllib.Args(network="cards")  # counters without a network entry are an mlp's
    with pytest.raises(ConfigError, match=r"holds network \{'kind': 'mlp'\}.*'kind': 'cards'"):
        rllib.check_network({"timesteps": 400}, args, tmp_path)


def test_unknown_yaml_field_lists_the_known_ones(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("num_rollout_workers: 4\n")
    with pytest.raises(ConfigError, match=r"unknown config field.*num_rollout_workers"):
        rllib.parse_args(["--config", str(bad)])


def test_pool_splits_the_self_weight_over_the_snapshots():
    args = rllib.Args(opponents={"greedy": 0.4, "search:20ms": 0.0, "self": 0.6}, max_snapshots=3)
    pool = rllib.opponent_pool(args)
    assert pool == {
        "bot_greedy": ("greedy", 0.4),
        "snapshot_0": (None, pytest.approx(0.2)),
        "snapshot_1": (None, pytest.approx(0.2)),
        "snapshot_2": (None, pytest.approx(0.2)),
    }
    assert rllib.bot_module_id("search:20ms") == "bot_search_20ms"  # a safe folder name


class Episode:
    def __init__(self, id_: str) -> None:
        self.id_ = id_


def test_mapping_gives_each_episode_one_learner_seat_and_one_opponent():
    """RLlib asks per agent; the answers of one episode must agree, across episodes the
    learner must sit in every seat and meet the opponents by weight."""
    mapping = rllib.PoolMapping(3, ["bot_greedy", "snapshot_0"], [0.75, 0.25])
    seats: Counter[int] = Counter()
    opponents: Counter[str] = Counter()
    for k in range(2000):
        episode = Episode(f"episode-{k}")
        modules = [mapping(f"player_{s}", episode) for s in range(3)]
        assert modules.count(rllib.LEARNER) == 1
        others = {m for m in modules if m != rllib.LEARNER}
        assert len(others) == 1
        seats[modules.index(rllib.LEARNER)] += 1
        opponents[others.pop()] += 1
        assert modules == [mapping(f"player_{s}", episode) for s in range(3)]  # asked again
    assert all(550 < seats[s] < 780 for s in range(3)), seats
    assert 0.70 < opponents["bot_greedy"] / 2000 < 0.80, opponents


def test_local_ray_keeps_a_cpu_for_the_evaluations():
    """Env runners reserve their CPUs for as long as they live; evaluation games are Ray tasks
    that need one more, or they would wait for ever."""
    assert rllib.local_cpus(rllib.Args(num_cpus=2, num_env_runners=1)) == 2
    assert rllib.local_cpus(rllib.Args(num_cpus=2, num_env_runners=2)) == 3
    assert rllib.local_cpus(rllib.Args(num_cpus=2, num_env_runners=2, num_learners=2)) == 5


def test_without_ray_it_says_which_extra_to_install(monkeypatch):
    monkeypatch.setattr(rllib, "RAY_MISSING", ModuleNotFoundError("No module named 'ray'"))
    with pytest.raises(
        rllib.RayMissingError, match=r'pip install torch==2\.13\.0 -e "\.\[rllib\]"'
    ):
        rllib.require_ray()
    assert rllib.main(["--total-timesteps", "10"]) == 2


# --- on a local Ray instance (the rllib extra)


@pytest.fixture(scope="module")
def ray_instance():
    """One local Ray instance for the module's tests (training joins it and leaves it up)."""
    if rllib.RAY_MISSING is not None:
        pytest.skip(f"Ray RLlib is not installed (the rllib extra): {rllib.RAY_MISSING}")
    import ray

    ray.init(num_cpus=2, include_dashboard=False, object_store_memory=256 * 2**20)
    yield ray
    ray.shutdown()


def test_trains_exports_resumes_and_the_file_plays_without_ray(ray_instance, tmp_path):
    from rummy500_env.agents.policy import PolicyAgent, load_policy_file
    from rummy500_env.evaluation.arena import play
    from rummy500_env.evaluation.evaluate import main as evaluate_main

    run = tmp_path / "run"
    flags = [*TINY, "--network", "mlp", "--num-env-runners", "1", "--run-dir", str(run)]
    assert rllib.main([*flags, "--total-timesteps", "800"]) == 0

    state = json.loads((run / "state.json").read_text())
    assert state["timesteps"] >= 800 and state["iterations"] == 2
    checkpoints = sorted(p.name for p in (run / "checkpoints").iterdir())
    assert checkpoints[-1] == state["checkpoint"] == f"step_{state['timesteps']:010d}"
    assert len(checkpoints) <= 3  # keep_checkpoints
    assert any((run / "tb").iterdir())
    policy = PolicyAgent.load(run / "policy.pt")
    meta = policy.metadata
    assert meta["training"]["trainer"] == "rllib"
    assert meta["network"] == {"kind": "mlp", "net_arch": [32, 32], "activation": "tanh"}
    assert set(meta["evaluation"]["results"]) == {"greedy"}
    from rummy500_env.agents import GreedyAgent
    from rummy500_env.engine.rules import Rules

    result = play([policy, GreedyAgent(Rules.preset("standard"))], "standard", seed=3)
    assert result.hand_scores
    out = tmp_path / "eval"
    args = [str(run / "policy.pt"), "random", "--games", "2", "--workers", "1", "--out", str(out)]
    assert evaluate_main(args) == 0

    # Resuming to the same total trains nothing more: the restored learner is the saved one.
    before = load_policy_file(run / "policy.pt")["state_dict"]
    assert rllib.main(["--resume", str(run), "--total-timesteps", "800"]) == 0
    after = load_policy_file(run / "policy.pt")["state_dict"]
    assert all((before[k] == after[k]).all() for k in before)
    # ... and a larger total trains on from the checkpoint, with no env runner this time.
    assert (
        rllib.main(["--resume", str(run), "--total-timesteps", "1200", "--num-env-runners", "0"])
        == 0
    )
    resumed = json.loads((run / "state.json").read_text())
    assert resumed["timesteps"] >= 1200 and resumed["iterations"] == 3


def test_a_run_folder_is_not_overwritten(ray_instance, tmp_path):
    run = tmp_path / "run"
    (run / "checkpoints" / "step_0000000400").mkdir(parents=True)
    assert rllib.main([*TINY, "--run-dir", str(run), "--total-timesteps", "400"]) == 2


def test_snapshot_copies_the_learner_to_the_env_runners(ray_instance):
    import torch

    args = rllib.Args(
        num_env_runners=1,
        train_batch_size=200,
        batch_size=100,
        n_epochs=1,
        network="mlp",  # its module's actor is `pi`
        net_arch=(16,),
    )
    rllib.start_ray(args)
    algo = rllib.build_config(args).build_algo()
    try:
        algo.train()  # the learner moves away from its initial weights
        state = {"next_snapshot": 0, "snapshots": {}, "timesteps": 200}
        assert rllib.take_snapshot(algo, state, args) == "snapshot_0"
        learner = rllib.learner_weights(algo)
        frozen = algo.get_module("snapshot_0").pi.state_dict()  # the copy that samples
        for key, value in frozen.items():
            assert torch.equal(value, torch.as_tensor(learner[f"pi.{key}"])), key
        other = algo.get_module("snapshot_1").pi.state_dict()  # still untrained
        assert not all(torch.equal(other[k], frozen[k]) for k in frozen)
        assert state == {"next_snapshot": 1, "snapshots": {"snapshot_0": 200}, "timesteps": 200}
    finally:
        algo.stop()


CARDS = ["--network", "cards", "--channels", "8", "--blocks", "1", "--hidden", "16"]


def sample_batched(seed: int, steps: int = 240):
    """Episodes of a batched env runner (4 envs, in the driver), and the batch sizes the
    learner's network was asked for."""
    args = rllib.Args(
        network="cards",
        channels=8,
        blocks=1,
        hidden=16,
        num_env_runners=0,
        num_envs_per_env_runner=4,
        opponents={"greedy": 0.5, "self": 0.5},
        max_snapshots=1,
        seed=seed,
    )
    rllib.start_ray(args)
    algo = rllib.build_config(args).build_algo()
    sizes: list[int] = []
    try:
        net = algo.env_runner.module[rllib.LEARNER].net
        net.register_forward_hook(lambda _m, inputs, _o: sizes.append(len(inputs[0])))
        episodes = algo.env_runner.sample(num_timesteps=steps, random_actions=False)
    finally:
        algo.stop()
    return episodes, sizes


def test_batched_runner_asks_once_per_step_plays_legal_actions_and_replays(ray_instance):
    """A runner of 4 envs asks the learner's network for all of its positions of a step at
    once (batches of more than one); every action of every seat is legal in its position;
    the same seed replays the same episodes (ids, seats, opponents, actions), which needs
    `SeededEpisodes` (RLlib's episode ids, from which the seats are drawn, are random)."""
    import numpy as np

    episodes, sizes = sample_batched(seed=3)
    assert max(sizes) > 1 and sum(sizes) > len(sizes)
    played = []
    for episode in episodes:
        for agent, sa in sorted(episode.agent_episodes.items()):
            actions = np.asarray(sa.get_actions())
            masks = np.asarray(sa.get_observations()["action_mask"])[: len(actions)]
            assert (masks[np.arange(len(actions)), actions] == 1).all(), (agent, sa.module_id)
            played.append((episode.id_, agent, sa.module_id, actions.tolist()))
    assert {m for _, _, m, _ in played} >= {rllib.LEARNER}
    assert len({m for _, _, m, _ in played}) > 1  # and opponents
    again, _ = sample_batched(seed=3)
    replayed = [
        (e.id_, agent, sa.module_id, np.asarray(sa.get_actions()).tolist())
        for e in again
        for agent, sa in sorted(e.agent_episodes.items())
    ]
    assert replayed == played


def card_module():
    """The card RLModule as RLlib builds it, and a batch of env observations with their
    masks (positions of both seats, drawing and discarding)."""
    import numpy as np
    import torch

    import rummy500_env

    args = rllib.Args(network="cards", channels=8, blocks=1, hidden=16)
    env = rummy500_env.raw_env(rules=args.game_rules())
    module = rllib.CardActorCritic(
        observation_space=env.observation_space("player_0"),
        action_space=env.action_space("player_0"),
        model_config=rllib.module_config(args),
    )
    env.reset(seed=4)
    obs, masks = [], []
    for _ in range(12):
        o = env.observe(env.agent_selection)
        obs.append(o["observation"])
        masks.append(o["action_mask"])
        env.step(int(np.flatnonzero(o["action_mask"])[0]))
    observations = {"observation": np.array(obs), "action_mask": np.array(masks)}
    return module, {"obs": {k: torch.as_tensor(v) for k, v in observations.items()}}


def test_card_module_masks_and_reads_values_off_the_training_pass():
    """`_forward_train` gives the network's logits with the illegal ones at the lowest float,
    and its embeddings give `compute_values` the value head's values without another trunk
    pass (the same values as a whole pass); exploration samples only legal actions."""
    if rllib.RAY_MISSING is not None:
        pytest.skip(f"Ray RLlib is not installed (the rllib extra): {rllib.RAY_MISSING}")
    import torch
    from ray.rllib.core.columns import Columns

    module, batch = card_module()
    out = module.forward_train(batch)
    logits, values = module.net.forward_with_value(batch["obs"]["observation"])
    legal = batch["obs"]["action_mask"] == 1
    got = out[Columns.ACTION_DIST_INPUTS]
    assert torch.equal(got[legal], logits[legal])
    assert (got[~legal] == torch.finfo(got.dtype).min).all()
    assert out[Columns.EMBEDDINGS].shape == (len(logits), 16)  # the summary, hidden wide
    trunk_passes = []
    hook = module.net.blocks[0].register_forward_hook(lambda *_: trunk_passes.append(1))
    from_embeddings = module.compute_values(batch, embeddings=out[Columns.EMBEDDINGS])
    hook.remove()
    assert trunk_passes == []
    assert torch.allclose(from_embeddings, values)
    assert torch.allclose(module.compute_values(batch), values)  # without them: a whole pass
    explore = module.forward_exploration(batch)[Columns.ACTION_DIST_INPUTS]
    actions = torch.distributions.Categorical(logits=explore).sample()
    assert legal.gather(1, actions[:, None]).all()


def test_card_run_exports_the_learner_plays_and_refuses_another_network(
    ray_instance, tmp_path, capsys
):
    """A short card-network run, on a batched runner (4 envs) and the packaged learner: its
    policy file holds the learner module's weights (the card network with its
    value head, the keys of `training.ppo`'s file), the format `PolicyAgent.load` reads with
    torch alone, and plays a legal game; a snapshot copies it to the env runners; resuming the
    run as another network is refused, before anything is built and by each checkpoint."""
    import torch

    from rummy500_env.agents import GreedyAgent
    from rummy500_env.agents.policy import PolicyAgent
    from rummy500_env.engine.rules import Rules
    from rummy500_env.evaluation.arena import play
    from rummy500_env.evaluation.evaluate import main as evaluate_main
    from rummy500_env.training.model import new_model
    from rummy500_env.training.ppo import Args as PPOArgs
    from rummy500_env.training.run import RunFolder

    run = tmp_path / "run"
    flags = [*TINY, *CARDS, "--num-env-runners", "1", "--num-envs-per-env-runner", "4"]
    args, _ = rllib.parse_args([*flags, "--run-dir", str(run), "--total-timesteps", "400"])
    assert args.learner == "ppo"  # the packaged learner
    rllib.start_ray(args)
    folder = RunFolder(args, resume=False)
    algo = rllib.build_config(args).build_algo()
    try:
        path = rllib.learn(algo, args, folder, False, time.time())  # trains, exports
        policy = PolicyAgent.load(path)
        exported = policy.network.state_dict()
        learner = rllib.learner_weights(algo)
        assert set(learner) == {f"net.{k}" for k in exported}
        for key, value in exported.items():
            assert torch.equal(value, torch.as_tensor(learner[f"net.{key}"])), key
        state = json.loads((run / "state.json").read_text())
        slot = rllib.take_snapshot(algo, state, args)
        frozen = algo.get_module(slot).net.state_dict()  # the copy that samples
        assert all(torch.equal(frozen[k], exported[k]) for k in exported)
    finally:
        algo.stop()
        folder.writer.close()

    spec = {"kind": "cards", "channels": 8, "blocks": 1, "hidden": 16}
    assert policy.metadata["network"] == spec and policy.metadata["training"]["trainer"] == "rllib"
    assert state["network"] == spec and 0 < state["learner_steps"] < state["timesteps"]
    ppo_actor = new_model(PPOArgs(network="cards", channels=8, blocks=1, hidden=16)).actor
    assert exported.keys() == ppo_actor.state_dict().keys()
    result = play([policy, GreedyAgent(Rules.preset("standard"))], "standard", seed=3)
    assert result.hand_scores
    out = tmp_path / "eval"
    cli = [str(path), "random", "--games", "2", "--workers", "1", "--out", str(out)]
    assert evaluate_main(cli) == 0

    capsys.readouterr()
    assert rllib.main(["--resume", str(run), "--network", "mlp"]) == 2
    err = capsys.readouterr().err
    assert "network='mlp' given, network='cards' in the run" in err  # before building
    assert rllib.main(["--resume", str(run), "--channels", "16"]) == 2
    assert "channels=16 given" in capsys.readouterr().err
    with pytest.raises(ConfigError, match="holds network"):
        rllib.restore(None, run / "checkpoints" / state["checkpoint"], rllib.Args())


def load_parity():
    """benchmarks/ppo_loss_parity.py as a module (its fixed batch and the three losses)."""
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "ppo_loss_parity.py"
    spec = importlib.util.spec_from_file_location("ppo_loss_parity", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_packaged_learner_computes_training_ppos_loss_and_rllibs_does_not():
    """On one fixed batch (ratios beyond the clip, value errors beyond RLlib's vf_clip_param,
    the steps RLlib's GAE appends), `MatchedPPOLearner` gives training.ppo's total, policy
    and value loss and entropy with training.ppo's Adam eps; RLlib's own learner does not
    (its value loss and its advantages' standardisation differ). GAE at a termination and
    at a chunk's edge is the same in both."""
    if rllib.RAY_MISSING is not None:
        pytest.skip(f"Ray RLlib is not installed (the rllib extra): {rllib.RAY_MISSING}")
    parity = load_parity()
    args = rllib.Args(network="cards", channels=8, blocks=1, hidden=16, opponents={"greedy": 1})
    stock, matched = parity.learner("rllib", args), parity.learner("ppo", args)
    module = stock.module[rllib.LEARNER]
    matched.module[rllib.LEARNER].load_state_dict(module.state_dict())
    batch = parity.fixed_batch(module, 128, seed=0)
    batch["advantages"] = parity.rllib_standardised(batch["raw_advantages"])
    reference = parity.reference_loss(module.net.state_dict(), batch, args)
    ours, theirs = parity.rllib_loss(matched, batch), parity.rllib_loss(stock, batch)
    assert ours == pytest.approx(reference, rel=1e-5, abs=1e-6)
    assert theirs["value"] != pytest.approx(reference["value"], rel=1e-3)
    assert theirs["policy"] != pytest.approx(reference["policy"], abs=1e-4)
    assert theirs["entropy"] == pytest.approx(reference["entropy"], rel=1e-5)  # the same
    assert matched.get_optimizer(rllib.LEARNER).defaults["eps"] == 1e-5
    assert stock.get_optimizer(rllib.LEARNER).defaults["eps"] == 1e-8
    assert parity.gae_check(args.gamma, args.gae_lambda)["max_difference"] < 1e-5


@pytest.mark.parametrize("learner", ["ppo", "rllib"])
def test_learner_field_takes_ppo_and_rllib(learner):
    assert rllib.parse_args(["--learner", learner])[0].learner == learner


@pytest.mark.parametrize("learner", ["torch", "rllib+value", "rllib+value+eps", "ppo+eps", ""])
def test_learner_field_refuses_anything_else_and_lists_the_choices(learner):
    with pytest.raises(ConfigError, match="use one of \\('ppo', 'rllib'\\)"):
        rllib.parse_args(["--learner", learner])


def test_evaluate_on_ray_gives_the_local_pools_results(ray_instance):
    from rummy500_env.evaluation.tournament import Config, run

    local = run(Config(["greedy", "random", "expert"], games=4, workers=1, seed=5), progress=False)
    on_ray = run(
        Config(["greedy", "random", "expert"], games=4, workers=2, seed=5, ray=True),
        progress=False,
    )
    assert on_ray["games"] == local["games"]
    assert on_ray["pairs"] == local["pairs"]
    assert on_ray["elo"] == local["elo"]
    assert len(local["games"]) == 12


def test_policy_files_travel_with_the_ray_tasks(tmp_path):
    """A Ray worker on a node without the file plays the bytes that came with the task; the
    game is the one the file would have played where it lies."""
    from rummy500_env.agents.networks import build_network
    from rummy500_env.agents.policy_file import current_encoding, save_policy
    from rummy500_env.engine.rules import Rules
    from rummy500_env.evaluation.tournament import Config, play_chunk, play_task, tasks_for

    rules = Rules.preset("standard")
    enc = current_encoding(rules)
    network = {"kind": "mlp", "net_arch": [8], "activation": "tanh"}
    net = build_network(rules, network)
    here = tmp_path / "p.pt"
    save_policy(here, net, {"encoding": enc, "rules": rules.to_dict(), "network": network})
    elsewhere = str(tmp_path / "on-the-head-node" / "p.pt")  # no such file on this "worker"
    cfg = Config([elsewhere, "greedy"], games=2, episode="hand", workers=1)
    task = tasks_for(cfg)[0]
    played = play_chunk([(cfg, [elsewhere, "greedy"], task)], {elsewhere: here.read_bytes()})
    assert played == [play_task((cfg, [str(here), "greedy"], task))]


def test_evaluate_cli_refuses_address_without_ray():
    from rummy500_env.evaluation.evaluate import main as evaluate_main

    assert evaluate_main(["greedy", "random", "--address", "auto"]) == 2


def test_evaluate_ray_without_ray_installed_says_so(monkeypatch):
    import builtins

    from rummy500_env.evaluation import tournament

    real_import = builtins.__import__

    def no_ray(name, *args, **kwargs):
        if name == "ray":
            raise ModuleNotFoundError("No module named 'ray'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_ray)
    with pytest.raises(tournament.EvaluateError, match=r"--ray needs Ray"):
        tournament.run(tournament.Config(["greedy", "random"], games=2, ray=True), progress=False)


def test_the_entry_point_runs_from_a_checkout():
    """``python -m training.rllib --help`` works with or without Ray (it is tyro's help)."""
    root = Path(__file__).resolve().parents[1]
    out = subprocess.run(
        [sys.executable, "-m", "training.rllib", "--help"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert "--num-env-runners" in out.stdout and "--address" in out.stdout


class FakeAlgo:
    """An algorithm's checkpoint as RLlib writes one: a folder of its own files."""

    def __init__(self, weights: int) -> None:
        self.weights = weights

    def save_to_path(self, path: str) -> None:
        Path(path).mkdir()
        (Path(path) / "algorithm_state.pkl").write_text(str(self.weights))

    def restore_from_path(self, path: str) -> None:
        self.weights = int((Path(path) / "algorithm_state.pkl").read_text())


def test_checkpoint_folders_hold_the_counters_and_a_damaged_newest_falls_back(tmp_path, capsys):
    from rummy500_env.training.run import RunFolder

    args = rllib.Args(run_dir=str(tmp_path / "run"), keep_checkpoints=2)
    run = RunFolder(args, resume=False)
    for steps in (400, 800, 1200):
        state = {"timesteps": steps, "iterations": steps // 400}
        rllib.save_checkpoint(FakeAlgo(steps), run, state)
    run.writer.close()
    folders = sorted(p.name for p in (tmp_path / "run" / "checkpoints").iterdir())
    assert folders == ["step_0000000800", "step_0000001200"]

    algo = FakeAlgo(0)
    resumed = RunFolder(args, resume=True)
    newest = tmp_path / "run" / "checkpoints" / "step_0000001200"
    (newest / "algorithm_state.pkl").write_text("garbage")
    state = resumed.checkpoints.load(lambda path: rllib.restore(algo, path))
    assert (state["timesteps"], state["iterations"], algo.weights) == (800, 2, 800)
    assert state["checkpoint"] == "step_0000000800"
    assert "skipping unreadable checkpoint step_0000001200" in capsys.readouterr().err

    # A checkpoint written before checkpoints held their counters resumes with the run's
    # state.json when that names it (an old run's last checkpoint), and is unreadable if not.
    shutil.rmtree(newest)
    (tmp_path / "run" / "checkpoints" / "step_0000000800" / rllib.COUNTERS).unlink()
    with pytest.raises(ConfigError, match="every checkpoint is unreadable"):
        resumed.checkpoints.load(lambda path: rllib.restore(algo, path))
    old = {"timesteps": 800, "iterations": 2, "checkpoint": "step_0000000800", "wall_s": 9.0}
    (tmp_path / "run" / "state.json").write_text(json.dumps(old))
    state = resumed.checkpoints.load(lambda path: rllib.restore(algo, path))
    assert state == old and algo.weights == 800
    resumed.writer.close()
