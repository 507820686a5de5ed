"""Numbers read from text, and JSON read from text: the one checked way the package does both.

Why: Python's `int` takes more than a user means and fails in ways that are not this
package's errors. ``int("٣٠٠")`` is 300 (any script's decimal digits), ``"²".isdigit()`` is
True while ``int("²")`` raises, ``int("1_000")`` is 1000, and more than 4300 digits raise a
bare `ValueError` (CPython's guard against slow conversions, `sys.get_int_max_str_digits`).
`json.loads` raises that same `ValueError` for a long number in a document and a
`RecursionError` for deep nesting. So a number here is ASCII digits 0-9, a minus sign first
if negative, at most `MAX_DIGITS` digits; and every refusal is the caller's own error type
(`RulesError` for ``--rules``, `AgentSpecError` for an agent spec, `RecordError` for a
record, ...) naming the field, the text and the allowed range.

`read_int` reads one number, `int_option` is the same as an argparse ``type``, `read_json`
reads a JSON document, and `shown` quotes a value in a message without failing on it.
Standard library only, like the rest of the engine.
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Callable
from typing import Any

from rummy500_env.engine.errors import Rummy500Error

MAX_DIGITS = 20
"""Digits a number in text may have: enough for any 64-bit seed, far below the length at
which `int` refuses (4300) or gets slow."""
SHOWN_WIDTH = 60
"""Characters of a value a message quotes (`shown`): the start says what it was."""


def int_range(low: int | None, high: int | None) -> str:
    """The allowed ints as a message says them: ``an int 2..8``, ``an int >= 1``."""
    if low is not None and high is not None:
        return f"an int {low}..{high}"
    if low is not None:
        return f"an int >= {low}"
    if high is not None:
        return f"an int <= {high}"
    return "an int"


def is_number_text(text: str) -> bool:
    """Whether `text` is a number as this package writes one: ASCII digits 0-9, a minus sign
    first if negative, 1 to `MAX_DIGITS` digits (``str.isdigit`` would also take ``²`` and
    ``٣``)."""
    digits = text[1:] if text.startswith("-") else text
    return 0 < len(digits) <= MAX_DIGITS and all("0" <= ch <= "9" for ch in digits)


def read_int(
    text: str,
    name: str,
    low: int | None = None,
    high: int | None = None,
    error: type[Rummy500Error] = Rummy500Error,
) -> int:
    """`text` as an int from `low` to `high` (None: unbounded that side), or `error` saying
    ``name=<text> is not allowed: use an int low..high`` (and how to write one, when the text
    is no number at all).

    >>> read_int("300", "target", 1)
    300
    >>> read_int("٣٠٠", "target", 1)
    Traceback (most recent call last):
    ...
    rummy500_env.engine.errors.Rummy500Error: target='٣٠٠' is not allowed: use an int >= 1, in the digits 0-9 (at most 20 of them)
    """  # noqa: E501 - a doctest's expected line is as long as the message
    allowed = int_range(low, high)
    if not isinstance(text, str) or not is_number_text(text):
        length = "" if low is not None and high is not None else f" (at most {MAX_DIGITS} of them)"
        raise error(
            f"{name}={shown(text)} is not allowed: use {allowed}, in the digits 0-9{length}"
        )
    value = int(text)
    if (low is not None and value < low) or (high is not None and value > high):
        raise error(f"{name}={value} is not allowed: use {allowed}")
    return value


def int_option(name: str, low: int | None = None, high: int | None = None) -> Callable[[str], int]:
    """`read_int` as an argparse ``type``: a bad value is argparse's usual error line (and
    exit 2) with `read_int`'s words, e.g. ``argument --games: games='٣' is not allowed: ...``.
    """

    def read(text: str) -> int:
        try:
            return read_int(text, name, low, high)
        except Rummy500Error as e:
            raise argparse.ArgumentTypeError(str(e)) from None

    read.__name__ = name  # argparse names the type in some messages
    return read


def read_json(text: str, what: str, error: type[Rummy500Error], hint: str = "") -> Any:
    """`json.loads` of `text`, every failure an `error` that starts with `what` (the file or
    the option it came from): not JSON, nested too deeply (`RecursionError`), or a number too
    long to read (CPython's `ValueError` beyond 4300 digits). `hint`, when given, ends each
    message (what would have been right)."""
    end = f"; {hint}" if hint else ""
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise error(f"{what}: not valid JSON ({e}){end}") from None
    except RecursionError:  # the parser recurses once per level
        raise error(f"{what}: its JSON is nested too deeply to read{end}") from None
    except ValueError as e:  # an int of more than sys.get_int_max_str_digits() digits
        raise error(f"{what}: a number in it is too long to read ({e}){end}") from None


def shown(value: object, width: int = SHOWN_WIDTH) -> str:
    """``repr(value)`` for a message, cut to `width` characters; never fails, whatever the
    value (an int too long to print, or a structure nested too deeply to repr)."""
    try:
        text = repr(value)
    except ValueError:  # an int of more than sys.get_int_max_str_digits() digits
        if isinstance(value, int):
            digits = int(value.bit_length() * math.log10(2)) + 1
            return f"<an int of about {digits} digits: too long to show>"
        return f"<a {type(value).__name__} holding an int too long to show>"
    except RecursionError:
        return f"<a {type(value).__name__} nested too deeply to show>"
    return text if len(text) <= width else text[: width - 3] + "..."


QUOTE_WIDTH = 100
"""Characters of a text a message quotes (`quoted`): a long action's start, enough to find it."""


def quoted(text: str, width: int = QUOTE_WIDTH) -> str:
    """`text` as a message quotes it (`shown`), its length added when it is cut: a model's
    reply may be megabytes, and a refusal sent back whole made each retry (and its record)
    that much longer."""
    head = text[: width + 1]  # enough to tell a cut: repr costs no more for a megabyte
    excerpt = shown(head, width)
    return excerpt if excerpt == repr(head) else f"{excerpt} ({len(text)} characters)"
