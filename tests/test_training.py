"""training.ppo end to end with a tiny budget: train, checkpoint, SIGKILL, resume, export,
load (without stable_baselines3), play; and the errors for bad configs, checkpoints and policy
files."""

from __future__ import annotations

import csv
import json
import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

pytest.importorskip("tyro")

import torch

from rummy500_env.agents.policy import PolicyAgent, PolicyLoadError
from rummy500_env.training.ppo import main, parse_args
from rummy500_env.training.settings import ConfigError
from tests import background

ROOT = Path(__file__).resolve().parents[1]
TINY = [
    "--total-timesteps",
    "3072",
    "--n-games",
    "8",
    "--n-steps",
    "32",
    "--minibatch-size",
    "128",
    "--bc-decisions",
    "300",
    "--bc-epochs",
    "1",
    "--checkpoint-every",
    "512",
    "--snapshot-every",
    "1024",
    "--eval-every",
    "2048",
    "--eval-games",
    "2",
    "--final-eval-games",
    "2",
    "--eval-bots",
    "greedy",
    "--channels",
    "8",
    "--blocks",
    "1",
    "--hidden",
    "16",
    "--no-progress",
]


def ppo(*args: str, **kw) -> subprocess.Popen:
    env = os.environ | {"PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-m", "training.ppo", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        **kw,
    )


# Training that stops itself in its first evaluation after the start's (at 2,048 timesteps,
# where a checkpoint is due too), printing PAUSED, and waits there to be killed: the kill
# lands at the same point however slow the machine (a test that polled for checkpoints could
# find training finished). The checkpoint of that step comes after its evaluation
# (`run.Checkpoints`), so the rollouts since the one before are lost, and the resume must
# start there and evaluate 2,048 again.
PAUSING = """
import sys, threading
from rummy500_env.training import ppo
from rummy500_env.training import run as training_run

evaluate = training_run.RunFolder.evaluate

def pausing(self, actor, timesteps, *args, final=False, **kwargs):
    if timesteps > 0 and not final:  # not the start's (after behaviour cloning), nor the last
        print("PAUSED", flush=True)
        threading.Event().wait()  # until SIGKILL
    return evaluate(self, actor, timesteps, *args, final=final, **kwargs)

training_run.RunFolder.evaluate = pausing
sys.exit(ppo.main(sys.argv[1:]))
"""


@background.job(__name__, "trained")
def train_kill_and_resume() -> Path:
    """Train, SIGKILL in the evaluation at 2,048, resume to the end: the run's folder. A
    background job (tests/background.py): these subprocesses run on the other core beside the
    rest of the suite, and the tests that read the run come last."""
    run = background.temp_dir("ppo") / "run"
    env = os.environ | {"PYTHONPATH": str(ROOT)}
    proc = background.popen(
        [sys.executable, "-c", PAUSING, *TINY, "--run-dir", str(run)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    lines: list[str] = []
    stopped = threading.Event()  # PAUSED read, or the output ended

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            if line.strip() == "PAUSED":
                break
        stopped.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        stopped.wait(600)
        assert lines[-1:] == ["PAUSED\n"], "training never reached its pause:\n" + "".join(lines)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        reader.join(10)
    ckpts = run / "checkpoints"
    assert not (run / "policy.pt").exists()
    with open(run / "evaluations.csv") as f:  # the start's evaluation alone
        assert [int(row["timesteps"]) for row in csv.DictReader(f)] == [0]
    state = json.loads((run / "state.json").read_text())
    killed_at = state["timesteps"]
    assert killed_at == 1536 and (ckpts / state["checkpoint"]).exists()  # the one before 2,048
    code, out, _ = background.call(
        [sys.executable, "-m", "training.ppo", "--resume", str(run)],
        ROOT,
        timeout=600,
        env=env,
        stderr=subprocess.STDOUT,
    )
    assert code == 0, out
    assert f"at {killed_at} timesteps" in out, out
    assert (run / "policy.pt").exists(), out
    return run


@pytest.fixture(scope="module")
def trained() -> Path:
    """A run trained, killed in its evaluation at 2,048 and resumed to the end."""
    run: Path = background.result("trained")
    return run


def test_killed_run_resumes_from_its_last_checkpoint_to_the_same_budget(trained):
    state = json.loads((trained / "state.json").read_text())
    assert state["timesteps"] >= 3072
    assert len(list((trained / "checkpoints").glob("step_*.pt"))) <= 3
    with open(trained / "evaluations.csv") as f:  # the step it was killed in, evaluated again
        assert [int(row["timesteps"]) for row in csv.DictReader(f)] == [0, 2048, 3072]
    assert (trained / "learning_curve.png").exists()
    assert list((trained / "tb").rglob("events.out.tfevents*"))


@pytest.mark.slow
def test_exported_policy_loads_without_stable_baselines3_and_plays_greedy(trained):
    code = f"""
import sys
sys.modules["stable_baselines3"] = None  # importing it now fails
sys.modules["sb3_contrib"] = None
from rummy500_env.agents.policy import PolicyAgent
from rummy500_env.agents import GreedyAgent
from rummy500_env.evaluation.arena import play
agent = PolicyAgent.load({str(trained / "policy.pt")!r})
result = play([agent, GreedyAgent()], "standard", seed=1, episode="hand")
print("played", result.totals)
"""
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=os.environ | {"PYTHONPATH": str(ROOT)},
    )
    assert out.returncode == 0, out.stderr
    assert "played" in out.stdout


def test_policy_agent_matches_the_trained_model_and_stays_in_the_mask(trained):
    from rummy500_env.rl.single_agent import Rummy500SingleAgentEnv
    from rummy500_env.training.model import new_model
    from rummy500_env.training.ppo import args_from_dict, load_checkpoint

    args = args_from_dict(json.loads((trained / "config.json").read_text()))
    model = new_model(args)
    load_checkpoint(trained, model, torch.optim.Adam(model.parameters()), args)
    agent = PolicyAgent.load(trained / "policy.pt", rules="standard")
    sampler = PolicyAgent.load(trained / "policy.pt", deterministic=False, seed=3)
    env = Rummy500SingleAgentEnv(episode="hand")
    obs, _ = env.reset(seed=0)
    for _ in range(40):
        mask = env.action_masks()
        with torch.no_grad():
            logits = model(torch.as_tensor(obs)[None])[0][0]
        expected = int(logits.masked_fill(~torch.as_tensor(mask), -1e9).argmax())
        assert agent.act(obs, mask) == expected
        assert mask[sampler.act(obs, mask)]
        obs, _, term, trunc, _ = env.step(expected)
        if term or trunc:
            obs, _ = env.reset()
    meta = agent.metadata
    assert meta["rules"]["players"] == 2 and meta["encoding"]["action_size"] == 360
    assert meta["network"] == {"kind": "cards", "channels": 8, "blocks": 1, "hidden": 16}
    assert meta["evaluation"]["results"]["greedy"]["games"] == 2
    assert (trained / "policy.pt").stat().st_size < 5_000_000


def test_a_damaged_newest_checkpoint_falls_back_to_the_one_before(trained, tmp_path, capsys):
    import shutil

    from rummy500_env.training.model import new_model
    from rummy500_env.training.ppo import args_from_dict, load_checkpoint

    run = tmp_path / "run"
    shutil.copytree(trained, run)
    newest, before = sorted((run / "checkpoints").glob("step_*.pt"), reverse=True)[:2]
    newest.write_bytes(newest.read_bytes()[:100])
    args = args_from_dict(json.loads((run / "config.json").read_text()))
    model = new_model(args)
    state = load_checkpoint(run, model, torch.optim.Adam(model.parameters()), args)
    assert state["checkpoint"] == before.name
    assert f"skipping unreadable checkpoint {newest.name}" in capsys.readouterr().err
    other = args_from_dict(json.loads((run / "config.json").read_text()) | {"channels": 9})
    with pytest.raises(ConfigError, match=r"holds network .* but the run's config asks for"):
        load_checkpoint(run, new_model(other), torch.optim.Adam(model.parameters()), other)


@pytest.mark.jax
def test_every_trainer_describes_and_checks_its_network_alike():
    """The card network's sizes are one `NetworkArgs` in training.ppo, training.rllib and
    training.jax_ppo: the same sizes are the same ``network`` entry, and the same check names
    a bad one. `run.check_checkpoint`, which the resumes of training.ppo and training.jax_ppo
    share, passes a checkpoint of the run's network, refuses one of another (`ConfigError`)
    and skips one of diverged weights as damaged (a plain `ValueError`)."""
    pytest.importorskip("jax")
    from rummy500_env.training import jax_ppo, ppo, rllib
    from rummy500_env.training.run import check_checkpoint
    from rummy500_env.training.settings import require_network

    sizes = {"channels": 8, "blocks": 1, "hidden": 16}
    specs = [trainer.Args(**sizes).network_spec() for trainer in (ppo, rllib, jax_ppo)]
    assert specs == [{"kind": "cards", **sizes}] * 3
    for args in (ppo.Args(blocks=0), rllib.Args(blocks=0), jax_ppo.Args(blocks=0)):
        with pytest.raises(ConfigError, match="blocks=0 is not allowed: use an int >= 1"):
            require_network(args)
    with pytest.raises(ConfigError, match="network='conv' is not allowed"):
        require_network(ppo.Args(network="conv"))

    args = jax_ppo.Args(**sizes)
    good = {"embed.weight": torch.zeros(2, 2)}
    check_checkpoint({"model": good, "network": args.network_spec()}, Path("c"), args)
    other = {"model": good, "network": {**args.network_spec(), "channels": 9}}
    with pytest.raises(ConfigError, match=r"checkpoint c holds network .*'channels': 9.*asks for"):
        check_checkpoint(other, Path("c"), args)
    diverged = {"model": {"embed.weight": torch.full((2, 2), float("nan"))}}
    with pytest.raises(ValueError, match=r"non-finite weights in 'embed\.weight'") as raised:
        check_checkpoint(diverged | {"network": args.network_spec()}, Path("c"), args)
    assert not isinstance(raised.value, ConfigError)


def test_policy_for_other_rules_or_encoding_is_refused_showing_stored_vs_current(trained, tmp_path):
    with pytest.raises(PolicyLoadError, match=r"other rules:\n  stored: .*\n  current: "):
        PolicyAgent.load(trained / "policy.pt", rules="nordic")
    blob = torch.load(trained / "policy.pt", weights_only=True)
    blob["metadata"]["encoding"]["observation_version"] = 999
    bad = tmp_path / "old.pt"
    torch.save(blob, bad)
    with pytest.raises(PolicyLoadError, match=r"stored: .*999.*\n  current"):
        PolicyAgent.load(bad)


@pytest.mark.parametrize("damage", ["truncate", "garbage", "not_policy", "missing"])
def test_corrupt_or_truncated_policy_files_give_clear_errors(trained, tmp_path, damage):
    path = tmp_path / "p.pt"
    data = (trained / "policy.pt").read_bytes()
    if damage == "truncate":
        path.write_bytes(data[: len(data) // 2])
    elif damage == "garbage":
        path.write_bytes(b"\x00not a torch file at all" * 10)
    elif damage == "not_policy":
        torch.save({"weights": torch.zeros(3)}, path)
    words = {
        "truncate": "is corrupt: a truncated or damaged zip archive",
        "garbage": "is not a rummy500 policy file",
        "not_policy": "is not a rummy500 policy file",
        "missing": "no policy file",
    }[damage]
    with pytest.raises(PolicyLoadError, match=words):
        PolicyAgent.load(path)


def test_evaluate_accepts_the_exported_policy(trained, tmp_path):
    from rummy500_env.evaluation.evaluate import main as evaluate

    assert (
        evaluate(
            [
                str(trained / "policy.pt"),
                "greedy",
                "--games",
                "2",
                "--workers",
                "1",
                "--out",
                str(tmp_path),
            ]
        )
        == 0
    )


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--learning-rate", "-1"], "learning_rate=-1.0 is not allowed"),
        (["--episode", "match"], "episode='match'"),
        (["--opponents.greedy", "-2"], "opponents="),
        (["--minibatch-size", "100000"], "minibatch_size=100000"),
        (["--network", "transformer"], "network='transformer'"),
        (["--rules", '{"jokers": 3}'], "jokers=3 is not allowed"),
        (["--resume", "/nonexistent/run"], "no run there"),
        (["--config", "/nonexistent.yaml"], "no config file"),
        (
            ["--config", "ppo_longer"],
            "ppo, ppo_3p, ppo_4p, ppo_jokers_calls, ppo_long",  # (and the other trainers')
        ),
        (["--vf-coef", "-1"], "vf_coef=-1.0 is not allowed"),  # used to blame ent_coef
        (["--ent-coef", "-1"], "ent_coef=-1.0 is not allowed"),
        (["--eval-bots", "greedy", "search:50s"], "eval_bots=('greedy', 'search:50s')"),
        (["--rules", "nordic,target"], "'target' is not field=value"),
        (["--eval-every", "0"], "eval_every=0 is not allowed: use an int >= 1"),
        (["--n-epochs", "0"], "n_epochs=0 is not allowed"),
    ],
)
def test_bad_config_values_are_clear_errors(argv, words, capsys):
    with pytest.raises(ConfigError, match=re.escape(words)):
        parse_args(argv)
    assert main(argv) == 2
    assert words in capsys.readouterr().err


def test_config_is_a_packaged_name_or_a_path(tmp_path):
    args, resuming = parse_args(["--config", "ppo_long"])
    packaged = ROOT / "configs" / "ppo_long.yaml"  # the one copy; the wheel carries it too
    assert f"total_timesteps: {args.total_timesteps}\n" in packaged.read_text()
    assert not resuming
    path = tmp_path / "c.yaml"
    path.write_text("total_timesteps: 1234\n")
    assert parse_args(["--config", str(path)])[0].total_timesteps == 1234


def test_rules_take_the_engines_forms_and_name_the_run_folder():
    from rummy500_env.engine.rules import Rules

    args, _ = parse_args(["--rules", "nordic", "--seed", "3"])
    assert args.run_path == Path("runs/ppo_nordic_hand_s3")
    args, _ = parse_args(["--rules", "nordic,target=300"])
    assert args.game_rules() == Rules.preset("nordic", target=300)
    assert args.run_path == Path("runs/ppo_custom_hand_s0")


def test_every_fires_once_each_time_the_count_passes_a_multiple():
    from rummy500_env.training.run import Every

    every = Every(100, start=150)  # a run resumed at 150 steps: the next is 200
    assert [s for s in (180, 200, 250, 420, 450, 600, 650) if every.due(s)] == [200, 420, 600]


def test_checkpoints_keep_the_last_k_survive_a_failed_write_and_skip_a_damaged_one(
    tmp_path, capsys
):
    from rummy500_env.training.run import Checkpoints

    ckpts = Checkpoints(tmp_path, keep=2)

    def saver(state):
        return lambda path: path.write_text(json.dumps(state))

    for steps in (100, 200, 300):
        ckpts.save({"timesteps": steps}, saver({"timesteps": steps}), suffix=".json")
    names = ["step_0000000300.json", "step_0000000200.json"]
    assert [p.name for p in ckpts.paths()] == names
    assert json.loads((tmp_path / "state.json").read_text())["checkpoint"] == names[0]

    def crash(path):
        path.write_text("half a checkpoint")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        ckpts.save({"timesteps": 400}, crash, suffix=".json")
    assert [p.name for p in ckpts.paths()] == names  # the half-written one never got a name

    ckpts.paths()[0].write_text('{"timesteps": 3')  # cut short
    state = ckpts.load(lambda path: json.loads(path.read_text()))
    assert state == {"timesteps": 200, "checkpoint": names[1]}
    assert f"skipping unreadable checkpoint {names[0]}" in capsys.readouterr().err

    def other_network(path):
        raise ConfigError("holds another network")

    with pytest.raises(ConfigError, match="another network"):  # not damage: no fallback
        ckpts.load(other_network)
    with pytest.raises(ConfigError, match="no checkpoint yet"):
        Checkpoints(tmp_path / "empty", keep=2).load(other_network)


def test_opponents_and_eval_bots_are_any_agent_specs():
    from rummy500_env.agents import GreedyAgent, SearchAgent
    from rummy500_env.training.ppo import Args
    from rummy500_env.training.rollouts import opponent_pool

    args = Args(opponents={"greedy": 0.5, "search:5": 0.5, "self": 1.0}, eval_bots=("search:1",))
    args.validate()
    pool, weights = opponent_pool(args, snapshots=[])
    assert [type(a) for a in pool] == [GreedyAgent, SearchAgent] and weights == [0.5, 0.5]
    assert pool[1].rollouts == 5
    with pytest.raises(ConfigError, match=r"opponents=\{'search:5s': 1.0\} is not allowed"):
        Args(opponents={"search:5s": 1.0}).validate()


def test_unknown_yaml_field_is_named(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("rules: standard\nlearning_rat: 0.1\n")
    with pytest.raises(ConfigError, match=r"unknown config field.*learning_rat"):
        parse_args(["--config", str(cfg)])


def test_a_second_run_into_the_same_folder_is_refused(trained):
    with pytest.raises(ConfigError, match="already holds a run"):
        from rummy500_env.training.ppo import train

        args, _ = parse_args([*TINY, "--run-dir", str(trained)])
        train(args)


def test_the_shipped_model_matches_the_current_encodings_and_plays_a_hand():
    """models/ must be retrained whenever the observation or action layout changes; loading
    refuses a stale file, so this fails until it is."""
    from rummy500_env.agents import GreedyAgent
    from rummy500_env.evaluation.arena import play

    agent = PolicyAgent.load(ROOT / "models" / "rummy500-ppo-standard.pt")
    result = play([agent, GreedyAgent()], "standard", seed=3, episode="hand")
    assert len(result.hand_scores) == 1  # raw_env raises on any move outside the mask


@pytest.mark.slow
def test_training_with_jokers_and_calls_exports_a_policy_that_plays_under_those_rules(tmp_path):
    from rummy500_env.agents.registry import make_agent
    from rummy500_env.evaluation.arena import play

    rules = {"jokers": 2, "rummy_calls": True}
    run = tmp_path / "jokers"
    argv = ["--rules", json.dumps(rules), "--run-dir", str(run), "--total-timesteps", "512"]
    argv += ["--n-games", "8", "--n-steps", "32", "--minibatch-size", "128", "--channels", "8"]
    argv += ["--blocks", "1", "--hidden", "16", "--eval-bots", "greedy", "--final-eval-games"]
    assert main([*argv, "2", "--no-progress"]) == 0
    agent = make_agent(str(run / "policy.pt"), rules, seed=0)
    assert agent.metadata["rules"]["jokers"] == 2
    with pytest.raises(PolicyLoadError, match="other rules"):
        PolicyAgent.load(run / "policy.pt", rules="standard")
    result = play([agent, make_agent("expert", rules, seed=0)], rules, seed=3, episode="hand")
    assert len(result.hand_scores) == 1


@pytest.mark.parametrize(
    ("make_argv", "words"),
    [
        (lambda t: ["--seed", "-1"], "seed=-1 is not allowed"),
        (lambda t: ["--seed", str(2**32)], "seed=4294967296 is not allowed"),
        (lambda t: ["--opponents.greedy", "inf"], "finite weights"),
        (lambda t: ["--ent-coef", "inf"], "ent_coef=inf"),
        (lambda t: ["--run-dir", str(t / "file")], "is a file"),
        (lambda t: ["--run-dir", str(t / "file" / "run")], "which is a file, not a folder"),
        (lambda t: ["--run-dir", "x" * 300], "File name too long"),
        (lambda t: ["--export", str(t)], "is a folder"),
        (lambda t: ["--eval-bots", str(t / "file")], "eval_bots: "),
        (lambda t: ["--init-policy", str(t / "file")], "init_policy: "),
        (lambda t: ["--config", str(t / "types.yaml")], "config field opponents=5"),
        (lambda t: ["--config", "x" * 300], "File name too long"),
    ],
)
def test_inputs_that_would_fail_mid_run_are_refused_before_any_work(
    make_argv, words, tmp_path, monkeypatch, capsys
):
    """Each of these used to pass the checks and fail once training ran (a traceback at the
    first seeding, the first evaluation, the export at the end...) or crash the parser."""
    from rummy500_env.training import ppo

    (tmp_path / "file").write_text("not a policy\n")
    (tmp_path / "types.yaml").write_text("opponents: 5\n")

    def started(*args, **kwargs):
        raise AssertionError("training started")

    monkeypatch.setattr(ppo, "Trainer", started)
    argv = make_argv(tmp_path)
    if "--run-dir" not in argv:
        argv += ["--run-dir", str(tmp_path / "run")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and words in err, err
