"""Edge positions, every legal action: the JAX engine moves exactly as the engine does.

Random play rarely builds a run of all thirteen ranks, an ace laid off on 2..K, a dig that
only a lay-off makes legal, or an open obligation under `discard_to_go_out`. Each position
below is set up in the engine (`Game.from_dict`), taken over with `Env.from_game`, and from it
every legal action is played in both engines: the positions after it must be equal
(`Env.to_game`), and so must every player's observation (the feature part of the env's encoder).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

jax = pytest.importorskip("jax")

import rummy500_env.jax as rj  # noqa: E402
from rummy500_env import Game, Rules  # noqa: E402
from rummy500_env.engine.cards import card_str, parse_cards  # noqa: E402
from rummy500_env.rl.actions import ActionCodec  # noqa: E402
from rummy500_env.rl.observation import ObservationEncoder  # noqa: E402


def position(
    rules: str,
    hands: list[str],
    pile: str,
    melds: list[tuple[str, list[int]]] = (),  # type: ignore[assignment]
    stock: int | None = None,
    **fields: Any,
) -> dict[str, Any]:
    """A position dict: the cards not placed go to the stock (the first `stock` of them; the
    others under the pile)."""
    used = set(parse_cards(pile))
    for h in hands:
        used |= set(parse_cards(h))
    for cards, _ in melds:
        used |= set(parse_cards(cards))
    rest = [card_str(c) for c in range(52) if c not in used]
    cut = len(rest) if stock is None else stock
    r = Rules.parse(rules)
    return {
        "rules": r.to_dict(),
        "dealer": 1,
        "turn": 0,
        "phase": "play",
        "hands": [h.split() for h in hands],
        "stock": rest[:cut],
        "pile": rest[cut:] + pile.split(),
        "melds": [{"cards": c.split(), "owners": o} for c, o in melds],
        "totals": [0] * r.players,
        "known": [[] for _ in range(r.players)],
    } | fields


POSITIONS = {
    "ace_goes_high_on_2_to_K": position(
        "standard",
        ["AH 5C 9S 9D", "4C 6C 8C"],
        "3S",
        [("2H 3H 4H 5H 6H 7H 8H 9H 10H JH QH KH", [1] * 12), ("9C 10C JC", [0, 1, 1])],
    ),
    "a_thirteen_card_run_takes_nothing": position(
        "fives",
        ["KD 2S", "4C 6C 8C"],
        "3S",
        [("AD 2D 3D 4D 5D 6D 7D 8D 9D 10D JD QD", [0] * 12), ("7S 7H 7C", [1, 1, 0])],
    ),
    "ace_low_and_a_set_to_fill": position(
        "standard",
        ["4C AS 7C 10H", "5D 6D 8D"],
        "2S",
        [("AC 2C 3C", [0, 0, 1]), ("JS QS KS", [1, 1, 1]), ("7S 7H 7D", [0, 1, 0])],
    ),
    "digs_by_meld_and_by_lay_off": position(
        "standard",
        ["9S 9H 5D 7D QC JC 3H", "2D 3D 4D KH"],
        "4C 9D KC 6H 2C",
        [("4S 5S 6S", [1, 1, 1])],
        phase="draw",
    ),
    "digs_when_going_out_is_barred": position(
        "standard,discard_to_go_out=true",
        ["9S 9H", "2D 3D 4D KH"],
        "4C 9D KC 6H 7S 2C",
        [("4S 5S 6S", [1, 1, 1])],
        phase="draw",
    ),
    "top_card_must_meld": position(
        "standard,top_card_must_meld=true",
        ["9S 9H 5D", "2D 3D 4D KH"],
        "4C 9D",
        phase="draw",
    ),
    "stock_out_pile_must_use": position(
        "app", ["9S 9H 5D", "2D 3D 4D KH"], "4C 9D", stock=0, phase="draw"
    ),
    "stock_out_decline": position(
        "standard", ["9S 9H 5D", "2D 3D 4D KH"], "4C 9D", stock=0, phase="draw"
    ),
    "an_open_obligation": position(
        "standard",
        ["9S 9H 9D 9C 5D 7D 6D", "2D 3D 4D KH"],
        "4C",
        must_play="9D",
        known=[["9D", "7D"], []],
    ),
    "taken_top_is_the_last_card": position(
        "standard", ["QC", "2D 3D 4D KH"], "4C", taken_top="QC", known=[["QC"], []]
    ),
    "taken_top_among_others": position(
        "standard,winner_must_go_out=true,target=20",
        ["QC QD QH 3S", "2D 3D 4D KH"],
        "4C",
        taken_top="QC",
        known=[["QC"], []],
        totals=[15, 30],
    ),
    "three_players_lay_off_to_go_out": position(
        "pagat,players=3,target=40",
        ["5S", "2D 3D", "KH QH"],
        "4C",
        [("2S 3S 4S", [1, 2, 1])],
        totals=[30, -5, 12],
        turns=199,
    ),
}


@pytest.mark.parametrize("name", list(POSITIONS))
def test_every_legal_action_from_an_edge_position(name: str) -> None:
    start = Game.from_dict(POSITIONS[name])
    env = rj.make(start.rules, episode="hand")
    step = env.step  # the compiled core, shared by every env of this shape
    codec, encoder = ActionCodec(start.rules), ObservationEncoder(start.rules)
    state = env.from_game(start)
    legal = codec.legal_ids(start)
    assert np.flatnonzero(state.legal_action_mask).tolist() == sorted(legal)
    assert legal
    for action in legal:
        g = start.copy()
        g.play_unchecked(codec.decode(g, action))
        after = step(state, action, jax.random.PRNGKey(0))
        assert env.to_game(after) == g, codec.action_to_str(start, action)
        for q in range(start.rules.players):
            ours = np.asarray(env.observe(after, q))
            theirs = encoder.encode(g, q)[: encoder.features_size]
            assert ours.tobytes() == theirs.tobytes(), (action, q, np.flatnonzero(ours != theirs))
        over = g.is_hand_over
        assert bool(after.terminated | after.truncated) == over
        if over:
            assert np.asarray(after._x.scores).tolist() == list(g.result().scores)
        else:
            mask = np.flatnonzero(after.legal_action_mask).tolist()
            assert mask == sorted(codec.legal_ids(g))
