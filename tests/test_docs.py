"""The docs stay true: every test that docs/rules.md cites exists, its sections are all there,
and no markdown link points outside the repository. Each check has a test showing it can fail."""

from __future__ import annotations

import ast
import re
import sys
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


# --- one home for each result: the README quotes figures, its rows link the page that holds them

HOMES = {"docs/ladder.md": (), "docs/bots.md": (), "models/README.md": ("docs/models.md",)}
"""The pages a measured figure lives on, each with the site page that shows it (the models
page shows every model card in the folder, so a card's figure is at home there)."""
ROW_LINK = re.compile(r"\]\(([\w/.-]+\.md)(?:#[\w-]*)?\)")
FIGURE = re.compile(r"(?<![\w.,+-])[+-]?\d+(?:,\d{3})*(?:\.\d+)?%?")


def figures(text: str) -> list[str]:
    """The measured figures of a text: numbers with a sign, a decimal point or a percent sign
    (a count such as "1,000 games", a budget such as "200 ms" or the level of "95% CI" is not
    one); U+2212 minus is read as "-"."""
    text = CODE_SPAN.sub("", text.replace("\u2212", "-")).replace("95% CI", "")
    return [f for f in FIGURE.findall(text) if f[0] in "+-" or "." in f or f.endswith("%")]


def home_text(home: str) -> str:
    """A home page's text as a reader finds it: the file, and for a page the site builds from
    includes, every file it includes."""
    text = (ROOT / home).read_text(encoding="utf-8")
    for page in HOMES[home]:
        included = re.findall(r"^<!-- include (\S+) -->$", (ROOT / page).read_text(), re.M)
        text += "".join((ROOT / f).read_text(encoding="utf-8") for f in included)
    return text.replace("\u2212", "-")


def has_figure(text: str, figure: str) -> bool:
    return re.search(r"(?<![\w.,+-])" + re.escape(figure) + r"(?![\d])", text) is not None


def quoted_figures(readme: str) -> list[tuple[str, list[str], str]]:
    """(figure, the homes its row links, the row's spec) for every figure of each README table
    row that links a home page."""
    quoted = []
    for line in readme.splitlines():
        homes = [h for h in ROW_LINK.findall(line) if h in HOMES] if line.startswith("|") else []
        if homes:
            cells = re.sub(r"\]\([^)]*\)", "]", line)  # link targets hold no figures
            spec = line.split("|")[1].strip()
            quoted += [(f, homes, spec) for f in figures(cells)]
    return quoted


def misquoted(readme: str) -> list[str]:
    """The README's figures that none of the home pages its row links holds."""
    texts = {home: home_text(home) for home in HOMES}
    return [
        f"{spec}: {figure} is not on {' or '.join(homes)}"
        for figure, homes, spec in quoted_figures(readme)
        if not any(has_figure(texts[h], figure) for h in homes)
    ]


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


def test_every_figure_the_readme_quotes_is_on_the_page_it_links():
    """A figure of the README's players table is a quote: its row links the page that
    measured it (the ladder, the bots page or the model cards), and that page holds the same
    number, interval included."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    quoted = quoted_figures(readme)
    assert len(quoted) >= 40, "the README's players table should quote its figures with links"
    assert {h for _, homes, _ in quoted for h in homes} == set(HOMES)
    wrong = misquoted(readme)
    assert not wrong, "README figures that differ from their home page:\n" + "\n".join(wrong)


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


def test_figure_check_sees_a_figure_its_home_does_not_hold():
    assert figures(
        "+14.0 a hand (\u22123.0 to +10.9; 84.8%, 1,000 games, `psearch:200ms`, 200 ms)"
    ) == [
        "+14.0",
        "-3.0",
        "+10.9",
        "84.8%",
    ]
    ladder = home_text("docs/ladder.md")
    assert has_figure(ladder, "+14.0") and not has_figure(ladder, "+14.05")
    assert not has_figure("+14.0 a hand", "4.0")  # "+14.0" holds "4.0" but is another figure
    assert not has_figure("-14.0 a hand", "+14.0") and not has_figure("14.0%", "+14.0")
    row = "| `psearch` | x | **+14.5** a hand (+5.7 to +22.4) ([the ladder](docs/ladder.md#x)) |"
    assert misquoted(row) == ["`psearch`: +14.5 is not on docs/ladder.md"]
    assert misquoted(row.replace("+14.5", "+14.0")) == []
    unlinked = "| `psearch` | x | **+14.5** a hand ([experiments](docs/experiments.md)) |"
    assert quoted_figures(unlinked) == []  # only a row that links a home is checked


def test_the_ladders_elo_refit_from_its_pair_table_is_the_one_it_shows():
    """benchmarks/ladder_elo.py reads the ladder's pair table and fits the ratings again (to
    join later pairs to it): from the table alone it gives the ratings the page shows."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from ladder_elo import PAGE, page_pairs, ratings

    text = PAGE.read_text(encoding="utf-8")
    listing = text.split("Elo (maximum")[1].split("```")[0]  # the round-robin's own output
    shown = re.findall(r"^\s+(\S+)\s+(-?\d+) ± (\d+)$", listing, re.M)
    assert len(shown) == 9
    fitted = {name: (round(value), round(half)) for name, value, half in ratings(page_pairs(text))}
    assert {name: (int(v), int(h)) for name, v, h in shown} == fitted
