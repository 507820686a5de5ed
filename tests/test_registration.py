"""``import rummy500_env`` registers ``Rummy500-v0`` with Gymnasium and ``rummy500_v0`` with
PettingZoo's registry (1.27+), whichever is imported first, without importing either itself
(tests/test_imports.py keeps the engine free of them)."""

from __future__ import annotations

import subprocess
import sys
import warnings

import pytest

from rummy500_env.rl import registration


def run(code: str) -> str:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


MAKE = (
    "e = gymnasium.make('Rummy500-v0', opponents=GreedyAgent(Rules.preset('standard')), "
    "seat='random', episode='hand'); o, _ = e.reset(seed=0);"
    "print(e.spec.id, o.shape[0], int(e.unwrapped.action_masks().sum()) > 0,"
    " type(e.unwrapped.opponents[0]).__name__)"
)


@pytest.mark.parametrize(
    "imports",
    ["import rummy500_env, gymnasium", "import gymnasium, rummy500_env"],
    ids=["package-first", "gymnasium-first"],
)
def test_gymnasium_make_in_either_import_order(imports):
    out = run(
        f"{imports}\nfrom rummy500_env import Rules\n"
        f"from rummy500_env.agents import GreedyAgent\n{MAKE}"
    )
    assert out.split()[0] == "Rummy500-v0"
    assert out.split()[2:] == ["True", "GreedyAgent"]


def test_gymnasium_module_prefix_imports_the_package():
    """Gymnasium's "module:id" form works from a bare interpreter."""
    out = run("import gymnasium; e = gymnasium.make('rummy500_env:Rummy500-v0'); print(e.spec.id)")
    assert out == "Rummy500-v0"


def test_the_hook_leaves_gymnasium_as_it_found_it():
    """After the registering import, the finder is gone and gymnasium's own loader is back."""
    out = run(
        "import sys, rummy500_env, gymnasium;"
        "from rummy500_env.rl.registration import _AfterImport;"
        "print(type(gymnasium.__loader__).__name__, type(gymnasium.__spec__.loader).__name__,"
        " any(isinstance(f, _AfterImport) and f.name == 'gymnasium' for f in sys.meta_path))"
    )
    assert out == "SourceFileLoader SourceFileLoader False"


def test_importing_the_package_twice_registers_once():
    """Importing the package again (a reload runs `install` again) before either library is
    imported leaves one finder per library; once they are imported, installing again keeps
    the first registrations (the same spec objects, and no "overriding" warning)."""
    out = run(
        "import importlib, sys, warnings\n"
        "warnings.simplefilter('error')  # gymnasium warns when an id is registered again\n"
        "import rummy500_env\n"
        "importlib.reload(rummy500_env)\n"
        "from rummy500_env.rl import registration as r\n"
        "print(sorted(f.name for f in sys.meta_path if isinstance(f, r._AfterImport)))\n"
        "import gymnasium, pettingzoo\n"
        "try:\n    import textarena  # the text extra\nexcept ImportError:\n    textarena = None\n"
        "has = hasattr(pettingzoo, 'aec_registry')\n"
        "pz = lambda: (pettingzoo.aec_registry['rummy500-v0'],"
        " pettingzoo.parallel_registry['rummy500-v0']) if has else ()\n"
        "first, pz_first = gymnasium.registry[r.GYMNASIUM_ID], pz()\n"
        "importlib.reload(rummy500_env); r.install(); r.register_gymnasium()\n"
        "if has: assert r.register_pettingzoo()\n"
        "print(gymnasium.registry[r.GYMNASIUM_ID] is first,"
        " all(a is b for a, b in zip(pz(), pz_first, strict=True)),"
        " sum(k.startswith('Rummy500') for k in gymnasium.registry),"
        " [f.name for f in sys.meta_path if isinstance(f, r._AfterImport)],"
        " textarena is not None)"
    )
    finders, registered = out.splitlines()
    assert finders == "['gymnasium', 'pettingzoo', 'textarena']"
    # A finder stays only for a library not imported: textarena without the text extra.
    with_text = registered.endswith("True")
    assert registered == ("True True 1 [] True" if with_text else "True True 1 ['textarena'] False")


def test_pettingzoo_registry():
    pettingzoo = pytest.importorskip("pettingzoo")
    if not hasattr(pettingzoo, "register"):
        pytest.skip(f"PettingZoo {pettingzoo.__version__} has no registry (1.27 added it)")
    from pettingzoo.test import parallel_api_test

    import rummy500_env  # noqa: F401 - registers

    aec = pettingzoo.make("aec", "rummy500_v0", rules="nordic")
    aec.reset(seed=1)
    assert aec.unwrapped.rules.preset_name() == "nordic"
    parallel = pettingzoo.make("parallel", "rummy500_v0")
    parallel_api_test(parallel, num_cycles=50)


def test_a_failing_registration_warns_instead_of_breaking_the_import():
    def broken() -> None:
        raise RuntimeError("registry changed")

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        registration._quietly("gymnasium", broken)
    assert any("could not register with gymnasium" in str(w.message) for w in caught)
