"""The play page's game logic without the web server: "Put down all", the marks on meldable
cards, what a seat is shown, moves in words, the computer's own observation, and a table's
moves, saving and resuming."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import numpy as np
import pytest

from rummy500_env import Game, Rules
from rummy500_env.engine.cards import card_str, parse_cards
from rummy500_env.engine.notation import Action
from rummy500_env.engine.records import Record
from rummy500_env.play.plan import hand_marks, put_down_plan
from rummy500_env.play.table import HUMAN, Computers, PlayError, Setup, Table
from rummy500_env.play.view import describe, table_view
from rummy500_env.rl.rummy500_v0 import raw_env
from tests.helpers import game, position

NAMES = ["You", "Computer"]


def placed(g: Game, plan: list[Action]) -> list[str]:
    """The cards the plan takes from the hand of the player to act, sorted."""
    after = g.copy()
    for a in plan:
        after.apply(a)
    player = g.current_player
    return sorted((Counter(names(g.hand(player))) - Counter(names(after.hand(player)))).elements())


def names(cards: list[int]) -> list[str]:
    return [card_str(c) for c in cards]


# --- Put down all ---------------------------------------------------------------------------------


def test_put_down_all_takes_the_set_and_the_run_rather_than_the_long_run():
    # Hand: 9C 9D 9H 10H JH QH KH 2S. The run 9H..KH (5 cards, 49 points) leaves 9C 9D
    # in hand; the set 9C 9D 9H and the run 10H..KH put down 7 cards (67 points).
    g = game(hands=["9C 9D 9H 10H JH QH KH 2S", "3S 4D 5C"], pile="8C", phase="play")
    plan = put_down_plan(g)
    assert placed(g, plan) == sorted("9C 9D 9H 10H JH QH KH".split())
    after = g.copy()
    for a in plan:
        after.apply(a)
    assert after.hand(0) == parse_cards("2S")


def test_put_down_all_meets_the_dig_obligation_first():
    g = game(hands=["5S 6S 7S 9C 9D 9H 2C", "3D 4D 5C"], pile="8C", phase="play", must_play="5S")
    plan = put_down_plan(g)
    assert "5S" in str(plan[0]) and len(plan) == 2


def test_put_down_all_may_go_out_but_not_under_discard_to_go_out():
    hands = ["9C 9D 9H", "3D 4D 5C"]
    assert [str(a) for a in put_down_plan(game(hands=hands, pile="8C", phase="play"))] == [
        "meld 9C 9D 9H"
    ]
    strict = game(
        rules={"discard_to_go_out": True}, hands=hands, pile="8C", phase="play"
    )  # the last card must be a discard: the meld would empty the hand
    assert put_down_plan(strict) == []


def test_put_down_all_lays_off_on_the_table_and_offers_nothing_before_the_draw():
    g = game(hands=["8H 2S 4C", "3D 4D 5C"], melds=[("5H 6H 7H", 1)], pile="8C", phase="play")
    assert [str(a) for a in put_down_plan(g)] == ["layoff 8H 0"]
    assert put_down_plan(game(hands=["8H 2S 4C", "3D 4D 5C"], melds=[("5H 6H 7H", 1)])) == []


def test_marks_show_meldable_cards_before_the_draw_and_on_the_computers_turn():
    hands = ["9C 9D 9H 8H 2S", "3D 4D 5C"]
    for turn in (0, 1):
        g = game(hands=hands, melds=[("5H 6H 7H", 1)], pile="8C", turn=turn)
        marks = dict(zip(names(g.hand(0)), hand_marks(g, 0), strict=True))
        assert marks["2S"] is None
        assert {marks[c].group for c in ("9C", "9D", "9H")} == {marks["9C"].group}
        assert marks["9C"].onto is None and marks["8H"].onto == 0  # onto table meld 0
        assert marks["8H"].group != marks["9C"].group


def test_marks_find_the_joker_a_meld_names_by_the_card_it_stands_for():
    """Issue 20: the plan ``meld JK=QD KD AD`` names QD where the hand holds JK; the marks
    went looking for a QD and the deal of half the joker games failed."""
    g = Game.new(Rules(jokers=2), seed=2)
    g.apply("draw")
    plan = put_down_plan(g)
    assert [str(a) for a in plan] == ["meld JK=QD KD AD"]
    marks = dict(zip(names(g.hand(0)), hand_marks(g, 0), strict=True))
    assert {c for c, m in marks.items() if m is not None} == {"JK", "KD", "AD"}
    assert marks["JK"] == marks["KD"] == marks["AD"]


# --- what the human is shown ----------------------------------------------------------------------


def _strings(value: Any) -> str:
    return json.dumps(value)


def test_the_view_shows_the_seat_its_own_cards_and_only_known_ones_of_others():
    p = position(
        hands=["9C 9D 9H 2S", "3D 4D 5C KS"],
        pile="8C JD",
        known=[[], ["KS"]],
    )
    g = Game.from_dict(p)
    view = table_view(g.seat_view(0), NAMES)
    text = _strings(view)
    assert view["players"][0]["hand"] == ["9C", "9D", "2S", "9H"]  # clubs, diamonds, spades, hearts
    assert view["players"][1]["known"] == ["KS"] and "hand" not in view["players"][1]
    for hidden in ["3D", "4D", "5C", *p["stock"]]:
        assert f'"{hidden}"' not in text, hidden
    assert view["pile_actions"] == ["dig 8C", "take"] and view["stock"] == len(p["stock"])


def test_at_the_end_of_a_hand_the_hands_are_shown_with_the_scores():
    g = game(hands=["9C 9D 9H", "3D 4D KS"], pile="8C", phase="play")
    g.apply("meld 9C 9D 9H")  # goes out
    assert "hand" not in table_view(g.seat_view(0), NAMES)["players"][1]  # only when shown
    view = table_view(g.seat_view(0), NAMES, shown=[g.hand(q) for q in range(2)])
    r = view["result"]
    assert view["players"][1]["hand"] == ["3D", "4D", "KS"]
    assert r["table"] == [27, 0] and r["penalty"] == [0, 17] and r["scores"] == [27, -17]
    assert r["went_out"] == 0 and r["totals"] == [27, -17]


def test_moves_are_told_in_words_hiding_a_draw_from_the_other_seat():
    g = game(hands=["9C 9D 2S", "3D 4D KS"], pile="8C 9H JD", stock="QC")
    before = [g.seat_view(0), g.seat_view(1)]
    g.apply("draw")
    mine = describe(before[0], g.seat_view(0), Action.parse("draw"), NAMES)
    theirs = describe(before[1], g.seat_view(1), Action.parse("draw"), ["Computer", "You"])
    assert mine["text"] == "You draw QC from the stock"
    assert theirs["text"] == "Computer draws from the stock" and "QC" not in str(theirs)

    g = game(hands=["9C 9D 2S", "3D 4D KS"], pile="8C 9H JD")
    before_1 = g.seat_view(1)
    g.apply("dig 9H")
    dig = describe(before_1, g.seat_view(1), Action.parse("dig 9H"), ["Computer", "You"])
    assert dig["text"] == "Computer digs for 9H and picks up 2 cards: 9H JD"
    assert dig["cards"] == ["9H", "JD"]
    before_0 = g.seat_view(0)
    g.apply("meld 9C 9D 9H")
    meld = describe(before_0, g.seat_view(0), Action.parse("meld 9C 9D 9H"), NAMES)
    assert meld["text"] == "You meld 9C 9D 9H"


# --- the computer sees only its own observation ---------------------------------------------------


class Spy:
    """An agent that keeps what it was shown and plays the first legal action."""

    def __init__(self) -> None:
        self.seen: list[np.ndarray] = []

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        self.seen.append(observation.copy())
        return int(np.flatnonzero(action_mask)[0])


def test_the_computer_acts_on_its_own_seats_observation_only():
    setup = Setup(Rules(), "random")
    computers = Computers(setup)
    spy = computers.agents[1] = Spy()
    p = position(hands=["9C 9D 2S QH", "3D 4D KS"], pile="8C", turn=1)
    a = computers.choose(Game.from_dict(p))
    env = raw_env()
    env.reset(options={"position": p})
    seen = env.observe("player_1")
    assert np.array_equal(spy.seen[0], seen["observation"])
    assert str(a) == env.action_to_str(int(np.flatnonzero(seen["action_mask"])[0]))

    # The human's hidden cards and the stock's order change nothing the computer sees.
    swapped = dict(p, hands=[["9C", "9D", "2S", p["stock"][0]], p["hands"][1]])
    swapped["stock"] = ["QH", *p["stock"][1:]][::-1]
    computers.choose(Game.from_dict(swapped))
    assert np.array_equal(spy.seen[0], spy.seen[1])


def test_a_computer_choosing_an_illegal_id_is_an_error_not_a_move():
    computers = Computers(Setup(Rules(), "random"))

    class Cheat:
        def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
            return int(np.flatnonzero(action_mask == 0)[0])

    computers.agents[1] = Cheat()
    with pytest.raises(PlayError, match="no legal action id") as e:
        computers.choose(Game.from_dict(position(hands=["9C 9D 2S", "3D 4D KS"], turn=1)))
    assert e.value.status == 500


def test_a_computer_whose_endpoint_is_down_is_a_503_to_try_again_not_an_internal_error():
    from rummy500_env.agents.llm import EndpointError

    computers = Computers(Setup(Rules(), "random"))

    class Down:
        def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
            raise EndpointError("http://127.0.0.1:9 failed 5 decisions in a row")

    computers.agents[1] = Down()
    with pytest.raises(PlayError, match=r"cannot move now: http://127\.0\.0\.1:9 failed") as e:
        computers.choose(Game.from_dict(position(hands=["9C 9D 2S", "3D 4D KS"], turn=1)))
    assert e.value.status == 503


# --- a table --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def setup() -> Setup:
    return Setup(Rules(target=100), "greedy")


@pytest.fixture(scope="module")
def computers(setup: Setup) -> Computers:
    return Computers(setup)


def human_turn(table: Table) -> None:
    """Draw, put everything down, discard the last discardable card."""
    table.act(["draw"])
    if table.waiting == "you" and table.view()["plan"]:
        table.act(table.view()["plan"])
    if table.waiting == "you":
        table.act([[a for a in table.view()["legal"] if a.startswith("discard")][-1]])


def test_a_table_plays_whole_hands_and_its_record_replays(setup, computers):
    table = Table.new("test-game-1", setup, computers, seed=11)
    while table.waiting != "game_over":
        if table.waiting == "you":
            human_turn(table)
        elif table.waiting == "computer":
            table.advance()
        else:
            table.next_hand()
    record = Record.from_dict(table.record.to_dict())
    assert record.finished and record.replay().to_dict() == table.game.to_dict()
    assert record.players == ["human", "greedy"] and record.meta["source"] == "rummy500_env.play"


def test_moves_out_of_turn_are_refused_with_a_reason(setup, computers):
    table = Table.new("test-game-2", setup, computers, seed=12)
    with pytest.raises(PlayError, match="the computer cannot play now: it is your turn") as e:
        table.advance()
    assert e.value.status == 409
    with pytest.raises(PlayError, match="next hand cannot be dealt now"):
        table.next_hand()
    with pytest.raises(PlayError, match="not an action") as e:
        table.act(["fly"])
    assert e.value.status == 400
    with pytest.raises(PlayError, match="discard") as e:
        table.act([f"discard {table.view()['hand'][0]}"])  # before drawing
    assert e.value.status == 422


def test_a_put_down_that_fails_halfway_changes_nothing(setup, computers):
    table = Table.new("test-game-3", setup, computers, seed=13)
    table.act(["draw"])
    before = table.game.to_dict()
    card = table.view()["hand"][0]
    with pytest.raises(PlayError, match="is not allowed"):
        table.act([f"discard {card}", f"discard {card}"])
    assert table.game.to_dict() == before
    assert table.record.hands[0].actions == [(0, "draw")]


def test_a_table_resumes_from_its_record_exactly(setup, computers):
    table = Table.new("test-game-4", setup, computers, seed=14)
    for _ in range(6):
        if table.waiting == "you":
            human_turn(table)
        while table.waiting == "computer":
            table.advance()
    saved = Record.from_dict(json.loads(json.dumps(table.record.to_dict())))
    resumed = Table.resume("test-game-4", setup, computers, saved)
    assert resumed.game.to_dict() == table.game.to_dict()
    assert resumed.view() == table.view()  # the log of this hand too
    assert resumed.waiting == table.waiting


def test_a_saved_game_with_other_rules_is_refused(setup, computers):
    record = Table.new("test-game-5", setup, computers, seed=15).record
    other = Setup(Rules(), "greedy")
    with pytest.raises(PlayError, match="restart the server with that game's") as e:
        Table.resume("test-game-5", other, Computers(other), record)
    assert e.value.status == 409


def test_the_human_seat_is_seat_zero():
    assert HUMAN == 0
    assert Setup(Rules(players=3), "expert").names() == ["You", "Computer 1", "Computer 2"]
    assert Setup(Rules(), "/x/models/p.pt").opponent_label() == "p.pt"
