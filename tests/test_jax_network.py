"""The JAX card network (`rummy500_env.jax.network`) computes what the torch `CardPolicy` does.

A JAX trainer converts a torch network's weights into `Params`, trains them, and converts
them back into the state dict that `PolicyAgent.load` plays with the torch network: so for the
same weights both must give the same logits and values (float32, to rounding), on `raw_env`'s
observations and on the JAX env's, with deep discard piles among them (the pile head's
depths), for several rules and sizes; and the same gradients.
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import numpy as np
import pytest

jax = pytest.importorskip("jax")
torch = pytest.importorskip("torch")

import jax.numpy as jnp  # noqa: E402

import rummy500_env.jax as rj  # noqa: E402
from rummy500_env import Rules, raw_env  # noqa: E402
from rummy500_env.agents.networks import CardPolicy, build_network, state_shapes  # noqa: E402
from rummy500_env.jax.network import (  # noqa: E402
    MELD_INCIDENCE,
    CardNetwork,
    Params,
    masked_logits,
    params_from_arrays,
)
from rummy500_env.rl.actions import ActionCodec  # noqa: E402
from rummy500_env.rl.observation import ObservationEncoder  # noqa: E402
from rummy500_env.training import model  # noqa: E402

ATOL = 1e-5
"""Largest difference allowed between torch's and JAX's float32 logits and values."""
DEEP = 15
"""Each data set holds observations with a discard pile at least this deep."""


def torch_network(rules: Rules, channels: int, blocks: int, hidden: int) -> CardPolicy:
    """A seeded `CardPolicy`, its zero-initialised card identity, depth and meld biases set
    to noise so that their terms count."""
    torch.manual_seed(0)
    spec = {"kind": "cards", "channels": channels, "blocks": blocks, "hidden": hidden}
    net = build_network(rules, spec)
    assert isinstance(net, CardPolicy)
    with torch.no_grad():
        for p in (net.card_identity, net.depth_bias, net.meld_bias):
            p.add_(0.5 * torch.randn_like(p))
    return net


def converted(net: CardPolicy, rules: Rules) -> tuple[CardNetwork, Params]:
    network = CardNetwork.for_rules(
        rules, net.embed.out_features, len(net.blocks), net.value_head.in_features
    )
    weights = {k: v.detach().numpy() for k, v in net.state_dict().items()}
    return network, params_from_arrays(weights, network)


def raw_observations(rules: Rules, steps: int, seed: int) -> np.ndarray[Any, Any]:
    """`raw_env`'s whole observations over random play that mostly draws from the stock and
    discards, so the pile grows deep."""
    rng = np.random.default_rng(seed)
    env = raw_env(rules=rules)
    env.reset(seed=seed)
    codec = ActionCodec(rules)
    out = []
    while len(out) < steps:
        agent = env.agent_selection
        if env.terminations[agent] or env.truncations[agent]:
            env.reset(seed=int(rng.integers(1 << 30)))
            continue
        o = env.observe(agent)
        out.append(o["observation"].copy())
        env.step(biased_action(rng, np.flatnonzero(o["action_mask"]), codec))
    return np.stack(out)


def biased_action(rng: np.random.Generator, legal: np.ndarray[Any, Any], codec: ActionCodec) -> int:
    """Mostly a draw from the stock (or a pass on a call), then mostly a discard; else any
    legal action."""
    for quiet in (codec.DRAW, codec.PASS):
        if quiet in legal and rng.random() < 0.85:
            return quiet
    discards = legal[(legal >= codec.DISCARD) & (legal < codec.DISCARD + 52)]
    if len(discards) and rng.random() < 0.7:
        return int(rng.choice(discards))
    return int(rng.choice(legal))


def pile_sizes(rules: Rules, obs: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    at = ObservationEncoder(rules).slices["stock_pile"].start + 1
    return np.round(obs[:, at] * rules.deck_size).astype(int)


def torch_outputs(net: CardPolicy, obs: np.ndarray[Any, Any]) -> tuple[Any, Any]:
    with torch.no_grad():
        logits, values = net.forward_with_value(torch.from_numpy(obs))
    return logits.numpy(), values.numpy()


def assert_close(jax_out: tuple[jax.Array, jax.Array], torch_out: tuple[Any, Any]) -> None:
    for a, b in zip(jax_out, torch_out, strict=True):
        assert a.shape == b.shape and a.dtype == np.float32
        np.testing.assert_allclose(np.asarray(a), b, rtol=0, atol=ATOL)


RULES = {
    "standard": Rules(),
    "nordic-3p": Rules.preset("nordic", players=3),
    "4p": Rules(players=4),
    "jokers-calls": Rules.parse("standard,jokers=2,rummy_calls=true"),
    "two-decks": Rules.preset("pagat", players=5),
}


@pytest.mark.parametrize("name", list(RULES))
def test_the_structure_is_card_policys(name: str) -> None:
    """Slices, pile places, ranges, meld incidence and every weight's name, shape and order,
    for rules with the variant ranges (jokers, calls) and two decks too."""
    rules = RULES[name]
    net = torch_network(rules, 8, 2, 16)
    network = CardNetwork.for_rules(rules, 8, 2, 16)
    assert list(network.card_slices) == net.card_slices
    assert list(network.global_slices) == net.global_slices
    assert list(range(*network.place_slice)) == net.place_index.tolist()
    assert (network.pile_size_at, network.deck_size) == (net.pile_size_at, net.deck_size)
    assert (network.in_channels, network.max_pile) == (net.in_channels, net.max_pile)
    assert [(n, (lo, hi)) for n, lo, hi in network.ranges] == list(net.ranges.items())
    np.testing.assert_array_equal(MELD_INCIDENCE, net.meld_incidence.numpy())
    assert network.num_actions == ActionCodec(rules).size
    spec = {"kind": "cards", "channels": 8, "blocks": 2, "hidden": 16}
    assert list(network.shapes().items()) == list(state_shapes(rules, spec).items())
    assert hash(network) == hash(CardNetwork.for_rules(rules, 8, 2, 16))


@pytest.mark.parametrize(
    ("name", "channels", "blocks", "hidden"),
    [
        ("standard", 32, 2, 128),
        ("nordic-3p", 32, 2, 128),
        ("standard", 16, 1, 64),
        ("jokers-calls", 8, 1, 16),
        ("two-decks", 3, 0, 2),  # no block, and meld_in 0 wide (hidden // 4 = 0)
    ],
)
@pytest.mark.filterwarnings("ignore:Initializing zero-element tensors")  # torch's, hidden 2
def test_outputs_equal_torchs_on_raw_env_observations(
    name: str, channels: int, blocks: int, hidden: int
) -> None:
    """Same logits and values on `raw_env` positions, deep piles among them, whether given
    the whole observation or its feature part (neither network reads past it)."""
    rules = RULES[name]
    obs = raw_observations(rules, 300, seed=1)
    assert pile_sizes(rules, obs).max() >= DEEP
    net = torch_network(rules, channels, blocks, hidden)
    network, params = converted(net, rules)
    apply = jax.jit(network.apply)
    expected = torch_outputs(net, obs)
    features = np.ascontiguousarray(obs[:, : network.features_size])
    assert_close(torch_outputs(net, features), expected)
    assert_close(apply(params, jnp.asarray(features)), expected)
    assert_close(apply(params, jnp.asarray(obs)), expected)


def jax_env_observations(rules: str, steps: int, seed: int) -> np.ndarray[Any, Any]:
    """The JAX env's `State.observation` of the player to act, over biased random play."""
    env = rj.make(rules)
    init, step = env.init, env.step  # their cores are jitted
    codec = ActionCodec(env.rules)
    rng = np.random.default_rng(seed)
    key = jax.random.PRNGKey(seed)
    state = init(key)
    out = []
    while len(out) < steps:
        key, k1, k2 = jax.random.split(key, 3)
        if bool(state.terminated | state.truncated):
            state = init(k1)
            continue
        out.append(np.asarray(state.observation))
        legal = np.flatnonzero(np.asarray(state.legal_action_mask))
        state = step(state, jnp.int32(biased_action(rng, legal, codec)), k2)
    return np.stack(out)


def test_outputs_equal_torchs_on_jax_env_observations() -> None:
    """The trainer's input: the JAX env's observations (`raw_env`'s feature part)."""
    rules = Rules()
    obs = jax_env_observations("standard", 200, seed=2)
    assert obs.shape[1:] == rj.make("standard").observation_shape
    assert pile_sizes(rules, obs).max() >= DEEP
    net = torch_network(rules, 32, 2, 128)
    network, params = converted(net, rules)
    assert_close(jax.jit(network.apply)(params, jnp.asarray(obs)), torch_outputs(net, obs))


def test_gradients_equal_torchs() -> None:
    """`jax.grad` of a PPO-like loss (masked log-softmax, values) through `apply` gives
    torch's gradients, for weights of the trunk, the blocks and each card-tied head."""
    rules = Rules()
    obs = raw_observations(rules, 128, seed=3)[:, : ObservationEncoder(rules).features_size]
    rng = np.random.default_rng(0)
    mask = rng.random((len(obs), ActionCodec(rules).size)) < 0.2
    mask[:, 0] = True
    actions = np.argmax(mask * rng.random(mask.shape), axis=1)
    returns = rng.standard_normal(len(obs)).astype(np.float32)
    net = torch_network(rules, 16, 2, 32)
    network, params = converted(net, rules)

    def loss(params: Params) -> jax.Array:
        logits, values = network.apply(params, jnp.asarray(obs))
        logp = jax.nn.log_softmax(masked_logits(logits, jnp.asarray(mask)), -1)
        chosen = jnp.take_along_axis(logp, jnp.asarray(actions)[:, None], 1)
        entropy = -(jnp.exp(logp) * logp).sum(-1).mean()
        return -chosen.mean() + ((values - returns) ** 2).mean() - 0.01 * entropy

    value, grads = jax.jit(jax.value_and_grad(loss))(params)
    logits, values = net.forward_with_value(torch.from_numpy(obs))
    logp = torch.log_softmax(model.masked_logits(logits, torch.from_numpy(mask)), -1)
    chosen = logp.gather(1, torch.from_numpy(actions)[:, None])
    entropy = -(logp.exp() * logp).sum(-1).mean()
    t_loss = -chosen.mean() + ((values - torch.from_numpy(returns)) ** 2).mean() - 0.01 * entropy
    t_loss.backward()
    np.testing.assert_allclose(float(value), float(t_loss.detach()), rtol=1e-5)
    named = dict(net.named_parameters())
    for key in (
        "embed.weight",
        "card_identity",
        "blocks.0.run.weight",
        "blocks.1.set.weight",
        "summary.0.weight",
        "take.weight",
        "depth_bias",
        "meld_in.weight",
        "layoff.weight",
        "value_head.bias",
    ):
        expected = named[key].grad
        assert expected is not None
        scale = float(expected.abs().max())
        assert scale > 0, key
        diff = float(np.abs(np.asarray(grads[key]) - expected.numpy()).max())
        assert diff <= 1e-4 * scale, (key, diff, scale)


def test_params_go_back_into_the_torch_network() -> None:
    """Params (e.g. after training) loaded back into `CardPolicy` by name play the same."""
    rules = Rules()
    net = torch_network(rules, 8, 1, 16)
    network, params = converted(net, rules)
    params = {k: v + 0.01 for k, v in params.items()}
    other = torch_network(rules, 8, 1, 16)
    other.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in params.items()})
    obs = raw_observations(rules, 50, seed=4)
    assert_close(jax.jit(network.apply)(params, jnp.asarray(obs)), torch_outputs(other, obs))


def test_params_from_arrays_names_what_does_not_fit() -> None:
    rules = Rules()
    net = torch_network(rules, 8, 1, 16)
    network = CardNetwork.for_rules(rules, 8, 1, 16)
    weights = {k: v.numpy() for k, v in net.state_dict().items()}
    missing = {k: v for k, v in weights.items() if k != "blocks.0.set.weight"}
    with pytest.raises(ValueError, match=r"missing \['blocks.0.set.weight'\]"):
        params_from_arrays(missing, network)
    with pytest.raises(ValueError, match=r"unexpected \['blocks.1.run.bias'\]"):
        params_from_arrays({**weights, "blocks.1.run.bias": np.zeros(8)}, network)
    wrong = {**weights, "depth_bias": np.zeros(3, np.float32)}
    with pytest.raises(ValueError, match=r"'depth_bias' has shape \(3,\), expected \(50,\)"):
        params_from_arrays(wrong, network)
    with pytest.raises(ValueError, match=r"'card_identity' has shape \(1, 4, 13, 8\), expected"):
        params_from_arrays(weights, CardNetwork.for_rules(rules, 16, 1, 16))


def test_apply_jits_with_the_network_static_and_refuses_short_observations() -> None:
    """Jitted with the network bound or as a static argument (an equal one reuses the
    compile), on a batch or, vmapped, on single observations."""
    rules = Rules()
    network, params = converted(torch_network(rules, 8, 1, 16), rules)
    obs = jnp.asarray(raw_observations(rules, 6, seed=5)[:, : network.features_size])
    bound = jax.jit(network.apply)(params, obs)
    static = jax.jit(CardNetwork.apply, static_argnums=0)(network, params, obs)
    same = jax.jit(CardNetwork.apply, static_argnums=0)(
        CardNetwork.for_rules(rules, 8, 1, 16), params, obs
    )
    for a, b, c in zip(bound, static, same, strict=True):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(a, c)
    assert bound[0].shape == (6, 360) and bound[1].shape == (6,)
    one = jax.jit(network.apply)(params, obs[2])  # one observation, as under jax.vmap
    mapped = jax.jit(jax.vmap(network.apply, in_axes=(None, 0)))(params, obs)
    for a, b, c in zip(bound, one, mapped, strict=True):
        np.testing.assert_allclose(b, a[2], rtol=0, atol=ATOL)
        np.testing.assert_allclose(c, a, rtol=0, atol=ATOL)
    with pytest.raises(ValueError, match=r"F >= 748"):
        network.apply(params, obs[:, :700])


def test_masked_logits_matches_the_torch_trainers() -> None:
    logits = np.linspace(-3, 3, 12, dtype=np.float32).reshape(2, 6)
    mask = np.arange(12).reshape(2, 6) % 3 != 0
    expected = model.masked_logits(torch.from_numpy(logits), torch.from_numpy(mask)).numpy()
    got = masked_logits(jnp.asarray(logits), jnp.asarray(mask))
    assert got.dtype == jnp.float32
    np.testing.assert_array_equal(np.asarray(got), expected)


def test_the_module_imports_no_torch() -> None:
    code = "import sys, rummy500_env.jax.network; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
