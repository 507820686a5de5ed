"""The Gymnasium single-agent view and MaskablePPO on it."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from rummy500_env import IllegalActionError, Rummy500Error
from rummy500_env.agents import RandomAgent
from rummy500_env.rl.single_agent import Rummy500SingleAgentEnv


def first_legal(obs, mask):
    return int(np.flatnonzero(mask)[0])


@pytest.mark.parametrize("rules", ["standard", {"players": 3}])
def test_gymnasium_env_checker_passes(rules):
    check_env(Rummy500SingleAgentEnv(rules=rules, seat="random"), skip_render_check=True)


def test_learner_only_sees_its_own_turns_and_reward():
    env = Rummy500SingleAgentEnv(opponents=RandomAgent(1), seat=1, episode="hand")
    obs, info = env.reset(seed=3)
    assert env.aec.agent_selection == "player_1" and env.action_masks().any()
    total, done = 0.0, False
    while not done:
        obs, reward, term, trunc, info = env.step(first_legal(obs, env.action_masks()))
        done = term or trunc
        if not done:
            assert env.aec.agent_selection == "player_1" and env.action_masks().any()
        total += reward
    scores = info["hand_scores"]
    assert total == pytest.approx((scores[1] - scores[0]) / 100)


def test_random_seat_puts_the_learner_in_both_seats():
    env = Rummy500SingleAgentEnv(seat="random")
    seats = {env.reset(seed=s)[1]["seat"] for s in range(12)}
    assert seats == {0, 1}


def test_opponents_can_be_plain_callables_and_swapped_between_episodes():
    calls = []

    def greedy_first(obs, mask):
        calls.append(1)
        return int(np.flatnonzero(mask)[0])

    env = Rummy500SingleAgentEnv(opponents=greedy_first, episode="hand")
    env.reset(seed=0)
    for _ in range(3):  # draw, then discard: the opponent plays its turn inside step()
        env.step(int(np.flatnonzero(env.action_masks())[-1]))
    assert calls
    env.set_opponent_pool([RandomAgent(0), greedy_first], weights=[0.0, 1.0])
    env.reset(seed=1)
    assert env.opponents[0].fn is greedy_first  # type: ignore[attr-defined]


def test_bad_arguments_and_illegal_actions_are_clear():
    with pytest.raises(Rummy500Error, match="seat=5"):
        Rummy500SingleAgentEnv(seat=5)
    with pytest.raises(Rummy500Error, match="one opponent per other seat"):
        Rummy500SingleAgentEnv(opponents=[RandomAgent()], rules={"players": 3})
    with pytest.raises(TypeError, match="act\\(observation, action_mask\\)"):
        Rummy500SingleAgentEnv(opponents=42)
    env = Rummy500SingleAgentEnv(illegal="raise")
    env.reset(seed=0)
    with pytest.raises(IllegalActionError):
        env.step(359)
    env = Rummy500SingleAgentEnv()
    env.reset(seed=0)
    _, reward, term, _, info = env.step(359)
    assert (reward, term, info["illegal_action"]) == (-1.0, True, 359)


@pytest.mark.slow
def test_maskable_ppo_trains_a_few_thousand_steps_in_subprocesses():
    pytest.importorskip("sb3_contrib")
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.vec_env import SubprocVecEnv

    venv = SubprocVecEnv(
        [lambda: Rummy500SingleAgentEnv(seat="random", episode="hand") for _ in range(2)]
    )
    try:
        model = MaskablePPO(
            "MlpPolicy",
            venv,
            n_steps=512,
            batch_size=256,
            n_epochs=2,
            seed=0,
            policy_kwargs={"net_arch": [64, 64]},
        )
        model.learn(2048)
        assert model.num_timesteps >= 2048
        masks = np.stack(venv.env_method("action_masks"))
        obs = venv.reset()
        actions, _ = model.predict(obs, action_masks=np.stack(venv.env_method("action_masks")))
        assert all(
            m[a] for m, a in zip(np.stack(venv.env_method("action_masks")), actions, strict=True)
        )
        assert masks.shape == (2, 360)
    finally:
        venv.close()


def test_a_deal_that_ends_before_the_learner_acts_is_dealt_again():
    """An opponent who goes out on the first turn would end a hand episode before the learner
    decides anything; reset deals again instead (and refuses such a fixed position)."""
    from rummy500_env.agents import GreedyAgent
    from tests.helpers import position

    doomed = position(hands=["5C 6C 7C 9D 9H", "2S 4S 6S 8S"], pile="KD", stock="9S")
    env = Rummy500SingleAgentEnv(opponents=GreedyAgent(), seat=1, episode="hand")
    with pytest.raises(Rummy500Error, match="ends before seat 1 acts"):
        env.reset(seed=0, options={"position": doomed})
    real_reset = env.aec.reset
    calls = []

    def first_doomed(seed=None, options=None):
        calls.append(seed)
        real_reset(seed=seed, options={"position": doomed} if len(calls) == 1 else None)

    env.aec.reset = first_doomed
    env.reset(seed=0)
    assert len(calls) == 2 and env.action_masks().any()
    assert env.aec.agent_selection == "player_1"


@pytest.mark.parametrize("call", ["step", "action_masks"])
def test_single_agent_env_before_reset_says_to_reset(call):
    env = Rummy500SingleAgentEnv()
    with pytest.raises(Rummy500Error, match=r"call reset\(\)"):
        env.step(0) if call == "step" else env.action_masks()


def test_reset_gives_up_with_a_clear_error_when_the_learner_can_never_act(monkeypatch):
    """With 25 cards each the stock holds one card: an opponent that always draws takes it,
    and under ends_hand the hand ends before seat 1's first decision, deal after deal. Reset
    must not hand back a finished episode."""
    import rummy500_env.rl.single_agent as single_agent

    def draws_then_discards(observation, mask):
        return 0 if mask[0] else int(np.flatnonzero(mask)[-1])

    monkeypatch.setattr(single_agent, "REDEALS", 5)
    env = Rummy500SingleAgentEnv(
        draws_then_discards,
        seat=1,
        rules={"hand_size": 25, "stock_out": "ends_hand"},
        episode="hand",
    )
    with pytest.raises(Rummy500Error, match="5 deals in a row ended before seat 1 could act"):
        env.reset(seed=0)
    with pytest.raises(Rummy500Error, match=r"call reset\(\)"):
        env.step(0)
