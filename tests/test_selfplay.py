"""Batched self-play: every row is a learner decision, rewards and returns add up, policy
opponents are asked a batch at a time, and a seed replays the same games."""

from __future__ import annotations

import numpy as np
import pytest

from rummy500_env import IllegalActionError, Rummy500Error
from rummy500_env.agents import GreedyAgent, RandomAgent
from rummy500_env.rl.selfplay import SelfPlayGames


class CountingBatchAgent:
    """A random agent that answers batches and records their sizes."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.batches: list[int] = []

    def act(self, observation, action_mask):  # pragma: no cover - act_batch is preferred
        raise AssertionError("a batch agent must be asked through act_batch")

    def act_batch(self, observations, action_masks):
        self.batches.append(len(observations))
        return np.array([self.rng.choice(np.flatnonzero(m)) for m in action_masks])


def random_actions(masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return np.array([rng.choice(np.flatnonzero(m)) for m in masks])


@pytest.mark.parametrize(("rules", "episode"), [("standard", "hand"), ({"players": 3}, "game")])
def test_every_row_is_a_learner_decision_and_returns_add_up(rules, episode):
    games = SelfPlayGames(rules, 6, [RandomAgent(1), GreedyAgent(rules)], episode=episode, seed=3)
    obs, masks = games.reset()
    rng = np.random.default_rng(0)
    running = np.zeros(6)
    ended = 0
    for _ in range(300):
        assert masks.any(axis=1).all() and obs.shape == (6, games.observation_size)
        for i, env in enumerate(games.envs):
            assert env.aec.agent_name_mapping[env.aec.agent_selection] == games.learner[i]
        step = games.step(random_actions(masks, rng))
        running += step.rewards
        for i, ret in enumerate(step.episode_returns):
            if ret is not None:
                assert step.terminated[i] or step.truncated[i]
                assert ret == pytest.approx(running[i], abs=1e-5)
                running[i] = 0.0
                ended += 1
            else:
                assert not (step.terminated[i] or step.truncated[i])
        obs, masks = step.observations, step.action_masks
    assert ended > 0


def test_hand_rewards_come_only_at_the_end_of_a_hand_and_are_zero_sum_with_two_players():
    games = SelfPlayGames("standard", 4, [RandomAgent(2)], episode="hand", seed=1)
    _, masks = games.reset()
    rng = np.random.default_rng(1)
    for _ in range(200):
        step = games.step(random_actions(masks, rng))
        done = step.terminated | step.truncated
        assert (step.rewards[~done] == 0).all()
        masks = step.action_masks


def test_policy_opponents_are_asked_a_batch_at_a_time():
    agent = CountingBatchAgent(0)
    games = SelfPlayGames("standard", 16, [agent], seed=0)
    _, masks = games.reset()
    rng = np.random.default_rng(2)
    for _ in range(20):
        masks = games.step(random_actions(masks, rng)).action_masks
    assert max(agent.batches) > 1
    assert sum(agent.batches) > 20 * 16 * 0.5  # about one opponent decision per learner one


def test_a_seed_replays_the_same_games():
    def play(seed: int) -> list:
        games = SelfPlayGames("standard", 3, [RandomAgent(5)], seed=seed)
        _, masks = games.reset()
        rng = np.random.default_rng(9)
        out = []
        for _ in range(40):
            step = games.step(random_actions(masks, rng))
            out.append((step.observations.tobytes(), step.rewards.tolist()))
            masks = step.action_masks
        return out

    assert play(7) == play(7)
    assert play(7) != play(8)


def test_an_opponent_without_act_batch_is_asked_act_game_by_game():
    class Counting(RandomAgent):
        calls = 0

        def act(self, observation, action_mask):
            self.calls += 1
            return super().act(observation, action_mask)

    agent = Counting(3)
    games = SelfPlayGames("standard", 4, [agent], seed=0)
    _, masks = games.reset()
    for _ in range(10):
        masks = games.step(random_actions(masks, np.random.default_rng(0))).action_masks
    assert agent.calls >= 10


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"n_games": 0}, "n_games=0 is not allowed"),
        ({"pool": []}, "the opponent pool is empty"),
        ({"weights": [1.0, 2.0]}, "weights must be 1 numbers"),
    ],
)
def test_bad_arguments_are_clear_errors(kwargs, words):
    args = {"rules": "standard", "n_games": 2, "pool": [RandomAgent(0)]} | kwargs
    with pytest.raises(Rummy500Error, match=words):
        SelfPlayGames(**args)


def test_policy_act_batch_equals_act_row_by_row():
    from pathlib import Path

    from rummy500_env.agents.policy import PolicyAgent, PolicyInputError

    model = Path(__file__).resolve().parents[1] / "models" / "rummy500-ppo-standard.pt"
    policy = PolicyAgent.load(model)
    games = SelfPlayGames("standard", 8, [RandomAgent(0)], seed=4)
    obs, masks = games.reset()
    batch = policy.act_batch(obs, masks)
    assert batch.tolist() == [policy.act(o, m) for o, m in zip(obs, masks, strict=True)]
    with pytest.raises(PolicyInputError, match=r"observations of shape \(k, 865\)"):
        policy.act_batch(obs[:, :10], masks)


def test_an_action_outside_a_mask_is_refused_before_any_game_moves():
    games = SelfPlayGames("standard", 3, [RandomAgent(0)], seed=0)
    with pytest.raises(Rummy500Error, match=r"call reset\(\) before step\(\)"):
        games.step([0, 0, 0])
    _, masks = games.reset()
    before = [env.aec.game.to_dict() for env in games.envs]
    illegal = int(np.flatnonzero(~masks[1])[0])
    actions = [int(np.flatnonzero(m)[0]) for m in masks]
    actions[1] = illegal
    with pytest.raises(IllegalActionError, match=rf"\(game, action\): \[\(1, {illegal}\)\]"):
        games.step(actions)
    with pytest.raises(Rummy500Error, match="one int action id per game"):
        games.step([0, 0])
    assert [env.aec.game.to_dict() for env in games.envs] == before
