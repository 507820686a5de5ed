"""Baseline bots: legal play everywhere, information hygiene, and their basic judgement."""

from __future__ import annotations

import random

import numpy as np
import pytest

import rummy500_env
from rummy500_env import Game, Rules
from rummy500_env.agents import (
    ExpertAgent,
    GreedyAgent,
    RandomAgent,
    SearchAgent,
    ViewDecoder,
)
from rummy500_env.observation import ObservationEncoder
from tests.helpers import SEEN, position, random_positions, reshuffle_hidden

BOTS = {
    "random": lambda rules: RandomAgent(0),
    "greedy": GreedyAgent,
    "expert": ExpertAgent,
    "search": lambda rules: SearchAgent(rules, rollouts=2, seed=0),
}


@pytest.mark.parametrize("bot", list(BOTS))
@pytest.mark.parametrize(
    ("preset", "players"), [("standard", 2), ("nordic", 3), ("fives", 4), ("pagat", 5), ("app", 2)]
)
def test_bots_only_ever_play_legal_actions(bot, preset, players):
    rules = Rules.preset(preset, players=players)
    agent = BOTS[bot](rules)
    e = rummy500_env.raw_env(rules=rules, episode="hand")  # raw: an illegal id would raise
    steps = 0
    for seed in range(2 if bot == "search" else 4):
        e.reset(seed=seed)
        while not all(e.terminations.values()) and steps < 3000:
            o = e.observe(e.agent_selection)
            a = agent.act(o["observation"], o["action_mask"])
            assert o["action_mask"][a] == 1
            e.step(a)
            steps += 1


@pytest.mark.parametrize("bot", ["greedy", "expert", "search"])
def test_bot_choice_does_not_change_when_only_hidden_information_changes(bot):
    rules = Rules(players=3)
    enc = ObservationEncoder(rules)
    from rummy500_env.actions import ActionCodec

    codec = ActionCodec(rules)
    rng = random.Random(1)
    checked = 0
    for g in random_positions(rules, 25, seed=5):
        p = g.current_player
        h = reshuffle_hidden(g, p, rng)
        assert h.hand(p) == g.hand(p)
        a1 = BOTS[bot](rules).act(enc.encode(g, p), codec.mask(g))
        a2 = BOTS[bot](rules).act(enc.encode(h, p), codec.mask(h))
        assert a1 == a2
        checked += 1
    assert checked >= 10


def test_view_decodes_what_the_seat_knows():
    d = position(**SEEN)
    g = Game.from_dict(d)
    enc, dec = ObservationEncoder(g.rules), ViewDecoder(g.rules)
    v = dec.view(enc.encode(g, 0))
    card = rummy500_env.parse_card
    assert sorted(v.hand) == sorted(card(c) for c in ["9S", "9H", "2C"])
    assert v.pile == [card("4H"), card("KC"), card("9D")]  # top first
    assert sorted(v.table_owner[1]) == sorted(card(c) for c in ["7C", "8C", "9C"])
    assert v.known == [[card("QS")]] and v.hand_sizes == [3, 3]
    assert v.totals == pytest.approx([100, 250]) and v.phase == "draw"
    assert card("10C") in v.fits[2] and card("6C") in v.fits[1]
    assert len(v.unseen()) == 52 - 3 - 3 - 3 - 1  # minus hand, pile, table and the known QS


@pytest.mark.parametrize("fields", [{}, {"players": 3, "decks": 2}])
def test_view_decodes_the_pile_order_exactly(fields):
    """The pile is encoded by place; the decoded order (top first) must be the engine's,
    copies of a card included (two decks). The check fails if a place is lost or swapped."""
    rules = Rules(**fields)
    enc, dec = ObservationEncoder(rules), ViewDecoder(rules)
    rng = random.Random(11)
    deepest = twice = 0
    for seed in range(6):
        g = Game.new(rules, seed=seed)
        while g.phase in ("draw", "play"):
            for seat in range(rules.players):
                assert dec.view(enc.encode_update(g, seat)).pile == g.pile[::-1]
            deepest = max(deepest, len(g.pile))
            twice += len(set(g.pile)) < len(g.pile)
            legal = g.legal_actions()
            draw = [a for a in legal if a.kind == "draw"]  # mostly draw: the pile grows
            g.apply(draw[0] if draw and rng.random() < 0.8 else rng.choice(legal))
    assert deepest >= 15 and (twice > 0) == (rules.deck_count == 2)


def test_greedy_takes_the_top_discard_only_when_it_completes_a_meld():
    dec_rules = Rules()
    enc = ObservationEncoder(dec_rules)
    from rummy500_env.actions import ActionCodec

    codec = ActionCodec(dec_rules)
    g = Game.from_dict(position(hands=["9S 9H 2C 5D", "5C 6C"], pile="4H 9D"))
    assert GreedyAgent().act(enc.encode(g, 0), codec.mask(g)) == codec.PILE  # take 9D
    g = Game.from_dict(position(hands=["9S 4H 2C 5D", "5C 6C"], pile="4C KD"))
    assert GreedyAgent().act(enc.encode(g, 0), codec.mask(g)) == codec.DRAW


def test_greedy_melds_first_and_discards_its_highest_loose_card():
    rules = Rules()
    enc = ObservationEncoder(rules)
    from rummy500_env.actions import ActionCodec

    codec = ActionCodec(rules)
    g = Game.from_dict(position(hands=["9S 9H 9D KC 2D 3D", "5C 6C"], pile="4H", phase="play"))
    assert (
        codec.action_to_str(g, GreedyAgent().act(enc.encode(g, 0), codec.mask(g)))
        == "meld 9D 9H 9S"
    )
    g.apply("meld 9D 9H 9S")
    # 2D 3D are a partial run: the king goes.
    assert (
        codec.action_to_str(g, GreedyAgent().act(enc.encode(g, 0), codec.mask(g))) == "discard KC"
    )


def test_expert_never_feeds_an_opponent_meld_when_another_discard_will_do():
    rules = Rules()
    enc = ObservationEncoder(rules)
    from rummy500_env.actions import ActionCodec

    codec = ActionCodec(rules)
    # Player 1 took QS and QH from the pile in view: QD would complete its set. Greedy sheds
    # the high queen; the expert throws the 4.
    g = Game.from_dict(
        position(hands=["QD 4S", "QS QH 6D"], pile="4H", known=[[], ["QS", "QH"]], phase="play")
    )
    obs, mask = enc.encode(g, 0), codec.mask(g)
    assert codec.action_to_str(g, GreedyAgent().act(obs, mask)) == "discard QD"
    assert codec.action_to_str(g, ExpertAgent().act(obs, mask)) == "discard 4S"


def test_search_agent_respects_its_rollout_budget_and_is_seeded():
    rules = Rules()
    enc = ObservationEncoder(rules)
    from rummy500_env.actions import ActionCodec

    codec = ActionCodec(rules)
    g = Game.new(rules, seed=3)
    g.apply("draw")
    obs, mask = enc.encode(g, 0), codec.mask(g)
    a = SearchAgent(rules, rollouts=3, seed=7).act(obs, mask)
    assert a == SearchAgent(rules, rollouts=3, seed=7).act(obs, mask)
    assert mask[a] == 1


def test_random_agent_is_uniform_over_legal_actions_and_seeded():
    mask = np.zeros(360, dtype=np.int8)
    mask[[3, 7, 9]] = 1
    picks = [RandomAgent(1).act(np.zeros(748), mask) for _ in range(3)]
    assert picks[0] == picks[1] == picks[2]
    seen = {RandomAgent(s).act(np.zeros(748), mask) for s in range(30)}
    assert seen == {3, 7, 9}
    with pytest.raises(ValueError, match="no legal action"):
        RandomAgent().act(np.zeros(748), np.zeros(360, dtype=np.int8))


def test_python_m_rummy500_env_shows_a_seeded_bot_game(capsys):
    from rummy500_env.__main__ import main

    main(["--seed", "3", "--players", "expert", "random"])
    out = capsys.readouterr().out
    assert "hand 1 ends" in out and "winner: P" in out
    main(["--seed", "3", "--players", "expert", "random"])
    assert capsys.readouterr().out == out
