"""MkDocs hooks (mkdocs.yml ``hooks:``): pages built from the repository's own text, so the site
has one source for each fact: the home page is README.md, the changelog CHANGELOG.md, the
shipped models' page the model cards, and the env page the env's docstrings; every other page
is its own file under docs/.

A page may hold these markers, each on a line of its own:

``<!-- include FILE -->``
    the repository file FILE (a path from the repository root), its links rewritten for the
    site: ``docs/x.md`` becomes ``x.md``, and the repository files that are pages of their own
    (`PAGES`) become those pages (a README link reaches the home page).
``<!-- docstring MODULE -->``
    the module docstring of MODULE, read without importing it, turned from this package's
    docstring style into Markdown: its reStructuredText simple tables become tables,
    unindented titles followed by an indented body (the env page's sections) become
    headings, and ``double backticks`` single ones.

A marker that names a missing file or module fails the build.
"""

from __future__ import annotations

import ast
import posixpath
import re
import textwrap
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PAGES = {"README.md": "index.md", "CHANGELOG.md": "changelog.md", "models/README.md": "models.md"}
"""Repository files shown as site pages, by the page that shows them."""
MARKER = re.compile(r"^<!-- (include|docstring) (\S+) -->$", re.M)
LINK = re.compile(r"(\]\()([^)#\s]+)([^)]*\))")


def on_page_markdown(markdown: str, **_: Any) -> str:
    """MkDocs calls this with each page's Markdown before rendering it."""
    return MARKER.sub(_expand, markdown)


def _expand(m: re.Match[str]) -> str:
    kind, name = m.groups()
    if kind == "docstring":
        return docstring_markdown(module_docstring(name))
    path = ROOT / name
    if not path.is_file():
        raise ValueError(f"include of a missing file: {name}")
    return rewrite_links(path.read_text(encoding="utf-8"), Path(name).parent)


def rewrite_links(text: str, folder: Path) -> str:
    """Links of a repository file as the site needs them (see the module docstring)."""

    def fix(m: re.Match[str]) -> str:
        target = m.group(2)
        if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
            return m.group(0)
        repo_path = posixpath.normpath(posixpath.join(folder.as_posix(), target))
        if repo_path in PAGES:
            return m.group(1) + PAGES[repo_path] + m.group(3)
        if repo_path.startswith("docs/"):
            return m.group(1) + repo_path.removeprefix("docs/") + m.group(3)
        return m.group(0)

    return LINK.sub(fix, text)


def module_docstring(module: str) -> str:
    """A module's docstring, parsed from its source (no import: the site builds without the
    package's dependencies)."""
    path = ROOT / Path(*module.split("."))
    path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
    if not path.is_file():
        raise ValueError(f"docstring of a missing module: {module}")
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
    if not doc:
        raise ValueError(f"{module} has no docstring")
    return doc


def docstring_markdown(doc: str) -> str:
    """This package's docstring style as Markdown (see the module docstring)."""
    lines = doc.splitlines()
    out: list[str] = []
    header: list[str] | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        if _is_border(line):
            table, i, header = _table(lines, i, header)
            out += ["", *table, ""]
            continue
        body = lines[i + 1] if i + 1 < len(lines) else ""
        if line and not line[0].isspace() and body.startswith("    ") and len(line) < 40:
            out += ["", f"### {line.strip()}", ""]
            j = i + 1
            while j < len(lines) and (lines[j].startswith("    ") or not lines[j].strip()):
                j += 1
            out += textwrap.dedent("\n".join(lines[i + 1 : j])).splitlines()
            i = j
            continue
        out.append(line)
        i += 1
    return "\n".join(out).replace("``", "`") + "\n"  # after the tables: columns by width


def _is_border(line: str) -> bool:
    return bool(re.fullmatch(r"=+( +=+)+ *", line))


def _table(
    lines: list[str], start: int, header: list[str] | None
) -> tuple[list[str], int, list[str] | None]:
    """The reStructuredText simple table whose top border is at `start`, as Markdown rows; the
    index after its bottom border; its header. A table with a header row has three borders
    (top, under the header, bottom), one without has two and takes the previous table's
    header (the docstrings continue a table that way after a paragraph)."""
    spans = [(m.start(), m.end()) for m in re.finditer(r"=+", lines[start])]
    spans[-1] = (spans[-1][0], 10_000)  # the last column runs to the end of the line
    blocks: list[list[list[str]]] = [[]]  # the rows between one border and the next
    i = start + 1
    while i < len(lines):
        line = lines[i]
        if _is_border(line):
            if len(blocks) == 2 or not _more_rows(lines, i + 1):
                break
            blocks.append([])
        elif line.strip():
            cells = [line[a:b].strip() for a, b in spans]
            rows = blocks[-1]
            if rows and not cells[0]:  # a continuation line: more text for the row above
                rows[-1] = [f"{a} {b}".strip() for a, b in zip(rows[-1], cells, strict=True)]
            else:
                rows.append(cells)
        i += 1
    else:
        raise ValueError(f"a table without its bottom border: {lines[start + 1][:60]!r}")
    if len(blocks) == 2:
        header, body = blocks[0][0], blocks[1]
    else:
        body = blocks[0]
    head = header if header is not None and len(header) == len(spans) else [""] * len(spans)
    table = ["| " + " | ".join(head) + " |", "|" + "---|" * len(spans)]
    table += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in body]
    return table, i + 1, header


def _more_rows(lines: list[str], i: int) -> bool:
    """Whether table rows closed by another border follow line `i` (a border under a header
    row) rather than the table ending there."""
    for line in lines[i:]:
        if _is_border(line):
            return True
        if not line.strip():
            return False
    return False
