"""Card notation at its documented public address (``from rummy500_env.cards import
parse_card, parse_cards, card_str``); the module itself is `rummy500_env.engine.cards`."""

from rummy500_env.engine.cards import (
    JOKER,
    Card,
    CardParseError,
    card_str,
    cards_str,
    parse_card,
    parse_cards,
)

__all__ = ["JOKER", "Card", "CardParseError", "card_str", "cards_str", "parse_card", "parse_cards"]
