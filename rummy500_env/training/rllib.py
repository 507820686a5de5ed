"""``python -m training.rllib``: multi-agent self-play PPO on Ray RLlib, exported to the same
policy file as `training.ppo`.

Why a second trainer: `training.ppo` plays its games in one process on one machine; RLlib
spreads the sampling over any number of env runners and the learning over any number of
learners, on this machine's local Ray instance (the default) or on a Ray cluster
(``--address``). It trains the same networks (`rummy500_env.agents.networks`: the card network
``cards`` or the flat ``mlp``, chosen by the same fields) and writes the same file: a policy
that `PolicyAgent.load` and ``training.evaluate`` take unchanged.

How it is built, on RLlib's new API stack (RLModule, Learner, EnvRunner):

* The env is `rummy500_env.raw_env` in RLlib's `PettingZooEnv` (every seat is an agent, a
  turn is several steps of the same agent): `Rummy500MultiAgentEnv`, a class the config
  names, so it pickles by reference to every env runner of a cluster. Each env runner steps
  ``num_envs_per_env_runner`` of them (32 in the packaged config) and asks each module once
  per step for all the positions it plays in them. `SeededEpisodes` names the episodes by the
  seed, so a seeded run replays its opponent draw.
* Two RLModules of this package, one per network kind, both reading the ``observation``
  entry of the env's observation dict and setting the logits outside ``action_mask`` to the
  lowest float, so no illegal action is ever sampled and PPO's ratios and entropy only see
  legal ones (RLlib's default encoders refuse a Dict observation, and its action-masking
  example expects other keys; these modules need neither):
  `CardActorCritic` wraps `CardPolicy` (``network: cards``): the policy and its own value head
  on the shared trunk, as `training.ppo` trains it. Its training pass returns the trunk's
  summary as the embeddings, so the value comes from the same pass (no second trunk pass);
  the env runners' inference-only copies keep the value head (a single linear layer).
  `MaskedActorCritic` (``network: mlp``): the flat actor and a separate critic of the same
  widths; the env runners' copies drop the critic.
  Either way the export copies the actor's weights as they are.
* Self-play with an opponent pool, as `training.ppo` has: each episode the module ``learner``
  takes one seat at random and every other seat is played by one opponent drawn from the pool
  by weight (`PoolMapping`): a bot (`BotModule` runs any agent spec, ``greedy``, ``expert``, a
  policy file...) or one of ``max_snapshots`` frozen copies of the learner
  (``snapshot_0`` ...), which share the pool weight ``self``. Every ``snapshot_every`` env
  steps the oldest copy is overwritten with the learner's current weights. Only ``learner``
  is trained.
* PPO: ``learner: ppo`` (the packaged config) trains with `MatchedPPOLearner`, RLlib's PPO
  learner with `training.ppo`'s loss and Adam eps; ``learner: rllib`` with RLlib's own.
* Checkpoints are RLlib's (``algo.save_to_path``) with the run's counters inside
  (``run_state.json``); ``--resume RUN_DIR`` rebuilds the algorithm from the run's
  ``config.json`` (any flag given again overrides it, so a run can move to a cluster with more
  env runners) and restores the newest readable checkpoint.
* TensorBoard: the numeric results of every iteration (episode returns per module, losses,
  throughput) under ``tb/``; periodic evaluations against the bots go to
  ``evaluations.csv`` and ``learning_curve.png`` as in `training.ppo`: the run folder,
  checkpoint files, export, evaluations and report are `rummy500_env.training.run`'s.

    python -m training.rllib                                     # the packaged config "rllib"
    python -m training.rllib --num-env-runners 2 --total-timesteps 200000
    python -m training.rllib --address auto --num-env-runners 32 --num-learners 2   # a cluster
    python -m training.rllib --resume runs/rllib_standard_hand_s0

Env steps (``total_timesteps``, ``snapshot_every`` ...) count every seat's decisions, as RLlib
counts them; the learner makes about 1/players of them (``learner_steps`` in ``state.json``
counts those, the figure `training.ppo`'s timesteps count). Needs the ``rllib`` extra
(``pip install torch==2.13.0 -e ".[rllib]"``); this module imports without it, and says so
when it is used.
"""

from __future__ import annotations

import math
import random
import sys
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

import rummy500_env
from rummy500_env.agents import networks
from rummy500_env.agents.networks import CardPolicy
from rummy500_env.agents.policy_file import current_encoding
from rummy500_env.agents.registry import make_agent
from rummy500_env.engine.errors import Rummy500Error
from rummy500_env.engine.numbers import read_json
from rummy500_env.engine.rules import Rules
from rummy500_env.training import run as training_run
from rummy500_env.training import settings as training_settings
from rummy500_env.training.run import (
    Every,
    RunFolder,
    check_before_work,
    stop_if_diverged,
    trainer_main,
    write_json,
)
from rummy500_env.training.settings import (
    ConfigError,
    NetworkKindArgs,
    SelfPlayArgs,
    args_of,
    check_ppo,
    command_line,
    require,
    require_network,
    require_positive_ints,
)

try:  # RLlib's classes are the bases of the modules below; without the extra, say so on use
    import torch
    from ray.rllib.algorithms.ppo.ppo import (
        LEARNER_RESULTS_KL_KEY,
        LEARNER_RESULTS_VF_EXPLAINED_VAR_KEY,
    )
    from ray.rllib.algorithms.ppo.torch.ppo_torch_learner import PPOTorchLearner
    from ray.rllib.callbacks.callbacks import RLlibCallback
    from ray.rllib.core.columns import Columns
    from ray.rllib.core.learner.learner import ENTROPY_KEY, POLICY_LOSS_KEY, VF_LOSS_KEY
    from ray.rllib.core.rl_module.apis import InferenceOnlyAPI, ValueFunctionAPI
    from ray.rllib.core.rl_module.rl_module import RLModule
    from ray.rllib.core.rl_module.torch import TorchRLModule
    from ray.rllib.env.wrappers.pettingzoo_env import PettingZooEnv
    from ray.rllib.evaluation.postprocessing import Postprocessing
    from ray.rllib.utils.torch_utils import explained_variance

    from rummy500_env.training.model import ADAM_EPS, ppo_loss

    RAY_MISSING: ModuleNotFoundError | None = None
except ModuleNotFoundError as _missing:
    RAY_MISSING = _missing

LEARNER = "learner"
"""The module id of the trained policy."""
SNAPSHOT = "snapshot_{}"
"""Module ids of the frozen copies of the learner."""
INSTALL = 'pip install torch==2.13.0 -e ".[rllib]"'


LEARNERS = ("ppo", "rllib")
"""The ``learner`` choices: training.ppo's loss and optimizer, or RLlib's PPO learner."""


class RayMissingError(Rummy500Error):
    """Ray RLlib is not installed: names the extra that installs it."""


def require_ray() -> None:
    """Raise `RayMissingError` (with the install command) unless RLlib imported."""
    if RAY_MISSING is not None:
        raise RayMissingError(
            f"training.rllib needs Ray RLlib ({RAY_MISSING}); install the rllib extra: {INSTALL}"
        )


@dataclass
class Args(NetworkKindArgs, SelfPlayArgs):
    """Multi-agent self-play PPO for Rummy 500 on Ray RLlib."""

    TRAINER = "rllib"
    STEPS = "env steps"
    UNWRITTEN: ClassVar[dict[str, object]] = {"network": "mlp"}
    """A run's ``config.json`` from before training.rllib trained the card network names no
    network: it is the ``mlp`` it was."""

    total_timesteps: int = 100_000
    """Env steps to sample (every seat's decisions; a resumed run continues to the same total)."""
    opponents: dict[str, float] = field(
        default_factory=lambda: {"random": 0.1, "greedy": 0.4, "expert": 0.3, "self": 0.2}
    )
    """Sampling weights of the opponent pool, by agent spec (see `rummy500_env.agents.registry`);
    "self" is shared by the frozen snapshots of the learner."""
    max_snapshots: int = 3
    """Frozen copies of the learner in the pool. The first starts as the initial learner; the
    others are untrained networks of the same kind until the rotation reaches them (the learner
    starts untrained too, so they play alike)."""
    eval_every: int = 50_000
    """Env steps between evaluations against the bots."""
    eval_games: int = 20
    """Games (duplicate deals, both seats) per bot at each periodic evaluation."""
    address: str | None = None
    """Ray cluster to join ("auto" on a cluster node, or "ray://HEAD:10001"); None starts a
    local Ray instance with `num_cpus` CPUs."""
    num_cpus: int = 2
    """CPUs of the local Ray instance, raised to what the env runners and learners reserve
    plus one for evaluations (ignored with `address`)."""
    num_env_runners: int = 1
    """Remote env runners (sampling actors); 0 samples in the driver."""
    num_envs_per_env_runner: int = 1
    """Environments each env runner steps as a batch."""
    num_cpus_per_env_runner: float = 1.0
    """CPUs Ray reserves for each env runner."""
    sample_timeout_s: float = 600.0
    """Seconds RLlib waits for an env runner's share of an iteration before it drops that
    share (RLlib's default, 60, drops whole iterations on a busy machine)."""
    num_learners: int = 0
    """Remote learners (data-parallel); 0 learns in the driver."""
    num_cpus_per_learner: float = 1.0
    """CPUs Ray reserves for each remote learner."""
    num_gpus_per_learner: float = 0.0
    """GPUs Ray reserves for each learner (the learner uses a GPU when this is > 0)."""
    train_batch_size: int = 4000
    """Env steps sampled per training iteration and learner (RLlib's
    train_batch_size_per_learner); the learner trains on its own seat's share."""
    batch_size: int = 256
    """Minibatch size (RLlib's minibatch_size)."""
    n_epochs: int = 4
    """Passes over each batch (RLlib's num_epochs)."""
    learning_rate: float = 1e-4
    """Adam step size."""
    gamma: float = 0.995
    """Discount factor."""
    gae_lambda: float = 0.95
    """GAE lambda (RLlib's lambda_)."""
    clip_range: float = 0.1
    """PPO clip range (RLlib's clip_param)."""
    ent_coef: float = 0.003
    """Entropy bonus (RLlib's entropy_coeff)."""
    vf_coef: float = 0.5
    """Value loss weight (RLlib's vf_loss_coeff)."""
    kl_coeff: float = 0.2
    """Initial weight of RLlib's adaptive KL penalty (0 turns it off)."""
    max_grad_norm: float | None = None
    """Gradient norm clip (RLlib's grad_clip, by global norm); None: no clip."""
    learner: str = "rllib"
    """PPO's loss and optimizer: "ppo" (`MatchedPPOLearner`: training.ppo's, see
    docs/rllib.md) or "rllib" (RLlib's own PPO learner). The packaged config says which;
    "rllib" when a config (an older run's config.json) does not."""

    def evaluation_backend(self, final: bool) -> dict[str, Any]:
        """Evaluation games run as Ray tasks on the training's own Ray instance or cluster."""
        return {"workers": max(1, int(self.num_cpus)), "ray": True, "address": self.address}

    def validate(self) -> None:
        """Raise `ConfigError` for values that cannot train, naming what is allowed."""
        super().validate()
        check_ppo(self)
        require_network(self)
        require_positive_ints(
            self, "num_cpus", "num_envs_per_env_runner", "train_batch_size", "batch_size"
        )
        for name in ("num_env_runners", "num_learners"):
            value = getattr(self, name)
            require(self, type(value) is int and value >= 0, name, "use an int >= 0")
        for name in ("num_cpus_per_env_runner", "num_cpus_per_learner", "num_gpus_per_learner"):
            require(self, getattr(self, name) >= 0, name, "use a number >= 0")
        require(self, self.sample_timeout_s > 0, "sample_timeout_s", "use a number of seconds > 0")
        require(self, self.kl_coeff >= 0, "kl_coeff", "use a number >= 0")
        require(
            self,
            self.max_grad_norm is None or self.max_grad_norm > 0,
            "max_grad_norm",
            "use a number > 0, or null for no clip",
        )
        require(self, self.learner in LEARNERS, "learner", f"use one of {LEARNERS}")
        require(
            self,
            self.batch_size <= self.train_batch_size,
            "batch_size",
            f"use at most train_batch_size = {self.train_batch_size}",
        )


def args_from_dict(data: dict[str, Any]) -> Args:
    """Args from a dict, rejecting unknown fields with the list of known ones."""
    return args_of(Args, data)


def parse_args(argv: list[str]) -> tuple[Args, bool]:
    """(args, resuming) from the command line, as `training.ppo` reads its own."""
    return command_line(Args, argv, __doc__)


# --- the opponent pool


def bot_module_id(spec: str) -> str:
    """A module id for a bot spec that is also a safe folder name in checkpoints."""
    safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in spec)
    return f"bot_{safe}"


def opponent_pool(args: Args) -> dict[str, tuple[str | None, float]]:
    """Opponent module id -> (agent spec, or None for a snapshot of the learner; weight)."""
    pool: dict[str, tuple[str | None, float]] = {}
    for name, weight in args.opponents.items():
        if weight <= 0:
            continue
        if name == "self":
            for k in range(args.max_snapshots):
                pool[SNAPSHOT.format(k)] = (None, weight / args.max_snapshots)
        else:
            pool[bot_module_id(name)] = (name, weight)
    return pool


class PoolMapping:
    """RLlib's agent-to-module mapping for self-play: per episode, ``learner`` takes one seat
    at random and one opponent drawn from the pool by weight takes every other seat.

    RLlib asks once per agent and episode, each agent on its own, so every answer derives from
    the episode's id alone: all the seats of one episode agree on who is who. `SeededEpisodes`
    names the episodes by the run's seed, so the draw replays.
    """

    def __init__(self, players: int, opponents: list[str], weights: list[float]) -> None:
        self.players = players
        self.opponents = list(opponents)
        self.weights = list(weights)

    def draw(self, episode_id: str) -> tuple[int, str]:
        """(the learner's seat, the opponents' module id) of an episode."""
        rng = random.Random(zlib.crc32(episode_id.encode()))
        seat = rng.randrange(self.players)
        return seat, rng.choices(self.opponents, weights=self.weights)[0]

    def __call__(self, agent_id: str, episode: Any, **kwargs: Any) -> str:
        seat, opponent = self.draw(str(episode.id_))  # a MultiAgentEpisode's unique id
        return LEARNER if agent_id == f"player_{seat}" else opponent


def episode_id(seed: int | None, runner: int, env: int, count: int) -> str:
    """The id `SeededEpisodes` gives the `count`-th episode of env `env` of env runner
    `runner`: unique in a run (RLlib keys episodes by it) and the same in a run of the same
    seed, so `PoolMapping`'s draw from it replays."""
    return f"s{seed}-r{runner}-e{env}-{count}"


# --- the environment and the modules


ACTOR_PREFIX = {"cards": "net.", "mlp": "pi."}
"""Where each kind's exported network lies in its RLModule's state (`CardActorCritic.net`,
`MaskedActorCritic.pi`)."""


def module_config(args: Args) -> dict[str, Any]:
    """The learner's (and its frozen copies') model_config: the rules and the network spec."""
    return {"rules": args.game_rules().to_dict(), "network": args.network_spec()}


def masked(logits: Any, mask: Any) -> Any:
    """`logits` with every action outside `mask` at the lowest float: never sampled, and
    PPO's ratios and entropy see only the legal ones."""
    return logits.masked_fill(mask == 0, torch.finfo(logits.dtype).min)


if RAY_MISSING is None:

    class Rummy500MultiAgentEnv(PettingZooEnv):  # type: ignore[misc]  # ray is untyped
        """The bare AEC env in RLlib's `PettingZooEnv`, built from RLlib's env config
        (``rules``, ``episode``). The config names this class, which pickles by reference to
        every env runner, rather than a name in Tune's registry: env runners on the nodes of a
        cluster started with ``ray start`` did not find the registered name."""

        def __init__(self, config: dict[str, Any]) -> None:
            rules, episode = config.get("rules", "standard"), config["episode"]
            super().__init__(rummy500_env.raw_env(rules=rules, episode=episode))

    class CardActorCritic(TorchRLModule, ValueFunctionAPI):  # type: ignore[misc]  # ray is untyped
        """The card network (`CardPolicy`) with its own value head, as `training.ppo` trains
        it, for the env's observation dict and its action mask.

        ``net`` is exactly the exported network (the export copies its weights unchanged,
        value head included, as `training.ppo`'s file holds it). model_config: ``{"rules":
        <Rules dict>, "network": {"kind": "cards", "channels": ..., "blocks": ...,
        "hidden": ...}}``. `_forward_train` also returns the trunk's position summary as
        ``Columns.EMBEDDINGS``, and `compute_values` reads the value off it, so a training pass
        runs the trunk once for both the logits and the values. The env runners' inference-only
        copies drop nothing: the value head is one linear layer of ``hidden + 1`` weights.
        """

        net: CardPolicy

        def setup(self) -> None:
            cfg = self.model_config
            net = networks.build_network(Rules.from_dict(cfg["rules"]), dict(cfg["network"]))
            assert isinstance(net, CardPolicy), cfg["network"]
            self.net = net

        def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
            obs = batch[Columns.OBS]
            return {
                Columns.ACTION_DIST_INPUTS: masked(self.net(obs["observation"]), obs["action_mask"])
            }

        def _forward_train(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
            obs = batch[Columns.OBS]
            logits, summary = self.net.logits_and_summary(obs["observation"])
            return {
                Columns.ACTION_DIST_INPUTS: masked(logits, obs["action_mask"]),
                Columns.EMBEDDINGS: summary,
            }

        def compute_values(self, batch: dict[str, Any], embeddings: Any = None) -> Any:
            if embeddings is None:  # e.g. RLlib's advantage estimation: one whole pass
                return self.net.forward_with_value(batch[Columns.OBS]["observation"])[1]
            return self.net.value_head(embeddings).squeeze(-1)

    class MaskedActorCritic(TorchRLModule, ValueFunctionAPI, InferenceOnlyAPI):  # type: ignore[misc]  # ray is untyped
        """The flat ``mlp`` actor and a separate critic for the env's observation dict, with
        the action mask.

        ``pi`` is the exported ``mlp`` actor (the export copies its weights unchanged), ``vf``
        a critic of the same widths; model_config: `module_config`'s (both read the
        observation's feature part, as `PolicyAgent` does). Env runners build it without the
        critic (inference only).
        """

        def setup(self) -> None:
            cfg = self.model_config
            rules, spec = Rules.from_dict(cfg["rules"]), dict(cfg["network"])
            self.pi = networks.build_network(rules, spec)
            size = int(current_encoding(rules)["observation_size"])
            self.vf = networks.mlp(size, list(spec["net_arch"]), 1, str(spec["activation"]))

        def get_non_inference_attributes(self) -> list[str]:
            return ["vf"]

        def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
            obs = batch[Columns.OBS]
            return {
                Columns.ACTION_DIST_INPUTS: masked(self.pi(obs["observation"]), obs["action_mask"])
            }

        def compute_values(self, batch: dict[str, Any], embeddings: Any = None) -> Any:
            return self.vf(batch[Columns.OBS]["observation"]).squeeze(-1)

    class SeededEpisodes(RLlibCallback):  # type: ignore[misc]  # ray is untyped
        """Names every new episode by `episode_id` (the seed, the env runner, its env and a
        count) instead of RLlib's random uuid, so that the opponent pool's draw, which
        `PoolMapping` derives from the id, replays with the run's seed. Each env runner holds
        its own instance."""

        def __init__(self) -> None:
            super().__init__()
            self.count = 0

        def on_episode_created(
            self, *, episode: Any, env_runner: Any = None, env_index: int = 0, **kwargs: Any
        ) -> None:
            self.count += 1
            runner = env_runner.worker_index if env_runner is not None else 0
            seed = env_runner.config.seed if env_runner is not None else None
            episode.id_ = episode_id(seed, runner, env_index, self.count)

    class MatchedPPOLearner(PPOTorchLearner):  # type: ignore[misc]  # ray is untyped
        """RLlib's PPO learner with `training.ppo`'s loss and optimizer, so the two trainers
        differ only in how they sample.

        RLlib's own loss takes the squared value error (not half of it) clamped at
        ``vf_clip_param``, and its advantages are standardised once over the whole batch,
        with the extra step its GAE appends to every episode chunk (masked out of the loss,
        not out of the mean and deviation); its Adam keeps torch's eps of 1e-8. Here the loss
        is `training.model.ppo_loss` itself on the minibatch's real steps (the appended ones
        dropped): advantages standardised per minibatch, half the squared value error
        unclipped, the same entropy over the legal actions; the optimizer is Adam with
        `ADAM_EPS`. RLlib's GAE (with its bootstrap at the chunk edges) and its gradient clip by
        global norm stay: they compute what training.ppo computes (docs/rllib.md, and
        ``benchmarks/ppo_loss_parity.py`` checks it on one batch).
        """

        def configure_optimizers_for_module(self, module_id: str, config: Any = None) -> None:
            params = self.get_parameters(self._module[module_id])
            self.register_optimizer(
                module_id=module_id,
                optimizer=torch.optim.Adam(params, eps=ADAM_EPS),
                params=params,
                lr_or_lr_schedule=config.lr,
            )

        def compute_loss_for_module(
            self, *, module_id: str, config: Any, batch: dict[str, Any], fwd_out: dict[str, Any]
        ) -> Any:
            module = self.module[module_id].unwrapped()
            logits = fwd_out[Columns.ACTION_DIST_INPUTS]
            values = module.compute_values(batch, embeddings=fwd_out.get(Columns.EMBEDDINGS))
            mb = {
                "masks": batch[Columns.OBS]["action_mask"] != 0,
                "actions": batch[Columns.ACTIONS],
                "logprobs": batch[Columns.ACTION_LOGP],
                "advantages": batch[Postprocessing.ADVANTAGES],
                "returns": batch[Postprocessing.VALUE_TARGETS],
            }
            # the real steps: RLlib's GAE appends one to every episode chunk (loss mask False)
            real = batch.get(Columns.LOSS_MASK, slice(None))
            logits, values = logits[real], values[real]
            mb = {k: v[real] for k, v in mb.items()}
            entropy_coeff = self.entropy_coeff_schedulers_per_module[module_id].get_current_value()
            out = ppo_loss(
                logits, values, mb, config.clip_param, config.vf_loss_coeff, entropy_coeff
            )
            loss = out["loss"]
            with torch.no_grad():
                kl = ((out["ratio"] - 1) - out["log_ratio"]).mean()  # training.ppo's estimate
            if config.use_kl_loss:  # RLlib's adaptive penalty, when asked for
                dist = module.get_train_action_dist_cls()
                old = dist.from_logits(batch[Columns.ACTION_DIST_INPUTS][real])
                kl = old.kl(dist.from_logits(logits)).mean()
                loss = loss + self.curr_kl_coeffs_per_module[module_id] * kl
            self.metrics.log_dict(
                {
                    POLICY_LOSS_KEY: out["policy"],
                    VF_LOSS_KEY: out["value"],
                    ENTROPY_KEY: out["entropy"],
                    LEARNER_RESULTS_KL_KEY: kl,
                    LEARNER_RESULTS_VF_EXPLAINED_VAR_KEY: explained_variance(mb["returns"], values),
                },
                key=module_id,
                window=1,
            )
            return loss

    MODULES = {"cards": CardActorCritic, "mlp": MaskedActorCritic}
    """The RLModule class of each network kind."""

    class BotModule(RLModule):  # type: ignore[misc]  # ray is untyped
        """A fixed opponent: any agent spec (``greedy``, ``expert``, a policy file...) playing
        its seats, never trained. model_config: ``{"spec": ..., "rules": <Rules dict>,
        "seed": int}``."""

        def setup(self) -> None:
            cfg = self.model_config
            self.agent = make_agent(cfg["spec"], Rules.from_dict(cfg["rules"]), cfg["seed"])

        def _forward_inference(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
            obs = batch[Columns.OBS]
            observations = np.asarray(obs["observation"])
            masks = np.asarray(obs["action_mask"])
            actions = [self.agent.act(o, m) for o, m in zip(observations, masks, strict=True)]
            return {Columns.ACTIONS: np.asarray(actions, dtype=np.int64)}

        def _forward_exploration(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
            return self._forward_inference(batch)

        def _forward_train(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
            raise NotImplementedError(
                f"{self.model_config['spec']} is a fixed opponent: it is never trained "
                "(policies_to_train holds only the learner)"
            )


# --- the algorithm


def build_config(args: Args) -> Any:
    """The PPOConfig: env, modules, opponent pool and every scale knob of `args`."""
    require_ray()
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    rules = args.game_rules()
    probe = rummy500_env.raw_env(rules=rules)
    obs_space = probe.observation_space(probe.possible_agents[0])
    act_space = probe.action_space(probe.possible_agents[0])
    module, model = MODULES[args.network], module_config(args)
    pool = opponent_pool(args)

    def spec(module: Any, model_config: dict[str, Any]) -> Any:
        return RLModuleSpec(
            module_class=module,
            observation_space=obs_space,
            action_space=act_space,
            model_config=model_config,
        )

    specs = {LEARNER: spec(module, model)}
    for k, (mid, (bot, _)) in enumerate(pool.items()):
        specs[mid] = (
            spec(module, model)
            if bot is None
            else spec(BotModule, {"spec": bot, "rules": rules.to_dict(), "seed": args.seed + k})
        )
    mapping = PoolMapping(rules.players, list(pool), [w for _, w in pool.values()])
    return (
        PPOConfig()
        .environment(
            Rummy500MultiAgentEnv,
            env_config={"rules": rules.to_dict(), "episode": args.episode},
            # RLlib's checker steps random, unmasked actions, which the bare env refuses.
            disable_env_checking=True,
        )
        .env_runners(
            num_env_runners=args.num_env_runners,
            num_envs_per_env_runner=args.num_envs_per_env_runner,
            num_cpus_per_env_runner=args.num_cpus_per_env_runner,
            sample_timeout_s=args.sample_timeout_s,
        )
        .learners(
            num_learners=args.num_learners,
            num_cpus_per_learner=args.num_cpus_per_learner,
            num_gpus_per_learner=args.num_gpus_per_learner,
        )
        .training(
            train_batch_size_per_learner=args.train_batch_size,
            minibatch_size=args.batch_size,
            num_epochs=args.n_epochs,
            lr=args.learning_rate,
            gamma=args.gamma,
            lambda_=args.gae_lambda,
            clip_param=args.clip_range,
            entropy_coeff=args.ent_coef,
            vf_loss_coeff=args.vf_coef,
            kl_coeff=args.kl_coeff,
            use_kl_loss=args.kl_coeff > 0,
            grad_clip=args.max_grad_norm,
            learner_class=MatchedPPOLearner if args.learner == "ppo" else None,
        )
        .multi_agent(
            policies=set(specs),
            policy_mapping_fn=mapping,
            policies_to_train=[LEARNER],
        )
        .rl_module(rl_module_spec=MultiRLModuleSpec(rl_module_specs=specs))
        .callbacks(SeededEpisodes)
        .debugging(seed=args.seed, log_level="WARN")
    )


def local_cpus(args: Args) -> int:
    """The CPUs of a local Ray instance: ``num_cpus``, or more if the env runners and learners
    reserve them all, so that one is always left for the evaluation tasks (Ray would queue
    them for ever). Ray's CPUs are slots for scheduling, not cores."""
    reserved = (
        args.num_env_runners * args.num_cpus_per_env_runner
        + args.num_learners * args.num_cpus_per_learner
    )
    return max(args.num_cpus, math.ceil(reserved) + 1)


def start_ray(args: Args) -> None:
    """Join the cluster at ``args.address``, or start a local Ray instance (`local_cpus`)."""
    require_ray()
    import ray

    if not ray.is_initialized():
        if args.address:
            ray.init(address=args.address, log_to_driver=True)
        else:
            ray.init(
                num_cpus=local_cpus(args),
                include_dashboard=False,
                object_store_memory=256 * 2**20,
                log_to_driver=True,
            )


# --- weights: snapshots and the exported network


def learner_weights(algo: Any) -> dict[str, Any]:
    """The learner module's state (numpy arrays by parameter name), from the learner group."""
    weights: dict[str, Any] = algo.learner_group.get_weights(module_ids=[LEARNER])[LEARNER]
    return weights


def actor_weights(weights: dict[str, Any], args: Args) -> dict[str, Any]:
    """The exported network's part of a module's state (`ACTOR_PREFIX`), keys as in the
    module: for ``cards`` all of it (its value head is part of the network), for ``mlp``
    the actor without the separate critic."""
    prefix = ACTOR_PREFIX[args.network]
    return {k: v for k, v in weights.items() if k.startswith(prefix)}


def policy_network(weights: dict[str, Any], args: Args) -> Any:
    """The learner's network as the torch module `PolicyAgent` loads
    (`networks.build_network` of the run's `network_spec`)."""
    import torch

    net = networks.build_network(args.game_rules(), args.network_spec())
    prefix = ACTOR_PREFIX[args.network]
    actor = actor_weights(weights, args)
    net.load_state_dict({k.removeprefix(prefix): torch.as_tensor(v) for k, v in actor.items()})
    return net


def learner_policy(algo: Any, args: Args) -> Any:
    """The learner as the policy network that is exported and evaluated."""
    return policy_network(learner_weights(algo), args)


def export_policy(
    algo: Any, args: Args, path: str | Path, timesteps: int, extra: dict[str, Any] | None = None
) -> None:
    """Write the learner as an exported policy file (`run.export_policy`)."""
    training_run.export_policy(learner_policy(algo, args), args, path, timesteps, extra)


def take_snapshot(algo: Any, state: dict[str, Any], args: Args) -> str | None:
    """Copy the learner's weights into the oldest frozen copy (on the learners and every env
    runner); returns its module id, or None when the pool has no snapshots."""
    if opponent_pool(args).get(SNAPSHOT.format(0)) is None:
        return None
    slot = SNAPSHOT.format(state["next_snapshot"] % args.max_snapshots)
    weights = learner_weights(algo)
    algo.learner_group.set_weights({slot: weights})  # where checkpoints read it
    # To the env runners without a weights sequence number: RLlib's own sync numbers the
    # weights by learner update, and a runner that has seen this update's number would keep
    # its old copy; a state without one is always applied. Their inference-only copies hold
    # the exported network only (the mlp's critic is dropped there).
    actor = {"rl_module": {slot: actor_weights(weights, args)}}
    algo.env_runner_group.foreach_env_runner(
        lambda runner: runner.set_state(actor), local_env_runner=True
    )
    state["next_snapshot"] += 1
    state["snapshots"][slot] = state["timesteps"]
    return slot


# --- results of an iteration


def scalars(result: dict[str, Any], prefix: str = "") -> dict[str, float]:
    """The numeric leaves of an RLlib result under ``env_runners`` and ``learners``, by
    slash-joined path (TensorBoard tags)."""
    out: dict[str, float] = {}
    for key, value in result.items():
        tag = f"{prefix}{key}"
        if isinstance(value, dict) and (prefix or key in ("env_runners", "learners")):
            out.update(scalars(value, tag + "/"))
        elif prefix and isinstance(value, (int, float, np.number)) and not isinstance(value, bool):
            out[tag] = float(value)
    return out


def learner_losses(result: dict[str, Any]) -> dict[str, float]:
    """The learner module's losses in an RLlib result (``learners/learner/*loss*``: the total,
    the policy's, the value function's ...), to stop a run that diverged."""
    figures = result.get("learners", {}).get(LEARNER, {})
    return {
        key: float(value)
        for key, value in figures.items()
        if "loss" in key and isinstance(value, (int, float, np.number))
    }


def sampled(result: dict[str, Any]) -> int:
    """Env steps sampled in one training iteration; an iteration without any (every env
    runner failed) is an error rather than a loop that never ends."""
    steps = int(result.get("env_runners", {}).get("num_env_steps_sampled", 0))
    if steps <= 0:
        raise Rummy500Error(
            "a training iteration sampled no env steps: every env runner failed (see its errors "
            "above) or took longer than sample_timeout_s; raise --sample-timeout-s or lower "
            "--train-batch-size on a busy machine"
        )
    return steps


# --- checkpoints and training

COUNTERS = "run_state.json"
"""The run's counters at a checkpoint, saved inside its folder beside RLlib's files."""


def save_checkpoint(algo: Any, run: RunFolder, state: dict[str, Any]) -> Path:
    """The algorithm (RLlib's ``save_to_path``) and the run's counters, as one checkpoint
    folder (`Checkpoints.save`: atomic, the last K kept)."""

    def write(folder: Path) -> None:
        algo.save_to_path(str(folder.resolve()))
        write_json(folder / COUNTERS, state)

    return run.checkpoints.save(state, write)


def check_network(state: dict[str, Any], args: Args, where: Path) -> None:
    """Raise `ConfigError` unless the counters `state` (of a checkpoint, or a run's
    ``state.json``) were saved by a run of the network `args` asks for. Counters without a
    ``network`` entry come from before training.rllib trained the card network: an ``mlp``."""
    wanted = args.network_spec()
    saved = state.get("network", {"kind": "mlp"})
    other = saved != wanted if "network" in state else wanted["kind"] != "mlp"
    if other:
        raise ConfigError(
            f"{where} holds network {saved} but the run's config asks for {wanted}: resume "
            "with the run's own config.json (drop the --network, --channels, --blocks, "
            "--hidden, --net-arch or --activation given)"
        )


class DamagedCheckpointError(Rummy500Error):
    """A checkpoint's counters file cannot be read: `Checkpoints.load` skips that checkpoint
    (saying why) for the one before, as for any other damage to a checkpoint."""


def counters(path: Path) -> dict[str, Any]:
    """A checkpoint's counters (its `COUNTERS` file) as a dict; a `DamagedCheckpointError`
    naming the file when it is not UTF-8, not JSON (cut short, nested too deeply, a number
    too long to read) or not an object."""
    what = repr(str(path))
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        raise DamagedCheckpointError(f"{what}: not UTF-8 text") from None
    data = read_json(text, what, DamagedCheckpointError)
    if not isinstance(data, dict):
        raise DamagedCheckpointError(f"{what}: a {type(data).__name__}, not a JSON object")
    return data


def restore(algo: Any, path: Path, args: Args | None = None) -> dict[str, Any]:
    """Restore the algorithm from checkpoint `path` and return the run's counters there; a
    checkpoint of another network than `args` asks for is refused (`check_network`). A
    checkpoint written before checkpoints held their counters resumes when the run's
    ``state.json`` names it (its last one)."""
    own = path / COUNTERS
    if own.is_file():
        state = counters(own)
    else:
        saved = path.parent.parent / "state.json"
        if not saved.is_file():
            raise FileNotFoundError(f"no {COUNTERS} in it, and no state.json beside it")
        state = training_settings.read_json(saved)  # damaged: a ConfigError naming it, not a skip
        if state.get("checkpoint") != path.name:
            raise FileNotFoundError(f"no {COUNTERS} in it, and state.json names another")
    if args is not None:
        check_network(state, args, path)
    algo.restore_from_path(str(path.resolve()))
    return state


def iterate(algo: Any, args: Args, run: RunFolder, state: dict[str, Any]) -> None:
    """Train until ``total_timesteps``: snapshots, checkpoints and evaluations on the way."""
    start = state["timesteps"]
    snapshot = Every(args.snapshot_every, start)
    checkpoint = Every(args.checkpoint_every, start)
    evaluation = Every(args.eval_every, start)
    while state["timesteps"] < args.total_timesteps:
        t = time.time()
        result = algo.train()
        new = sampled(result)
        state["timesteps"] += new
        state["iterations"] += 1
        modules = result["env_runners"].get("num_module_steps_sampled", {})
        state["learner_steps"] = state.get("learner_steps", 0) + int(modules.get(LEARNER, 0))
        steps = state["timesteps"]
        for tag, value in scalars(result).items():
            run.writer.add_scalar(tag, value, steps)
        where = f"iteration {state['iterations']} ({steps:,} env steps)"
        stop_if_diverged(learner_losses(result), where, run.path)  # before it is saved anywhere
        returns = result["env_runners"].get("module_episode_returns_mean", {})
        shown = f"{returns[LEARNER]:+.3f}" if LEARNER in returns else "n/a"
        print(
            f"iteration {state['iterations']}: {steps} env steps ({new / (time.time() - t):.0f}"
            f"/s), {state['learner_steps']} learner steps, learner mean episode return {shown}",
            flush=True,
        )
        if snapshot.due(steps):  # first, so that a checkpoint holds it
            take_snapshot(algo, state, args)
        if steps < args.total_timesteps and evaluation.due(steps):
            policy = learner_policy(algo, args)
            run.evaluate(policy, steps, args.eval_games, learner_steps=state["learner_steps"])
        if checkpoint.due(steps):  # after the evaluation (`run.Checkpoints`)
            save_checkpoint(algo, run, state)


def learn(algo: Any, args: Args, run: RunFolder, resume: bool, began: float) -> Path:
    """Restore or start, train, checkpoint, then the final evaluation and export."""
    if resume:
        state = run.checkpoints.load(lambda path: restore(algo, path, args))
        print(f"resumed from {state['checkpoint']} at {state['timesteps']} env steps")
        state["network"] = args.network_spec()  # a checkpoint from before it had none: mlp
        state["encoding"] = current_encoding(args.game_rules())  # checked on parsing
    else:
        state = {"timesteps": 0, "iterations": 0, "checkpoint": None, "next_snapshot": 0}
        state |= {"snapshots": {}, "wall_s": 0.0, "learner_steps": 0}
        state["network"] = args.network_spec()  # checked on resume (`check_network`)
        state["encoding"] = current_encoding(args.game_rules())  # and this (`check_resume`)
        take_snapshot(algo, state, args)  # the first frozen copy; the rest start untrained
    iterate(algo, args, run, state)
    state["wall_s"] = state.get("wall_s", 0.0) + time.time() - began
    save_checkpoint(algo, run, state)
    return run.finish(learner_policy(algo, args), state)


def train(args: Args, resume: bool = False) -> Path:
    """Train (or resume) and return the path of the exported policy."""
    require_ray()
    import ray

    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    began = time.time()
    saved = args.run_path / "state.json"
    if resume and saved.is_file():  # before the minutes of building the algorithm
        check_network(training_settings.read_json(saved), args, saved)
    check_before_work(args, resume)
    run = RunFolder(args, resume)
    run.announce()
    owns_ray = not ray.is_initialized()
    start_ray(args)
    try:
        algo = build_config(args).build_algo()
        try:
            return learn(algo, args, run, resume, began)
        finally:
            algo.stop()
    finally:
        run.writer.close()
        if owns_ray:
            ray.shutdown()


def main(argv: list[str] | None = None) -> int:
    return trainer_main(parse_args, train, argv)


if __name__ == "__main__":
    sys.exit(main())
