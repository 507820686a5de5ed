"""Where the play page's games are kept: one SQLite row per game, its record as JSON.

The server writes a game's record after every move, each write its own committed transaction,
so a server killed between two moves loses nothing and a restart resumes the game from the
row (`Table.resume` replays it). SQLite because it is in the standard library, survives a
crash mid-write, and needs no server; a fresh connection per call because the web server
answers from a thread pool.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import time
from contextlib import closing
from pathlib import Path

from rummy500_env.engine.records import Record

SCHEMA = """CREATE TABLE IF NOT EXISTS games (
    id TEXT PRIMARY KEY,
    updated REAL NOT NULL,
    record TEXT NOT NULL
)"""


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
        directory.mkdir(parents=True, exist_ok=True)
        with closing(sqlite3.connect(self.path)) as db, db:
            db.execute(SCHEMA)

    def save(self, game_id: str, record: Record) -> None:
        """Store a game's record (replacing the previous one), committed before returning."""
        text = json.dumps(record.to_dict(), separators=(",", ":"))
        with closing(sqlite3.connect(self.path)) as db, db:
            db.execute(
                "INSERT INTO games (id, updated, record) VALUES (?, ?, ?) ON CONFLICT(id) "
                "DO UPDATE SET updated = excluded.updated, record = excluded.record",
                (game_id, time.time(), text),
            )

    def load(self, game_id: str) -> Record | None:
        """The saved record of a game, or None if there is none (`RecordError` if the row
        cannot be read as a record)."""
        with closing(sqlite3.connect(self.path)) as db:
            row = db.execute("SELECT record FROM games WHERE id = ?", (game_id,)).fetchone()
        return None if row is None else Record.from_dict(json.loads(row[0]))

    def record_file(self, game_id: str) -> Path:
        """Where a finished game's record is written."""
        return self.records / f"rummy500-{game_id}.json"
