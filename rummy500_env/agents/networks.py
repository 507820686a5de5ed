"""The policy networks an exported policy file can hold, built from its metadata alone.

``mlp``
    The flat network of the first models: hidden layers over the whole observation, then one
    logit per action id. Kept so older policy files load and play as before.
``cards``
    A network that treats the 52 cards alike. Every 52-wide slice of the observation (hand,
    pile, table, known cards, fits, ...) becomes one input channel of a 4 × 13 suit-by-rank
    grid; the other slices (sizes, totals, phase, flags) form a global vector. Residual blocks
    mix each card with its rank neighbours in the suit (a width-3 convolution along the
    ranks, which wraps so the ace touches both the two and the king: runs), with the other
    suits of its rank (the mean over suits: sets), and with the whole position (the mean over
    cards plus the global vector). The action logits are tied to the cards they name: a
    discard's logit is read off its card's features, a lay-off's off its card's features (one
    per fit), a meld's off the sum of its three cards' features, and taking the pile down to a
    card off that card's features wherever it lies in the pile. Only draw and decline read the
    global summary. A value head on the same summary is the critic in training (the ``mlp``
    actor trains with a separate critic instead).

Why: a flat MLP must learn "a 7 of hearts next to a 6 and an 8 of hearts" separately for every
card; this network learns it once and applies it to all 52, with a fifth to a thirteenth of
the first model's weights (benchmarks/policy_networks.py compares their sizes and costs).
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn as nn

from rummy500_env.engine.melds import MELD_TEMPLATES
from rummy500_env.engine.rules import Rules
from rummy500_env.rl.actions import ActionCodec
from rummy500_env.rl.observation import ObservationEncoder

KINDS = ("mlp", "cards")
"""The policy networks (what `training.ppo` trains and `PolicyAgent` plays)."""
TABLE = "table"
"""The network kind of a table value (`TableValue`): a search's value, not a policy."""
BELIEF = "belief"
"""The network kind of a hand belief (`HandBelief`): how a search deals its worlds."""
ODDS = "odds"
"""The network kind of whole-hand odds (`HandOdds`): a belief that also weighs whole hands."""
ALL_KINDS = (*KINDS, TABLE, BELIEF, ODDS)
ROLES = {
    "mlp": "a policy",
    "cards": "a policy",
    TABLE: "a table value (the search's value of a world it dealt: psearch's table=)",
    BELIEF: "a hand belief (how the search deals its worlds: psearch's belief=)",
    ODDS: "whole-hand odds (a hand belief that weighs whole hands: psearch's belief=)",
}
"""What a file of each network kind is, for a refusal that names it."""
ACTIVATIONS = {"tanh": nn.Tanh, "relu": nn.ReLU}
STANDARD_RANGES = ("draw", "pile", "decline", "meld", "layoff", "discard")
"""The action ranges with a card-tied head; any other range (a variant's) reads the summary."""


class FeatureMLP(nn.Sequential):
    """An `nn.Sequential` over the first `in_features` floats of its input: the observation's
    feature part (the exact part after it is for decoding, not for learning; see
    `observation`)."""

    def __init__(self, in_features: int, *layers: nn.Module) -> None:
        super().__init__(*layers)
        self.in_features = in_features

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x[..., : self.in_features]
        for layer in self:
            x = layer(x)
        return x


def mlp(obs_size: int, net_arch: list[int], out_size: int, activation: str) -> FeatureMLP:
    """Hidden layers over the observation's `obs_size` features, then the outputs (the
    ``mlp`` actor, and the separate critic it trains with). Its state dict keys are those of
    the first policy files, which therefore still load."""
    act = ACTIVATIONS[activation]
    layers: list[nn.Module] = []
    last = obs_size
    for width in net_arch:
        layers += [nn.Linear(last, width), act()]
        last = width
    return FeatureMLP(obs_size, nn.Sequential(*layers), nn.Linear(last, out_size))


class CardBlock(nn.Module):
    """One residual block over card features laid out (B, suit, rank, C): each card mixed
    with its run neighbours, its set mates and the whole position.

    The run mixing is a width-3 convolution along the ranks with wrap-around padding, written
    as `torch.roll` and one linear layer over the three neighbours' features, so the whole
    network is linear layers on (B, 4, 13, C) tensors."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.run = nn.Linear(3 * channels, channels)
        self.set = nn.Linear(channels, channels, bias=False)
        self.whole = nn.Linear(channels, channels, bias=False)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        neighbours = torch.cat([torch.roll(h, 1, 2), h, torch.roll(h, -1, 2)], dim=-1)
        mixed = (
            self.run(neighbours)
            + self.set(h.mean(dim=1, keepdim=True))
            + self.whole(h.mean(dim=(1, 2)))[:, None, None, :]
        )
        return h + torch.relu(mixed)


class CardPolicy(nn.Module):
    """The ``cards`` network (see the module docstring)."""

    place_index: torch.Tensor
    meld_incidence: torch.Tensor

    def __init__(self, rules: Rules, channels: int, blocks: int, hidden: int) -> None:
        super().__init__()
        enc, codec = ObservationEncoder(rules), ActionCodec(rules)
        self.card_slices: list[tuple[int, int]] = []
        """Where the 52-wide slices lie, adjacent ones merged (slicing beats a gather)."""
        self.global_slices: list[tuple[int, int]] = []
        for sl in enc.feature_slices.values():
            runs = self.card_slices if (sl.stop - sl.start) % 52 == 0 else self.global_slices
            if runs and runs[-1][1] == sl.start:
                runs[-1] = (runs[-1][0], sl.stop)
            else:
                runs.append((sl.start, sl.stop))
        self.in_channels = sum(b - a for a, b in self.card_slices) // 52
        global_size = sum(b - a for a, b in self.global_slices)
        pile = enc.slices["pile_place"]
        self.register_buffer("place_index", torch.arange(pile.start, pile.stop), persistent=False)
        self.pile_size_at = enc.slices["stock_pile"].start + 1
        self.deck_size = rules.deck_size
        self.ranges = codec.ranges()
        self.max_pile = codec.max_pile
        incidence = torch.zeros(len(MELD_TEMPLATES), 52)
        for t, cards in enumerate(MELD_TEMPLATES):
            incidence[t, list(cards)] = 1.0
        self.register_buffer("meld_incidence", incidence, persistent=False)
        """Template × card, 1 where the card is in the meld: a meld's sum is one matmul."""

        self.embed = nn.Linear(self.in_channels, channels)
        self.card_identity = nn.Parameter(torch.zeros(1, 4, 13, channels))
        self.global_in = nn.Linear(global_size, channels)
        self.blocks = nn.ModuleList(CardBlock(channels) for _ in range(blocks))
        self.summary = nn.Sequential(nn.Linear(3 * channels, hidden), nn.ReLU())
        self.discard = nn.Linear(channels, 1)
        self.layoff = nn.Linear(channels, 3)
        self.take = nn.Linear(channels, 1)
        self.depth_bias = nn.Parameter(torch.zeros(self.max_pile))
        self.meld_in = nn.Linear(channels, hidden // 4)
        self.meld_out = nn.Linear(hidden // 4, 1)
        self.meld_bias = nn.Parameter(torch.zeros(len(MELD_TEMPLATES)))
        others = [
            (hi - lo + 1) for name, (lo, hi) in self.ranges.items() if name not in STANDARD_RANGES
        ]
        self.draw_decline_other = nn.Linear(hidden, 2 + sum(others))
        self.value_head = nn.Linear(hidden, 1)

    def _trunk(
        self, obs: torch.Tensor, extra: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Per-card features (B, 52, C) and the position's summary (B, hidden); `extra`
        (B, 4, 13, C), added to the embedded cards, is how `TableValue` adds what the
        observation leaves out."""
        b = obs.shape[0]
        cards = torch.cat([obs[:, a:z] for a, z in self.card_slices], dim=1)
        cards = cards.view(b, self.in_channels, 4, 13).permute(0, 2, 3, 1)
        g = self.global_in(torch.cat([obs[:, a:z] for a, z in self.global_slices], dim=1))
        h = self.embed(cards) + self.card_identity + g[:, None, None, :]
        h = torch.relu(h if extra is None else h + extra)
        for block in self.blocks:
            h = block(h)
        flat = h.reshape(b, 52, -1)
        summary = self.summary(torch.cat([flat.mean(1), flat.amax(1), g], dim=-1))
        return flat, summary

    def _pile_logits(self, obs: torch.Tensor, per_card: torch.Tensor) -> torch.Tensor:
        """Taking the pile down to depth d: the logit of the card at that depth (+ a bias per
        depth). Depths are read from the cards' places; slots no card fills stay 0 (masked)."""
        b = obs.shape[0]
        places = obs[:, self.place_index].view(b, -1, 52)  # (B, D, 52): (i + 1) / deck size
        pile_size = obs[:, self.pile_size_at : self.pile_size_at + 1] * self.deck_size
        depth = torch.round(pile_size[:, :, None] - places * self.deck_size).long()
        depth = torch.where(places > 0, depth, self.max_pile)  # not in the pile: a spare slot
        depth = depth.clamp(0, self.max_pile)
        scores = per_card[:, None, :].expand(-1, places.shape[1], -1)
        out = torch.zeros(b, self.max_pile + 1, dtype=per_card.dtype, device=per_card.device)
        out = out.scatter(1, depth.flatten(1), scores.flatten(1))
        return out[:, : self.max_pile] + self.depth_bias

    def forward_with_value(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(action logits, values): the actor and the critic on one trunk pass."""
        logits, summary = self.logits_and_summary(obs)
        return logits, self.value_head(summary).squeeze(-1)

    def logits_and_summary(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(action logits, the position's summary): a trainer that asks for the values later
        (RLlib's value function API) reads them off the summary with `value_head`."""
        cards, summary = self._trunk(obs)
        meld_sums = torch.matmul(self.meld_incidence, self.meld_in(cards))  # (B, 100, k)
        melds = self.meld_out(torch.relu(meld_sums)).squeeze(-1) + self.meld_bias
        general = self.draw_decline_other(summary)
        pieces = {
            "draw": general[:, 0:1],
            "decline": general[:, 1:2],
            "pile": self._pile_logits(obs, self.take(cards).squeeze(-1)),
            "meld": melds,
            "layoff": self.layoff(cards).flatten(1),
            "discard": self.discard(cards).squeeze(-1),
        }
        at = 2
        for name, (lo, hi) in self.ranges.items():
            if name not in pieces:
                pieces[name] = general[:, at : at + hi - lo + 1]
                at += hi - lo + 1
        ordered = sorted(self.ranges, key=lambda name: self.ranges[name][0])
        logits = torch.cat([pieces[name] for name in ordered], dim=-1)
        return logits, summary

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.forward_with_value(obs)[0]


CARD_LIMITS = {"channels": (1, 1024), "blocks": (0, 64), "hidden": (1, 8192)}
"""The ``cards`` sizes a policy file may name: ten to thirty times the shipped model's, so any
network trained here loads, and a file cannot make the loader build a huge network."""
MLP_LAYERS = 16
MLP_WIDTH = 8192
"""The ``mlp`` hidden layers a policy file may name, and their widest width."""
EXAMPLES = (
    '{"kind": "cards", "channels": 48, "blocks": 2, "hidden": 256} or '
    '{"kind": "mlp", "net_arch": [256, 256], "activation": "tanh"}'
)


class NetworkSpecError(ValueError):
    """A ``network`` entry of policy metadata that is not one this module builds."""


def check_spec(spec: Any) -> dict[str, Any]:
    """`spec` if it names a network `build_network` builds within the limits above; else
    `NetworkSpecError` saying which field is wrong and what is allowed. Checked before any
    building, since the sizes come from a file."""
    if not isinstance(spec, dict):
        raise NetworkSpecError(f"it must be an object such as {EXAMPLES}, not {spec!r:.80}")
    kind = spec.get("kind", "mlp")
    if kind not in ALL_KINDS:
        raise NetworkSpecError(f"network kind {kind!r:.40} is unknown: use one of {ALL_KINDS}")
    fields = ("net_arch", "activation") if kind == "mlp" else tuple(CARD_LIMITS)
    unknown = sorted(str(k)[:40] for k in set(spec) - {"kind", *fields})
    missing = [f for f in fields if f not in spec]
    if unknown or missing:
        raise NetworkSpecError(
            f"a {kind!r} network has the fields {list(fields)}"
            + (f"; unknown: {unknown[:5]}" if unknown else "")
            + (f"; missing: {missing}" if missing else "")
        )
    if kind != "mlp":
        for name, (lo, hi) in CARD_LIMITS.items():
            if not _int_in(spec[name], lo, hi):
                raise NetworkSpecError(
                    f"{name} must be an int from {lo} to {hi}, not {spec[name]!r:.40}"
                )
        return spec
    arch = spec["net_arch"]
    if not (
        isinstance(arch, list)
        and 1 <= len(arch) <= MLP_LAYERS
        and all(_int_in(w, 1, MLP_WIDTH) for w in arch)
    ):
        raise NetworkSpecError(
            f"net_arch must be a list of 1 to {MLP_LAYERS} widths, each an int from 1 to "
            f"{MLP_WIDTH}, not {arch!r:.80}"
        )
    if spec["activation"] not in ACTIVATIONS:
        raise NetworkSpecError(
            f"activation must be one of {list(ACTIVATIONS)}, not {spec['activation']!r:.40}"
        )
    return spec


def _int_in(value: Any, lo: int, hi: int) -> bool:
    return type(value) is int and lo <= value <= hi


def state_shapes(rules: Rules, spec: dict[str, Any]) -> dict[str, tuple[int, ...]]:
    """The shape of each weight of the network `spec` describes, for `rules`, found by
    building it on torch's ``meta`` device (no memory, no values): a file's weights are
    checked against it before the real network is built."""
    with torch.device("meta"):
        net = build_network(rules, spec)
    return {k: tuple(v.shape) for k, v in net.state_dict().items()}


def build_network(rules: Rules, spec: dict[str, Any]) -> nn.Module:
    """The network a policy file's ``metadata["network"]`` describes, for `rules`.

    ``{"kind": "mlp", "net_arch": [256, 256], "activation": "tanh"}`` (``kind`` may be left
    out: files before the card network have none) or
    ``{"kind": "cards", "channels": 48, "blocks": 2, "hidden": 256}`` (``"table"``,
    ``"belief"`` and ``"odds"`` with the same sizes: `TableValue`, `HandBelief`, `HandOdds`);
    `check_spec` says what is allowed.
    """
    check_spec(spec)
    kind = spec.get("kind", "mlp")
    if kind == "mlp":
        enc, codec = ObservationEncoder(rules), ActionCodec(rules)
        return mlp(enc.features_size, list(spec["net_arch"]), codec.size, spec["activation"])
    sizes = (int(spec["channels"]), int(spec["blocks"]), int(spec["hidden"]))
    if kind == "cards":
        return CardPolicy(rules, *sizes)
    if kind == TABLE:
        return TableValue(rules, *sizes)
    if kind == BELIEF:
        return HandBelief(rules, *sizes)
    if kind == ODDS:
        return HandOdds(rules, *sizes)
    raise ValueError(f"network kind {kind!r} is unknown: use one of {ALL_KINDS}")


class TableValue(nn.Module):
    """A value for search, which sees the whole table: the ``cards`` network's trunk and value
    head reading, besides a seat's observation, the hands of the other seats (`hidden_hands`,
    one input channel a seat on the same 4 × 13 grid, jokers in the global vector).

    In a world a search has dealt, every hand is known, so the value of what follows a
    candidate is a function of the world, not a guess over the unseen cards: trained on the
    outcomes of a policy's own play, it is that policy's expected hand score from the world,
    and its mean over the worlds is the candidate's value under the policy (a one-step policy
    improvement) without a rollout's noise. It starts from the policy's own trunk and value
    head, the hidden cards' weights at zero."""

    def __init__(self, rules: Rules, channels: int, blocks: int, hidden: int) -> None:
        super().__init__()
        self.card = CardPolicy(rules, channels, blocks, hidden)
        self.others = rules.players - 1
        self.width = 52 + (1 if rules.jokers else 0)
        self.hidden_cards = nn.Linear(self.others, channels, bias=False)
        nn.init.zeros_(self.hidden_cards.weight)
        self.hidden_jokers: nn.Linear | None = None
        if rules.jokers:
            self.hidden_jokers = nn.Linear(self.others, channels, bias=False)
            nn.init.zeros_(self.hidden_jokers.weight)

    def forward(self, obs: torch.Tensor, hidden: torch.Tensor) -> torch.Tensor:
        """The values of positions (observations) whose other seats hold `hidden`."""
        b = obs.shape[0]
        seats = hidden.view(b, self.others, self.width)
        cards = seats[:, :, :52].reshape(b, self.others, 4, 13).permute(0, 2, 3, 1)
        extra = self.hidden_cards(cards)
        if self.hidden_jokers is not None:
            extra = extra + self.hidden_jokers(seats[:, :, 52])[:, None, None, :]
        _, summary = self.card._trunk(obs, extra)
        values: torch.Tensor = self.card.value_head(summary).squeeze(-1)
        return values


class HandBelief(nn.Module):
    """What the other seats likely hold, from one seat's observation: the ``cards`` network's
    trunk with one logit per card and other seat (in turn order after the seat), the chance
    that the card is in that seat's hand. A search deals its worlds by it
    (`SeatView.sample_position`'s weights) rather than uniformly: the others keep the cards
    that suit them and throw the rest, and a uniform deal forgets it. Trained on the hands of
    a policy's own play; it starts from the policy's trunk."""

    def __init__(self, rules: Rules, channels: int, blocks: int, hidden: int) -> None:
        super().__init__()
        self.card = CardPolicy(rules, channels, blocks, hidden)
        self.others = rules.players - 1
        self.head = nn.Linear(channels, self.others)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """Logits (B, other seats, 52): card c in the hand of the seat that many after."""
        cards, _ = self.card._trunk(obs)
        logits: torch.Tensor = self.head(cards).transpose(1, 2)
        return logits


def belief_odds(logits: torch.Tensor) -> torch.Tensor:
    """The weights a search deals its worlds by (`SeatView.sample_position`'s), from a
    belief's logits (…, 52): the odds p / (1 - p) of each card, p kept within [0.001, 0.999]
    so that no unseen card is ruled out, and a joker's (last) the mean of the row's."""
    p = torch.sigmoid(logits.double()).clamp(1e-3, 1 - 1e-3)
    odds = p / (1 - p)
    return torch.cat([odds, odds.mean(-1, keepdim=True)], dim=-1)


class HandOdds(nn.Module):
    """A hand belief that weighs whole hands: `HandBelief`'s card-by-card odds, and a joint
    term over each whole dealt hand, the log of how much likelier the hands are under the
    real play than under the belief's own deal (a classifier of true hands against hands the
    belief dealt, trained on a policy's play: the logit of such a classifier is that log
    ratio). A card-by-card belief cannot say that a player keeps pairs and neighbours
    together; the joint term can. A search deals its worlds by the belief, a few for every
    world it keeps, and keeps them in proportion to exp(joint term): sampling importance
    resampling, so its worlds follow the whole-hand odds. The joint term starts at zero (the
    belief's deal unchanged)."""

    def __init__(self, rules: Rules, channels: int, blocks: int, hidden: int) -> None:
        super().__init__()
        self.belief = HandBelief(rules, channels, blocks, hidden)
        self.others = rules.players - 1
        self.width = 52 + (1 if rules.jokers else 0)
        span = self.others * self.width
        self.joint = nn.Sequential(
            nn.Linear(hidden + 2 * span, hidden),
            nn.ReLU(),
            nn.Linear(hidden, hidden),
            nn.ReLU(),
            nn.Linear(hidden, 1),
        )
        last = self.joint[-1]
        assert isinstance(last, nn.Linear)
        nn.init.zeros_(last.weight)
        nn.init.zeros_(last.bias)

    def context(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """What the joint term reads of a seat's observations, computed once a decision: the
        belief trunk's summary (B, hidden) and its logits (B, other seats, width; a joker:
        the row's mean)."""
        cards, summary = self.belief.card._trunk(obs)
        logits: torch.Tensor = self.belief.head(cards).transpose(1, 2)
        if self.width > 52:
            logits = torch.cat([logits, logits.mean(-1, keepdim=True)], dim=-1)
        return summary, logits

    def score(
        self, summary: torch.Tensor, logits: torch.Tensor, hidden: torch.Tensor
    ) -> torch.Tensor:
        """The joint term of dealt `hidden` hands (`hidden_hands` rows, B × others × width)
        in the context of `context`: one row each, or one row for all."""
        b = hidden.shape[0]
        held = hidden.reshape(b, -1)
        x = torch.cat(
            [summary.expand(b, -1), held, held * logits.reshape(-1, held.shape[1]).expand(b, -1)],
            dim=-1,
        )
        out: torch.Tensor = self.joint(x).squeeze(-1)
        return out

    def forward(self, obs: torch.Tensor, hidden: torch.Tensor) -> torch.Tensor:
        """The joint term of each observation's dealt hands."""
        return self.score(*self.context(obs), hidden)
