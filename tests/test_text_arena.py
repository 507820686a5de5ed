"""Rummy500-v0 as a TextArena game, played through TextArena's own loop (``ta.make``,
``reset``, ``get_observation``, ``step(action=...)``, ``close``) by the fake model of
tests/test_llm.py, which reads the observation text alone."""

from __future__ import annotations

import copy

import pytest

ta = pytest.importorskip(
    "textarena", reason="TextArena is the text extra: pip install -e '.[text]'"
)

import rummy500_env  # noqa: E402,F401  registers the ids with TextArena
from rummy500_env.text.protocol import read_prompt  # noqa: E402
from rummy500_env.text.textarena import VARIANTS  # noqa: E402
from tests.test_llm import FakeModel  # noqa: E402


def board_of(observation: str) -> str:
    """The latest board in an observation (the wrappers put the introduction first)."""
    at = observation.rfind("REFUSED: ")
    start = observation.rfind("You are playing Rummy 500 as P")
    return observation[at if 0 <= at < start and "\n\n" not in observation[at:start] else start :]


def play(
    env_id: str, players: int, seed: int, model: FakeModel
) -> tuple[dict[int, int], dict, int]:
    env = ta.make(env_id)
    env.reset(num_players=players, seed=seed)
    done, info, steps = False, {}, 0
    while not done:
        player_id, observation = env.get_observation()
        view, _ = read_prompt(board_of(observation))
        assert view.seat == player_id
        done, info = env.step(action=model(board_of(observation)))
        steps += 1
    rewards, game_info = env.close()
    return rewards, {"info": info, "game_info": game_info}, steps


def test_every_variant_is_registered_with_trains_and_raw_versions() -> None:
    for env_id in VARIANTS:
        for suffix in ("", "-train", "-raw"):
            assert f"{env_id}{suffix}" in ta.envs.registration.ENV_REGISTRY


@pytest.mark.parametrize(
    ("env_id", "players"), [("Rummy500-v0", 2), ("Rummy500-v0-pagat", 4), ("Rummy500-v0-calls", 3)]
)
@pytest.mark.slow
def test_whole_games_finish_through_textarenas_loop(env_id: str, players: int) -> None:
    model = FakeModel(seed=2, p_nonsense=0.0, p_illegal=0.0)
    rewards, out, steps = play(env_id, players, seed=5, model=model)
    info = out["info"]
    assert set(rewards) == set(range(players))
    totals = info["totals"]
    best = max(totals)
    if totals.count(best) == 1 and max(totals) >= 500:
        assert (
            rewards[totals.index(best)] == 1 and sorted(rewards.values()).count(-1) == players - 1
        )
    assert sum(sum(h) for h in info["hand_scores"]) == sum(totals)
    assert steps == model.answers > 50
    # the same seed replays the same game
    again, out2, steps2 = play(
        env_id, players, seed=5, model=FakeModel(seed=2, p_nonsense=0.0, p_illegal=0.0)
    )
    assert (again, out2["info"], steps2) == (rewards, info, steps)


def test_an_invalid_reply_is_explained_then_a_second_one_loses() -> None:
    env = ta.make("Rummy500-v0")
    env.reset(num_players=2, seed=1)
    player, observation = env.get_observation()
    done, _ = env.step(action="[discard ZZ]")
    assert not done
    again, observation = env.get_observation()
    assert again == player
    assert "REFUSED: no action could be read from your reply" in observation
    legal = read_prompt(board_of(observation))[1]
    done, _ = env.step(action=f"[{legal[0]}]")  # a legal reply clears the count
    assert not done
    player, observation = env.get_observation()
    done, _ = env.step(action="[meld 2C 3C 4C]")
    assert not done
    _, observation = env.get_observation()
    assert "meld 2C 3C 4C is illegal: " in observation
    done, _ = env.step(action="I give up")
    assert done
    rewards, game_info = env.close()
    assert rewards[player] == -1 and rewards[1 - player] == 1
    assert game_info[player]["invalid_move"] is True


def test_the_env_deep_copies_and_refuses_a_table_it_cannot_seat() -> None:
    env = ta.make("Rummy500-v0-raw")
    env.reset(num_players=2, seed=3)
    twin = copy.deepcopy(env)
    p, obs = env.get_observation()
    q, obs2 = twin.get_observation()
    assert (p, obs) == (q, obs2)
    with pytest.raises(ValueError, match="cannot seat 9 players"):
        ta.make("Rummy500-v0").reset(num_players=9, seed=0)


def test_either_import_order_registers_once() -> None:
    """``import textarena`` before or after ``import rummy500_env``: the ids are there, and
    installing again keeps the same specs."""
    import subprocess
    import sys

    for first, second in (("textarena", "rummy500_env"), ("rummy500_env", "textarena")):
        script = (
            f"import warnings; warnings.simplefilter('ignore')\n"
            f"import {first}, {second}, textarena as ta\n"
            "from rummy500_env.rl import registration as r\n"
            "spec = ta.envs.registration.ENV_REGISTRY['Rummy500-v0']\n"
            "r.install(); r.register_textarena()\n"
            "assert ta.envs.registration.ENV_REGISTRY['Rummy500-v0'] is spec\n"
            "env = ta.make('Rummy500-v0-jokers'); env.reset(num_players=3, seed=1)\n"
            "print(env.get_observation()[0])\n"
        )
        out = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
        )
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() in ("0", "1", "2")


# The contracts TextArena's own conformance suite holds every game to, in 0.7.4's API: an
# arbitrary stream of replies ends the game or keeps it answering, rewards and game_info have
# their shape, the same seed and replies replay, observations are handed out once, a refused
# reply changes nothing, the global random state is left alone, and raw model output of any
# length is read in linear time.
REPLY_POOL = ["0", "draw", "[take]", "call", "nonsense", "[discard 5C]", "I will think 3", "[pass]"]


def rollout(seed: int, players: int = 2) -> tuple[list[tuple[int, bool]], dict, dict]:
    env = ta.make("Rummy500-v0")
    env.reset(num_players=players, seed=seed)
    trace, done = [], False
    for step in range(300):
        player_id, observation = env.get_observation()
        assert isinstance(observation, str) and observation
        done, _ = env.step(action=REPLY_POOL[step % len(REPLY_POOL)])
        trace.append((player_id, done))
        if done:
            break
    rewards, game_info = env.close()
    return trace, rewards, game_info


@pytest.mark.parametrize("players", [2, 4])
def test_an_arbitrary_reply_stream_ends_with_rewards_and_game_info_of_the_documented_shape(
    players: int,
) -> None:
    trace, rewards, game_info = rollout(123, players)
    assert trace[-1][1], "refused replies escalate to the end of the game"
    assert set(game_info) == set(range(players))
    for info in game_info.values():
        assert {"role", "invalid_move", "turn_count"} <= set(info)
    assert set(rewards) == set(range(players))
    assert all(isinstance(r, int | float) for r in rewards.values())
    assert rollout(7, players) == rollout(7, players)


def test_observations_are_handed_out_once() -> None:
    from rummy500_env.text.textarena import Rummy500TextEnv

    env = Rummy500TextEnv()
    env.reset(num_players=2, seed=11)
    _, first = env.get_observation()
    _, second = env.get_observation()
    assert first and second == []


def test_a_refused_reply_changes_nothing_but_the_error_count() -> None:
    from rummy500_env.text.textarena import Rummy500TextEnv

    env = Rummy500TextEnv(error_allowance=3)
    env.reset(num_players=3, seed=2)
    assert env.game is not None
    for reply in ("[discard 5C]", "nonsense", "[meld 2C 3C 4C]"):
        before = (env.game.to_dict(), env.state.current_player_id, env.state.turn)
        env.get_observation()
        done, _ = env.step(action=reply)
        assert not done
        assert (env.game.to_dict(), env.state.current_player_id, env.state.turn) == before
    assert env.state.error_count == 3


def test_the_global_random_state_is_never_touched() -> None:
    import random

    random.seed(1234)
    expected = random.getstate()
    env = ta.make("Rummy500-v0")
    env.reset(num_players=2, seed=3)
    for reply in REPLY_POOL * 2:
        env.get_observation()
        if env.step(action=reply)[0]:
            break
    assert random.getstate() == expected


PATHOLOGICAL = {
    "padded": " " * 20_000 + "x" + " " * 1000,
    "inner-spaces": "4" + " " * 20_000 + "x",
    "long-number": "1" * 20_000 + " x",
    "whitespace-mix": "\t\n " * 6_666 + "x",
    "nested-brackets": "[" * 10_000 + "x" + "]" * 10_000,
    "a long meld": "meld " + "9D " * 20_000,
    "many actions": "[draw] " * 10_000,
}


@pytest.mark.parametrize("label", list(PATHOLOGICAL))
def test_long_raw_model_output_is_read_quickly(label: str) -> None:
    import time

    env = ta.make("Rummy500-v0")
    env.reset(num_players=2, seed=0)
    env.get_observation()
    started = time.perf_counter()
    env.step(action=PATHOLOGICAL[label])
    assert time.perf_counter() - started < 0.25


def test_every_registered_variant_resets() -> None:
    for env_id in VARIANTS:
        for suffix in ("", "-train", "-raw"):
            env = ta.make(f"{env_id}{suffix}")
            env.reset(num_players=2, seed=19)
            player_id, observation = env.get_observation()
            assert player_id in (0, 1)
            assert isinstance(observation, str if suffix != "-raw" else list)


def test_a_reply_reaches_its_author_alone_as_a_bounded_excerpt() -> None:
    """Issues 17 and 18c of the third probe: each reply was broadcast whole to every seat (a
    model that wrote its hand in its reply showed it to the others, and a reply could put text
    into another model's context), and the raw env kept every reply whole for the episode.
    The env announces the move itself; the reply goes back to its author, cut short."""
    from rummy500_env.text.textarena import Rummy500TextEnv

    env = Rummy500TextEnv(error_allowance=3)
    env.reset(num_players=3, seed=4)
    author, _ = env.get_observation()
    secret = "SECRET-" + "x" * 1_000_000
    for reply in (f"{secret} nonsense", f"{secret} [draw]"):
        env.step(action=reply)
    for seat, observations in env.state.observations.items():
        texts = [message for _, message, _ in observations]
        if seat == author:
            assert any("SECRET-" in text for text in texts)
        else:
            assert not any("SECRET" in text for text in texts)
            assert f"Player {author}: draw" in texts
    kept = sum(len(message) for _, message in env.state.logs)
    kept += sum(len(m) for obs in env.state.observations.values() for _, m, _ in obs)
    assert kept < 100_000


def test_deeply_nested_json_in_a_reply_is_refused_like_any_unreadable_reply() -> None:
    """Issue 12 of the third probe: it raised `RecursionError` out of `step` (a bracket in the
    reply keeps the default wrappers from bracketing it whole)."""
    env = ta.make("Rummy500-v0")
    env.reset(num_players=2, seed=1)
    env.get_observation()
    done, _ = env.step(action='{"action": [' * 100_000)
    assert not done
    _, observation = env.get_observation()
    assert "REFUSED: no action could be read from your reply" in observation
