"""The README's two commands are where .ci/run and users find them."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def command(marker: str) -> str:
    text = (ROOT / "README.md").read_text()
    m = re.search(rf"<!-- {marker} -->\n```bash\n(.+?)\n```\n<!-- /{marker} -->", text, re.S)
    assert m, f"README has no {marker} block"
    return m.group(1)


def test_readme_opens_with_the_two_commands():
    text = (ROOT / "README.md").read_text()
    main, test = text.index("<!-- main-command -->"), text.index("<!-- test-command -->")
    assert main < test < text.index("##")
    assert "pytest" in command("test-command") and "ruff check" in command("test-command")
    assert command("main-command").startswith("python3 -m venv")


def test_ci_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text()
    assert "<!-- test-command -->" in ci and 'bash -euo pipefail -c "$TEST_COMMAND"' in ci
