"""An experiment's output folder under concurrent writers, ``--overwrite`` and interruptions
(issue 29, cases 13-15 and 19).

* :func:`folder_lock`: one writer per folder. A second writer is refused at once, naming the
  holder (process, host, start time). The lock is ``fcntl.flock`` on ``<folder>/.nuggetbench.lock``:
  the kernel releases it when its process ends, even by ``kill -9``, so it never goes stale.
  Where ``fcntl`` is missing (Windows) no lock is taken.
* :class:`SetAside`: ``--overwrite`` moves the files the old ``results.json`` names (its run files,
  the report) beside it into a staging folder first, and deletes them only when the new results
  are complete (:meth:`SetAside.drop`); on failure they are moved back (:meth:`SetAside.restore`).
  A file the old results do not name (``runs/mine.trec``) is never touched.
* :func:`incomplete_note`: what to say about a ``results.json`` whose run did not finish.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

from nuggetbench._atomic import clean_stale, make_temp_dir, staging_prefix
from nuggetbench.errors import OutputError

__all__ = [
    "LOCK_NAME",
    "Guard",
    "SetAside",
    "folder_lock",
    "folder_note",
    "guarded",
    "incomplete_note",
    "named_files",
]

LOCK_NAME = ".nuggetbench.lock"


@contextlib.contextmanager
def folder_lock(folder: str | Path) -> Iterator[Path]:
    """Hold the writer's lock of *folder* (created if needed) for the ``with`` block.

    Raises:
        OutputError: another process holds it (it is named: pid, host, since when).
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / LOCK_NAME
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows: no advisory locks
            fcntl = None
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                holder = os.pread(fd, 300, 0).decode("utf-8", "replace").strip()
                raise OutputError(
                    f"{folder} is being written by {holder or 'another process'}; wait until "
                    "it finishes, or give another -o folder"
                ) from None
        since = datetime.now(timezone.utc).isoformat(timespec="seconds")
        os.ftruncate(fd, 0)
        os.pwrite(
            fd,
            f"nuggetbench pid {os.getpid()} on {socket.gethostname()} since {since}\n".encode(),
            0,
        )
        yield path
    finally:
        os.close(fd)  # releases the lock; the file stays (removing it would race a waiter)


def named_files(folder: Path) -> list[Path]:
    """The files of *folder* that its ``results.json`` names: itself, each system's run file
    inside *folder*, and ``report.html`` (a view of them). Nothing when there is no readable
    ``results.json``."""
    results = folder / "results.json"
    try:
        saved = json.loads(results.read_text(encoding="utf-8"))
        systems = saved.get("systems") or {}
    except (OSError, ValueError, AttributeError, RecursionError):
        return []
    out = [results, folder / "report.html"]
    root = folder.resolve()
    for entry in systems.values() if isinstance(systems, dict) else []:
        run_file = entry.get("run_file") if isinstance(entry, dict) else None
        if isinstance(run_file, str) and Path(run_file).resolve().is_relative_to(root):
            out.append(Path(run_file))
    return [p for p in out if p.is_file()]


class SetAside:
    """Files moved into a staging folder beside them until the caller knows what to keep.

    Args:
        folder: the output folder (the staging folder is a hidden entry in it, removed by
            :func:`~nuggetbench._atomic.clean_stale` if this process is killed).
        files: files inside *folder* to move.
    """

    def __init__(self, folder: Path, files: list[Path]):
        self.folder = folder
        self.moved: list[tuple[Path, Path]] = []
        self.staging: Path | None = None
        if not files:
            return
        clean_stale(folder)
        self.staging = Path(make_temp_dir(folder, staging_prefix("previous"), ".tmp"))
        for i, path in enumerate(files):
            to = self.staging / f"{i}-{path.name}"
            os.replace(path, to)
            self.moved.append((path, to))

    def restore(self) -> None:
        """Move the files back (the new ones of the same names are replaced)."""
        for path, to in self.moved:
            path.parent.mkdir(parents=True, exist_ok=True)
            os.replace(to, path)
        self.drop()

    def drop(self) -> None:
        """Delete what is still set aside."""
        if self.staging is not None:
            shutil.rmtree(self.staging, ignore_errors=True)
            self.staging = None


def incomplete_note(saved: dict, file: Path) -> str | None:
    """A warning for a ``results.json`` whose run did not finish (no ``provenance.finished``:
    killed, or failed), naming the systems it has out of those its provenance lists; ``None``
    for a finished one."""
    provenance = saved.get("provenance") if isinstance(saved.get("provenance"), dict) else {}
    if provenance.get("finished"):
        return None
    planned = provenance.get("systems") if isinstance(provenance.get("systems"), dict) else {}
    have = saved.get("systems") if isinstance(saved.get("systems"), dict) else {}
    missing = [name for name in planned if name not in have]
    return (
        f"{file}: the run that wrote it did not finish (no 'finished' time); it holds "
        f"{len(have)} of the {max(len(planned), len(have))} systems it was started with"
        + (f" (missing: {', '.join(missing)})" if missing else "")
        + "; run it again (with --overwrite) for complete results"
    )


def folder_note(folder: str | Path) -> str | None:
    """:func:`incomplete_note` of the ``results.json`` in *folder* (or that file); ``None`` when
    it is finished, absent or unreadable (its readers say why)."""
    path = Path(folder)
    file = path / "results.json" if path.is_dir() else path
    try:
        saved = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    return incomplete_note(saved, file) if isinstance(saved, dict) else None


class Guard:
    """What :func:`guarded` yields: :meth:`set_aside` the old files of an ``--overwrite``."""

    def __init__(self, folder: Path | None):
        self.folder = folder
        self.aside: SetAside | None = None
        self.before: set[Path] = set()

    def set_aside(self, files: list[Path] | None) -> None:
        """Move *files* aside until the block ends (``None``: nothing to do)."""
        if files is not None and self.folder is not None:
            self.before = set((self.folder / "runs").glob("*.trec"))
            self.aside = SetAside(self.folder, files)


@contextlib.contextmanager
def guarded(folder: str | Path | None) -> Iterator[Guard]:
    """The writer's lock of *folder* (none for ``None``) for the block; files set aside through
    the :class:`Guard` are deleted when the block succeeds, and put back when it fails (the
    run files the failed block wrote are removed first, so the folder is as it was).

    Raises:
        OutputError: another process writes into *folder*.
    """
    guard = Guard(Path(folder) if folder is not None else None)
    with folder_lock(folder) if folder is not None else contextlib.nullcontext():
        try:
            yield guard
        except BaseException:
            if guard.aside is not None and guard.folder is not None:
                moved = {path for path, _ in guard.aside.moved}
                for path in set((guard.folder / "runs").glob("*.trec")) - guard.before - moved:
                    path.unlink(missing_ok=True)
                guard.aside.restore()
            raise
        if guard.aside is not None:
            guard.aside.drop()
