"""The search's own networks (`training.search_nets`: a table value, a hand belief and
whole-hand odds) and the weighted deal they feed (`SeatView.sample_position`'s weights):
cards are conserved, the files load only as what they are, and the search plays with them."""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch

from rummy500_env import Game, Rules
from rummy500_env.agents import ExpertAgent, PolicySearchAgent
from rummy500_env.agents.networks import HandBelief, HandOdds, TableValue, belief_odds
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
    hidden = torch.from_numpy(hidden_hands(g, 0)[None])
    assert table(obs, hidden).shape == (1,)
    odds = HandOdds(rules, 8, 1, 16)
    assert odds(obs, hidden).shape == (1,)
    assert odds.context(obs)[1].shape == (1, 2, 53)


@pytest.fixture(scope="module")
def nets(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Both networks trained by the command on a tiny self-play set."""
    out = tmp_path_factory.mktemp("search_nets")
    code = search_nets.main(
        [
            *("--games", "2", "--table-epochs", "0.3", "--belief-epochs", "0.3"),
            *("--odds-epochs", "0.3"),
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
    odds, meta = load_network(nets / "odds.pt", RULES, ("odds",))
    assert isinstance(odds, HandOdds)
    assert meta["evaluation"]["held_out_before"] == pytest.approx(np.log(2), abs=1e-4)
    for name, weights in belief.state_dict().items():  # the deal it weighs is the belief's
        assert torch.equal(odds.belief.state_dict()[name], weights)


def test_each_file_loads_only_as_what_it_is(nets: Path) -> None:
    with pytest.raises(PolicyLoadError, match=r"holds a table value .*, not a policy"):
        PolicyAgent.load(nets / "table.pt")
    with pytest.raises(PolicyLoadError, match="holds a policy, not a hand belief"):
        PolicySearchAgent(RULES, simulations=8, belief="models/rummy500-ppo-standard.pt")
    with pytest.raises(PolicyLoadError, match=r"holds a hand belief .*, not a table value"):
        PolicySearchAgent(RULES, simulations=8, leaf="table", table=nets / "belief.pt")
    with pytest.raises(PolicyLoadError, match="other rules"):
        load_network(nets / "table.pt", Rules.parse("standard,players=3"), ("table",))
    with pytest.raises(PolicyLoadError, match=r"holds whole-hand odds .*, not a policy"):
        PolicyAgent.load(nets / "odds.pt")


@pytest.mark.parametrize("deal", ["belief", "odds"])
def test_the_search_plays_with_them_legally_and_replays(nets: Path, deal: str) -> None:
    def agent() -> PolicySearchAgent:
        return PolicySearchAgent(
            RULES,
            simulations=24,
            leaf="table",
            table=nets / "table.pt",
            belief=nets / f"{deal}.pt",
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


def view_and_unseen(seed: int, rules: Rules = RULES) -> tuple[Game, int, np.ndarray]:
    g = midhand(seed, rules)
    seat = g.current_player
    unseen = np.zeros((1, 52 + (1 if rules.jokers else 0)), np.uint8)
    np.add.at(unseen[0], g.seat_view(seat).unseen(), 1)
    return g, seat, unseen


def test_the_training_deal_is_the_searchs_deal() -> None:
    """The hands the odds learn to tell from true ones are dealt as the search deals its
    worlds: the same odds give each card the same chance either way."""
    g, seat, unseen = view_and_unseen(3)
    view = g.seat_view(seat)
    need = np.array([[view.hand_sizes[1 - seat] - len(view.known[1 - seat])]])
    odds = np.exp(np.random.default_rng(0).normal(0, 1.5, (1, 1, 52)))
    gen, rng, n = np.random.default_rng(1), random.Random(2), 1500
    ours = np.zeros(52)
    for _ in range(n):
        ours += search_nets.deal_by_odds(odds, unseen, need, gen)[0, 0] / n
    row = [*odds[0, 0].tolist(), 1.0]
    theirs = np.zeros(52)
    for _ in range(n):
        dealt = Counter(Game.from_seat_view(view, rng, weights=[row]).hand(1 - seat))
        for c in view.known[1 - seat]:
            dealt[c] -= 1
        theirs[list(dealt.elements())] += 1 / n
    assert np.abs(ours - theirs).max() < 0.06
    assert np.abs(ours - need.sum() / unseen.sum() * (unseen[0] > 0)).max() > 0.15  # not flat


def test_the_training_deal_keeps_sizes_with_two_decks_and_jokers() -> None:
    rules = Rules.parse("standard,players=3,decks=2,jokers=2")
    g, seat, unseen = view_and_unseen(4, rules)
    view = g.seat_view(seat)
    need = np.array([[view.hand_sizes[q] - len(view.known[q]) for q in view.opponents]])
    odds = np.ones((1, 2, 53))
    odds[0, 0, 52] = 1e9  # every unseen joker to the first other seat
    for s in range(10):
        dealt = search_nets.deal_by_odds(odds, unseen, need, np.random.default_rng(s))[0]
        assert (dealt.sum(-1) == need[0]).all()
        assert (dealt.sum(0) <= unseen[0]).all()
        assert dealt[0, 52] == min(unseen[0, 52], need[0, 0])


def test_whole_hand_odds_start_as_their_belief() -> None:
    """The joint term starts at zero: the belief's deal unchanged."""
    odds = HandOdds(RULES, 8, 1, 16)
    g = midhand(0)
    obs = torch.from_numpy(ObservationEncoder(RULES).encode(g, 0)[None])
    hidden = torch.from_numpy(np.stack([hidden_hands(midhand(s), 0) for s in range(3)]))
    with torch.inference_mode():
        summary, logits = odds.context(obs)
        assert torch.equal(logits, odds.belief(obs))
        assert torch.equal(odds.score(summary, logits, hidden), torch.zeros(3))
        last = odds.joint[-1]
        assert isinstance(last, torch.nn.Linear)
        last.bias.fill_(1.0)
        assert torch.equal(odds(obs.expand(3, -1), hidden), torch.ones(3))
    assert belief_odds(torch.zeros(1, 52)).shape == (1, 53)


def favouring(card: int, weight: float) -> Callable[..., torch.Tensor]:
    """A joint term `weight` for hands that hold `card`, else 0."""

    def score(summary: torch.Tensor, logits: torch.Tensor, hidden: torch.Tensor) -> torch.Tensor:
        return weight * hidden[:, card]

    return score


def test_the_searchs_worlds_follow_the_joint_term() -> None:
    """With a joint term that favours hands holding one card, the search's worlds hold it
    far more often than the belief alone deals it."""
    g = midhand(6)
    seat = g.current_player
    view, legal = g.seat_view(seat), g.legal_actions()
    card = next(c for c in view.unseen() if c < 52)
    rate = {}
    for weight in (0.0, 30.0):
        odds = HandOdds(RULES, 8, 1, 16)
        odds.score = favouring(card, weight)  # type: ignore[method-assign]
        search = PolicySearchAgent(RULES, simulations=64, belief=odds, seed=0)
        held: list[bool] = []
        for _ in range(3):
            search.analyse(view, legal)
            held += [card in w.hand(1 - seat) for w in search.last_worlds]
        rate[weight] = sum(held) / len(held)
    assert rate[30.0] > rate[0.0] + 0.3


@pytest.mark.parametrize("deal", [None, "belief", "odds"])
def test_the_worlds_a_search_deals_keep_the_view(nets: Path, deal: str | None) -> None:
    g = midhand(7)
    view = g.seat_view(g.current_player)
    belief = None if deal is None else nets / f"{deal}.pt"
    worlds = PolicySearchAgent(RULES, simulations=8, belief=belief, seed=1).deal_worlds(view, 5)
    assert len(worlds) == 5
    for world in worlds:
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
        (["--nets", "table,odds"], "odds starts from the hand belief trained beside it"),
        (["--nets", "belief,foo"], "--nets must name some of table, belief, odds"),
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
