"""``python -m training.jax_exit``: expert iteration on the JAX engine. The fair Gumbel search
(`rummy500_env.jax.search`) plays the learner's decisions and teaches the network: its
improved policy (cross-entropy) and the return that followed (the value), as AlphaZero and
Gumbel MuZero learn, in one jitted call per update like `training.jax_ppo`'s.

    python -m training.jax_exit                      # the packaged config "jax_exit"
    python -m training.jax_exit --init-policy none   # from scratch
    python -m training.jax_exit --resume runs/jax_exit_standard_hand_s0

One update: every game takes `n_steps` env steps (`lax.scan`); at each, the search runs for
the player to act in every game (one batched call: `worlds` worlds dealt for that seat, the
`candidates` moves sequential halving keeps, `simulations` leaves), with Gumbel noise
(`gumbel_scale`) so that the games explore. The games are split into blocks by opponent:

- ``searched``: self-play where every seat plays the search with the current network, so every
  decision is a label (the AlphaZero setting);
- ``self``: a frozen snapshot of the learner, drawn from the pool each rollout, playing its
  raw policy (sampled); the learner's seat searches;
- ``greedy``: the JAX port of GreedyAgent; the learner's seat searches.

Then `n_epochs` passes over the labelled decisions: cross-entropy to the search's improved
policy, plus `vf_coef` times half the squared error of the value head against the searching
seat's return (its rewards to the episode's end, discounted by `gamma`, bootstrapped by the
value head where the rollout stops). The timesteps count these searched decisions, and the
progress line gives their rate.

The weights start from `init_policy` (a policy file or shipped name with the card network;
``model``, the default, is the shipped policy made for the rules; ``none`` trains from
scratch at the network sizes given). The run folder, checkpoints (with the games in play, so a
resumed run continues exactly), TensorBoard, evaluations and the exported policy are
`training.jax_ppo`'s (`jax_ppo.Trainer`), and the policy plays wherever a policy file does.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, NamedTuple

import jax
import jax.numpy as jnp

from rummy500_env.engine.errors import RulesError
from rummy500_env.jax import Env, bots, make
from rummy500_env.jax.network import CardNetwork, Params, masked_logits
from rummy500_env.jax.search import SearchConfig, search
from rummy500_env.training import jax_ppo
from rummy500_env.training.jax_ppo import (
    Adam,
    DeviceArgs,
    Games,
    Update,
    check_device_memory,
    load_card_policy,
    minibatch_epochs,
    opponent_blocks,
    require_a_game_each,
    sample,
)
from rummy500_env.training.run import check_before_work, trainer_main
from rummy500_env.training.settings import (
    FLOAT32_MAX,
    ConfigError,
    NetworkArgs,
    TrainArgs,
    args_of,
    check_minibatch,
    command_line,
    require,
    require_positive_ints,
)

Array = jax.Array
OPPONENTS = ("searched", "self", "greedy")
"""The pool's names (in this block order): searched self-play, a frozen snapshot, greedy."""
SCRATCH_NETWORK = NetworkArgs().network_spec()
"""The network a run from scratch builds when its sizes are not given (`training.jax_ppo`'s)."""


@dataclass
class Args(TrainArgs, DeviceArgs):
    """Expert iteration on the JAX engine: the Gumbel search teaches the card network."""

    TRAINER = "jax_exit"
    STEPS: ClassVar[str] = "searched decisions"

    opponents: dict[str, float] = field(
        default_factory=lambda: {"searched": 0.5, "self": 0.25, "greedy": 0.25}
    )
    """Weights of the games by opponent: "searched" (every seat searches: all labels),
    "self" (a frozen snapshot's raw policy), "greedy" (the JAX GreedyAgent)."""
    init_policy: str | None = "model"
    """The starting weights: a policy file or shipped name with the card network, "model" (the
    shipped policy made for the rules) or none (from scratch)."""
    channels: int | None = None
    """Features per card; None: the init policy's (from scratch: 32)."""
    blocks: int | None = None
    """Residual blocks; None: the init policy's (from scratch: 2)."""
    hidden: int | None = None
    """Width of the position summary; None: the init policy's (from scratch: 128)."""
    n_games: int = 64
    """Games played side by side (vmapped), each step's searches one batch."""
    n_steps: int = 32
    """Env steps per game per update."""
    simulations: int = 8
    """The search's leaf evaluations a decision."""
    worlds: int = 4
    """Worlds the search deals a decision."""
    candidates: int = 4
    """Moves sequential halving considers a decision."""
    horizon: int = 6
    """Greedy steps a leaf plays at most before the value head."""
    gumbel_scale: float = 1.0
    """The Gumbel noise on the search's choice (exploration; 0: none)."""
    minibatch_size: int = 512
    """Labelled decisions per gradient step."""
    n_epochs: int = 2
    """Passes over each update's labels."""
    learning_rate: float = 1e-4
    anneal_lr: bool = False
    """Anneal the learning rate linearly to 0 at total_timesteps."""
    gamma: float = 0.995
    """Discount of the value target."""
    vf_coef: float = 0.5
    """Weight of the value loss beside the policy's cross-entropy."""
    max_grad_norm: float = 0.5
    snapshot_every: int = 50_000
    """Searched decisions between frozen snapshots added to the pool."""
    max_snapshots: int = 5
    """Snapshots kept in the pool."""
    total_timesteps: int = 50_000
    """Searched decisions to train for."""
    checkpoint_every: int = 10_000
    eval_every: int = 25_000
    progress: bool = True
    """Print a progress line every 15 seconds."""

    def network_spec(self) -> dict[str, Any]:
        return {
            "kind": "cards",
            "channels": self.channels,
            "blocks": self.blocks,
            "hidden": self.hidden,
        }

    def search_config(self) -> SearchConfig:
        return SearchConfig(
            simulations=self.simulations,
            worlds=self.worlds,
            candidates=self.candidates,
            horizon=self.horizon,
            gumbel_scale=self.gumbel_scale,
        )

    def start_policy(self) -> tuple[CardNetwork, Params] | None:
        """The init policy's network and weights for the rules (None from scratch);
        `ConfigError` if it cannot start this run."""
        if self.init_policy in (None, "none"):
            return None
        return load_card_policy("init_policy", self.init_policy, self.game_rules())

    def validate(self) -> None:
        """Raise `ConfigError` for values that cannot train, naming what is allowed; fill the
        network's sizes from the init policy."""
        self.join_run()
        super().validate()
        try:
            make(self.game_rules(), self.episode)
        except RulesError as e:
            raise ConfigError(
                f"rules={self.rules!r}: {e}; training.exit trains any rules"
            ) from None
        unknown = sorted(set(self.opponents) - set(OPPONENTS))
        require(self, not unknown, "opponents", f"{unknown} is not one of {list(OPPONENTS)}")
        weights = list(self.opponents.values())
        require(
            self,
            all(isinstance(w, int | float) and 0 <= w <= FLOAT32_MAX for w in weights)
            and 0 < sum(weights) <= FLOAT32_MAX,
            "opponents",
            f"give finite weights >= 0, not all zero, adding up to at most {FLOAT32_MAX:.4g}",
        )
        start = self.start_policy()
        theirs = SCRATCH_NETWORK if start is None else dataclasses.asdict(start[0])
        for name in ("channels", "blocks", "hidden"):
            if getattr(self, name) is None:
                setattr(self, name, theirs[name])
            require(
                self,
                start is None or getattr(self, name) == theirs[name],
                name,
                f"the init policy has {name}={theirs[name]}: leave it out, or start from none",
            )
        require_positive_ints(self, "channels", "blocks", "hidden", "n_games", "n_steps")
        env = make(self.game_rules(), self.episode)  # a step keeps the search's policy too
        obs, actions = env.observation_shape[0], env.num_actions
        check_device_memory(self.n_games, self.n_steps, obs + actions, actions)
        require_positive_ints(self, "simulations", "worlds", "candidates", "horizon")
        require_positive_ints(self, "minibatch_size", "n_epochs", "snapshot_every", "max_snapshots")
        check_minibatch(self)
        for name in ("learning_rate", "max_grad_norm"):
            require(self, 0 < getattr(self, name) < math.inf, name, "use a finite number > 0")
        require(self, 0 < self.gamma <= 1, "gamma", "use a number in (0, 1]")
        for name in ("vf_coef", "gumbel_scale"):
            value = getattr(self, name)
            require(self, 0 <= value <= FLOAT32_MAX, name, "use a finite number >= 0")
        require_a_game_each(self, OPPONENTS)
        self.check_devices(self.n_games)


def parse_args(argv: list[str]) -> tuple[Args, bool]:
    """(args, resuming) from the command line (see `settings.command_line`)."""
    return command_line(Args, argv, __doc__)


def args_from_dict(data: dict[str, Any]) -> Args:
    """Args from a dict, rejecting unknown fields with the list of known ones."""
    return args_of(Args, data)


# --- what the jitted update is made of


class Plan(NamedTuple):
    """The static part of the jitted update (hashable)."""

    network: CardNetwork
    env: Env
    n_games: int
    n_steps: int
    blocks: tuple[int, ...]
    """Games against each of `OPPONENTS`, in that order."""
    search: SearchConfig
    minibatch_size: int
    n_epochs: int
    gamma: float
    vf_coef: float
    max_grad_norm: float


class Labels(NamedTuple):
    """One rollout, (n_steps, n_games) per field: every env step and its search."""

    obs: Array
    mask: Array
    policy: Array
    """The search's improved policy for the player to act (num_actions,)."""
    actor: Array
    labelled: Array
    """The step was searched and learns (the learner's seat, or any seat of searched play)."""
    learner: Array
    """The learner's seat acted."""
    rewards: Array
    """Every seat's rewards from this step (players,)."""
    done: Array
    finished_return: Array
    """The learner's return of the episode this step ended (0 elsewhere)."""


def collect(
    plan: Plan, params: Params, opponents: tuple[Params, ...], games: Games, key: Array
) -> tuple[Games, Labels, Array]:
    """Play `n_steps` env steps in every game, the search deciding for the searching seats;
    returns the games, the labels, and every seat's value of where each game stands."""
    n_searched, n_self, n_greedy = plan.blocks
    n, env, net = plan.n_games, plan.env, plan.network
    step_all = jax.vmap(env.step)
    greedy_all = jax.vmap(functools.partial(bots.greedy_action, env))
    game = jnp.arange(n)

    def step(g: Games, key: Array) -> tuple[Games, Labels]:
        k_search, k_self, k_step, k_deal, k_seat = jax.random.split(key, 5)
        s = g.state
        out = search(env, net, params, s, k_search, plan.search)
        theirs = [out.action[:n_searched]]
        if n_self:
            lo, hi = n_searched, n_searched + n_self
            logits, _ = net.apply(opponents[0], s.observation[lo:hi])
            theirs.append(sample(k_self, logits, s.legal_action_mask[lo:hi])[0])
        if n_greedy:
            lo = n_searched + n_self
            theirs.append(greedy_all(jax.tree_util.tree_map(lambda a: a[lo:], s)))
        learner = s.current_player == g.seat
        labelled = learner | (game < n_searched)
        action = jnp.where(labelled, out.action, jnp.concatenate(theirs).astype(jnp.int32))
        after = step_all(s, action, jax.random.split(k_step, n))
        reward = after.rewards[game, g.seat]
        done = after.terminated | after.truncated
        ended = g.episode_return + reward
        fresh = jax.vmap(env.init)(jax.random.split(k_deal, n))
        seat = jax.random.randint(k_seat, (n,), 0, env.num_players)
        following = Games(
            jax_ppo._rows(done, fresh, after),
            jnp.where(done, seat, g.seat),
            jnp.where(done, 0.0, ended),
        )
        labels = Labels(
            s.observation,
            s.legal_action_mask,
            out.policy,
            s.current_player,
            labelled,
            learner,
            after.rewards,
            done,
            jnp.where(done, ended, 0.0),
        )
        return following, labels

    games, labels = jax.lax.scan(step, games, jax.random.split(key, plan.n_steps))
    seats = jnp.arange(env.num_players)
    every_seat = jax.vmap(env.observe, in_axes=(None, 0))
    obs = jax.vmap(every_seat, in_axes=(0, None))(games.state, seats)  # (n, players, features)
    _, values = net.apply(params, obs.reshape(-1, obs.shape[-1]))
    return games, labels, values.reshape(n, env.num_players)


def returns(labels: Labels, bootstrap: Array, gamma: float) -> Array:
    """(n_steps, n_games): the return of the player to act at each step, its rewards to the
    end of the episode discounted by `gamma`, every seat's value at the rollout's end where
    its episode goes on."""

    def back(later: Array, step: tuple[Array, Array]) -> tuple[Array, Array]:
        rewards, done = step
        now = rewards + gamma * jnp.where(done[:, None], 0.0, later)
        return now, now

    _, every = jax.lax.scan(back, bootstrap, (labels.rewards, labels.done), reverse=True)
    return jnp.take_along_axis(every, labels.actor[..., None], -1)[..., 0]


STATS: tuple[str, ...] = ("policy", "value", "entropy", "kl", "grad_norm")
"""The losses of an update: cross-entropy to the search's policy, half the squared value
error, the network's entropy, KL(search || network), the gradient's norm."""


def exit_loss(
    plan: Plan, params: Params, batch: dict[str, Array], weight: Array
) -> tuple[Array, dict[str, Array]]:
    """Cross-entropy to the improved policy plus `vf_coef` times half the squared value error,
    over the rows where `weight`."""
    logits, values = plan.network.apply(params, batch["obs"])
    mask = batch["mask"]
    logp = jnp.where(mask, jax.nn.log_softmax(masked_logits(logits, mask)), 0.0)
    target = batch["policy"]
    count = weight.sum()

    def mean(a: Array) -> Array:
        return jnp.where(weight, a, 0.0).sum() / count

    cross = -(target * logp).sum(-1)
    own = -(target * jnp.log(jnp.where(target > 0, target, 1.0))).sum(-1)
    value = 0.5 * mean((values - batch["ret"]) ** 2)
    policy = mean(cross)
    stats = {
        "policy": policy,
        "value": value,
        "entropy": mean(-(jnp.exp(logp) * logp).sum(-1)),
        "kl": mean(cross - own),
    }
    return policy + plan.vf_coef * value, stats


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
    games, labels, bootstrap = collect(plan, params, opponents, games, k_collect)
    ret = returns(labels, bootstrap, plan.gamma)
    flat = {"obs": labels.obs, "mask": labels.mask, "policy": labels.policy, "ret": ret}
    data = {k: v.reshape(-1, *v.shape[2:]) for k, v in flat.items()}
    rows = labels.labelled.reshape(-1)
    loss = functools.partial(exit_loss, plan)
    params, opt, stats = minibatch_epochs(plan, loss, STATS, data, rows, params, opt, k_learn, lr)
    done = labels.done.sum()
    return params, opt, Update(games, stats, rows.sum(), done, labels.finished_return.sum())


update = jax.jit(_update, static_argnums=0)
"""One searched rollout and its epochs, compiled once per `Plan`."""


def plan_of(args: Args) -> Plan:
    rules = args.game_rules()
    assert args.channels and args.blocks and args.hidden, "validate fills the network's sizes"
    return Plan(
        network=CardNetwork.for_rules(rules, args.channels, args.blocks, args.hidden),
        env=make(rules, args.episode),
        n_games=args.n_games,
        n_steps=args.n_steps,
        blocks=opponent_blocks(args.opponents, args.n_games, OPPONENTS),
        search=args.search_config(),
        minibatch_size=args.minibatch_size,
        n_epochs=args.n_epochs,
        gamma=args.gamma,
        vf_coef=args.vf_coef,
        max_grad_norm=args.max_grad_norm,
    )


class Trainer(jax_ppo.Trainer):
    """`jax_ppo.Trainer` with the search's update."""

    STATS = STATS
    update = staticmethod(update)

    def __init__(self, args: Args, resume: bool) -> None:
        super().__init__(args, resume)  # type: ignore[arg-type]  # the fields it reads

    def make_plan(self, args: Any) -> Any:
        return plan_of(args)

    def fixed_opponents(self, args: Any) -> tuple[Params, ...]:
        return ()  # the snapshots, the search and greedy only

    def progress(self, rate: float, mean_return: float, losses: dict[str, float]) -> str:
        return (
            f"{self.timesteps:>10,} searched decisions  {rate:,.0f}/s  mean return "
            f"{mean_return:+.3f}  ce {losses.get('policy', math.nan):.3f}  "
            f"kl {losses.get('kl', math.nan):.4f}"
        )


def train(args: Args, resume: bool = False) -> Path:
    """Train (or resume) and return the path of the exported policy; every input is checked
    first (`check_before_work`)."""
    args.validate()
    check_before_work(args, resume)
    return Trainer(args, resume).train(resume)


def main(argv: list[str] | None = None) -> int:
    return trainer_main(parse_args, train, argv)


if __name__ == "__main__":
    sys.exit(main())
