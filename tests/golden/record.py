"""Record (or check) the golden transcripts: seeded games played with seeded random legal actions.

    python tests/golden/record.py                  # rewrite tests/golden/games.json, on purpose
    python tests/golden/record.py --shipped-model  # rewrite shipped_model_games.json

Each transcript holds, per step, the action taken and short digests of the observation's
feature part (the layout of observation version 2, unchanged since; the exact part version 3
appended is checked against the engine's `SeatView` by tests/test_observation_exact.py) and the
mask, the rewards, and the hand scores whenever a hand ends; and, for the engine alone, the
legal actions in notation. `tests/test_golden.py` replays them and compares, so a refactor that
changes any behaviour of the engine or the env is caught.

`shipped_model_game` plays the shipped standard model against GreedyAgent on seeded hands;
`tests/test_jokers_calls_env.py` replays those, so the standard encodings stay as the model was
trained on. Re-record only when the shipped model itself is replaced.
"""

from __future__ import annotations

import hashlib
import json
import random
import sys
from pathlib import Path
from typing import Any

import numpy as np

import rummy500_env
from rummy500_env import Game, Rules

HERE = Path(__file__).resolve().parent
GOLDEN = HERE / "games.json"
SHIPPED_GAMES = HERE / "shipped_model_games.json"
SHIPPED_MODEL = HERE.parents[1] / "models" / "rummy500-ppo-standard.pt"
SHIPPED_SEATS = [(0, 0), (1, 1), (2, 0)]
"""(seed, the model's seat) of each recorded hand against GreedyAgent."""

CONFIGS: list[tuple[str, dict[str, Any], str, int]] = [
    ("standard", {}, "game", 1),
    ("standard", {}, "hand", 2),
    ("app", {}, "hand", 3),
    ("nordic", {"players": 3}, "hand", 4),
    ("pagat", {"players": 5}, "hand", 5),
    ("fives", {"players": 4, "discard_to_go_out": True, "top_card_must_meld": True}, "hand", 6),
    ("standard", {"winner_must_go_out": True, "target": 100}, "game", 7),
    ("pagat", {"players": 2, "decks": 2, "turn_limit": 40}, "game", 8),
]


def digest(data: bytes) -> str:
    return hashlib.sha1(data).hexdigest()[:10]


def env_transcript(preset: str, fields: dict[str, Any], episode: str, seed: int) -> dict[str, Any]:
    rules = Rules.preset(preset, **fields)
    env = rummy500_env.raw_env(rules=rules, episode=episode)
    env.reset(seed=seed)
    features = env.encoder.features_size
    rng = random.Random(seed)
    steps: list[list[Any]] = []
    for _ in range(1500):
        agent = env.agent_selection
        if env.terminations[agent] or env.truncations[agent]:
            break
        obs = env.observe(agent)
        legal = np.flatnonzero(obs["action_mask"])
        action = int(legal[rng.randrange(len(legal))])
        other = env.possible_agents[(env.agent_name_mapping[agent] + 1) % rules.players]
        step: list[Any] = [
            action,
            digest(obs["observation"][:features].tobytes()),
            digest(obs["action_mask"].tobytes()),
            digest(env.observe(other)["observation"][:features].tobytes()),
        ]
        env.step(action)
        step.append([round(float(env.rewards[a]), 6) for a in env.possible_agents])
        info = env.infos[agent]
        if "hand_scores" in info:
            step.append(info["hand_scores"])
        steps.append(step)
    flags = [env.terminations[a] or env.truncations[a] for a in env.possible_agents]
    return {"steps": steps, "done": flags}


def engine_transcript(preset: str, fields: dict[str, Any], seed: int) -> dict[str, Any]:
    g = Game.new(Rules.preset(preset, **fields), seed=seed)
    rng = random.Random(seed + 1)
    steps: list[list[Any]] = []
    while g.phase != "game_over" and len(steps) < 1500:
        if g.phase == "hand_over":
            steps.append(["next_hand", g.hand_scores(), g.totals])
            g.next_hand()
            continue
        legal = [str(a) for a in g.legal_actions()]
        action = legal[rng.randrange(len(legal))]
        steps.append([action, digest(" | ".join(legal).encode())])
        g.apply(action)
    return {"steps": steps, "final": g.to_dict(), "winner": g.winner}


def shipped_model_game(policy: Any, seed: int, policy_seat: int) -> dict[str, Any]:
    """One seeded hand of `policy` against GreedyAgent: the action ids and the hand scores."""
    from rummy500_env.agents import GreedyAgent

    env = rummy500_env.raw_env(rules="standard", episode="hand")
    env.reset(seed=seed)
    greedy, actions = GreedyAgent("standard"), []
    while not (env.terminations[env.agent_selection] or env.truncations[env.agent_selection]):
        agent = env.agent_selection
        obs = env.observe(agent)
        who = policy if agent == f"player_{policy_seat}" else greedy
        actions.append(int(who.act(obs["observation"], obs["action_mask"])))
        env.step(actions[-1])
    return {
        "seed": seed,
        "policy_seat": policy_seat,
        "actions": actions,
        "hand_scores": env.game.hand_scores(),
    }


def record_shipped_model() -> list[dict[str, Any]]:
    from rummy500_env.agents import PolicyAgent

    policy = PolicyAgent.load(SHIPPED_MODEL)
    return [shipped_model_game(policy, seed, seat) for seed, seat in SHIPPED_SEATS]


def record() -> dict[str, Any]:
    out: dict[str, Any] = {"env": [], "engine": []}
    for preset, fields, episode, seed in CONFIGS:
        key = {"preset": preset, "fields": fields, "episode": episode, "seed": seed}
        out["env"].append(key | env_transcript(preset, fields, episode, seed))
        out["engine"].append(key | engine_transcript(preset, fields, seed))
    return out


if __name__ == "__main__":
    if sys.argv[1:] == ["--shipped-model"]:
        SHIPPED_GAMES.write_text(json.dumps(record_shipped_model()))
        print(f"wrote {SHIPPED_GAMES}")
    else:
        GOLDEN.write_text(json.dumps(record(), separators=(",", ":")))
        print(f"wrote {GOLDEN} ({GOLDEN.stat().st_size // 1024} KiB)")
