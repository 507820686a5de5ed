"""Writing a file so that a reader never sees half of it, and a full disk is one clear error.

`write_atomically` is the package's one "write a temporary file, then rename it": records,
policy files, a run's JSON files, checkpoints and labels all go through it. Its temporary
name (`temporary_name`) starts with a dot and ends in ``.tmp``, so no pattern a reader globs
(``round_*.npz``, ``step_*``, ``*.json``) ever matches a file half written; a failed write
removes it, and `remove_leftovers` clears those a killed process left.

A full disk shows in many ways: ``OSError`` ENOSPC or EDQUOT from Python's own writes, and
from torch a ``RuntimeError`` that says "unexpected pos" and nothing of the disk. Any failed
write after which the disk has next to no free space (`LOW_SPACE`) is taken for a full disk
too, and becomes `DiskFullError`, naming the path and the space left.

Standard library only: the engine's records use it.
"""

from __future__ import annotations

import errno
import os
import shutil
import uuid
from collections.abc import Callable
from pathlib import Path

from rummy500_env.engine.errors import Rummy500Error

LOW_SPACE = 1 << 20
"""Free bytes under which a failed write is put down to a full disk (a full one has a few
blocks left at most)."""
DISK_FULL_ERRNOS = {errno.ENOSPC, errno.EDQUOT}
"""The errors the system gives for a full disk or a spent quota."""


class DiskFullError(Rummy500Error):
    """A write failed for want of disk space; the message names the path and the space left."""


def temporary_name(path: Path) -> Path:
    """A fresh name beside `path` for a write under way: hidden, unique (two writers of one
    path never share it) and ending in ``.tmp``."""
    return path.with_name(f".{path.name}.{uuid.uuid4().hex[:12]}.tmp")


def write_atomically(path: str | os.PathLike[str], write: Callable[[Path], object]) -> Path:
    """Have `write` fill a temporary path beside `path` (a file, or a folder), then rename it
    to `path`, replacing what was there: a reader sees the old contents or the new, never a
    part. On any failure the temporary path is removed; a full disk raises `DiskFullError`.
    Returns `path`."""
    path = Path(path)
    tmp = temporary_name(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write(tmp)
        if path.is_dir() and not path.is_symlink():  # os.replace overwrites a file, not a folder
            shutil.rmtree(path)
        os.replace(tmp, path)
    except BaseException as e:
        full = disk_full(e, path)  # before the removal gives the space back
        remove(tmp)
        if full is not None:
            raise full from None
        raise
    return path


def disk_full(error: BaseException, path: str | os.PathLike[str]) -> DiskFullError | None:
    """`DiskFullError` for a write of `path` that failed with `error`, when the disk is full:
    the system said so (ENOSPC, EDQUOT), or the write failed (an ``OSError``, or torch's
    ``RuntimeError``) and the disk has less than `LOW_SPACE` free. None otherwise."""
    if not isinstance(error, (OSError, RuntimeError)):
        return None
    free = free_space(Path(path))
    said = isinstance(error, OSError) and error.errno in DISK_FULL_ERRNOS
    if not said and (free is None or free >= LOW_SPACE):
        return None
    left = "unknown" if free is None else f"{size_in_words(free)} free"
    return DiskFullError(
        f"the disk is full: cannot write {str(path)!r} ({left} on its disk); free some space "
        "and run the command again"
    )


def free_space(path: Path) -> int | None:
    """Bytes free to this user on the disk that holds `path` (its nearest existing folder);
    None when the system cannot tell."""
    for place in (path, *path.parents):
        try:
            return shutil.disk_usage(place).free
        except OSError:
            continue
    return None


def size_in_words(size: int) -> str:
    """``512 bytes``, ``3.2 MiB``: a size for a message."""
    if size < 1024:
        return f"{size} bytes"
    value = size / 1024
    for unit in ("KiB", "MiB", "GiB"):
        if value < 1024:
            return f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"


def remove(path: Path) -> None:
    """Remove a file or a folder, if there is one."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        try:
            path.unlink()
        except FileNotFoundError:
            pass


def remove_leftovers(folder: Path) -> list[Path]:
    """Remove the temporary files and folders of writes a killed process left in `folder`
    (`temporary_name`'s); returns them."""
    found = sorted(folder.glob(".*.tmp")) if folder.is_dir() else []
    for leftover in found:
        remove(leftover)
    return found
