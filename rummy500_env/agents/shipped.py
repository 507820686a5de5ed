"""The shipped policies: the files ``models/rummy500-ppo-<name>.pt`` of the repository travel
inside the wheel (as ``rummy500_env/models/``) and load by name, ``PolicyAgent.load("standard")``
(`shipped_policies` lists them; an agent spec takes the name too: ``python -m
training.evaluate standard greedy``); a folder or a non-policy file of that name in the working
directory does not hide it, and a policy file of that name loads instead, with a warning
(`policy_path`). `shipped_for` finds the one made for a table's rules and size (the agent spec
``model``), and `fitting` names those that fit a refused policy's table. Torch-free but for
reading a file's metadata.
"""

from __future__ import annotations

import json
import warnings
import zipfile
from pathlib import Path

from rummy500_env.agents.policy_file import ZIP_MAGIC, PolicyLoadError, load_policy_file
from rummy500_env.engine.errors import Rummy500Error
from rummy500_env.engine.rules import PRESETS, Rules

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
        f"no shipped policy is made for the rules {describe_rules(wanted)}; shipped: "
        f"{'; '.join(f'{n} ({describe_rules(r)})' for n, r in catalogue.items()) or 'none found'}. "
        "Train one with python -m training.ppo --rules ..."
    )


def fitting(rules: Rules) -> str:
    """The shipped policies made for `rules`, as a refusal's last line."""
    fits = [name for name, made_for in shipped_rules().items() if made_for == rules]
    if fits:
        return f"\n  shipped policies for the current rules: {', '.join(fits)}"
    return "\n  no shipped policy is made for the current rules"


def describe_rules(rules: Rules) -> str:
    """Rules as ``--rules`` takes them: the nearest preset and the fields that differ from it
    (``standard,players=3``)."""
    fields = rules.to_dict()
    best = min(
        PRESETS, key=lambda p: sum(Rules(**PRESETS[p]).to_dict()[k] != v for k, v in fields.items())
    )
    base = Rules(**PRESETS[best]).to_dict()
    changed = [f"{k}={json.dumps(v)}" for k, v in fields.items() if base[k] != v]
    return ",".join([best, *changed])
