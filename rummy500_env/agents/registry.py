"""Agent specs: the one place that turns a name such as ``expert`` or ``search:50ms`` into an agent.

A spec is one of

* ``random``, ``greedy``, ``expert``;
* ``search`` (the default budget, 50 ms a decision), ``search:50ms`` (milliseconds a decision)
  or ``search:200`` (sampled worlds a decision), the budget a positive whole number;
* ``psearch`` (200 ms a decision), ``psearch:200ms`` (milliseconds a decision) or
  ``psearch:64`` (simulations a decision), optionally followed by ``:PATH_OR_NAME``, the policy
  it searches with (``psearch:200ms:standard``; by default the shipped policy made for the
  table, as ``model`` picks it): `rummy500_env.agents.psearch`, a policy-guided search;
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
from dataclasses import dataclass
from pathlib import Path

from rummy500_env.agents.expert import ExpertAgent
from rummy500_env.agents.greedy import GreedyAgent
from rummy500_env.agents.shipped import is_policy_file, shipped_policies
from rummy500_env.engine.errors import Rummy500Error
from rummy500_env.engine.numbers import read_int, shown
from rummy500_env.engine.rules import Rules
from rummy500_env.rl.opponents import Agent, RandomAgent

BOTS = ("random", "greedy", "expert", "search")
"""The built-in bots, weakest first."""
ALLOWED = (
    "random, greedy, expert, search (50 ms a decision), search:50ms (any positive whole number "
    "of milliseconds a decision), search:200 (any positive whole number of sampled worlds a "
    "decision), psearch, psearch:200ms or psearch:64 (a policy-guided search, any positive "
    "whole number of milliseconds or simulations a decision, then optionally :PATH_OR_NAME of "
    "the policy it searches with: psearch:200ms:standard), ismcts or ismcts:100 (OpenSpiel's "
    "IS-MCTS, any positive whole number of simulations a decision; the openspiel extra), the "
    "path of an exported policy file (.pt), a shipped policy by name (standard), or model (the "
    "shipped policy made for the table's rules), or llm:URL[:MODEL] (an OpenAI-compatible chat "
    "endpoint, e.g. llm:http://localhost:8000/v1:my-model)"
)
"""What a spec may be, in the words every error about one uses."""
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
    """A checked spec: which bot (or ``"policy"``) and, for search, its budget."""

    kind: str
    """One of `BOTS`, ``"ismcts"`` (OpenSpiel's IS-MCTS), ``"policy"`` for an exported policy
    file, ``"model"`` for the shipped policy of the table's rules (`resolve_spec`), or
    ``"shipped"`` for a shipped policy named by its name (the spec stays the name,
    which loads wherever it runs), or ``"psearch"`` for the policy-guided search (`path`: its
    policy, None for the shipped one made for the table)."""
    ms: int | None = None
    """Search: milliseconds a decision."""
    rollouts: int | None = None
    """Search: sampled worlds a decision."""
    path: str | None = None
    """Policy or shipped policy: the file."""
    simulations: int | None = None
    """IS-MCTS and psearch: simulations a decision."""


def parse_spec(spec: str) -> AgentSpec:
    """Read a spec strictly (see the module docstring); raises `AgentSpecError`."""
    if not isinstance(spec, str):
        raise AgentSpecError(f"an agent spec must be a string, got {spec!r}; use {ALLOWED}")
    name, colon, budget = spec.partition(":")
    if name in ("random", "greedy", "expert", "model") and not colon:
        return AgentSpec(name)
    if name == "search":
        if not colon:
            return AgentSpec("search")
        n, ms = _budget(
            spec,
            "search",
            budget,
            "a positive whole number of milliseconds (search:50ms) or of sampled worlds "
            "(search:200)",
        )
        return AgentSpec("search", ms=n) if ms else AgentSpec("search", rollouts=n)
    if name == "psearch":
        return _psearch_spec(spec, budget if colon else None)
    if name == "ismcts":
        return _ismcts_spec(spec, budget if colon else None)
    if name == "llm":
        return _llm_spec(spec)
    path = Path(spec)
    shipped = {} if colon else shipped_policies()
    if spec in shipped and not is_policy_file(path):  # a folder or other file does not hide it
        return AgentSpec("shipped", path=str(shipped[spec]))
    if path.suffix == ".pt" or path.exists():
        if not path.is_file():
            raise AgentSpecError(
                f"no checkpoint at {spec!r}: give the path of an exported policy file (.pt)"
            )
        return AgentSpec("policy", path=spec)
    raise AgentSpecError(f"unknown agent {spec!r}: use {ALLOWED}")


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
    if colon and not (Path(policy).is_file() or policy in shipped_policies()):
        raise AgentSpecError(
            f"no policy {policy!r} in {spec!r}: give the path of an exported policy file (.pt) "
            f"or a shipped policy's name ({', '.join(shipped_policies()) or 'none found'})"
        )
    path = policy if colon else None
    if ms:
        return AgentSpec("psearch", ms=n, path=path)
    return AgentSpec("psearch", simulations=n, path=path)


def _ismcts_spec(spec: str, budget: str | None) -> AgentSpec:
    """``ismcts`` or ``ismcts:N``; refused here, not in a worker, when OpenSpiel is missing."""
    simulations = ISMCTS_SIMULATIONS
    if budget is not None:
        how = "a positive whole number of simulations a decision (ismcts:100)"
        simulations, ms = _budget(spec, "ismcts", budget, how)
        if ms:
            raise AgentSpecError(f"bad ismcts budget in {shown(spec, 100)}: give {how}")
    if importlib.util.find_spec("pyspiel") is None:
        raise AgentSpecError(f"{spec!r} needs OpenSpiel: pip install -e '.[openspiel]'")
    return AgentSpec("ismcts", simulations=simulations)


def _budget(spec: str, kind: str, text: str, how: str) -> tuple[int, bool]:
    """A budget ``N`` or ``Nms`` as (N, whether in milliseconds), N read by `read_int`
    (ASCII digits, 1 to `MAX_BUDGET`); `AgentSpecError` saying what `how` allows if not."""
    digits = text.removesuffix("ms")
    try:
        n = read_int(digits, "budget", 1, MAX_BUDGET, AgentSpecError)
    except AgentSpecError as e:
        raise AgentSpecError(f"bad {kind} budget in {shown(spec, 100)}: {e}; give {how}") from None
    return n, digits != text


def _llm_spec(spec: str) -> AgentSpec:
    """``llm:URL[:MODEL]``: the form is checked here; the endpoint is reached when built."""
    from rummy500_env.agents.llm import parse_llm_spec

    try:
        parse_llm_spec(spec)
    except ValueError as e:
        raise AgentSpecError(str(e)) from None
    return AgentSpec("llm", path=spec)


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
    if s.kind == "random":
        return RandomAgent(seed)
    if s.kind == "greedy":
        return GreedyAgent(rules)
    if s.kind == "expert":
        return ExpertAgent(rules)
    if s.kind == "search":
        from rummy500_env.agents.search import SearchAgent

        ms = None if s.ms is None else float(s.ms)
        return SearchAgent(rules, ms=ms, rollouts=s.rollouts, seed=seed)
    if s.kind == "psearch":
        from rummy500_env.agents.psearch import PolicySearchAgent  # torch: only when named

        ms = None if s.ms is None else float(s.ms)
        return PolicySearchAgent(rules, s.path, ms=ms, simulations=s.simulations, seed=seed)
    if s.kind == "llm":
        from rummy500_env.agents.llm import make_llm_agent

        return make_llm_agent(s.path or spec, rules, seed)
    if s.kind == "ismcts":
        from rummy500_env.agents.ismcts import ISMCTSAgent  # pyspiel: only when named

        return ISMCTSAgent(rules, simulations=s.simulations or ISMCTS_SIMULATIONS, seed=seed)
    from rummy500_env.agents.policy import PolicyAgent  # torch: only when a policy is named

    return PolicyAgent.load(s.path or spec, rules=rules, deterministic=True)


def check_agents(specs: list[str], rules: Rules) -> None:
    """Build each agent `specs` name once, for `rules`, and drop it: what only loading finds
    (a path that is no policy file, a policy made for other rules or table size) is its
    error (`PolicyLoadError`, ...) now. Commands call it before any game, so a bad agent is
    one clear error instead of a traceback from the first game or a worker process."""
    for spec in dict.fromkeys(specs):  # each spec once, in order
        make_agent(spec, rules, seed=0)
