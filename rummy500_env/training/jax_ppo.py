"""``python -m training.jax_ppo``: PPO that lives on the JAX device, in the PureJaxRL style.

One jitted call per update plays a rollout of many games (`lax.scan` over the env's steps, the
games `vmap`ped) and trains on it (`lax.scan` over epochs and minibatches): the game
(`rummy500_env.jax`), the card network (`rummy500_env.jax.network`, the same weights as the
torch `CardPolicy`), its opponents (a frozen snapshot of itself, the JAX ports of `random`
and `greedy`, `rummy500_env.jax.bots`, and card-network policy files), GAE and Adam never
leave the device. Python only runs between updates: snapshots, checkpoints, evaluations, logs.
The run folder, the exported policy file and the final evaluation are `training.ppo`'s
(`training.run`), so `PolicyAgent.load`, ``training.evaluate``, the ladder and the play page
take its policies unchanged.

    python -m training.jax_ppo                          # the packaged config "jax_ppo"
    python -m training.jax_ppo --total-timesteps 2000000 --n-games 256
    python -m training.jax_ppo --resume runs/jax_ppo_standard_hand_s0
    python -m training.jax_ppo --opponents '{standard: 0.3, greedy: 0.4, self: 0.3}'

How it differs from `training.ppo`:

- Every game takes one step per scan step, whoever is to act: the learner samples from its
  policy, the other seats from their opponent. The learner's decisions are the steps where its
  seat acted (about 1 in `players`); the others' rewards to the learner (a hand the opponent
  ends) are added to the learner's decision before them (`advantages`). A rollout therefore
  holds a varying count of learner decisions; the timesteps count those, as
  `training.ppo`'s do.
- Games are split into fixed blocks by opponent (`opponent_blocks`: the pool's weights over
  `n_games`), so each opponent is computed on its own games only. The "self" block plays one
  snapshot per rollout, drawn from the pool.
- A resumed run continues exactly: a checkpoint holds the games in play too, and every random
  key is derived from the seed and the update count.
- The opponents are those that play inside the jitted rollout: ``self``, ``random``,
  ``greedy``, and policy files with the card network (a path, a shipped name, or ``model``
  for the shipped one made for the rules), each run by `rummy500_env.jax.network` from the
  file's weights and playing its most likely legal action, as the agent spec of that file
  plays; the run keeps each file's SHA-256 and refuses to resume against a file changed since.
  ``expert``, the searches and ``mlp`` policies are `training.ppo`'s. The evaluation plays the
  package's bots (ExpertAgent included) through `training.run`.
- The games are split between every device it is given, in this process or in several
  (`DeviceArgs`: `devices`, `coordinator`), with the arithmetic of one device.

The rules are those the JAX engine plays (`rummy500_env.jax.SUPPORTED`): one deck, 2 to 4
players, no jokers or calls; `training.ppo` trains the rest.
"""

from __future__ import annotations

import functools
import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple, Protocol

import numpy as np
import torch

from rummy500_env.agents.networks import build_network
from rummy500_env.agents.policy import PolicyAgent
from rummy500_env.agents.policy_file import current_encoding
from rummy500_env.agents.registry import AgentSpecError, parse_spec, resolve_spec
from rummy500_env.agents.shipped import policy_path
from rummy500_env.engine.errors import RulesError, Rummy500Error
from rummy500_env.engine.rules import Rules
from rummy500_env.training.model import ADAM_EPS
from rummy500_env.training.run import (
    SNAPSHOTS,
    Every,
    RunFolder,
    check_before_work,
    check_checkpoint,
    export_policy,
    progress_line,
    run_snapshot,
    stop_if_diverged,
    trainer_main,
)
from rummy500_env.training.settings import (
    ConfigError,
    NetworkArgs,
    PlaysFiles,
    PPOArgs,
    args_of,
    check_ppo,
    check_rollout_memory,
    command_line,
    require,
    require_network,
    require_positive_ints,
)

try:
    import jax
    import jax.numpy as jnp
    from jax.experimental import multihost_utils
    from jax.sharding import PartitionSpec
except ImportError as e:  # pragma: no cover - tested with jax hidden
    raise ImportError(
        'training.jax_ppo needs JAX, which is not installed: pip install "rummy500_env[jax,train]"'
    ) from e

from rummy500_env.jax import Env, State, bots, make
from rummy500_env.jax.network import (
    CardNetwork,
    Params,
    from_policy,
    masked_logits,
    params_from_arrays,
)

Array = jax.Array
JAX_OPPONENTS = ("self", "greedy", "random")
"""The pool's names this trainer plays inside its jitted rollout beside policy files."""
POLICY_KINDS = ("policy", "shipped")
"""Agent spec kinds (`registry.parse_spec`) of the policy files it plays (``model`` resolves to
a shipped name first)."""
ADAM_BETAS = (0.9, 0.999)
"""torch's Adam betas (its eps is `training.ppo`'s, `training.model.ADAM_EPS`)."""


@dataclass
class DeviceArgs:
    """The devices a JAX trainer's games are sharded over (`Trainer.place`), in this process
    or, with `coordinator`, in several (`jax.distributed`)."""

    devices: int | str = "all"
    """JAX devices to share the games between: a count, or "all" (every device: this
    process's, or with `coordinator` every process's). The games are split evenly (n_games
    must divide), the weights copied to every device, and the gradients summed across them:
    the same arithmetic as on one device."""
    coordinator: str | None = None
    """HOST:PORT of process 0, to train as one of `num_processes` processes (one a host, say):
    `jax.distributed.initialize`. None: this process alone."""
    num_processes: int = 1
    """Processes of a distributed run (with `coordinator`)."""
    process_id: int = 0
    """This process's index in a distributed run, 0 to num_processes - 1. Process 0 writes the
    run folder; process i > 0 writes its own, ``RUN/process_i``."""

    def device_count(self) -> int:
        return jax.device_count() if self.devices == "all" else int(self.devices)

    def join_run(self) -> None:
        """Join the distributed run (`coordinator`): first, before any JAX computation."""
        if self.coordinator is not None:
            require(
                self,
                type(self.num_processes) is int and self.num_processes >= 1,
                "num_processes",
                "use an int >= 1",
            )
            require(
                self,
                type(self.process_id) is int and 0 <= self.process_id < self.num_processes,
                "process_id",
                f"use 0 to num_processes - 1 = {self.num_processes - 1}",
            )
            join(self.coordinator, self.num_processes, self.process_id)
            require(
                self,
                self.devices == "all",
                "devices",
                'a distributed run uses every process\'s devices: leave devices at "all"',
            )
            run = Path(getattr(self, "run_path"))  # noqa: B009  # TrainArgs' property
            mine = f"process_{self.process_id}"
            if self.process_id > 0 and run.name != mine:
                setattr(self, "run_dir", str(run / mine))  # noqa: B010  # TrainArgs' field

    def check_devices(self, n_games: int) -> None:
        """Raise `ConfigError` unless `devices` is "all" or a count of the devices that divides
        `n_games`."""
        have = jax.device_count()
        require(
            self,
            self.devices == "all" or (type(self.devices) is int and 1 <= self.devices <= have),
            "devices",
            f'use "all" or a count from 1 to {have} (JAX sees {have} {jax.default_backend()} '
            "device(s))",
        )
        require(
            self,
            n_games % self.device_count() == 0,
            "n_games",
            f"share the games evenly: n_games={n_games} over {self.device_count()} devices; "
            "use a multiple of the device count",
        )


def on_host(x: Array) -> np.ndarray[Any, Any]:
    """The whole of `x` in this process, gathered from every process's devices where they
    hold parts of it (a collective: every process calls it at the same point)."""
    if x.is_fully_addressable or x.is_fully_replicated:
        return np.asarray(x)
    return np.asarray(multihost_utils.process_allgather(x, tiled=True))


def leads() -> bool:
    """Whether this process evaluates and measures: process 0 of a distributed run (the others
    hold the same weights), or the only one."""
    return jax.process_index() == 0


def join(coordinator: str, num_processes: int, process_id: int) -> None:
    """`jax.distributed.initialize`, once a process (before any JAX computation); CPU devices
    talk through gloo, JAX's CPU collectives."""
    if jax.distributed.is_initialized():
        return
    jax.config.update("jax_cpu_collectives_implementation", "gloo")  # type: ignore[no-untyped-call]  # jax's config is untyped
    jax.distributed.initialize(coordinator, num_processes=num_processes, process_id=process_id)


@dataclass
class Args(NetworkArgs, PPOArgs, PlaysFiles, DeviceArgs):
    """PPO on the JAX engine, collection and update in one jitted call."""

    TRAINER = "jax_ppo"

    opponents: dict[str, float] = field(
        default_factory=lambda: {"random": 0.1, "greedy": 0.6, "self": 0.3}
    )
    """Sampling weights of the pool: "self" (the frozen snapshots), "random" and "greedy" (their
    JAX ports), and card-network policy files (a path, a shipped name, or "model"); the games
    are split between them in these proportions."""
    n_games: int = 128
    """Games played side by side (vmapped)."""
    n_steps: int = 64
    """Env steps per game per rollout (every seat's: the learner's decisions are about
    n_games * n_steps / players of them)."""
    init_policy: str | None = None
    """Start from this policy file's weights (a path or shipped name; its network must be the
    run's card network) instead of a fresh network."""
    progress: bool = True
    """Print a progress line every 15 seconds."""

    def validate(self) -> None:
        """Raise `ConfigError` for values that cannot train, naming what is allowed."""
        self.join_run()
        super().validate()
        try:
            make(self.game_rules(), self.episode)
        except RulesError as e:
            raise ConfigError(f"rules={self.rules!r}: {e}; training.ppo trains any rules") from None
        check_ppo(self)  # the pool's names are agent specs (`require_pool`)
        try:  # "model": the shipped policy's name, which the config then records
            self.opponents = {
                k if k in JAX_OPPONENTS else resolve_spec(k, self.game_rules()): w
                for k, w in self.opponents.items()
            }
        except Rummy500Error as e:
            raise ConfigError(f"opponents: {e}") from None
        require_positive_ints(self, "n_games", "n_steps", "minibatch_size")
        require_network(self)
        env = make(self.game_rules(), self.episode)
        check_device_memory(self.n_games, self.n_steps, env.observation_shape[0], env.num_actions)
        require(self, 0 < self.max_grad_norm < math.inf, "max_grad_norm", "use a finite number > 0")
        self.policy_opponents()  # each file is one the JAX network can run, for these rules
        start = self.start_policy()
        if start is not None:
            theirs = {k: getattr(start[0], k) for k in ("channels", "blocks", "hidden")}
            ours = {k: getattr(self, k) for k in theirs}
            require(
                self,
                theirs == ours,
                "init_policy",
                f"{self.init_policy!r} holds the card network {theirs}, the run trains {ours}: "
                "give the same sizes",
            )
        self.record_files()
        require_a_game_each(self, opponent_names(self))
        self.check_devices(self.n_games)

    def policy_opponents(self) -> dict[str, tuple[CardNetwork, Params]]:
        """The pool's policy files, by name in the pool's order, each as the JAX network runs
        it; `ConfigError` for an opponent that cannot play inside the rollout, saying why."""
        rules = self.game_rules()
        out = {}
        for name in opponent_names(self)[1:-2]:
            try:
                spec = parse_spec(name)
            except AgentSpecError:
                spec = None
            if spec is None or spec.kind not in POLICY_KINDS or spec.path is None:
                raise ConfigError(
                    f"opponents: {name!r} cannot play inside the JAX rollout: use "
                    f"{list(JAX_OPPONENTS)} or a card-network policy file (a path, a shipped "
                    "name, model); training.ppo trains against any agent, expert and the "
                    "searches included"
                )
            out[name] = load_card_policy("opponents", name, rules)
        return out

    def start_policy(self) -> tuple[CardNetwork, Params] | None:
        """The init policy's network and weights (None: a fresh network)."""
        if self.init_policy is None:
            return None
        return load_card_policy("init_policy", self.init_policy, self.game_rules())

    def policy_files(self) -> list[str]:
        names = opponent_names(self)[1:-2]
        files = [str(parse_spec(name).path) for name in names]
        return files + ([str(policy_path(self.init_policy))] if self.init_policy else [])


def load_card_policy(field: str, name: str, rules: Rules) -> tuple[CardNetwork, Params]:
    """The JAX network and weights of a policy file or shipped name (``model``: the shipped
    one made for `rules`), or `ConfigError` naming `field` and why it cannot run."""
    try:
        return from_policy(
            PolicyAgent.load(policy_path(resolve_spec(name, rules)), rules=rules), rules
        )
    except (Rummy500Error, ValueError) as e:
        raise ConfigError(f"{field}={name!r}: {e}; training.ppo trains other networks") from None


def opponent_names(args: Any) -> tuple[str, ...]:
    """The pool's names in block order: "self", the policy files (in the pool's order),
    "greedy", "random"."""
    policies = [name for name in args.opponents if name not in JAX_OPPONENTS]
    return ("self", *policies, "greedy", "random")


def check_device_memory(n_games: int, n_steps: int, floats: int, num_actions: int) -> None:
    """Refuse a rollout (`check_rollout_memory`: `floats` float32 numbers and a mask of
    `num_actions` a step) larger than the memory of this process's first JAX device (a GPU's
    own; on a CPU, the machine's), before any work."""
    device = jax.local_devices()[0]
    stats = device.memory_stats() or {}  # None on a CPU
    limit = stats.get("bytes_limit")
    where = f"the {device.device_kind}'s memory" if limit else "this machine's memory"
    check_rollout_memory(n_games, n_steps, floats, num_actions, limit, where)


def require_a_game_each(args: Any, names: tuple[str, ...]) -> None:
    """Raise `ConfigError` unless `opponent_blocks` gives every opponent of ``args.opponents``
    with a weight at least one of ``args.n_games``."""
    blocks = opponent_blocks(args.opponents, args.n_games, names)
    require(
        args,
        all(n > 0 or args.opponents.get(k, 0) == 0 for k, n in zip(names, blocks, strict=True)),
        "n_games",
        f"give every opponent with a weight at least one game: {args.opponents} over "
        f"{args.n_games} games leaves one without",
    )


def opponent_blocks(
    weights: dict[str, float], n_games: int, names: tuple[str, ...] = JAX_OPPONENTS
) -> tuple[int, ...]:
    """Games against each of `names`, in that order: `n_games` split by the weights, the
    remainders to the largest fractions (ties: the earlier name)."""
    total = sum(weights.get(name, 0.0) for name in names)
    shares = [n_games * weights.get(name, 0.0) / total for name in names]
    counts = [math.floor(s) for s in shares]
    by_fraction = sorted(range(len(names)), key=lambda i: (-(shares[i] - counts[i]), i))
    for i in by_fraction[: n_games - sum(counts)]:
        counts[i] += 1
    return tuple(counts)


def parse_args(argv: list[str]) -> tuple[Args, bool]:
    """(args, resuming) from the command line (see `settings.command_line`)."""
    return command_line(Args, argv, __doc__)


def args_from_dict(data: dict[str, Any]) -> Args:
    """Args from a dict, rejecting unknown fields with the list of known ones."""
    return args_of(Args, data)


# --- what the jitted update is made of


class Plan(NamedTuple):
    """The static part of the jitted update: shapes and hyperparameters (hashable)."""

    network: CardNetwork
    env: Env
    n_games: int
    n_steps: int
    blocks: tuple[int, ...]
    """Games against each opponent in `opponent_names`' order."""
    policies: tuple[CardNetwork, ...]
    """The networks of the pool's policy files, in that order."""
    minibatch_size: int
    n_epochs: int
    gamma: float
    gae_lambda: float
    clip_range: float
    ent_coef: float
    vf_coef: float
    max_grad_norm: float


class Games(NamedTuple):
    """The games in play between rollouts (a leading axis of `n_games`)."""

    state: State
    seat: Array
    """The learner's seat in each game (drawn when its episode starts)."""
    episode_return: Array
    """The learner's rewards so far in each game's episode."""


class Adam(NamedTuple):
    step: Array
    m: Params
    v: Params


class Trajectory(NamedTuple):
    """One rollout, (n_steps, n_games) per field: every env step, the learner's where `mine`."""

    obs: Array
    mask: Array
    action: Array
    logp: Array
    value: Array
    mine: Array
    reward: Array
    """The learner's reward from this step."""
    done: Array
    """The step ended the episode (the game is dealt anew after it)."""
    finished_return: Array
    """The learner's return of the episode this step ended (0 elsewhere)."""


def adam_init(params: Params) -> Adam:
    return Adam(
        jnp.int32(0),
        {k: jnp.zeros_like(v) for k, v in params.items()},
        {k: jnp.zeros_like(v) for k, v in params.items()},
    )


def adam_step(params: Params, opt: Adam, grads: Params, lr: Array) -> tuple[Params, Adam]:
    """torch's Adam (the same arithmetic as `torch.optim.Adam`, eps `ADAM_EPS`)."""
    b1, b2 = ADAM_BETAS
    t = opt.step + 1
    m = {k: b1 * opt.m[k] + (1 - b1) * g for k, g in grads.items()}
    v = {k: b2 * opt.v[k] + (1 - b2) * g * g for k, g in grads.items()}
    c1 = 1 - b1 ** t.astype(jnp.float32)
    c2 = 1 - b2 ** t.astype(jnp.float32)
    out = {
        k: p - (lr / c1) * m[k] / (jnp.sqrt(v[k]) / jnp.sqrt(c2) + ADAM_EPS)
        for k, p in params.items()
    }
    return out, Adam(t, m, v)


def clip_by_norm(grads: Params, max_norm: float) -> tuple[Params, Array]:
    """`torch.nn.utils.clip_grad_norm_`: scaled to `max_norm` when the global norm exceeds it;
    returns the norm before clipping."""
    norm = jnp.sqrt(sum(jnp.sum(g * g) for g in grads.values()))
    scale = jnp.minimum(1.0, max_norm / (norm + 1e-6))
    return {k: g * scale for k, g in grads.items()}, norm


def _rows(flag: Array, a: Any, b: Any) -> Any:
    """`a` where `flag` (one per game), else `b`, for every array of two batched pytrees."""

    def pick(u: Array, v: Array) -> Array:
        return jnp.where(flag.reshape(flag.shape + (1,) * (u.ndim - 1)), u, v)

    return jax.tree_util.tree_map(pick, a, b)


def _slice(tree: Any, lo: int, hi: int) -> Any:
    return jax.tree_util.tree_map(lambda u: u[lo:hi], tree)


def sample(key: Array, logits: Array, mask: Array) -> tuple[Array, Array]:
    """(action, its log-probability) from the masked logits, by the Gumbel-max trick."""
    logp_all = jax.nn.log_softmax(masked_logits(logits, mask))
    action = jax.random.categorical(key, logp_all)
    return action, jnp.take_along_axis(logp_all, action[:, None], 1)[:, 0]


def new_games(plan: Plan, key: Array) -> Games:
    """`n_games` fresh deals, the learner's seat drawn in each."""
    deal, seats = jax.random.split(key)
    state = jax.vmap(plan.env.init)(jax.random.split(deal, plan.n_games))
    seat = jax.random.randint(seats, (plan.n_games,), 0, plan.env.num_players)
    return Games(state, seat, jnp.zeros(plan.n_games, jnp.float32))


def collect(
    plan: Plan, params: Params, opponents: tuple[Params, ...], games: Games, key: Array
) -> tuple[Games, Trajectory, Array]:
    """Play `n_steps` env steps in every game: the learner's seat by `params`, the others by
    the game's opponent (`opponent_blocks`: the snapshot, the policy files, greedy, random;
    `opponents` holds the weights of the snapshot, then the policy files'). Games that end are
    dealt anew. Returns the games, the trajectory, and the learner's values of where each
    game stands (the bootstrap)."""
    n_self, *n_policies, n_greedy, n_random = plan.blocks
    n = plan.n_games
    env = plan.env
    step_all = jax.vmap(env.step)
    init_all = jax.vmap(env.init)
    greedy_all = jax.vmap(functools.partial(bots.greedy_action, env))
    random_all = jax.vmap(bots.random_action)

    def step(g: Games, key: Array) -> tuple[Games, Trajectory]:
        k_learner, k_self, k_random, k_step, k_deal, k_seat = jax.random.split(key, 6)
        obs, mask = g.state.observation, g.state.legal_action_mask
        logits, value = plan.network.apply(params, obs)
        action, logp = sample(k_learner, logits, mask)
        theirs = []
        if n_self:
            their_logits, _ = plan.network.apply(opponents[0], obs[:n_self])
            theirs.append(sample(k_self, their_logits, mask[:n_self])[0])
        lo = n_self
        for net, weights, count in zip(plan.policies, opponents[1:], n_policies, strict=True):
            if count:  # as the file's agent spec plays: its most likely legal action
                their_logits, _ = net.apply(weights, obs[lo : lo + count])
                theirs.append(jnp.argmax(masked_logits(their_logits, mask[lo : lo + count]), 1))
            lo += count
        if n_greedy:
            theirs.append(greedy_all(_slice(g.state, lo, lo + n_greedy)))
        if n_random:
            keys = jax.random.split(k_random, n_random)
            theirs.append(random_all(keys, mask[n - n_random :]))
        mine = g.state.current_player == g.seat
        action = jnp.where(mine, action, jnp.concatenate(theirs).astype(action.dtype))
        after = step_all(g.state, action, jax.random.split(k_step, n))
        reward = after.rewards[jnp.arange(n), g.seat]
        done = after.terminated | after.truncated
        ended = g.episode_return + reward
        fresh = init_all(jax.random.split(k_deal, n))
        seat = jax.random.randint(k_seat, (n,), 0, env.num_players)
        following = Games(
            _rows(done, fresh, after),
            jnp.where(done, seat, g.seat),
            jnp.where(done, 0.0, ended),
        )
        finished = jnp.where(done, ended, 0.0)
        return following, Trajectory(obs, mask, action, logp, value, mine, reward, done, finished)

    games, trajectory = jax.lax.scan(step, games, jax.random.split(key, plan.n_steps))
    bootstrap_obs = jax.vmap(env.observe)(games.state, games.seat)
    _, bootstrap = plan.network.apply(params, bootstrap_obs)
    return games, trajectory, bootstrap


def advantages(t: Trajectory, bootstrap: Array, gamma: float, lam: float) -> tuple[Array, Array]:
    """GAE over the learner's decisions only, skipping the other seats' steps: (advantages,
    returns), 0 at steps that are not the learner's.

    A reverse scan carries the next decision's value and advantage, and the learner's rewards
    from the steps between (another seat ending the hand). An episode that ends there stops
    the bootstrap, and rewards after that end belong to the next episode; those of a next
    episode earned before the learner's first decision in it (rare) are dropped."""

    Carry = tuple[Array, Array, Array, Array]

    def back(carry: Carry, s: tuple[Array, Array, Array, Array]) -> tuple[Carry, Array]:
        next_value, next_adv, later_reward, later_end = carry
        mine, reward, done, value = s
        end = done | later_end
        total = reward + jnp.where(done, 0.0, later_reward)
        delta = total + gamma * next_value * ~end - value
        adv = delta + gamma * lam * ~end * next_adv
        later_reward = jnp.where(done, reward, later_reward + reward)
        following: Carry = (
            jnp.where(mine, value, next_value),
            jnp.where(mine, adv, next_adv),
            jnp.where(mine, 0.0, later_reward),
            jnp.where(mine, False, done | later_end),
        )
        return following, jnp.where(mine, adv, 0.0)

    zero = jnp.zeros_like(bootstrap)
    start: Carry = (bootstrap, zero, zero, jnp.zeros(bootstrap.shape, bool))
    _, adv = jax.lax.scan(back, start, (t.mine, t.reward, t.done, t.value), reverse=True)
    return adv, jnp.where(t.mine, adv + t.value, 0.0)


def ppo_loss(
    plan: Plan, params: Params, batch: dict[str, Array], weight: Array
) -> tuple[Array, dict[str, Array]]:
    """`training.model.ppo_loss` over the rows where `weight` (a minibatch's real rows):
    clipped policy loss, half squared value error, entropy bonus; advantages standardised
    over the minibatch."""
    logits, values = plan.network.apply(params, batch["obs"])
    logp_all = jax.nn.log_softmax(masked_logits(logits, batch["mask"]))
    logp = jnp.take_along_axis(logp_all, batch["action"][:, None], 1)[:, 0]
    count = weight.sum()

    def mean(a: Array) -> Array:
        return jnp.where(weight, a, 0.0).sum() / count

    entropy = mean(-(jnp.exp(logp_all) * logp_all).sum(-1))
    log_ratio = logp - batch["logp"]
    ratio = jnp.exp(log_ratio)
    adv = batch["adv"]
    centred = adv - mean(adv)
    std = jnp.sqrt(jnp.where(weight, centred**2, 0.0).sum() / jnp.maximum(count - 1, 1))
    adv = centred / (std + 1e-8)
    clipped = jnp.clip(ratio, 1 - plan.clip_range, 1 + plan.clip_range)
    policy = -mean(jnp.minimum(ratio * adv, clipped * adv))
    value = 0.5 * mean((values - batch["ret"]) ** 2)
    loss = policy + plan.vf_coef * value - plan.ent_coef * entropy
    stats = {
        "policy": policy,
        "value": value,
        "entropy": entropy,
        "kl": mean((ratio - 1) - log_ratio),
        "clip": mean((jnp.abs(ratio - 1) > plan.clip_range).astype(jnp.float32)),
    }
    return loss, stats


STATS: tuple[str, ...] = ("policy", "value", "entropy", "kl", "clip", "grad_norm")


def learn(
    plan: Plan,
    params: Params,
    opt: Adam,
    t: Trajectory,
    adv: Array,
    ret: Array,
    key: Array,
    lr: Array,
) -> tuple[Params, Adam, dict[str, Array]]:
    """PPO epochs over the learner's decisions of one rollout (`minibatch_epochs`)."""
    flat = {
        "obs": t.obs,
        "mask": t.mask,
        "action": t.action,
        "logp": t.logp,
        "adv": adv,
        "ret": ret,
    }
    data = {k: v.reshape(-1, *v.shape[2:]) for k, v in flat.items()}
    loss = functools.partial(ppo_loss, plan)
    return minibatch_epochs(plan, loss, STATS, data, t.mine.reshape(-1), params, opt, key, lr)


class Epochs(Protocol):
    """What `minibatch_epochs` reads of a trainer's plan."""

    @property
    def minibatch_size(self) -> int: ...
    @property
    def n_epochs(self) -> int: ...
    @property
    def max_grad_norm(self) -> float: ...


Loss = Callable[[Params, dict[str, Array], Array], tuple[Array, dict[str, Array]]]
"""(params, a minibatch, its real rows) -> (loss, stats): the loss `minibatch_epochs` steps."""


def minibatch_epochs(
    plan: Epochs,
    loss: Loss,
    stat_names: tuple[str, ...],
    data: dict[str, Array],
    rows: Array,
    params: Params,
    opt: Adam,
    key: Array,
    lr: Array,
) -> tuple[Params, Adam, dict[str, Array]]:
    """Epochs of Adam steps on `loss` over the `rows` of `data` (a flat batch). Each epoch puts
    those rows first in a random order, then steps through minibatches; those past them are
    skipped (`lax.cond`), the last one is partial (weighted). Returns the stats of each
    minibatch (epochs, minibatches), the gradient's norm before clipping among them, and
    ``active`` where it ran."""
    size, mb = rows.shape[0], plan.minibatch_size
    n_mb = -(-size // mb)
    count = rows.sum()
    grad = jax.value_and_grad(loss, has_aux=True)
    zeros = {k: jnp.float32(0.0) for k in (*stat_names, "active")}

    def epoch(carry: tuple[Params, Adam], key: Array) -> tuple[tuple[Params, Adam], Any]:
        order = jnp.argsort(jnp.where(rows, jax.random.uniform(key, (size,)), 2.0))
        order = jnp.concatenate([order, jnp.zeros(n_mb * mb - size, order.dtype)])

        def minibatch(carry: tuple[Params, Adam], k: Array) -> tuple[tuple[Params, Adam], Any]:
            start = k * mb

            def run(carry: tuple[Params, Adam]) -> tuple[tuple[Params, Adam], Any]:
                params, opt = carry
                idx = jax.lax.dynamic_slice(order, (start,), (mb,))
                weight = start + jnp.arange(mb) < count
                batch = {name: v[idx] for name, v in data.items()}
                (_, stats), grads = grad(params, batch, weight)
                grads, norm = clip_by_norm(grads, plan.max_grad_norm)
                params, opt = adam_step(params, opt, grads, lr)
                return (params, opt), stats | {"grad_norm": norm, "active": jnp.float32(1.0)}

            out: tuple[tuple[Params, Adam], Any] = jax.lax.cond(
                start < count, run, lambda c: (c, zeros), carry
            )
            return out

        return jax.lax.scan(minibatch, carry, jnp.arange(n_mb))

    (params, opt), stats = jax.lax.scan(epoch, (params, opt), jax.random.split(key, plan.n_epochs))
    return params, opt, stats


class Update(NamedTuple):
    """What one jitted update returns beside the new weights."""

    games: Games
    stats: dict[str, Array]
    decisions: Array
    """The learner's decisions in the rollout (its timesteps)."""
    finished: Array
    """Episodes that ended in the rollout."""
    returns: Array
    """The learner's summed returns of those episodes."""


def _update(
    plan: Plan,
    params: Params,
    opt: Adam,
    opponents: tuple[Params, ...],
    games: Games,
    key: Array,
    lr: Array,
) -> tuple[Params, Adam, Update]:
    k_collect, k_learn = jax.random.split(key)
    games, t, bootstrap = collect(plan, params, opponents, games, k_collect)
    adv, ret = advantages(t, bootstrap, plan.gamma, plan.gae_lambda)
    params, opt, stats = learn(plan, params, opt, t, adv, ret, k_learn, lr)
    update = Update(games, stats, t.mine.sum(), t.done.sum(), t.finished_return.sum())
    return params, opt, update


update = jax.jit(_update, static_argnums=0)
"""One rollout and its PPO epochs (`collect`, `advantages`, `learn`), compiled once per `Plan`."""


# --- the run


def plan_of(args: Args) -> Plan:
    rules = args.game_rules()
    env = make(rules, args.episode)
    return Plan(
        network=CardNetwork.for_rules(rules, args.channels, args.blocks, args.hidden),
        env=env,
        n_games=args.n_games,
        n_steps=args.n_steps,
        blocks=opponent_blocks(args.opponents, args.n_games, opponent_names(args)),
        policies=tuple(net for net, _ in args.policy_opponents().values()),
        minibatch_size=args.minibatch_size,
        n_epochs=args.n_epochs,
        gamma=args.gamma,
        gae_lambda=args.gae_lambda,
        clip_range=args.clip_range,
        ent_coef=args.ent_coef,
        vf_coef=args.vf_coef,
        max_grad_norm=args.max_grad_norm,
    )


def torch_weights(params: Params) -> dict[str, torch.Tensor]:
    """The torch state dict of `params` (the same names: `CardPolicy`'s)."""
    return {k: torch.from_numpy(np.array(v)) for k, v in params.items()}


FIRST_DEAL = 2**32 - 1
"""Folded into the seed's key for the first deal (the updates fold in their count, from 0)."""
GAMES_FILE = "games.npz"
WEIGHTS_FILE = "weights.pt"


class Trainer:
    """A run: the weights, Adam's moments, the games in play, the pool and the folder.

    Another trainer on the JAX engine (`training.jax_exit`) is this class with its own
    `make_plan`, `update`, `STATS` and `progress`: one run folder, checkpoint, resume and
    evaluation for both."""

    STATS = STATS
    """The losses `update` reports (`last_epoch` averages them)."""
    update = staticmethod(update)
    """(plan, params, opt, opponents, games, key, lr) -> (params, opt, `Update`): one jitted
    rollout and its learning (`opponents`: the snapshot's weights, then `fixed_opponents`)."""

    def __init__(self, args: Args, resume: bool) -> None:
        self.args = args
        self.rules = args.game_rules()
        self.plan = self.make_plan(args)
        torch.manual_seed(args.seed)  # the torch network's initial weights: training.ppo's
        self.actor = build_network(self.rules, args.network_spec())
        self.params = params_from_arrays(
            {k: v.numpy() for k, v in self.actor.state_dict().items()}, self.plan.network
        )
        self.opt = adam_init(self.params)
        self.key = jax.random.PRNGKey(args.seed)
        self.run = RunFolder(args, resume)
        self.state: dict[str, Any]
        if resume:
            self.load()
            print(f"resumed from {self.state['checkpoint']} at {self.timesteps} timesteps")
        else:
            self.state = {"timesteps": 0, "updates": 0, "snapshots": [], "wall_s": 0.0}
            self.games = new_games(self.plan, jax.random.fold_in(self.key, FIRST_DEAL))
        self.state["encoding"] = current_encoding(self.rules)
        start = None if resume else args.start_policy()
        if start is not None:
            self.params = start[1]
            self.opt = adam_init(self.params)
        self.pool = [self.read_snapshot(name) for name in self.state["snapshots"]]
        self.fixed = self.fixed_opponents(args)
        self.place(args.device_count())

    def place(self, count: int) -> None:
        """Share the games between the first `count` local devices (split along the games) and
        copy the weights, Adam's moments and opponents to each: the jitted update then runs on
        all of them, its sums over games (the gradients) reduced across them by XLA."""
        mesh = jax.sharding.Mesh(np.array(jax.devices()[:count]), ("games",))
        games, whole = PartitionSpec("games"), PartitionSpec()  # type: ignore[no-untyped-call]
        self.split = jax.sharding.NamedSharding(mesh, games)
        copied = jax.sharding.NamedSharding(mesh, whole)
        self.games = jax.device_put(self.games, self.split)
        self.params, self.opt, self.pool, self.fixed = jax.device_put(
            (self.params, self.opt, self.pool, self.fixed), copied
        )
        devices = ", ".join(str(d) for d in mesh.devices)
        print(f"device: JAX's {jax.default_backend()} backend ({devices})", flush=True)

    @property
    def timesteps(self) -> int:
        return int(self.state["timesteps"])

    def make_plan(self, args: Args) -> Plan:
        return plan_of(args)

    def fixed_opponents(self, args: Args) -> tuple[Params, ...]:
        """The weights of the pool's policy files, in the plan's order."""
        return tuple(params for _, params in args.policy_opponents().values())

    def progress(self, rate: float, mean_return: float, losses: dict[str, float]) -> str:
        """The progress line (every 15 seconds)."""
        return progress_line(self.timesteps, rate, mean_return, losses)

    def policy(self) -> torch.nn.Module:
        """The torch `CardPolicy` holding the current weights (for exports and evaluations)."""
        self.actor.load_state_dict(torch_weights(self.params))
        return self.actor

    def read_snapshot(self, name: str) -> Params:
        path = self.run.path / run_snapshot(name, self.run.path)
        agent = PolicyAgent.load(path, rules=self.rules)
        weights = {k: v.numpy() for k, v in agent.network.state_dict().items()}
        return params_from_arrays(weights, self.plan.network)

    def snapshot(self) -> None:
        """Freeze the learner into the pool (a policy file in ``snapshots/``)."""
        name = f"{SNAPSHOTS}/snapshot_{self.timesteps:010d}.pt"
        export_policy(self.policy(), self.args, self.run.path / name, self.timesteps)
        keep = self.args.max_snapshots
        self.state["snapshots"] = (self.state["snapshots"] + [name])[-keep:]
        self.pool = [*self.pool, self.params][-keep:]  # arrays are immutable: no copy

    def checkpoint(self) -> None:
        """The weights, Adam's moments and counters (``weights.pt``) and the games in play
        (``games.npz``), in one checkpoint folder written atomically."""
        blob = {
            "model": torch_weights(self.params),
            "adam_m": torch_weights(self.opt.m),
            "adam_v": torch_weights(self.opt.v),
            "adam_step": int(self.opt.step),
            "state": self.state,
            "network": self.args.network_spec(),
        }
        arrays = [on_host(leaf) for leaf in jax.tree_util.tree_leaves(self.games)]

        def write(folder: Path) -> None:
            folder.mkdir()
            torch.save(blob, folder / WEIGHTS_FILE)
            np.savez(folder / GAMES_FILE, *arrays)

        self.run.checkpoints.save(self.state, write)

    def games_shape(self) -> Games:
        """The games' arrays (shapes and types; their values are a deal never played)."""
        return new_games(self.plan, jax.random.PRNGKey(0))

    def load(self) -> None:
        """Restore the newest readable checkpoint (`Checkpoints.load`)."""
        leaves_now, structure = jax.tree_util.tree_flatten(self.games_shape())

        def read(path: Path) -> dict[str, Any]:
            blob = torch.load(path / WEIGHTS_FILE, map_location="cpu", weights_only=True)
            check_checkpoint(blob, path, self.args)

            def arrays(sd: dict[str, torch.Tensor]) -> Params:
                return params_from_arrays({k: v.numpy() for k, v in sd.items()}, self.plan.network)

            self.params = arrays(blob["model"])
            self.opt = Adam(
                jnp.int32(blob["adam_step"]), arrays(blob["adam_m"]), arrays(blob["adam_v"])
            )
            with np.load(path / GAMES_FILE) as saved:
                leaves = [jnp.asarray(saved[f"arr_{i}"]) for i in range(len(leaves_now))]
            if any(leaf.shape[:1] != (self.args.n_games,) for leaf in leaves):
                raise ConfigError(
                    f"checkpoint {path} holds {leaves[0].shape[0]} games but the run plays "
                    f"{self.args.n_games}: resume with the run's own n_games"
                )
            for i, (leaf, want) in enumerate(zip(leaves, leaves_now, strict=True)):
                if leaf.shape != want.shape or leaf.dtype != want.dtype:  # damaged: skipped
                    raise ValueError(f"{GAMES_FILE} array {i} is {leaf.dtype}{leaf.shape}")
            self.games = jax.tree_util.tree_unflatten(structure, leaves)
            state: dict[str, Any] = blob["state"]
            return state

        self.state = self.run.checkpoints.load(read)

    def opponents(self) -> tuple[Params, ...]:
        """This rollout's opponents' weights: the snapshot for the "self" games, one of the
        pool drawn with a generator seeded by the update count (so a resumed run draws the
        same), then the policy files'."""
        draw = np.random.default_rng([self.args.seed, self.state["updates"]])
        return (self.pool[int(draw.integers(len(self.pool)))], *self.fixed)

    def train(self, resume: bool) -> Path:
        """The run: a first snapshot (when new), updates to the budget, the last checkpoint,
        and `RunFolder.finish` (its evaluation by process 0 alone). Returns the policy's path."""
        self.run.announce()
        if not resume:
            self.snapshot()
        self.learn()
        self.checkpoint()
        return self.run.finish(self.policy(), self.state, evaluate=leads())

    def learn(self) -> None:
        """Updates until `total_timesteps`, with snapshots, checkpoints and evaluations each
        time their interval is passed."""
        args = self.args
        snapshot = Every(args.snapshot_every, self.timesteps)
        checkpoint = Every(args.checkpoint_every, self.timesteps)
        evaluation = Every(args.eval_every, self.timesteps)
        start = last_print = since = time.time()
        steps_since = 0
        while self.timesteps < args.total_timesteps:
            frac = 1.0 - self.timesteps / args.total_timesteps if args.anneal_lr else 1.0
            key = jax.random.fold_in(self.key, self.state["updates"])
            self.params, self.opt, out = self.update(
                self.plan,
                self.params,
                self.opt,
                self.opponents(),
                self.games,
                key,
                jnp.float32(frac * args.learning_rate),
            )
            self.games = jax.device_put(out.games, self.split)  # kept split between rollouts
            decisions = int(out.decisions)
            self.state["updates"] += 1
            self.state["timesteps"] += decisions
            losses = last_epoch(out.stats, self.STATS)
            where = f"update {self.state['updates']} ({self.timesteps:,} timesteps)"
            stop_if_diverged(losses, where, self.run.path, self.args)
            steps_since += decisions
            self.state["wall_s"] += time.time() - start
            start = time.time()
            finished = int(out.finished)
            mean_return = float(out.returns) / finished if finished else float("nan")
            self.log(losses, mean_return)
            if args.progress and time.time() - last_print > 15:
                rate = steps_since / (time.time() - since)
                print(self.progress(rate, mean_return, losses), flush=True)
                last_print, since, steps_since = time.time(), time.time(), 0
            if snapshot.due(self.timesteps):
                self.snapshot()
            if self.timesteps < args.total_timesteps and evaluation.due(self.timesteps):
                if leads():
                    self.run.evaluate(self.policy(), self.timesteps, args.eval_games)
            if checkpoint.due(self.timesteps):  # after the evaluation (`run.Checkpoints`)
                self.checkpoint()

    def log(self, losses: dict[str, float], mean_return: float) -> None:
        writer, steps = self.run.writer, self.timesteps
        for k, v in losses.items():
            writer.add_scalar(f"loss/{k}", v, steps)
        if not math.isnan(mean_return):
            writer.add_scalar("rollout/episode_return", mean_return, steps)
        writer.add_scalar("time/wall_s", self.state["wall_s"], steps)


def last_epoch(stats: dict[str, Array], names: tuple[str, ...] = STATS) -> dict[str, float]:
    """The means over the last epoch's minibatches that ran (`training.ppo` reports those)."""
    active = np.asarray(stats["active"][-1]) > 0
    if not active.any():  # a rollout without a learner's decision (a tiny n_steps)
        return {}
    return {k: float(np.asarray(stats[k][-1])[active].mean()) for k in names}


def train(args: Args, resume: bool = False) -> Path:
    """Train (or resume) and return the path of the exported policy. Every input is checked
    first (`check_before_work`), before any folder, weights or game."""
    check_before_work(args, resume)
    return Trainer(args, resume).train(resume)


def main(argv: list[str] | None = None) -> int:
    return trainer_main(parse_args, train, argv)


if __name__ == "__main__":
    sys.exit(main())
