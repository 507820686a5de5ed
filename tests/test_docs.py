"""The docs stay true: every test that docs/rules.md cites exists, its sections are all there,
and no markdown link points outside the repository. Each check has a test showing it can fail."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RULES = ROOT / "docs" / "rules.md"

REFERENCE = re.compile(r"\b(tests/[\w/]+\.py)::(\w+)")
SECTION = re.compile(r"^#{1,6}\s+§(\d+)\b", re.M)
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]*)")  # [text](target), ![alt](target)
LINK_DEFINITION = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)", re.M)  # [name]: target
FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.M | re.S)
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1", re.S)


def defined_tests(path: Path) -> set[str]:
    """Names of the module-level test functions of a test file."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return {
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test")
    }


def references(text: str) -> list[tuple[str, str]]:
    """Every `tests/file.py::test_name` reference in a text, in order."""
    return REFERENCE.findall(text)


def broken_references(text: str) -> list[str]:
    """The references that name no existing file, or no test function in their file."""
    known: dict[str, set[str]] = {}
    broken = []
    for file, name in references(text):
        if file not in known:
            path = ROOT / file
            known[file] = defined_tests(path) if path.is_file() else set()
        if name not in known[file]:
            broken.append(f"{file}::{name}")
    return broken


def section_numbers(text: str) -> list[int]:
    """The § numbers of the headings, in order."""
    return [int(n) for n in SECTION.findall(text)]


def link_targets(text: str) -> list[str]:
    """Targets of the markdown links of a text (code blocks and code spans are not links)."""
    prose = CODE_SPAN.sub("", FENCE.sub("", text))
    return LINK.findall(prose) + LINK_DEFINITION.findall(prose)


def outside_links(text: str) -> list[str]:
    """Link targets that leave the repository: a parent path or an absolute path."""
    return [t for t in link_targets(text) if t.startswith(("../", "/"))]


def markdown_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


# --- the checks


def test_every_test_reference_in_rules_names_an_existing_test():
    text = RULES.read_text(encoding="utf-8")
    assert len(references(text)) >= 100, "docs/rules.md should cite its tests"
    broken = broken_references(text)
    assert not broken, "docs/rules.md cites tests that do not exist:\n" + "\n".join(broken)


def test_rules_has_sections_1_to_7_in_order():
    assert section_numbers(RULES.read_text(encoding="utf-8")) == [1, 2, 3, 4, 5, 6, 7]


def test_no_markdown_link_leaves_the_repository():
    found = [
        f"{path.relative_to(ROOT)}: {target}"
        for path in markdown_files()
        for target in outside_links(path.read_text(encoding="utf-8"))
    ]
    assert not found, "links that leave the repository:\n" + "\n".join(found)


# --- the checks can fail


def test_reference_checker_rejects_a_made_up_name():
    real = "tests/test_docs.py::test_reference_checker_rejects_a_made_up_name"
    text = (
        f"`{real}`, `tests/test_rules_default.py::test_no_such_rule` and "
        "tests/test_no_such_file.py::test_anything"
    )
    assert references(text)[0] == ("tests/test_docs.py", real.split("::")[1])
    assert broken_references(text) == [
        "tests/test_rules_default.py::test_no_such_rule",
        "tests/test_no_such_file.py::test_anything",
    ]
    # A helper that is not a test does not count as one.
    assert broken_references("tests/test_docs.py::markdown_files") == [
        "tests/test_docs.py::markdown_files"
    ]


def test_section_check_sees_a_missing_or_misplaced_section():
    assert section_numbers("# Title\n## §1 One\ntext §2\n### §2 Two\n## §3 Three\n") == [1, 2, 3]
    assert section_numbers("## §1 One\n## §3 Three\n") != [1, 2, 3, 4, 5, 6, 7]
    assert section_numbers("## §2 Two\n## §1 One\n") == [2, 1]


def test_link_check_flags_parent_and_absolute_paths_only():
    text = (
        "[rules](../shared/RULES.md) and ![img](/abs/pic.png) and [ok](docs/rules.md) and "
        "[web](https://example.com) and [anchor](#scoring)\n"
        "[ref]: ../elsewhere.md\n"
        "`[code](../not/a/link.md)`\n"
        "```\n[fenced](../not/a/link.md)\n```\n"
    )
    assert outside_links(text) == ["../shared/RULES.md", "/abs/pic.png", "../elsewhere.md"]
