"""Replacing what an output folder holds, whole, under any fault.

A writer builds its new files in a hidden staging folder inside the output folder
(:func:`staging_folder`: ``.<what>.nb<pid>h<host>.<random>.part``, removed by
:func:`nuggetbench._atomic.clean_stale` once its process is gone). :func:`commit` then

1. writes the swap's manifest (the files written, the old files to delete) into the staging
   folder and flushes every file and folder of it to the disk (``fsync``);
2. renames the staging folder to ``.nuggetbench.commit``: the one atomic step that makes the new
   files the folder's content (before it, the old content is whole; after it, the new);
3. applies the swap (:func:`apply_pending`): moves the files in (the head file, such as
   ``results.json``, last), deletes the old files the manifest names, removes the commit folder.

Every step of 3 can be repeated, so a writer killed in 3 leaves a commit folder the next writer
completes when it takes the folder's lock; until then the readers find the committed files
through :func:`current_file` (the commit folder's copy first). Nothing outside the output folder
is ever moved or deleted.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from nuggetbench._atomic import atomic_write, fault_point, fsync_dir, make_temp_dir, staging_prefix

__all__ = [
    "COMMIT_NAME",
    "FAULT_POINTS",
    "apply_pending",
    "commit",
    "current_file",
    "staging_folder",
]

#: the name of a committed swap not yet applied, inside the output folder
COMMIT_NAME = ".nuggetbench.commit"
_MANIFEST = ".swap.json"
#: files moved in last: what the readers read first
_HEAD = ("results.json", "judge.json", "agreement.json", "answers.json")

#: The moments of a save at which the test hook (:func:`nuggetbench._atomic.fault_point`) can
#: kill or stop the writer, in the order a save passes them. ``lock.taken``: the folder is
#: locked, nothing written yet; ``save.run-written``: a system's run file is written, the
#: ``results.json`` that names it not yet; ``save.results-written``: ``results.json`` written
#: after a system; ``swap.staged``: every new file is in the staging folder and flushed, not yet
#: committed; ``swap.committed``: the staging folder is the commit folder, nothing moved;
#: ``swap.files-moved``: the new files other than the head file are in place;
#: ``swap.head-replaced``: the head file (``results.json``...) is replaced, the old files are
#: not yet deleted; ``swap.old-deleted``: the old files are deleted, the commit folder not yet
#: removed.
FAULT_POINTS = (
    "lock.taken",
    "save.run-written",
    "save.results-written",
    "swap.staged",
    "swap.committed",
    "swap.files-moved",
    "swap.head-replaced",
    "swap.old-deleted",
)


def staging_folder(folder: Path, what: str = "overwrite") -> Path:
    """A new hidden staging folder inside *folder*, named so that a killed writer's is removed
    by :func:`nuggetbench._atomic.clean_stale` (mode ``0o777`` less the umask)."""
    return Path(make_temp_dir(folder, staging_prefix(what), ".part"))


def current_file(folder: str | Path, name: str) -> Path:
    """Where a reader finds *name* (a path relative to the output *folder*): in a committed swap
    not yet applied when it is there, else in *folder*."""
    pending = Path(folder) / COMMIT_NAME / name
    return pending if pending.exists() else Path(folder) / name


def _files(root: Path) -> list[str]:
    """The files under *root* as POSIX paths relative to it, the manifest left out."""
    out = []
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_file() and rel != _MANIFEST:
            out.append(rel)
    return out


def _inside(folder: Path, rel: str) -> Path | None:
    """``folder/rel`` when *rel* is a plain relative path inside *folder*, else ``None``."""
    parts = Path(rel).parts
    if not parts or Path(rel).is_absolute() or ".." in parts or parts[0] == COMMIT_NAME:
        return None
    return folder.joinpath(*parts)


def commit(staging: Path, folder: Path, delete: list[Path]) -> None:
    """Make the files in *staging* the content of *folder*: flushed, committed by one rename,
    then applied (see the module docstring); *delete* lists the old files to remove (those of
    *folder* only; a new file of the same name replaces one instead).

    Raises:
        OSError: the manifest cannot be written or the rename fails (then nothing changed:
            the old content is whole and *staging* is left for the caller to remove).
    """
    written = _files(staging)
    old = sorted({p.relative_to(folder).as_posix() for p in delete if p.is_relative_to(folder)})
    with atomic_write(staging / _MANIFEST) as fh:  # flushed, as every file staged here
        json.dump({"write": written, "delete": old}, fh)
    for sub in sorted({(staging / rel).parent for rel in written} | {staging}, reverse=True):
        fsync_dir(sub)
    fault_point("swap.staged")
    apply_pending(folder)  # a swap left by a killed writer first (none under the lock, normally)
    os.rename(staging, folder / COMMIT_NAME)
    fsync_dir(folder)
    fault_point("swap.committed")
    apply_pending(folder)


def apply_pending(folder: str | Path) -> bool:
    """Complete the committed swap in *folder* (``.nuggetbench.commit``), if any: move its files
    into place, the head file last, delete the old files its manifest names, remove it. Each
    step may be repeated after a crash. Returns whether there was one.

    Raises:
        OSError: a file cannot be moved or deleted (the swap stays committed: the next call
            goes on from there).
    """
    folder = Path(folder)
    pending = folder / COMMIT_NAME
    if not pending.is_dir():
        return False
    try:
        manifest = json.loads((pending / _MANIFEST).read_text(encoding="utf-8"))
        written, old = list(manifest["write"]), list(manifest["delete"])
    except (OSError, ValueError, KeyError, TypeError):
        written, old = _files(pending), []  # no manifest: move what is there, delete nothing
    heads = [rel for rel in written if rel in _HEAD]
    for rel in [r for r in written if r not in _HEAD]:
        _move_in(pending, folder, rel)
    fault_point("swap.files-moved")
    for rel in heads:
        _move_in(pending, folder, rel)
    fsync_dir(folder)
    fault_point("swap.head-replaced")
    for rel in old:
        target = _inside(folder, rel)
        if target is not None and rel not in written:
            target.unlink(missing_ok=True)
    fault_point("swap.old-deleted")
    shutil.rmtree(pending)
    fsync_dir(folder)
    return True


def _move_in(pending: Path, folder: Path, rel: str) -> None:
    """Move ``pending/rel`` to ``folder/rel`` (creating its folder); already moved: nothing."""
    source, target = pending / rel, _inside(folder, rel)
    if target is None or not source.is_file():
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    os.replace(source, target)
    fsync_dir(target.parent)
