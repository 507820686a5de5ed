"""Property tests over random legal play (hypothesis), for every preset and 2, 3, 5, 8 players.

Invariants: cards are conserved; to_dict/from_dict round trips; the legal set is never empty
before the hand ends and is exactly what the rule checker allows; every listed action
applies; unlisted actions raise IllegalActionError and leave the game unchanged; hand score =
table value - hand value (recomputed here from docs/rules.md's table, independently of the
engine); seeded games replay identically. Also: the meld finder against brute force.
"""

from __future__ import annotations

import random
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rummy500_env import Action, Game, IllegalActionError, Rules
from rummy500_env.engine.melds import MELD_TEMPLATES

CONFIGS = [
    (preset, players)
    for preset in ("standard", "pagat", "nordic", "fives", "app")
    for players in ((2,) if preset in ("standard", "app") else (2, 3, 5, 8))
] + [("standard", 3), ("app", 3)]
VARIANTS = [
    {"discard_to_go_out": True},
    {"top_card_must_meld": True},
    {"winner_must_go_out": True, "target": 150},
    {"players": 4, "decks": 2, "turn_limit": 30, "hand_limit": 3},
]

PIP = {0: 15, 10: 10, 11: 10, 12: 10} | {r: r + 1 for r in range(1, 10)}
FIVES = {0: 15} | {r: 5 for r in range(1, 9)} | {r: 10 for r in range(9, 13)}


def expected_hand_scores(g: Game) -> list[int]:
    """docs/rules.md §1 scoring, written out again without the engine's helpers."""
    values = PIP if g.rules.scoring == "pip" else FIVES
    low_ace = 1 if g.rules.scoring == "pip" else 5
    scores = [0] * g.rules.players
    for m in g.to_dict()["melds"]:
        cards = m["cards"]
        is_run = len({c[:-1] for c in cards}) > 1
        for text, owner in zip(cards, m["owners"], strict=True):
            rank = "A 2 3 4 5 6 7 8 9 10 J Q K".split().index(text[:-1])
            if rank == 0 and is_run and cards[0] == text and len(cards) < 13:
                scores[owner] += low_ace
            else:
                scores[owner] += values[rank]
    for p, hand in enumerate(g.to_dict()["hands"]):
        for text in hand:
            scores[p] -= values["A 2 3 4 5 6 7 8 9 10 J Q K".split().index(text[:-1])]
    return scores


def candidate_actions(g: Game) -> list[Action]:
    """A universe of well-formed actions to sample unlisted ones from."""
    acts = [Action("draw"), Action("take"), Action("decline")]
    acts += [Action("dig", (c,), -1, k) for c in set(g.pile) for k in (1, 2)]
    acts += [Action("meld", t) for t in MELD_TEMPLATES]
    acts += [Action("layoff", (c,), i) for c in range(52) for i in range(len(g.melds) + 1)]
    acts += [Action("discard", (c,)) for c in range(52)]
    return acts


def check_invariants(g: Game, rng: random.Random) -> None:
    d = g.to_dict()
    everything = Counter(
        [c for h in d["hands"] for c in h]
        + d["stock"]
        + d["pile"]
        + [c for m in d["melds"] for c in m["cards"]]
    )
    assert sum(everything.values()) == g.rules.deck_size
    assert set(everything.values()) == {g.rules.deck_count} and len(everything) == 52
    assert Game.from_dict(d).to_dict() == d
    assert g.hand_scores() == expected_hand_scores(g)
    legal = g.legal_actions()
    if g.phase in ("draw", "play"):
        assert legal, f"no legal action in\n{g}"
    else:
        assert legal == []
    legal_set = set(legal)
    for a in legal:
        g.copy().apply(a)
    if legal:
        g.copy().apply(str(legal[-1]))
    if rng.random() < 0.25:  # a quarter of the positions keeps the suite's time in bounds
        # The listed set is exactly what the rule checker (a separate code path) allows,
        # over every action that could be legal (lay-offs of the cards the player holds).
        held = set(g.hand(g.turn))
        candidates = [a for a in candidate_actions(g) if a.kind != "layoff" or a.cards[0] in held]
        assert [a for a in candidates if g.why_illegal(a) is None] == [
            a for a in candidates if a in legal_set
        ]
    unlisted = [a for a in candidate_actions(g) if a not in legal_set]
    for a in rng.sample(unlisted, min(12, len(unlisted))):
        with pytest.raises(IllegalActionError):
            g.apply(a)
        assert not g.is_legal(a)
    assert g.to_dict() == d


def play_random(rules: Rules, seed: int, rng: random.Random, max_steps: int, check: bool) -> list:
    g = Game.new(rules, seed=seed)
    transcript = []
    for _ in range(max_steps):
        if check:
            check_invariants(g, rng)
        if g.phase == "game_over":
            break
        if g.phase == "hand_over":
            totals_before = g.to_dict()["totals"]
            assert g.totals == [t + s for t, s in zip(totals_before, g.hand_scores(), strict=True)]
            g.next_hand()
            transcript.append("next_hand")
            continue
        a = rng.choice(g.legal_actions())
        transcript.append(str(a))
        g.apply(a)
    transcript.append(g.to_dict())
    return transcript


@pytest.mark.parametrize(("preset", "players"), CONFIGS)
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32), choice_seed=st.integers(0, 2**32))
@pytest.mark.slow
def test_random_legal_play_keeps_every_invariant(preset, players, seed, choice_seed):
    rules = Rules.preset(preset, players=players)
    play_random(rules, seed, random.Random(choice_seed), max_steps=250, check=True)


@pytest.mark.parametrize("fields", VARIANTS)
@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32), choice_seed=st.integers(0, 2**32))
@pytest.mark.slow
def test_random_legal_play_keeps_every_invariant_in_variants(fields, seed, choice_seed):
    play_random(Rules(**fields), seed, random.Random(choice_seed), max_steps=250, check=True)


@pytest.mark.parametrize(("preset", "players"), CONFIGS)
@settings(max_examples=3, deadline=None)
@given(seed=st.integers(0, 2**32))
def test_seeded_games_replay_identically(preset, players, seed):
    rules = Rules.preset(preset, players=players)
    a = play_random(rules, seed, random.Random(seed), max_steps=3000, check=False)
    b = play_random(rules, seed, random.Random(seed), max_steps=3000, check=False)
    assert a == b


@pytest.mark.parametrize("preset", ["standard", "pagat", "nordic", "fives", "app"])
def test_random_games_all_end(preset):
    """Random games end (docs/rules.md §4 safeguards); the bench plays 1,000 per preset."""
    rng = random.Random(preset)
    for seed in range(20):
        g = Game.new(Rules.preset(preset), seed=seed)
        while g.phase != "game_over":
            if g.phase == "hand_over":
                g.next_hand()
            else:
                g.apply(rng.choice(g.legal_actions()))
        assert g.hands_played <= 100


@settings(max_examples=300, deadline=None)
@given(one=st.integers(0, 2**52 - 1), thin=st.integers(0, 2**52 - 1))
def test_meld_templates_in_finds_exactly_the_templates_held(one, thin):
    from rummy500_env.engine.melds import MELD_MASKS, meld_templates_in

    for hand in (one, one & thin):  # full and sparse hands
        assert meld_templates_in(hand) == [t for t, m in enumerate(MELD_MASKS) if hand & m == m]
