"""``python -m rummy500_env.play``: play Rummy 500 in the browser against any agent, or watch a
recorded game step by step.

    python -m rummy500_env.play                                    # against the expert bot
    python -m rummy500_env.play --opponent models/rummy500-ppo-standard.pt
    python -m rummy500_env.play --players 3 --opponent greedy --rules nordic
    python -m rummy500_env.play --rules standard,target=300,discard_to_go_out=true
    python -m rummy500_env.play --replay runs/records/pair0-deal0-seating0.json

It serves the page on 127.0.0.1 (a free port unless --port says), prints the address and
opens the browser. Served beyond loopback (--host 0.0.0.0) it warns, prints every address
it can be reached at, and requires a secret token in the URL for every request. Games are
saved after every move in the user's data folder (--data-dir), so a reload or a restart
carries on; each finished game's record is written there too.
docs/play.md has the details and the record format.
"""

from __future__ import annotations

import argparse
import ipaddress
import re
import secrets
import socket
import sys
import threading
import time
import webbrowser
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rummy500_env.agents.registry import ALLOWED, parse_spec, resolve_spec
from rummy500_env.engine.errors import RulesError, Rummy500Error
from rummy500_env.engine.numbers import int_option, shown
from rummy500_env.engine.rules import PRESETS, Rules

PLAYERS = (2, 3, 4)
"""Seats the page lays out: the human and one to three computers."""
EXTRA_HINT = 'the play page needs its extra: pip install -e ".[play]" (in a checkout)'


def page_rules(text: str, players: int | None) -> Rules:
    """``--rules`` (`Rules.parse`: a preset, ``preset,field=value,...`` or a JSON object) with
    ``--players``, for a table the page can lay out."""
    rules = Rules.parse(text, players=players)
    if rules.players not in PLAYERS:
        raise RulesError(f"players={rules.players}: the play page seats 2 to 4 players")
    return rules


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="python -m rummy500_env.play",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument(
        "--opponent", default="expert", metavar="AGENT", help=f"the computer: {ALLOWED}"
    )
    ap.add_argument(
        "--rules",
        default="standard",
        help=f"a preset ({', '.join(PRESETS)}) and field=value overrides, comma separated, "
        "or a JSON object of rules fields",
    )
    ap.add_argument(
        "--players",
        type=int_option("players"),
        choices=PLAYERS,
        default=None,
        help="seats, you included (2)",
    )
    ap.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to serve on (127.0.0.1); another address opens the page to the "
        "network, behind a secret token printed at start",
    )
    ap.add_argument(
        "--port", type=int_option("port", 0, 65535), default=0, help="port (default: a free one)"
    )
    ap.add_argument("--no-browser", action="store_true", help="do not open a browser")
    ap.add_argument("--data-dir", type=Path, default=None, help="where games are saved")
    ap.add_argument(
        "--seed", type=int_option("seed"), default=None, help="deal games from seed, seed+1, ..."
    )
    ap.add_argument(
        "--pace",
        type=int_option("pace"),
        default=700,
        metavar="MS",
        help="pause between computer moves (700)",
    )
    ap.add_argument("--replay", type=Path, default=None, metavar="FILE", help="watch a record")
    return ap


def _open_when_ready(server: Any, url: str) -> None:
    """Open the browser once the server accepts connections."""
    for _ in range(200):
        if server.started:
            webbrowser.open(url)
            return
        time.sleep(0.05)


HOST_LABEL = r"[A-Za-z0-9_][A-Za-z0-9_-]{0,62}"  # "_": container names (my_service)
HOST_NAME = re.compile(rf"{HOST_LABEL}(?:\.{HOST_LABEL})*\.?")
"""A host name ``--host`` takes: ASCII labels of letters, digits, ``-`` and ``_``, dot
separated."""


def host_problem(host: str) -> str | None:
    """What is wrong with `host` as ``--host``, or None: an IP address (IPv4, or IPv6 bare or
    in brackets) or an ASCII host name of at most 253 characters. Checked before anything is
    written or served: the socket layer fails on other text in ways that are not this
    package's errors (``TypeError: encoding of hostname failed`` for ``\xad``), and a control
    character would break the one error line."""
    try:
        ipaddress.ip_address(host.strip("[]"))
        return None
    except ValueError:
        pass
    if len(host) <= 253 and HOST_NAME.fullmatch(host):
        return None
    return (
        f"--host {shown(host)} is not an address to serve on: use an IP address "
        "(127.0.0.1, 0.0.0.0, ::1) or a host name of ASCII letters, digits, '-', '_' and '.'"
    )


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
        sock.listen(128)  # connections wait from now on, so the printed address works at once
    except (OSError, TypeError, UnicodeError) as e:  # TypeError: a name the system cannot encode
        sock.close()
        why = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        raise Rummy500Error(
            f"cannot listen on {host!r} port {port} ({why}): choose another --host or --port, "
            "or leave --port out for a free one"
        ) from None
    return sock


ROUTE_PROBES: dict[int, str] = {socket.AF_INET: "192.0.2.1", socket.AF_INET6: "2001:db8::1"}
"""Documentation addresses (RFC 5737, RFC 3849), never routed: `outgoing_address` "connects"
a UDP socket to one only to learn which local address the system would send from."""
Resolver = Callable[..., list[Any]]


def outgoing_address(family: int) -> str | None:
    """The address of the interface this machine's traffic leaves by (None without a route).
    A UDP ``connect`` picks the route and the local address without sending anything."""
    try:
        with socket.socket(family, socket.SOCK_DGRAM) as probe:
            probe.connect((ROUTE_PROBES[family], 9))
            return str(probe.getsockname()[0])
    except OSError:
        return None


def addresses(
    host: str,
    resolve: Resolver = socket.getaddrinfo,
    route: Callable[[int], str | None] = outgoing_address,
) -> list[str]:
    """The addresses a server bound to `host` is reached at: the host itself, or for a
    wildcard (``0.0.0.0``, ``::``) this machine's own addresses: the outgoing interface's
    (`route`), then those its host name resolves to (`resolve`, ``getaddrinfo``'s form), then
    loopback only if nothing else is found. The host name alone is not enough: on Debian
    and Ubuntu /etc/hosts maps it to 127.0.1.1."""
    if host not in ("0.0.0.0", "::"):
        return [host]
    family = socket.AF_INET6 if host == "::" else socket.AF_INET
    found = [route(family)]
    try:
        infos = resolve(socket.gethostname(), None, family, socket.SOCK_STREAM)
    except OSError:
        infos = []
    found += [str(info[4][0]) for info in infos]
    reachable: list[str] = []
    for address in found:
        if address is not None and address not in reachable and reaches_others(address):
            reachable.append(address)
    return reachable or ["::1" if host == "::" else "127.0.0.1"]


def reaches_others(address: str) -> bool:
    """Whether another machine could reach this one at `address`: not loopback, nor an IPv6
    link-local address (which needs an interface name to be of use), nor unspecified."""
    try:
        ip = ipaddress.ip_address(address.split("%")[0])
    except ValueError:
        return False
    return not (ip.is_loopback or ip.is_link_local or ip.is_unspecified)


def serve(
    app: Any, sock: socket.socket, banner: str, open_browser: bool, token: str | None = None
) -> None:
    """Serve `app` on a bound socket until Ctrl+C, printing its addresses first (with the
    token, when there is one: printed once, here)."""
    import uvicorn

    from rummy500_env.play.guard import is_loopback

    host, port = sock.getsockname()[:2]
    query = f"?token={token}" if token else ""
    urls = [f"http://{f'[{a}]' if ':' in a else a}:{port}/{query}" for a in addresses(host)]
    if not is_loopback(host):
        print(
            f"WARNING: serving on {host}, beyond this machine: anyone who can reach port "
            f"{port} can open the page. Every request needs the secret token in the address "
            "below; share it only with whoever should play. Use --host 127.0.0.1 (the default) "
            "to keep the server to this machine.",
            file=sys.stderr,
            flush=True,
        )
    listed = "\n".join(f"  {u}" for u in urls)
    print(f"{banner}\n{listed}\n(Ctrl+C stops the server)", flush=True)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    if open_browser:
        threading.Thread(target=_open_when_ready, args=(server, urls[0]), daemon=True).start()
    server.run(sockets=[sock])


def _play_app(args: argparse.Namespace, token: str | None) -> tuple[Any, str]:
    from rummy500_env.play.server import create_app
    from rummy500_env.play.store import default_data_dir
    from rummy500_env.play.table import Setup

    rules = page_rules(args.rules, args.players)
    spec = resolve_spec(args.opponent, rules)  # "model": the shipped policy for these rules
    if parse_spec(spec).kind == "policy":
        spec = str(Path(spec).resolve())  # saved games name the file wherever the server runs
    data_dir = args.data_dir or default_data_dir()
    app = create_app(Setup(rules, spec), data_dir, args.seed, args.pace, args.host, token=token)
    damaged = app.state.service.store.damaged
    if damaged:
        print(f"WARNING: {damaged}", file=sys.stderr, flush=True)
    label = app.state.service.setup.opponent_label()
    return app, f"Rummy 500 against {label} (games saved in {data_dir})"


def _replay_app(args: argparse.Namespace, token: str | None) -> tuple[Any, str]:
    from rummy500_env.engine.records import Record, RecordError
    from rummy500_env.play.server import create_replay_app

    record = Record.load(args.replay)
    try:
        app = create_replay_app(record, args.replay.name, args.host, token)
    except RecordError as e:  # read, but does not replay
        raise RecordError(f"{str(args.replay)!r}: {e}") from None
    return app, f"Replay of {args.replay} ({len(record.hands)} hands)"


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.pace < 0:
        print("error: --pace must be 0 or more milliseconds", file=sys.stderr)
        return 2
    problem = host_problem(args.host)
    if problem is not None:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    sock: socket.socket | None = None
    try:
        from rummy500_env.play.guard import is_loopback  # the play extra (starlette)

        token = None if is_loopback(args.host) else secrets.token_urlsafe(24)
        sock = _bind(args.host, args.port)  # before the data folder is made or written
        app, banner = (_replay_app if args.replay else _play_app)(args, token)
    except ModuleNotFoundError as e:
        if sock is not None:
            sock.close()
        need = "PyTorch (pip install torch)" if e.name == "torch" else EXTRA_HINT
        print(f"error: {e.name} is not installed: {need}", file=sys.stderr)
        return 2
    except Rummy500Error as e:
        if sock is not None:
            sock.close()
        print(f"error: {e}", file=sys.stderr)
        return 2
    try:
        serve(app, sock, banner, not args.no_browser, token)
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
