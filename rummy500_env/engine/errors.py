"""The package's exceptions: one base class and four kinds of bad input.

All derive from `ValueError`, as python-chess's do, so callers that already catch
`ValueError` around user input keep working.
"""

from __future__ import annotations


class Rummy500Error(ValueError):
    """Base class of every error this package raises on bad input."""


class ActionParseError(Rummy500Error):
    """Text that is not an action in the notation at all (syntax, not legality)."""


class IllegalActionError(Rummy500Error):
    """A well-formed action that the rules forbid in the current position; says which rule."""


class InvalidPositionError(Rummy500Error):
    """A position dict that breaks the rules; lists every problem found, not just the first."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = list(problems)
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(f"invalid position ({len(self.problems)} problem(s)):\n{lines}")


class RulesError(Rummy500Error):
    """A rules combination that cannot be played; names the field, the value and what is allowed."""
