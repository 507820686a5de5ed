"""What the env exposes beyond the observation: each agent's information state, the
centralised critics' state, and live copies (deepcopy, pickle) that go on with the game."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import rummy500_env
from rummy500_env import Game, Rummy500SingleAgentEnv
from rummy500_env.agents import GreedyAgent
from rummy500_env.rl.observation import ObservationEncoder

RULES = ["standard", {"jokers": 2, "rummy_calls": True}, {"players": 3, "decks": 2}]


def _walk(e, steps: int, seed: int) -> list[int]:
    """Play `steps` seeded random legal actions; the actions taken."""
    rng, taken = np.random.default_rng(seed), []
    for _ in range(steps):
        if not e.agents:
            break
        obs, *_ = e.last()
        a = int(rng.choice(np.flatnonzero(obs["action_mask"])))
        e.step(a)
        taken.append(a)
    return taken


@pytest.mark.parametrize("rules", RULES)
def test_seat_view_of_each_agent_is_the_engines(rules):
    e = rummy500_env.raw_env(rules=rules)
    e.reset(seed=4)
    _walk(e, 25, 1)
    for seat, agent in enumerate(e.possible_agents):
        assert e.seat_view(agent) == e.game.seat_view(seat)
        obs = e.observe(agent)["observation"]
        assert e.encoder.seat_view(obs) == e.seat_view(agent).relative()
    with pytest.raises(rummy500_env.Rummy500Error, match="unknown agent"):
        e.seat_view("player_9")


@pytest.mark.parametrize("rules", RULES)
def test_state_holds_every_hand_and_observe_holds_none_of_the_others(rules):
    e = rummy500_env.raw_env(rules=rules)
    e.reset(seed=2)
    _walk(e, 15, 3)
    state = e.state()
    assert state.shape == e.state_space.shape and e.state_space.contains(state)
    g, r = e.game, e.rules
    enc = ObservationEncoder(r)
    at = enc.features_size
    for p in range(1, r.players):
        row = state[at : at + 52]
        counts = np.rint(row * r.deck_count).astype(int)
        natural = [c for c in g.hand(p) if c < 52]
        assert sorted(c for c in np.flatnonzero(counts) for _ in range(counts[c])) == natural
        at += 52 + (1 if r.jokers else 0)
    # The observation of a seat does not change when only the hidden cards do.
    import random

    from tests.helpers import reshuffle_hidden

    other = reshuffle_hidden(g, 0, random.Random(9))
    assert other.to_dict() != g.to_dict()
    assert (enc.encode(other, 0) == enc.encode(g, 0)).all()
    e2 = rummy500_env.raw_env(rules=rules)
    e2.reset(options={"position": other.to_dict()})
    assert not np.array_equal(e2.state(), state)  # the state does see them


@pytest.mark.parametrize("make", [rummy500_env.env, rummy500_env.raw_env])
@pytest.mark.parametrize("rules", RULES)
def test_a_live_env_copies_and_goes_on_with_the_same_game(make, rules):
    e = make(rules=rules)
    e.reset(seed=7)
    _walk(e, 30, 2)
    for clone in (copy.deepcopy(e), pickle.loads(pickle.dumps(e))):
        assert clone.unwrapped.game is not e.unwrapped.game
        assert clone.unwrapped.game == e.unwrapped.game
        twin = copy.deepcopy(e)
        assert _walk(clone, 80, 5) == _walk(twin, 80, 5)
        assert clone.unwrapped.game == twin.unwrapped.game
        assert clone.unwrapped.game.to_dict() != Game.new(rules, seed=7).to_dict()


def test_the_single_agent_view_copies_mid_game():
    env = Rummy500SingleAgentEnv(opponents=GreedyAgent(), seat=0)
    env.reset(seed=3)
    for _ in range(5):
        env.step(int(np.flatnonzero(env.action_masks())[0]))
    copies = [copy.deepcopy(env), pickle.loads(pickle.dumps(env))]
    runs = []
    for e in [env, *copies]:
        seen = []
        for _ in range(20):
            o, reward, term, trunc, _ = e.step(int(np.flatnonzero(e.action_masks())[-1]))
            seen.append((o.tobytes(), reward, term, trunc))
            if term or trunc:
                break
        runs.append(seen)
    assert runs[0] == runs[1] == runs[2]


def test_the_exact_part_stays_inside_the_observation_space():
    """Totals far below zero (a long game of weak players) or over a small target still
    decode exactly, and every float stays inside the observation space's ±2."""
    from tests.helpers import game

    g = game(
        rules={"target": 100},
        hands=["9S 9H 2C", "5D 6D QS"],
        totals=[-20_000, 95],
        turns=150,
        hands_played=99,
    )
    e = rummy500_env.raw_env(rules=g.rules)
    e.reset(options={"position": g.to_dict()})
    for agent in e.possible_agents:
        obs = e.observe(agent)
        assert e.observation_space(agent).contains(obs)
        assert e.encoder.seat_view(obs["observation"]) == e.seat_view(agent).relative()
