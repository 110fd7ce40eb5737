"""One writer at a time per output folder, and each folder of one kind.

- :func:`folder_lock`: the lock file ``.nuggetbench.lock``, created whole (written beside it,
  then hard-linked into place, which fails when the name exists) so a writer killed at any
  moment never leaves an empty or half-written lock; it holds the writer's pid, host, start and
  command. A lock whose process is gone (same host, dead pid) is stale and taken over; a lock
  that cannot be read, or whose pid cannot be a process id, is refused with its path named.
  Taking the lock completes a swap a killed writer committed (:mod:`.swap`) and removes the
  staging entries it left.
- :func:`folder_kind` / :func:`check_kind`: what a folder holds (``run``, ``compare``,
  ``judge``, ``agreement``, ``answers``), told by the files each writer makes; a writer refuses
  a folder holding another kind.
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

from nuggetbench._atomic import (
    clean_stale,
    fault_point,
    make_temp,
    process_gone,
    staging_prefix,
    valid_pid,
)
from nuggetbench._outfolder.swap import (
    COMMIT_NAME,
    apply_pending,
    commit,
    current_file,
    staging_folder,
)
from nuggetbench.errors import InputError

__all__ = [
    "LOCK_NAME",
    "KINDS",
    "busy_error",
    "check_kind",
    "folder_kind",
    "folder_lock",
    "lock_holder",
    "writing",
]

#: the lock file's name inside an output folder
LOCK_NAME = ".nuggetbench.lock"

#: What each kind of folder holds, in words, and the command that writes it.
KINDS = {
    "run": ("an experiment of `nuggetbench run`", "nuggetbench run"),
    "compare": ("a comparison saved by `nuggetbench compare -o`", "nuggetbench compare -o"),
    "judge": ("the judgments of `nuggetbench judge -o`", "nuggetbench judge -o"),
    "agreement": (
        "an agreement study of `nuggetbench judge --agreement -o`",
        "nuggetbench judge --agreement -o",
    ),
    "answers": ("the nugget assignments of `nuggetbench answers -o`", "nuggetbench answers -o"),
}

#: The files that tell a folder's kind (a file several kinds write names them all).
_SIGNATURES = {
    "judge.json": {"judge"},
    "qrels.txt": {"judge"},
    "agreement.json": {"agreement"},
    "judgments.jsonl": {"judge", "agreement"},
    "answers.json": {"answers"},
    "assignments.jsonl": {"answers"},
}


def _invalid(path: Path, why: str) -> dict:
    return {"pid": "?", "host": "?", "started": "?", "command": why, "invalid": str(path)}


def lock_holder(folder: str | Path) -> dict | None:
    """The live holder of *folder*'s lock (``{"pid", "host", "started", "command"}``), or
    ``None`` when the folder is not locked or its lock is stale (its process is gone). A lock
    file that cannot be read, is not a JSON object or names no valid pid gives a holder with
    ``"invalid"`` (the lock file's path). Never raises."""
    path = Path(folder) / LOCK_NAME
    try:
        holder = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, RecursionError):
        return _invalid(path, "unreadable lock file")
    if not isinstance(holder, dict):
        return _invalid(path, "unreadable lock file")
    pid = holder.get("pid")
    if not valid_pid(pid):
        return _invalid(path, f"invalid lock file (pid {str(pid)[:24]!r})")
    if holder.get("host") == socket.gethostname() and process_gone(pid):
        return None
    return holder


def busy_error(folder: Path, holder: dict) -> InputError:
    """The error for a *folder* another writer (*holder*, from :func:`lock_holder`) holds."""
    if holder.get("invalid"):
        return InputError(
            f"{holder['invalid']}: {holder['command']}, not one nuggetbench writes; if no "
            f"nuggetbench process is writing {folder}, delete that file and run again"
        )
    return InputError(
        f"{folder} is being written by another nuggetbench process (pid {holder.get('pid')} on "
        f"{holder.get('host')}, started {holder.get('started')}: {holder.get('command')}); wait "
        f"for it to finish or choose another -o folder (if that process is gone, delete "
        f"{folder / LOCK_NAME})"
    )


def _take(folder: Path, mine: dict) -> None:
    """Create the lock file whole: written and flushed under a staging name, then hard-linked
    to its own (a link fails when the name exists, as ``O_EXCL`` does). A killed writer's
    staging file is removed by :func:`nuggetbench._atomic.clean_stale`."""
    path = folder / LOCK_NAME
    fd, staged = make_temp(folder, staging_prefix(LOCK_NAME), ".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(mine, fh)
            fh.flush()
            os.fsync(fh.fileno())
        for _ in range(3):
            try:
                _link(staged, path)
                return
            except FileExistsError:
                holder = lock_holder(folder)
                if holder is not None:
                    raise busy_error(folder, holder) from None
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()  # stale: its process is gone
        raise busy_error(folder, lock_holder(folder) or {})
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(staged)


def _link(staged: str, path: Path) -> None:
    """``os.link(staged, path)``; where the file system has no hard links, the lock is created
    with ``O_EXCL`` and written (whole unless the process dies within that write).

    Raises:
        FileExistsError: *path* exists.
    """
    try:
        os.link(staged, path)
    except FileExistsError:
        raise
    except OSError:  # no hard links here (some network or FAT file systems)
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        try:
            with os.fdopen(fd, "wb") as fh, open(staged, "rb") as src:
                fh.write(src.read())
        except BaseException:
            path.unlink(missing_ok=True)
            raise


@contextlib.contextmanager
def folder_lock(
    folder: str | Path, command: str = "nuggetbench run", *, kind: str | None = None
) -> Iterator[Path]:
    """Hold *folder*'s lock (creating the folder) for the ``with`` block.

    The lock file records this process's pid, host, start time (UTC) and *command*; it is
    removed on exit (only while it is still this process's). A stale lock (same host, process
    gone) is replaced; a swap a killed writer committed is completed
    (:func:`~nuggetbench._outfolder.swap.apply_pending`) and the staging entries it left are
    removed (:func:`nuggetbench._atomic.clean_stale`). With *kind*, a folder holding another
    kind is refused (:func:`check_kind`).

    Raises:
        InputError: another live process holds the lock (its pid, host and start are named),
            the lock file is not valid, or the folder holds another kind.
        OSError: the folder cannot be created or written.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / LOCK_NAME
    mine = {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "command": command,
    }
    _take(folder, mine)
    try:
        apply_pending(folder)  # a killed writer's committed swap: completed
        clean_stale(folder, force=True)  # what a killed writer left (a staging folder)
        if kind is not None:
            check_kind(folder, kind)
        fault_point("lock.taken")
        yield path
    finally:
        with contextlib.suppress(OSError, ValueError, AttributeError):
            if json.loads(path.read_text(encoding="utf-8")).get("pid") == mine["pid"]:
                path.unlink()


@contextlib.contextmanager
def writing(
    folder: str | Path, kind: str, command: str, *, replaces: tuple[str, ...] = ()
) -> Iterator[Path]:
    """Write a set of files into the output *folder* whole: hold its lock for the ``with``
    block (refusing a folder of another *kind*, before any work), yield a staging folder to
    write the new files into (same relative names), and commit them when the block ends without
    an error (:func:`~nuggetbench._outfolder.swap.commit`: files of the same name replaced, the
    files named in *replaces* that were not rewritten deleted, nothing else touched); on an
    error the staging folder is removed and *folder* is as it was.

    Raises:
        InputError: as :func:`folder_lock`.
        OSError: the folder cannot be written.
    """
    folder = Path(folder)
    with folder_lock(folder, command, kind=kind):
        staging = staging_folder(folder, kind)
        try:
            yield staging
            commit(staging, folder, [folder / name for name in replaces])
        finally:
            shutil.rmtree(staging, ignore_errors=True)


def _results_kind(file: Path) -> set[str]:
    """``{"compare"}`` or ``{"run"}`` from a ``results.json``'s provenance (both when it says
    neither: an older or damaged file)."""
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
        prov = data.get("provenance") or {}
        made_by = prov.get("made_by")
        started = "started" in prov
    except (OSError, ValueError, RecursionError, AttributeError):
        return {"run", "compare"}
    if made_by == "nuggetbench compare":
        return {"compare"}
    return {"run"} if started else {"run", "compare"}


def folder_kind(folder: str | Path) -> set[str]:
    """The kinds (keys of :data:`KINDS`) *folder*'s files can belong to: empty for a new or
    empty folder (or one holding none of our files); one kind for most folders (the kinds every
    file found fits; all that any file fits when they fit none in common)."""
    folder = Path(folder)
    sets: list[set[str]] = []
    results = current_file(folder, "results.json")
    if results.is_file():
        sets.append(_results_kind(results))
    elif any((folder / "runs").glob("*.trec")) or (folder / COMMIT_NAME / "runs").is_dir():
        sets.append({"run"})  # an interrupted run before its first results.json
    for name, kinds in _SIGNATURES.items():
        if (folder / name).is_file() or (folder / COMMIT_NAME / name).is_file():
            sets.append(kinds)
    if not sets:
        return set()
    common = set.intersection(*sets)
    return common or set.union(*sets)


def check_kind(folder: str | Path, kind: str) -> None:
    """Refuse to write *kind* into *folder* when it holds another kind of output.

    Raises:
        InputError: the folder's files belong to other kinds only (named, with what to do).
    """
    found = folder_kind(folder)
    if not found or kind in found:
        return
    held = " or ".join(KINDS[k][0] for k in sorted(found))
    raise InputError(
        f"{folder} holds {held}; `{KINDS[kind][1]}` does not write into it (its files would "
        "mix with, or replace, those): choose another folder"
    )
