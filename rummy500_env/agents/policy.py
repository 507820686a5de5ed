"""`PolicyAgent`: plays an exported policy file, with nothing but torch and this package.

An exported policy is one ``torch.save`` file (a zip archive) holding a dict:

``format``            ``"rummy500-policy"``
``format_version``    2 (version 1 had no checksum: see "Upgrading" below)
``state_dict``        the weights of the network its metadata names (tensors only; the kinds
                      are in `rummy500_env.agents.networks`: a flat ``mlp`` or ``cards``)
``checksum``          ``"sha256:<hex>"`` of the weights (`weights_checksum`)
``metadata``          JSON-compatible: package version, observation and action encoding
                      versions and sizes, rules, network architecture, training config,
                      evaluation results

It loads with ``torch.load(weights_only=True)`` (no pickled code runs) and is checked before
use: that it is a policy file at all, that its weights match their checksum (torch does not
check the bytes it reads, so a damaged file would otherwise load and play badly), and that it
was made for the rules and encodings asked for. Each failure is a `PolicyLoadError` naming the
file: "no policy file", "not a rummy500 policy file", "corrupt", or stored vs current rules
and encodings.

Shipped policies: the files ``models/rummy500-ppo-<name>.pt`` of the repository travel inside
the wheel (as ``rummy500_env/models/``) and load by name, ``PolicyAgent.load("standard")``
(`shipped_policies` lists them; an agent spec takes the name too: ``python -m
training.evaluate standard greedy``); a folder or a non-policy file of that name in the working
directory does not hide it, and a policy file of that name loads instead, with a warning
(`policy_path`). `shipped_for` finds the one made for a table's rules
and size (the agent spec ``model``), and a policy refused for other rules names those that
fit.

Upgrading: a version-1 file is refused with the command that rewrites it in this format, the
same weights and metadata plus the checksum::

    python -m rummy500_env.agents.policy --upgrade models/rummy500-ppo-standard.pt
"""

from __future__ import annotations

import argparse
import hashlib
import json
import pickle
import re
import sys
import warnings
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from rummy500_env.engine.errors import Rummy500Error
from rummy500_env.engine.numbers import shown
from rummy500_env.engine.rules import PRESETS, Rules
from rummy500_env.rl.actions import ENCODING_VERSION, ActionCodec
from rummy500_env.rl.observation import FEATURE_VERSIONS, OBSERVATION_VERSION, ObservationEncoder

FORMAT = "rummy500-policy"
FORMAT_VERSION = 2
ACTIVATIONS = ("tanh", "relu")
ZIP_MAGIC = b"PK\x03\x04"
"""The first bytes of a zip archive, which is what ``torch.save`` writes."""
UPGRADE = "python -m rummy500_env.agents.policy --upgrade"


class PolicyLoadError(Rummy500Error):
    """A policy file that is missing, corrupt, truncated, or made for other rules or encodings."""


class PolicyInputError(Rummy500Error):
    """An observation or action mask that is not what the policy takes; says what it expects."""


SHIPPED_PREFIX = "rummy500-ppo-"
"""A shipped policy's file is ``SHIPPED_PREFIX + name + ".pt"``."""


def shipped_policies() -> dict[str, Path]:
    """The shipped policies by name (``"standard"``: ``rummy500-ppo-standard.pt``), found in
    the installed package's ``models/`` folder, where the wheel puts them, or, in a checkout,
    the repository's top-level ``models/``. Torch-free, so the agent registry can ask."""
    package = Path(__file__).resolve().parents[1]
    folders = [package / "models"]
    if (package.parent / "pyproject.toml").is_file():  # a checkout (or an editable install)
        folders.insert(0, package.parent / "models")
    found: dict[str, Path] = {}
    for folder in folders:  # the package's own copy wins
        for f in sorted(folder.glob(f"{SHIPPED_PREFIX}*.pt")):
            found[f.stem.removeprefix(SHIPPED_PREFIX)] = f
    return dict(sorted(found.items()))  # by name ("standard" before "standard-3p")


def policy_path(path: str | Path) -> Path:
    """The file `PolicyAgent.load` reads: `path` itself, or, for a bare name such as
    ``"standard"``, the shipped policy of that name.

    A bare name is a shipped policy's unless a policy file of that name is here: a folder
    ``standard/`` (a run folder, say) or a file that is no policy (`is_policy_file`) does not
    hide the shipped one. When both a policy file and a shipped policy have the name, the file
    here loads, as any path does, with a warning that names both (the shipped one loads by
    its full path)."""
    given = Path(path)
    if given.suffix or len(given.parts) != 1:
        return given
    shipped = shipped_policies().get(str(path))
    if shipped is None:
        if given.exists():
            return given
        raise PolicyLoadError(
            f"no policy file at {str(path)!r}, and no shipped policy of that name; shipped: "
            f"{', '.join(shipped_policies()) or 'none found'}"
        )
    if not is_policy_file(given):
        return shipped
    warnings.warn(
        f"{str(path)!r} names both a policy file here ({given.resolve()}) and the shipped policy "
        f"{shipped}; loading the one here. Give the shipped one by its path, or rename the "
        "file here",
        UserWarning,
        stacklevel=3,
    )
    return given


def is_policy_file(path: Path) -> bool:
    """Whether `path` is a file as ``torch.save`` writes one (a zip archive holding a
    ``data.pkl``): what a policy file is before its contents are read. Torch-free."""
    try:
        with open(path, "rb") as f:
            if f.read(len(ZIP_MAGIC)) != ZIP_MAGIC:
                return False
        with zipfile.ZipFile(path) as z:
            return any(n.endswith("/data.pkl") for n in z.namelist())
    except (OSError, zipfile.BadZipFile, ValueError):  # a folder, unreadable, damaged
        return False


def shipped_rules() -> dict[str, Rules]:
    """Each shipped policy's rules, read from its file's metadata (a file that does not read
    is left out: loading it by name says why)."""
    out: dict[str, Rules] = {}
    for name, path in shipped_policies().items():
        try:
            out[name] = Rules.from_dict(load_policy_file(path)["metadata"]["rules"])
        except (Rummy500Error, KeyError, TypeError):
            continue
    return out


def shipped_for(wanted: Rules) -> str:
    """The name of the shipped policy made for exactly `wanted` (the table size included);
    `PolicyLoadError` listing what is shipped when none is."""
    catalogue = shipped_rules()
    for name, made_for in catalogue.items():
        if made_for == wanted:
            return name
    raise PolicyLoadError(
        f"no shipped policy is made for the rules {_describe(wanted)}; shipped: "
        f"{'; '.join(f'{n} ({_describe(r)})' for n, r in catalogue.items()) or 'none found'}. "
        "Train one with python -m training.ppo --rules ..."
    )


def _fitting(rules: Rules) -> str:
    """The shipped policies made for `rules`, as a refusal's last line."""
    fits = [name for name, made_for in shipped_rules().items() if made_for == rules]
    if fits:
        return f"\n  shipped policies for the current rules: {', '.join(fits)}"
    return "\n  no shipped policy is made for the current rules"


def _describe(rules: Rules) -> str:
    """Rules as ``--rules`` takes them: the nearest preset and the fields that differ from it
    (``standard,players=3``)."""
    fields = rules.to_dict()
    best = min(
        PRESETS, key=lambda p: sum(Rules(**PRESETS[p]).to_dict()[k] != v for k, v in fields.items())
    )
    base = Rules(**PRESETS[best]).to_dict()
    changed = [f"{k}={json.dumps(v)}" for k, v in fields.items() if base[k] != v]
    return ",".join([best, *changed])


def current_encoding(rules: Rules) -> dict[str, Any]:
    """The encoding facts a policy file must match. ``observation_size`` is the size of the
    observation's feature part, what a network reads (`ObservationEncoder.features_size`);
    a file of any version in `FEATURE_VERSIONS` reads the same features."""
    return {
        "observation_version": OBSERVATION_VERSION,
        "action_version": ENCODING_VERSION,
        "observation_size": ObservationEncoder(rules).features_size,
        "action_size": ActionCodec(rules).size,
    }


def build_network(obs_size: int, net_arch: list[int], action_size: int, activation: str) -> Any:
    """The ``mlp`` actor as a plain torch module (see `networks` for every kind)."""
    from rummy500_env.agents.networks import mlp

    return mlp(obs_size, net_arch, action_size, activation)


def weights_checksum(state_dict: Mapping[str, Any]) -> str:
    """``"sha256:<hex>"`` over the tensors of a state dict in sorted key order: each one's
    name, dtype, shape and bytes, so renaming, reshaping or changing any weight changes it."""
    import torch

    h = hashlib.sha256()
    for name in sorted(state_dict):
        t = state_dict[name].detach().cpu().contiguous()
        data = t.reshape(-1).view(torch.uint8).numpy().tobytes()
        h.update(f"{name}|{t.dtype}|{tuple(t.shape)}|{len(data)}|".encode())
        h.update(data)
    return "sha256:" + h.hexdigest()


def save_policy(path: str | Path, network: Any, metadata: dict[str, Any]) -> None:
    """Write a policy file (see the module docstring) atomically: a temporary file, then a
    rename."""
    state = {k: v.detach().cpu().clone() for k, v in network.state_dict().items()}
    _write(Path(path), state, metadata)


def _write(path: Path, state: dict[str, Any], metadata: dict[str, Any]) -> None:
    import torch

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    blob = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "state_dict": state,
        "checksum": weights_checksum(state),
        "metadata": metadata,
    }
    torch.save(blob, tmp)
    tmp.replace(path)


def _read(path: Path) -> dict[str, Any]:
    """The dict a policy file holds, before any check of its contents; `PolicyLoadError` when
    the file is missing, not a torch zip archive, or damaged."""
    import torch

    if not path.is_file():
        raise PolicyLoadError(f"no policy file at {str(path)!r}")
    with open(path, "rb") as f:
        magic = f.read(len(ZIP_MAGIC))
    if magic != ZIP_MAGIC:
        raise PolicyLoadError(
            f"{str(path)!r} is not a rummy500 policy file: it is not a zip archive as torch.save "
            "writes (text, or some other file?); export one with python -m training.ppo"
        )
    try:
        with zipfile.ZipFile(path) as z:
            names = z.namelist()
    except (zipfile.BadZipFile, OSError, ValueError):
        raise PolicyLoadError(
            f"{str(path)!r} is corrupt: a truncated or damaged zip archive (its directory is "
            "unreadable); copy or export it again"
        ) from None
    if not any(n.endswith("/data.pkl") for n in names):
        raise PolicyLoadError(
            f"{str(path)!r} is not a rummy500 policy file: a zip archive, but not one torch.save "
            "wrote (a stable-baselines3 checkpoint? export the policy with python -m "
            "training.ppo)"
        )
    try:
        blob = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as e:
        if "Unsupported global" in str(e):  # pickled Python objects, refused by weights_only
            raise PolicyLoadError(
                f"{str(path)!r} is not a rummy500 policy file: it holds Python objects, not "
                "only tensors and plain data (a whole model saved with torch.save?)"
            ) from None
        opcode = re.search(r"Unsupported operand (\d+)", str(e))
        if opcode:  # plain data torch's reader does not take, e.g. LONG4 (139): a huge int
            raise PolicyLoadError(
                f"{str(path)!r} is not a rummy500 policy file: its pickle holds data torch's "
                f"weights-only reader does not take (pickle opcode {opcode[1]}"
                f"{': an int of over 600 digits' if opcode[1] == '139' else ''}), which a "
                "policy file never holds"
            ) from None
        if "Weights only load failed" in str(e):  # a global weights_only blocks outright
            found = re.search(r"GLOBAL (\S+)", str(e))
            raise PolicyLoadError(
                f"{str(path)!r} is unsafe and was not loaded: its pickle would call Python "
                f"code ({found[1][:60] if found else 'a blocked global'}), which a policy file "
                "never holds. Do not open it by other means unless you trust where it came "
                "from"
            ) from None
        raise _corrupt(path, e) from None
    except Exception as e:  # damaged bytes surface from torch as many exception types
        raise _corrupt(path, e) from None
    if not isinstance(blob, dict) or blob.get("format") != FORMAT:
        raise PolicyLoadError(
            f"{str(path)!r} is not a rummy500 policy file (no format={FORMAT!r}); export one "
            "with python -m training.ppo or training.ppo.export_policy"
        )
    return blob


def _corrupt(path: Path, e: BaseException) -> PolicyLoadError:
    first = str(e).splitlines()[0] if str(e) else ""
    return PolicyLoadError(
        f"{str(path)!r} is corrupt: torch could not read it ({type(e).__name__}: {first[:120]})"
    )


def load_policy_file(path: str | Path) -> dict[str, Any]:
    """Read and check the container of a policy file: its format, version, parts and weights'
    checksum. Errors name the file and what is wrong with it."""
    path = Path(path)
    blob = _read(path)
    version = blob.get("format_version")
    if version == 1:
        raise PolicyLoadError(
            f"{str(path)!r} has format_version 1, without a checksum; this package reads "
            f"{FORMAT_VERSION}. Upgrade it (same weights and metadata): {UPGRADE} {path}"
        )
    if version != FORMAT_VERSION:
        raise PolicyLoadError(
            f"{str(path)!r} has format_version {version!r}; this package reads {FORMAT_VERSION}"
        )
    for key in ("state_dict", "checksum", "metadata"):
        if key not in blob:
            raise PolicyLoadError(f"{str(path)!r} is corrupt: it lacks {key!r}")
    meta = blob["metadata"]
    for key, kind in (("metadata", dict), ("state_dict", dict), ("checksum", str)):
        if not isinstance(blob[key], kind):
            raise PolicyLoadError(f"{str(path)!r} is corrupt: its {key} is not a {kind.__name__}")
    problem = metadata_problem(meta)
    if problem:
        raise PolicyLoadError(f"{str(path)!r}: its metadata's {problem}")
    try:
        computed = weights_checksum(blob["state_dict"])
    except (AttributeError, TypeError, RuntimeError):  # not a dict of tensors
        computed = None
    if computed != blob["checksum"]:
        raise PolicyLoadError(
            f"{str(path)!r} is corrupt: its weights do not match their checksum "
            f"({blob['checksum']!r}); copy or export it again"
        )
    return blob


METADATA_TYPES: dict[str, tuple[type, ...]] = {
    "package_version": (str,),
    "commit": (str,),
    "rules": (dict, str),
    "encoding": (dict,),
    "network": (dict,),
    "training": (dict,),
    "evaluation": (dict,),
    "wall_s": (int, float),
}
"""The metadata fields this package writes, with their types; a file may hold others (plain
data too)."""
ENCODING_FIELDS = ("observation_version", "action_version", "observation_size", "action_size")
"""The ``encoding`` entries, each an int."""
NETWORK_TYPES: dict[str, type] = {
    "kind": str,
    "activation": str,
    "net_arch": list,
    "channels": int,
    "blocks": int,
    "hidden": int,
}
"""The ``network`` entries' types; `networks.check_spec` then checks their values."""
METADATA_DEPTH = 16
"""Levels of nesting metadata may have (the shipped files have 4)."""
_TYPE_NAMES = {str: "a str", int: "an int", float: "a float", dict: "an object", list: "a list"}


def metadata_problem(meta: dict[str, Any]) -> str:
    """What is wrong with a policy file's metadata, as "<field> must be ..., not ..." ("" when
    nothing is): it must be plain data (objects with text keys, lists, text, numbers, true,
    false, null) no deeper than `METADATA_DEPTH`, and each field this package reads must have
    its type (`METADATA_TYPES`, `ENCODING_FIELDS`, `NETWORK_TYPES`), so a crafted file is
    refused by name before any value is used (``"activation": []`` was a bare TypeError)."""
    from rummy500_env.agents.networks import ACTIVATIONS, KINDS  # torch: loading needs it

    for key, value in meta.items():
        if not isinstance(key, str):
            return f"key {shown(key)} is not a str"
        found = _plain_data_problem(value, key[:40], 1)
        if found:
            return found
    checks: list[tuple[str, Any, tuple[type, ...], str]] = [
        (key, meta[key], kinds, "") for key, kinds in METADATA_TYPES.items() if key in meta
    ]
    encoding, network = meta.get("encoding"), meta.get("network")
    if isinstance(encoding, dict):
        checks += [
            (f"encoding.{k}", encoding[k], (int,), "") for k in ENCODING_FIELDS if k in encoding
        ]
    if isinstance(network, dict):
        allowed = {"kind": KINDS, "activation": tuple(ACTIVATIONS)}
        checks += [
            (f"network.{k}", network[k], (kind,), _one_of(allowed.get(k, ())))
            for k, kind in NETWORK_TYPES.items()
            if k in network
        ]
    for where, value, kinds, choices in checks:
        if not any(_is(value, kind) for kind in kinds):
            names = " or ".join(_TYPE_NAMES[kind] for kind in kinds)
            if kinds == (int, float):
                names = "a number"
            return f"{where} must be {names}{choices}, not {shown(value)}"
    return ""


def _is(value: object, kind: type) -> bool:
    """`isinstance`, except that a bool is no int or float here (JSON keeps them apart)."""
    return isinstance(value, kind) and not (isinstance(value, bool) and kind in (int, float))


def _one_of(choices: tuple[str, ...]) -> str:
    return f" ({' or '.join(repr(c) for c in choices)})" if choices else ""


def _plain_data_problem(value: object, where: str, depth: int) -> str:
    """Why `value` (at `where`, `depth` levels down) is not plain JSON-like data ("" if it is)."""
    if depth > METADATA_DEPTH:
        return f"{where} is nested deeper than {METADATA_DEPTH} levels"
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return f"{where} has a key {shown(key)} that is not a str"
            found = _plain_data_problem(item, f"{where}.{key[:40]}", depth + 1)
            if found:
                return found
        return ""
    if isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            found = _plain_data_problem(item, f"{where}[{i}]", depth + 1)
            if found:
                return found
        return ""
    if value is None or isinstance(value, (str, int, float)):
        return ""
    return (
        f"{where} is a {type(value).__name__}, not plain data (text, numbers, true/false, "
        "null, lists and objects)"
    )


def upgrade_policy_file(path: str | Path, out: str | Path | None = None) -> Path:
    """Rewrite a format-1 policy file in the current format (the same weights and metadata,
    plus their checksum), in place or to `out`; returns the path written. A file already in
    the current format is only checked (and copied to `out` if given)."""
    path = Path(path)
    target = Path(out) if out is not None else path
    blob = _read(path)
    if blob.get("format_version") == FORMAT_VERSION:
        load_policy_file(path)
        if target != path:
            target.write_bytes(path.read_bytes())
        return target
    if blob.get("format_version") != 1:
        raise PolicyLoadError(
            f"{str(path)!r} has format_version {blob.get('format_version')!r}: only 1 can be "
            f"upgraded to {FORMAT_VERSION}"
        )
    for key in ("state_dict", "metadata"):
        if key not in blob:
            raise PolicyLoadError(f"{str(path)!r} is corrupt: it lacks {key!r}")
    _write(target, dict(blob["state_dict"]), blob["metadata"])
    return target


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
        blob = load_policy_file(path)
        meta = blob["metadata"]
        try:
            stored_rules = Rules.from_dict(meta["rules"])
        except (KeyError, Rummy500Error, TypeError) as e:
            raise PolicyLoadError(f"{str(path)!r}: unreadable rules in metadata: {e}") from None
        if rules is not None and Rules.coerce(rules) != stored_rules:
            raise PolicyLoadError(
                f"{str(path)!r} was trained for other rules:\n  stored:  {stored_rules}\n"
                f"  current: {Rules.coerce(rules)}{_fitting(Rules.coerce(rules))}"
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


def main(argv: list[str] | None = None) -> int:
    """``python -m rummy500_env.agents.policy --upgrade FILE ...``: rewrite format-1 policy
    files in the current format (see the module docstring)."""
    ap = argparse.ArgumentParser(
        prog="python -m rummy500_env.agents.policy",
        description="Upgrade exported policy files to the current format (adds the checksum).",
    )
    ap.add_argument("--upgrade", nargs="+", metavar="FILE", required=True)
    args = ap.parse_args(argv)
    for name in args.upgrade:
        try:
            upgrade_policy_file(name)
            load_policy_file(name)
        except PolicyLoadError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        print(f"{name}: format_version {FORMAT_VERSION}, checksum verified")
    return 0


if __name__ == "__main__":
    sys.exit(main())
