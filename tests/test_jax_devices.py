"""``training.jax_ppo`` over several devices: two CPU devices (XLA's host-platform count, in a
process of its own, since JAX reads it once at start) learn what one learns from the same games,
to float tolerance, and a run resumes on another device count; and two processes joined by
`jax.distributed` (one CPU device each, gloo between them) learn the same again, process 0
alone evaluating."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("jax")

SCRIPT = textwrap.dedent(
    """
    import json, sys
    import jax, numpy as np
    from rummy500_env.training import jax_ppo
    from rummy500_env.training.settings import ConfigError, load_yaml

    TINY = {"n_games": 8, "n_steps": 12, "minibatch_size": 32, "n_epochs": 2, "channels": 8,
            "blocks": 1, "hidden": 16, "snapshot_every": 100, "checkpoint_every": 100,
            "eval_every": 10**9, "final_eval_games": 2, "eval_bots": ["greedy"],
            "progress": False}
    out, mode = sys.argv[1], sys.argv[2]

    def run(name, total, devices, resume=False, **more):
        fields = load_yaml("jax_ppo") | TINY | {"run_dir": f"{out}/{name}",
                                                "total_timesteps": total, "devices": devices}
        args = jax_ppo.args_from_dict(fields | more)
        args.validate()
        trainer = jax_ppo.Trainer(args, resume)
        if not resume:
            trainer.snapshot()
        trainer.learn()
        trainer.checkpoint()
        leaves = jax.tree_util.tree_leaves(trainer.games)
        shards = {len(leaf.sharding.device_set) for leaf in leaves}
        trainer.run.writer.close()
        return {k: np.asarray(v) for k, v in trainer.params.items()}, shards

    if mode != "one":  # a process of the distributed run: its weights to a file
        pid = int(mode)
        mine, shards = run("dist", 200, "all", coordinator=f"127.0.0.1:{sys.argv[3]}",
                           num_processes=2, process_id=pid, eval_every=100, eval_games=2)
        np.savez(f"{out}/process_{pid}.npz", **mine)
        print(json.dumps({"devices": jax.device_count(), "shards": sorted(shards)}))
        sys.exit(0)
    one, shards_one = run("one", 200, 1)
    np.savez(f"{out}/one.npz", **one)
    two, shards_two = run("two", 200, 2)
    run("moved", 100, 2)
    moved, _ = run("moved", 200, 1, resume=True)
    try:
        odd_games = load_yaml("jax_ppo") | TINY | {"n_games": 9, "devices": 2}
        jax_ppo.args_from_dict(odd_games).validate()
        odd = ""
    except ConfigError as e:
        odd = str(e)
    print(json.dumps({
        "devices": jax.local_device_count(),
        "shards": [sorted(shards_one), sorted(shards_two)],
        "two": max(float(np.abs(one[k] - two[k]).max()) for k in one),
        "moved": max(float(np.abs(one[k] - moved[k]).max()) for k in one),
        "moved_scale": max(float(np.abs(one[k]).max()) for k in one),
        "odd": odd,
    }))
    """
)


def test_two_devices_or_two_processes_learn_what_one_learns_and_a_run_moves(tmp_path: Path) -> None:
    env = os.environ | {"XLA_FLAGS": "--xla_force_host_platform_device_count=2"}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path), "one"],
        env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["devices"] == 2
    assert found["shards"] == [[1], [2]]  # the games were split in the two-device run
    assert found["two"] < 1e-4  # the same learning, to float32 reduction order
    assert found["moved"] < 1e-4  # stopped on two devices, resumed on one
    assert found["moved_scale"] > 0.01  # the weights compared are not all ~0
    assert "share the games evenly: n_games=9 over 2 devices" in found["odd"]

    # the same run as two processes joined by jax.distributed, one device each
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = str(free.getsockname()[1])
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", SCRIPT, str(tmp_path), pid, port],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for pid in ("0", "1")
    ]
    for p in processes:
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, err[-3000:]
        assert json.loads(out.strip().splitlines()[-1]) == {"devices": 2, "shards": [2]}
    one = np.load(tmp_path / "one.npz")
    first, second = np.load(tmp_path / "process_0.npz"), np.load(tmp_path / "process_1.npz")
    for name in one.files:
        np.testing.assert_array_equal(first[name], second[name])  # one model, two processes
        np.testing.assert_allclose(first[name], one[name], atol=1e-4)
    assert list((tmp_path / "dist" / "checkpoints").iterdir())  # process 0: the run folder
    assert list((tmp_path / "dist" / "process_1" / "checkpoints").iterdir())  # its own
    assert (tmp_path / "dist" / "evaluations.csv").is_file()  # process 0 evaluates, alone
    assert not (tmp_path / "dist" / "process_1" / "evaluations.csv").exists()
