"""The search's own networks (`training.search_nets`: a table value and a hand belief) and the
weighted deal they feed (`SeatView.sample_position`'s weights): cards are conserved, the
files load only as what they are, and the search plays with them."""

from __future__ import annotations

import random
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import torch

from rummy500_env import Game, Rules
from rummy500_env.agents import ExpertAgent, PolicySearchAgent
from rummy500_env.agents.networks import HandBelief, TableValue
from rummy500_env.agents.policy import PolicyAgent, PolicyLoadError, load_network
from rummy500_env.agents.psearch import PolicySearchError
from rummy500_env.engine.errors import InvalidPositionError
from rummy500_env.rl.hidden import hidden_hands, hidden_hands_size
from rummy500_env.rl.observation import ObservationEncoder
from rummy500_env.training import search_nets

RULES = Rules()


def midhand(seed: int, rules: Rules = RULES, moves: int = 12) -> Game:
    """A position some moves into an ExpertAgent hand."""
    g, expert = Game.new(rules, seed=seed), ExpertAgent(rules)
    for _ in range(moves):
        if g.is_hand_over:
            break
        g.play_unchecked(expert.decide(g.seat_view(g.current_player), g.legal_actions()))
    return g


def test_a_weighted_deal_keeps_the_view_and_conserves_the_cards() -> None:
    for seed in range(6):
        g = midhand(seed)
        seat = g.current_player
        view = g.seat_view(seat)
        weights = [[random.Random(seed).uniform(0.01, 5) for _ in range(53)]]
        world = Game.from_seat_view(view, seed, weights=weights)
        assert world.seat_view(seat) == view
        real = Counter(g.hand(1 - seat)) + Counter(g.stock)
        assert Counter(world.hand(1 - seat)) + Counter(world.stock) == real


def test_a_heavy_card_is_always_dealt_to_the_hand_and_a_light_one_never() -> None:
    g = midhand(1)
    seat = g.current_player
    view = g.seat_view(seat)
    unknown = [c for c in view.unseen() if c < 52]
    heavy, light = unknown[0], unknown[1]
    row = [1.0] * 53
    row[heavy], row[light] = 1e9, 1e-9
    for s in range(20):
        world = Game.from_seat_view(view, s, weights=[row])
        assert heavy in world.hand(1 - seat)
        assert light not in world.hand(1 - seat)


def test_weights_follow_the_odds_they_are_given() -> None:
    """A card weighted 4 times another lands in the hand clearly more often."""
    g = midhand(2)
    seat = g.current_player
    view = g.seat_view(seat)
    a, b = [c for c in view.unseen() if c < 52][:2]
    row = [1.0] * 53
    row[a], row[b] = 4.0, 1.0
    rng = random.Random(0)
    counts: Counter[int] = Counter()
    for _ in range(400):
        hand = Game.from_seat_view(view, rng, weights=[row]).hand(1 - seat)
        counts[a] += a in hand
        counts[b] += b in hand
    assert counts[a] > 1.5 * counts[b]


@pytest.mark.parametrize(
    ("weights", "words"),
    [
        ([[1.0] * 53, [1.0] * 53], "1 rows"),
        ([[1.0] * 52], "53 numbers"),
        ([[1.0] * 52 + [0.0]], "weights[0][52] must be a finite number > 0"),
        ([[1.0] * 51 + [float("nan"), 1.0]], "weights[0][51]"),
        ("uniform", "a list of 1 rows"),
    ],
)
def test_bad_weights_say_what_is_allowed(weights: object, words: str) -> None:
    view = midhand(0).seat_view(0)
    with pytest.raises(InvalidPositionError, match=re.escape(words)):
        Game.from_seat_view(view, 0, weights=weights)


def test_hidden_hands_are_the_other_seats_in_turn_order() -> None:
    rules = Rules.parse("standard,players=3")
    g = midhand(5, rules, moves=4)
    rows = hidden_hands(g, 1).reshape(2, 52)
    assert len(hidden_hands(g, 1)) == hidden_hands_size(rules)
    for k, q in enumerate((2, 0)):
        assert sorted(np.flatnonzero(rows[k])) == sorted(g.hand(q))


def test_the_table_value_starts_as_the_policys_value_head() -> None:
    """Its hidden cards' weights start at zero, so it first values a position as the policy's
    value head does, whatever the other hands hold."""
    policy = PolicyAgent.load("standard", rules=RULES)
    spec = policy.metadata["network"]
    table = TableValue(RULES, spec["channels"], spec["blocks"], spec["hidden"])
    table.card.load_state_dict(policy.network.state_dict())
    enc = ObservationEncoder(RULES)
    games = [midhand(s) for s in range(4)]
    obs = torch.from_numpy(np.stack([enc.encode(g, 0) for g in games]))
    hidden = torch.from_numpy(np.stack([hidden_hands(g, 0) for g in games]))
    with torch.inference_mode():
        own = policy.network.forward_with_value(obs)[1]
        assert torch.allclose(table(obs, hidden), own, atol=1e-5)
        table.hidden_cards.weight.fill_(0.1)
        assert not torch.allclose(table(obs, hidden), own, atol=1e-3)


def test_networks_for_more_seats_and_jokers() -> None:
    rules = Rules.parse("standard,players=3,jokers=2")
    enc = ObservationEncoder(rules)
    g = midhand(0, rules, moves=3)
    obs = torch.from_numpy(enc.encode(g, 0)[None])
    belief = HandBelief(rules, 8, 1, 16)
    assert belief(obs).shape == (1, 2, 52)
    table = TableValue(rules, 8, 1, 16)
    assert table(obs, torch.from_numpy(hidden_hands(g, 0)[None])).shape == (1,)


@pytest.fixture(scope="module")
def nets(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Both networks trained by the command on a tiny self-play set."""
    out = tmp_path_factory.mktemp("search_nets")
    code = search_nets.main(
        [
            *("--games", "2", "--table-epochs", "0.3", "--belief-epochs", "0.3"),
            *("--batch", "64", "--threads", "1", "--out", str(out)),
        ]
    )
    assert code == 0
    return out


def test_the_command_writes_both_files_with_their_losses(nets: Path) -> None:
    table, meta = load_network(nets / "table.pt", RULES, ("table",))
    assert isinstance(table, TableValue)
    assert meta["network"]["kind"] == "table"
    assert meta["evaluation"]["held_out_after"] > 0
    assert "policy_value_head" in meta["evaluation"]
    belief, meta = load_network(nets / "belief.pt", RULES, ("belief",))
    assert isinstance(belief, HandBelief)
    assert meta["training"]["games"] == 2


def test_each_file_loads_only_as_what_it_is(nets: Path) -> None:
    with pytest.raises(PolicyLoadError, match=r"holds a table value .*, not a policy"):
        PolicyAgent.load(nets / "table.pt")
    with pytest.raises(PolicyLoadError, match="holds a policy, not a hand belief"):
        PolicySearchAgent(RULES, simulations=8, belief="models/rummy500-ppo-standard.pt")
    with pytest.raises(PolicyLoadError, match=r"holds a hand belief .*, not a table value"):
        PolicySearchAgent(RULES, simulations=8, leaf="table", table=nets / "belief.pt")
    with pytest.raises(PolicyLoadError, match="other rules"):
        load_network(nets / "table.pt", Rules.parse("standard,players=3"), ("table",))


def test_the_search_plays_with_them_legally_and_replays(nets: Path) -> None:
    def agent() -> PolicySearchAgent:
        return PolicySearchAgent(
            RULES,
            simulations=24,
            leaf="table",
            table=nets / "table.pt",
            belief=nets / "belief.pt",
            seed=3,
        )

    a, b = agent(), agent()
    for seed in range(3):
        g = midhand(seed)
        view, legal = g.seat_view(g.current_player), g.legal_actions()
        choice = a.decide(view, legal)
        assert choice in legal
        assert b.decide(view, legal) == choice
        assert 0 < a.last_simulations <= 24
        for world in a.last_worlds:
            assert world.seat_view(view.seat) == view


def test_the_table_leaf_needs_a_table_value() -> None:
    with pytest.raises(PolicySearchError, match=r"training\.search_nets"):
        PolicySearchAgent(RULES, simulations=8, leaf="table")


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--explore", "1.5"], "--explore must be a share from 0 to 1, not 1.5"),
        (["--keep", "0"], "--keep must be a chance > 0 and <= 1"),
        (["--lr", "nan"], "--lr must be a learning rate > 0 and <= 1, not nan"),
        (["--table-epochs", "-1"], "--table-epochs must be a number of passes > 0"),
        (["--rules", "standard,players=9"], "players"),
        (["--policy", "README.md"], "not a rummy500 policy file"),
        (["--out", "README.md"], "--out 'README.md'"),
    ],
)
def test_bad_arguments_say_what_is_allowed(
    argv: list[str], words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as e:
        search_nets.main(argv)
    assert e.value.code == 2
    assert words in capsys.readouterr().err
