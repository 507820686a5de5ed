"""The policy networks an exported policy file can hold, built from its metadata alone.

``mlp`` (deprecated: building one warns, `MLP_DEPRECATED`)
    The flat network of the first models: hidden layers over the whole observation, then one
    logit per action id. Kept so older policy files load and play as before; ``cards``
    replaces it.
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

import warnings
from typing import Any

import torch
import torch.nn as nn

from rummy500_env.engine.melds import MELD_TEMPLATES
from rummy500_env.engine.rules import Rules
from rummy500_env.rl.actions import ActionCodec
from rummy500_env.rl.observation import ObservationEncoder

KINDS = ("mlp", "cards")
"""The policy networks (what `training.ppo` trains and `PolicyAgent` plays)."""
MLP_DEPRECATED = (
    "the 'mlp' network is deprecated: the card network ('cards') replaces it; 'mlp' policy "
    "files still load and play, but train 'cards' for new ones"
)
"""What building an ``mlp`` network warns (a `FutureWarning`: shown to whoever runs a command
that trains or loads one, not only to developers, as a `DeprecationWarning` would be)."""
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

    def _trunk(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Per-card features (B, 52, C) and the position's summary (B, hidden)."""
        b = obs.shape[0]
        cards = torch.cat([obs[:, a:z] for a, z in self.card_slices], dim=1)
        cards = cards.view(b, self.in_channels, 4, 13).permute(0, 2, 3, 1)
        g = self.global_in(torch.cat([obs[:, a:z] for a, z in self.global_slices], dim=1))
        h = torch.relu(self.embed(cards) + self.card_identity + g[:, None, None, :])
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
    if kind not in KINDS:
        raise NetworkSpecError(f"network kind {kind!r:.40} is unknown: use one of {KINDS}")
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
        net = _build(rules, check_spec(spec))  # a check, not a build: no deprecation warning
    return {k: tuple(v.shape) for k, v in net.state_dict().items()}


def build_network(rules: Rules, spec: dict[str, Any]) -> nn.Module:
    """The network a policy file's ``metadata["network"]`` describes, for `rules`.

    ``{"kind": "cards", "channels": 48, "blocks": 2, "hidden": 256}`` or
    ``{"kind": "mlp", "net_arch": [256, 256], "activation": "tanh"}`` (``kind`` may be left
    out: files before the card network have none; an ``mlp`` warns `MLP_DEPRECATED`);
    `check_spec` says what is allowed.
    """
    check_spec(spec)
    if spec.get("kind", "mlp") == "mlp":
        warnings.warn(MLP_DEPRECATED, FutureWarning, stacklevel=2)
    return _build(rules, spec)


def _build(rules: Rules, spec: dict[str, Any]) -> nn.Module:
    """`build_network` of a checked spec, silently."""
    if spec.get("kind", "mlp") == "cards":
        return CardPolicy(rules, int(spec["channels"]), int(spec["blocks"]), int(spec["hidden"]))
    enc, codec = ObservationEncoder(rules), ActionCodec(rules)
    return mlp(enc.features_size, list(spec["net_arch"]), codec.size, spec["activation"])
