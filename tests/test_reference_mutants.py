"""Tests written for mutants that survived the rules tests and the reference properties
(benchmarks/mutation.py, docs/testing.md): each names the deliberate bug it kills."""

from __future__ import annotations

import copy
import dataclasses
import pickle
import random

import pytest

from rummy500_env import Action, Game, IllegalActionError, InvalidPositionError, Rules
from rummy500_env.engine.cards import JOKER, card_str, parse_card
from tests.helpers import game, play


def test_an_unseeded_game_draws_an_int_seed_and_keeps_it():
    """`Game.new` without a seed draws one (mutant: the seed left None, every unseeded game
    then deals the same cards)."""
    seeds = {Game.new("standard").seed for _ in range(3)}
    assert all(type(s) is int for s in seeds) and len(seeds) == 3
    g = Game.new("standard")
    assert g.to_dict()["seed"] == g.seed


def test_next_hand_refused_mid_hand_does_not_say_the_game_is_over():
    """The refusal names the phase, and says "the game is over" only when it is (mutant: the
    note added always, or replaced by other text)."""
    g = Game.new("standard", seed=1)
    with pytest.raises(IllegalActionError) as mid:
        g.next_hand()
    assert str(mid.value).endswith("the hand is over; phase is 'draw'")
    over = game(
        hands=["5C", "2S 3S"], pile="9D", melds=[("KC KD KH", 0)], totals=[480, 0], phase="play"
    )
    over.apply("discard 5C")
    assert over.phase == "game_over"
    with pytest.raises(IllegalActionError, match=r"\(the game is over\)$"):
        over.next_hand()


@pytest.mark.parametrize(
    "action",
    [
        Action("call", (parse_card("9D"), parse_card("KC"))),
        Action("dig", (parse_card("9D"), parse_card("KC"))),
        Action("dig", (parse_card("9D"),), -1, 0),
        Action("discard", (parse_card("5C"), parse_card("7C"))),
        Action("layoff", (parse_card("5C"), parse_card("7C")), 0),
    ],
    ids=["call-two-cards", "dig-two-cards", "dig-copy-0", "discard-two", "layoff-two"],
)
def test_malformed_actions_built_in_code_are_illegal(action):
    """An `Action` built in code with the wrong number of cards or copy is refused, never
    judged by its first card (mutant: `or` turned into `and` in the arity checks)."""
    rules = Rules(rummy_calls=True)
    g = game(rules=rules.to_dict(), hands=["9S 9H 5C 7C", "2S 3S"], pile="9D KC 2C")
    assert not g.is_legal(action)
    with pytest.raises(IllegalActionError):
        g.apply(action)


def test_after_the_game_an_action_is_refused_because_the_game_is_over():
    """Once the game is over the refusal says so, not "call next_hand()", which would be
    refused too (mutant: the game-over test misspelt)."""
    g = game(
        hands=["5C", "2S 3S"], pile="9D", melds=[("KC KD KH", 0)], totals=[480, 0], phase="play"
    )
    g.apply("discard 5C")
    with pytest.raises(IllegalActionError, match="the game is over"):
        g.apply("draw")


def test_a_call_naming_two_cards_is_illegal_in_a_call_window():
    """In a call window, an `Action` calling two cards is refused, not read as a call of the
    first (mutant: the arity check's `or` turned into `and`)."""
    g = game(
        rules=Rules(rummy_calls=True).to_dict(),
        hands=["9S 9H 5C 7C", "2S 3S"],
        pile="KC 9D",
        phase="call",
        discarder=1,
    )
    assert g.is_legal("call 9D")
    assert not g.is_legal(Action("call", (parse_card("9D"), parse_card("KC"))))


def test_playing_a_known_card_unknows_it_even_when_a_hidden_copy_is_held():
    """Two decks: the hand digs a 9D and melds a 9D. The table cannot tell which copy was
    melded, so 9D is no longer known, whether or not the hand held another: the other seat's
    view is the same either way (docs/rules.md §3 "Pile cards are known"; mutant: the old
    rule, a known copy kept while one is held, told the other seat of the hidden one)."""
    views = []
    for hidden in ("9D", "QC"):
        g = game(rules={"decks": 2}, hands=[f"{hidden} 9H 9S 5C 7C", "2S 3S"], pile="9D KC 2C")
        play(g, "dig 9D", "meld 9D 9H 9S")
        assert g.to_dict()["known"][0] == ["2C", "KC"]
        views.append(g.seat_view(1))
    assert views[0] == views[1]


def test_games_are_equal_only_when_their_positions_are():
    """`==` compares positions (mutant: any two games equal)."""
    a, b = Game.new("standard", seed=1), Game.new("standard", seed=2)
    assert a != b and a == a.copy() and a != "not a game"


def test_from_seat_view_draws_from_a_given_generator():
    """A `random.Random` is drawn from, so equal generators give equal worlds (mutant: it
    was passed to `random.Random` again, which refuses it)."""
    g = Game.new("standard", seed=3)
    view = g.seat_view(0)
    one = Game.from_seat_view(view, random.Random(9))
    two = Game.from_seat_view(view, random.Random(9))
    assert one == two and one.hand(0) == g.hand(0)


def test_a_joker_keeps_its_place_when_a_card_is_laid_off_below_its_run():
    """A lay-off at a run's low end keeps the run's jokers as jokers: their value stays 15
    (docs/rules.md §5; mutant: the joker marks dropped on a low lay-off)."""
    g = game(
        rules={"jokers": 2},
        hands=["4H 9C 9D", "2S 3S"],
        pile="KD",
        melds=[("5H JK=6H 7H", 1)],
        phase="play",
    )
    g.apply("layoff 4H 0")
    assert g.to_dict()["melds"][0] == {"cards": ["4H", "5H", "JK=6H", "7H"], "owners": [0, 1, 1, 1]}
    assert g.table_points() == [4, 5 + 15 + 7]


def test_template_index_names_the_three_card_melds():
    """The action codec's lookup (rl/actions.py): each three-card meld, in any order, is its
    template; anything else is none."""
    from rummy500_env.engine import melds

    for t, cards in enumerate(melds.MELD_TEMPLATES):
        assert melds.template_index(list(reversed(cards))) == t
    nine = [parse_card(c) for c in ("9C", "9D", "9H", "9S")]
    assert melds.template_index(nine) is None and melds.template_index(nine[:2]) is None
    assert melds.template_index([nine[0], nine[0], nine[1]]) is None
    assert melds.template_index([parse_card(c) for c in ("KC", "AD", "2D")]) is None


def test_set_next_draw_swaps_that_card_with_the_top_of_the_stock():
    """`set_next_draw` (chance nodes pick the drawn card): the card and the old top swap
    places, the next draw takes it, and a card the stock lacks is refused."""
    g = game(hands=["9S 9H 5C", "2S 3S"], pile="KD", stock="4C 8D QS")
    before = g.to_dict()["stock"]
    g.set_next_draw(parse_card("QS"))
    assert g.to_dict()["stock"] == ["QS", "8D", "4C", *before[3:]]
    g.apply("draw")
    assert "QS" in g.to_dict()["hands"][0]
    with pytest.raises(IllegalActionError, match="the stock holds no KD"):
        g.set_next_draw(parse_card("KD"))


def test_hand_result_to_dict_names_each_field():
    """The end-of-hand result in JSON form, as the env's infos and the records read it."""
    g = game(hands=["5C", "2S 3S"], pile="9D", melds=[("KC KD KH", 0)], phase="play")
    g.apply("discard 5C")
    assert g.result().to_dict() == {
        "scores": [30, -5],
        "totals": [30, -5],
        "went_out": 0,
        "game_over": False,
        "winner": None,
        "truncated": False,
    }


def test_a_total_of_exactly_the_target_ends_the_game():
    """500 or more ends the game (docs/rules.md §1): exactly 500 does (mutant: `>`)."""
    g = game(
        hands=["5C", "2S 3S"], pile="9D", melds=[("KC KD KH", 0)], totals=[470, 0], phase="play"
    )
    g.apply("discard 5C")
    assert g.totals == [500, -5] and g.phase == "game_over" and g.winner == 0


def test_winner_must_go_out_at_exactly_the_target_wins():
    """With `winner_must_go_out`, going out with exactly the target ends the game (mutant:
    `>` for `>=`)."""
    g = game(
        rules={"winner_must_go_out": True, "target": 100},
        hands=["5C", "2S 3S"],
        pile="9D",
        melds=[("KC KD KH", 0)],
        totals=[70, 0],
        phase="play",
    )
    g.apply("discard 5C")
    assert g.totals == [100, -5] and g.phase == "game_over" and g.winner == 0


def test_a_hand_with_all_four_of_a_rank_lists_each_three_card_set_once():
    """Four 9s in hand: the four sets of three are each listed once (mutant: one listed twice,
    another missing, in the meld finder's four-suit case)."""
    g = game(hands=["9C 9D 9H 9S 2C", "2S 3S"], pile="KD", phase="play")
    melds = [str(a) for a in g.legal_actions() if a.kind == "meld"]
    assert melds == ["meld 9C 9D 9H", "meld 9C 9D 9S", "meld 9C 9H 9S", "meld 9D 9H 9S"]


# --- survivors of the full mutation run (docs/testing.md "Figures") ------------------------------


def test_a_game_and_its_hand_result_pickle_and_copy_to_equal_independent_objects():
    """Pickling goes through `Game.__reduce__` and `_unpickle` (every slot restored, the same
    rules and seed) and `HandResult.__reduce__` (mutants: a field, the rules or the seed lost,
    the fields set on the wrong object; tests/test_compiled.py runs this on the compiled build)."""
    g = Game.new({"jokers": 2}, seed=5)
    g.apply(g.legal_actions()[0])
    assert copy.copy(g) == g  # shallow: it shares the lists (`Game.copy` copies them)
    for clone in (pickle.loads(pickle.dumps(g)), copy.deepcopy(g)):
        assert type(clone) is Game and clone == g and clone is not g
        assert clone.seed == g.seed and clone.rules == g.rules
        assert clone.legal_actions() == g.legal_actions()
        clone.apply(clone.legal_actions()[0])
        assert clone != g
    over = game(hands=["5C", "2S 3S"], pile="9D", melds=[("KC KD KH", 0)], phase="play")
    over.apply("discard 5C")
    result = over.result()
    for clone in (pickle.loads(pickle.dumps(result)), copy.deepcopy(result)):
        assert type(clone) is type(result) and clone == result
        assert clone.to_dict() == result.to_dict()


def test_play_unchecked_given_an_illegal_action_stops_with_a_message_naming_it():
    """The fast path checks nothing but asserts what it cannot do without (mutants: the
    assertion messages changed)."""
    g = game(hands=["9S 9H 5C", "2S"], pile="4H 9D", phase="play")
    for action, message in [
        ("pass", "pass outside a call window"),
        ("done", "done outside a caller's play"),
        ("meld 5C 9H 9S", "play_unchecked was given a meld that is no meld"),
    ]:
        with pytest.raises(AssertionError) as stopped:
            g.copy().play_unchecked(Action.parse(action))
        assert str(stopped.value) == message
    g = game(hands=["9S 9H 5C", "2S"], pile="4H 9D")
    with pytest.raises(AssertionError) as stopped:
        g.play_unchecked(Action.parse("dig 9C"))
    assert str(stopped.value) == "play_unchecked was given a take of a card not in the pile"


def test_a_second_joker_drawn_from_the_stock_joins_the_first():
    """Drawing a joker adds one to the jokers held (mutant: the count set to 1)."""
    g = game(rules={"jokers": 2}, hands=["9S JK 5C", "2S"], pile="KD")
    g.set_next_draw(JOKER)
    g.apply("draw")
    assert g.hand(0).count(JOKER) == 2 and len(g.hand(0)) == 4


def test_jokers_taken_from_the_pile_are_known_each_until_played():
    """Two jokers taken in one dig are both known; playing one leaves one known (mutants: the
    known count set to 1 on a take, or lost on a play)."""
    g = game(rules={"jokers": 2}, hands=["9S 9H 5C", "2S"], pile="4H 9D JK JK", rest=1)
    g.apply("dig 9D")
    assert g.known(0).count(JOKER) == 2
    g.apply("meld 9D 9H 9S")
    g.apply("layoff JK=9C 0")
    assert g.known(0).count(JOKER) == 1 and g.hand(0).count(JOKER) == 1


def _dealt_in_order(g: Game, order: list[int]) -> None:
    """`g`'s hand was dealt from `order` as `Game.new` says: one card at a time round the
    table from the dealer's left, then the pile's first card, then the stock from its top."""
    n, size = g.rules.players, g.rules.cards_per_hand
    first = (g.dealer + 1) % n
    for i in range(n):
        p = (first + i) % n
        assert sorted(g.hand(p)) == sorted(order[i : n * size : n])
    assert g.pile == [order[n * size]]
    assert g.stock[::-1] == order[n * size + 1 :]  # the stock's top is its last item


def test_a_given_deck_is_dealt_in_its_order_and_a_wrong_one_is_refused():
    """`deck` (OpenSpiel's chance nodes) replaces the shuffle, in `Game.new` and in
    `next_hand`, and is checked (mutants: the deck ignored, the check inverted or its message
    lost)."""
    order = [*range(52)][::-1]
    g = Game.new("standard", seed=1, deck=order)
    _dealt_in_order(g, order)
    assert g.hand(0) != Game.new("standard", seed=1).hand(0)
    for wrong, got in [(order[:-1], 51), ([*order[:-1], order[0]], 52)]:
        with pytest.raises(InvalidPositionError) as refused:
            Game.new("standard", seed=1, deck=wrong)
        assert refused.value.problems == [
            f"deck must hold each of the 52 cards in play once, got {got}"
        ]
    over = game(hands=["5C", "2S 3S"], pile="9D", melds=[("KC KD KH", 0)], phase="play")
    over.apply("discard 5C")
    again = [*range(52)]
    over.next_hand(again)
    assert over.dealer == 0
    _dealt_in_order(over, again)


def test_an_unseeded_game_draws_its_seed_from_0_to_2_to_the_63():
    """Seeds span 0 .. 2**63 - 1, a signed 64-bit int as other tools store them (mutants: the
    range 2 * 63, 3**63 or 2**64). Over 64 draws the largest is at least 2**62 but for a
    chance of 2**-64."""
    seeds = [Game.new("standard").seed for _ in range(64)]
    assert all(0 <= s < 2**63 for s in seeds) and max(seeds) >= 2**62
    with pytest.raises(TypeError) as refused:
        Game.new("standard", seed="7")
    assert str(refused.value) == "seed must be an int or None, not '7'"


def test_a_seat_view_keeps_the_taken_top_card_and_the_hands_played():
    """(mutants: `taken_top` and `hands_played` left out of the view)."""
    g = game(hands=["9S KD 5C", "2S"], pile="4H", phase="play", taken_top="KD", hands_played=3)
    view = g.seat_view(1)
    assert view.taken_top == parse_card("KD") and view.hands_played == 3


def test_from_seat_view_checks_the_position_unless_told_not_to():
    """A view no real position has (a taken top card in the draw phase) is refused by the
    check, which `check=False` skips (mutants: the default False, the check always or never
    made)."""
    g = game(hands=["9S KD 5C", "2S"], pile="4H")
    bad = dataclasses.replace(g.seat_view(0), taken_top=parse_card("KD"))
    with pytest.raises(InvalidPositionError, match="taken_top must be null outside"):
        Game.from_seat_view(bad, 1)
    assert Game.from_seat_view(bad, 1, check=False).taken_top == parse_card("KD")


def test_lay_off_lays_a_natural_card_unless_told_it_is_a_joker():
    """`melds.lay_off`'s `joker` defaults to False, as the bots call it (mutant: True)."""
    from rummy500_env.engine.melds import lay_off, meld_from_cards

    nines = meld_from_cards([parse_card(c) for c in ("9C", "9D", "9H")], (1, 1, 1), 0)
    assert nines is not None
    plain, wild = lay_off(nines, parse_card("9S"), 0), lay_off(nines, parse_card("9S"), 0, True)
    assert plain.jokers == 0 and wild.jokers == 1 << parse_card("9S")
    assert [card_str(c) for c in plain.cards] == ["9C", "9D", "9H", "9S"]


def test_template_index_refuses_four_cards_naming_three():
    """Four cards, one twice, are no three-card template (mutant: `or` for `and`, which read
    them as the template of the three distinct ones)."""
    from rummy500_env.engine.melds import template_index

    cards = [parse_card(c) for c in ("9C", "9C", "9D", "9H")]
    assert template_index(cards) is None and template_index(cards[1:]) is not None


def test_is_legal_takes_an_action_or_its_text_and_refuses_what_is_neither():
    """(mutants: an `Action` parsed as text, so never legal; text that is no action legal)."""
    g = game(hands=["9S 9H 5C", "2S"], pile="4H 9D")
    assert all(g.is_legal(a) for a in g.legal_actions())
    assert g.is_legal("draw") and not g.is_legal("knock") and not g.is_legal(7)


def test_a_lay_off_leaving_one_card_to_discard_is_legal_under_discard_to_go_out():
    """Two cards: lay one off, discard the other (mutants: two cards required to be left, in
    `why_illegal` or in the legal list)."""
    g = game(
        rules={"discard_to_go_out": True},
        hands=["9S 5C", "2S"],
        pile="KD",
        melds=[("9C 9D 9H", 1)],
        phase="play",
    )
    assert g.why_illegal(Action.parse("layoff 9S 0")) is None
    assert "layoff 9S 0" in [str(a) for a in g.legal_actions()]
    play(g, "layoff 9S 0", "discard 5C")
    assert g.is_hand_over and g.went_out == 0


def test_a_meld_holding_the_owed_card_is_legal_while_the_obligation_is_open():
    """(mutant: `and` for `or`, refusing every meld while a card is owed)."""
    g = game(hands=["9D 9H 9S 5C 6C 7C", "2S"], pile="KD", phase="play", must_play="9D")
    assert g.why_illegal(Action.parse("meld 9D 9H 9S")) is None
    assert g.is_legal("meld 9D 9H 9S") and not g.is_legal("meld 5C 6C 7C")


def _pair_melds_with_a_joker(a: int, b: int) -> bool:
    """From docs/rules.md alone: two natural cards and a joker make a three-card meld when
    they are of one rank (a set), or of one suit at most two ranks apart, the ace low or high
    (a run; K-A-2 is none)."""
    (ra, sa), (rb, sb) = divmod(a, 13)[::-1], divmod(b, 13)[::-1]
    if a == b:
        return False
    if ra == rb:
        return True
    ords_a = {ra + 1} | ({14} if ra == 0 else set())
    ords_b = {rb + 1} | ({14} if rb == 0 else set())
    return sa == sb and any(1 <= abs(x - y) <= 2 for x in ords_a for y in ords_b)


def test_has_meld_pair_finds_exactly_the_pairs_a_joker_completes():
    """Every hand of one or two natural cards, with and without a joker held (mutants: a
    suit pairing lost, the adjacent ranks missed, one suit's field read as all cards)."""
    from rummy500_env.engine.cards import JOKER_BIT
    from rummy500_env.engine.melds import has_meld_pair

    assert not has_meld_pair(0) and not has_meld_pair(JOKER_BIT)
    for a in range(52):
        assert not has_meld_pair(1 << a) and not has_meld_pair(1 << a | JOKER_BIT)
        for b in range(a + 1, 52):
            want = _pair_melds_with_a_joker(a, b)
            assert has_meld_pair(1 << a | 1 << b) is want, (card_str(a), card_str(b))
            assert has_meld_pair(1 << a | 1 << b | JOKER_BIT) is want


def test_digs_and_calls_are_listed_with_their_depth_below_the_top():
    """`draw_options` and `call_options` give (depth, card, copy), depth 0 the top card, as
    the action codec (rl/actions.py) reads them; outside a call window there are no calls
    (mutants: the depth counted from 0 or 2 below the first, or stuck at 1; calls listed in
    every phase)."""
    nine, four = parse_card("9D"), parse_card("4H")
    g = game(hands=["9S 9H 4S 4C", "2S"], pile="4H 2C 9D KC")
    assert g.draw_options() == (True, True, [(1, nine, 1), (3, four, 1)], False)
    rules = Rules(rummy_calls=True).to_dict()
    calls = game(
        rules=rules, hands=["9S 9H 5C", "2S 3S"], pile="4H 9C KC 9D", phase="call", discarder=1
    )
    assert calls.call_options() == [(0, nine, 1), (2, parse_card("9C"), 1)]
    assert game(rules=rules, hands=["9S 9H 5C", "2S 3S"], pile="4H 9C KC 9D").call_options() == []


def test_a_joker_plays_under_discard_to_go_out_while_a_card_is_left_to_discard():
    """A joker's start needs four cards in hand and its lay-off two (mutants: one card more
    required, the hand size lost, or no starts given as None)."""
    rules = {"discard_to_go_out": True, "jokers": 2}
    table = [("6C 7C 8C", 1)]
    four = game(rules=rules, hands=["9H 9S JK 5C", "2S"], pile="KD", melds=table, phase="play")
    starts, layoffs = four.joker_options()
    assert len(starts) == 2
    assert layoffs == [(parse_card("5C"), 0), (parse_card("9C"), 0)]
    assert {"meld JK=9C 9H 9S", "meld JK=9D 9H 9S", "layoff JK=5C 0"} <= {
        str(a) for a in four.legal_actions()
    }
    two = game(rules=rules, hands=["JK 5D", "2S"], pile="KD", melds=table, phase="play")
    assert two.joker_options() == ([], [(parse_card("5C"), 0), (parse_card("9C"), 0)])
    assert [str(a) for a in two.legal_actions()] == [
        "layoff JK=5C 0",
        "layoff JK=9C 0",
        "discard 5D",
        "discard JK",
    ]


def test_an_owed_joker_is_met_by_any_start_holding_a_joker_and_an_owed_card_by_itself():
    """docs/rules.md §5: a dug joker is met by any joker going down, in a set or a run; an owed
    natural card by that card in the start, a joker beside it (mutants in `natural_start`)."""
    jokers = {"jokers": 2}
    g = game(
        rules=jokers,
        hands=["9H 9S JK JK 7D 8D 2C", "2S"],
        pile="KD",
        phase="play",
        must_play="JK",
    )
    for meld in ("meld JK=9D 9H 9S", "meld 7D 8D JK=9D", "meld JK=6D 7D 8D"):
        assert g.why_illegal(Action.parse(meld)) is None, meld
    g = game(rules=jokers, hands=["8D 9D JK 2C 3C", "2S"], pile="KD", phase="play", must_play="9D")
    for meld in ("meld 8D 9D JK=10D", "meld JK=7D 8D 9D"):
        assert g.why_illegal(Action.parse(meld)) is None, meld


def test_melds_built_by_hand_hold_their_documented_fields_and_no_jokers_by_default():
    """`make_set`, `make_run` and `meld_from_cards` mark no jokers unless told; a set's `suit`
    is its mask of suits and `lo == hi` its rank (the `Meld` docstring; mutants: the defaults
    1, `is_run` None, the mask or `hi` left out)."""
    from rummy500_env.engine.melds import make_run, make_set, meld_from_cards

    nines = tuple(parse_card(c) for c in ("9C", "9D", "9H"))
    s = make_set(8, nines, (0, 0, 0))
    assert (s.is_run, s.suit, s.lo, s.hi, s.jokers) == (False, 0b0111, 8, 8, 0)
    assert s.fits == (parse_card("9S"),)
    r = make_run(1, 7, 9, (0, 0, 0))
    assert (r.is_run, r.jokers) == (True, 0)
    m = meld_from_cards(nines, (0, 0, 0))
    assert m is not None and m.jokers == 0 and m == s


def test_an_obligated_top_card_laid_off_from_a_hand_of_two_leaves_the_discard():
    """`discard_to_go_out` with `top_card_must_meld`: one card in hand, the top card taken
    makes two, one laid off, one discarded to go out (mutants: two cards required to be left,
    or the hand size lost)."""
    g = game(
        rules={"discard_to_go_out": True, "top_card_must_meld": True},
        hands=["5C", "2S 3S"],
        pile="KD 9S",
        melds=[("9C 9D 9H", 1)],
    )
    assert g.draw_options() == (True, True, [], False)
    play(g, "take", "layoff 9S 0", "discard 5C")
    assert g.is_hand_over and g.went_out == 0
