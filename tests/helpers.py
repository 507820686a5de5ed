"""Build engine positions from card text, filling the unused cards in where asked."""

from __future__ import annotations

import contextlib
import random
import signal
from collections.abc import Iterator
from typing import Any

from rummy500_env import Game, Rules
from rummy500_env.engine.cards import JOKER, card_str, parse_cards


def position(
    rules: str | dict[str, Any] = "standard",
    hands: list[str] | None = None,
    pile: str = "",
    melds: list[tuple[str, list[int] | int]] | None = None,
    stock: str | None = None,
    rest: str | int = "stock",
    **fields: Any,
) -> dict[str, Any]:
    """A position dict. Cards not named anywhere go to `rest`: "stock" (after any `stock`
    cards), "pile" (under the named pile), or a player's hand (an int). A meld names a joker
    as the card it stands for (``JK=9D``); the jokers of the rules not named go to `rest`."""
    r = Rules.coerce(rules)
    hands = hands or [""] * r.players
    meld_list = []
    for cards, owners in melds or []:
        cs = cards.split()
        meld_list.append(
            {"cards": cs, "owners": [owners] * len(cs) if isinstance(owners, int) else owners}
        )
    named = [c for h in hands for c in parse_cards(h)] + parse_cards(pile)
    named += [
        JOKER if c.startswith("JK=") else parse_cards(c)[0] for m in meld_list for c in m["cards"]
    ]
    named += parse_cards(stock or "")
    left = [c for c in range(52) for _ in range(r.deck_count)] + [JOKER] * r.joker_count
    for c in named:
        left.remove(c)
    rest_cards = [card_str(c) for c in left]
    hand_lists = [h.split() for h in hands]
    pile_list, stock_list = pile.split(), (stock or "").split()
    if rest == "stock":
        stock_list += rest_cards
    elif rest == "pile":
        pile_list = rest_cards + pile_list
    else:
        hand_lists[int(rest)] += rest_cards
    d: dict[str, Any] = {
        "rules": rules,
        "dealer": r.players - 1,
        "turn": 0,
        "phase": "draw",
        "hands": hand_lists,
        "stock": stock_list,
        "pile": pile_list,
        "melds": meld_list,
        "totals": [0] * r.players,
        "taken_top": None,
        "must_play": None,
        "known": [[] for _ in range(r.players)],
        "turns": 0,
        "hands_played": 0,
    }
    d.update(fields)
    return d


def game(**kwargs: Any) -> Game:
    """`Game.from_dict(position(**kwargs))`."""
    return Game.from_dict(position(**kwargs))


def legal(g: Game) -> list[str]:
    """The legal actions as text."""
    return [str(a) for a in g.legal_actions()]


def play(g: Game, *actions: str) -> Game:
    """Apply actions in order and return the game."""
    for a in actions:
        g.apply(a)
    return g


SEEN = {
    "hands": ["9S 9H 2C", "5D 6D QS"],
    "pile": "9D KC 4H",
    "melds": [("7C 8C 9C", 1)],
    "known": [[], ["QS"]],
    "totals": [100, 250],
}
"""A small position with a bit of everything a seat sees: a pile, a meld, a known card."""


def random_positions(rules: Rules, count: int, seed: int, max_moves: int = 60) -> list[Game]:
    """Positions reached by random legal play, still in a hand (for observation tests)."""
    rng = random.Random(seed)
    out = []
    for s in range(count):
        g = Game.new(rules, seed=s)
        for _ in range(rng.randrange(max_moves)):
            if g.phase not in ("draw", "play"):
                break
            g.apply(rng.choice(g.legal_actions()))
        if g.phase in ("draw", "play"):
            out.append(g)
    return out


def reshuffle_hidden(g: Game, viewer: int, rng: random.Random) -> Game:
    """The same position for `viewer`, with what it cannot see dealt again: the opponents'
    unknown cards and the stock are shuffled together and redistributed."""
    d = g.to_dict()
    hidden = list(d["stock"])
    slots = []
    hands = []
    for p, hand in enumerate(d["hands"]):
        if p == viewer:
            hands.append(list(hand))
            continue
        known = list(d["known"][p])
        kept = []
        for c in hand:
            if c in known:
                known.remove(c)
                kept.append(c)
            else:
                hidden.append(c)
                slots.append(p)
        hands.append(kept)
    rng.shuffle(hidden)
    for p, c in zip(slots, hidden, strict=False):
        hands[p].append(c)
    d["hands"], d["stock"] = hands, hidden[len(slots) :]
    return Game.from_dict(d)


@contextlib.contextmanager
def fails_after(seconds: int) -> Iterator[None]:
    """A hang (the fault under test) fails the test instead of stopping the suite."""

    def hung(signum: int, frame: Any) -> None:
        raise TimeoutError(f"still waiting after {seconds} s")

    before = signal.signal(signal.SIGALRM, hung)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, before)


def untrained_policy(path: Any, spec: dict[str, Any], rules: Rules | None = None) -> str:
    """An untrained policy file with the network `spec` (``{"kind": "cards", ...}``), for
    `rules` (standard's); its path as a string. Torch is imported here, where it is asked for."""
    from rummy500_env.agents.networks import build_network
    from rummy500_env.agents.policy_file import current_encoding, save_policy

    rules = rules or Rules()
    meta = {"rules": rules.to_dict(), "encoding": current_encoding(rules), "network": spec}
    save_policy(path, build_network(rules, spec), meta)
    return str(path)
