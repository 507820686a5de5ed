"""Exported policy files: the shipped model, its checksum, the upgrade from format 1, and the
errors a user meets with a damaged file or wrong inputs (each message names what is wrong)."""

from __future__ import annotations

import os
import struct
import zipfile
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from rummy500_env.agents.policy import (  # noqa: E402 - after the torch check
    FORMAT_VERSION,
    PolicyAgent,
    PolicyInputError,
    PolicyLoadError,
    load_policy_file,
    main,
    upgrade_policy_file,
    weights_checksum,
)

SHIPPED = Path(__file__).resolve().parents[1] / "models" / "rummy500-ppo-standard.pt"


def weights_offset(path: Path) -> int:
    """Offset of a byte in the middle of the largest weight tensor of a torch zip file (the
    records are stored uncompressed, so this byte is part of a weight)."""
    data = path.read_bytes()
    with zipfile.ZipFile(path) as z:
        info = max((i for i in z.infolist() if "/data/" in i.filename), key=lambda i: i.file_size)
    name_len, extra_len = struct.unpack(
        "<HH", data[info.header_offset + 26 : info.header_offset + 30]
    )
    return info.header_offset + 30 + name_len + extra_len + info.file_size // 2


def test_the_shipped_model_loads_and_passes_its_checksum():
    blob = load_policy_file(SHIPPED)
    assert blob["format_version"] == FORMAT_VERSION
    assert blob["checksum"] == weights_checksum(blob["state_dict"])
    agent = PolicyAgent.load(SHIPPED, rules="standard")
    # recorded with observation version 2: it reads the feature part of today's vector
    assert agent.metadata["encoding"]["observation_version"] == 2
    assert agent.metadata["encoding"]["observation_size"] == 748
    assert agent.observation_size == 865  # the env's vector, the exact part included


def test_one_flipped_byte_in_the_shipped_weights_is_reported_corrupt(tmp_path):
    data = bytearray(SHIPPED.read_bytes())
    data[weights_offset(SHIPPED)] ^= 0x01
    bad = tmp_path / "flipped.pt"
    bad.write_bytes(bytes(data))
    torch.load(bad, weights_only=True)  # torch itself reads it without complaint
    with pytest.raises(PolicyLoadError, match=r"flipped\.pt' is corrupt: its weights do not match"):
        PolicyAgent.load(bad)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf")])
def test_non_finite_weights_are_refused_though_they_match_their_checksum(tmp_path, value):
    """A diverged run exports NaN weights with a valid checksum: they would play the first
    legal action every time, and train into more NaN; they are refused at load."""
    blob = load_policy_file(SHIPPED)
    state = dict(blob["state_dict"])
    name = sorted(k for k in state if state[k].is_floating_point())[-1]
    state[name] = state[name].clone()
    state[name].view(-1)[3] = value
    path = tmp_path / "diverged.pt"
    torch.save(blob | {"state_dict": state, "checksum": weights_checksum(state)}, path)
    with pytest.raises(PolicyLoadError) as e:
        PolicyAgent.load(path)
    message = str(e.value)
    assert f"diverged.pt' is corrupt: non-finite weights in {name!r}" in message
    assert "\n" not in message


@pytest.mark.parametrize(
    ("damage", "words"),
    [
        ("random_bytes", "is not a rummy500 policy file: it is not a zip archive"),
        ("text", "is not a rummy500 policy file: it is not a zip archive"),
        ("truncated", "is corrupt: a truncated or damaged zip archive"),
        ("torch_file_of_something_else", "is not a rummy500 policy file (no format="),
        ("pickled_module", "is not a rummy500 policy file: it holds Python objects"),
        ("missing", "no policy file at"),
    ],
)
def test_a_file_that_is_no_policy_says_which_file_and_what_is_wrong(tmp_path, damage, words):
    path = tmp_path / "p.pt"
    if damage == "random_bytes":
        path.write_bytes(os.urandom(4096))
    elif damage == "text":
        path.write_text("epochs: 3\nlearning_rate: 0.1\n")  # torch said "KeyError: 101"
    elif damage == "truncated":
        path.write_bytes(SHIPPED.read_bytes()[: SHIPPED.stat().st_size // 2])
    elif damage == "torch_file_of_something_else":
        torch.save({"weights": torch.zeros(3)}, path)
    elif damage == "pickled_module":
        torch.save(torch.nn.Linear(2, 2), path)
    with pytest.raises(PolicyLoadError) as e:
        PolicyAgent.load(path)
    assert words in str(e.value) and repr(str(path)) in str(e.value)
    assert "weights_only" not in str(e.value)  # torch's advice is not for this user


def test_a_format_1_file_is_refused_with_the_upgrade_command_and_upgrades_to_the_same_policy(
    tmp_path,
):
    blob = torch.load(SHIPPED, weights_only=True)
    old = tmp_path / "old.pt"
    torch.save({k: v for k, v in blob.items() if k != "checksum"} | {"format_version": 1}, old)
    with pytest.raises(PolicyLoadError, match=r"format_version 1.*--upgrade .*old\.pt"):
        PolicyAgent.load(old)
    assert main(["--upgrade", str(old)]) == 0
    new = load_policy_file(old)
    assert new["metadata"] == blob["metadata"]
    assert all(torch.equal(new["state_dict"][k], v) for k, v in blob["state_dict"].items())
    assert upgrade_policy_file(old) == old  # already current: checked, left as it is


def test_a_policy_for_other_rules_says_so_at_load():
    with pytest.raises(PolicyLoadError, match=r"other rules:\n  stored: .*\n  current: ") as e:
        PolicyAgent.load(SHIPPED, rules="nordic")
    assert str(e.value).endswith("no shipped policy is made for the current rules")


def test_a_refusal_names_the_shipped_policies_that_fit_and_model_finds_them(tmp_path):
    """A policy refused for other rules lists the shipped ones made for the rules asked for;
    the spec ``model`` is the shipped policy of the table's rules, and a table none fits is
    refused with the catalogue (each policy with its rules in --rules form)."""
    from rummy500_env.agents.policy import shipped_for
    from rummy500_env.agents.registry import make_agent, resolve_spec
    from rummy500_env.engine.rules import Rules

    nordic = Rules.preset("nordic")
    made = tmp_path / "nordic.pt"
    blob = torch.load(SHIPPED, weights_only=True)
    blob["metadata"] = blob["metadata"] | {"rules": nordic.to_dict()}
    torch.save(blob, made)
    with pytest.raises(PolicyLoadError, match=r"shipped policies for the current rules: standard$"):
        PolicyAgent.load(made, rules=Rules())
    assert shipped_for(Rules()) == "standard" == resolve_spec("model", Rules())
    assert resolve_spec("expert", nordic) == "expert"
    agent = make_agent("model", Rules(), seed=0)
    assert isinstance(agent, PolicyAgent) and Path(str(agent.path)).resolve() == SHIPPED.resolve()
    with pytest.raises(
        PolicyLoadError, match=r"rules nordic,players=5; shipped: .*standard \(standard\)"
    ):
        make_agent("model", Rules.preset("nordic", players=5), seed=0)


@pytest.fixture(scope="module")
def agent() -> PolicyAgent:
    return PolicyAgent.load(SHIPPED)


OBS, MASK = np.zeros(865, np.float32), np.ones(360, np.int8)


@pytest.mark.parametrize(
    ("observation", "mask", "words"),
    [
        (
            np.zeros(700, np.float32),
            MASK,
            r"observation must have shape \(865,\).*got shape \(700,\)",
        ),
        (np.zeros((4, 865), np.float32), MASK, r"shape \(865,\).*got shape \(4, 865\)"),
        (OBS, np.ones(300, np.int8), r"action_mask must have shape \(360,\).*got shape \(300,\)"),
        (
            "hand: 9S 9H",
            MASK,
            r"observation must be a numeric numpy array of shape \(865,\), got str",
        ),
        (OBS, np.zeros(360, np.int8), "no legal action"),
    ],
)
def test_act_says_what_it_expects_when_the_input_is_wrong(agent, observation, mask, words):
    with pytest.raises(PolicyInputError, match=words):
        agent.act(observation, mask)


def test_act_given_the_env_observation_dict_says_to_pass_its_parts(agent):
    obs = {"observation": OBS, "action_mask": MASK}
    with pytest.raises(
        PolicyInputError, match=r"act\(obs\['observation'\], obs\['action_mask'\]\)"
    ):
        agent.act(obs, MASK)
    assert MASK[agent.act(obs["observation"], obs["action_mask"])] == 1


# --- metadata a file could lie with (issue 20) ----------------------------------------------------


def rewritten(tmp_path: Path, network: object) -> Path:
    """The shipped policy with its metadata's network replaced (and a valid checksum)."""
    from rummy500_env.agents.policy_file import _write

    blob = load_policy_file(SHIPPED)
    path = tmp_path / "lying.pt"
    _write(path, blob["state_dict"], {**blob["metadata"], "network": network})
    return path


@pytest.mark.parametrize(
    ("network", "words"),
    [
        ({"kind": "cards", "channels": 48, "blocks": 100_000, "hidden": 256}, "blocks must be"),
        ({"kind": "cards", "channels": 10**12, "blocks": 2, "hidden": 256}, "channels must be"),
        ({"kind": "cards", "channels": 48.0, "blocks": 2, "hidden": 256}, "channels must be"),
        ({"kind": "mlp", "net_arch": [10**9], "activation": "tanh"}, "net_arch must be"),
        ({"kind": "mlp", "net_arch": [64] * 1000, "activation": "tanh"}, "net_arch must be"),
        ({"kind": "mlp", "net_arch": [64], "activation": "gelu"}, "activation must be"),
        ({"kind": "cards", "channels": 48}, "missing: ['blocks', 'hidden']"),
        ({"kind": "cards", "channels": 48, "blocks": 2, "hidden": 256, "x": 1}, "unknown"),
        ({"kind": "transformer"}, "kind 'transformer' is unknown"),
        ("cards", "must be an object"),
        ([1, 2], "must be an object"),
    ],
    ids=[
        "huge-blocks",
        "huge-channels",
        "float",
        "wide-mlp",
        "deep-mlp",
        "activation",
        "missing",
        "unknown-field",
        "unknown-kind",
        "string",
        "list",
    ],
)
def test_network_metadata_is_bounded_before_anything_is_built(tmp_path, network, words):
    """Issue 20: ``blocks: 100000`` built the network (37 s, 3.6 GB) before failing, and
    ``network: "cards"`` was a bare AttributeError."""
    path = rewritten(tmp_path, network)
    with pytest.raises(PolicyLoadError, match="network") as e:
        PolicyAgent.load(path)
    assert words in str(e.value) and repr(str(path)) in str(e.value)


def test_weights_are_checked_against_the_metadata_before_building(tmp_path, monkeypatch):
    from rummy500_env.agents import networks

    built: list[object] = []
    real = networks.CardPolicy.__init__

    def spy(self: object, *args: object, **kwargs: object) -> None:
        built.append(torch.empty(0).device)  # where the network is being built
        real(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(networks.CardPolicy, "__init__", spy)
    big = {"kind": "cards", "channels": 1024, "blocks": 64, "hidden": 8192}  # within bounds
    with pytest.raises(PolicyLoadError, match=r"do not fit the network .* embed\.weight is"):
        PolicyAgent.load(rewritten(tmp_path, big))
    assert built == [torch.device("meta")]  # only shapes were made, no weights


def test_a_pickle_that_would_run_code_is_named_unsafe_and_does_not_run(tmp_path):
    marker = tmp_path / "ran"

    class Payload:
        def __reduce__(self) -> tuple[object, ...]:
            return (os.system, (f"touch {marker}",))

    path = tmp_path / "evil.pt"
    torch.save({"format": "rummy500-policy", "x": Payload()}, path)
    with pytest.raises(PolicyLoadError) as e:
        PolicyAgent.load(path)
    message = str(e.value)
    assert "is unsafe and was not loaded" in message and "system" in message
    assert "corrupt" not in message and "weights_only" not in message
    assert not marker.exists()


# --- every metadata field checked before use (crafted files with a correct checksum) -------------


def with_metadata(
    tmp_path: Path, nested: dict[str, object] | None = None, **fields: object
) -> Path:
    """The shipped policy with metadata fields replaced (``network={...}``) and entries inside
    a field replaced (``nested={"encoding.action_size": "381"}``), under a correct checksum:
    only the metadata checks can refuse it."""
    from rummy500_env.agents.policy_file import _write

    blob = load_policy_file(SHIPPED)
    meta = {**blob["metadata"], **fields}
    for dotted, value in (nested or {}).items():
        field, key = dotted.split(".")
        meta[field] = {**meta[field], key: value}
    path = tmp_path / "crafted.pt"
    _write(path, blob["state_dict"], meta)
    return path


@pytest.mark.parametrize(
    ("changes", "words"),
    [
        (
            {"network": {"kind": "mlp", "net_arch": [64], "activation": []}},
            "network.activation must be a str ('tanh' or 'relu'), not []",
        ),
        (
            {"network": {"kind": "mlp", "net_arch": [64], "activation": {}}},
            "network.activation must be a str ('tanh' or 'relu'), not {}",
        ),
        (
            {"network": {"kind": ["cards"]}},
            "network.kind must be a str ('mlp' or 'cards')",
        ),
        (
            {"network": {"kind": "mlp", "net_arch": 64, "activation": "tanh"}},
            "network.net_arch must be a list",
        ),
        ({"nested": {"encoding.observation_version": []}}, "encoding.observation_version must"),
        ({"nested": {"encoding.action_size": "381"}}, "encoding.action_size must be an int"),
        ({"encoding": [1, 2]}, "encoding must be an object"),
        ({"package_version": ["0.1.0"]}, "package_version must be a str"),
        ({"training": {"seed": torch.zeros(2)}}, "training.seed is a Tensor"),
        ({"evaluation": {3: "x"}}, "evaluation has a key 3 that is not a str"),
        ({"wall_s": "fast"}, "wall_s must be a number"),
        ({"commit": 5}, "commit must be a str or null, not 5"),
    ],
    ids=[
        "activation-list",
        "activation-dict",
        "kind-list",
        "net_arch-int",
        "observation-version-list",
        "action-size-str",
        "encoding-list",
        "version-list",
        "tensor",
        "int-key",
        "wall_s-str",
        "commit-int",
    ],
)
def test_each_metadata_field_is_checked_before_use(tmp_path, changes, words):
    """A crafted file with a correct checksum: ``"activation": []`` was ``TypeError:
    unhashable type: 'list'``. Each is a `PolicyLoadError` naming the file, the field, the
    value and what is allowed. (An int too long to print cannot come through: torch's
    weights-only reader refuses one.)"""
    path = with_metadata(tmp_path, **changes)
    for rules in (None, "standard", "nordic"):
        with pytest.raises(Exception) as e:
            PolicyAgent.load(path, rules=rules)
        assert type(e.value) is PolicyLoadError, repr(e.value)[:300]
        assert words in str(e.value) and repr(str(path)) in str(e.value)
        assert len(str(e.value)) < 2000


def test_a_policy_exported_outside_a_git_checkout_loads(tmp_path):
    """An installed wheel has no commit to record: its policies say ``"commit": null``."""
    assert PolicyAgent.load(with_metadata(tmp_path, commit=None)).metadata["commit"] is None


def test_metadata_nested_too_deeply_is_refused(tmp_path):
    deep: object = "x"
    for _ in range(40):
        deep = [deep]
    with pytest.raises(PolicyLoadError, match=r"training\.notes\[0\]\S* is nested deeper than 16"):
        PolicyAgent.load(with_metadata(tmp_path, training={"notes": deep}))


# --- a local file or folder named like a shipped policy --------------------------------------


def test_a_folder_or_non_policy_file_named_standard_does_not_hide_the_shipped_policy(
    tmp_path, monkeypatch
):
    """``PolicyAgent.load("standard")`` in a folder holding ``standard/`` (a run folder, say)
    or a ``standard`` text file was "no policy file at 'standard'": the shipped policy loads."""
    from rummy500_env.agents.registry import make_agent, parse_spec
    from rummy500_env.engine.rules import Rules

    monkeypatch.chdir(tmp_path)
    (tmp_path / "standard").mkdir()
    (tmp_path / "standard" / "notes.txt").write_text("a run")
    assert PolicyAgent.load("standard").path == str(SHIPPED)
    assert parse_spec("standard").kind == "shipped"
    assert make_agent("standard", Rules(), seed=0).path == str(SHIPPED)  # type: ignore[attr-defined]
    (tmp_path / "standard" / "notes.txt").unlink()
    (tmp_path / "standard").rmdir()
    (tmp_path / "standard").write_text("not a policy")
    assert PolicyAgent.load("standard").path == str(SHIPPED)
    assert parse_spec("standard").kind == "shipped"


def test_a_real_policy_file_named_standard_loads_and_says_a_shipped_one_exists(
    tmp_path, monkeypatch
):
    """A path is what it names, as everywhere; the warning says both exist and how to pick."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "standard").write_bytes(SHIPPED.read_bytes())
    with pytest.warns(UserWarning, match=r"'standard' names both .* and the shipped policy"):
        agent = PolicyAgent.load("standard")
    assert agent.path == "standard"


def test_an_int_too_long_for_torchs_reader_is_named_not_called_unsafe(tmp_path):
    """torch's weights-only reader refuses a 5,000-digit int (pickle opcode LONG4): that is
    plain data, not code, so the file is refused as no policy file, not as an unsafe one."""
    path = with_metadata(tmp_path, wall_s=10**5000)
    with pytest.raises(PolicyLoadError) as e:
        PolicyAgent.load(path)
    message = str(e.value)
    assert "is not a rummy500 policy file" in message and "pickle opcode 139" in message
    assert "unsafe" not in message
