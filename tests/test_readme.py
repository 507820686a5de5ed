"""The README's two commands: `.ci/run` extracts and runs exactly the test command, and the main
command is what the README's own words around it say it is; and the env page's promises that a
test can hold to the code."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
CI = (ROOT / ".ci" / "run").read_text()
ENV_PAGE = (ROOT / "docs" / "env.md").read_text()
VENV = "python3 -m venv .venv && . .venv/bin/activate && "


def command(marker: str) -> str:
    m = re.search(rf"<!-- {marker} -->\n```bash\n(.+?)\n```\n<!-- /{marker} -->", README, re.S)
    assert m, f"README has no {marker} block"
    return m.group(1)


def ci_extracts(readme: str, folder: Path) -> str:
    """What `.ci/run`'s own ``TEST_COMMAND=...`` line extracts from `readme`, run by bash in
    `folder` holding only that README."""
    (line,) = [x for x in CI.splitlines() if x.startswith("TEST_COMMAND=")]
    (folder / "README.md").write_text(readme)
    out = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", f'{line}\nprintf %s "$TEST_COMMAND"'],
        capture_output=True,
        text=True,
        cwd=folder,
        check=True,
    )
    return out.stdout


def torch_pins(text: str) -> set[str]:
    return set(re.findall(r"torch==([0-9][0-9.]*)", text))


def test_readme_opens_with_the_two_commands():
    main, test = README.index("<!-- main-command -->"), README.index("<!-- test-command -->")
    assert main < test < README.index("##")
    assert (
        len(command("main-command").splitlines()) == len(command("test-command").splitlines()) == 1
    )


def test_ci_extracts_exactly_the_readme_test_command(tmp_path):
    """`.ci/run`'s extraction, run on the README, gives the test command character for
    character; on a README whose command changed it gives the changed one."""
    test = command("test-command")
    assert ci_extracts(README, tmp_path) == test
    changed = README.replace(test, test + " -x")
    assert ci_extracts(changed, tmp_path) == test + " -x"


def test_ci_runs_the_extracted_command_unchanged_from_the_repository_root():
    """Assigned once, never touched again, run once with bash's strict flags, after the
    ``cd`` to the repository root."""
    assert len(re.findall(r"^\s*(?:export\s+)?TEST_COMMAND=", CI, re.M)) == 1
    runs = [x.strip() for x in CI.splitlines() if "$TEST_COMMAND" in x and "echo" not in x]
    assert runs == ['bash -euo pipefail -c "$TEST_COMMAND"']
    cd = CI.index('cd "$(dirname "$0")/.."')
    assert cd < CI.index("TEST_COMMAND=") < CI.index('bash -euo pipefail -c "$TEST_COMMAND"')


def test_the_test_command_installs_torch_as_ci_does_then_checks_and_tests():
    test = command("test-command")
    assert test.startswith(VENV)
    steps = test.removeprefix(VENV).split(" && ")
    assert steps == [
        f"pip install torch=={next(iter(torch_pins(test)))}",
        'pip install -e ".[test]"',
        "ruff check .",
        "ruff format --check .",
        "mypy",
        "python -m pytest",
    ]
    assert torch_pins(CI) == torch_pins(test)


def test_the_main_command_is_what_the_readme_says_it_is():
    """The words above the main command: Python 3.10+, the CPU build of the test command's
    pinned torch, the train extra, ``python -m training.ppo`` with no flags running the
    packaged default config ``ppo`` into ``runs/ppo_standard_hand_s0/``."""
    pytest.importorskip("tyro")
    from rummy500_env.training.ppo import Args, parse_args

    main = command("main-command")
    assert main.startswith(VENV)
    (pin,) = torch_pins(main)
    assert main.removeprefix(VENV).split(" && ") == [
        f"pip install torch=={pin}",
        'pip install -e ".[train]"',
        "python -m training.ppo",
    ]
    assert torch_pins(command("test-command")) == {pin}
    pyproject = (ROOT / "pyproject.toml").read_text()  # (tomllib is 3.11+; this runs on 3.10)
    train = re.search(r"^train = \[\n\s+\"torch>=([\d.]+),<([\d.]+)\"", pyproject, re.M)
    assert train, "the train extra's first requirement is no longer a torch range"
    low, high = (tuple(map(int, v.split("."))) for v in train.groups())
    assert low <= tuple(map(int, pin.split("."))) < high

    intro = README[: README.index("<!-- main-command -->")]
    after = README[README.index("<!-- /main-command -->") :][:400]
    python = re.search(r"Python (3\.\d+)\+", intro)
    assert python and f'requires-python = ">={python.group(1)}"' in pyproject
    default = re.search(r"default config \(`(\w+)`, packaged in\s+`([\w/]+)`", intro)
    assert default, "the README no longer names the default config"
    assert Args.TRAINER == default.group(1)
    assert (ROOT / default.group(2) / f"{default.group(1)}.yaml").is_file()
    folder = re.search(r"run folder \(`(runs/[\w]+)/`", after)
    args, resuming = parse_args([])
    assert folder and not resuming and str(args.run_path) == folder.group(1)


def test_the_env_before_reset_is_the_clear_error_the_env_page_promises():
    """docs/env.md: "Using an env before reset() ... raises Rummy500Error saying to call it":
    for `env()` too, the package's error saying to call reset(), not PettingZoo's assertion."""
    assert "Using an env before `reset()`" in ENV_PAGE
    import rummy500_env
    from rummy500_env import Rummy500Error

    for make in (rummy500_env.env, rummy500_env.raw_env):
        for call in ("step", "last", "observe", "render", "state"):
            e = make(render_mode="ansi")
            args = {"step": (0,), "observe": ("player_0",)}.get(call, ())
            with pytest.raises(Rummy500Error, match=r"call reset\(\) before"):
                getattr(e, call)(*args)


def test_every_torch_install_in_the_docs_is_the_pinned_one():
    """An unpinned ``pip install torch`` pulls whatever is newest (a CUDA build on Linux);
    every one in the README and docs/ names the test command's version."""
    (pin,) = torch_pins(command("test-command"))
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for found in re.findall(r"pip install torch\b(?:==[\d.]+)?", page.read_text()):
            assert found == f"pip install torch=={pin}", f"{page.name}: {found}"


def test_the_single_agent_signature_is_the_constructors():
    """docs/env.md lists `Rummy500SingleAgentEnv`'s arguments in the constructor's order."""
    import inspect

    from rummy500_env import Rummy500SingleAgentEnv

    m = re.search(r"`Rummy500SingleAgentEnv\(([^)]*)\)`", ENV_PAGE)
    assert m, "docs/env.md no longer gives the signature"
    listed = [a.strip() for a in m.group(1).replace("\n", " ").split(",")]
    assert listed == list(inspect.signature(Rummy500SingleAgentEnv).parameters)


def test_the_readme_is_a_front_door_that_reaches_every_page():
    """At most 250 lines, and a link to every page of docs/ (those the site fills from another
    file are reached through it: the home page is the README, the changelog is CHANGELOG.md,
    the models page is models/README.md)."""
    assert len(README.splitlines()) <= 250, "the README grew: move the details to a docs/ page"
    linked = set(re.findall(r"\]\((?:\./)?([\w/.-]+\.md)(?:#[\w-]*)?\)", README))
    filled = {"docs/index.md": "README.md", "docs/changelog.md": "CHANGELOG.md"}
    filled["docs/models.md"] = "models/README.md"
    pages = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").rglob("*.md"))
    unreached = [p for p in pages if filled.get(p, p) not in linked and p != "docs/index.md"]
    assert unreached == [], f"pages the README does not link: {unreached}"


def test_no_doc_speaks_of_issue_numbers():
    """Readers of the repository cannot open the project's issues: the README, docs/, the
    changelog and the model cards name what changed instead."""
    texts = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))]
    texts += sorted((ROOT / "models").glob("*.md"))
    found = [
        f"{path.relative_to(ROOT)}: {m.group(0)!r}"
        for path in texts
        for m in re.finditer(r"\bissues? (?:#)?\d+", path.read_text(encoding="utf-8"), re.I)
    ]
    assert found == [], "\n".join(found)
