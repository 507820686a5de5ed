"""The policy networks: the card network's logits are tied to the cards they name, it fits
every rules configuration, and policy files of either kind load and play."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from rummy500_env.agents.networks import CardPolicy, build_network  # noqa: E402
from rummy500_env.agents.policy import PolicyAgent, current_encoding, save_policy  # noqa: E402
from rummy500_env.engine.cards import parse_card  # noqa: E402
from rummy500_env.engine.game import Game  # noqa: E402
from rummy500_env.engine.rules import Rules  # noqa: E402
from rummy500_env.rl.actions import ActionCodec  # noqa: E402
from rummy500_env.rl.observation import ObservationEncoder  # noqa: E402
from rummy500_env.rl.rummy500_v0 import raw_env  # noqa: E402

SPEC = {"kind": "cards", "channels": 8, "blocks": 1, "hidden": 16}


@pytest.mark.parametrize(
    "rules",
    [Rules(), Rules(players=3), Rules(players=5), Rules.preset("nordic", players=4)],
    ids=["standard", "3p", "5p-two-decks", "nordic-4p"],
)
def test_card_network_gives_one_logit_per_action_id_for_any_rules(rules):
    net = build_network(rules, SPEC)
    enc = ObservationEncoder(rules)
    obs = torch.rand(3, enc.size)
    logits, values = net.forward_with_value(obs)
    assert logits.shape == (3, ActionCodec(rules).size) and values.shape == (3,)
    assert torch.isfinite(logits).all()


def zero_network() -> CardPolicy:
    net = build_network(Rules(), SPEC)
    with torch.no_grad():
        for p in net.parameters():
            p.zero_()
    return net


def test_a_discard_logit_is_read_off_its_own_card():
    """A feature that lights one card's hand channel moves that card's discard logit only."""
    net = zero_network()
    hand = ObservationEncoder(Rules()).slices["hand"]
    with torch.no_grad():
        net.embed.weight[0, 0] = 1.0  # channel 0 of each card: its hand feature
        net.discard.weight[0, 0] = 1.0
    obs = torch.zeros(1, ObservationEncoder(Rules()).size)
    card = parse_card("9D")
    obs[0, hand.start + card] = 1.0
    logits = net(obs)[0]
    codec = ActionCodec(Rules())
    discards = logits[codec.DISCARD : codec.DISCARD + 52]
    assert int(discards.argmax()) == card and discards[card] > 0
    assert torch.count_nonzero(discards) == 1


def test_taking_the_pile_down_to_a_card_reads_that_cards_logit_at_its_depth():
    """The pile logit at depth d is the take score of the card lying d below the top."""
    game = Game.new(Rules(), seed=4)
    codec, enc = ActionCodec(Rules()), ObservationEncoder(Rules())
    while len(game.pile) < 4:  # draw and discard until the pile holds a few cards
        game.apply("draw")
        game.apply(next(a for a in game.legal_actions() if a.kind == "discard"))
    obs = torch.as_tensor(enc.encode(game, game.current_player))[None]
    net = zero_network()
    buried = game.pile[-3]  # depth 2
    with torch.no_grad():
        net.card_identity[0, buried // 13, buried % 13, 0] = 1.0
        net.take.weight[0, 0] = 1.0
    pile_logits = net(obs)[0][codec.PILE : codec.PILE + codec.max_pile]
    assert int(pile_logits.argmax()) == 2 and pile_logits[2] > 0
    assert torch.count_nonzero(pile_logits) == 1


def test_a_meld_logit_sums_its_three_cards():
    net = zero_network()
    from rummy500_env.engine.melds import MELD_TEMPLATES

    cards = MELD_TEMPLATES[60]
    with torch.no_grad():
        for c in cards:
            net.card_identity[0, c // 13, c % 13, 0] = 1.0
        net.meld_in.weight[0, 0] = 1.0
        net.meld_out.weight[0, 0] = 1.0
    with torch.no_grad():
        logits = net(torch.zeros(1, ObservationEncoder(Rules()).size))[0]
    codec = ActionCodec(Rules())
    melds = logits[codec.MELD : codec.MELD + len(MELD_TEMPLATES)]
    assert int(melds.argmax()) == 60 and float(melds[60]) == pytest.approx(3.0)


@pytest.mark.parametrize(
    "spec", [SPEC, {"kind": "mlp", "net_arch": [16], "activation": "relu"}], ids=["cards", "mlp"]
)
def test_a_policy_file_of_either_kind_loads_and_stays_in_the_mask(tmp_path, spec):
    rules = Rules()
    net = build_network(rules, spec)
    meta = {"rules": rules.to_dict(), "encoding": current_encoding(rules), "network": spec}
    save_policy(tmp_path / "p.pt", net, meta)
    agent = PolicyAgent.load(tmp_path / "p.pt")
    env = raw_env(episode="hand")
    env.reset(seed=1)
    for _ in range(30):
        o = env.observe(env.agent_selection)
        a = agent.act(o["observation"], o["action_mask"])
        assert o["action_mask"][a]
        env.step(a)
        if all(env.terminations.values()):
            break
    batch = agent.act_batch(np.stack([o["observation"]] * 2), np.stack([o["action_mask"]] * 2))
    assert batch.shape == (2,)


def test_building_or_loading_an_mlp_warns_that_the_card_network_replaces_it(tmp_path):
    """The ``mlp`` network is deprecated, not removed: building one (a file's spec without a
    ``kind`` is one) warns once, a `FutureWarning` naming the card network, and so does
    loading a file of one, which still plays; the card network warns nothing."""
    import warnings

    rules = Rules()
    old = {"net_arch": [16], "activation": "relu"}
    for spec in (old, {"kind": "mlp", **old}):
        with pytest.warns(FutureWarning, match="the card network .'cards'. replaces it") as got:
            net = build_network(rules, spec)
        assert len([w for w in got if w.category is FutureWarning]) == 1
    meta = {"rules": rules.to_dict(), "encoding": current_encoding(rules), "network": old}
    save_policy(tmp_path / "p.pt", net, meta)
    with pytest.warns(FutureWarning, match="'mlp' network is deprecated") as got:
        agent = PolicyAgent.load(tmp_path / "p.pt")
    assert len([w for w in got if w.category is FutureWarning]) == 1
    mask = np.ones(ActionCodec(rules).size, dtype=np.int8)
    assert 0 <= agent.act(np.zeros(ObservationEncoder(rules).size, np.float32), mask) < mask.size
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        build_network(rules, SPEC)


def test_an_unknown_network_kind_in_a_policy_file_is_a_clear_error(tmp_path):
    from rummy500_env.agents.policy import PolicyLoadError

    rules = Rules()
    meta = {
        "rules": rules.to_dict(),
        "encoding": current_encoding(rules),
        "network": {"kind": "transformer"},
    }
    save_policy(tmp_path / "p.pt", build_network(rules, SPEC), meta)
    with pytest.raises(PolicyLoadError, match="network kind 'transformer' is unknown"):
        PolicyAgent.load(tmp_path / "p.pt")
