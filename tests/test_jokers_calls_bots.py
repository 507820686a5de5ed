"""The bots under jokers and calls (docs/rules.md §5): legal play, what the view decodes, the
use of jokers, calls that pay, and worlds sampled with the right hidden jokers."""

from __future__ import annotations

import random
from collections import Counter

import pytest

import rummy500_env
from rummy500_env import Game, Rules
from rummy500_env.agents import ExpertAgent, GreedyAgent, SearchAgent
from rummy500_env.agents.heuristics import plan
from rummy500_env.agents.registry import make_agent
from rummy500_env.engine.cards import JOKER, parse_card, parse_cards
from rummy500_env.rl.actions import ActionCodec
from rummy500_env.rl.observation import ObservationEncoder
from tests.helpers import position, random_positions, reshuffle_hidden

BOTH = {"jokers": 2, "rummy_calls": True}


def choice(agent, **fields) -> str:
    """The action `agent` picks, as text, for the player to act in `position(**fields)`."""
    g = Game.from_dict(position(**fields))
    enc, codec = ObservationEncoder(g.rules), ActionCodec(g.rules)
    return codec.action_to_str(g, agent.act(enc.encode(g, g.current_player), codec.mask(g)))


@pytest.mark.parametrize("spec", ["random", "greedy", "expert", "search:2"])
@pytest.mark.parametrize("players", [2, 3, 5])
def test_bots_only_ever_play_legal_actions_with_jokers_and_calls(spec, players):
    rules = Rules(players=players, **BOTH)
    agent = make_agent(spec, rules, seed=0)
    e = rummy500_env.raw_env(rules=rules, episode="hand")  # raw: an illegal id would raise
    kinds: Counter[str] = Counter()
    for seed in range(1 if spec.startswith("search") else 3):
        e.reset(seed=seed)
        while not all(e.terminations.values()):
            o = e.observe(e.agent_selection)
            a = agent.act(o["observation"], o["action_mask"])
            assert o["action_mask"][a] == 1
            kinds[e.action_to_str(a).split()[0]] += 1
            e.step(a)
    assert kinds["discard"] > 0


@pytest.mark.parametrize("fields", [BOTH, {**BOTH, "players": 3, "decks": 2}])
def test_view_decodes_the_pile_with_its_jokers_and_the_jokers_of_hand_table_and_known(fields):
    rules = Rules(**fields)
    enc = ObservationEncoder(rules)
    rng = random.Random(3)
    jokers_seen = 0
    for seed in range(5):
        g = Game.new(rules, seed=seed)
        while not g.is_hand_over:
            for seat in range(rules.players):
                v = enc.seat_view(enc.encode(g, seat))
                assert v == g.seat_view(seat).relative()
                assert v.pile == tuple(g.pile) and v.hand == tuple(g.hand(seat))
                assert [str(m) for m in v.melds] == [str(m) for m in g.melds]
                assert [v.known[k].count(JOKER) for k in range(rules.players)] == [
                    g.known((seat + k) % rules.players).count(JOKER) for k in range(rules.players)
                ]
                jokers_seen += JOKER in g.pile
            g.apply(rng.choice(g.legal_actions()))
    assert jokers_seen > 0


def test_plan_uses_a_joker_after_the_natural_cards():
    """The most valuable start a joker completes (9S 9H JK: 33, not 5D JK 7D: 27); with a
    natural set the set goes first and the joker is laid off on it."""
    values, used = plan(parse_cards("9S 9H 5D 7D JK"), (), "pip")
    assert values == 9 + 9 + 15 and used[JOKER] == 1 and used[parse_card("5D")] == 0
    values, used = plan(parse_cards("9S 9H 9D JK"), (), "pip")
    assert values == 27 + 15 and used[JOKER] == 1


def test_greedy_melds_with_a_joker_and_lays_one_off():
    g = GreedyAgent(BOTH)
    meld = choice(g, rules=BOTH, hands=["9S 9H JK 2C", "3D"], phase="play")
    assert meld.startswith("meld JK=9") and meld.endswith("9H 9S")
    lay = choice(g, rules=BOTH, hands=["JK 2C 4D", "3D"], melds=[("7C 8C 9C", 1)], phase="play")
    assert lay.startswith("layoff JK=")


def test_greedy_never_discards_a_joker_unless_it_is_the_only_card():
    g = GreedyAgent(BOTH)
    picked = choice(g, rules=BOTH, hands=["JK KS QD", "3D"], phase="play")
    assert picked.startswith("discard") and picked != "discard JK"
    assert choice(g, rules=BOTH, hands=["JK", "3D 4D"], phase="play") == "discard JK"


@pytest.mark.parametrize("agent_class", [GreedyAgent, ExpertAgent])
def test_bots_call_when_it_pays(agent_class):
    rules = {**BOTH, "players": 3}
    calls = choice(
        agent_class(rules),
        rules=rules,
        hands=["2C 3C", "9S 9H 4D", "KS QS"],
        pile="5C 9D",
        phase="call",
        discarder=0,
        turn=1,
    )
    assert calls == "call 9D"  # 27 points down, nothing left over


def test_greedy_passes_when_a_call_costs_more_than_it_puts_down():
    """Calling 8D puts 24 down but takes five high cards that fit nothing (55 points): 31
    more than it brings, past `GreedyAgent.CALL_BONUS`."""
    rules = {**BOTH, "players": 3}
    passes = choice(
        GreedyAgent(rules),
        rules=rules,
        hands=["2C 3C", "8S 8H 4D", "5S 6S"],
        pile="8D KS AD QH JC 10D",
        phase="call",
        discarder=0,
        turn=1,
    )
    assert passes == "pass" and GreedyAgent.CALL_BONUS < 31


def test_a_caller_bot_ends_its_play_with_done():
    rules = {**BOTH, "players": 3}
    for bot in (GreedyAgent(rules), ExpertAgent(rules)):
        g = Game.from_dict(
            position(
                rules=rules,
                hands=["2C 3C", "9S 9H 4D", "KS QS"],
                pile="5C 9D",
                phase="call",
                discarder=0,
                turn=1,
            )
        )
        enc, codec = ObservationEncoder(g.rules), ActionCodec(g.rules)
        seen: list[str] = []
        while seen[-1:] != ["done"]:
            a = codec.decode(g, bot.act(enc.encode(g, 1), codec.mask(g)))
            seen.append(str(a))
            g.apply(a)
        assert seen == ["call 9D", "meld 9D 9H 9S", "done"]
        assert (g.phase, g.current_player) == ("draw", 1)


def test_search_samples_hidden_jokers_with_the_other_hidden_cards():
    """The seat sees one joker in its hand and one on the table; with two decks four are in
    play, one is known in an opponent's hand: exactly one is hidden, in the stock or an
    opponent's unknown cards, in every sampled world."""
    rules = {**BOTH, "decks": 2}
    g = Game.from_dict(
        position(
            rules=rules,
            hands=["JK 2C 3C 9S", "JK 4D 5D 6S 7S"],
            melds=[("7H JK=8H 9H", 1)],
            known=[[], ["JK"]],
        )
    )
    agent = SearchAgent(rules, rollouts=1, seed=0)
    view = agent.encoder.seat_view(ObservationEncoder(g.rules).encode(g, 0))
    assert view.unseen().count(JOKER) == 1 and view.jokers == 1
    for _ in range(20):
        world = agent.sample_world(view)
        assert world is not None
        assert world.hand(0) == g.hand(0)
        assert world.known(1) == [JOKER] and JOKER in world.hand(1)
        hidden = world.hand(1).count(JOKER) - 1 + world.stock.count(JOKER)
        assert hidden == 1
        assert [str(m) for m in world.melds] == ["7H JK=8H 9H"]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_search_plays_a_call_window_and_a_callers_play(seed):
    """Seat 2 may call 9D, the discard of seat 0: 27 points down and nothing else taken.
    Passing would leave 9D to seat 1, who draws next, so the call is the only good answer
    (seat 1 itself could pass and take it on its turn). The search calls, melds the called
    card, ends its play with done, and play goes on with seat 1."""
    rules = {**BOTH, "players": 3}
    g = Game.from_dict(
        position(
            rules=rules,
            hands=["2C 3C", "KS QS", "9S 9H 4D"],
            pile="5C 9D",
            phase="call",
            discarder=0,
            turn=2,
        )
    )
    agent = SearchAgent(rules, rollouts=4, seed=seed)
    enc, codec = ObservationEncoder(g.rules), ActionCodec(g.rules)
    seen: list[str] = []
    while g.current_player == 2 and g.phase in ("call", "called") and len(seen) < 6:
        a = codec.decode(g, agent.act(enc.encode(g, 2), codec.mask(g)))
        seen.append(str(a))
        g.apply(a)
    assert seen == ["call 9D", "meld 9D 9H 9S", "done"]
    assert (g.phase, g.current_player, g.hand(2)) == ("draw", 1, parse_cards("4D"))


@pytest.mark.parametrize("spec", ["greedy", "expert", "search:2"])
def test_bot_choice_does_not_change_when_only_hidden_jokers_and_cards_change(spec):
    rules = Rules(players=3, **BOTH)
    enc, codec = ObservationEncoder(rules), ActionCodec(rules)
    rng = random.Random(2)
    checked = 0
    for g in random_positions(rules, 30, seed=7, max_moves=12):
        p = g.current_player
        h = reshuffle_hidden(g, p, rng)
        a1 = make_agent(spec, rules, 0).act(enc.encode(g, p), codec.mask(g))
        a2 = make_agent(spec, rules, 0).act(enc.encode(h, p), codec.mask(h))
        assert a1 == a2
        checked += 1
    assert checked >= 8


def test_greedy_with_calls_discards_the_card_no_opponent_could_call():
    """Without calls Greedy sheds its highest loose card (KS); with calls any opponent may
    call a discard, so it sheds 7D, whose rank mates and run neighbours all lie in the pile."""
    fields = {"hands": ["KS 7D 2H", "3C 4C"], "pile": "7C 7H 7S 5D 6D 8D 9D", "phase": "play"}
    assert choice(GreedyAgent("standard"), **fields) == "discard KS"
    calls = {"rummy_calls": True}
    assert choice(GreedyAgent(calls), rules=calls, **fields) == "discard 7D"
