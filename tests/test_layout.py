"""docs/architecture.md's Layout lists every module of the package and of `training/`, and
every top-level folder, and nothing that is not there: a module added, moved or removed without
its line fails here, naming it."""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ARCHITECTURE = ROOT / "docs" / "architecture.md"
CODE_FOLDERS = ("rummy500_env", "training")
"""The folders whose every ``.py`` file the Layout names."""
INDENT = 2
"""Spaces of indentation per folder level in the Layout."""


def layout_block(page: str) -> str:
    """The fenced block under the page's ``## Layout`` heading."""
    m = re.search(r"^## Layout\n.*?^```\n(.*?)^```$", page, re.M | re.S)
    assert m, "docs/architecture.md has no ## Layout section with a fenced block"
    return m.group(1)


def listed_paths(block: str) -> list[str]:
    """The repository paths a Layout block names, folders ending in ``/``.

    An entry is a name at an indentation of `INDENT` spaces per level, then what it owns; a line
    indented as far as the entries' descriptions continues the description above it.
    """
    lines = [line for line in block.splitlines() if line.strip()]
    first = lines[0]
    description_column = len(first) - len(first[len(first.split()[0]) :].lstrip())
    folders: list[str] = []
    paths = []
    for number, line in enumerate(lines, 1):
        indent = len(line) - len(line.lstrip())
        if indent >= description_column:
            continue
        name = line.split()[0]
        assert indent % INDENT == 0 and indent // INDENT <= len(folders), (
            f"Layout line {number} is indented {indent} spaces, not under a folder: {line!r}"
        )
        assert name.endswith(("/", ".py")), (
            f"Layout line {number}: {name!r} is neither a folder (name/) nor a module (.py)"
        )
        del folders[indent // INDENT :]
        path = "".join(folders) + name
        paths.append(path)
        if name.endswith("/"):
            folders.append(name)
    return paths


def ignored_folder(name: str) -> bool:
    """Whether .gitignore ignores a top-level folder of this name (build/, *.egg-info/...)."""
    patterns = [
        p.strip().rstrip("/")
        for p in (ROOT / ".gitignore").read_text(encoding="utf-8").splitlines()
        if p.strip().endswith("/") and not p.startswith("#")
    ]
    return any(fnmatch.fnmatch(name, p) for p in patterns)


def actual_paths() -> set[str]:
    """Every module (a package's ``__init__.py`` stands for its folder) under `CODE_FOLDERS`,
    every folder on the way to one, and every top-level folder of the repository."""
    paths = set()
    for top in CODE_FOLDERS:
        for module in (ROOT / top).rglob("*.py"):
            relative = module.relative_to(ROOT)
            if "__pycache__" in relative.parts:
                continue
            if module.name != "__init__.py":
                paths.add(relative.as_posix())
            for folder in relative.parents[:-1]:
                paths.add(folder.as_posix() + "/")
    for entry in ROOT.iterdir():
        if entry.is_dir() and not entry.name.startswith(".") and not ignored_folder(entry.name):
            paths.add(entry.name + "/")
    return paths


def differences(listed: list[str], actual: set[str]) -> list[str]:
    """What the Layout misses, what it names that is not there, and what it names twice."""
    missing = sorted(actual - set(listed))
    absent = sorted(p for p in set(listed) if not (ROOT / p).exists())
    twice = sorted({p for p in listed if listed.count(p) > 1})
    return (
        [f"not in docs/architecture.md's Layout: {p}" for p in missing]
        + [f"in the Layout but not in the repository: {p}" for p in absent]
        + [f"in the Layout twice: {p}" for p in twice]
    )


def test_the_layout_lists_every_module_and_top_level_folder():
    listed = listed_paths(layout_block(ARCHITECTURE.read_text(encoding="utf-8")))
    problems = differences(listed, actual_paths())
    assert not problems, "\n".join(problems)


# --- the check can fail


SAMPLE = """\
## Layout

```
rummy500_env/        the package
  engine/            the rules,
                     standard library only
    game.py          Game
  bench.py           the bench
training/            entry points
  ppo.py             runs ppo
```
"""


def test_the_layout_reader_builds_paths_from_indentation():
    assert listed_paths(layout_block(SAMPLE)) == [
        "rummy500_env/",
        "rummy500_env/engine/",
        "rummy500_env/engine/game.py",
        "rummy500_env/bench.py",
        "training/",
        "training/ppo.py",
    ]


def test_a_module_missing_from_the_layout_is_named():
    listed = sorted(actual_paths())
    without = [p for p in listed if p != "rummy500_env/rl/vector.py"]
    assert differences(without, actual_paths()) == [
        "not in docs/architecture.md's Layout: rummy500_env/rl/vector.py"
    ]
    extra = [*listed, "rummy500_env/agents/gone.py"]
    assert differences(extra, actual_paths()) == [
        "in the Layout but not in the repository: rummy500_env/agents/gone.py"
    ]
