"""`PolicyAgent`: plays an exported policy file, with nothing but torch and this package.

An exported policy is one ``torch.save`` file holding a dict:

``format``            ``"rummy500-policy"``
``format_version``    1
``state_dict``        the weights of `PolicyNetwork` (tensors only)
``metadata``          JSON-compatible: package version, observation and action encoding
                      versions and sizes, rules, network architecture, training config,
                      evaluation results

It loads with ``torch.load(weights_only=True)`` (no pickled code runs) and is checked against
the rules and encodings of this package before use.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from rummy500_env.actions import ENCODING_VERSION, ActionCodec
from rummy500_env.errors import Rummy500Error
from rummy500_env.observation import OBSERVATION_VERSION, ObservationEncoder
from rummy500_env.rules import Rules

FORMAT = "rummy500-policy"
FORMAT_VERSION = 1
ACTIVATIONS = ("tanh", "relu")


class PolicyLoadError(Rummy500Error):
    """A policy file that is missing, corrupt, truncated, or made for other rules or encodings."""


def current_encoding(rules: Rules) -> dict[str, Any]:
    """The encoding facts a policy file must match."""
    return {
        "observation_version": OBSERVATION_VERSION,
        "action_version": ENCODING_VERSION,
        "observation_size": ObservationEncoder(rules).size,
        "action_size": ActionCodec(rules).size,
    }


def build_network(obs_size: int, net_arch: list[int], action_size: int, activation: str) -> Any:
    """The actor as a plain torch module: MLP layers, then the action logits."""
    import torch.nn as nn

    act = {"tanh": nn.Tanh, "relu": nn.ReLU}[activation]
    layers: list[nn.Module] = []
    last = obs_size
    for width in net_arch:
        layers += [nn.Linear(last, width), act()]
        last = width
    return nn.Sequential(nn.Sequential(*layers), nn.Linear(last, action_size))


def save_policy(path: str | Path, network: Any, metadata: dict[str, Any]) -> None:
    """Write a policy file atomically (a temporary file, then a rename)."""
    import torch

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    state = {k: v.detach().cpu().clone() for k, v in network.state_dict().items()}
    torch.save(
        {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "state_dict": state,
            "metadata": metadata,
        },
        tmp,
    )
    tmp.replace(path)


def load_policy_file(path: str | Path) -> dict[str, Any]:
    """Read and check the container of a policy file; errors say what is wrong with it."""
    import pickle
    import zipfile

    import torch

    path = Path(path)
    if not path.is_file():
        raise PolicyLoadError(f"no policy file at {str(path)!r}")
    try:
        blob = torch.load(path, map_location="cpu", weights_only=True)
    except (
        RuntimeError,
        EOFError,
        OSError,
        ValueError,
        pickle.UnpicklingError,
        zipfile.BadZipFile,
        KeyError,
        AttributeError,
    ) as e:
        raise PolicyLoadError(
            f"{str(path)!r} is not a readable rummy500 policy file (corrupt or truncated?): "
            f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
        ) from None
    if not isinstance(blob, dict) or blob.get("format") != FORMAT:
        raise PolicyLoadError(
            f"{str(path)!r} is not a rummy500 policy file (no format={FORMAT!r}); export one "
            "with python -m training.ppo or training.ppo.export_policy"
        )
    if blob.get("format_version") != FORMAT_VERSION:
        raise PolicyLoadError(
            f"{str(path)!r} has format_version {blob.get('format_version')!r}; this package "
            f"reads {FORMAT_VERSION}"
        )
    for key in ("state_dict", "metadata"):
        if key not in blob:
            raise PolicyLoadError(f"{str(path)!r} lacks {key!r}: the file is incomplete")
    return blob


class PolicyAgent:
    """Plays a trained policy: ``act(observation, action_mask) -> int``, always inside the mask.

    Args:
        network: the torch actor (see `build_network`).
        metadata: the file's metadata.
        deterministic: take the most likely legal action (True) or sample (False).
        seed: seeds sampling.
    """

    def __init__(
        self,
        network: Any,
        metadata: dict[str, Any],
        deterministic: bool = True,
        seed: int | None = None,
        path: str | None = None,
    ) -> None:
        import torch

        self.network = network.eval()
        self.metadata = metadata
        self.deterministic = deterministic
        self.path = path
        self.generator = torch.Generator().manual_seed(seed if seed is not None else 0)

    @classmethod
    def load(
        cls,
        path: str | Path,
        rules: Rules | str | dict[str, Any] | None = None,
        deterministic: bool = True,
        seed: int | None = None,
    ) -> PolicyAgent:
        """Load an exported policy; refuse one made for other rules or encodings, showing
        stored vs current."""
        blob = load_policy_file(path)
        meta = blob["metadata"]
        try:
            stored_rules = Rules.from_dict(meta["rules"])
        except (KeyError, Rummy500Error, TypeError) as e:
            raise PolicyLoadError(f"{str(path)!r}: unreadable rules in metadata: {e}") from None
        if rules is not None and Rules.coerce(rules) != stored_rules:
            raise PolicyLoadError(
                f"{str(path)!r} was trained for other rules:\n  stored:  {stored_rules}\n"
                f"  current: {Rules.coerce(rules)}"
            )
        now = current_encoding(stored_rules)
        stored = {k: meta.get("encoding", {}).get(k) for k in now}
        if stored != now:
            raise PolicyLoadError(
                f"{str(path)!r} was made for another observation/action encoding:\n"
                f"  stored:  {stored}\n  current: {now}\nretrain or use a matching version "
                f"(the file says package {meta.get('package_version')!r})"
            )
        arch = meta.get("network", {})
        try:
            net = build_network(
                now["observation_size"],
                list(arch["net_arch"]),
                now["action_size"],
                arch["activation"],
            )
            net.load_state_dict(blob["state_dict"])
        except (KeyError, RuntimeError, TypeError) as e:
            raise PolicyLoadError(
                f"{str(path)!r}: the weights do not fit the network its metadata describes: "
                f"{str(e).splitlines()[0]}"
            ) from None
        return cls(net, meta, deterministic=deterministic, seed=seed, path=str(path))

    def act(self, observation: np.ndarray[Any, Any], action_mask: np.ndarray[Any, Any]) -> int:
        import torch

        mask = np.asarray(action_mask, dtype=bool)
        if not mask.any():
            raise ValueError("the action mask has no legal action: is this agent to act?")
        with torch.no_grad():
            logits = self.network(torch.as_tensor(observation, dtype=torch.float32)[None])[0]
            logits = logits.masked_fill(~torch.as_tensor(mask), float("-inf"))
            if self.deterministic:
                return int(torch.argmax(logits))
            probs = torch.softmax(logits, dim=-1)
            return int(torch.multinomial(probs, 1, generator=self.generator))

    def __getstate__(self) -> dict[str, Any]:
        """Pickle by path when there is one (subprocess opponents reload the file)."""
        if self.path is None:
            return self.__dict__ | {"generator": None}
        return {"path": self.path, "deterministic": self.deterministic}

    def __setstate__(self, state: dict[str, Any]) -> None:
        if "network" in state:
            self.__dict__.update(state)
            import torch

            self.generator = torch.Generator().manual_seed(0)
            return
        agent = PolicyAgent.load(state["path"], deterministic=state["deterministic"])
        self.__dict__.update(agent.__dict__)

    def __repr__(self) -> str:
        return f"PolicyAgent({self.path!r})"
