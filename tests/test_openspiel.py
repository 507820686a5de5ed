"""The OpenSpiel game ``python_rummy500`` (rummy500_env.rl.openspiel) and OpenSpiel's IS-MCTS
bot on it (rummy500_env.agents.ismcts).

OpenSpiel's own checks for its Python games (`open_spiel/python/games/*_test.py`) are
``pyspiel.random_sim_test``: at every step of random games it clones the state and compares,
serializes and deserializes it, checks that legal actions are sorted, that other players have
none, that action strings are unique, the legal-action mask, finite tensors of the declared
sizes, the returns' sum for the game's utility type, returns within the declared bounds and
the game length within ``max_game_length``. Those run here for every preset and for jokers,
calls, two decks and whole games; the rest checks what they cannot: the chance nodes really
pick the cards, resampling keeps the seat's information, a seeded game replays.

The engine hooks the game drives (a given deck order, the next stock card) are tested first,
without OpenSpiel.
"""

from __future__ import annotations

import pickle
import random
from collections import Counter

import numpy as np
import pytest

from rummy500_env import Game, Rules
from rummy500_env.engine.errors import IllegalActionError, InvalidPositionError, RulesError

# --- the engine hooks (no OpenSpiel needed) -----------------------------------------------------


def test_a_given_deck_is_dealt_round_the_table_then_the_pile_then_the_stock():
    """Game.new(deck=...) deals one card at a time from the dealer's left, turns the next one
    up and keeps the rest as the stock, top first: the order a driver's chance nodes pick the
    cards in (docs/rules.md §1 "Cards and deal")."""
    deck = list(range(52))[::-1]
    g = Game.new(Rules(), seed=0, deck=deck)
    assert g.hand(0) == sorted(deck[0:26:2]) and g.hand(1) == sorted(deck[1:26:2])
    assert g.pile == [deck[26]]
    assert g.stock_cards == deck[27:]
    assert g.current_player == 0 and g.phase == "draw"


def test_next_hand_deals_a_given_deck_and_a_bad_deck_is_refused():
    g = Game.new(Rules(target=1000), seed=3)
    rng = random.Random(0)
    while g.phase != "hand_over":
        g.apply(rng.choice(g.legal_actions()))
    dealer = g.dealer
    deck = list(range(52))
    g.next_hand(deck)
    assert g.dealer == (dealer + 1) % 2 and g.turn == dealer  # the dealer's left leads
    assert g.hand(dealer) == deck[0:26:2] and g.pile == [26]
    with pytest.raises(InvalidPositionError, match="each of the 52 cards"):
        Game.new(Rules(), seed=0, deck=[*range(51), 0])
    with pytest.raises(InvalidPositionError, match="each of the 54 cards"):
        Game.new(Rules(jokers=2), seed=0, deck=list(range(52)))


def test_set_next_draw_puts_that_card_on_top_and_no_seat_sees_a_difference():
    g = Game.new(Rules(), seed=5)
    card = g.stock_cards[-1]  # the bottom card
    views = [g.seat_view(s) for s in range(2)]
    g.set_next_draw(card)
    assert g.stock_cards[0] == card
    assert [g.seat_view(s) for s in range(2)] == views  # the stock's order is hidden
    g.apply("draw")
    assert card in g.hand(0)
    with pytest.raises(IllegalActionError, match="the stock holds no"):
        g.set_next_draw(card)


# --- the OpenSpiel game -------------------------------------------------------------------------

try:
    import pyspiel

    from rummy500_env.rl import openspiel as osp
except ImportError:  # the tests below skip, naming the extra; the engine's above still run
    pyspiel = osp = None

openspiel = pytest.mark.skipif(
    pyspiel is None, reason="needs OpenSpiel: pip install -e '.[openspiel]'"
)


SIM_CONFIGS = [
    {},
    {"players": 3, "scoring": "fives", "stock_out": "ends_hand"},  # nordic's rules
    {"players": 5},  # two decks
    {"jokers": 2, "rummy_calls": True},
    {"players": 5, "jokers": 2, "rummy_calls": True, "returns": "score"},
    {"stock_out": "pile_must_use", "discard_to_go_out": True, "top_card_must_meld": True},
    {"episode": "game", "target": 60, "returns": "win"},
    {"players": 2, "hand_size": 25, "stock_out": "ends_hand"},  # the hand ends at the deal
]


@openspiel
@pytest.mark.parametrize("params", SIM_CONFIGS, ids=lambda p: ",".join(map(str, p)) or "default")
def test_openspiel_random_sim_test_passes(params):
    """OpenSpiel's consistency checks for a game, serialization included (module docstring)."""
    game = pyspiel.load_game("python_rummy500", params)
    sims = 1 if game.num_players() > 3 else 2  # five players: long hands
    pyspiel.random_sim_test(game, num_sims=sims, serialize=True, verbose=False)


@openspiel
@pytest.mark.parametrize(
    "params",
    [{"players": 2}, {"players": 4, "rummy_calls": True}, {"players": 8, "jokers": 2}],
    ids=["2p", "4p-calls", "8p-jokers"],
)
def test_openspiel_games_sim_test_passes(params):
    """OpenSpiel's Python-side sim test (`open_spiel/python/tests/games_sim_test.py`, its
    `sim_game`, run on every registered game and at each player count): pickling the game and
    its type, clone after every action, native and pickle serialization, the terminal state's
    empty legal actions, `player_return`, returns within the bounds."""
    from open_spiel.python.tests import games_sim_test

    game = pyspiel.load_game("python_rummy500", params)
    games_sim_test.GamesSimTest().sim_game(game)


@openspiel
def test_parameters_are_the_rules_fields_plus_episode_and_returns():
    import dataclasses

    fields = [f.name for f in dataclasses.fields(Rules)]
    assert list(osp.PARAMETERS) == [*fields, "episode", "returns"]
    game = pyspiel.load_game("python_rummy500", {"players": 3, "scoring": "fives"})
    assert game.settings.rules == Rules(players=3, scoring="fives")
    assert game.get_parameters()["players"] == 3
    assert game.num_players() == 3
    assert game.num_distinct_actions() == osp.ActionCodec(game.settings.rules).size
    assert osp.load("nordic", episode="game").settings.rules == Rules.preset("nordic")
    rules = Rules(hand_size=None, decks=None, hand_limit=None)
    assert osp.load(rules).settings.rules == rules  # None travels as 0


@openspiel
@pytest.mark.parametrize(
    ("params", "error", "words"),
    [
        ({"colour": "red"}, RuntimeError, "Unknown parameter 'colour'"),  # pyspiel.SpielError
        ({"players": "two"}, RuntimeError, "Wrong type for parameter players"),
        ({"players": 9}, RulesError, "players=9"),
        ({"scoring": "tens"}, RulesError, "scoring='tens'"),
        ({"episode": "match"}, RulesError, "episode='match'"),
        ({"returns": "points"}, RulesError, "returns='points'"),
        ({"turn_limit": 0}, RulesError, "give a positive turn_limit"),
        ({"episode": "game", "hand_limit": 0}, RulesError, "give a positive hand_limit"),
    ],
)
def test_bad_parameters_get_a_clear_error(params, error, words):
    with pytest.raises(error, match=words):
        pyspiel.load_game("python_rummy500", params)


@openspiel
def test_the_game_type_says_what_the_returns_are():
    t = pyspiel.load_game("python_rummy500").get_type()
    assert t.chance_mode == pyspiel.GameType.ChanceMode.EXPLICIT_STOCHASTIC
    assert t.information == pyspiel.GameType.Information.IMPERFECT_INFORMATION
    assert t.reward_model == pyspiel.GameType.RewardModel.TERMINAL
    assert t.utility == pyspiel.GameType.Utility.ZERO_SUM
    score = pyspiel.load_game("python_rummy500", {"returns": "score"})
    assert score.get_type().utility == pyspiel.GameType.Utility.GENERAL_SUM
    assert score.utility_sum() is None


def deal(state, rng: random.Random) -> None:
    """Play chance outcomes at random until a player is to act."""
    while state.is_chance_node():
        outcomes, probs = zip(*state.chance_outcomes(), strict=True)
        state.apply_action(rng.choices(outcomes, probs)[0])


@openspiel
def test_every_card_dealt_is_a_chance_outcome_and_the_engine_deals_exactly_those():
    game = osp.load()
    state = game.new_initial_state()
    picked = []
    for i in range(27):  # 13 + 13 + the card turned up
        assert state.is_chance_node()
        outcomes = state.chance_outcomes()
        assert len(outcomes) == 52 - i
        assert sum(p for _, p in outcomes) == pytest.approx(1.0)
        card = outcomes[(7 * i) % len(outcomes)][0]
        picked.append(card)
        state.apply_action(card)
    g = state.engine
    assert state.current_player() == 0
    assert g.hand(0) == sorted(picked[0:26:2]) and g.hand(1) == sorted(picked[1:26:2])
    assert g.pile == [picked[26]]
    assert sorted(g.stock_cards) == sorted(set(range(52)) - set(picked))


@openspiel
def test_a_draw_is_a_chance_node_over_the_stock_and_brings_the_card_chosen():
    state = osp.load().new_initial_state()
    deal(state, random.Random(1))
    stock = sorted(state.engine.stock_cards)
    state.apply_action(0)  # draw
    assert state.is_chance_node()
    outcomes = state.chance_outcomes()
    assert [c for c, _ in outcomes] == stock
    assert all(p == pytest.approx(1 / len(stock)) for _, p in outcomes)
    card = stock[len(stock) // 2]
    state.apply_action(card)
    assert card in state.engine.hand(0) and state.engine.phase == "play"
    assert state.current_player() == 0
    assert state.history()[-2:] == [0, card]


@openspiel
def test_two_decks_give_each_card_the_chance_of_its_copies():
    state = osp.load(Rules(players=5)).new_initial_state()
    outcomes = dict(state.chance_outcomes())
    assert len(outcomes) == 52 and outcomes[0] == pytest.approx(2 / 104)
    state.apply_action(0)
    assert dict(state.chance_outcomes())[0] == pytest.approx(1 / 103)
    jokers = osp.load(Rules(jokers=2)).new_initial_state()
    assert dict(jokers.chance_outcomes())[52] == pytest.approx(2 / 54)  # 52: a joker


@openspiel
def test_legal_actions_are_the_engines_legal_set_encoded_and_sorted():
    rng = random.Random(4)
    for params in ({}, {"jokers": 2, "rummy_calls": True}, {"players": 5}):
        game = pyspiel.load_game("python_rummy500", params)
        codec = game.settings.codec
        state = game.new_initial_state()
        for _ in range(300):
            if state.is_terminal():
                break
            if state.is_chance_node():
                deal(state, rng)
                continue
            g = state.engine
            legal = state.legal_actions()
            assert legal == sorted({codec.encode(g, a) for a in g.legal_actions()})
            state.apply_action(rng.choice(legal))


@openspiel
def test_an_illegal_action_is_refused_saying_why():
    state = osp.load().new_initial_state()
    deal(state, random.Random(2))
    discard = osp.load().settings.codec.DISCARD + state.engine.hand(0)[0]
    with pytest.raises(IllegalActionError, match="is illegal"):
        state.apply_action(discard)  # a discard before the draw
    with pytest.raises(IllegalActionError, match="out of range"):
        state.apply_action(10_000)
    state.apply_action(0)
    with pytest.raises(IllegalActionError, match="the stock holds no"):
        state.apply_action(state.engine.hand(0)[0])  # a chance outcome not in the stock


def play_random(state, rng: random.Random, steps: int = 10_000) -> None:
    for _ in range(steps):
        if state.is_terminal():
            return
        if state.is_chance_node():
            outcomes, probs = zip(*state.chance_outcomes(), strict=True)
            state.apply_action(rng.choices(outcomes, probs)[0])
        else:
            state.apply_action(rng.choice(state.legal_actions()))


@openspiel
def test_returns_are_the_hand_scores_margin_by_default_and_zero_before_the_end():
    state = osp.load().new_initial_state()
    rng = random.Random(6)
    deal(state, rng)
    assert state.returns() == [0.0, 0.0]
    play_random(state, rng)
    scores = state.engine.result().scores
    assert state.returns() == [scores[0] - scores[1], scores[1] - scores[0]]
    for returns, expect in (("score", list(scores)), ("win", None)):
        s = osp.load(returns=returns).new_initial_state()
        for a in state.history():
            s.apply_action(a)
        if expect is None:
            expect = [0.0, 0.0] if scores[0] == scores[1] else [1.0, -1.0]
            if scores[1] > scores[0]:
                expect = [-1.0, 1.0]
        assert s.returns() == expect


@openspiel
def test_a_whole_game_deals_each_hand_by_chance_until_the_game_ends():
    """With episode='game' a hand's end is a chance node for the next deal, not the end; here
    hand_limit ends the game after three hands (docs/rules.md §4)."""
    rules = Rules(target=5000, hand_limit=3)
    state = osp.load(rules, episode="game", returns="win").new_initial_state()
    play_random(state, random.Random(3), steps=100_000)
    g = state.engine
    assert state.is_terminal() and g.phase == "game_over" and g.hands_played == 3
    chance = [pa for pa in state.full_history() if pa.player == pyspiel.PlayerId.CHANCE]
    assert len(chance) >= 3 * 27  # every hand's deal, and the draws
    totals = g.totals
    if totals[0] == totals[1]:
        assert state.returns() == [0.0, 0.0]
    else:
        best = totals.index(max(totals))
        assert state.returns() == [1.0 if s == best else -1.0 for s in range(2)]


@openspiel
def test_a_seeded_game_replays_identically_from_its_history():
    game = osp.load(Rules(jokers=2, rummy_calls=True))
    first = game.new_initial_state()
    play_random(first, random.Random(11))
    again = game.new_initial_state()
    for a in first.history():
        again.apply_action(a)
    assert str(again) == str(first) and again.returns() == first.returns()
    other = game.new_initial_state()
    play_random(other, random.Random(11))
    assert other.history() == first.history()


@openspiel
def test_clone_pickle_and_serialization_round_trip_mid_hand_and_play_on_alike():
    game = osp.load(Rules(players=3))
    state = game.new_initial_state()
    rng = random.Random(8)
    deal(state, rng)
    for _ in range(40):
        if state.is_chance_node():
            deal(state, rng)
        else:
            state.apply_action(rng.choice(state.legal_actions()))
    copies = [
        state.clone(),
        pickle.loads(pickle.dumps(state)),
        pyspiel.deserialize_game_and_state(pyspiel.serialize_game_and_state(game, state))[1],
    ]
    seed = rng.getrandbits(32)
    play_random(state, random.Random(seed))
    for c in copies:
        play_random(c, random.Random(seed))
        assert str(c) == str(state) and c.history() == state.history()
        assert c.returns() == state.returns()


@openspiel
def test_information_state_and_observation_come_from_the_seat_view():
    game = osp.load()
    state = game.new_initial_state()
    rng = random.Random(9)
    deal(state, rng)
    for _ in range(30):
        if state.is_chance_node():
            deal(state, rng)
        else:
            state.apply_action(rng.choice(state.legal_actions()))
    g, encoder = state.engine, game.settings.encoder
    for seat in (0, 1):
        assert state.information_state_string(seat) == osp.view_string(g.seat_view(seat))
        full = np.asarray(state.information_state_tensor(seat), dtype=np.float32)
        np.testing.assert_array_equal(full, encoder.encode(g, seat))
        obs = np.asarray(state.observation_tensor(seat), dtype=np.float32)
        np.testing.assert_array_equal(obs, full[: encoder.features_size])
    # The strings tell the seats apart and hide the other hand.
    mine = state.information_state_string(0)
    assert state.information_state_string(1) != mine
    assert osp.cards_str(g.hand(1)) not in mine
    from open_spiel.python.observation import make_observation

    named = make_observation(game, pyspiel.IIGObservationType(perfect_recall=True))
    named.set_from(state, 0)
    assert set(named.dict) == set(encoder.slices)
    with pytest.raises(ValueError, match="observes one seat"):
        make_observation(
            game,
            pyspiel.IIGObservationType(
                perfect_recall=False, private_info=pyspiel.PrivateInfoType.NONE
            ),
        )


@openspiel
def test_resampling_keeps_what_the_seat_knows_and_deals_the_rest_again():
    game = osp.load()
    state = game.new_initial_state()
    rng = random.Random(10)
    deal(state, rng)
    for _ in range(25):
        if state.is_chance_node():
            deal(state, rng)
        else:
            state.apply_action(rng.choice(state.legal_actions()))
    seat = state.current_player()
    other = 1 - seat
    sampler = random.Random(0).random
    hands = set()
    for _ in range(20):
        world = state.resample_from_infostate(seat, sampler)
        key = world.information_state_string(seat)
        assert key == state.information_state_string(seat)
        assert world.legal_actions() == state.legal_actions()
        Game.from_dict(world.engine.to_dict())  # a position that passes every check
        assert Counter(world.engine.known(other)) <= Counter(world.engine.hand(other))
        hands.add(tuple(world.engine.hand(other)))
    assert len(hands) > 1  # the hidden cards are dealt again, not copied
    with pytest.raises(IllegalActionError, match="needs a dealt hand"):
        game.new_initial_state().resample_from_infostate(0, sampler)


# --- IS-MCTS -----------------------------------------------------------------------------------


@openspiel
def test_openspiel_ismcts_plays_a_whole_hand_against_the_expert_through_the_arena():
    from rummy500_env.agents import ExpertAgent
    from rummy500_env.agents.ismcts import ISMCTSAgent
    from rummy500_env.evaluation.arena import play

    agent = ISMCTSAgent(Rules(), simulations=8, seed=1)
    r = play([agent, ExpertAgent(Rules())], Rules(), seed=2, episode="hand")
    assert len(r.hand_scores) == 1
    again = play(
        [ISMCTSAgent(Rules(), simulations=8, seed=1), ExpertAgent(Rules())], Rules(), 2, "hand"
    )
    assert again.hand_scores == r.hand_scores  # seeded: the same choices


@openspiel
def test_ismcts_agent_acts_on_an_observation_and_its_mask_in_a_pettingzoo_loop():
    from rummy500_env import raw_env
    from rummy500_env.agents.ismcts import ISMCTSAgent

    e = raw_env(rules="standard", episode="hand")
    e.reset(seed=4)
    agent = ISMCTSAgent(Rules(), simulations=4, seed=0)
    for _ in range(12):
        obs, _, term, trunc, _ = e.last()
        if term or trunc:
            break
        a = agent.act(obs["observation"], obs["action_mask"])
        assert obs["action_mask"][a] == 1
        e.step(a)
