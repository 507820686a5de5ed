"""Agent specs: the one place that turns a name such as ``expert`` or ``search:50ms`` into an agent.

A spec is one of

* ``random``, ``greedy``, ``expert``;
* ``search`` (the default budget, 50 ms a decision), ``search:50ms`` (milliseconds a decision)
  or ``search:200`` (sampled worlds a decision), the budget a positive whole number;
* ``psearch`` (200 ms a decision), ``psearch:200ms`` (milliseconds a decision) or
  ``psearch:64`` (simulations a decision), optionally followed by ``:PATH_OR_NAME``, the policy
  it searches with (``psearch:200ms:standard``; by default the shipped policy made for the
  table, as ``model`` picks it): `rummy500_env.agents.psearch`, a policy-guided search, in
  the setting that plays strongest (`PolicySearchAgent.for_play`);
* ``gumbel`` (64 simulations over 8 worlds a decision), ``gumbel:32`` (simulations a decision)
  or ``gumbel:32x8`` (simulations times worlds), optionally followed by ``:PATH_OR_NAME``, its
  card-network policy (by default the shipped policy made for the table):
  `rummy500_env.agents.gumbel`, the fair Gumbel search of `rummy500_env.jax.search` (needs the
  ``jax`` extra);
* ``ismcts`` (100 simulations a decision) or ``ismcts:200`` (simulations a decision):
  OpenSpiel's IS-MCTS bot on the OpenSpiel game (`rummy500_env.agents.ismcts`; needs the
  ``openspiel`` extra);
* the path of an exported policy file (``.pt``, see `rummy500_env.agents.policy`);
* the name of a shipped policy (``standard``: `rummy500_env.agents.policy.shipped_policies`),
  which the installed wheel carries, so ``training.evaluate standard greedy`` works anywhere;
* ``model``: the shipped policy made for the table's rules and size (``standard`` at two
  players, ``standard-3p`` at three, ...), found when the rules are known (`resolve_spec`);
* ``llm:URL`` or ``llm:URL:MODEL``: a chat model behind any OpenAI-compatible endpoint, playing
  through the text protocol (`rummy500_env.agents.llm`; its key from ``RUMMY500_LLM_API_KEY``).

Every command line and config that names a bot (``python -m rummy500_env``,
``training.evaluate``, ``training.ppo``) checks it with `check_spec` before any game starts, so
a typo is one clear error instead of a crash in a worker process, and builds it with
`make_agent`.
"""

from __future__ import annotations

import importlib.util
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rummy500_env.agents.expert import ExpertAgent
from rummy500_env.agents.greedy import GreedyAgent
from rummy500_env.agents.shipped import is_policy_file, shipped_policies
from rummy500_env.engine.errors import Rummy500Error
from rummy500_env.engine.numbers import read_int, shown
from rummy500_env.engine.rules import Rules
from rummy500_env.rl.opponents import Agent, RandomAgent

ISMCTS_SIMULATIONS = 100
"""IS-MCTS simulations a decision when the spec names none."""
PSEARCH_MS = 200
"""Policy-guided search: milliseconds a decision when the spec names no budget."""
MAX_BUDGET = 10_000_000
"""The largest budget a spec may name (milliseconds, worlds or simulations a decision)."""


class AgentSpecError(Rummy500Error):
    """An agent spec that names no agent; the message quotes it and lists what is allowed."""


@dataclass(frozen=True)
class AgentSpec:
    """A checked spec: which kind of agent (an entry of `KINDS`) and its settings."""

    kind: str
    """A name in `KINDS`: a bot, ``"model"`` for the shipped policy of the table's rules
    (`resolve_spec`), ``"shipped"`` for a shipped policy named by its name (the spec stays the
    name, which loads wherever it runs), ``"policy"`` for an exported policy file, ..."""
    ms: int | None = None
    """Searches: milliseconds a decision."""
    rollouts: int | None = None
    """Search: sampled worlds a decision."""
    path: str | None = None
    """A policy file (or shipped name) the agent plays or searches with; llm: the spec."""
    simulations: int | None = None
    """IS-MCTS, psearch and gumbel: simulations a decision."""
    worlds: int | None = None
    """gumbel: worlds a decision."""


@dataclass(frozen=True)
class Kind:
    """One kind of agent: how a spec names it, and how it is built. A new bot joins `KINDS`
    with one entry."""

    name: str
    """The spec's first word (``search`` in ``search:50ms``); kinds no spec word names
    (``policy``, ``shipped``: a path or a shipped name) are found by `parse_spec` itself."""
    allowed: str
    """Its spec forms, in the words every error about a spec uses (`ALLOWED`)."""
    parse: Callable[[str, str | None], AgentSpec | None]
    """(the whole spec, what follows its first colon or None) -> the checked spec; None when
    the spec is not one of this kind's forms after all (`parse_spec` reads it as a path)."""
    build: Callable[[AgentSpec, Rules, int], Agent]
    """(the checked spec, the rules, a seed) -> the agent."""


def _word(name: str) -> Callable[[str, str | None], AgentSpec | None]:
    """The parser of a spec that is one word and takes no settings (with a colon it is no
    such spec: `parse_spec` reads it as a path)."""
    return lambda spec, rest: AgentSpec(name) if rest is None else None


def _search_spec(spec: str, rest: str | None) -> AgentSpec:
    """``search``, ``search:50ms`` or ``search:200``."""
    if rest is None:
        return AgentSpec("search")
    how = "a positive whole number of milliseconds (search:50ms) or of sampled worlds (search:200)"
    n, ms = _budget(spec, "search", rest, how)
    return AgentSpec("search", ms=n) if ms else AgentSpec("search", rollouts=n)


def _build_search(s: AgentSpec, rules: Rules, seed: int) -> Agent:
    from rummy500_env.agents.search import SearchAgent

    ms = None if s.ms is None else float(s.ms)
    return SearchAgent(rules, ms=ms, rollouts=s.rollouts, seed=seed)


def _psearch_spec(spec: str, rest: str | None) -> AgentSpec:
    """``psearch``, ``psearch:BUDGET`` or ``psearch:BUDGET:PATH_OR_NAME`` (the module
    docstring); the policy must be a file or a shipped name."""
    if rest is None:
        return AgentSpec("psearch", ms=PSEARCH_MS)
    budget, colon, policy = rest.partition(":")
    n, ms = _budget(
        spec,
        "psearch",
        budget,
        "a positive whole number of milliseconds (psearch:200ms) or of simulations "
        "(psearch:64), then optionally :PATH_OR_NAME",
    )
    path = _searched_policy(spec, policy) if colon else None
    if ms:
        return AgentSpec("psearch", ms=n, path=path)
    return AgentSpec("psearch", simulations=n, path=path)


def _searched_policy(spec: str, policy: str) -> str:
    """The ``:PATH_OR_NAME`` of a search spec, checked to be a file or a shipped name."""
    if not (_is_file(policy) or policy in shipped_policies()):
        raise AgentSpecError(
            f"no policy {shown(policy, 100)} in {shown(spec, 100)}: give the path of an "
            "exported policy file (.pt) or a shipped policy's name "
            f"({', '.join(shipped_policies()) or 'none found'})"
        )
    return policy


def _gumbel_spec(spec: str, rest: str | None) -> AgentSpec:
    """``gumbel``, ``gumbel:N``, ``gumbel:NxW``, each optionally followed by
    ``:PATH_OR_NAME``; refused here, not in a worker, when JAX is missing."""
    if importlib.util.find_spec("jax") is None:
        raise AgentSpecError(
            f'{shown(spec, 100)} needs JAX, which is not installed: pip install "rummy500_env[jax]"'
        )
    from rummy500_env.agents.gumbel import SIMULATIONS, WORLDS

    if rest is None:
        return AgentSpec("gumbel", simulations=SIMULATIONS, worlds=WORLDS)
    budget, colon, policy = rest.partition(":")
    how = (
        "a positive whole number of simulations a decision (gumbel:32), optionally times the "
        "worlds (gumbel:32x8), then optionally :PATH_OR_NAME"
    )
    sims, x, worlds = budget.partition("x")
    n, ms = _budget(spec, "gumbel", sims, how)
    w, w_ms = _budget(spec, "gumbel", worlds, how) if x else (WORLDS, False)
    if ms or w_ms:
        raise AgentSpecError(f"bad gumbel budget in {shown(spec, 100)}: give {how}")
    path = _searched_policy(spec, policy) if colon else None
    return AgentSpec("gumbel", simulations=n, worlds=w, path=path)


def _build_gumbel(s: AgentSpec, rules: Rules, seed: int) -> Agent:
    from rummy500_env.agents.gumbel import SIMULATIONS, WORLDS, GumbelAgent  # jax: when named

    return GumbelAgent(
        rules,
        s.path,
        simulations=s.simulations or SIMULATIONS,
        worlds=s.worlds or WORLDS,
        seed=seed,
    )


def _build_psearch(s: AgentSpec, rules: Rules, seed: int) -> Agent:
    from rummy500_env.agents.psearch import PolicySearchAgent  # torch: only when named

    ms = None if s.ms is None else float(s.ms)
    return PolicySearchAgent.for_play(rules, s.path, ms=ms, simulations=s.simulations, seed=seed)


def _ismcts_spec(spec: str, rest: str | None) -> AgentSpec:
    """``ismcts`` or ``ismcts:N``; refused here, not in a worker, when OpenSpiel is missing."""
    simulations = ISMCTS_SIMULATIONS
    if rest is not None:
        how = "a positive whole number of simulations a decision (ismcts:100)"
        simulations, ms = _budget(spec, "ismcts", rest, how)
        if ms:
            raise AgentSpecError(f"bad ismcts budget in {shown(spec, 100)}: give {how}")
    if importlib.util.find_spec("pyspiel") is None:
        raise AgentSpecError(f"{shown(spec, 100)} needs OpenSpiel: pip install -e '.[openspiel]'")
    return AgentSpec("ismcts", simulations=simulations)


def _build_ismcts(s: AgentSpec, rules: Rules, seed: int) -> Agent:
    from rummy500_env.agents.ismcts import ISMCTSAgent  # pyspiel: only when named

    return ISMCTSAgent(rules, simulations=s.simulations or ISMCTS_SIMULATIONS, seed=seed)


def _llm_spec(spec: str, rest: str | None) -> AgentSpec:
    """``llm:URL[:MODEL]``: the form and the mode settings are checked here; the endpoint is
    reached when built (an `EndpointError` if its models cannot be listed)."""
    from rummy500_env.agents.llm import llm_settings, parse_llm_spec

    try:
        parse_llm_spec(spec)
        llm_settings()
    except ValueError as e:
        raise AgentSpecError(str(e)) from None
    return AgentSpec("llm", path=spec)


def _build_llm(s: AgentSpec, rules: Rules, seed: int) -> Agent:
    from rummy500_env.agents.llm import make_llm_agent

    assert s.path is not None, "an llm spec keeps its text"
    return make_llm_agent(s.path, rules, seed)


def _build_policy(s: AgentSpec, rules: Rules, seed: int) -> Agent:
    from rummy500_env.agents.policy import PolicyAgent  # torch: only when a policy is named

    assert s.path is not None, "a policy spec names its file"
    return PolicyAgent.load(s.path, rules=rules, deterministic=True)


def _unresolved(s: AgentSpec, rules: Rules, seed: int) -> Agent:
    raise AssertionError("make_agent resolves 'model' to a shipped policy first")


def _by_path(spec: str, rest: str | None) -> AgentSpec:
    raise AssertionError("parse_spec reads paths and shipped names itself")


KINDS: dict[str, Kind] = {
    k.name: k
    for k in (
        Kind("random", "random", _word("random"), lambda s, rules, seed: RandomAgent(seed)),
        Kind("greedy", "greedy", _word("greedy"), lambda s, rules, seed: GreedyAgent(rules)),
        Kind("expert", "expert", _word("expert"), lambda s, rules, seed: ExpertAgent(rules)),
        Kind(
            "search",
            "search (50 ms a decision), search:50ms (any positive whole number of milliseconds "
            "a decision), search:200 (any positive whole number of sampled worlds a decision)",
            _search_spec,
            _build_search,
        ),
        Kind(
            "psearch",
            "psearch, psearch:200ms or psearch:64 (a policy-guided search, any positive whole "
            "number of milliseconds or simulations a decision, then optionally :PATH_OR_NAME "
            "of the policy it searches with: psearch:200ms:standard)",
            _psearch_spec,
            _build_psearch,
        ),
        Kind(
            "gumbel",
            "gumbel, gumbel:32 or gumbel:32x8 (the fair Gumbel search on the JAX engine, any "
            "positive whole number of simulations a decision, optionally times the worlds, "
            "then optionally :PATH_OR_NAME of its card-network policy; the jax extra)",
            _gumbel_spec,
            _build_gumbel,
        ),
        Kind(
            "ismcts",
            "ismcts or ismcts:100 (OpenSpiel's IS-MCTS, any positive whole number of "
            "simulations a decision; the openspiel extra)",
            _ismcts_spec,
            _build_ismcts,
        ),
        Kind("policy", "the path of an exported policy file (.pt)", _by_path, _build_policy),
        Kind("shipped", "a shipped policy by name (standard)", _by_path, _build_policy),
        Kind(
            "model",
            "model (the shipped policy made for the table's rules)",
            _word("model"),
            _unresolved,
        ),
        Kind(
            "llm",
            "llm:URL[:MODEL] (an OpenAI-compatible chat endpoint, e.g. "
            "llm:http://localhost:8000/v1:my-model)",
            _llm_spec,
            _build_llm,
        ),
    )
}
"""Every kind of agent a spec can name, in the order `ALLOWED` lists them."""
SPEC_WORDS = ("policy", "shipped")
"""Kinds no spec's first word names: a path or a shipped name, read by `parse_spec`."""
ALLOWED = ", ".join(k.allowed for k in KINDS.values())
"""What a spec may be, in the words every error about one uses."""


def parse_spec(spec: str) -> AgentSpec:
    """Read a spec strictly (see the module docstring); raises `AgentSpecError`."""
    if not isinstance(spec, str):
        raise AgentSpecError(
            f"an agent spec must be a string, got {shown(spec, 100)}; use {ALLOWED}"
        )
    name, colon, rest = spec.partition(":")
    kind = KINDS.get(name)
    parsed = (
        None if kind is None or name in SPEC_WORDS else kind.parse(spec, rest if colon else None)
    )
    if parsed is not None:
        return parsed
    path = Path(spec)
    shipped = {} if colon else shipped_policies()
    if spec in shipped and not is_policy_file(path):  # a folder or other file does not hide it
        return AgentSpec("shipped", path=str(shipped[spec]))
    if path.suffix == ".pt" or _exists(path):
        if not _is_file(spec):
            raise AgentSpecError(
                f"no checkpoint at {shown(spec, 100)}: give the path of an exported policy "
                "file (.pt)"
            )
        return AgentSpec("policy", path=spec)
    raise AgentSpecError(f"unknown agent {shown(spec, 100)}: use {ALLOWED}")


def _exists(path: Path) -> bool:
    """`Path.exists`, False for a name no file can have (too long, a NUL byte) instead of an
    `OSError` or `ValueError`."""
    try:
        return path.exists()
    except (OSError, ValueError):
        return False


def _is_file(name: str) -> bool:
    """`Path.is_file`, False for a name no file can have (as `_exists`)."""
    try:
        return Path(name).is_file()
    except (OSError, ValueError):
        return False


def _budget(spec: str, kind: str, text: str, how: str) -> tuple[int, bool]:
    """A budget ``N`` or ``Nms`` as (N, whether in milliseconds), N read by `read_int`
    (ASCII digits, 1 to `MAX_BUDGET`); `AgentSpecError` saying what `how` allows if not."""
    digits = text.removesuffix("ms")
    try:
        n = read_int(digits, "budget", 1, MAX_BUDGET, AgentSpecError)
    except AgentSpecError as e:
        raise AgentSpecError(f"bad {kind} budget in {shown(spec, 100)}: {e}; give {how}") from None
    return n, digits != text


def agent_help() -> str:
    """What AGENT may be, for a command's ``--help``: each kind on its own line, and the
    shipped policies by name."""
    kinds = [
        textwrap.fill(k.allowed, 78, initial_indent="  ", subsequent_indent="    ")
        for k in KINDS.values()
    ]
    shipped = ", ".join(shipped_policies()) or "none found"
    return "AGENT is one of:\n" + "\n".join(kinds) + f"\nShipped policies: {shipped}."


def check_spec(spec: str) -> str:
    """The spec unchanged if it names an agent; `AgentSpecError` saying what is allowed if not.

    >>> check_spec("search:50ms")
    'search:50ms'
    >>> check_spec("search:50s")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    rummy500_env.agents.registry.AgentSpecError: bad search budget in 'search:50s': ...
    """
    parse_spec(spec)
    return spec


def resolve_spec(spec: str, rules: Rules) -> str:
    """The spec with ``model`` replaced by the name of the shipped policy made for `rules`
    (`PolicyLoadError` listing what is shipped when none is); any other spec unchanged.
    Commands resolve their specs so before a game starts, and show the name."""
    if parse_spec(spec).kind != "model":
        return spec
    from rummy500_env.agents.shipped import shipped_for  # reads the files' metadata: torch

    return shipped_for(rules)


def make_agent(spec: str, rules: Rules, seed: int) -> Agent:
    """The agent a spec names, for `rules`, seeded with `seed` where it draws at random.

    A policy file is loaded for `rules` and refused (`PolicyLoadError`) if it was trained for
    other rules.
    """
    s = parse_spec(resolve_spec(spec, rules))
    return KINDS[s.kind].build(s, rules, seed)


def check_agents(specs: list[str], rules: Rules) -> None:
    """Build each agent `specs` name once, for `rules`, and drop it: what only loading finds
    (a path that is no policy file, a policy made for other rules or table size) is its
    error (`PolicyLoadError`, ...) now. Commands call it before any game, so a bad agent is
    one clear error instead of a traceback from the first game or a worker process."""
    for spec in dict.fromkeys(specs):  # each spec once, in order
        make_agent(spec, rules, seed=0)
