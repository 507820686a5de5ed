"""Every command line, fuzzed: generated arguments (valid flags with hostile values: huge and
negative numbers, non-ASCII digits, empty strings, paths to /etc/passwd or to folders, bad agent
specs and rules, deeply nested JSON) end in exit 0, or in exit 2 with one ``error:`` line
(argparse's usage and error, or tyro's boxed message, count as one), never a traceback.

Each command's ``main(argv)`` runs in this process (a subprocess costs seconds of imports);
`test_the_real_entry_points_behave_as_main_does` runs a few cases through ``python -m`` to show
the entry points end the same way. What is kept out of the generated cases, and why:

* work that would run for long: a valid training run stops where its work would start (the
  trainer's `Trainer` / `RunFolder` raise `WorkStarts`, which counts as exit 0), after every
  check the trainer makes before work; the play server stops where it would serve (`serve`
  closes the socket); evaluations play 1 game per pair in this process (``--workers 1``);
  benchmarks measure milliseconds (``--seconds`` up to 0.01) without the peers (``--no-peers``:
  a subprocess of up to ten minutes); valid numbers that size work (search budgets, games,
  workers) stay small, and ``--ray`` (it starts a Ray instance) is never given;
* system paths a command writes to: as root, ``--out /etc`` would write there, so folders and
  files that are written (``--out``, ``--record``, ``--data-dir``) are temporary paths,
  including a temporary file where a folder belongs; /etc/passwd and / are given only where
  they are read, or checked before a stub stops the work.

Examples per command: ``RUMMY500_FUZZ_EXAMPLES`` (default 6, under the derandomized ``ci``
profile the same cases every run); benchmarks/cli_fuzz.py runs many more.
"""

from __future__ import annotations

import atexit
import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("tyro")
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = int(os.environ.get("RUMMY500_FUZZ_EXAMPLES", "6"))
MODEL = str(ROOT / "models" / "rummy500-ppo-standard.pt")
SCRATCH = Path(tempfile.mkdtemp(prefix="rummy500-cli-fuzz-"))
"""Temporary paths the generated arguments name (made once, below; removed at exit)."""
atexit.register(shutil.rmtree, SCRATCH, ignore_errors=True)


class WorkStarts(Exception):
    """Raised where a stubbed command would start its long work: every check came first."""


@dataclass
class Outcome:
    code: int
    out: str
    err: str
    traceback: str | None


def invoke(main: Callable[[list[str]], Any], argv: list[str]) -> Outcome:
    """`main(argv)` in this process, its output captured, its exit status as the shell would
    see it; an exception that escapes is kept as its traceback."""
    out, err = io.StringIO(), io.StringIO()
    code, trace = 0, None
    affinity = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    cwd = os.getcwd()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            os.chdir(SCRATCH / "cwd")  # relative paths land in the scratch folder
            try:
                result = main(argv)
                code = 0 if result is None else int(result)
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
                if isinstance(e.code, str):
                    print(e.code, file=sys.stderr)
            except WorkStarts:
                code = 0
            except Exception:
                code, trace = 1, traceback.format_exc()
    finally:
        os.chdir(cwd)
        if affinity is not None:  # bench pins the process to one CPU
            os.sched_setaffinity(0, affinity)
    return Outcome(code, out.getvalue(), err.getvalue(), trace)


def well_ended(o: Outcome) -> str | None:
    """None when `o` ended as every command must; else what is wrong."""
    if o.traceback is not None:
        return f"raised:\n{o.traceback}"
    if "Traceback (most recent call last)" in o.err:
        return f"printed a traceback:\n{o.err}"
    if o.code == 0:
        return None
    if o.code != 2:
        return f"exit {o.code}, not 0 or 2:\n{o.err[-2000:]}"
    # (split at newlines only: a hostile value may hold other line breaks, such as \x1e)
    lines = [line for line in o.err.split("\n") if line.strip()]
    errors = [
        k for k, line in enumerate(lines) if line.startswith("error: ") or ": error: " in line
    ]
    # One error: its message may go on in indented lines (a policy's "stored:" and "current:"
    # rules); argparse's comes after its usage lines (and may quote an argument's newline, as
    # in "unrecognized arguments: ..."), tyro's is in its box.
    indented = all(line[:1].isspace() for line in lines[errors[0] + 1 :]) if errors else False
    ours = errors == [0] and indented
    argparse_style = len(errors) == 1 and lines[0].startswith("usage: ")
    tyro_style = any("For full helptext" in line for line in lines)
    if ours or argparse_style or tyro_style:
        return None
    return f"exit 2 without one error line:\n{o.err[-2000:]}"


def check(main: Callable[[list[str]], Any], argv: list[str]) -> Outcome:
    o = invoke(main, argv)
    wrong = well_ended(o)
    assert wrong is None, f"argv={argv!r} {wrong}"
    return o


# --- scratch paths and hostile values


def _scratch() -> dict[str, str]:
    (SCRATCH / "cwd").mkdir(exist_ok=True)
    folder = SCRATCH / "folder"
    folder.mkdir(exist_ok=True)
    file = SCRATCH / "file.txt"
    file.write_text("root:x:0:0:root:/root:/bin/bash\n")
    policy_like = SCRATCH / "garbage.pt"
    policy_like.write_bytes(b"PK\x03\x04 not really a zip")
    yamls = {
        "opponents_int": "opponents: 5\n",
        "rules_list": "rules: [1, 2]\n",
        "steps_text": "total_timesteps: abc\n",
        "a_list": "- a\n- b\n",
        "nested": "eval_bots: {a: {b: [1]}}\n",
        "net_arch_text": "net_arch: wide\n",
        "seed_float": "seed: 1.5\n",
        "null_rules": "rules: null\n",
    }
    for name, text in yamls.items():
        (SCRATCH / f"{name}.yaml").write_text(text)
    run = SCRATCH / "run"  # a run folder with a config and a checkpoint file (not a real one)
    (run / "checkpoints").mkdir(parents=True, exist_ok=True)
    (run / "config.json").write_text(json.dumps({"rules": "standard", "channels": 8}))
    (run / "checkpoints" / "step_0000000064.pt").write_bytes(b"not a checkpoint")
    damaged = SCRATCH / "damaged_run"
    (damaged / "checkpoints").mkdir(parents=True, exist_ok=True)
    (damaged / "config.json").write_text('{"rules": "stand')
    (damaged / "checkpoints" / "step_0000000064.pt").write_bytes(b"")
    return {
        "folder": str(folder),
        "file": str(file),
        "garbage_policy": str(policy_like),
        "missing": str(SCRATCH / "missing" / "deeper" / "x.pt"),
        "run": str(run),
        "damaged_run": str(damaged),
        **{f"yaml_{name}": str(SCRATCH / f"{name}.yaml") for name in yamls},
    }


PATHS = _scratch()
DEEP_JSON = '{"players": ' + "[" * 5000 + "]" * 5000 + "}"
HOSTILE = [
    "",
    " ",
    "-1",
    "0",
    "-0",
    "1" + "0" * 5000,
    str(2**64),
    "-" + "9" * 30,
    "٣٠٠",
    "²",
    "5²",
    "1e9",
    "nan",
    "inf",
    "-inf",
    "1_000",
    "0x10",
    "/etc/passwd",
    "/etc",
    "/",
    "\x00",
    "ｓｔａｎｄａｒｄ",
    "-",
    "--",
    "[" * 5000 + "]" * 5000,
    DEEP_JSON,
    '{"a": {"b": {"c": [1, {"d": null}]}}}',
    "[]",
    "{}",
    "null",
    PATHS["folder"],
    PATHS["file"],
    PATHS["missing"],
]
"""Values no flag should take without a clear answer."""
BAD_RULES = [
    "standard,target=5²",
    "standard,target=--5",
    "standard,target=٣٠٠",
    "standard,target=" + "9" * 5000,
    "nordic,players=9",
    "standard,jokers=3",
    "standard,target",
    '{"jokers": 2, "rummy_calls": "yes"}',
    '{"preset": "nordic", "preset": "fives"}',
    DEEP_JSON,
    "standard,players=1",
]
BAD_AGENTS = [
    "search:0",
    "search:-1",
    "search:²",
    "search:" + "9" * 5000,
    "search:50s",
    "ismcts:²",
    "ismcts:0",
    "/etc/passwd",
    "/etc",
    PATHS["garbage_policy"],
    PATHS["missing"],
    "model",
    "standard",
    "nonsense",
    "",
]
GOOD_AGENTS = ["random", "greedy", "expert", "search:1", "standard"]
"""Agents that play a game in well under a second (``standard``: the shipped policy)."""


def hostile() -> st.SearchStrategy[str]:
    return st.one_of(
        st.sampled_from(HOSTILE),
        st.integers(-(10**30), 10**30).map(str),
        st.text(max_size=8),
    )


SIZES_WORK = {"--games": 2.0, "--seconds": 0.01, "--workers": 1.0}
"""Flags whose valid value sizes the work, and the most a generated value may be: a hostile
value that reads as a larger number (``٣٠٠`` and ``1_000`` read as numbers too) is replaced by
a valid one, since it would only make the command run long."""


def sizes_long_work(name: str, value: str) -> bool:
    if name not in SIZES_WORK:
        return False
    try:
        return not float(value) <= SIZES_WORK[name]  # nan reads as long too
    except (ValueError, OverflowError):
        return False


def flags(options: dict[str, st.SearchStrategy[list[str]]]) -> st.SearchStrategy[list[str]]:
    """An argv of up to five flags from `options` (each drawn as its valid values or a hostile
    one), now and then a flag the command does not have."""
    names = sorted(options)

    @st.composite
    def one(draw: st.DrawFn) -> list[str]:
        if draw(st.integers(0, 12)) == 0:
            return [draw(st.sampled_from(["--bogus", "-x", "--", "--help=1", "—rules"]))]
        name = draw(st.sampled_from(names))
        value = draw(hostile())
        if draw(st.booleans()) or sizes_long_work(name, value):
            return [name, *draw(options[name])]
        return [name, value]

    return st.lists(one(), max_size=5).map(lambda parts: [a for part in parts for a in part])


def values(*choices: str) -> st.SearchStrategy[list[str]]:
    return st.sampled_from(choices).map(lambda v: [v])


RULES = values("standard", "nordic,target=100", '{"jokers": 2, "rummy_calls": true}', *BAD_RULES)
SWITCH: st.SearchStrategy[list[str]] = st.just([])


# --- the commands


def watch_main() -> Callable[[list[str]], Any]:
    from rummy500_env.__main__ import main

    return main


WATCH = flags(
    {
        "--seed": values("0", "7", "4294967296"),
        "--rules": RULES,
        "--players": st.lists(st.sampled_from(GOOD_AGENTS + BAD_AGENTS), max_size=5),
        "--verbose": SWITCH,
    }
)


@settings(max_examples=EXAMPLES, suppress_health_check=list(HealthCheck))
@given(argv=WATCH)
@pytest.mark.slow
def test_watch_a_game(argv: list[str]) -> None:
    check(watch_main(), argv)


@pytest.fixture
def no_server(monkeypatch: pytest.MonkeyPatch) -> None:
    """The play command stops where it would serve: the socket it bound is closed."""
    pytest.importorskip("starlette")
    import rummy500_env.play.__main__ as play

    def closed(app: Any, sock: Any, *args: Any, **kwargs: Any) -> None:
        sock.close()

    monkeypatch.setattr(play, "serve", closed)


PLAY = flags(
    {
        "--opponent": st.sampled_from(GOOD_AGENTS + BAD_AGENTS).map(lambda a: [a]),
        "--rules": RULES,
        "--players": values("2", "3", "4", "5", "1"),
        "--host": values("127.0.0.1", "localhost", "::1", "256.0.0.1", "evil/", "0.0.0.0"),
        "--port": values("0", "65536", "-1"),
        "--data-dir": values(PATHS["folder"], PATHS["file"], PATHS["missing"]),
        "--seed": values("0", "-5"),
        "--pace": values("0", "700", "-1"),
        "--replay": values(PATHS["file"], PATHS["folder"], PATHS["garbage_policy"], "/etc/passwd"),
        "--no-browser": SWITCH,
    }
)


@settings(max_examples=EXAMPLES, suppress_health_check=list(HealthCheck))
@given(argv=PLAY)
def test_play(no_server: None, argv: list[str]) -> None:
    from rummy500_env.play.__main__ import main

    data = str(SCRATCH / "play-data")  # first, so that a generated --data-dir wins
    check(main, ["--data-dir", data, "--no-browser", *argv])


BENCH = flags(
    {
        "--engine": SWITCH,
        "--env": SWITCH,
        "--games": values("0", "1"),
        "--seconds": values("0.001", "0.01"),
        "--json": SWITCH,
        "--rules": RULES,
    }
)


@settings(max_examples=EXAMPLES, suppress_health_check=list(HealthCheck))
@given(argv=BENCH)
def test_bench(argv: list[str]) -> None:
    from rummy500_env.bench import main

    check(main, ["--no-peers", "--seconds", "0.001", *argv])


EVALUATE_FLAGS = flags(
    {
        "--games": values("1", "2"),
        "--rules": RULES,
        "--players": values("2", "3", "1", "9"),
        "--episode": values("hand", "game", "match"),
        "--field": SWITCH,
        "--workers": values("0", "-1", "x", "1.5"),  # valid counts start processes: 1 is set
        "--seed": values("0", "3"),
        "--out": values(PATHS["folder"], PATHS["file"], PATHS["missing"]),
        "--record": values(PATHS["folder"], PATHS["file"]),
        "--resume": SWITCH,
        "--address": values("auto", ""),
    }
)
EVALUATE = st.tuples(
    st.lists(st.sampled_from(GOOD_AGENTS + BAD_AGENTS), max_size=3), EVALUATE_FLAGS
).map(lambda t: [*t[0], *t[1]])


@settings(max_examples=EXAMPLES, suppress_health_check=list(HealthCheck))
@given(argv=EVALUATE)
def test_evaluate(argv: list[str]) -> None:
    from rummy500_env.evaluation.evaluate import main

    base = ["--workers", "1", "--games", "1", "--episode", "hand", "--out", str(SCRATCH / "ev")]
    check(main, [*argv, *_defaults(argv, base)])


def _defaults(argv: list[str], base: list[str]) -> list[str]:
    """The flags of `base` that `argv` does not give (argparse takes the last of a flag)."""
    out: list[str] = []
    for flag, value in zip(base[::2], base[1::2], strict=True):
        if flag not in argv:
            out += [flag, value]
    return out


TRAIN_COMMON = {
    "--rules": RULES,
    "--episode": values("hand", "game"),
    "--total-timesteps": values("64", "1"),
    "--opponents.greedy": values("0.5", "0"),
    "--opponents.self": values("0", "1"),
    "--eval-bots": st.lists(st.sampled_from(GOOD_AGENTS + BAD_AGENTS), max_size=3),
    "--seed": values("0", "4294967295", "4294967296", "-1"),
    "--run-dir": values(PATHS["folder"], PATHS["file"], PATHS["missing"], "/etc/passwd", "/"),
    "--export": values(PATHS["folder"], PATHS["missing"], "/etc/passwd", "/", ""),
    "--resume": values(PATHS["run"], PATHS["damaged_run"], PATHS["folder"], "/etc", ""),
    "--config": st.sampled_from(
        ["ppo", "rllib", *[v for k, v in PATHS.items() if k.startswith("yaml_")]]
    ).map(lambda v: [v]),
    "--learning-rate": values("0.001", "nan", "inf", "1e-400"),
    "--gamma": values("0.99", "nan"),
    "--ent-coef": values("0.01", "inf", "nan"),
    "--vf-coef": values("0.5", "inf"),
    "--network": values("cards", "mlp", "transformer"),
    "--channels": values("8", "0"),
    "--net-arch": st.lists(st.sampled_from(["8", "0", "-1", "x"]), max_size=3),
    "--activation": values("tanh", "relu", "gelu"),
    "--max-snapshots": values("1", "0"),
    "--keep-checkpoints": values("1", "0"),
}
PPO = flags(
    TRAIN_COMMON
    | {
        "--n-games": values("2", "1"),
        "--n-steps": values("8"),
        "--minibatch-size": values("8", "100000"),
        "--collect-workers": values("1", "2", "3"),
        "--threads": values("1", "0"),
        "--init-policy": values(MODEL, PATHS["garbage_policy"], PATHS["folder"], "/etc/passwd"),
        "--bc-decisions": values("0", "-1"),
        "--max-grad-norm": values("0.5", "inf", "nan"),
        "--progress": SWITCH,
        "--no-progress": SWITCH,
    }
)
RLLIB = flags(
    TRAIN_COMMON
    | {
        "--num-env-runners": values("0", "1", "-1"),
        "--num-cpus": values("1", "0"),
        "--train-batch-size": values("64", "0"),
        "--batch-size": values("32", "100000"),
        "--kl-coeff": values("0", "-1"),
        "--address": values("auto", ""),
    }
)

SEARCHED = {  # training.exit's own fields (it keeps its starting policy's network)
    "--init-policy": values(
        MODEL, "standard", PATHS["garbage_policy"], PATHS["folder"], "/etc/passwd"
    ),
    "--labels-per-round": values("16", "0"),
    "--simulations": values("4", "0", "-1"),
    "--candidates": values("2", "0"),
    "--leaf": values("value", "playout", "oracle"),
    "--gumbel": SWITCH,
    "--evidence": values("2", "0", "-1"),
    "--workers": values("1", "2", "0"),
    "--value-mix": values("0.5", "1.5", "nan"),
    "--replay-rounds": values("1", "0"),
    "--ray": SWITCH,
    "--address": values("auto", ""),
}
SELF_PLAY_ONLY = ("--network", "--channels", "--net-arch", "--activation", "--max-snapshots")
"""Flags training.exit does not have: it keeps its starting policy's network."""
EXIT = flags({k: v for k, v in TRAIN_COMMON.items() if k not in SELF_PLAY_ONLY} | SEARCHED)
EXPLOIT = flags(
    {
        "TARGET": st.sampled_from(GOOD_AGENTS + BAD_AGENTS + [MODEL, PATHS["garbage_policy"]]).map(
            lambda v: [v]
        ),
        "--rules": RULES,
        "--budget": values("64", "0", "-1", "٣"),
        "--seed": values("0", "-1"),
        "--run-dir": values(PATHS["folder"], PATHS["file"], PATHS["missing"], "/"),
        "--resume": values(PATHS["run"], PATHS["damaged_run"], PATHS["folder"], ""),
    }
)


@pytest.fixture
def no_training(monkeypatch: pytest.MonkeyPatch) -> None:
    """The trainers stop where their work would start, after every check made before it."""

    def starts(*args: Any, **kwargs: Any) -> None:
        raise WorkStarts

    from rummy500_env.training import exit, ppo, rllib

    monkeypatch.setattr(ppo, "Trainer", starts)  # training.exploit trains through ppo.train
    monkeypatch.setattr(rllib, "RunFolder", starts)
    monkeypatch.setattr(exit, "Trainer", starts)


@settings(max_examples=EXAMPLES, suppress_health_check=list(HealthCheck))
@given(argv=PPO)
def test_training_ppo(no_training: None, argv: list[str]) -> None:
    from rummy500_env.training.ppo import main

    check(main, argv)


@settings(max_examples=EXAMPLES, suppress_health_check=list(HealthCheck))
@given(argv=RLLIB)
def test_training_rllib(no_training: None, argv: list[str]) -> None:
    from rummy500_env.training.rllib import main

    check(main, argv)


@settings(max_examples=EXAMPLES, suppress_health_check=list(HealthCheck))
@given(argv=EXIT)
@pytest.mark.slow
def test_training_exit(no_training: None, argv: list[str]) -> None:
    from rummy500_env.training.exit import main

    check(main, argv)


@settings(max_examples=EXAMPLES, suppress_health_check=list(HealthCheck))
@given(argv=EXPLOIT)
def test_training_exploit(no_training: None, argv: list[str]) -> None:
    from rummy500_env.training.exploit import main

    check(main, [a for a in argv if a != "TARGET"])


# --- cases found by the fuzz, kept as examples that every run tries


def known_cases() -> Iterator[tuple[str, list[str]]]:
    yield "ppo", ["--seed", "-1"]
    yield "ppo", ["--seed", "4294967296"]
    yield "ppo", ["--opponents.greedy", "inf"]
    yield "ppo", ["--run-dir", PATHS["file"]]
    yield "ppo", ["--run-dir", PATHS["file"] + "/run"]
    yield "ppo", ["--export", PATHS["folder"]]
    yield "ppo", ["--eval-bots", "/etc/passwd"]
    yield "ppo", ["--opponents.greedy", "0", "--opponents./etc/passwd", "1"]
    yield "ppo", ["--init-policy", PATHS["garbage_policy"]]
    yield "ppo", ["--config", PATHS["yaml_opponents_int"]]
    yield "ppo", ["--config", PATHS["yaml_rules_list"]]
    yield "ppo", ["--config", PATHS["yaml_net_arch_text"]]
    yield "ppo", ["--config", PATHS["yaml_null_rules"]]
    yield "ppo", ["--resume", PATHS["damaged_run"]]
    yield "ppo", ["--resume", PATHS["run"], "--rules", "nordic"]
    for flag in ("--config", "--resume", "--run-dir", "--export", "--init-policy"):
        yield "ppo", [flag, "x" * 300]  # a name too long for the system to look at
    yield "bench", ["--seconds", "-1"]
    yield "bench", ["--seconds", "nan", "--env"]
    yield "bench", ["--games", "-3"]


def _main(name: str) -> Callable[[list[str]], Any]:
    if name == "bench":
        from rummy500_env.bench import main as bench

        return bench
    from rummy500_env.training.ppo import main as ppo

    return ppo


@pytest.mark.parametrize(("name", "argv"), list(known_cases()))
def test_cases_the_fuzz_found(no_training: None, name: str, argv: list[str]) -> None:
    o = check(_main(name), argv)
    assert o.code == 2, (argv, o.out[-500:])


def other_cases() -> Iterator[tuple[str, list[str]]]:
    """Cases the fuzz found in the other commands (their fixes are their modules')."""
    yield "watch", ["--players", "x" * 300, "random"]  # OSError: file name too long
    yield "ppo", ["--eval-bots", "x" * 300]  # the same, from the agent-spec check
    yield "play", ["--data-dir", PATHS["file"]]  # FileExistsError
    yield "play", ["--host", "\xad"]  # TypeError: encoding of hostname failed
    yield "play", ["--host", "\n"]  # the error line broken by the unquoted host
    yield "evaluate", ["random", "random", "--out", PATHS["file"]]  # FileExistsError, at the end
    yield "exploit", ["--resume", "x" * 300]  # OSError: file name too long (the engine's check)


@pytest.mark.parametrize(("name", "argv"), list(other_cases()))
def test_cases_the_fuzz_found_in_the_other_commands(
    no_server: None, no_training: None, name: str, argv: list[str]
) -> None:
    from rummy500_env.__main__ import main as watch
    from rummy500_env.evaluation.evaluate import main as evaluate
    from rummy500_env.play.__main__ import main as play
    from rummy500_env.training.exploit import main as exploit
    from rummy500_env.training.ppo import main as ppo

    mains: dict[str, Callable[[list[str]], Any]] = {
        "watch": watch,
        "ppo": ppo,
        "play": lambda a: play(["--no-browser", "--data-dir", str(SCRATCH / "play-data"), *a]),
        "evaluate": lambda a: evaluate([*a, "--games", "1", "--workers", "1", "--episode", "hand"]),
        "exploit": exploit,
    }
    assert check(mains[name], argv).code == 2


# --- the real entry points


ENTRY_CASES = [
    (["-m", "rummy500_env", "--players", "expert", "search:0"], 2),
    (["-m", "rummy500_env", "--seed", "٣", "--players", "random", "random"], None),
    (["-m", "rummy500_env.play", "--pace", "-1"], 2),
    (["-m", "rummy500_env.play", "--rules", "standard,players=5", "--no-browser"], 2),
    (["-m", "rummy500_env.bench", "--seconds", "x"], 2),
    (["-m", "training.evaluate", "greedy"], 2),
    (["-m", "training.evaluate", "greedy", "random", "--rules", "nordic,target"], 2),
    (["-m", "training.ppo", "--learning-rate", "nan"], 2),
    (["-m", "training.ppo", "--resume", PATHS["damaged_run"]], 2),
    (["-m", "training.rllib", "--total-timesteps", "abc"], 2),
]


@pytest.mark.slow
def test_the_real_entry_points_behave_as_main_does() -> None:
    """A few cases through ``python -m`` (side by side, as subprocesses): each ends as its
    ``main`` does in this process."""
    env = os.environ | {"PYTHONPATH": str(ROOT), "PYTHONWARNINGS": "ignore"}  # (a stale build's)
    procs = [
        subprocess.Popen(
            [sys.executable, *argv],
            cwd=SCRATCH / "cwd",
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for argv, _ in ENTRY_CASES
    ]
    for (argv, expected), proc in zip(ENTRY_CASES, procs, strict=True):
        out, err = proc.communicate(timeout=300)
        o = Outcome(proc.returncode, out, err, None)
        wrong = well_ended(o)
        assert wrong is None, f"python {' '.join(argv)}: {wrong}"
        if expected is not None:
            assert o.code == expected, (argv, err[-1000:])
