"""Where a trainer's update runs: ``--device auto|cpu|cuda|cuda:N`` (`DeviceArgs`).

The update (the forward and backward passes over a rollout or a replay) runs on the device.
Everything that leaves a run is device-free: exported policies hold CPU tensors
(`policy_file.save_policy`), and checkpoints are read onto the CPU first and copied into the
model wherever it lives, so a run started on a GPU resumes on a CPU and the other way round.
Sampling stays on the CPU, with the run's own generator, so a seeded run draws the same
actions from the same probabilities whatever the device.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import torch

from rummy500_env.training.settings import ConfigError

DEVICE_SPEC = re.compile(r"auto|cpu|cuda(:\d{1,3})?")
"""The devices a trainer takes: ``auto`` picks the first GPU torch sees, else the CPU."""


@dataclass
class DeviceArgs:
    """The device field of the trainers whose update runs in this process (training.ppo,
    training.exploit, training.exit); a trainer's ``validate`` calls `check_device`."""

    device: str = "auto"
    """Where the update runs: auto (a GPU when torch sees one, else the CPU), cpu, cuda or
    cuda:N. Policies and checkpoints load on any device."""


def what_torch_sees() -> str:
    """The GPUs torch sees, in words (for errors and for the device line a run prints)."""
    if not torch.cuda.is_available():
        built = "a CPU-only build" if torch.version.cuda is None else f"CUDA {torch.version.cuda}"
        return f"torch {torch.__version__} ({built}) sees no GPU"
    names = [torch.cuda.get_device_name(k) for k in range(torch.cuda.device_count())]
    listed = ", ".join(f"cuda:{k} {name}" for k, name in enumerate(names))
    return f"torch {torch.__version__} sees {len(names)} GPU(s): {listed}"


def check_device(spec: str) -> None:
    """Raise `ConfigError` for a device this machine cannot train on, saying what is allowed
    and what torch sees."""
    if not isinstance(spec, str) or not DEVICE_SPEC.fullmatch(spec):
        raise ConfigError(f"device={spec!r} is not allowed: use auto, cpu, cuda or cuda:N")
    if spec.startswith("cuda"):
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        index = int(spec.partition(":")[2] or 0)
        if index >= count:
            raise ConfigError(f"device={spec!r}: {what_torch_sees()}; use auto or cpu")


def pick_device(spec: str) -> torch.device:
    """The torch device `spec` names (`check_device` has passed): ``auto`` is ``cuda:0``
    when torch sees a GPU, else ``cpu``."""
    if spec == "auto":
        return torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
    return torch.device(spec)


def device_line(device: torch.device, spec: str) -> str:
    """The line a run prints first: the device it trains on, and why."""
    chosen = str(device)
    if device.type == "cuda":
        chosen += f" ({torch.cuda.get_device_name(device)})"
    reason = f" (--device auto: {what_torch_sees()})" if spec == "auto" else ""
    return f"device: {chosen}{reason}"
