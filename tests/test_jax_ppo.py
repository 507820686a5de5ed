"""training.jax_ppo: its pieces against their torch and textbook references, and a run that
trains, exports a policy the package plays, and resumes exactly."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch

pytest.importorskip("jax")
import jax
import jax.numpy as jnp

from rummy500_env.agents.networks import build_network
from rummy500_env.agents.policy import PolicyAgent
from rummy500_env.agents.shipped import policy_path
from rummy500_env.engine.rules import Rules
from rummy500_env.jax.network import params_from_arrays
from rummy500_env.training import jax_ppo
from rummy500_env.training.model import ADAM_EPS, ppo_loss
from rummy500_env.training.settings import ConfigError, load_yaml
from tests.helpers import untrained_policy

SPEC = {"kind": "cards", "channels": 8, "blocks": 1, "hidden": 16}


def reference_advantages(mine, reward, done, value, bootstrap, gamma, lam):
    """GAE written the long way: per game, list the learner's decisions with the rewards that
    follow each up to the next decision (within its episode), then the textbook recursion."""
    steps, games = mine.shape
    adv = np.zeros((steps, games))
    for g in range(games):
        decisions = []  # [step, value, reward, ended]
        open_episode = False
        for t in range(steps):
            if mine[t, g]:
                decisions.append([t, value[t, g], reward[t, g], bool(done[t, g])])
                open_episode = not done[t, g]
            elif open_episode:
                decisions[-1][2] += reward[t, g]
                if done[t, g]:
                    decisions[-1][3] = True
                    open_episode = False
        following_value, following_adv = bootstrap[g], 0.0
        for t, v, r, ended in reversed(decisions):
            alive = 0.0 if ended else 1.0
            delta = r + gamma * following_value * alive - v
            following_adv = delta + gamma * lam * alive * following_adv
            following_value = v
            adv[t, g] = following_adv
    return adv


@pytest.mark.parametrize("seed", range(5))
def test_advantages_skip_the_other_seats_steps_as_the_long_way_does(seed):
    gen = np.random.default_rng(seed)
    steps, games = 40, 6
    mine = gen.random((steps, games)) < 0.45
    done = gen.random((steps, games)) < 0.12
    reward = np.where(gen.random((steps, games)) < 0.3, gen.normal(size=(steps, games)), 0.0)
    value = gen.normal(size=(steps, games))
    bootstrap = gen.normal(size=games)
    traj = jax_ppo.Trajectory(
        *(None,) * 4,
        mine=jnp.asarray(mine),
        reward=jnp.asarray(reward, jnp.float32),
        done=jnp.asarray(done),
        finished_return=None,
        value=jnp.asarray(value, jnp.float32),
    )
    adv, ret = jax_ppo.advantages(traj, jnp.asarray(bootstrap, jnp.float32), 0.99, 0.9)
    expected = reference_advantages(mine, reward, done, value, bootstrap, 0.99, 0.9)
    np.testing.assert_allclose(np.asarray(adv), expected, atol=1e-5)
    np.testing.assert_allclose(np.asarray(ret), np.where(mine, expected + value, 0.0), atol=1e-5)
    assert mine.sum() > 0 and (np.asarray(adv)[~mine] == 0).all()


def torch_actor(rules: Rules, seed: int = 0) -> torch.nn.Module:
    torch.manual_seed(seed)
    actor = build_network(rules, SPEC)
    with torch.no_grad():
        for p in actor.parameters():
            p.add_(0.05 * torch.randn_like(p))  # the zero-initialised biases too
    return actor


def test_adam_and_the_norm_clip_are_torch_s():
    rules = Rules.parse("standard")
    actor = torch_actor(rules)
    network = jax_ppo.CardNetwork.for_rules(rules, 8, 1, 16)
    params = jax_ppo.params_from_arrays(
        {k: v.detach().numpy() for k, v in actor.state_dict().items()}, network
    )
    opt = jax_ppo.adam_init(params)
    torch_opt = torch.optim.Adam(actor.parameters(), lr=0.01, eps=ADAM_EPS)
    gen = np.random.default_rng(0)
    names = [name for name, _ in actor.named_parameters()]
    for _ in range(4):
        grads = {k: gen.normal(size=params[k].shape).astype(np.float32) for k in names}
        clipped, norm = jax_ppo.clip_by_norm({k: jnp.asarray(g) for k, g in grads.items()}, 0.5)
        for name, p in actor.named_parameters():
            p.grad = torch.from_numpy(grads[name].copy())
        torch_norm = torch.nn.utils.clip_grad_norm_(actor.parameters(), 0.5)
        assert float(norm) == pytest.approx(float(torch_norm), rel=1e-5)
        params, opt = jax_ppo.adam_step(params, opt, clipped, jnp.float32(0.01))
        torch_opt.step()
    for name, p in actor.named_parameters():
        np.testing.assert_allclose(np.asarray(params[name]), p.detach().numpy(), atol=2e-6)


def test_the_loss_is_training_ppo_s_loss():
    rules = Rules.parse("standard")
    env = jax_ppo.make(rules, "hand")
    actor = torch_actor(rules)
    network = jax_ppo.CardNetwork.for_rules(rules, 8, 1, 16)
    params = jax_ppo.params_from_arrays(
        {k: v.detach().numpy() for k, v in actor.state_dict().items()}, network
    )
    state = jax.vmap(env.init)(jax.random.split(jax.random.PRNGKey(3), 32))
    gen = np.random.default_rng(1)
    mask = np.array(state.legal_action_mask)
    action = np.array([gen.choice(np.flatnonzero(row)) for row in mask])
    batch = {
        "obs": state.observation,
        "mask": state.legal_action_mask,
        "action": jnp.asarray(action),
        "logp": jnp.asarray(gen.normal(-2, 0.3, 32), jnp.float32),
        "adv": jnp.asarray(gen.normal(size=32), jnp.float32),
        "ret": jnp.asarray(gen.normal(size=32), jnp.float32),
    }
    plan = jax_ppo.Plan(network, env, 32, 1, (0, 32, 0), (), 32, 1, 0.99, 0.95, 0.2, 0.01, 0.5, 0.5)
    loss, stats = jax_ppo.ppo_loss(plan, params, batch, jnp.ones(32, bool))
    obs = torch.from_numpy(np.array(state.observation))
    with torch.no_grad():
        logits, values = actor.forward_with_value(obs)
    mb = {
        "masks": torch.from_numpy(mask),
        "actions": torch.from_numpy(action),
        "logprobs": torch.from_numpy(np.array(batch["logp"])),
        "advantages": torch.from_numpy(np.array(batch["adv"])),
        "returns": torch.from_numpy(np.array(batch["ret"])),
    }
    expected = ppo_loss(logits, values, mb, 0.2, 0.5, 0.01)
    assert float(loss) == pytest.approx(float(expected["loss"]), abs=1e-4)
    for name in ("policy", "value", "entropy"):
        assert float(stats[name]) == pytest.approx(float(expected[name]), abs=1e-4)
    # rows left out of the weight change nothing
    half = jnp.arange(32) < 16
    padded = {k: v.at[16:].set(v[:16]) for k, v in batch.items()}
    first = {k: v[:16] for k, v in batch.items()}
    plan16 = plan._replace(minibatch_size=16)
    np.testing.assert_allclose(
        float(jax_ppo.ppo_loss(plan, params, padded, half)[0]),
        float(jax_ppo.ppo_loss(plan16, params, first, jnp.ones(16, bool))[0]),
        rtol=1e-5,
    )


def test_opponent_blocks_split_the_games_by_weight():
    assert jax_ppo.opponent_blocks({"random": 0.1, "greedy": 0.6, "self": 0.3}, 128) == (38, 77, 13)
    assert jax_ppo.opponent_blocks({"greedy": 1.0}, 5) == (0, 5, 0)
    assert sum(jax_ppo.opponent_blocks({"self": 1, "greedy": 1, "random": 1}, 7)) == 7


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        ({"opponents": {"expert": 0.5, "self": 0.5}}, "'expert' cannot play inside the JAX"),
        ({"rules": "standard,jokers=2"}, "the JAX engine does not play jokers=2"),
        ({"rules": "standard,players=5"}, "training.ppo"),
        ({"n_games": 2, "minibatch_size": 64}, "give every opponent with a weight at least one"),
        ({"minibatch_size": 0}, "minibatch_size=0 is not allowed"),
        ({"n_games": 30_000_000}, "n_games=30000000 x n_steps=64 is a rollout of at least"),
    ],
)
def test_settings_it_cannot_train_are_clear_errors(fields, words, tmp_path):
    base = load_yaml("jax_ppo") | {"run_dir": str(tmp_path / "run")}
    with pytest.raises(ConfigError, match=re.escape(words)):
        jax_ppo.args_from_dict(base | fields).validate()


TINY = {
    "n_games": 12,
    "n_steps": 12,
    "minibatch_size": 32,
    "n_epochs": 2,
    "channels": 8,
    "blocks": 1,
    "hidden": 16,
    "snapshot_every": 100,
    "checkpoint_every": 100,
    "eval_every": 10**9,
    "final_eval_games": 2,
    "eval_bots": ["greedy"],
    "progress": False,
}


def run_args(run, total, tiny=TINY):
    fields = load_yaml("jax_ppo") | tiny
    args = jax_ppo.args_from_dict(fields | {"run_dir": str(run), "total_timesteps": total})
    args.validate()
    return args


def test_a_run_trains_exports_a_policy_the_package_plays_and_resumes_exactly(tmp_path):
    straight = jax_ppo.train(run_args(tmp_path / "straight", 400))
    # the same run, stopped after its first checkpoint and resumed to the same total
    jax_ppo.train(run_args(tmp_path / "halves", 150))
    resumed = jax_ppo.train(run_args(tmp_path / "halves", 400), resume=True)

    agent = PolicyAgent.load(straight, rules="standard")
    meta = agent.metadata
    assert meta["training"]["trainer"] == "jax_ppo" and meta["network"] == SPEC
    assert meta["training"]["timesteps"] >= 400
    assert meta["evaluation"]["results"]["greedy"]["games"] == 2
    again = PolicyAgent.load(resumed, rules="standard")
    for name, weight in agent.network.state_dict().items():
        assert torch.equal(weight, again.network.state_dict()[name]), name
    assert len(list((tmp_path / "halves" / "snapshots").iterdir())) >= 3
    for checkpoint in (tmp_path / "straight" / "checkpoints").iterdir():
        assert {p.name for p in checkpoint.iterdir()} == {"weights.pt", "games.npz"}


def test_a_resume_skips_a_damaged_checkpoint_and_refuses_one_of_another_size(tmp_path, capsys):
    jax_ppo.train(run_args(tmp_path / "run", 150))
    older, newest = sorted((tmp_path / "run" / "checkpoints").iterdir())[-2:]
    weights = newest / "weights.pt"
    weights.write_bytes(weights.read_bytes()[:1000])  # cut short, as by a full disk
    trainer = jax_ppo.Trainer(run_args(tmp_path / "run", 300), resume=True)
    assert trainer.state["checkpoint"] == older.name
    assert f"skipping unreadable checkpoint {newest.name}" in capsys.readouterr().err
    trainer.run.writer.close()

    args = run_args(tmp_path / "run", 300)
    args.n_games = 16
    with pytest.raises(ConfigError, match="holds 12 games but the run plays 16"):
        jax_ppo.Trainer(args, resume=True)


def test_a_policy_opponent_plays_its_files_most_likely_action_in_the_rollout(tmp_path):
    """The files' seats play what `PolicyAgent` (the file's agent spec) plays, whatever the
    file's network size: the shipped model ("model") and a small file, beside greedy."""
    torch.manual_seed(1)
    small = untrained_policy(tmp_path / "small.pt", SPEC)
    fields = load_yaml("jax_ppo") | TINY | {"run_dir": str(tmp_path / "run")}
    args = jax_ppo.args_from_dict(fields | {"opponents": {"model": 1, small: 1, "greedy": 1}})
    args.validate()
    assert list(args.opponents) == ["standard", small, "greedy"]  # "model" resolved
    assert set(args.file_digests) == {str(policy_path("standard")), small}
    plan = jax_ppo.plan_of(args)
    assert plan.blocks == (0, 4, 4, 4, 0)
    fixed = tuple(weights for _, weights in args.policy_opponents().values())
    params = params_from_arrays(
        {k: v.numpy() for k, v in build_network(Rules(), SPEC).state_dict().items()}, plan.network
    )
    games = jax_ppo.new_games(plan, jax.random.PRNGKey(3))
    _, t, _ = jax.jit(jax_ppo.collect, static_argnums=0)(
        plan, params, (params, *fixed), games, jax.random.PRNGKey(4)
    )
    theirs = ~np.asarray(t.mine)
    for block, spec in ((slice(0, 4), "standard"), (slice(4, 8), small)):
        agent = PolicyAgent.load(policy_path(spec), rules="standard")
        rows = theirs[:, block]
        obs = np.asarray(t.obs[:, block])[rows]  # the feature part, all the network reads
        obs = np.pad(obs, ((0, 0), (0, agent.observation_size - obs.shape[1])))
        mask = np.asarray(t.mask[:, block])[rows]
        assert len(obs) > 5
        played = np.asarray(t.action[:, block])[rows]
        with torch.no_grad():
            logits = agent.network(torch.as_tensor(obs)).masked_fill(~torch.as_tensor(mask), -1e9)
        best = logits.max(1).values.numpy()
        chosen = logits.numpy()[np.arange(len(played)), played]
        np.testing.assert_allclose(chosen, best, atol=1e-4)  # its most likely (a tie: either)
        assert (played == agent.act_batch(obs, mask)).mean() > 0.9


@pytest.mark.filterwarnings("ignore:the 'mlp' network is deprecated:FutureWarning")
def test_a_policy_opponent_it_cannot_run_is_refused_before_any_work(tmp_path):
    mlp = untrained_policy(
        tmp_path / "mlp.pt", {"kind": "mlp", "net_arch": [16], "activation": "relu"}
    )
    three = untrained_policy(tmp_path / "three.pt", SPEC, Rules(players=3))
    base = load_yaml("jax_ppo") | {"run_dir": str(tmp_path / "run")}
    for pool, words in (
        ({mlp: 1.0}, "has a 'mlp' network; the JAX engine runs the card network only"),
        ({three: 1.0}, "was trained for other rules"),
        ({"nosuch.pt": 1.0}, "opponents={'nosuch.pt': 1.0} is not allowed"),
        ({"psearch:200ms": 1.0}, "'psearch:200ms' cannot play inside the JAX rollout"),
    ):
        with pytest.raises(ConfigError, match=re.escape(words)):
            jax_ppo.args_from_dict(base | {"opponents": pool}).validate()


def test_a_resume_against_a_policy_file_changed_since_is_refused(tmp_path):
    opponent = tmp_path / "opponent.pt"
    torch.manual_seed(1)
    untrained_policy(opponent, SPEC)
    run = tmp_path / "run"
    fields = TINY | {"opponents": {str(opponent): 0.5, "self": 0.5}}
    jax_ppo.Trainer(run_args(run, 100, fields), resume=False).run.writer.close()  # started
    argv = ["--resume", str(run), "--total-timesteps", "200"]
    assert jax_ppo.parse_args(argv)[1]  # unchanged: resumes
    torch.manual_seed(2)
    untrained_policy(opponent, SPEC)  # the same network, other weights
    with pytest.raises(ConfigError, match=r"opponent\.pt' changed since the run started"):
        jax_ppo.parse_args(argv)
