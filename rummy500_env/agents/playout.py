"""The fast playout policy of the search bots: finish a hand on the engine, greedily.

`SearchAgent` plays every candidate out to the end of the hand in each sampled world, and
`ISMCTSAgent` values its leaves the same way, so this policy runs for most of a search's
time. It reads only the engine, and is compiled with it (setup.py): in a compiled build a
rollout runs without returning to the interpreter but for the random draws.
"""

from __future__ import annotations

import random

from rummy500_env.engine.cards import JOKER
from rummy500_env.engine.game import Game
from rummy500_env.engine.melds import has_meld_pair, starts_a_meld, starts_with_a_joker
from rummy500_env.engine.notation import Action

ROLLOUT_CAP = 400
"""Engine actions a rollout plays at most; one that runs longer is scored where it stands."""


def play_out(g: Game, rng: random.Random, values: tuple[int, ...], seat: int) -> float:
    """Finish the hand in `g` with `rollout_action`; return `seat`'s hand score minus the
    others' mean."""
    for _ in range(ROLLOUT_CAP):
        if g.is_hand_over:
            break
        g.play_unchecked(rollout_action(g, rng, values))
    scores = g.hand_scores()
    n = len(scores)
    return scores[seat] - (sum(scores) - scores[seat]) / (n - 1)


def rollout_action(g: Game, rng: random.Random, values: tuple[int, ...]) -> Action:
    """Greedy rollout policy on the engine: draw, put everything down (natural cards first,
    then jokers), shed high cards (never a joker while another card can go); in a call
    window, call the top card when it is offered, else pass."""
    legal = g.legal_actions()
    phase = g.phase
    if phase == "draw":
        for a in legal:
            if a.kind == "take" and completes(g):
                return a
        for a in legal:
            if a.kind in ("draw", "decline"):
                return a
        return legal[0]
    if phase == "call":
        first = legal[0]
        return first if first.kind == "call" and first.cards[0] == g.pile[-1] else legal[-1]
    best = None
    for a in legal:
        if a.kind == "meld":
            return a
        if a.kind == "layoff" and best is None:
            best = a
    if best is not None:
        return best
    discards = [a for a in legal if a.kind == "discard" and a.cards[0] != JOKER]
    if not discards:  # done after a call, or only jokers left
        return legal[-1]
    top = max(values[a.cards[0]] for a in discards)
    return rng.choice([a for a in discards if values[a.cards[0]] == top])


def completes(g: Game) -> bool:
    """Whether the top discard fits a table meld or makes a three-card meld with the hand
    (with a joker of the hand, or, the top a joker, with two of its cards)."""
    top, held = g.pile[-1], g.held_once[g.turn]
    if top == JOKER:
        return any(m.fits for m in g.melds) or has_meld_pair(held)
    if any(top in m.fits for m in g.melds) or starts_a_meld(top, held):
        return True
    return g.jokers_held[g.turn] > 0 and starts_with_a_joker(top, held)
