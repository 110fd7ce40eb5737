"""Output folders (``run -o``, ``compare -o``, ``judge -o``, ``answers -o``, ``report``): one
writer at a time, of one kind, replaced whole under any fault, and read back as untrusted input.

- :mod:`.lock`: :func:`folder_lock` (``.nuggetbench.lock``, created whole; stale when its
  process is gone; a swap a killed writer committed is completed when the lock is taken) and
  the folder kinds (:func:`check_kind`: a writer refuses a folder holding another kind).
- :mod:`.swap`: new files are staged in a hidden folder, flushed, committed by one rename and
  then moved in (:func:`commit`); :func:`current_file` is where a reader finds a file meanwhile.
  :data:`FAULT_POINTS` lists the moments the test hook
  (:func:`nuggetbench._atomic.fault_point`) can kill or stop a writer.
- :mod:`.results`: :func:`read_results_file`, ``results.json`` validated field by field.
- :mod:`.runs`: ``nuggetbench run``'s folder: run file names that never collide, paths
  relative to the folder, ``--overwrite`` (:func:`staged`) and ``--append``, the notes of an
  interrupted run.
"""

from __future__ import annotations

from nuggetbench._outfolder.lock import (
    KINDS,
    LOCK_NAME,
    busy_error,
    check_kind,
    folder_kind,
    folder_lock,
    lock_holder,
    writing,
)
from nuggetbench._outfolder.results import read_results_file, results_path
from nuggetbench._outfolder.runs import (
    EXISTING,
    check_append,
    folder_notes,
    incomplete_note,
    overwrite_plan,
    owned_files,
    relative_run_file,
    reuse,
    run_file,
    run_file_names,
    staged,
)
from nuggetbench._outfolder.swap import (
    COMMIT_NAME,
    FAULT_POINTS,
    apply_pending,
    commit,
    current_file,
    staging_folder,
)

__all__ = [
    "COMMIT_NAME",
    "EXISTING",
    "FAULT_POINTS",
    "KINDS",
    "LOCK_NAME",
    "apply_pending",
    "busy_error",
    "check_append",
    "check_kind",
    "commit",
    "current_file",
    "folder_kind",
    "folder_lock",
    "folder_notes",
    "incomplete_note",
    "lock_holder",
    "overwrite_plan",
    "owned_files",
    "read_results_file",
    "relative_run_file",
    "results_path",
    "reuse",
    "run_file",
    "run_file_names",
    "staged",
    "staging_folder",
    "writing",
]
