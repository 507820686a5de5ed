"""The documentation site's own pieces, without MkDocs (.ci/run builds the site with
``mkdocs build --strict``): the hooks that fill pages from the repository's text
(docs/mkdocs_hooks.py) and the navigation, which must list every page."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
_spec = importlib.util.spec_from_file_location("mkdocs_hooks", DOCS / "mkdocs_hooks.py")
assert _spec is not None and _spec.loader is not None
hooks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(hooks)


def test_a_docstring_table_becomes_a_markdown_table():
    doc = (
        "Title.\n\n"
        "=====  ============\n"
        "name   content\n"
        "=====  ============\n"
        "``a``  first line\n"
        "       continued\n"
        "b      two\n"
        "=====  ============\n\n"
        "More text.\n\n"
        "=====  ============\n"
        "``c``  headerless, takes the header above\n"
        "=====  ============\n\n"
        "Section\n"
        "    Its body.\n"
    )
    md = hooks.docstring_markdown(doc)
    assert "| name | content |\n|---|---|\n| `a` | first line continued |\n| b | two |" in md
    assert "| name | content |\n|---|---|\n| `c` | headerless, takes the header above |" in md
    assert "### Section\n\nIts body." in md


def test_the_env_page_is_the_env_docstring_with_its_tables():
    page = hooks.on_page_markdown((DOCS / "env.md").read_text())
    assert hooks.MARKER.search(page) is None
    assert re.search(r"\| Parallel API \| yes", page)
    assert "### Version History" in page and "### Rewards" in page
    assert "| `hand` | 52 | own cards (count / D) |" in page  # the observation's table
    assert "| `DISCARD` | P + 258 .. P + 309 |" in page  # the action ids' table


def test_included_files_get_site_links():
    assert hooks.rewrite_links("[r](docs/rules.md#x)", Path(".")) == "[r](rules.md#x)"
    assert hooks.rewrite_links("[c](CHANGELOG.md)", Path(".")) == "[c](changelog.md)"
    assert hooks.rewrite_links("![p](../docs/a.png)", Path("models")) == "![p](a.png)"
    assert hooks.rewrite_links("[w](https://x.org/a.md)", Path(".")) == "[w](https://x.org/a.md)"
    home = hooks.on_page_markdown("<!-- include README.md -->")
    assert home.startswith("# rummy500_env") and "](docs/" not in home


@pytest.mark.parametrize(
    "marker, error",
    [
        ("<!-- include NOPE.md -->", "missing file"),
        ("<!-- include README.md#Training -->", "missing file"),  # a page is a whole file
        ("<!-- docstring rummy500_env.nope -->", "missing module"),
    ],
)
def test_a_marker_that_names_nothing_fails_the_build(marker, error):
    with pytest.raises(ValueError, match=error):
        hooks.on_page_markdown(marker)


def test_every_page_expands_and_is_in_the_navigation():
    nav = (ROOT / "mkdocs.yml").read_text()
    pages = sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md"))
    assert [p for p in pages if f": {p}" not in nav] == []
    for page in pages:
        assert hooks.MARKER.search(hooks.on_page_markdown((DOCS / page).read_text())) is None
