"""Jokers and calls (docs/rules.md §5) on the RL surface: action ids, observation features,
the AEC env handing call decisions out of turn, the single-agent view; and the standard
encodings kept exactly as before (the shipped model plays the same games)."""

from __future__ import annotations

import itertools
import json
import random
import warnings

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from pettingzoo.test import api_test, seed_test

import rummy500_env
from rummy500_env import Game, Rules
from rummy500_env.agents import RandomAgent
from rummy500_env.engine.cards import parse_card
from rummy500_env.rl.actions import ENCODING_VERSION, ActionCodec
from rummy500_env.rl.observation import OBSERVATION_VERSION, ObservationEncoder
from rummy500_env.rl.single_agent import Rummy500SingleAgentEnv
from tests.golden.record import SHIPPED_GAMES, SHIPPED_MODEL, SHIPPED_SEATS, shipped_model_game
from tests.helpers import position, random_positions, reshuffle_hidden

BOTH = {"jokers": 2, "rummy_calls": True}


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        yield


# --- the standard encodings stay exactly as they were


@pytest.mark.parametrize("players", [2, 3, 5, 8])
def test_standard_encodings_keep_their_sizes_ranges_and_versions(players):
    """Without jokers and calls nothing moved: the documented sizes, the six ranges, the
    encoding versions an exported policy records."""
    r = Rules(players=players)
    d, n = r.deck_count, players
    enc, codec = ObservationEncoder(r), ActionCodec(r)
    features = 52 * (d + 2 * n + 9) + 3 * n + 14
    assert enc.features_size == features and enc.extras_at == features
    assert enc.size == features + 56 * d + 2 * n + 57  # the exact part (version 3)
    assert codec.size == 310 + 52 * d - n
    assert list(codec.ranges()) == ["draw", "pile", "decline", "meld", "layoff", "discard"]
    assert (ENCODING_VERSION, OBSERVATION_VERSION) == (1, 3)
    assert list(enc.feature_slices)[-1] == "progress"


def test_shipped_model_loads_and_plays_the_recorded_games():
    """models/rummy500-ppo-standard.pt against GreedyAgent: seeded hands recorded with the
    standard encodings (first with the MLP model before jokers and calls existed; re-recorded,
    `tests/golden/record.py --shipped-model`, each time a new model replaced the shipped one):
    the same action ids and the same scores."""
    pytest.importorskip("torch")
    from rummy500_env.agents import PolicyAgent

    policy = PolicyAgent.load(SHIPPED_MODEL)
    recorded = json.loads(SHIPPED_GAMES.read_text())
    assert [(g["seed"], g["policy_seat"]) for g in recorded] == SHIPPED_SEATS
    for game in recorded:
        assert shipped_model_game(policy, game["seed"], game["policy_seat"]) == game


# --- action ids


def test_joker_and_call_ranges_follow_the_standard_ones_without_gaps():
    for fields in ({"jokers": 2}, {"rummy_calls": True}, BOTH, {**BOTH, "players": 5}):
        c = ActionCodec(Rules(**fields))
        spans = sorted(c.ranges().values())
        assert spans[0][0] == 0 and spans[-1][1] == c.size - 1
        assert all(b[0] == a[1] + 1 for a, b in itertools.pairwise(spans))
        low, high = c.ranges()["discard"]
        assert (low, high) == (c.max_pile + 258, c.max_pile + 309)  # as without §5
    assert ActionCodec(Rules(**BOTH)).size == 873  # P = 52: 2 P + 769
    assert ActionCodec(Rules(jokers=2)).size == 52 + 767
    assert ActionCodec(Rules(rummy_calls=True)).size == 2 * 50 + 312


def test_pinned_joker_and_call_action_ids():
    """A reorder of the joker and call ranges cannot slip through (P = 52 here)."""
    g = Game.from_dict(
        position(
            rules=BOTH,
            hands=["9S 9H JK 2C", "5D 6D"],
            pile="9D KC 4H QS",
            melds=[("7C 8C 9C", 1), ("10D 10H 10S", 1)],
            phase="play",
        )
    )
    c = ActionCodec(g.rules)
    p = 52
    pinned = {
        p + 310 + 3 * 32 + 0: "meld JK=9C 9D 9H",  # template 32 (9C 9D 9H), joker in place 0
        p + 310 + 3 * 35 + 2: "meld 9D 9H JK=9S",
        p + 310 + 3 * 52 + 1: "meld AC JK=2C 3C",
        p + 610 + 3 * 9 + 2: "layoff JK=10C 0",
        p + 610 + 3 * 9 + 0: "layoff JK=10C 1",
        p + 610 + 3 * 5 + 1: "layoff JK=6C 0",
        p + 766: "discard JK",
    }
    for i, text in pinned.items():
        assert c.action_to_str(g, i) == text, i
        assert c.str_to_action(g, text) == i
    g.apply("discard 2C")
    calls = {p + 767: "call 2C", p + 767 + 1: "call QS", p + 767 + 4: "call 9D"}
    calls |= {2 * p + 767: "pass", 2 * p + 768: "done"}
    for i, text in calls.items():
        assert c.action_to_str(g, i) == text, i
        assert c.str_to_action(g, text) == i


# --- observation features


def test_observation_slices_with_jokers_and_calls_tile_and_match_the_documented_size():
    for players, decks in ((2, 1), (3, 2), (8, 2)):
        r = Rules(players=players, decks=decks, **BOTH)
        enc = ObservationEncoder(r)
        standard = 52 * (decks + 2 * players + 9) + 3 * players + 14
        features = standard + (2 * decks + 2 * players + 107) + (players + 2)
        exact = 56 * decks + 56 * 2 * decks + 1 + 2 * players + 57
        assert enc.features_size == features and enc.size == features + exact
        starts = sorted((s.start, s.stop) for s in enc.slices.values())
        assert starts[0][0] == 0 and starts[-1][1] == enc.size
        assert all(b[0] == a[1] for a, b in itertools.pairwise(starts))
        assert enc.extras_at == standard
    assert ObservationEncoder(Rules(**BOTH)).features_size == 865


def test_observation_shows_jokers_in_hand_on_the_table_in_the_pile_and_known():
    g = Game.from_dict(
        position(
            rules={**BOTH, "decks": 2},
            hands=["JK 9S 9H 2C", "5D 6D JK"],
            pile="JK 9D KC",
            melds=[("5H JK=6H 7H", 1)],
            known=[[], ["JK"]],
        )
    )
    enc = ObservationEncoder(g.rules)
    v = enc.views(enc.encode(g, 0))
    card = parse_card
    assert v["hand_jokers"][0] == pytest.approx(1 / 4) and v["hand"].sum() == pytest.approx(1.5)
    assert v["pile_jokers"].tolist() == pytest.approx([0.0, 1 / 108, 0, 0, 0])
    assert v["pile_cards"].sum() == pytest.approx(1.0)  # 9D and KC, half each: no joker
    assert v["table_jokers"][1][card("6H")] == pytest.approx(1 / 4)
    assert v["table_jokers"].sum() == pytest.approx(1 / 4)
    assert v["table_run"][card("6H")] == 0 and v["table_owner"][1][card("5H")] == 0.5
    assert v["joker_seats"].tolist() == pytest.approx([0, 1 / 4])
    assert v["known_jokers"].tolist() == pytest.approx([1 / 4])
    assert v["table_points"][1] * 500 == pytest.approx(5 + 15 + 7)
    w = enc.views(enc.encode(g, 1))  # seen from player 1: the joker it put down is seat 0's
    assert w["joker_seats"].tolist() == pytest.approx([1 / 4, 0]) and w["hand_jokers"][0] == 0.25


def test_observation_shows_the_call_phase_and_the_discarder():
    g = Game.from_dict(
        position(
            rules={**BOTH, "players": 3},
            hands=["9D 2C 3C", "9S 9H 4D", "KS QS"],
            pile="5C",
            phase="play",
        )
    )
    enc = ObservationEncoder(g.rules)
    g.apply("discard 9D")
    v = enc.views(enc.encode(g, 1))
    assert v["call_phase"].tolist() == [1, 0] and v["phase"].tolist() == [0, 0]
    assert v["discarder"].tolist() == [0, 0, 1]  # player 0 is two seats after player 1
    g.apply("call 9D")
    v = enc.views(enc.encode(g, 1))
    assert v["call_phase"].tolist() == [0, 1] and v["must_play"][parse_card("9D")] == 1
    g.apply("meld 9D 9H 9S")
    g.apply("done")
    v = enc.views(enc.encode(g, 1))
    assert v["call_phase"].sum() == 0 and v["discarder"].sum() == 0 and v["phase"][0] == 1


def test_nothing_hidden_leaks_into_the_observation_with_jokers_and_calls():
    rules = Rules(players=3, **BOTH)
    enc = ObservationEncoder(rules)
    rng = random.Random(0)
    differs = 0
    for g in random_positions(rules, 20, seed=0, max_moves=40):
        h = reshuffle_hidden(g, 0, rng)
        assert np.array_equal(enc.encode(g, 0), enc.encode(h, 0))
        differs += not np.array_equal(enc.encode(g, 1), enc.encode(h, 1))
    assert differs > 0


# --- the AEC env


@pytest.mark.parametrize("players", [2, 3, 5])
def test_pettingzoo_api_test_and_seed_test_pass_with_jokers_and_calls(players):
    fields = {**BOTH, "players": players}
    api_test(rummy500_env.env(rules=fields), num_cycles=200)
    seed_test(lambda: rummy500_env.env(rules=fields), num_cycles=200)


def test_agent_selection_follows_the_engine_to_a_caller_out_of_turn():
    e = rummy500_env.raw_env(rules={**BOTH, "players": 3})
    e.reset(
        options={
            "position": position(
                rules={**BOTH, "players": 3},
                hands=["9D 2C 3C", "4D 5S", "9S 9H 2H"],
                pile="KC",
                phase="play",
            )
        }
    )
    e.step(e.str_to_action("discard 9D"))
    assert e.agent_selection == "player_2"  # player 1 has no call: player 2 is asked
    assert e.observe("player_2")["action_mask"].sum() == 2  # call 9D, pass
    assert not e.observe("player_1")["action_mask"].any()
    for text in ("call 9D", "meld 9D 9H 9S"):
        e.step(e.str_to_action(text))
        assert e.agent_selection == "player_2"
    e.step(e.str_to_action("done"))
    assert e.agent_selection == "player_1" and e.action_to_str(0) == "draw"


# --- the single-agent view


class Recorder:
    """An opponent that plays at random and records in which phases it was asked."""

    def __init__(self, encoder: ObservationEncoder, seed: int) -> None:
        self.encoder, self.random, self.phases = encoder, RandomAgent(seed), []

    def act(self, observation, action_mask):
        v = self.encoder.views(observation)
        self.phases.append(
            ("call", "called")[int(v["call_phase"][1])] if v["call_phase"].any() else "turn"
        )
        return self.random.act(observation, action_mask)


def test_single_agent_asks_the_learner_only_its_own_decisions_calls_included():
    rules = Rules(players=3, **BOTH)
    enc = ObservationEncoder(rules)
    recorder = Recorder(enc, 1)
    env = Rummy500SingleAgentEnv(opponents=recorder, seat=1, rules=rules, episode="hand")
    rng = random.Random(0)
    learner_phases = []
    for episode in range(6):
        obs, _ = env.reset(seed=episode)
        done = False
        while not done:
            assert env.aec.agent_selection == "player_1" and env.action_masks().any()
            v = enc.views(obs)
            learner_phases.append("call" if v["call_phase"][0] else "other")
            obs, _, term, trunc, _ = env.step(rng.choice(np.flatnonzero(env.action_masks())))
            done = term or trunc
    assert "call" in learner_phases  # the learner decides its own calls
    assert "call" in recorder.phases and "called" in recorder.phases  # opponents call in step()


def test_gymnasium_env_checker_passes_with_jokers_and_calls():
    check_env(
        Rummy500SingleAgentEnv(rules={**BOTH, "players": 3}, seat="random"), skip_render_check=True
    )
