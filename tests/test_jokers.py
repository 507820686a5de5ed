"""docs/rules.md §5, jokers (`jokers=2`): one test per rule and example, named after it.

Positions are built from card text; a meld names a joker as the card it stands for (`JK=9D`),
and the jokers not named go with the other unnamed cards to the stock.
"""

from __future__ import annotations

import pytest

from rummy500_env import (
    Action,
    ActionParseError,
    Game,
    IllegalActionError,
    InvalidPositionError,
    Rules,
    RulesError,
    Rummy500Error,
)
from rummy500_env.engine.cards import JOKER, parse_card
from tests.helpers import game, legal, play

JOKERS = {"jokers": 2}


def jgame(**kwargs: object) -> Game:
    """A game under `jokers=2` (plus any rules fields given as `rules`)."""
    rules = dict(JOKERS, **kwargs.pop("rules", {}))  # type: ignore[call-overload]
    return game(rules=rules, **kwargs)


def melds_text(g: Game) -> list[str]:
    return [str(m) for m in g.melds]


# --- the deck


def test_two_jokers_are_added_to_each_deck_54_or_108_cards():
    g = Game.new(Rules(jokers=2), seed=1)
    assert Rules(jokers=2).deck_size == 54 and Rules(jokers=2, players=5).deck_size == 108
    cards = [c for p in range(2) for c in g.hand(p)] + g.pile + g.stock
    assert len(cards) == 54 and cards.count(JOKER) == 2
    g5 = Game.new(Rules(jokers=2, players=5), seed=1)
    cards = [c for p in range(5) for c in g5.hand(p)] + g5.pile + g5.stock
    assert len(cards) == 108 and cards.count(JOKER) == 4
    assert "JK" in str(g5.to_dict()) and parse_card("JK") == JOKER


def test_without_jokers_the_deck_has_none_and_joker_actions_are_refused():
    g = game(hands=["9S 9H 2C", "5D 6D"], phase="play")
    assert Rules().deck_size == 52
    with pytest.raises(IllegalActionError, match=r"no jokers in this game \(jokers=0"):
        g.apply("meld 9S 9H JK=9D")


# --- a joker stands for one card


def test_joker_stands_for_one_card_named_when_it_goes_down_meld_9s_9h_jk_9d():
    g = jgame(hands=["9S 9H JK 2C", "5D 6D 7D"], phase="play")
    g.apply("meld 9S 9H JK=9D")
    assert melds_text(g) == ["JK=9D 9H 9S"]
    assert g.to_dict()["melds"] == [{"cards": ["JK=9D", "9H", "9S"], "owners": [0, 0, 0]}]
    assert g.hand(0) == [parse_card("2C")]


def test_joker_in_a_gap_of_a_new_run_meld_5h_jk_6h_7h():
    g = jgame(hands=["5H 7H JK 2C", "5D 6D 7D"], phase="play")
    g.apply("meld 5H JK=6H 7H")
    assert melds_text(g) == ["5H JK=6H 7H"]


def test_joker_laid_off_on_its_own_layoff_jk_10c_2():
    g = jgame(
        hands=["JK 2D", "5D 6D 7D"],
        phase="play",
        melds=[("4S 4H 4D", 1), ("AD AH AS", 1), ("7C 8C 9C", 1)],
    )
    assert "layoff JK=10C 2" in legal(g) and "layoff JK=6C 2" in legal(g)
    g.apply("layoff JK=10C 2")
    assert melds_text(g)[2] == "7C 8C 9C JK=10C" and g.melds[2].owners[-1] == 0


def test_joker_is_never_moved_swapped_for_the_real_card_or_renamed():
    """No action touches a joker on the table: holding the real 9D, the owner can neither
    lay it off where the joker stands nor take the joker back; the joker keeps its card."""
    g = jgame(hands=["9D 2C 3C", "5D 6D 7D"], phase="play", melds=[("JK=9D 9H 9S", 0)])
    assert all(not a.startswith("layoff 9D") for a in legal(g))
    with pytest.raises(IllegalActionError, match="9D does not fit meld #0"):
        g.apply("layoff 9D 0")
    g.apply("discard 2C")
    assert melds_text(g) == ["JK=9D 9H 9S"]


# --- where a joker may stand


def test_joker_stands_for_a_missing_suit_of_a_set_never_a_fifth_card():
    g = jgame(hands=["JK 2C 3D", "5D 6D 7D"], phase="play", melds=[("9C 9D 9H", 1)])
    assert [a for a in legal(g) if a.startswith("layoff JK")] == ["layoff JK=9S 0"]
    g.apply("layoff JK=9S 0")
    g2 = jgame(hands=["JK 2C 3D", "5D 6D 7D"], phase="play", melds=[("9C 9D 9H 9S", 1)])
    assert not [a for a in legal(g2) if a.startswith("layoff JK")]
    with pytest.raises(IllegalActionError, match="does not fit"):
        g2.apply("layoff JK=9S 0")


def test_joker_stands_for_the_next_rank_at_a_runs_end():
    g = jgame(hands=["JK 2C 3D", "5D 6D 7D"], phase="play", melds=[("5H 6H 7H", 1)])
    assert [a for a in legal(g) if a.startswith("layoff JK")] == [
        "layoff JK=4H 0",
        "layoff JK=8H 0",
    ]
    with pytest.raises(IllegalActionError, match="JK=10H does not fit meld #0"):
        g.apply("layoff JK=10H 0")


def test_joker_stands_for_a_card_wherever_the_real_card_lies():
    """9D is in the opponent's hand, 9C in another meld, 9H in the pile, 9S in the stock:
    a joker still stands for each of them (one deck)."""
    g = jgame(
        hands=["JK 8D 10D 7C 8C JK", "9D 2S"],
        pile="3C 9H",
        melds=[("9C 10C JC", 1)],
        stock="9S",
        phase="play",
    )
    for text in ("meld 8D JK=9D 10D", "meld 7C 8C JK=9C", "layoff JK=8C 0"):
        g.copy().apply(text)
    g.apply("meld 8D JK=9D 10D")
    g.apply("layoff JK=JD 1")
    assert melds_text(g) == ["9C 10C JC", "8D JK=9D 10D JK=JD"]


def test_joker_stands_for_a_card_with_two_decks_too():
    g = jgame(rules={"decks": 2}, hands=["9D 9H JK 2C", "5D 6D 7D"], phase="play")
    g.apply("meld 9D 9H JK=9S")
    assert g.rules.joker_count == 4 and melds_text(g) == ["9D 9H JK=9S"]


def test_joker_keeps_the_usual_limits_no_repeated_suit_in_a_set_no_repeated_card_in_a_run():
    """Two decks: the joker may not repeat a suit of a set or a card of a run, on the table
    or in a new meld (where naming the card twice is not even an action)."""
    g = jgame(
        rules={"decks": 2},
        hands=["9D 9H 5H 6H JK 2C", "5D 6D 7D"],
        melds=[("9C 9D 9S", 1), ("5S 6S 7S", 1)],
        phase="play",
    )
    assert [a for a in legal(g) if a.startswith("layoff JK=9")] == ["layoff JK=9H 0"]
    for bad in ("layoff JK=9D 0", "layoff JK=6S 1"):
        with pytest.raises(IllegalActionError, match="does not fit"):
            g.apply(bad)
    for bad in ("meld 9D 9H JK=9H", "meld 5H 6H JK=6H"):
        with pytest.raises(Rummy500Error, match="named both as itself and as JK"):
            g.apply(bad)
    assert "meld 5H 6H JK=7H" in legal(g) and "meld JK=9C 9D 9H" in legal(g)


# --- a meld starts with at least two natural cards


def test_every_meld_starts_as_three_cards_with_at_most_one_joker():
    g = jgame(hands=["9S JK JK 2C 3D", "5D 6D 7D"], phase="play")
    assert not [a for a in legal(g) if a.startswith("meld")]
    with pytest.raises(IllegalActionError, match="no three-card start with two natural"):
        g.apply("meld JK=9D JK=9H 9S")


def test_longer_meld_is_a_start_then_lay_offs_examples_from_rules():
    """`meld 5H JK=6H 7H 8H` and `meld 9S 9H JK=9D JK=9C` are legal; `meld 5H JK=6H JK=7H
    8H` is not (no three-card start with two natural cards)."""
    g = jgame(hands=["5H 7H 8H 9S 9H JK JK 2C", "5D 6D 7D"], phase="play")
    g.copy().apply("meld 5H JK=6H 7H 8H")
    g.copy().apply("meld 9S 9H JK=9D JK=9C")
    with pytest.raises(IllegalActionError, match="no three-card start"):
        g.apply("meld 5H JK=6H JK=7H 8H")
    h = g.copy()
    h.apply("meld 9S 9H JK=9D JK=9C")
    assert melds_text(h) == ["JK=9C JK=9D 9H 9S"] and h.hand(0) == [
        parse_card(c) for c in ("2C", "5H", "7H", "8H")
    ]


def test_the_real_card_cannot_be_laid_off_where_a_joker_stands_for_it():
    g = jgame(hands=["6H 2C 3D", "5D 6D 7D"], phase="play", melds=[("5H JK=6H 7H", 1)])
    assert not [a for a in legal(g) if a.startswith("layoff 6H")]
    with pytest.raises(IllegalActionError, match="6H does not fit meld #0"):
        g.apply("layoff 6H 0")
    g.apply("discard 6H")


# --- obligations


def test_dig_needs_a_start_holding_the_buried_card_hand_jk_jk_8h_9h_may_not_dig_5h():
    g = jgame(hands=["JK JK 8H 9H", "2S 3S 4S"], pile="5H 2D KC")
    assert "dig 5H" not in legal(g)
    with pytest.raises(IllegalActionError, match="can go on the table at once"):
        g.apply("dig 5H")
    h = jgame(hands=["JK 6H 8H 9H", "2S 3S 4S"], pile="5H 2D KC")
    assert "dig 5H" in legal(h)  # 5H 6H JK=7H is a start holding it


def test_obligation_is_met_only_by_a_start_holding_the_owed_card_or_its_lay_off():
    g = jgame(hands=["JK 6H 8H 9H 9C", "2S 3S 4S"], pile="5H 2D KC")
    g.apply("dig 5H")
    assert legal(g) == ["meld JK=4H 5H 6H", "meld 5H 6H JK=7H"]  # no discard, no other meld
    with pytest.raises(IllegalActionError, match="every meld must include 5H"):
        g.apply("meld 8H 9H JK=10H")
    g.apply("meld 5H 6H JK=7H")
    assert g.must_play is None and "discard 2D" in legal(g)


def test_an_owed_joker_is_met_by_any_joker_going_down():
    g = jgame(hands=["9S 9H 2C", "2S 3S 4S"], pile="7D JK 2D", melds=[("4C 5C 6C", 1)])
    g.apply("dig JK")
    assert g.must_play == JOKER
    assert legal(g) == [
        "meld 2C 2D JK=2H",
        "meld 2C 2D JK=2S",
        "meld JK=9C 9H 9S",
        "meld JK=9D 9H 9S",
        "layoff JK=3C 0",
        "layoff JK=7C 0",
    ]
    g.apply("layoff JK=7C 0")
    assert g.must_play is None and "discard 2D" in legal(g)


def test_a_joker_standing_for_9d_does_not_meet_an_owed_natural_9d():
    g = jgame(hands=["9S 9H JK 2C", "2S 3S 4S"], pile="9D KC", melds=[("6D 7D 8D", 1)])
    g.apply("dig 9D")
    with pytest.raises(IllegalActionError, match="does not meet an owed natural"):
        g.apply("meld 9S 9H JK=9D")
    with pytest.raises(IllegalActionError, match="lay off 9D first"):
        g.apply("layoff JK=9D 0")
    g.apply("layoff 9D 0")
    assert g.must_play is None


# --- value


@pytest.mark.parametrize("scoring", ["pip", "fives"])
def test_joker_is_worth_15_wherever_it_is_under_both_scorings(scoring):
    """On the table for whatever card it stands for (a 2, a king, an ace low or high), and
    left in hand."""
    g = jgame(
        rules={"scoring": scoring},
        hands=["", "5D"],
        melds=[("AH JK=2H 3H", 0), ("JK=2C 2D 2S", 1)],
        phase="hand_over",
    )
    low_ace, two, three = (1, 2, 3) if scoring == "pip" else (5, 5, 5)
    assert g.table_points() == [low_ace + 15 + three, 15 + two + two]
    only_joker = jgame(
        rules={"scoring": scoring}, hands=["JK", ""], melds=[("2C 2D 2S", 1)], phase="hand_over"
    )
    assert only_joker.hand_scores()[0] == -15


def test_meld_values_read_an_ace_from_its_runs_final_shape_reading_a_joker_as_its_card():
    low = jgame(hands=["", "5D"], melds=[("AH 2H JK=3H", 0)], phase="hand_over", rest=1)
    high = jgame(hands=["", "5D"], melds=[("JK=QH KH AH", 0)], phase="hand_over", rest=1)
    assert low.table_points()[0] == 1 + 2 + 15  # a low ace: 1
    assert high.table_points()[0] == 15 + 10 + 15  # a high ace: 15


# --- in the pile


def test_joker_may_be_discarded_taken_from_the_top_or_dug_then_goes_down_first():
    g = jgame(hands=["JK 2C 5S", "9S 9H 4D 7C 8C"], phase="play")
    g.apply("discard JK")
    assert g.pile[-1] == JOKER
    taker = g.copy()
    taker.apply("take")
    assert taker.hand(1).count(JOKER) == 1 and taker.taken_top == JOKER
    g.apply("draw")
    g.apply("discard 4D")
    g.apply("draw")
    g.apply("discard 2C")
    assert "dig JK" in legal(g)
    g.apply("dig JK")  # 2C and JK: a buried joker goes down first, as any dug card
    assert g.must_play == JOKER
    assert legal(g) == [
        "meld JK=9C 9H 9S",
        "meld JK=9D 9H 9S",
        "meld AC 2C JK=3C",
        "meld JK=6C 7C 8C",
        "meld 7C 8C JK=9C",
    ]
    g.apply("meld JK=6C 7C 8C")
    assert g.must_play is None


def test_two_jokers_in_the_pile_dig_jk_takes_the_nearer_one_dig_jk_2_the_next():
    g = jgame(hands=["9S 9H 2C", "2S 3S 4S"], pile="JK 5C JK 2D KC")
    assert "dig JK" in legal(g) and "dig JK#2" in legal(g)
    near = g.copy()
    near.apply("dig JK")
    assert near.pile == [JOKER, parse_card("5C")]
    g.apply("dig JK#2")
    assert g.pile == [] and g.hand(0).count(JOKER) == 2


def test_after_taking_a_joker_no_joker_may_be_discarded_unless_the_hand_holds_only_jokers():
    g = jgame(hands=["JK 2C", "2S 3S 4S"], pile="KC JK")
    g.apply("take")
    assert "discard 2C" in legal(g) and "discard JK" not in legal(g)
    with pytest.raises(IllegalActionError, match="no joker may be discarded"):
        g.apply("discard JK")
    only = jgame(hands=["JK", "2S 3S 4S"], pile="KC JK")
    only.apply("take")
    assert legal(only) == ["discard JK"]
    only.apply("discard JK")
    assert only.phase in ("hand_over", "draw")


# --- positions


def test_from_dict_rejects_a_joker_standing_for_a_card_its_meld_cannot_take():
    """A repeated suit, a fifth card, a gap, a run round the corner."""
    for cards in ("9C 9D 9H JK=9H", "9C 9D 9H 9S JK=10S", "5H 6H JK=8H", "JK=KH AH 2H"):
        with pytest.raises(InvalidPositionError, match="a joker stands for a card its meld"):
            jgame(hands=["2C", "3C"], melds=[(cards, 1)])
    jgame(hands=["2C", "3C"], melds=[("9C 9D 9H JK=9S", 1)])  # the missing suit is fine


def test_from_dict_rejects_a_meld_with_no_start_of_two_natural_cards_and_bare_or_named_jokers():
    with pytest.raises(InvalidPositionError, match="could never have gone down"):
        jgame(hands=["2C", "3C"], melds=[("JK=9C JK=9D 9H", 1)])
    bare = jgame(hands=["2C", "3C"], melds=[("JK=9C 9D 9H", 1)]).to_dict()
    bare["melds"][0]["cards"][0] = "JK"
    with pytest.raises(InvalidPositionError, match="names the card it stands for"):
        Game.from_dict(bare)
    d = jgame(hands=["2C", "3C"]).to_dict()
    d["hands"][0].append("JK=9D")
    with pytest.raises(InvalidPositionError, match="only in a meld"):
        Game.from_dict(d)


def test_from_dict_counts_jokers_and_refuses_them_without_jokers_in_the_rules():
    d = jgame(hands=["2C", "3C"]).to_dict()
    d["stock"].remove("JK")
    with pytest.raises(InvalidPositionError, match="holds 1 joker"):
        Game.from_dict(d)
    plain = game(hands=["2C", "3C"]).to_dict()
    plain["stock"].append("JK")
    with pytest.raises(InvalidPositionError, match=r"jokers=0"):
        Game.from_dict(plain)


def test_positions_with_jokers_round_trip():
    g = jgame(
        hands=["JK 2C 3C", "9D JK"],
        pile="5C KD",
        melds=[("5H 6H 7H", 1)],
        known=[[], ["JK"]],
        phase="draw",
    )
    d = g.to_dict()
    assert Game.from_dict(d).to_dict() == d and d["hands"][1] == ["9D", "JK"]
    assert g.known(1) == [JOKER]


# --- the engine's clarifications (docs/rules.md §5, where the rules are silent)


def test_two_decks_put_four_jokers_in_play_and_dig_jk_3_names_the_third():
    g = jgame(rules={"decks": 2}, hands=["9S 9H 2C", "2S 3S 4S"], pile="JK JK JK 5C JK 2D")
    assert {"dig JK", "dig JK#2", "dig JK#3"} <= set(legal(g))
    g.apply("dig JK#3")
    assert g.pile == [JOKER] and g.hand(0).count(JOKER) == 3


def test_jokers_taken_from_the_pile_are_known_until_played():
    g = jgame(hands=["9S 9H 2C", "2S 3S 4S"], pile="5C JK")
    g.apply("take")
    assert g.known(0) == [JOKER]
    g.apply("meld 9S 9H JK=9D")
    assert g.known(0) == []


def test_a_played_joker_unknows_the_taken_one_even_when_a_hidden_joker_is_held():
    """The table cannot tell which joker was melded: the count known drops either way, and the
    other seat's view does not show whether a second joker was held (§3, §5)."""
    views = []
    for hidden in ("JK", "KD"):
        g = jgame(hands=[f"9S 9H {hidden} 2C", "2S 3S 4S"], pile="5C JK")
        play(g, "take", "meld 9S 9H JK=9D")
        assert g.known(0) == []
        views.append(g.seat_view(1))
    assert views[0] == views[1]


def test_legal_play_order_melds_starts_with_a_joker_lay_offs_joker_lay_offs_discards():
    g = jgame(hands=["9S 9H 9D JK", "2S 3S"], melds=[("4C 5C 6C", 1)], phase="play")
    kinds = []
    for a in g.legal_actions():
        kind = a.kind + ("+jk" if a.jokers or JOKER in a.cards else "")
        if not kinds or kinds[-1] != kind:
            kinds.append(kind)
    assert kinds == ["meld", "meld+jk", "layoff+jk", "discard", "discard+jk"]


def test_taking_a_joker_under_top_card_must_meld_owes_a_joker():
    g = jgame(rules={"top_card_must_meld": True}, hands=["9S 9H 2C", "2S 3S"], pile="5C JK")
    g.apply("take")
    assert g.must_play == JOKER
    play(g, "meld JK=9D 9H 9S")
    assert g.must_play is None


# --- notation


@pytest.mark.parametrize(
    "text",
    [
        "meld JK=9D 9H 9S",
        "meld 5H JK=6H 7H",
        "meld QH KH JK=AH",
        "meld JK=9C JK=9D 9H 9S",
        "layoff JK=10C 2",
        "discard JK",
        "dig JK",
        "dig JK#2",
        "dig JK#4",
    ],
)
def test_joker_notation_round_trips(text):
    a = Action.parse(text)
    assert str(a) == text and Action.parse(str(a)) == a
    assert eval(repr(a), {"Action": Action}) == a


@pytest.mark.parametrize(
    ("text", "canonical"),
    [("meld 9s 9h jk=9d", "meld JK=9D 9H 9S"), ("LAYOFF jk=♣10 0", "layoff JK=10C 0")],
)
def test_joker_notation_parses_liberally_to_canonical_text(text, canonical):
    assert str(Action.parse(text)) == canonical


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("meld 9S 9H JK", "must name the card it stands for"),
        ("layoff JK 2", "must name the card it stands for"),
        ("discard JK=9D", "only in a meld or a lay-off"),
        ("dig JK=9D", "only in a meld or a lay-off"),
        ("meld 9S 9H 9D JK=9D", "named both as itself and as JK=9D"),
        ("meld 9S JK=9H JK=9H", "two jokers stand for 9H"),
        ("meld 9S 9H 9D=JK", "only a joker stands for a card"),
        ("dig 9D#3", "#1 to #2"),
        ("dig JK#5", "#1 to #4"),
    ],
)
def test_joker_notation_errors_say_what_is_wrong(text, words):
    with pytest.raises(ActionParseError, match=words):
        Action.parse(text)


def test_jokers_count_in_the_deck_a_hand_size_must_leave_a_card_of():
    """Eight hands of 13 and the upcard need 105 cards: two decks hold 104, or 108 with
    their jokers."""
    with pytest.raises(RulesError, match="leaves no card for the pile"):
        Rules(players=8, hand_size=13, decks=2)
    g = Game.new(Rules(players=8, hand_size=13, decks=2, jokers=2), seed=0)
    assert len(g.stock) == 108 - 8 * 13 - 1 and Rules(players=3, jokers=2).cards_per_hand == 7
