"""`PolicyAgent`: plays an exported policy file, with nothing but torch and this package.

`PolicyAgent.load` reads a policy file (`rummy500_env.agents.policy_file`: the format, its
checks and its upgrade) or a shipped policy by name (`rummy500_env.agents.shipped`), refuses one
made for other rules or encodings, showing stored vs current (and the shipped policies that
fit), builds its network (`rummy500_env.agents.networks`) and plays it inside the mask.

The file format's and the shipped policies' names are re-exported here, where they were first
documented (``from rummy500_env.agents.policy import save_policy, shipped_for``).

Upgrading a version-1 file::

    python -m rummy500_env.agents.policy --upgrade models/rummy500-ppo-standard.pt
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from rummy500_env.agents.policy_file import (
    FORMAT,
    FORMAT_VERSION,
    UPGRADE,
    PolicyLoadError,
    current_encoding,
    load_policy_file,
    main,
    metadata_problem,
    save_policy,
    upgrade_policy_file,
    weights_checksum,
)
from rummy500_env.agents.shipped import (
    fitting,
    is_policy_file,
    policy_path,
    shipped_for,
    shipped_policies,
    shipped_rules,
)
from rummy500_env.engine.errors import Rummy500Error
from rummy500_env.engine.rules import Rules
from rummy500_env.rl.observation import FEATURE_VERSIONS, OBSERVATION_VERSION, ObservationEncoder

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "UPGRADE",
    "PolicyAgent",
    "PolicyInputError",
    "PolicyLoadError",
    "current_encoding",
    "is_policy_file",
    "load_policy_file",
    "metadata_problem",
    "policy_path",
    "save_policy",
    "shipped_for",
    "shipped_policies",
    "shipped_rules",
    "upgrade_policy_file",
    "weights_checksum",
]


class PolicyInputError(Rummy500Error):
    """An observation or action mask that is not what the policy takes; says what it expects."""


class PolicyAgent:
    """Plays a trained policy: ``act(observation, action_mask) -> int``, always inside the mask.

    Args:
        network: the torch actor (see `rummy500_env.agents.networks`): observations in,
            action logits out.
        metadata: the file's metadata (its ``encoding`` gives the input and output sizes).
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
        self.observation_size: int = ObservationEncoder(Rules.from_dict(metadata["rules"])).size
        """The size of the env's observation vector (the network reads its feature part)."""
        self.action_size: int = metadata["encoding"]["action_size"]

    @classmethod
    def load(
        cls,
        path: str | Path,
        rules: Rules | str | dict[str, Any] | None = None,
        deterministic: bool = True,
        seed: int | None = None,
    ) -> PolicyAgent:
        """Load an exported policy (a path, or the name of a shipped one: "standard"); refuse
        one made for other rules or encodings, showing stored vs current."""
        path = policy_path(path)
        net, meta = load_network(path, rules)
        return cls(net, meta, deterministic=deterministic, seed=seed, path=str(path))

    def act(self, observation: np.ndarray[Any, Any], action_mask: np.ndarray[Any, Any]) -> int:
        """The policy's action: the most likely legal one, or a sample if not deterministic.

        Raises `PolicyInputError` saying what it expects when the observation or the mask is
        not one vector of this policy's size (the env's observation dict, a batch, the wrong
        rules), or when the mask allows nothing.
        """
        import torch

        obs, mask = self._check(observation, action_mask)
        with torch.no_grad():
            logits = self.network(torch.as_tensor(obs, dtype=torch.float32)[None])[0]
            logits = logits.masked_fill(~torch.as_tensor(mask), float("-inf"))
            if self.deterministic:
                return int(torch.argmax(logits))
            probs = torch.softmax(logits, dim=-1)
            return int(torch.multinomial(probs, 1, generator=self.generator))

    def act_batch(
        self, observations: np.ndarray[Any, Any], action_masks: np.ndarray[Any, Any]
    ) -> np.ndarray[Any, np.dtype[np.int64]]:
        """`act` for many positions in one forward pass (batched self-play asks a frozen
        opponent this way): rows of observations and of masks."""
        import torch

        obs = np.asarray(observations, dtype=np.float32)
        masks = np.asarray(action_masks, dtype=bool)
        if (
            obs.ndim != 2
            or obs.shape[1] != self.observation_size
            or masks.shape
            != (
                len(obs),
                self.action_size,
            )
        ):
            raise PolicyInputError(
                f"act_batch takes observations of shape (k, {self.observation_size}) and masks "
                f"of shape (k, {self.action_size}); got {obs.shape} and {masks.shape}"
            )
        if not masks.any(axis=1).all():
            raise PolicyInputError("an action mask has no legal action: is this agent to act?")
        with torch.no_grad():
            logits = self.network(torch.as_tensor(obs))
            logits = logits.masked_fill(~torch.as_tensor(masks), float("-inf"))
            if self.deterministic:
                picks = logits.argmax(dim=-1)
            else:
                probs = torch.softmax(logits, -1)
                picks = torch.multinomial(probs, 1, generator=self.generator).squeeze(1)
        return np.asarray(picks.numpy(), dtype=np.int64)

    def _check(
        self, observation: Any, action_mask: Any
    ) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
        """The observation as a float vector and the mask as a bool vector, both checked."""
        if isinstance(observation, Mapping):
            raise PolicyInputError(
                "PolicyAgent.act takes the observation vector and the action mask, not the "
                f"env's observation dict (keys {sorted(observation)}): call "
                "act(obs['observation'], obs['action_mask'])"
            )
        obs = _vector("observation", observation, self.observation_size)
        mask = _vector("action_mask", action_mask, self.action_size).astype(bool)
        if not mask.any():
            raise PolicyInputError("the action mask has no legal action: is this agent to act?")
        return obs, mask

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


def load_network(
    path: Path, rules: Rules | str | dict[str, Any] | None
) -> tuple[Any, dict[str, Any]]:
    """The network of a policy file and its metadata, made for `rules` (None: any) and the
    current encodings. `PolicyLoadError` names the file and what is wrong."""
    blob = load_policy_file(path)
    meta = blob["metadata"]
    try:
        stored_rules = Rules.from_dict(meta["rules"])
    except (KeyError, Rummy500Error, TypeError) as e:
        raise PolicyLoadError(f"{str(path)!r}: unreadable rules in metadata: {e}") from None
    if rules is not None and Rules.coerce(rules) != stored_rules:
        raise PolicyLoadError(
            f"{str(path)!r} was trained for other rules:\n  stored:  {stored_rules}\n"
            f"  current: {Rules.coerce(rules)}{fitting(Rules.coerce(rules))}"
        )
    now = current_encoding(stored_rules)
    stored = {k: meta.get("encoding", {}).get(k) for k in now}
    if stored["observation_version"] in FEATURE_VERSIONS:  # the same feature part
        stored["observation_version"] = OBSERVATION_VERSION
    if stored != now:
        raise PolicyLoadError(
            f"{str(path)!r} was made for another observation/action encoding:\n"
            f"  stored:  {stored}\n  current: {now}\nretrain or use a matching version "
            f"(the file says package {meta.get('package_version')!r:.40})"
        )
    from rummy500_env.agents.networks import NetworkSpecError, check_spec, state_shapes
    from rummy500_env.agents.networks import build_network as build

    try:
        spec = check_spec(meta.get("network", {}))
    except NetworkSpecError as e:
        raise PolicyLoadError(
            f"{str(path)!r}: its metadata's network is not one this package builds: {e}"
        ) from None
    misfit = _misfit(state_shapes(stored_rules, spec), blob["state_dict"])
    if misfit:  # before building: the file's own weights bound what is built
        raise PolicyLoadError(
            f"{str(path)!r}: the weights do not fit the network its metadata describes "
            f"({spec}): {misfit}"
        )
    try:
        net = build(stored_rules, spec)
        net.load_state_dict(blob["state_dict"])
    except (KeyError, RuntimeError, TypeError, ValueError) as e:
        raise PolicyLoadError(
            f"{str(path)!r}: the weights do not fit the network its metadata describes: "
            f"{str(e).splitlines()[0]}"
        ) from None
    return net, meta


def _misfit(shapes: dict[str, tuple[int, ...]], weights: Mapping[str, Any]) -> str:
    """How a file's weights differ from the shapes a network expects ("" when they fit)."""
    missing = [k for k in shapes if k not in weights]
    extra = [str(k)[:60] for k in weights if k not in shapes]
    wrong = [
        f"{k} is {tuple(getattr(weights[k], 'shape', ()))}, not {shape}"
        for k, shape in shapes.items()
        if k in weights and tuple(getattr(weights[k], "shape", ())) != shape
    ]
    parts = []
    if missing:
        parts.append(f"missing {missing[:3]}{' ...' if len(missing) > 3 else ''}")
    if extra:
        parts.append(f"unexpected {extra[:3]}{' ...' if len(extra) > 3 else ''}")
    if wrong:
        parts.append("; ".join(wrong[:3]) + (" ..." if len(wrong) > 3 else ""))
    return "; ".join(parts)


def _vector(name: str, value: Any, size: int) -> np.ndarray[Any, Any]:
    """`value` as a numeric numpy vector of `size`, or `PolicyInputError` saying what was
    expected and what came."""
    arr = np.asarray(value) if isinstance(value, (np.ndarray, list, tuple)) else None
    if arr is None and hasattr(value, "__array__"):  # a torch tensor, for one
        arr = np.asarray(value)
    if arr is None or arr.dtype.kind not in "biuf":
        raise PolicyInputError(
            f"{name} must be a numeric numpy array of shape ({size},), got "
            f"{type(value).__name__}" + (f" of {arr.dtype}" if arr is not None else "")
        )
    if arr.shape != (size,):
        raise PolicyInputError(
            f"{name} must have shape ({size},) for this policy, got shape {arr.shape}: pass one "
            "position at a time, observed under the rules the policy was trained for"
        )
    return arr


if __name__ == "__main__":  # the documented command: python -m rummy500_env.agents.policy
    sys.exit(main())
