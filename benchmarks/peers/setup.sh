#!/usr/bin/env bash
# Builds the virtual environment benchmarks/peers/peers_bench.py runs in: the peers the package
# is measured against (RLCard, OpenSpiel, PettingZoo). PEERS_VENV moves it (default:
# $TMPDIR/rummy500-peers, which python -m rummy500_env.bench looks for too).
set -euo pipefail
VENV=${PEERS_VENV:-${TMPDIR:-/tmp}/rummy500-peers}
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/pip" install -q "pettingzoo[classic]==1.27.0" open-spiel==2.0.2 gymnasium numpy
# gin_rummy_v4 left PettingZoo in 1.27.0: its last release goes beside, imported only by the
# peer that plays it (peers_bench.py puts it first on that child's path).
"$VENV/bin/pip" install -q --no-deps --target "$VENV/extra/pz1261" pettingzoo==1.26.1
echo "peers ready: $VENV/bin/python $(dirname "$0")/peers_bench.py --list"
