"""Atomic file writes: write to a temporary file in the same folder, then rename.

Temporary files and staging folders are hidden siblings of their target named
``.<target>.<owner>.<random><suffix>``, where ``<owner>`` (``nb<pid>h<host hash>``) names the
process that made them. A process killed with ``kill -9`` cannot remove its own; the next write
into the same folder does (:func:`clean_stale`): an entry whose owner is a dead process of this
host, or any staging entry older than :data:`STALE_AFTER` seconds, is removed.

Staging files and folders are created with mode ``0o666`` / ``0o777`` and the kernel applies the
user's umask, so a renamed result has the mode any new file of the user has (``tempfile.mkstemp``
makes ``0600``, which the rename would keep). The umask is never read or set (it is
process-wide state).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import secrets
import shutil
import signal
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, TypeVar

log = logging.getLogger(__name__)

#: staging entries older than this (seconds) are stale whoever made them
STALE_AFTER = 24 * 3600
STAGING_SUFFIXES = (".tmp", ".part", ".extract")
_HOST = hashlib.sha256(socket.gethostname().encode()).hexdigest()[:6]
_OWNED = re.compile(r"\.nb(?P<pid>\d+)h(?P<host>[0-9a-f]{6})\.[^.]+(?:\.tmp|\.part|\.extract)$")
_LEGACY = re.compile(r"^\..+\.[a-z0-9_]{8}(?:\.tmp|\.part|\.extract)$")  # tempfile's 8 characters
_CLEANED: set[str] = set()
_T = TypeVar("_T")


def staging_prefix(name: str) -> str:
    """``.<name>.<owner>.``: the prefix of a temporary sibling of *name* made by this process."""
    return f".{name}.nb{os.getpid()}h{_HOST}."


_TEMP_FLAGS = (
    os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
)


def make_temp(folder: str | Path, prefix: str, suffix: str = ".tmp") -> tuple[int, str]:
    """Create a new file ``<folder>/<prefix><random><suffix>`` (never an existing one) with the
    mode of the user's new files (``0o666`` less the umask, applied by the kernel).

    Returns:
        ``(fd, path)``: an open read-write descriptor and the file's path, as
        :func:`tempfile.mkstemp` returns them.

    Raises:
        OSError: the folder cannot be written.
    """
    return _fresh(folder, prefix, suffix, lambda path: (os.open(path, _TEMP_FLAGS, 0o666), path))


def make_temp_dir(folder: str | Path, prefix: str, suffix: str = ".tmp") -> str:
    """Create a new folder ``<folder>/<prefix><random><suffix>`` with the mode of the user's new
    folders (``0o777`` less the umask); returns its path.

    Raises:
        OSError: the parent folder cannot be written.
    """
    return _fresh(folder, prefix, suffix, lambda path: (os.mkdir(path, 0o777), path)[1])


def _fresh(folder: str | Path, prefix: str, suffix: str, create: Callable[[str], _T]) -> _T:
    """``create(path)`` for the first free random name ``<folder>/<prefix><random><suffix>``
    (*create* raises :class:`FileExistsError` when the name is taken)."""
    for _ in range(100):
        path = os.path.join(folder, f"{prefix}{secrets.token_hex(4)}{suffix}")
        try:
            return create(path)
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name in {folder} for {prefix}*{suffix}")


#: the largest process id any system hands out (Linux: 2**22; 32-bit ``pid_t`` elsewhere)
MAX_PID = 2**31 - 1


def valid_pid(pid: object) -> bool:
    """Whether *pid* can be a process id (an ``int``, not a ``bool``, in ``1..MAX_PID``); a
    probe of ``0`` or a negative number would signal a process group, a larger one overflows."""
    return isinstance(pid, int) and not isinstance(pid, bool) and 0 < pid <= MAX_PID


def process_gone(pid: int) -> bool:
    """Whether process *pid* of this host is known to have ended (``False`` when that cannot
    be told: another user's process, no safe probe on this platform). A number that cannot be a
    process id (:func:`valid_pid`: zero, negative, overflowing) names no live process: ``True``.
    Never raises."""
    if not valid_pid(pid):
        return True
    if os.name != "posix":  # no safe liveness probe: age decides
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except (OSError, OverflowError):  # alive, another user's
        return False
    return False


def fsync_dir(folder: str | Path) -> None:
    """Flush *folder*'s entries (the renames and creations in it) to the disk; a file system
    that cannot open or sync a folder (some network and Windows file systems) is let be."""
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


#: The environment variable of the fault-injection hook (:func:`fault_point`), for tests only.
FAULT_ENV = "NUGGETBENCH_TEST_FAULT"


_FAULT_SEEN: dict[str, int] = {}  # fault_point's passes per step, counted only under FAULT_ENV


def fault_point(step: str) -> None:
    """A test hook: the savers call it between the steps of a save (the steps are listed in
    :data:`nuggetbench._outfolder.FAULT_POINTS`). When the environment variable
    ``NUGGETBENCH_TEST_FAULT`` is ``STEP:kill`` (or ``STEP:stop``, or ``STEP#N:kill`` for the
    N-th pass) and *step* is ``STEP``, the process sends itself ``SIGKILL`` (``SIGSTOP``): a
    crash, or a pause another process ends with ``SIGCONT``, at that exact moment. Unset
    (always, outside tests) it does nothing."""
    wanted = os.environ.get(FAULT_ENV)
    if not wanted:
        return
    name, _, action = wanted.rpartition(":")
    name, _, nth = name.partition("#")
    if name != step:
        return
    _FAULT_SEEN[step] = seen = _FAULT_SEEN.get(step, 0) + 1
    if seen != (int(nth) if nth.isdigit() else 1):
        return
    sig = (
        {"kill": signal.SIGKILL, "stop": signal.SIGSTOP}.get(action) if os.name == "posix" else None
    )
    if sig is not None:
        os.kill(os.getpid(), sig)


def _is_stale(entry: os.DirEntry, now: float, max_age: float) -> bool:
    name = entry.name
    if not name.startswith(".") or not name.endswith(STAGING_SUFFIXES):
        return False
    owned = _OWNED.search(name)
    if owned is None and not _LEGACY.match(name):
        return False  # not ours: never touched
    if owned is not None and owned["host"] == _HOST:
        pid = int(owned["pid"])
        if pid != os.getpid() and process_gone(pid):
            return True
    try:
        return now - entry.stat(follow_symlinks=False).st_mtime > max_age
    except OSError:
        return False


def clean_stale(
    folder: str | Path, *, max_age: float = STALE_AFTER, force: bool = False
) -> list[Path]:
    """Remove the stale staging entries of *folder* (once per folder and process unless *force*).

    Only hidden entries named by this module's pattern (or by :mod:`tempfile`'s, for entries
    written before owners were recorded) ending in ``.tmp``, ``.part`` or ``.extract`` are
    considered; one is stale when its owner is a dead process of this host, or when it is older
    than *max_age* seconds. Errors are logged, never raised.

    Returns:
        The paths removed.
    """
    folder = Path(folder)
    key = str(folder.resolve()) if folder.exists() else str(folder)
    if key in _CLEANED and not force:
        return []
    _CLEANED.add(key)
    removed: list[Path] = []
    now = time.time()
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for entry in entries:
        if not _is_stale(entry, now, max_age):
            continue
        path = Path(entry.path)
        try:
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(path)
            else:
                path.unlink()
        except OSError as exc:
            log.debug("could not remove the stale staging entry %s: %s", path, exc)
            continue
        removed.append(path)
    if removed:
        log.info(
            "removed %d stale staging entries in %s (left by a killed run)", len(removed), folder
        )
    return removed


@contextlib.contextmanager
def atomic_write(path: str | Path, mode: str = "w", encoding: str | None = "utf-8") -> Iterator[IO]:
    """Open a temporary file beside *path*; on success it replaces *path*, on error it is removed.

    Stale temporary files of killed runs in the same folder are removed first (:func:`clean_stale`).

    Raises:
        OSError: as the file system raised it, with ``filename`` set to *path* when the error
            named no file (``ENOSPC`` from a write).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    clean_stale(path.parent)
    fd, tmp = make_temp(path.parent, staging_prefix(path.name), ".tmp")
    try:
        if "b" in mode:
            handle = os.fdopen(fd, mode)
        else:
            handle = os.fdopen(fd, mode, encoding=encoding, newline="")
        with handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except OSError as exc:  # a full disk fails in write/flush, whose errors name no file
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if exc.filename is None:
            raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from exc
        raise
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def copy_file(source: str | Path, path: str | Path) -> Path:
    """Copy the file *source* to *path* atomically (through :func:`atomic_write`).

    Raises:
        OSError: *source* cannot be read or *path* cannot be written.
    """
    with open(source, "rb") as src, atomic_write(path, "wb") as fh:
        shutil.copyfileobj(src, fh, 1 << 20)
    return Path(path)
