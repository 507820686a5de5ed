"""``--device`` (rummy500_env/training/device.py): the choices are checked while parsing,
saying what torch sees; ``auto`` says what it picked; a checkpoint written on a GPU resumes on
a CPU (simulated: its tensors are saved under a CUDA location, which torch refuses to load on
a machine without one unless it is mapped)."""

from __future__ import annotations

import io
import json

import pytest

pytest.importorskip("tyro")
import torch
import torch.serialization

from rummy500_env.training import device as device_module
from rummy500_env.training import exit as exit_trainer
from rummy500_env.training import exploit, ppo
from rummy500_env.training.settings import ConfigError

from .test_resume import TINY


@pytest.fixture
def no_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """This machine as torch sees it without a GPU, whatever the machine has."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)


@pytest.mark.parametrize("spec", ["cuda", "cuda:0", "cuda:3"])
@pytest.mark.parametrize(
    "parse",
    [ppo.parse_args, exit_trainer.parse_args, lambda argv: exploit.parse_args(["greedy", *argv])],
    ids=["ppo", "exit", "exploit"],
)
def test_a_gpu_where_torch_sees_none_is_refused_while_parsing(no_gpu, spec, parse):
    refusal = rf"device='{spec}': torch .* sees no GPU; use auto or cpu"
    with pytest.raises(ConfigError, match=refusal):
        parse(["--device", spec])


@pytest.mark.parametrize("spec", ["gpu", "cuda:", "cuda:x", "mps", "CPU", ""])
def test_an_unknown_device_names_the_allowed_ones(spec):
    with pytest.raises(ConfigError, match="use auto, cpu, cuda or cuda:N"):
        ppo.parse_args(["--device", spec])


def test_a_gpu_index_beyond_those_torch_sees_is_refused(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda k=0: "Test GPU")
    device_module.check_device("cuda:0")
    with pytest.raises(ConfigError, match=r"cuda:1.*sees 1 GPU\(s\): cuda:0 Test GPU"):
        device_module.check_device("cuda:1")
    assert device_module.pick_device("auto") == torch.device("cuda:0")


def test_auto_picks_the_cpu_without_a_gpu_and_says_so_first(no_gpu, tmp_path, capsys):
    assert device_module.pick_device("auto") == torch.device("cpu")
    args, _ = ppo.parse_args([*TINY, "--run-dir", str(tmp_path / "run")])
    assert args.device == "auto"
    ppo.Trainer(args, resume=False).close()
    first = capsys.readouterr().out.splitlines()[0]
    assert first == "device: cpu (--device auto: torch " + torch.__version__ + (
        " (a CPU-only build) sees no GPU)"
        if torch.version.cuda is None
        else f" (CUDA {torch.version.cuda}) sees no GPU)"
    )


def saved_as_if_on_a_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make torch.save record every tensor's location as ``cuda:0``, as a GPU run's
    checkpoint does."""
    monkeypatch.setattr(torch.serialization, "location_tag", lambda storage: "cuda:0")


def test_the_simulated_gpu_checkpoint_is_one_torch_refuses_unmapped(no_gpu, monkeypatch):
    """The simulation is faithful: such a file does not load on a CPU without a mapping."""
    buffer = io.BytesIO()
    with monkeypatch.context() as m:
        saved_as_if_on_a_gpu(m)
        torch.save({"w": torch.ones(2)}, buffer)
    buffer.seek(0)
    with pytest.raises(RuntimeError, match="CUDA"):
        torch.load(buffer, weights_only=True)


@pytest.mark.slow
def test_a_run_checkpointed_on_a_gpu_resumes_on_the_cpu(no_gpu, tmp_path, monkeypatch):
    run = tmp_path / "run"
    with monkeypatch.context() as m:
        saved_as_if_on_a_gpu(m)
        assert ppo.main([*TINY, "--total-timesteps", "64", "--run-dir", str(run)]) == 0
    checkpoint = next((run / "checkpoints").glob("*.pt"))
    with pytest.raises(RuntimeError, match="CUDA"):
        torch.load(checkpoint, weights_only=True)  # written "on a GPU"
    assert ppo.main(["--resume", str(run), "--total-timesteps", "128", "--device", "cpu"]) == 0
    assert json.loads((run / "state.json").read_text())["timesteps"] == 128
