"""The policy file: what an exported policy is on disk, how it is written, read, checked and
upgraded. Torch is imported only to write or read the weights.

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
check the bytes it reads, so a damaged file would otherwise load and play badly) and are finite
(a diverged run writes NaN weights with a valid checksum), and that its metadata is plain data
of the right types (`metadata_problem`). Each failure is a
`PolicyLoadError` naming the file: "no policy file", "not a rummy500 policy file", "corrupt".
`PolicyAgent.load` (`rummy500_env.agents.policy`) then checks the rules and encodings.

Upgrading: a version-1 file is refused with the command that rewrites it in this format, the
same weights and metadata plus the checksum::

    python -m rummy500_env.agents.policy --upgrade models/rummy500-ppo-standard.pt
"""

from __future__ import annotations

import argparse
import hashlib
import pickle
import re
import sys
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rummy500_env.engine.errors import Rummy500Error
from rummy500_env.engine.files import write_atomically
from rummy500_env.engine.numbers import shown
from rummy500_env.engine.rules import Rules
from rummy500_env.rl.actions import ENCODING_VERSION, ActionCodec
from rummy500_env.rl.observation import OBSERVATION_VERSION, ObservationEncoder

FORMAT = "rummy500-policy"
FORMAT_VERSION = 2
ZIP_MAGIC = b"PK\x03\x04"
"""The first bytes of a zip archive, which is what ``torch.save`` writes."""
UPGRADE = "python -m rummy500_env.agents.policy --upgrade"


class PolicyLoadError(Rummy500Error):
    """A policy file that is missing, corrupt, truncated, or made for other rules or encodings."""


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

    blob = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "state_dict": state,
        "checksum": weights_checksum(state),
        "metadata": metadata,
    }
    write_atomically(path, lambda tmp: torch.save(blob, tmp))


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
        raise _unpickling_error(path, e) from None
    except Exception as e:  # damaged bytes surface from torch as many exception types
        raise _corrupt(path, e) from None
    if not isinstance(blob, dict) or blob.get("format") != FORMAT:
        raise PolicyLoadError(
            f"{str(path)!r} is not a rummy500 policy file (no format={FORMAT!r}); export one "
            "with python -m training.ppo or training.ppo.export_policy"
        )
    return blob


def _unpickling_error(path: Path, e: pickle.UnpicklingError) -> PolicyLoadError:
    """The error for a pickle torch's weights-only reader refused: its message tells Python
    objects, data a policy file never holds and code it would call (unsafe) from damaged bytes
    (`_corrupt`), and each needs its own advice."""
    if "Unsupported global" in str(e):  # pickled Python objects, refused by weights_only
        return PolicyLoadError(
            f"{str(path)!r} is not a rummy500 policy file: it holds Python objects, not "
            "only tensors and plain data (a whole model saved with torch.save?)"
        )
    opcode = re.search(r"Unsupported operand (\d+)", str(e))
    if opcode:  # plain data torch's reader does not take, e.g. LONG4 (139): a huge int
        return PolicyLoadError(
            f"{str(path)!r} is not a rummy500 policy file: its pickle holds data torch's "
            f"weights-only reader does not take (pickle opcode {opcode[1]}"
            f"{': an int of over 600 digits' if opcode[1] == '139' else ''}), which a "
            "policy file never holds"
        )
    if "Weights only load failed" in str(e):  # a global weights_only blocks outright
        found = re.search(r"GLOBAL (\S+)", str(e))
        return PolicyLoadError(
            f"{str(path)!r} is unsafe and was not loaded: its pickle would call Python "
            f"code ({found[1][:60] if found else 'a blocked global'}), which a policy file "
            "never holds. Do not open it by other means unless you trust where it came "
            "from"
        )
    return _corrupt(path, e)


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
    bad = non_finite_weights(blob["state_dict"])
    if bad is not None:  # a diverged run's weights pass their checksum, and play nothing
        raise PolicyLoadError(
            f"{str(path)!r} is corrupt: non-finite weights in {bad[:80]!r} (NaN or infinity, "
            "from a training run that diverged); export the policy again from a checkpoint "
            "taken before it did"
        )
    return blob


def non_finite_weights(state_dict: Mapping[str, Any]) -> str | None:
    """The name of the first tensor of a state dict holding a NaN or an infinity, or None when
    every value is finite."""
    import torch

    for name in sorted(state_dict):
        tensor = state_dict[name]
        if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
            return str(name)
    return None


def file_digest(path: str | Path) -> str:
    """The SHA-256 of a file's bytes: what a run or a tournament keeps of a policy file it
    plays, so that resuming against a file changed since is refused."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


METADATA_TYPES: dict[str, tuple[type, ...]] = {
    "package_version": (str,),
    "commit": (str, type(None)),  # None: exported outside a git checkout (an installed wheel)
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
_TYPE_NAMES = {
    str: "a str",
    int: "an int",
    float: "a float",
    dict: "an object",
    list: "a list",
    type(None): "null",
}


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
            write_atomically(target, lambda tmp: tmp.write_bytes(path.read_bytes()))
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
