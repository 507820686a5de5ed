"""The PettingZoo AEC env, the action codec and the observation (issue: RL surface)."""

from __future__ import annotations

import itertools
import pickle
import random
import warnings

import cloudpickle
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pettingzoo.test import api_test, seed_test

import rummy500_env
from rummy500_env import Game, IllegalActionError, InvalidPositionError, Rules, Rummy500Error
from rummy500_env.rl.actions import ActionCodec
from rummy500_env.rl.observation import ObservationEncoder
from rummy500_env.rl.observation_incremental import IncrementalEncoder
from tests.helpers import SEEN, position, random_positions, reshuffle_hidden

PRESETS = ["standard", "pagat", "nordic", "fives", "app"]
PLAYER_COUNTS = [2, 3, 5]


def rules_for(preset: str, players: int) -> Rules:
    return Rules.preset(preset, players=players)


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        yield


@pytest.mark.parametrize("players", PLAYER_COUNTS)
@pytest.mark.parametrize("preset", PRESETS)
def test_pettingzoo_api_test_passes(preset, players):
    e = rummy500_env.env(rules=rules_for(preset, players))
    api_test(e, num_cycles=300)


@pytest.mark.parametrize("players", PLAYER_COUNTS)
def test_pettingzoo_seed_test_passes(players):
    seed_test(lambda: rummy500_env.env(rules={"players": players}), num_cycles=300)


@pytest.mark.parametrize("episode", ["game", "hand"])
def test_pickle_round_trip_keeps_every_setting(episode):
    e = rummy500_env.raw_env(
        rules=rules_for("nordic", 3), episode=episode, reward="score", render_mode="ansi"
    )
    e2 = pickle.loads(pickle.dumps(e))
    assert (e2.rules, e2.episode, e2.reward_mode, e2.render_mode) == (
        e.rules,
        episode,
        "score",
        "ansi",
    )
    wrapped = pickle.loads(pickle.dumps(rummy500_env.env(rules="app")))
    assert wrapped.unwrapped.rules == Rules.preset("app")


def test_metadata_name_is_versioned_and_agents_are_named():
    e = rummy500_env.raw_env(rules={"players": 5})
    assert e.metadata["name"] == "rummy500_v0"
    assert e.possible_agents == [f"player_{i}" for i in range(5)]


def test_env_and_raw_env_are_plain_functions_importable_both_ways():
    from rummy500_env.rl.rummy500_v0 import Rummy500Env, env, raw_env

    assert rummy500_env.env is env and rummy500_env.raw_env is raw_env
    assert rummy500_env.rl.rummy500_v0.env is env
    assert isinstance(raw_env(), Rummy500Env)
    assert type(env().unwrapped) is Rummy500Env


@pytest.mark.parametrize("dumps", [pickle.dumps, cloudpickle.dumps], ids=["pickle", "cloudpickle"])
def test_factories_and_envs_pickle_and_the_copies_play(dumps):
    """Ray's register_env and spawn-based pools pickle the factory (cloudpickle); vector envs
    pickle envs. The copies must work, and play the same seeded game as the original."""
    factories = [rummy500_env.env, rummy500_env.raw_env]
    if dumps is cloudpickle.dumps:  # what Ray's register_env is given
        factories.append(lambda: rummy500_env.env(rules="standard"))
    for factory in factories:
        made = pickle.loads(dumps(factory))()
        made.reset(seed=3)
        assert made.agent_selection == "player_0"
    original = rummy500_env.env(rules="app")
    original.reset(seed=5)
    copy = pickle.loads(dumps(original))
    copy.reset(seed=5)
    for e in (original, copy):
        rng = random.Random(0)
        for _ in range(60):
            mask = e.observe(e.agent_selection)["action_mask"]
            e.step(int(rng.choice(np.flatnonzero(mask))))
    assert original.unwrapped.game.to_dict() == copy.unwrapped.game.to_dict()


def play_and_check_masks(e, rng: random.Random, steps: int) -> None:
    """At every step the mask is exactly the engine's legal set; other agents' masks are 0."""
    raw = e.unwrapped
    codec = raw.codec
    for _ in range(steps):
        agent = raw.agent_selection
        if raw.terminations[agent] or raw.truncations[agent]:
            break
        game = raw.game
        legal = game.legal_actions()
        mask = raw.observe(agent)["action_mask"]
        ids = set(np.flatnonzero(mask).tolist())
        assert ids == {codec.encode(game, a) for a in legal}
        assert codec.legal_ids(game) == [codec.encode(game, a) for a in legal]
        assert {codec.decode(game, i) for i in ids} <= set(legal)
        for other in raw.agents:
            if other != agent:
                assert not raw.observe(other)["action_mask"].any()
        e.step(rng.choice(sorted(ids)))


@pytest.mark.parametrize("players", PLAYER_COUNTS)
@pytest.mark.parametrize("preset", PRESETS)
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31))
def test_action_mask_equals_the_engine_legal_set(preset, players, seed):
    e = rummy500_env.raw_env(rules=rules_for(preset, players))
    e.reset(seed=seed)
    play_and_check_masks(e, random.Random(seed), steps=400)


@pytest.mark.parametrize(
    "fields",
    [{"discard_to_go_out": True}, {"top_card_must_meld": True}, {"players": 3, "decks": 2}],
)
def test_action_mask_equals_the_engine_legal_set_in_variants(fields):
    e = rummy500_env.raw_env(rules=fields)
    for seed in range(3):
        e.reset(seed=seed)
        play_and_check_masks(e, random.Random(seed), steps=400)


def test_pinned_action_ids_standard():
    """A reorder of the action layout cannot slip through."""
    g = Game.from_dict(
        position(
            hands=["9S 9H 2C", "5D 6D"],
            pile="9D KC 4H QS",
            melds=[("7C 8C 9C", 1), ("10D 10H 10S", 1)],
        )
    )
    c = ActionCodec(g.rules)
    assert c.size == 360
    pinned = {
        0: "draw",
        1: "take",
        4: "dig 9D",
        51: "decline",
        52: "meld AC AD AH",
        53: "meld AC AD AS",
        55: "meld AD AH AS",
        56: "meld 2C 2D 2H",
        104: "meld AC 2C 3C",
        115: "meld QC KC AC",
        151: "meld QS KS AS",
        152 + 3 * 9 + 2: "layoff 10C 0",
        152 + 3 * 9 + 0: "layoff 10C 1",
        152 + 3 * 5 + 1: "layoff 6C 0",
        308: "discard AC",
        359: "discard KS",
    }
    for i, text in pinned.items():
        assert c.action_to_str(g, i) == text, i
        assert c.str_to_action(g, text) == i


def test_codec_ranges_cover_the_space_without_gaps():
    for players in (2, 5, 8):
        c = ActionCodec(Rules(players=players))
        spans = sorted(c.ranges().values())
        assert spans[0][0] == 0 and spans[-1][1] == c.size - 1
        assert all(b[0] == a[1] + 1 for a, b in itertools.pairwise(spans))


def test_action_to_str_and_str_to_action_on_the_env():
    e = rummy500_env.env()
    e.reset(seed=3)
    assert e.unwrapped.action_to_str(0) == "draw"
    assert e.unwrapped.str_to_action("discard KS") == 359


def test_decode_of_an_id_that_names_nothing_is_a_clear_error():
    g = Game.new("standard", seed=1)
    c = ActionCodec(g.rules)
    with pytest.raises(IllegalActionError, match="digs to depth 30"):
        c.decode(g, 31)
    with pytest.raises(IllegalActionError, match="out of range"):
        c.decode(g, 360)
    with pytest.raises(IllegalActionError, match="no meld takes"):
        c.decode(g, 152)


# --- observation -----------------------------------------------------------------------------


def test_observation_slices_tile_the_vector_and_match_the_documented_size():
    enc = ObservationEncoder(Rules())
    assert enc.features_size == 748  # 52 (D + 2n + 9) + 3n + 14
    assert enc.size == 748 + 56 + 2 * 2 + 57  # the exact part: 56 D + 2 n + 57
    wide = ObservationEncoder(Rules(players=3, decks=2))
    assert wide.features_size == 52 * (2 + 6 + 9) + 9 + 14
    assert wide.size == wide.features_size + 56 * 2 + 6 + 57
    starts = sorted((s.start, s.stop) for s in enc.slices.values())
    assert starts[0][0] == 0 and starts[-1][1] == enc.size
    assert all(b[0] == a[1] for a, b in itertools.pairwise(starts))


def test_observation_shows_hand_pile_in_order_melds_owners_and_known_cards():
    d = position(**SEEN)
    g = Game.from_dict(d)
    enc = ObservationEncoder(g.rules)
    v = enc.views(enc.encode(g, 0))
    card = rummy500_env.parse_card
    assert v["hand"][card("9S")] == 1 and v["hand"].sum() == 3
    assert v["pile_top"][card("4H")] == 1 and v["pile_top"].sum() == 1
    places = v["pile_place"][0] * 52  # counted from the bottom: 9D, KC, 4H
    assert [places[card(c)] for c in ("9D", "KC", "4H")] == pytest.approx([1, 2, 3])
    assert places.astype(bool).sum() == 3 and v["stock_pile"][1] * 52 == pytest.approx(3)
    assert v["table_owner"][1][card("7C")] == 1 and v["table_owner"][0].sum() == 0
    assert v["table_run"][card("8C")] == 1 and v["table_set"].sum() == 0
    assert v["layoff_fits"][2][card("10C")] == 1 and v["layoff_fits"][1][card("6C")] == 1
    assert v["known"][0][card("QS")] == 1
    assert v["totals"].tolist() == pytest.approx([0.2, 0.5])
    # Seen from player 1 the rows rotate: player 1 is seat 0.
    w = enc.views(enc.encode(g, 1))
    assert w["table_owner"][0][card("7C")] == 1 and w["hand"][card("QS")] == 1
    assert w["totals"].tolist() == pytest.approx([0.5, 0.2])


def test_nothing_hidden_leaks_into_the_observation():
    """Positions that differ only in the opponents' unknown cards and the stock order look
    the same to the observer; the check can fail (an opponent's own view does change)."""
    rules = Rules(players=3)
    enc = ObservationEncoder(rules)
    rng = random.Random(0)
    differs = 0
    for g in random_positions(rules, 20, seed=0, max_moves=40):
        h = reshuffle_hidden(g, 0, rng)
        assert np.array_equal(enc.encode(g, 0), enc.encode(h, 0))
        differs += not np.array_equal(enc.encode(g, 1), enc.encode(h, 1))
    assert differs > 0


@pytest.mark.parametrize(
    "fields",
    [
        {},
        {"players": 5},
        {"players": 3, "decks": 2},
        {"stock_out": "pile_must_use"},
        {"players": 8},
    ],
)
@pytest.mark.slow
def test_incremental_observation_equals_full_encoding(fields):
    rules = Rules(**fields)
    incremental, full = IncrementalEncoder(rules), ObservationEncoder(rules)
    rng = random.Random(1)
    for seed in range(6):
        g = Game.new(rules, seed=seed)
        while g.phase != "game_over":
            if g.phase == "hand_over":
                g.next_hand()
                continue
            o = rng.randrange(rules.players)
            assert np.array_equal(incremental.encode_update(g, o), full.encode(g, o))
            g.apply(rng.choice(g.legal_actions()))


@pytest.mark.parametrize("fields", [{"players": 3, "decks": 2}, {}])
def test_incremental_observation_follows_jumps_between_unrelated_positions(fields):
    """The encoder keeps what it saw last; any next position (another game, a reset, a
    position loaded from a dict, a pickled encoder) must still encode exactly."""
    rules = Rules(**fields)
    incremental, full = IncrementalEncoder(rules), ObservationEncoder(rules)
    positions = random_positions(rules, 60, seed=3, max_moves=120)
    rng = random.Random(3)
    for k in range(300):
        g = rng.choice(positions)
        if k % 7 == 0:
            g = Game.from_dict(g.to_dict())
        if k % 50 == 49:
            incremental = pickle.loads(pickle.dumps(incremental))
        o = rng.randrange(rules.players)
        assert np.array_equal(incremental.encode_update(g, o), full.encode(g, o))


def test_observations_returned_are_copies():
    e = rummy500_env.raw_env()
    e.reset(seed=1)
    first = e.observe(e.agent_selection)["observation"].copy()
    returned = e.observe(e.agent_selection)["observation"]
    e.step(int(np.flatnonzero(e.observe(e.agent_selection)["action_mask"])[0]))
    e.observe(e.agent_selection)
    assert np.array_equal(returned, first)


def test_observation_is_inside_the_observation_space():
    e = rummy500_env.raw_env(rules={"players": 3})
    e.reset(seed=0)
    space = e.observation_space("player_0")
    for _agent in e.agent_iter(max_iter=500):
        obs, _, term, trunc, _ = e.last()
        assert space.contains(obs)
        e.step(None if term or trunc else int(np.flatnonzero(obs["action_mask"])[0]))


# --- episodes, rewards, errors --------------------------------------------------------------


def run_episode(e, seed: int):
    e.reset(seed=seed)
    rng = np.random.default_rng(seed)
    totals = dict.fromkeys(e.possible_agents, 0.0)
    hand_infos = []
    for agent in e.agent_iter():
        obs, reward, term, trunc, info = e.last()
        totals[agent] += reward
        if "hand_scores" in info and info not in hand_infos:
            hand_infos.append(info)
        if term or trunc:
            e.step(None)
        else:
            legal = np.flatnonzero(obs["action_mask"])
            e.step(int(legal[rng.integers(len(legal))]))
    return totals, hand_infos


@pytest.mark.parametrize("players", [2, 3])
def test_win_rewards_are_zero_sum_and_go_to_the_winner(players):
    e = rummy500_env.env(rules={"players": players, "target": 150})
    totals, infos = run_episode(e, seed=4)
    assert sum(totals.values()) == pytest.approx(0.0)
    winner = infos[-1]["winner"]
    assert totals[f"player_{winner}"] == 1.0


def test_score_rewards_per_hand_are_zero_sum_and_hand_episode_terminates():
    e = rummy500_env.raw_env(episode="hand")
    e.reset(seed=2)
    seen = []
    while True:
        agent = e.agent_selection
        if e.terminations[agent]:
            break
        e.step(int(np.flatnonzero(e.observe(agent)["action_mask"])[-1]))
        if any(e.rewards.values()):
            seen.append(dict(e.rewards))
    assert len(seen) == 1 and sum(seen[0].values()) == pytest.approx(0.0)
    scores = e.infos["player_0"]["hand_scores"]
    assert seen[0]["player_0"] == pytest.approx((scores[0] - scores[1]) / 100)
    assert all(e.terminations.values()) and not any(e.truncations.values())


def test_infos_carry_hand_scores_and_totals_when_a_hand_ends_in_a_game():
    e = rummy500_env.env(rules={"target": 10_000, "hand_limit": 3})
    _totals, infos = run_episode(e, seed=1)
    assert [i["hands_played"] for i in infos] == [1, 2, 3]
    assert all(set(i) >= {"hand_scores", "totals", "went_out"} for i in infos)


def test_hand_limit_is_a_truncation_not_a_termination():
    e = rummy500_env.raw_env(rules={"target": 10_000, "hand_limit": 2})
    e.reset(seed=0)
    rng = np.random.default_rng(0)
    while not (any(e.terminations.values()) or any(e.truncations.values())):
        obs = e.observe(e.agent_selection)
        legal = np.flatnonzero(obs["action_mask"])
        e.step(int(legal[rng.integers(len(legal))]))
    assert all(e.truncations.values()) and not any(e.terminations.values())


def test_reset_from_a_position_starts_there():
    d = position(hands=["9S 9H 2C", "5D 6D"], pile="9D KC")
    e = rummy500_env.env()
    e.reset(options={"position": d})
    assert e.unwrapped.game.to_dict() == Game.from_dict(d).to_dict()
    assert e.unwrapped.action_to_str(2) == "dig 9D"
    with pytest.raises(InvalidPositionError, match="differ from the env's rules"):
        e.reset(options={"position": position(rules="nordic", hands=["9S", "5D"], pile="KC")})


def test_raw_env_raises_on_an_illegal_action_and_env_terminates_the_offender():
    raw = rummy500_env.raw_env()
    raw.reset(seed=0)
    with pytest.raises(IllegalActionError, match="you must draw first"):
        raw.step(359)
    e = rummy500_env.env()
    e.reset(seed=0)
    agent = e.agent_selection
    e.step(359)
    assert all(e.terminations.values())
    assert e.rewards[agent] == -1


def test_bad_env_arguments_are_clear_errors():
    with pytest.raises(Rummy500Error, match="episode='match'"):
        rummy500_env.raw_env(episode="match")
    with pytest.raises(Rummy500Error, match="reward='points'"):
        rummy500_env.raw_env(reward="points")
    with pytest.raises(Rummy500Error, match="render_mode='rgb_array'"):
        rummy500_env.raw_env(render_mode="rgb_array")


def test_ansi_render_shows_hand_pile_melds_with_owners_and_scores():
    e = rummy500_env.raw_env(render_mode="ansi")
    e.reset(
        options={
            "position": position(hands=["9S 9H 2C", "5D 6D"], pile="9D KC", melds=[("7C 8C 9C", 1)])
        }
    )
    text = e.render()
    for words in ["P0 [2C 9H 9S]", "pile (bottom -> top): 9D KC", "7C/P1", "total 0"]:
        assert words in text


# --- errors a user meets: each says what was wrong and what is allowed


@pytest.mark.parametrize(
    ("action", "words"),
    [
        (9999, "action id 9999 is out of range: ids are 0..359"),
        (-1, "action id -1 is out of range: ids are 0..359"),
        (3.7, "an action must be an int id 0..359, got 3.7 (float)"),
        ("draw", "got 'draw' (str); for notation use env.unwrapped.str_to_action('draw')"),
        (None, "step(None) is only for an agent that is done"),
        (True, "an action must be an int id 0..359, got True (bool)"),
    ],
)
def test_wrapped_env_says_what_an_action_must_be(action, words):
    e = rummy500_env.env()
    e.reset(seed=0)
    with pytest.raises(IllegalActionError) as info:
        e.step(action)
    assert words in str(info.value)
    e.step(int(np.flatnonzero(e.observe(e.agent_selection)["action_mask"])[0]))  # still usable


@pytest.mark.parametrize("action", [9999, 3.7, "draw", None])
def test_raw_env_says_what_an_action_must_be(action):
    e = rummy500_env.raw_env()
    e.reset(seed=0)
    with pytest.raises(IllegalActionError, match="action"):
        e.step(action)


def test_an_action_outside_the_mask_still_ends_the_game_under_env():
    """PettingZoo's classic convention is kept: a legal id that is illegal now is -1."""
    e = rummy500_env.env()
    e.reset(seed=0)
    mask = e.observe(e.agent_selection)["action_mask"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        e.step(int(np.flatnonzero(mask == 0)[0]))
    assert all(e.terminations.values()) and e.rewards[e.agent_selection] == -1


@pytest.mark.parametrize("call", ["step", "observe", "last", "action_to_str"])
def test_raw_env_before_reset_says_to_reset(call):
    e = rummy500_env.raw_env()
    with pytest.raises(Rummy500Error, match=r"call reset\(\)"):
        {
            "step": lambda: e.step(0),
            "observe": lambda: e.observe("player_0"),
            "last": lambda: e.last(),
            "action_to_str": lambda: e.action_to_str(0),
        }[call]()


def test_stepping_after_every_agent_is_done_says_the_episode_is_over():
    e = rummy500_env.raw_env(episode="hand")
    e.reset(seed=0)
    rng = random.Random(0)
    for _agent in e.agent_iter():
        obs, _, term, trunc, _ = e.last()
        e.step(None if term or trunc else int(rng.choice(np.flatnonzero(obs["action_mask"]))))
    assert e.agents == []
    with pytest.raises(IllegalActionError, match=r"the episode is over; call reset\(\)"):
        e.step(0)


def finished(make, **kwargs):
    """An env whose episode (one hand) was played to the end in the PettingZoo loop."""
    e = make(episode="hand", **kwargs)
    e.reset(seed=0)
    rng = random.Random(0)
    for _agent in e.agent_iter():
        obs, _, term, trunc, _ = e.last()
        e.step(None if term or trunc else int(rng.choice(np.flatnonzero(obs["action_mask"]))))
    assert e.agents == []
    return e


@pytest.mark.parametrize("make", [rummy500_env.raw_env, rummy500_env.env], ids=["raw", "wrapped"])
def test_last_after_the_episode_says_it_is_over(make):
    """Issue 20: a bare KeyError 'player_1', raw and wrapped."""
    e = finished(make)
    with pytest.raises(Rummy500Error, match=r"last\(\): every agent is done: the episode is over"):
        e.last()
    e.reset(seed=1)  # and reset starts the next episode as before
    assert e.last()[2] is False


def test_the_wrapped_env_stepped_after_the_episode_raises_not_warns():
    """Issue 20: PettingZoo's OrderEnforcing only logged a warning; the README promises an
    error. The wrapper is still PettingZoo's (a subclass), so checks for it still hold."""
    from pettingzoo.utils.wrappers import OrderEnforcingWrapper

    e = finished(rummy500_env.env)
    assert isinstance(e, OrderEnforcingWrapper)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a warning instead of the error fails the test
        with pytest.raises(IllegalActionError, match=r"the episode is over; call reset\(\)"):
            e.step(0)


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"options": "hand"}, "options must be a dict (allowed keys: ('position',)) or None"),
        ({"seed": "abc"}, "seed must be an int or None, got 'abc'"),
        ({"seed": 1.5}, "seed must be an int or None"),
    ],
)
def test_bad_reset_arguments_are_clear_errors(kwargs, words):
    e = rummy500_env.raw_env()
    with pytest.raises(Rummy500Error) as info:
        e.reset(**kwargs)
    assert words in str(info.value)


def test_unknown_reset_options_are_named_in_a_warning():
    e = rummy500_env.raw_env()
    with pytest.warns(UserWarning, match=r"ignores the unknown option\(s\) \['hand'\]"):
        e.reset(seed=0, options={"hand": 1})
