"""Where the play page's games are kept: one SQLite row per game, its record as JSON.

The server writes a game's record after every move, each write its own committed transaction,
so a server killed between two moves loses nothing and a restart resumes the game from the
row (`Table.resume` replays it). SQLite because it is in the standard library, survives a
crash mid-write, and needs no server; a fresh connection per call because the web server
answers from a thread pool.

Each row carries a version, raised by every write and checked by it (``UPDATE ... WHERE
version = ?``): a second server on the same folder that writes from a stale copy of a game
is refused (`StaleGameError`) instead of overwriting the other's moves. A database that fails
SQLite's ``PRAGMA quick_check`` when the store opens is moved aside, never written over
(`Store.damaged` says where it went).
"""

from __future__ import annotations

import datetime
import json
import os
import sqlite3
import sys
import time
from contextlib import closing
from pathlib import Path

from rummy500_env.engine.errors import Rummy500Error
from rummy500_env.engine.numbers import read_json
from rummy500_env.engine.records import Record, RecordError

SCHEMA = """CREATE TABLE IF NOT EXISTS games (
    id TEXT PRIMARY KEY,
    updated REAL NOT NULL,
    record TEXT NOT NULL,
    version INTEGER NOT NULL DEFAULT 1
)"""
BUSY_TIMEOUT_S = 5.0
"""How long a write waits for another program holding the database before it gives up."""


class StoreError(Rummy500Error):
    """The database could not be read or written (locked by another program, damaged, the
    disk full); the message names the file. Nothing was saved by the call that raised it."""


class StaleGameError(StoreError):
    """The saved game changed since this server read it: another server on the same data
    folder played it. The write was refused; the other server's moves stand."""


def default_data_dir() -> Path:
    """The user's data folder for this package: ``$XDG_DATA_HOME/rummy500_env`` (default
    ``~/.local/share/rummy500_env``) on Linux, ``~/Library/Application Support/rummy500_env``
    on macOS, ``%LOCALAPPDATA%\\rummy500_env`` on Windows."""
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Application Support"
    else:
        base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return base / "rummy500_env"


class Store:
    """Saved games in ``DIR/games.sqlite3`` and finished games' records in ``DIR/records/``."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.records = directory / "records"
        self.path = directory / "games.sqlite3"
        self.damaged: str | None = None
        """Set when the database was found damaged at start: what was wrong and where the
        damaged file now is (the server prints it)."""
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except (OSError, ValueError) as e:  # a file there or above it, no permission, a name
            # too long (OSError); a NUL byte in the name (ValueError)
            why = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
            raise StoreError(
                f"cannot use {str(directory)!r} as the data folder ({why}): choose another "
                "--data-dir"
            ) from None
        problem = self._check()
        if problem is not None:
            self.damaged = self._set_aside(problem)
        try:
            with self._connect() as db:
                db.execute("PRAGMA journal_mode=WAL")  # a commit is one fsync, not three
            with self._connect() as db, db:
                db.execute(SCHEMA)
                columns = {row[1] for row in db.execute("PRAGMA table_info(games)")}
                if "version" not in columns:  # a database from before versions
                    db.execute("ALTER TABLE games ADD COLUMN version INTEGER NOT NULL DEFAULT 1")
        except sqlite3.Error as e:
            raise StoreError(f"cannot open the game database {self.path}: {e}") from None

    def _connect(self) -> closing[sqlite3.Connection]:
        db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S)
        db.execute("PRAGMA synchronous=FULL")  # in WAL mode too: a commit reaches the disk
        return closing(db)

    def _check(self) -> str | None:
        """What is wrong with an existing database file, or None (absent or sound)."""
        if not self.path.exists():
            return None
        if self.path.stat().st_size == 0:  # SQLite writes a header the moment it creates one
            return "the file is empty (truncated)"
        try:
            with self._connect() as db:
                rows = db.execute("PRAGMA quick_check").fetchall()
        except sqlite3.Error as e:
            return str(e)
        found = [str(r[0]) for r in rows]
        return None if found == ["ok"] else "; ".join(found[:3])

    def _set_aside(self, problem: str) -> str:
        """Move a damaged database (and its journal) aside; returns the message to print."""
        stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
        aside = self.path.with_name(f"{self.path.name}.damaged-{stamp}")
        for suffix in ("", "-journal", "-wal", "-shm"):
            part = Path(f"{self.path}{suffix}")
            if part.exists():
                part.rename(Path(f"{aside}{suffix}"))
        return (
            f"the game database {self.path} is damaged ({problem}); it was moved to {aside} "
            f"and a new empty one started. Games finished before are in {self.records}; to "
            f"try to recover unfinished ones: sqlite3 {aside} .recover | sqlite3 recovered.db"
        )

    def save(self, game_id: str, record: Record, version: int = 0) -> int:
        """Store a game's record, committed before returning; returns its new version.

        `version` is the version this server last read or wrote (0: a new game). Raises
        `StaleGameError` if the saved game is no longer at that version, `StoreError` if the
        database cannot be written; either way nothing is saved.
        """
        text = json.dumps(record.to_dict(), separators=(",", ":"))
        try:
            with self._connect() as db, db:
                if version == 0:
                    cur = db.execute(
                        "INSERT OR IGNORE INTO games (id, updated, record, version) "
                        "VALUES (?, ?, ?, 1)",
                        (game_id, time.time(), text),
                    )
                else:
                    cur = db.execute(
                        "UPDATE games SET updated = ?, record = ?, version = version + 1 "
                        "WHERE id = ? AND version = ?",
                        (time.time(), text, game_id, version),
                    )
        except sqlite3.Error as e:
            raise StoreError(f"cannot save to {self.path}: {e}") from None
        if cur.rowcount != 1:
            raise StaleGameError(
                f"game {game_id} was changed by another server using the same data folder "
                f"({self.directory}) since this one read it; its moves were kept and this "
                "move was not played. Reload the page to carry on from the saved game, and run "
                "one server per data folder (--data-dir)"
            )
        return version + 1

    def fetch(self, game_id: str) -> tuple[Record, int] | None:
        """The saved record of a game and its version, or None if there is none
        (`RecordError` if the row cannot be read as a record, `StoreError` if the database
        cannot be read)."""
        try:
            with self._connect() as db:
                row = db.execute(
                    "SELECT record, version FROM games WHERE id = ?", (game_id,)
                ).fetchone()
        except sqlite3.Error as e:
            raise StoreError(f"cannot read {self.path}: {e}") from None
        if row is None:
            return None
        data = read_json(row[0], f"the saved game {game_id!r}", RecordError)
        return Record.from_dict(data), int(row[1])

    def load(self, game_id: str) -> Record | None:
        """The saved record of a game, or None if there is none (as `fetch`)."""
        found = self.fetch(game_id)
        return None if found is None else found[0]

    def record_file(self, game_id: str) -> Path:
        """Where a finished game's record is written."""
        return self.records / f"rummy500-{game_id}.json"
