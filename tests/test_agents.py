"""Baseline bots: legal play everywhere, information hygiene, and their basic judgement."""

from __future__ import annotations

import dataclasses
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
)
from rummy500_env.agents.heuristics import laid_value, partial_cards, plan, template_value
from rummy500_env.agents.registry import make_agent
from rummy500_env.engine.cards import parse_cards
from rummy500_env.engine.melds import meld_value
from rummy500_env.rl.actions import ActionCodec
from rummy500_env.rl.observation import ObservationEncoder
from tests.helpers import SEEN, position, random_positions, reshuffle_hidden

BOTS = ["random", "greedy", "expert", "search:2"]


def bot(spec: str, rules: Rules):
    """A bot built as the command lines build it (`make_agent`), seeded."""
    return make_agent(spec, rules, seed=0)


def choice(agent, **fields) -> str:
    """The action `agent` picks, as text, for seat 0 of the position `position(**fields)`."""
    g = Game.from_dict(position(**fields))
    enc, codec = ObservationEncoder(g.rules), ActionCodec(g.rules)
    return codec.action_to_str(g, agent.act(enc.encode(g, 0), codec.mask(g)))


def game(**fields) -> Game:
    """A position in the draw phase with `fields`, the players holding a card or two."""
    return Game.from_dict(position(hands=["2S 3D", "4S 5D"], **fields))


@pytest.mark.parametrize("bot_spec", BOTS)
@pytest.mark.parametrize(
    ("preset", "players"), [("standard", 2), ("nordic", 3), ("fives", 4), ("pagat", 5), ("app", 2)]
)
def test_bots_only_ever_play_legal_actions(bot_spec, preset, players):
    rules = Rules.preset(preset, players=players)
    agent = bot(bot_spec, rules)
    e = rummy500_env.raw_env(rules=rules, episode="hand")  # raw: an illegal id would raise
    steps = 0
    for seed in range(2 if bot_spec.startswith("search") else 4):
        e.reset(seed=seed)
        while not all(e.terminations.values()) and steps < 3000:
            o = e.observe(e.agent_selection)
            a = agent.act(o["observation"], o["action_mask"])
            assert o["action_mask"][a] == 1
            e.step(a)
            steps += 1


@pytest.mark.parametrize("bot_spec", ["greedy", "expert", "search:2"])
def test_bot_choice_does_not_change_when_only_hidden_information_changes(bot_spec):
    rules = Rules(players=3)
    enc = ObservationEncoder(rules)
    codec = ActionCodec(rules)
    rng = random.Random(1)
    checked = 0
    for g in random_positions(rules, 25, seed=5):
        p = g.current_player
        h = reshuffle_hidden(g, p, rng)
        assert h.hand(p) == g.hand(p)
        a1 = bot(bot_spec, rules).act(enc.encode(g, p), codec.mask(g))
        a2 = bot(bot_spec, rules).act(enc.encode(h, p), codec.mask(h))
        assert a1 == a2
        checked += 1
    assert checked >= 10


def test_observation_decodes_to_what_the_seat_knows():
    d = position(**SEEN)
    g = Game.from_dict(d)
    enc = ObservationEncoder(g.rules)
    v = enc.seat_view(enc.encode(g, 0))
    card = rummy500_env.parse_card
    assert v == g.seat_view(0)
    assert sorted(v.hand) == sorted(card(c) for c in ["9S", "9H", "2C"])
    assert v.pile == (card("9D"), card("KC"), card("4H"))  # bottom first
    assert [str(m) for m in v.melds] == ["7C 8C 9C"] and v.melds[0].owners == (1, 1, 1)
    assert v.known[1] == (card("QS"),) and v.hand_sizes == (3, 3)
    assert v.totals == (100, 250) and v.phase == "draw"
    assert len(v.unseen()) == 52 - 3 - 3 - 3 - 1  # minus hand, pile, table and the known QS


@pytest.mark.parametrize("fields", [{}, {"players": 3, "decks": 2}])
def test_view_decodes_the_pile_order_exactly(fields):
    """The pile is encoded by place; the decoded order (top first) must be the engine's,
    copies of a card included (two decks). The check fails if a place is lost or swapped."""
    rules = Rules(**fields)
    enc = ObservationEncoder(rules)
    rng = random.Random(11)
    deepest = twice = 0
    for seed in range(6):
        g = Game.new(rules, seed=seed)
        while g.phase in ("draw", "play"):
            for seat in range(rules.players):
                assert enc.seat_view(enc.encode(g, seat)).pile == tuple(g.pile)
            deepest = max(deepest, len(g.pile))
            twice += len(set(g.pile)) < len(g.pile)
            legal = g.legal_actions()
            draw = [a for a in legal if a.kind == "draw"]  # mostly draw: the pile grows
            g.apply(draw[0] if draw and rng.random() < 0.8 else rng.choice(legal))
    assert deepest >= 15 and (twice > 0) == (rules.deck_count == 2)


def test_greedy_takes_the_top_discard_only_when_it_completes_a_meld():
    dec_rules = Rules()
    enc = ObservationEncoder(dec_rules)
    codec = ActionCodec(dec_rules)
    g = Game.from_dict(position(hands=["9S 9H 2C 5D", "5C 6C"], pile="4H 9D"))
    assert GreedyAgent().act(enc.encode(g, 0), codec.mask(g)) == codec.PILE  # take 9D
    g = Game.from_dict(position(hands=["9S 4H 2C 5D", "5C 6C"], pile="4C KD"))
    assert GreedyAgent().act(enc.encode(g, 0), codec.mask(g)) == codec.DRAW


def test_greedy_melds_first_and_discards_its_highest_loose_card():
    rules = Rules()
    enc = ObservationEncoder(rules)
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
    """With ``rollouts=N`` a decision samples and plays out exactly N worlds (counted where
    they are sampled, not by the agent's own counter alone), whatever the N; the same seed
    gives the same choice."""
    rules = Rules()
    enc = ObservationEncoder(rules)
    codec = ActionCodec(rules)
    g = Game.new(rules, seed=3)
    g.apply("draw")
    obs, mask = enc.encode(g, 0), codec.mask(g)
    for budget in (1, 3, 7):
        agent = SearchAgent(rules, rollouts=budget, seed=7)
        sampled = 0
        sample = agent.sample_world

        def counted(view, sample=sample):
            nonlocal sampled
            sampled += 1
            return sample(view)

        agent.sample_world = counted  # type: ignore[method-assign]
        a = agent.act(obs, mask)
        assert (sampled, agent.last_worlds) == (budget, budget)
        assert a == SearchAgent(rules, rollouts=budget, seed=7).act(obs, mask)
        assert mask[a] == 1


def test_random_agent_is_uniform_over_legal_actions_and_seeded():
    """20,000 picks of one seeded agent over six legal ids (the first and the last id among
    them): each id's count lies within 5 standard deviations of 20,000/6, and no other id is
    picked. Seeded, so the counts are the same every run; and a fair generator with any
    seed would fail this with probability below 1e-5, so no seed change can make it flake.
    A pick that skews any id by 8% of its share fails."""
    mask = np.zeros(360, dtype=np.int8)
    legal = [0, 3, 7, 9, 200, 359]
    mask[legal] = 1
    n, p = 20_000, 1 / len(legal)
    agent = RandomAgent(1)
    counts = np.bincount([agent.act(np.zeros(748), mask) for _ in range(n)], minlength=360)
    assert set(np.flatnonzero(counts)) <= set(legal) and counts.sum() == n
    sigma = (n * p * (1 - p)) ** 0.5
    for i in legal:
        assert abs(counts[i] - n * p) < 5 * sigma, (i, counts[legal].tolist())
    seeded, again = RandomAgent(5), RandomAgent(5)
    first = [seeded.act(np.zeros(748), mask) for _ in range(20)]
    assert [again.act(np.zeros(748), mask) for _ in range(20)] == first
    other = RandomAgent(6)
    assert [other.act(np.zeros(748), mask) for _ in range(20)] != first
    with pytest.raises(ValueError, match="no legal action"):
        RandomAgent().act(np.zeros(748), np.zeros(360, dtype=np.int8))


def test_python_m_rummy500_env_shows_a_seeded_bot_game(capsys):
    from rummy500_env.__main__ import main

    main(["--seed", "3", "--players", "expert", "random"])
    out = capsys.readouterr().out
    assert "hand 1 ends" in out and "winner: P" in out
    main(["--seed", "3", "--players", "expert", "random"])
    assert capsys.readouterr().out == out


def test_partial_cards_count_an_ace_next_to_a_king():
    """Q-K-A is a run, so an ace held with a king (or a queen) is half a meld, as a king held
    with an ace always was; Greedy used to throw the ace of AC KC away."""
    cards = parse_cards
    assert partial_cards(cards("AC KC 5D 9H 9S")) == set(cards("AC KC 9H 9S"))
    assert partial_cards(cards("QC AC 7D")) == set(cards("QC AC"))
    assert partial_cards(cards("AC 2D KD")) == set()  # runs never wrap or change suit
    hand = {"hands": ["AC KC 5D 9H 9S", "4C 6C 8H 10S JD"], "pile": "4H", "phase": "play"}
    assert choice(GreedyAgent(), **hand) == "discard 5D"


def test_expert_holds_back_a_cheap_run_only_for_a_card_it_really_opens():
    """A-2-3♦ takes only the 4♦ (a run never wraps, and the K♣ next to the A♦ in card ids is
    another suit): the opponent's known K♣ is no reason to keep the run in hand; its 4♦ is."""
    hand = ["AD 2D 3D 7S 9H", "KC 4C 5C 8H 10S JD"]
    assert choice(ExpertAgent(), hands=hand, pile="4H", known=[[], ["KC"]], phase="play") == (
        "meld AD 2D 3D"
    )
    hand[1] = "4D 4C 5C 8H 10S JD"
    assert choice(ExpertAgent(), hands=hand, pile="4H", known=[[], ["4D"]], phase="play") == (
        "discard 9H"
    )


def test_heuristic_values_are_the_engines_meld_values():
    def template(text: str) -> int:
        from rummy500_env.engine.melds import template_index

        t = template_index(parse_cards(text))
        assert t is not None
        return t

    assert template_value(template("AC 2C 3C"), "pip") == 1 + 2 + 3  # the ace low
    assert template_value(template("AC 2C 3C"), "fives") == 5 + 5 + 5
    assert template_value(template("QC KC AC"), "pip") == 10 + 10 + 15
    table = game(melds=[("2C 3C 4C", 1), ("JD QD KD", 1), ("7S 7H 7D", 1)])
    ac, ad, seven = parse_cards("AC AD 7C")
    low, high, sevens = table.melds
    assert laid_value(low, ac, "pip") == 1
    assert laid_value(high, ad, "pip") == 15
    assert laid_value(sevens, seven, "pip") == 7
    # The plan lays the ace off where it scores most: above J-Q-K, not below 2-3-4.
    both = game(melds=[("2C 3C 4C", 1), ("JC QC KC", 1)])
    value, used = plan([ac], both.melds, "pip")
    assert (value, used[ac]) == (15, 1)


@pytest.mark.parametrize(
    "melds",
    [
        [("AH 2H 3H 4H", 0), ("9H 10H JH QH KH", 1)],
        [("2H 3H 4H", 0), ("9H 10H JH QH KH AH", 1)],
        [("2H 3H 4H 5H 6H", 0), ("7H 8H 9H", 1)],
        [("6S 7S 8S", 1), ("QC KC AC", 0), ("9C 9D 9S", 1)],
        [("AC 2C 3C 4C 5C 6C 7C 8C 9C 10C JC QC KC", 0)],
        [("2C 3C 4C 5C 6C 7C 8C 9C 10C JC QC KC AC", 1)],
    ],
)
def test_the_observation_holds_the_table_exactly(melds):
    """A-2-3-4♥ with 9-K♥ and 2-3-4♥ with 9-A♥ hold the same cards, as do 2-6♥ with 7-9♥
    and 2-9♥, and both full clubs runs: the exact part tells them apart, so every seat's
    decoded table is the engine's, owners included (the bots once rebuilt it from the cards
    and the lay-off spots, a guess)."""
    g = game(melds=melds)
    enc = ObservationEncoder(g.rules)
    for seat in range(2):
        assert enc.seat_view(enc.encode(g, seat)) == g.seat_view(seat).relative()


def test_search_rejects_a_view_no_position_fits():
    rules = Rules()
    g = Game.new(rules, seed=3)
    v = g.seat_view(0)
    assert SearchAgent(rules, rollouts=1, seed=0).sample_world(v) is not None
    v = dataclasses.replace(v, stock_size=v.stock_size + 1)  # more than the unseen cards fill
    assert SearchAgent(rules, rollouts=1, seed=0).sample_world(v) is None


@pytest.mark.parametrize(
    ("rules", "melds"),
    [
        # Two decks: the two 9♥ lie in different melds, put down by different seats.
        ({"decks": 2}, [("9S 9H 9C", 0), ("7H 8H 9H", 1), ("9D 9S 9C", 1)]),
        # Two runs of one suit that meet, and a set: where each card belongs is only in the
        # exact part once two decks hold the same cards twice.
        ({"decks": 2}, [("2H 3H 4H 5H", 0), ("6H 7H 8H", 1), ("4H 5H 6H", 0)]),
        # Jokers: two jokers in two melds that could each have held either.
        ({"jokers": 2}, [("5S JK=5D 5C", 1), ("3H 4H JK=5H", 0), ("7H 8H 9H", 1)]),
    ],
)
def test_the_observation_holds_tables_the_old_rebuild_could_not(rules, melds):
    """Before observation v3 the bots rebuilt the table from its cards and lay-off spots,
    exact only with one deck and no jokers: with two copies of a card, or jokers that two
    melds could hold, the owners and the meld of each card were a guess (and a wrong guess
    moved lay-off targets and table points). Now every seat decodes the engine's table."""
    g = game(rules=rules, melds=melds)
    enc = ObservationEncoder(g.rules)
    for seat in range(g.players):
        v = enc.seat_view(enc.encode(g, seat))
        assert v == g.seat_view(seat).relative()
        assert [str(m) for m in v.melds] == [str(m) for m in g.melds]
        n = g.players
        points = [0] * n
        for m in v.melds:
            for o, value in zip(m.owners, meld_value(m, g.rules.scoring), strict=True):
                points[(o + seat) % n] += value
        assert points == g.table_points()
