"""The engine against the independent reference (tests/reference): over generated positions
of every rules configuration, the legal actions, where each of them leads and the hand scores
must be the same on both sides.

The reference shares no helper with the engine, so a bug in the engine's meld finder, lay-off
fits, obligation or discard rules, stock and turn handling, or scoring shows up here as a
difference, with the position printed. Examples per test come from the hypothesis profile
(tests/conftest.py: ``ci`` derandomized in CI, ``long`` for benchmarks/reference_long.py).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, note
from hypothesis import strategies as st

from rummy500_env import Game, IllegalActionError
from tests.reference import model, strategies, universe

CHECKED = {"positions": 0, "actions": 0}
"""How many positions and actions the tests compared (benchmarks/reference_long.py reads it)."""


def _differences(engine: set[str], reference: set[str]) -> str:
    return (
        f"engine only: {sorted(engine - reference)}; reference only: {sorted(reference - engine)}"
    )


def _show(position: dict[str, Any]) -> None:
    note(f"position: {json.dumps(position)}")


@given(strategies.positions())
@pytest.mark.slow
def test_legal_actions_and_hand_scores_equal_the_references(position: dict[str, Any]) -> None:
    """The legal set (as text, none listed twice) and the scores, in any position."""
    _show(position)
    game = Game.from_dict(position)
    state = model.read(position)
    listed = [str(a) for a in game.legal_actions()]
    expected = model.legal_actions(state)
    assert len(listed) == len(set(listed)), f"listed twice: {sorted(listed)}"
    assert set(listed) == expected, _differences(set(listed), expected)
    assert game.hand_scores() == model.hand_scores(state)
    assert game.totals == model.totals_now(state)
    CHECKED["positions"] += 1


@given(strategies.positions(strategies.MOVES), st.randoms(use_true_random=False))
@pytest.mark.slow
def test_every_legal_action_leads_where_the_reference_says(
    position: dict[str, Any], rnd: Any
) -> None:
    """Applying legal actions (every one that ends a turn or a window, every lay-off, and up
    to six others) gives the position, scores and totals the rules say: the turn passing, the
    stock running out, call windows, turn and hand limits, going out, the end of the game."""
    _show(position)
    game = Game.from_dict(position)
    state = model.read(position)
    actions = sorted(model.legal_actions(state))
    always = [
        a for a in actions if a.split()[0] in ("discard", "decline", "pass", "done", "layoff")
    ]
    others = [a for a in actions if a not in always]
    for text in always + rnd.sample(others, min(6, len(others))):
        g = game.copy()
        g.apply(text)
        want = model.after(state, text)
        assert model.normal(g.to_dict()) == model.normal(model.write(want)), text
        assert g.hand_scores() == model.hand_scores(want), text
        assert g.totals == model.totals_now(want), text
        CHECKED["actions"] += 1
    CHECKED["positions"] += 1


@given(strategies.positions(strategies.PHASES))
@pytest.mark.slow
def test_every_action_is_judged_as_the_reference_judges_it(position: dict[str, Any]) -> None:
    """Offered any well-formed action (tests/reference/universe.py: digs and calls of every
    pile card, melds of three and more cards, lay-offs on every meld, discards), the engine's
    `is_legal` and the reference agree, and `apply` refuses each illegal one with
    IllegalActionError, leaving the position as it was (docs/rules.md §6, §3)."""
    _show(position)
    game = Game.from_dict(position)
    state = model.read(position)
    listed = model.legal_actions(state)
    for text in universe.candidates(state):
        legal = model.is_legal(state, text, listed)
        assert game.is_legal(text) == legal, f"{text}: the reference says legal={legal}"
        if not legal:
            with pytest.raises(IllegalActionError):
                game.apply(text)
    assert game.to_dict() == Game.from_dict(position).to_dict()
    CHECKED["positions"] += 1
