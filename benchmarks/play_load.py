"""The play server under load: many games at once through its HTTP API, every move checked.

    python benchmarks/play_load.py                       # 20 games to 500, 20 clients
    python benchmarks/play_load.py --games 40 --clients 40 --rules standard,target=250
    python benchmarks/play_load.py --json out.json

It starts ``python -m rummy500_env.play`` on 127.0.0.1 (a free port, a fresh data folder,
the greedy computer) and runs one client thread per game slot, each over its own keep-alive
connection: deal a game, play it to the end as a simple human (draw, "Put down all", discard
the highest card; pass a call window), and time every request. Afterwards, with the server
stopped, it checks that nothing was lost: each game's record (served, written to
``records/``, and in the database) replays to the totals the client was last shown, and its
actions are exactly the moves the client was told of, in order. It prints the moves per
second and the response times (median, 95th percentile, worst); docs/play.md quotes them.
tests/test_play_load.py runs a short version in the test suite.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rummy500_env.engine.numbers import int_option
from rummy500_env.engine.records import Record
from rummy500_env.play.store import Store

ROOT = Path(__file__).resolve().parents[1]
MAX_REQUESTS = 20_000
"""Requests one game may take before the run calls it stuck (a game to 500 takes ~500)."""


@dataclass
class Game:
    """What one client saw of its game: the moves it was told of, per hand, and the end."""

    id: str = ""
    hands: list[list[tuple[int, str]]] = field(default_factory=lambda: [[]])
    totals: list[int] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)


@dataclass
class Report:
    games: int
    clients: int
    rules: str
    moves: int
    requests: int
    seconds: float
    moves_per_s: float
    requests_per_s: float
    p50_ms: float
    p95_ms: float
    max_ms: float
    server_cpu_s: float | None
    problems: list[str]


class Client:
    """One keep-alive connection to the server, timing each request."""

    def __init__(self, port: int) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)

    def post(self, path: str, body: dict[str, Any] | None, game: Game) -> dict[str, Any]:
        data = b"" if body is None else json.dumps(body).encode()
        start = time.perf_counter()
        self.conn.request("POST", path, body=data, headers={"Content-Type": "application/json"})
        response = self.conn.getresponse()
        raw = response.read()
        game.latencies.append(time.perf_counter() - start)
        if response.status not in (200, 201):
            raise RuntimeError(f"POST {path} {body}: {response.status} {raw[:300]!r}")
        return json.loads(raw)  # type: ignore[no-any-return]

    def get(self, path: str) -> Any:
        self.conn.request("GET", path)
        response = self.conn.getresponse()
        raw = response.read()
        if response.status != 200:
            raise RuntimeError(f"GET {path}: {response.status} {raw[:300]!r}")
        return json.loads(raw)


def human_move(state: dict[str, Any]) -> dict[str, Any]:
    """The simple human: draw, put everything down, discard the highest card, else the first
    legal action (pass a call window, decline an empty stock, end a called play)."""
    legal = state["legal"]
    if "draw" in legal:
        return {"action": "draw"}
    if state["plan"]:
        return {"actions": state["plan"]}
    discards = [a for a in legal if a.startswith("discard")]
    if discards and state["phase"] == "play":
        return {"action": discards[-1]}
    return {"action": "pass" if "pass" in legal else legal[0]}


def play_one(client: Client) -> Game:
    """Deal a game and play it to the end; the moves told, per hand, and the last totals."""
    game = Game()
    s = client.post("/api/games", None, game)["state"]
    game.id = s["id"]
    for _ in range(MAX_REQUESTS):
        waiting = s["waiting"]
        if waiting == "game_over":
            game.totals = s["result"]["totals"]
            return game
        if waiting == "you":
            reply = client.post(f"/api/games/{game.id}/actions", human_move(s), game)
            events = reply["events"]
        elif waiting == "computer":
            reply = client.post(f"/api/games/{game.id}/advance", None, game)
            events = [reply["event"]]
        else:
            reply = client.post(f"/api/games/{game.id}/next-hand", None, game)
            events = []
            game.hands.append([])
        game.hands[-1] += [(e["seat"], e["action"]) for e in events]
        s = reply["state"]
    raise RuntimeError(f"game {game.id} did not end in {MAX_REQUESTS} requests")


def start_server(data_dir: Path, rules: str) -> tuple[subprocess.Popen[str], int]:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "rummy500_env.play",
            "--no-browser",
            "--opponent",
            "greedy",
            "--rules",
            rules,
            "--data-dir",
            str(data_dir),
            "--seed",
            "0",
            "--pace",
            "0",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=ROOT,
        env=dict(os.environ, PYTHONUNBUFFERED="1"),
    )
    assert proc.stdout is not None
    seen = []
    for line in proc.stdout:
        seen.append(line)
        found = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
        if found:
            return proc, int(found[1])
    proc.kill()
    raise RuntimeError("the server did not start: " + "".join(seen))


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of a process (Linux; None elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def check(game: Game, served: dict[str, Any], data_dir: Path) -> list[str]:
    """What is wrong with a game's record against what its client was told (empty: all
    good): it replays, to the client's final totals, with exactly the client's moves, and the
    records file and the database hold the same record."""
    record = Record.from_dict(served)
    out = []
    try:
        final = record.replay()
    except Exception as e:  # any failure to replay is a finding, not a crash of the run
        return [f"{game.id}: the record does not replay: {e}"]
    if final.totals != game.totals or final.phase != "game_over":
        out.append(f"{game.id}: replays to {final.phase} {final.totals}, client saw {game.totals}")
    told = [[(p, a) for p, a in hand] for hand in game.hands]
    kept = [[(p, a) for p, a in h.actions] for h in record.hands]
    if told != kept:
        out.append(f"{game.id}: the record's moves differ from the moves the client was told")
    on_disk = Record.load(Store(data_dir).record_file(game.id)).to_dict()
    in_db = Store(data_dir).load(game.id)
    if on_disk != served or in_db is None or in_db.to_dict() != served:
        out.append(f"{game.id}: the record file or the database differs from the served record")
    return out


def run(games: int = 20, clients: int = 20, rules: str = "standard") -> Report:
    """Play `games` games through `clients` concurrent clients; check and time them."""
    with tempfile.TemporaryDirectory(prefix="rummy500-load-") as tmp:
        data_dir = Path(tmp)
        proc, port = start_server(data_dir, rules)
        done: list[Game] = []
        errors: list[str] = []
        todo = list(range(games))
        lock = threading.Lock()

        def worker() -> None:
            client = Client(port)
            while True:
                with lock:
                    if not todo:
                        return
                    todo.pop()
                try:
                    game = play_one(client)
                except Exception as e:  # reported with the figures
                    with lock:
                        errors.append(f"{type(e).__name__}: {e}")
                    return
                with lock:
                    done.append(game)

        try:
            cpu_before = cpu_seconds(proc.pid)
            start = time.perf_counter()
            threads = [threading.Thread(target=worker) for _ in range(clients)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            seconds = time.perf_counter() - start
            cpu_after = cpu_seconds(proc.pid)
            reader = Client(port)
            served = {g.id: reader.get(f"/api/games/{g.id}/record") for g in done}
        finally:
            proc.terminate()  # this run's own server, by its PID
            proc.wait(timeout=30)
        problems = list(errors)
        if len(done) != games:
            problems.append(f"{games - len(done)} of {games} games did not finish")
        for g in done:
            problems += check(g, served[g.id], data_dir)
    latencies = sorted(x for g in done for x in g.latencies)
    moves = sum(len(h) for g in done for h in g.hands)
    cpu = None if cpu_before is None or cpu_after is None else cpu_after - cpu_before
    q = statistics.quantiles(latencies, n=100) if len(latencies) > 1 else [0.0] * 99
    return Report(
        games=games,
        clients=clients,
        rules=rules,
        moves=moves,
        requests=len(latencies),
        seconds=round(seconds, 2),
        moves_per_s=round(moves / seconds, 1),
        requests_per_s=round(len(latencies) / seconds, 1),
        p50_ms=round(q[49] * 1000, 1),
        p95_ms=round(q[94] * 1000, 1),
        max_ms=round((latencies[-1] if latencies else 0.0) * 1000, 1),
        server_cpu_s=None if cpu is None else round(cpu, 2),
        problems=problems,
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--games", type=int_option("games"), default=20)
    ap.add_argument("--clients", type=int_option("clients"), default=20)
    ap.add_argument("--rules", default="standard")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    report = run(args.games, args.clients, args.rules)
    print(json.dumps(asdict(report), indent=1))
    if args.json:
        args.json.write_text(json.dumps(asdict(report), indent=1) + "\n")
    return 1 if report.problems else 0


if __name__ == "__main__":
    sys.exit(main())
