"""The ``cards`` policy network (`agents.networks.CardPolicy`) as a pure JAX function.

A JAX trainer keeps the network's weights as a dict of arrays keyed and shaped exactly like
``CardPolicy.state_dict()`` (`Params`), so weights move between the two by name: a torch
network's state dict becomes `Params` with `params_from_arrays`, and trained `Params` go back
into a torch state dict (``{k: torch.from_numpy(np.array(v))}``) that `PolicyAgent.load`
plays with the torch `CardPolicy`. `CardNetwork.apply` computes what
``CardPolicy.forward_with_value`` does, op for op (float32 results equal to rounding).

The structure (where the card and global slices lie, the pile places, the action ranges, the
meld templates) is derived from the rules by the same torch-free code as `CardPolicy`'s
constructor (`ObservationEncoder`, `ActionCodec`, `MELD_TEMPLATES`), and held in a frozen,
hashable `CardNetwork`: a static argument of `jax.jit`. Only the observation's feature part
is read, so ``apply`` takes the JAX env's `State.observation` or `raw_env`'s whole vector.
This module imports neither torch nor flax: ``jax`` and ``numpy`` only.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from rummy500_env.engine.melds import MELD_TEMPLATES
from rummy500_env.engine.rules import Rules
from rummy500_env.rl.actions import ActionCodec
from rummy500_env.rl.observation import ObservationEncoder

Params = dict[str, jax.Array]
"""Keyed exactly like ``CardPolicy.state_dict()`` (torch's names: 'embed.weight',
'blocks.0.run.weight', ..., 'value_head.bias'), same shapes (torch Linear weights are
(out, in))."""

MASKED = -1e9
"""The logit of an illegal action: `training.model.MASKED` (finite, so entropies stay
finite), restated here since that module imports torch."""
STANDARD_RANGES = ("draw", "pile", "decline", "meld", "layoff", "discard")
"""The action ranges with a card-tied head (`agents.networks.STANDARD_RANGES`); any other
range (a variant's) reads the summary."""

Slices = tuple[tuple[int, int], ...]


def _meld_incidence() -> np.ndarray[Any, np.dtype[np.float32]]:
    incidence = np.zeros((len(MELD_TEMPLATES), 52), np.float32)
    for t, cards in enumerate(MELD_TEMPLATES):
        incidence[t, list(cards)] = 1.0
    return incidence


MELD_INCIDENCE = _meld_incidence()
"""Template × card, 1 where the card is in the meld (`CardPolicy.meld_incidence`): a meld's
sum of its cards' features is one product. (Three gathers do fewer operations, but on CPU
their gradient took 25% longer at batch 1024; sums of shifted copies gained nothing.)"""


def _relu(x: jax.Array) -> jax.Array:
    """ReLU as x · (x > 0): the same values and gradient (0 at 0, as torch's) as
    `jax.nn.relu`, but XLA's CPU backend then fuses it with the matrix products around it
    instead of materialising a broadcast zero per call: the forward pass at batch 1024 runs
    in about 60% of the time."""
    return x * (x > 0)


def _linear(params: Params, name: str, x: jax.Array, bias: bool = True) -> jax.Array:
    """torch's ``nn.Linear`` named `name`: x @ weight.T (+ bias) over the last axis."""
    y = x @ params[f"{name}.weight"].T
    return y + params[f"{name}.bias"] if bias else y


@dataclasses.dataclass(frozen=True)
class CardNetwork:
    """The static structure of a CardPolicy for some rules and sizes (hashable, so it can be
    a static argument of jit). Build it with `for_rules`."""

    channels: int
    blocks: int
    hidden: int
    card_slices: Slices
    """Where the 52-wide slices lie, adjacent ones merged (`CardPolicy.card_slices`)."""
    global_slices: Slices
    """The other slices of the feature part, adjacent ones merged."""
    place_slice: tuple[int, int]
    """The ``pile_place`` slice: D rows of 52 places."""
    pile_size_at: int
    """The pile size / deck size feature (``stock_pile``'s second float)."""
    deck_size: int
    max_pile: int
    ranges: tuple[tuple[str, int, int], ...]
    """`ActionCodec.ranges()` as (name, first id, last id), in its order."""
    features_size: int
    """Floats of the observation's feature part; ``apply`` reads no further."""

    @classmethod
    def for_rules(cls, rules: Rules, channels: int, blocks: int, hidden: int) -> CardNetwork:
        """The network ``build_network(rules, {"kind": "cards", ...})`` builds, derived as
        `CardPolicy`'s constructor derives it."""
        enc, codec = ObservationEncoder(rules), ActionCodec(rules)
        card_slices: list[tuple[int, int]] = []
        global_slices: list[tuple[int, int]] = []
        for sl in enc.feature_slices.values():
            runs = card_slices if (sl.stop - sl.start) % 52 == 0 else global_slices
            if runs and runs[-1][1] == sl.start:
                runs[-1] = (runs[-1][0], sl.stop)
            else:
                runs.append((sl.start, sl.stop))
        pile = enc.slices["pile_place"]
        return cls(
            channels=channels,
            blocks=blocks,
            hidden=hidden,
            card_slices=tuple(card_slices),
            global_slices=tuple(global_slices),
            place_slice=(pile.start, pile.stop),
            pile_size_at=enc.slices["stock_pile"].start + 1,
            deck_size=rules.deck_size,
            max_pile=codec.max_pile,
            ranges=tuple((name, lo, hi) for name, (lo, hi) in codec.ranges().items()),
            features_size=enc.features_size,
        )

    @property
    def in_channels(self) -> int:
        """Card channels: the 52-wide slices of the feature part."""
        return sum(b - a for a, b in self.card_slices) // 52

    @property
    def global_size(self) -> int:
        return sum(b - a for a, b in self.global_slices)

    @property
    def num_actions(self) -> int:
        return max(hi for _, _, hi in self.ranges) + 1

    @property
    def general_size(self) -> int:
        """Outputs of ``draw_decline_other``: draw, decline and every variant range's ids."""
        return 2 + sum(hi - lo + 1 for name, lo, hi in self.ranges if name not in STANDARD_RANGES)

    def shapes(self) -> dict[str, tuple[int, ...]]:
        """Each param's shape (for checking converted weights), in state dict order."""
        c, h, k = self.channels, self.hidden, self.hidden // 4
        out: dict[str, tuple[int, ...]] = {
            "card_identity": (1, 4, 13, c),
            "depth_bias": (self.max_pile,),
            "meld_bias": (len(MELD_TEMPLATES),),
            "embed.weight": (c, self.in_channels),
            "embed.bias": (c,),
            "global_in.weight": (c, self.global_size),
            "global_in.bias": (c,),
        }
        for i in range(self.blocks):
            out[f"blocks.{i}.run.weight"] = (c, 3 * c)
            out[f"blocks.{i}.run.bias"] = (c,)
            out[f"blocks.{i}.set.weight"] = (c, c)
            out[f"blocks.{i}.whole.weight"] = (c, c)
        for name, n_out, n_in in (
            ("summary.0", h, 3 * c),
            ("discard", 1, c),
            ("layoff", 3, c),
            ("take", 1, c),
            ("meld_in", k, c),
            ("meld_out", 1, k),
            ("draw_decline_other", self.general_size, h),
            ("value_head", 1, h),
        ):
            out[f"{name}.weight"] = (n_out, n_in)
            out[f"{name}.bias"] = (n_out,)
        return out

    def apply(self, params: Params, obs: jax.Array) -> tuple[jax.Array, jax.Array]:
        """(logits (B, num_actions), values (B,)) for observations (B, F):
        CardPolicy.forward_with_value. F may be the feature part or more (the whole
        observation): only the first `features_size` floats are read. One observation (F,)
        gives (num_actions,) and () (so ``jax.vmap`` over single observations works too)."""
        if obs.ndim == 1:
            logits, values = self.apply(params, obs[None])
            return logits[0], values[0]
        if obs.ndim != 2 or obs.shape[1] < self.features_size:
            raise ValueError(
                f"observations must be (B, F) with F >= {self.features_size} (the feature "
                f"part), got {obs.shape}"
            )
        cards, g = self._trunk_inputs(params, obs)
        for i in range(self.blocks):
            cards = self._block(params, f"blocks.{i}", cards)
        flat = cards.reshape(obs.shape[0], 52, self.channels)
        summary = _relu(
            _linear(params, "summary.0", jnp.concatenate([flat.mean(1), flat.max(1), g], -1))
        )
        logits = self._logits(params, obs, flat, summary)
        values = _linear(params, "value_head", summary)[:, 0]
        return logits, values

    def _trunk_inputs(self, params: Params, obs: jax.Array) -> tuple[jax.Array, jax.Array]:
        """The embedded cards (B, 4, 13, C) and the global vector g (B, C)."""
        b = obs.shape[0]
        cards = jnp.concatenate([obs[:, a:z] for a, z in self.card_slices], axis=1)
        cards = cards.reshape(b, self.in_channels, 4, 13).transpose(0, 2, 3, 1)
        g = _linear(
            params, "global_in", jnp.concatenate([obs[:, a:z] for a, z in self.global_slices], 1)
        )
        h = _linear(params, "embed", cards) + params["card_identity"] + g[:, None, None, :]
        return _relu(h), g

    def _block(self, params: Params, name: str, h: jax.Array) -> jax.Array:
        """`CardBlock`: each card mixed with its rank neighbours (wrapping), its set mates
        (mean over suits) and the whole position (mean over cards).

        As `CardBlock` writes it: the ranks rolled both ways, concatenated, one linear layer.
        A width-3 convolution computes the same sum 10-40% faster in a lone jitted call on a
        CPU, but XLA's CPU convolution inside a loop (the trainer's `lax.scan`) made a
        gradient step 25 times slower (2 s against 73 ms at batch 1024), so it is not used."""
        neighbours = jnp.concatenate([jnp.roll(h, 1, 2), h, jnp.roll(h, -1, 2)], axis=-1)
        mixed = (
            _linear(params, f"{name}.run", neighbours)
            + _linear(params, f"{name}.set", h.mean(axis=1, keepdims=True), bias=False)
            + _linear(params, f"{name}.whole", h.mean(axis=(1, 2)), bias=False)[:, None, None, :]
        )
        return h + _relu(mixed)

    def _pile_logits(self, params: Params, obs: jax.Array, per_card: jax.Array) -> jax.Array:
        """Taking the pile down to depth d: the logit of the card at that depth (+ a bias per
        depth). Depths are read from the cards' places; a card not in the pile goes to a spare
        slot `max_pile`, which is dropped, and depths no card fills stay 0 (masked)."""
        b = obs.shape[0]
        places = obs[:, self.place_slice[0] : self.place_slice[1]].reshape(b, -1, 52)
        pile_size = obs[:, self.pile_size_at : self.pile_size_at + 1] * self.deck_size
        depth = jnp.round(pile_size[:, :, None] - places * self.deck_size).astype(jnp.int32)
        depth = jnp.where(places > 0, depth, self.max_pile)
        depth = jnp.clip(depth, 0, self.max_pile)
        # torch's scatter, as one: on CPU a one-hot product over the depths made the forward
        # pass and its gradient at batch 1024 about 10% slower
        scores = jnp.broadcast_to(per_card[:, None, :], places.shape)
        out = jnp.zeros((b, self.max_pile + 1), per_card.dtype)
        rows = jnp.arange(b)[:, None]
        out = out.at[rows, depth.reshape(b, -1)].set(scores.reshape(b, -1))
        return out[:, : self.max_pile] + params["depth_bias"]

    def _logits(
        self, params: Params, obs: jax.Array, cards: jax.Array, summary: jax.Array
    ) -> jax.Array:
        """`CardPolicy.logits_and_summary`'s logits from the per-card features (B, 52, C)."""
        b = obs.shape[0]
        meld_cards = _linear(params, "meld_in", cards)  # (B, 52, k)
        meld_sums = jnp.einsum("tn,bnk->btk", jnp.asarray(MELD_INCIDENCE), meld_cards)
        melds = _linear(params, "meld_out", _relu(meld_sums))[..., 0] + params["meld_bias"]
        general = _linear(params, "draw_decline_other", summary)
        pieces = {
            "draw": general[:, 0:1],
            "decline": general[:, 1:2],
            "pile": self._pile_logits(params, obs, _linear(params, "take", cards)[..., 0]),
            "meld": melds,
            "layoff": _linear(params, "layoff", cards).reshape(b, -1),
            "discard": _linear(params, "discard", cards)[..., 0],
        }
        at = 2
        for name, lo, hi in self.ranges:
            if name not in pieces:
                pieces[name] = general[:, at : at + hi - lo + 1]
                at += hi - lo + 1
        ordered = sorted(self.ranges, key=lambda r: r[1])
        return jnp.concatenate([pieces[name] for name, _, _ in ordered], axis=-1)


def params_from_arrays(weights: Mapping[str, Any], network: CardNetwork) -> Params:
    """Params from numpy arrays (e.g. ``{k: v.numpy() for k, v in torch_state_dict.items()}``),
    checked against ``network.shapes()``: a missing, extra or misshapen key raises ValueError
    naming it (a file's weights for other rules or sizes must not load silently)."""
    shapes = network.shapes()
    missing = [k for k in shapes if k not in weights]
    extra = sorted(k for k in weights if k not in shapes)
    if missing or extra:
        raise ValueError(
            "the weights do not fit this card network: "
            + "; ".join(
                part
                for part in (
                    f"missing {missing}" if missing else "",
                    f"unexpected {extra}" if extra else "",
                )
                if part
            )
        )
    params: Params = {}
    for name, shape in shapes.items():
        array = np.asarray(weights[name], dtype=np.float32)
        if array.shape != shape:
            raise ValueError(f"weight {name!r} has shape {array.shape}, expected {shape}")
        params[name] = jnp.asarray(array)
    return params


def from_policy(agent: Any, rules: Rules) -> tuple[CardNetwork, Params]:
    """The network and weights of a loaded policy (a `PolicyAgent` for `rules`): what the
    JAX engine's players and trainers run a policy file with. ValueError, naming the file and
    its network kind, for a network other than the card network (the only one written in
    JAX)."""
    spec = agent.metadata.get("network", {})
    if spec.get("kind") != "cards":
        raise ValueError(
            f"{agent.path} has a {spec.get('kind')!r} network; the JAX engine runs the card "
            "network only"
        )
    network = CardNetwork.for_rules(rules, spec["channels"], spec["blocks"], spec["hidden"])
    weights = {k: v.detach().cpu().numpy() for k, v in agent.network.state_dict().items()}
    return network, params_from_arrays(weights, network)


def masked_logits(logits: jax.Array, mask: jax.Array) -> jax.Array:
    """`logits` with the illegal actions' (where `mask` is False or 0) set to `MASKED`, as
    `training.model.masked_logits` does (their gradient is 0 there too)."""
    return jnp.where(mask, logits, jnp.asarray(MASKED, logits.dtype))
