#!/usr/bin/env bash
# The package's figures on a machine with a GPU (docs/training.md, "On a GPU"), in at most
# 9 minutes on one GPU and 16 cores, with no network.
#
#   bash benchmarks/gpu.sh fetch        # here, with the package registry and a Python 3.12
#                                       # (PY312): the wheels that machine lacks into
#                                       # build/gpu-wheels, and the compiled core for 3.12
#   bash benchmarks/gpu.sh [OUT]        # there, from the repository root
#   GPU_SH_QUICK=1 bash benchmarks/gpu.sh   # a smoke test of the script on any machine, CPU too
#
# Without GPU_SH_QUICK=1 it stops at once, with one line, where torch sees no GPU (the full
# sizes would run on the CPU for hours), and before the JAX steps where JAX's default backend
# is not a GPU (the figures measured so far stay in OUT).
#
# The device tool carries `rummy500_env` (with the *.cpython-312-*.so that fetch built: git
# ignores them) and `build/gpu-wheels`. There the package runs from this working tree (on
# PYTHONPATH) on the machine's own torch, with the few wheels it lacks: compiled with the
# carried core when it loads there, else compiled there with the carried mypy, else pure (and
# the table says so). Then it prints one table and writes it to OUT/gpu.md (default runs/gpu):
#   1. the PPO update's samples/s for the ppo and ppo_long networks, and one 4x wider;
#   2. collection samples/s at 1, 4, 8 and 15 workers (240 games, 16 to 240 a process);
#   3. end-to-end learner steps/s with 15 workers, overlap off, on (16 of a rollout's 64 steps
#      lagged, the default bound) and on with all 64 lagged, and the network's
#      inference per decision in a worker's CPU thread against one batched server on the GPU
#      (what decides where inference belongs);
#   3b. the JAX engine's random-play steps/s at batch 1,024 to 262,144 (benchmarks/jax_engine.py);
#   3c. `training.jax_ppo`'s learner steps/s, rollout and update on the GPU (2,048 games, split
#      between every device JAX finds: `devices` all, the device line names them);
#   4. a 5-minute `training.ppo` run from scratch at the faster of 3's overlap off and on (the
#      whole rollout lagged costs learning; its steps sized from that rate), and its policy's
#      win rate against ExpertAgent in 200 games.
# The policy file is OUT/policy.pt; each step's output is OUT/*.log or OUT/*.json (the JSON
# line a benchmark prints last: the runs' device lines come before it).
set -euo pipefail
cd "$(dirname "$0")/.."
WHEELS=build/gpu-wheels

if [ "${1:-}" = fetch ]; then
  # What that machine's image lacks (its numpy, torch, PyYAML, tqdm, TensorBoard, matplotlib
  # and typing-extensions stay as they are): tyro, PettingZoo and Gymnasium with their own
  # small dependencies, and mypy with a setuptools new enough to compile the core there.
  rm -rf "$WHEELS"
  python3 -m pip download --quiet --only-binary=:all: --python-version 3.12 \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 --platform any -d "$WHEELS" \
    "tyro>=0.8" "pettingzoo>=1.24" "gymnasium>=1.0" "mypy==2.4.1" "setuptools>=77"
  rm -f "$WHEELS"/numpy-* "$WHEELS"/typing_extensions-*
  # The compiled core for CPython 3.12, built in place beside this machine's (setup.py).
  PY312=${PY312:-python3.12}
  rm -rf build/py312 && "$PY312" -m venv build/py312
  build/py312/bin/pip install --quiet "mypy==2.4.1" "setuptools>=77" numpy
  build/py312/bin/python setup.py --quiet build_ext --inplace
  ls rummy500_env/_core__mypyc.cpython-312-*.so
  du -sh "$WHEELS"
  exit 0
fi

OUT=${1:-runs/gpu}
QUICK=${GPU_SH_QUICK:-0}
START=$(date +%s)
phase() { echo "== $(( $(date +%s) - START )) s: $*" | tee -a "$OUT/phases.log"; }
if [ "$QUICK" = 1 ]; then  # the same steps at toy sizes: the script's own test
  WORKERS=(1 2); MOST=2; GAMES=8; STEPS=1024; TRAIN_S=20; EVAL_GAMES=4; PY=${PYTHON:-python}
  SIZES=(n_games=$GAMES minibatch_size=256); FLAGS=(--n-games $GAMES --minibatch-size 256)
  JAX_BATCHES=(1 64); JAX_PPO=(n_games=12 n_steps=12 minibatch_size=32); JAX_PPO_STEPS=300
  JAX_EXIT=(n_games=8 n_steps=4 minibatch_size=16); EXIT_LABELS=8
else
  WORKERS=(1 4 8 15); MOST=15; GAMES=240; STEPS=15360; TRAIN_S=300; EVAL_GAMES=200
  PY=${PYTHON:-python3}
  SIZES=(n_games=$GAMES); FLAGS=(--n-games $GAMES)
  JAX_BATCHES=(1024 16384 65536 262144)
  JAX_PPO=(n_games=2048 minibatch_size=8192); JAX_PPO_STEPS=1000000
  JAX_EXIT=(n_games=1024 minibatch_size=8192); EXIT_LABELS=256
fi
if [ "$QUICK" != 1 ] && ! "$PY" -c "import sys, torch; sys.exit(not torch.cuda.is_available())" 2>/dev/null; then
  echo "gpu.sh: torch sees no GPU here (or $PY has no torch), and the full sizes would run on the CPU for hours: run it on a GPU machine, or GPU_SH_QUICK=1 for its toy sizes" >&2
  exit 1
fi
mkdir -p "$OUT"

phase "install"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
if [ "$QUICK" != 1 ]; then
  FIND=(--no-index --find-links "$WHEELS")
  "$PY" -m pip install --quiet "${FIND[@]}" "tyro>=0.8" "pettingzoo>=1.24" "gymnasium>=1.0" \
    >"$OUT/install.log" 2>&1
  if ! "$PY" -c "import rummy500_env, sys; sys.exit(not rummy500_env.COMPILED)" 2>>"$OUT/install.log"; then
    echo "the carried core does not load here: compiling it" | tee -a "$OUT/install.log"
    "$PY" -m pip install --quiet "${FIND[@]}" "mypy==2.4.1" "setuptools>=77" >>"$OUT/install.log" 2>&1
    timeout 300 "$PY" setup.py --quiet build_ext --inplace >>"$OUT/install.log" 2>&1 || true
  fi
fi
"$PY" - <<'EOF' | tee "$OUT/machine.txt"
import os, platform, rummy500_env
from rummy500_env.training.device import what_torch_sees
cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo")
            if line.startswith("model name")), platform.machine())
print(f"machine: {cpu}, {len(os.sched_getaffinity(0))} cores; {what_torch_sees()}; Python "
      f"{platform.python_version()}; rummy500_env {rummy500_env.__version__}, "
      f"{'compiled' if rummy500_env.COMPILED else 'pure'} build")
EOF
BUILD=compiled
grep -q "compiled build" "$OUT/machine.txt" || BUILD=pure

phase "1. the update's samples/s"
"$PY" benchmarks/update_speed.py --config ppo ppo_long --variants eager --repeats 3 --json \
  --set "${SIZES[@]}" collect_workers=$MOST | tail -n 1 >"$OUT/update.json"
"$PY" benchmarks/update_speed.py --config ppo_long --variants eager --repeats 3 --json \
  --set "${SIZES[@]}" collect_workers=$MOST channels=192 hidden=1024 | tail -n 1 >"$OUT/update_wide.json"

phase "2. collection samples/s"
"$PY" benchmarks/train_scaling.py --config ppo --measure collection --overlap off --repeats 1 \
  --workers "${WORKERS[@]}" --steps $STEPS --set "${SIZES[@]}" --json | tail -n 1 >"$OUT/collection.json"

phase "3. end-to-end learner steps/s"
"$PY" benchmarks/train_scaling.py --config ppo --measure learner --overlap off on 64 --repeats 1 \
  --workers $MOST --steps $((2 * STEPS)) --set "${SIZES[@]}" --json | tail -n 1 >"$OUT/learner.json"

phase "inference: in each CPU worker, or batched on the GPU"
GAMES=$GAMES MOST=$MOST "$PY" - >"$OUT/inference.json" <<'EOF'
# The learner's network's forward pass (the ppo config's) per decision: in a collection worker
# (one CPU thread, its share of the games as the batch) or in one server on the learner's
# device (every game's decision as one batch, copies to and from the device included).
import json, os, time, torch
from rummy500_env.training.ppo import args_from_dict
from rummy500_env.training.model import new_model
from rummy500_env.training.settings import load_yaml
from rummy500_env.training.device import pick_device
from rummy500_env.rl.observation import ObservationEncoder

args = args_from_dict(load_yaml("ppo"))
size = ObservationEncoder(args.game_rules()).size
games, workers = int(os.environ["GAMES"]), int(os.environ["MOST"])
def rate(device, batch, threads):
    torch.set_num_threads(threads)
    model = new_model(args).to(device).eval()
    obs = torch.rand(batch, size)
    with torch.no_grad():
        for _ in range(5):
            model(obs.to(device))[0].cpu()
        t, n = time.perf_counter(), 0
        while time.perf_counter() - t < 2:
            model(obs.to(device))[0].cpu()
            n += 1
    return n * batch / (time.perf_counter() - t)
server = pick_device("auto")
print(json.dumps({
    "worker_cpu": rate(torch.device("cpu"), max(1, games // workers), 1),
    "server": rate(server, games, 1), "server_device": str(server),
}))
EOF

if [ "$QUICK" != 1 ]; then
  BACKEND=$("$PY" -c "import jax; print(jax.default_backend())" 2>/dev/null || echo "missing (jax does not import)")
  if [ "$BACKEND" != gpu ]; then
    echo "gpu.sh: JAX's default backend is $BACKEND, not a GPU: stopped before the JAX steps (the figures so far are in $OUT; docs/jax.md says how JAX gets a GPU)" >&2
    exit 1
  fi
fi
phase "the JAX engine: random-play steps/s by batch"
"$PY" benchmarks/jax_engine.py --batch "${JAX_BATCHES[@]}" --rounds 1 --seconds 1 --json \
  | tail -n 1 >"$OUT/jax.json"

phase "3c. training.jax_ppo: learner steps/s on the device"
"$PY" benchmarks/train_throughput.py --config jax_ppo --steps $JAX_PPO_STEPS \
  --set "${JAX_PPO[@]}" --json | tail -n 1 >"$OUT/jax_ppo.json"

phase "3d. training.jax_exit: searched decisions/s on the device, beside training.exit's labels/s"
SETS=(); for s in "${JAX_EXIT[@]}"; do SETS+=(--set "$s"); done
"$PY" benchmarks/teacher_speed.py --rounds 1 --updates 2 --labels $EXIT_LABELS "${SETS[@]}" \
  --json | tail -n 1 >"$OUT/teacher.json"

read -r RATE OVERLAP < <("$PY" -c "
import json; rows = json.load(open('$OUT/learner.json'))
best = max((r for r in rows if r['overlap'] in ('off', 'on')), key=lambda r: r['learner_median'])
print(int(best['learner_median']), '--overlap' if best['overlap'] == 'on' else '--no-overlap')")
TOTAL=$(( (RATE * TRAIN_S / (GAMES * 64) + 1) * GAMES * 64 ))
phase "4. training.ppo from scratch: $TOTAL steps ($RATE/s for ${TRAIN_S} s), $OVERLAP"
rm -rf "$OUT/run"
"$PY" -m training.ppo --run-dir "$OUT/run" --total-timesteps $TOTAL \
  "${FLAGS[@]}" \
  --collect-workers $MOST $OVERLAP --snapshot-every $((TOTAL / 6 + 1)) --checkpoint-every $TOTAL \
  --eval-every $((TOTAL + 1)) --final-eval-games 2 --eval-bots expert >"$OUT/train.log" 2>&1
cp "$OUT/run/policy.pt" "$OUT/policy.pt"
phase "its policy against ExpertAgent, $EVAL_GAMES games"
"$PY" -m training.evaluate "$OUT/policy.pt" expert --games $EVAL_GAMES --seed 7 \
  --workers $MOST --out "$OUT/evaluate" >"$OUT/evaluate.log" 2>&1

phase "the table"
BUILD=$BUILD TOTAL=$TOTAL JAX_PPO="${JAX_PPO[*]}" JAX_EXIT="${JAX_EXIT[*]}" "$PY" - "$OUT" <<'EOF' | tee "$OUT/gpu.md"
import json, os, sys

out = sys.argv[1]
def load(name):
    with open(f"{out}/{name}") as f:
        return json.load(f)

rows = []
for name, wide in (("update.json", ""), ("update_wide.json", " 4x wider")):
    for r in load(name):
        rate = r["variants"]["eager"]["decisions_per_s"]
        rows.append(("the update, samples/s", f"`{r['config']}` network{wide}, {r['device']}", rate))
for r in load("collection.json"):
    rows.append(("collection, samples/s", f"workers: {r['collect_workers']}", r["collection_median"]))
for r in load("learner.json"):
    lagged = {"off": "off", "on": "on, the default bound"}.get(r["overlap"], f"on, {r['overlap']} steps lagged")
    setting = f"workers: {r['collect_workers']}, overlap {lagged}"
    rows.append(("learner steps/s, end to end", setting, r["learner_median"]))
inference = load("inference.json")
rows.append(("inference, decisions/s", "a worker's share, its CPU thread", inference["worker_cpu"]))
rows.append(("inference, decisions/s", f"all games, on {inference['server_device']}", inference["server"]))
jax = load("jax.json")
for name, rate in jax["medians"].items():
    if name.startswith("jax_batch_"):
        batch = int(name.rsplit("_", 1)[1])
        compile_s = jax["compile_s"][str(batch)]
        setting = f"batch {batch:,}, {jax['backend']} (compiled in {compile_s:.0f} s)"
        rows.append(("JAX engine, random-play steps/s", setting, rate))
rows.append(("raw_env steps/s (one CPU core)", "the same run", jax["medians"]["raw_env_steps"]))
rows.append(
    ("`training.jax_ppo` learner steps/s", f"{os.environ['JAX_PPO'].split()[0]}, {jax['backend']}", load("jax_ppo.json")["jax_ppo"])
)
teacher = load("teacher.json")
rows.append(
    ("`training.jax_exit` searched decisions/s", f"{os.environ['JAX_EXIT'].split()[0]}, {jax['backend']}", teacher["jax_exit_per_s"])
)
rows.append(("`training.exit` labels/s (CPU workers)", "its packaged config", teacher["exit_labels_per_s"]))
pair = next(p for p in load("evaluate/results.json")["pairs"] if p["b"] == "expert")
lo, hi = pair["win_rate_a_ci95"]
wall = load("run/state.json")["wall_s"]
print(open(f"{out}/machine.txt").read().strip())
if os.environ["BUILD"] == "pure":
    print("The pure build ran (the compiled core did not build there): collection is slower.")
print("\n| what | setting | figure |\n|---|---|---|")
for what, setting, figure in rows:
    print(f"| {what} | {setting} | {figure:,.0f} |")
print(
    f"| `training.ppo` from scratch | {int(os.environ['TOTAL']):,} steps in "
    f"{wall:.0f} s | {pair['win_rate_a']:.1%} against ExpertAgent ({lo:.1%}-{hi:.1%}, "
    f"{pair['games']} games) |"
)
EOF
phase "done"
