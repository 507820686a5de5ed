"""The web server: a Starlette app for playing (`create_app`) and one for watching a record
(`create_replay_app`), both serving the same static page.

The play API (JSON; every error is ``{"error": "..."}`` with a 4xx status, never a traceback):

=======================================  ===================================================
``GET  /api/config``                     mode, the computer's name, the rules, the pace
``POST /api/games``                      deal a new game; returns ``{"state": ...}`` (201)
``GET  /api/games/{id}``                 the game as the human sees it
``POST /api/games/{id}/actions``         ``{"actions": ["dig 7H", ...]}`` (or ``"action"``):
                                         the human's moves, all or none
``POST /api/games/{id}/advance``         the computer plays one action (the page calls this
                                         at a readable pace)
``POST /api/games/{id}/next-hand``       deal the next hand after the human saw the scores
``GET  /api/games/{id}/record``          the game record, once the game is over (the record
                                         holds the seed, which would reveal the deck before)
=======================================  ===================================================

The computer and the rules are the command line's; no request can choose them. Game ids are
random tokens the browser keeps; each game is saved after every move (`store.Store`), and a
move is answered only once it is saved: a move that cannot be saved is not played (503, the
game in memory back as saved). Which requests are answered at all is `guard.Guard`'s to say
(host, origin, token, size).
"""

from __future__ import annotations

import itertools
import re
import secrets
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from rummy500_env.engine.errors import Rummy500Error
from rummy500_env.engine.game import Game
from rummy500_env.engine.notation import Action
from rummy500_env.engine.numbers import read_json
from rummy500_env.engine.records import Record, RecordError
from rummy500_env.play.guard import BodyTooLarge, Guard, read_body
from rummy500_env.play.store import StaleGameError, Store, StoreError
from rummy500_env.play.table import Computers, PlayError, Setup, Table
from rummy500_env.play.view import describe, table_view

STATIC = Path(__file__).parent / "static"
GAME_ID = re.compile(r"[A-Za-z0-9_-]{8,64}")
MAX_ACTIONS = 64
"""Most actions one request may carry (a "Put down all" is a handful)."""
MAX_ACTION_TEXT = 100
"""Characters one action text may have (the longest, a two-deck meld of jokers, is ~60)."""
QUOTED = 60
"""Characters of a request's own text an error message quotes back, at most."""
CACHED_TABLES = 64
"""Games kept in memory; others are resumed from the store when asked for."""
GAME_LOCKS = 64
"""Locks games are spread over: two games share one only by their ids' hashes."""
T = TypeVar("T")


class PlayService:
    """The games of one server: its setup and computers, the store, and the tables in play.

    A lock per game (one of `GAME_LOCKS`, by the id's hash) makes "apply the move, then save
    it" atomic with respect to a second tab of the same game, while other games go on: one
    game's save waiting on the disk does not hold up another's move. `lock` guards only the
    tables in memory and the seeds.
    """

    def __init__(
        self, setup: Setup, store: Store, seed: int | None, computers: Computers | None = None
    ) -> None:
        self.setup = setup
        self.store = store
        self.computers = computers or Computers(setup)
        self.lock = threading.Lock()
        self._game_locks = [threading.Lock() for _ in range(GAME_LOCKS)]
        self.tables: OrderedDict[str, Table] = OrderedDict()
        self._seeds = itertools.count(seed) if seed is not None else None

    def new_game(self) -> dict[str, Any]:
        """Deal a new game (from the next seed of ``--seed``, or a random one), save it and
        return its view. The view is made before the save, so a game the page cannot be
        shown is never saved under an id the page does not receive."""
        with self.lock:
            seed = next(self._seeds) if self._seeds is not None else secrets.randbits(63)
        table = Table.new(secrets.token_urlsafe(16), self.setup, self.computers, seed)
        view = table.view()
        self.save(table)
        self._keep(table)
        return view

    def table(self, game_id: str) -> Table:
        """The game with this id: in memory, or resumed from the store (404 if unknown)."""
        if not GAME_ID.fullmatch(game_id):
            raise PlayError(404, f"no game with id {game_id[:80]!r}: start a new game")
        with self.lock:
            table = self.tables.get(game_id)
        if table is None:
            try:
                found = self.store.fetch(game_id)
            except StoreError as e:
                raise PlayError(503, f"{e}; try again") from None
            except (RecordError, ValueError) as e:
                raise PlayError(409, f"the saved game {game_id} cannot be resumed: {e}") from None
            if found is None:
                raise PlayError(404, f"no saved game with id {game_id!r}: start a new game")
            try:
                table = Table.resume(game_id, self.setup, self.computers, found[0])
            except RecordError as e:
                raise PlayError(409, f"the saved game {game_id} cannot be resumed: {e}") from None
            table.version = found[1]
        self._keep(table)
        return table

    def save(self, table: Table) -> None:
        """Store the game after a move; once it is over, also write its record file.

        Raises `PlayError` (409 for a game another server changed, 503 for a database that
        cannot be written) when the move is not saved; the caller then forgets the table.
        """
        try:
            table.version = self.store.save(table.id, table.record, table.version)
        except StaleGameError as e:
            self.forget(table.id)
            raise PlayError(409, str(e)) from None
        except StoreError as e:
            self.forget(table.id)
            raise PlayError(
                503, f"the move was not played, since it could not be saved: {e}. Try again"
            ) from None
        path = self.store.record_file(table.id)
        if table.record.finished and not path.exists():
            try:
                table.record.save(path)
            except OSError as e:  # the game row holds the record: it is written next time
                print(f"warning: cannot write the record {path}: {e}", file=sys.stderr)

    def forget(self, game_id: str) -> None:
        """Drop a game from memory, so the next request resumes it as saved."""
        with self.lock:
            self.tables.pop(game_id, None)

    def _keep(self, table: Table) -> None:
        with self.lock:
            self.tables[table.id] = table
            self.tables.move_to_end(table.id)
            while len(self.tables) > CACHED_TABLES:
                self.tables.popitem(last=False)

    def locked(self, game_id: str, work: Callable[[], T]) -> T:
        """`work` under the lock of this game."""
        with self._game_locks[hash(game_id) % GAME_LOCKS]:
            return work()


def create_app(
    setup: Setup,
    data_dir: Path,
    seed: int | None = None,
    pace_ms: int = 700,
    host: str = "127.0.0.1",
    computers: Computers | None = None,
    token: str | None = None,
) -> Starlette:
    """The play app: the page, and the API above, for the computers of `setup`.

    Args:
        setup: the rules and the computer's agent spec.
        data_dir: where games are saved (``games.sqlite3``) and records written (``records/``).
        seed: deal the first new game from this seed, the next from seed + 1, ... (None:
            random seeds).
        pace_ms: the page's pause between two computer moves.
        host: the address served; on loopback, requests naming another host are refused (a
            guard against DNS rebinding: a web page elsewhere cannot drive this server).
        computers: the computer players (default: built from `setup`).
        token: the secret every API request must carry (`guard.Guard`); the command line
            makes one when serving beyond loopback.
    """
    service = PlayService(setup, Store(data_dir), seed, computers)
    app = _app(PlayAPI(service, pace_ms).routes(), host, token)
    app.state.service = service
    return app


class PlayAPI:
    """The play API's endpoints (the table in the module docstring) over one `PlayService`.

    Each request's game work (finding the game, the move, saving it, the new view) runs in one
    piece under its game's lock, in a worker thread: a computer's move may take a while
    (a search agent, a policy network) and must not hold up the event loop.
    """

    def __init__(self, service: PlayService, pace_ms: int) -> None:
        self.service = service
        self.pace_ms = pace_ms

    def routes(self) -> list[BaseRoute]:
        return [
            Route("/api/config", self.config),
            Route("/api/games", self.new_game, methods=["POST"]),
            Route("/api/games/{game_id}", self.get_game),
            Route("/api/games/{game_id}/actions", self.actions, methods=["POST"]),
            Route("/api/games/{game_id}/advance", self.advance, methods=["POST"]),
            Route("/api/games/{game_id}/next-hand", self.next_hand, methods=["POST"]),
            Route("/api/games/{game_id}/record", self.record),
        ]

    async def config(self, request: Request) -> Response:
        setup = self.service.setup
        r = setup.rules
        return JSONResponse(
            {
                "mode": "play",
                "opponent": setup.opponent_label(),
                "players": r.players,
                "rules": r.preset_name() or r.to_dict(),
                "target": r.target,
                "pace_ms": self.pace_ms,
            }
        )

    async def new_game(self, request: Request) -> Response:
        await _body(request, {}, "the computer and the rules are set on the command line")

        def deal() -> dict[str, Any]:
            return {"state": self.service.new_game()}

        # A new game's id is known to no one yet: it needs no game lock.
        return JSONResponse(await run_in_threadpool(deal), status_code=201)

    async def get_game(self, request: Request) -> Response:
        return await self._in_game(request, lambda table: {"state": table.view()})

    async def actions(self, request: Request) -> Response:
        texts = _action_texts(await _body(request, {"action": str, "actions": list}, ""))

        def move(table: Table) -> dict[str, Any]:
            events = table.act(texts)
            return {"events": events, "state": table.view()}

        return await self._in_game(request, move, save=True)

    async def advance(self, request: Request) -> Response:
        await _body(request, {}, "")

        def move(table: Table) -> dict[str, Any]:
            event = table.advance()
            return {"event": event, "state": table.view()}

        return await self._in_game(request, move, save=True)

    async def next_hand(self, request: Request) -> Response:
        await _body(request, {}, "")

        def deal(table: Table) -> dict[str, Any]:
            table.next_hand()
            return {"state": table.view()}

        return await self._in_game(request, deal, save=True)

    async def record(self, request: Request) -> Response:
        def read(table: Table) -> dict[str, Any]:
            if not table.record.finished:
                raise PlayError(
                    409,
                    "the record is available once the game is over: it holds the seed, which "
                    "would reveal every hidden card",
                )
            return table.record.to_dict()

        return await self._in_game(request, read)

    async def _in_game(
        self, request: Request, work: Callable[[Table], dict[str, Any]], save: bool = False
    ) -> Response:
        """Run `work` on the request's game under the lock; with `save`, store the game after
        it (before answering: a move is saved by the time the page hears of it). A move that
        fails past its checks, or cannot be saved, is undone: the table is forgotten, so the
        game in memory is the game on disk."""
        game_id = request.path_params["game_id"]

        def run() -> dict[str, Any]:
            table = self.service.table(game_id)
            try:
                out = work(table)
            except Exception as e:
                if save and not (isinstance(e, PlayError) and e.status < 500):
                    self.service.forget(game_id)  # a refusal (4xx) changed nothing; a bug may have
                raise
            if save:
                self.service.save(table)
            return out

        return JSONResponse(await run_in_threadpool(self.service.locked, game_id, run))


def create_replay_app(
    record: Record, name: str, host: str = "127.0.0.1", token: str | None = None
) -> Starlette:
    """The replay app: the page shows `record` step by step with every hand visible.

    The record is replayed once here (every action checked, `RecordError` if it does not
    replay), and each step's table is served as the page asks for it.
    """
    frames = list(record.frames())
    names = _seat_names(record.players)
    steps: list[dict[str, Any]] = []
    for i, f in enumerate(frames):
        step: dict[str, Any] = {"hand": f.hand, "step": f.step, "player": f.player, "text": ""}
        if f.action is not None and f.player is not None:
            # Told as the mover knows it (every hand is shown here), in the third person.
            before = Game.from_position(frames[i - 1].position).seat_view(f.player)
            after = Game.from_position(f.position).seat_view(f.player)
            event = describe(before, after, Action.parse(f.action), names, you=False)
            step.update(action=f.action, text=event["text"], cards=event["cards"])
        else:
            step["text"] = f"Hand {f.hand + 1} is dealt; {names[f.position.turn]} leads"
        steps.append(step)
    summary = {
        "mode": "replay",
        "file": name,
        "players": names,
        "rules": record.rules.preset_name() or record.rules.to_dict(),
        "target": record.rules.target,
        "steps": steps,
        "hands": [h.to_dict() | {"actions": len(h.actions)} for h in record.hands],
        "result": None
        if not record.finished
        else {"winner": record.winner, "totals": record.final_totals},
        "meta": record.meta,
    }

    async def config(request: Request) -> Response:
        return JSONResponse({k: v for k, v in summary.items() if k != "steps"})

    async def replay(request: Request) -> Response:
        return JSONResponse(summary)

    async def frame(request: Request) -> Response:
        i = request.path_params["index"]
        if not 0 <= i < len(frames):
            raise PlayError(404, f"no step {i}: the record has steps 0..{len(frames) - 1}")
        g = Game.from_position(frames[i].position)  # watching a record: every hand shown
        view = table_view(g.seat_view(0), names, [g.hand(q) for q in range(g.players)])
        return JSONResponse({"index": i, "step": steps[i], "state": view})

    routes: list[BaseRoute] = [
        Route("/api/config", config),
        Route("/api/replay", replay),
        Route("/api/replay/frames/{index:int}", frame),
    ]
    return _app(routes, host, token)


def _seat_names(players: list[str]) -> list[str]:
    """How a replay names each seat: its label (a policy file by its stem) and its seat."""
    out = []
    for seat, label in enumerate(players):
        short = Path(label).stem if label.endswith(".pt") else label
        out.append(f"{short} (seat {seat})")
    return out


def _app(routes: list[BaseRoute], host: str, token: str | None) -> Starlette:
    """The app around some API routes: the page, its static files, JSON errors, `Guard`."""

    async def index(request: Request) -> Response:
        return FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-store"})

    return Starlette(
        routes=[
            Route("/", index),
            *routes,
            Mount("/static", StaticFiles(directory=STATIC), name="static"),
        ],
        middleware=[Middleware(Guard, host=host, token=token)],
        exception_handlers={
            ClientDisconnect: _client_gone,
            PlayError: _play_error,
            HTTPException: _http_error,
            Exception: _server_error,
        },
    )


async def _body(request: Request, fields: dict[str, type], hint: str) -> dict[str, Any]:
    """The JSON object of a request body with only these fields (an empty body is {}).

    At most `MAX_BODY` bytes are read (413 beyond); JSON nested too deep for the parser is a
    400 like any other bad JSON; error messages quote the body's own text only briefly."""
    try:
        raw = await read_body(request)
    except BodyTooLarge as e:
        raise PlayError(413, str(e)) from None
    if not raw.strip():
        return {}
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise PlayError(400, "the request body is not JSON: it is not UTF-8 text") from None
    try:  # the parser's messages name a place, never the text
        data = read_json(text, "the request body is not JSON this server reads", Rummy500Error)
    except Rummy500Error as e:  # not JSON, nested too deeply, a number too long to read
        raise PlayError(400, str(e)) from None
    if not isinstance(data, dict):
        raise PlayError(400, f"the request body must be a JSON object, not {type(data).__name__}")
    unknown = sorted(set(data) - set(fields))
    if unknown:
        takes = ", ".join(fields) if fields else "no fields"
        shown = [k[:QUOTED] for k in unknown[:5]] + (["..."] if len(unknown) > 5 else [])
        raise PlayError(
            400,
            f"unknown field(s) {shown}: this request takes {takes}"
            + (f" ({hint})" if hint else ""),
        )
    for key, kind in fields.items():
        if key in data and not isinstance(data[key], kind):
            raise PlayError(400, f"{key!r} must be a JSON {kind.__name__.replace('str', 'string')}")
    return data


def _action_texts(body: dict[str, Any]) -> list[str]:
    """The actions of an actions request: ``{"action": "draw"}`` or ``{"actions": [...]}``."""
    if ("action" in body) == ("actions" in body):
        raise PlayError(400, 'give "action": "draw" or "actions": ["meld 9C 9D 9H", ...]')
    texts = [body["action"]] if "action" in body else body["actions"]
    if not texts or len(texts) > MAX_ACTIONS or not all(isinstance(t, str) for t in texts):
        raise PlayError(400, f'"actions" must be a list of 1 to {MAX_ACTIONS} action texts')
    for t in texts:
        if len(t) > MAX_ACTION_TEXT:
            raise PlayError(
                400,
                f"an action text has at most {MAX_ACTION_TEXT} characters; this one has "
                f"{len(t)} ({t[:QUOTED]!r}...)",
            )
    return texts


async def _play_error(request: Request, exc: Exception) -> Response:
    status = exc.status if isinstance(exc, PlayError) else 400
    return JSONResponse({"error": str(exc)}, status_code=status)


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    detail = exc.detail
    path = request.scope["path"]  # the path routed (request.url may follow the Host header)
    if exc.status_code == 404:
        detail = f"no such page or API: {path[:QUOTED]}"
    elif exc.status_code == 405:
        detail = f"{request.method} is not allowed on {path[:QUOTED]}"
    return JSONResponse({"error": detail}, status_code=exc.status_code, headers=exc.headers)


async def _client_gone(request: Request, exc: Exception) -> Response:
    """The client hung up before its request body had arrived (a closed tab, a dropped
    connection): the request did nothing (bodies are read before any game work), and no one
    is there for an answer, so it ends here quietly instead of as a server error."""
    return Response(status_code=400)


async def _server_error(request: Request, exc: Exception) -> Response:
    """A bug, not a bad request: say what kind in one line (the console has the traceback)."""
    return JSONResponse(
        {"error": f"internal error ({type(exc).__name__}: {exc}); the server's console has more"},
        status_code=500,
    )
