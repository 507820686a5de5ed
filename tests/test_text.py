"""The text protocol (rummy500_env.text.protocol): prompts carry exactly the seat's information
state, replies are read leniently, and the offline baseline: bots and the shipped policy
deciding from the parsed prompt play exactly as they do through the env."""

from __future__ import annotations

import json
import random

import pytest

from rummy500_env import Game, Rules
from rummy500_env.agents.ask import Exchange, ReplyCounts, ReplyPolicy, ask
from rummy500_env.agents.expert import ExpertAgent
from rummy500_env.agents.llm import ThroughText
from rummy500_env.agents.registry import make_agent
from rummy500_env.engine.notation import Action
from rummy500_env.evaluation.arena import play
from rummy500_env.text.protocol import (
    PromptReadError,
    ReplyError,
    find_action,
    prompt_json,
    read_prompt,
    read_prompt_json,
    refusal,
    render_prompt,
    rules_text,
    tool_schema,
)

TABLES = {
    "2p": Rules(),
    "4p": Rules.preset("pagat", players=4),
    "2p-jokers": Rules(jokers=2),
    "4p-jokers-calls": Rules.preset("pagat", players=4, jokers=2, rummy_calls=True),
    "6p-nordic": Rules.preset("nordic", players=6),
}


@pytest.mark.parametrize("name", list(TABLES))
def test_every_prompt_reads_back_to_the_seat_view_and_the_legal_actions(name: str) -> None:
    rules = TABLES[name]
    game, rng = Game.new(rules, seed=8), random.Random(8)
    for _ in range(700):
        if game.phase == "game_over":
            break
        if game.phase == "hand_over":
            game.next_hand()
            continue
        seat, legal = game.current_player, game.legal_actions()
        view = game.seat_view(seat)
        for limit in (30, 0):  # listed one a line, and grouped by kind
            text = render_prompt(view, legal, full_list_limit=limit)
            assert read_prompt(text) == (view, legal)
        as_json = json.loads(json.dumps(prompt_json(view, legal)))
        assert read_prompt_json(as_json) == (view, legal)
        game.apply(rng.choice(legal))
    assert rules_text(rules) == rules_text(Rules.parse(rules_text(rules)))


def test_a_prompt_is_refused_when_it_is_not_one() -> None:
    with pytest.raises(PromptReadError):
        read_prompt("hello")
    game = Game.new(Rules(), seed=1)
    text = render_prompt(game.seat_view(0), game.legal_actions())
    with pytest.raises(PromptReadError, match="legal actions"):
        read_prompt(text.replace("\n  draw\n", "\n"))
    with pytest.raises(PromptReadError):
        read_prompt_json({"protocol": "other"})


def test_replies_are_read_leniently_the_last_bracketed_action_first() -> None:
    assert find_action("[draw]") == Action.parse("draw")
    assert find_action("I could [take] but [draw] is better") == Action.parse("draw")
    assert find_action('{"action": "dig 9D"}') == Action.parse("dig 9D")
    assert find_action('```json\n{"action": "discard 10h"}\n```') == Action.parse("discard 10H")
    assert find_action("I will meld 9S 9H 9D and stop.") == Action.parse("meld 9D 9H 9S")
    assert find_action("[I'll discard 5C]") == Action.parse("discard 5C")  # bracketed prose
    assert find_action("layoff JK=10C 2 please") == Action.parse("layoff JK=10C 2")
    for nonsense in ("", "no idea", "[[]]", '{"move": 3}', "withdraw"):
        with pytest.raises(ReplyError, match="no action found"):
            find_action(nonsense)


def test_a_refusal_is_the_engines_reason() -> None:
    game = Game.new(Rules(), seed=1)
    view, legal = game.seat_view(0), game.legal_actions()
    a = Action("discard", (view.hand[0],))
    assert refusal(view, legal, a) == f"{a} is illegal: {game.why_illegal(a)}"
    assert refusal(view, legal, legal[0]) is None
    schema = tool_schema(legal)
    assert schema["function"]["parameters"]["properties"]["action"]["enum"] == [
        str(x) for x in legal
    ]


def baseline_pairs(
    rules: Rules, spec: str, seeds: range, episode: str = "game"
) -> tuple[list[object], list[object]]:
    direct, through = [], []
    for seed in seeds:
        seats = [make_agent(spec, rules, seed) for _ in range(rules.players)]
        r = play(seats, rules, seed=seed, episode=episode)
        direct.append((r.winner, r.totals, r.hand_scores))
        wrapped = [ThroughText(make_agent(spec, rules, seed), rules) for _ in range(rules.players)]
        r = play(wrapped, rules, seed=seed, episode=episode)
        through.append((r.winner, r.totals, r.hand_scores))
        for w in wrapped:
            assert w.counts.fallbacks == 0 and w.counts.first_try == w.counts.decisions > 0
    return direct, through


@pytest.mark.parametrize("name", ["2p", "4p", "2p-jokers", "4p-jokers-calls"])
def test_expert_through_the_parsed_prompt_plays_as_through_the_env(name: str) -> None:
    direct, through = baseline_pairs(TABLES[name], "expert", range(3))
    assert through == direct


def test_the_shipped_model_through_the_parsed_prompt_plays_as_through_the_env() -> None:
    torch = pytest.importorskip("torch", reason="the shipped policy needs torch (the train extra)")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # one-decision forward passes: more threads only contend
    try:
        check_the_shipped_model_through_text()
    finally:
        torch.set_num_threads(threads)


def check_the_shipped_model_through_text() -> None:
    direct, through = baseline_pairs(Rules(), "model", range(2), episode="hand")
    assert through == direct
    # a whole game against Expert
    rules = Rules()
    for seed in range(2):
        plain = play([make_agent("model", rules, seed), ExpertAgent(rules)], rules, seed=seed)
        text = play(
            [ThroughText(make_agent("model", rules, seed), rules), ExpertAgent(rules)],
            rules,
            seed=seed,
        )
        assert (text.winner, text.totals, text.hand_scores) == (
            plain.winner,
            plain.totals,
            plain.hand_scores,
        )


DEEP = '{"action": ' * 100_000
"""JSON nested deeper than the parser's recursion limit."""


def test_deeply_nested_json_or_a_huge_number_in_a_reply_is_unreadable_not_a_crash() -> None:
    """Issue 12 of the third probe: `find_action` caught only `JSONDecodeError`, so a reply
    nested too deeply (`RecursionError`) or holding a number too long to read (`ValueError`)
    crashed `ask`. Such a reply is read on like any other that is no JSON object."""
    with pytest.raises(ReplyError, match="no action found"):
        find_action(DEEP)
    assert find_action(DEEP + " [draw]") == Action.parse("draw")
    assert find_action('{"action": "draw", "n": ' + "1" * 5000 + "}") == Action.parse("draw")
    game = Game.new(Rules(), seed=1)
    view, legal = game.seat_view(0), game.legal_actions()
    counts = ReplyCounts()
    chosen = ask(view, legal, lambda _: DEEP, ReplyPolicy(), counts, random.Random(0))
    assert chosen == legal[0]
    assert (counts.replies, counts.unreadable, counts.fallbacks) == (3, 3, 1)


@pytest.mark.parametrize(
    "reply",
    [
        json.dumps({"action": "x" * 1_000_000}),
        json.dumps({"action": "meld 9S 9H " + "9D " * 300_000}),
        "I would meld 9S 9H " + "9D " * 300_000,
    ],
    ids=["no-kind", "long-meld", "long-meld-in-prose"],
)
def test_a_long_reply_is_sent_back_as_a_bounded_excerpt(reply: str) -> None:
    """Issue 6 of the third probe: the refusal quoted the whole reply, so each retry's prompt
    (and the record of it) grew by the reply's size."""
    game = Game.new(Rules(), seed=1)
    view, legal = game.seat_view(0), game.legal_actions()
    prompts: list[str] = []
    refusals: list[str | None] = []

    def answer(prompt: str) -> str:
        prompts.append(prompt)
        return reply

    def log(exchange: Exchange) -> None:
        refusals.append(exchange.refusal)

    ask(view, legal, answer, ReplyPolicy(retries=2), ReplyCounts(), random.Random(0), log)
    assert len(prompts) == 3 and prompts[1].startswith("REFUSED: ")
    assert all(len(p) < len(prompts[0]) + 1_000 for p in prompts[1:])
    assert all(why is not None and len(why) < 1_000 for why in refusals)
