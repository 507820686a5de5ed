"""Build engine positions from card text, filling the unused cards in where asked."""

from __future__ import annotations

from typing import Any

from rummy500_env import Game, Rules
from rummy500_env.cards import card_str, parse_cards


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
    cards), "pile" (under the named pile), or a player's hand (an int)."""
    r = Rules.coerce(rules)
    hands = hands or [""] * r.players
    meld_list = []
    for cards, owners in melds or []:
        cs = cards.split()
        meld_list.append(
            {"cards": cs, "owners": [owners] * len(cs) if isinstance(owners, int) else owners}
        )
    named = [c for h in hands for c in parse_cards(h)] + parse_cards(pile)
    named += [c for m in meld_list for c in parse_cards(m["cards"])] + parse_cards(stock or "")
    left = [c for c in range(52) for _ in range(r.deck_count)]
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
