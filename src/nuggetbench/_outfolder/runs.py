"""The output folder of ``nuggetbench run``: its run files, ``--overwrite`` and ``--append``.

- :func:`run_file_names`: one ``runs/<name>.trec`` per system, never two systems on one file
  (``x y`` and ``x_y`` both slug to ``x_y``: the second gets ``x_y~2``).
- :func:`owned_files` / :func:`overwrite_plan`: what ``--overwrite`` replaces (only the files
  ``results.json`` names, the run files it plans included).
- :func:`staged`: ``--overwrite`` builds the new experiment in a staging folder and commits it
  (:func:`nuggetbench._outfolder.swap.commit`) only when every file of it was written.
- :func:`run_file`: where a recorded run file is (relative paths are the folder's own).
- :func:`incomplete_note` / :func:`folder_notes`: an interrupted run's folder says so.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Any

from nuggetbench._outfolder.lock import lock_holder
from nuggetbench._outfolder.results import read_results_file
from nuggetbench._outfolder.swap import COMMIT_NAME, commit, current_file, staging_folder
from nuggetbench.errors import InputError
from nuggetbench.store import spec_file_name

__all__ = [
    "EXISTING",
    "check_append",
    "folder_notes",
    "incomplete_note",
    "overwrite_plan",
    "owned_files",
    "relative_run_file",
    "reuse",
    "run_file",
    "run_file_names",
    "staged",
]


def run_file_names(labels: list[str], taken: set[str] = frozenset()) -> dict[str, str]:
    """``{label: file name}`` (``<slug>.trec``) for *labels*, distinct from each other and from
    the names in *taken* (other systems' files): a slug already used gets ``~2``, ``~3``..."""
    out: dict[str, str] = {}
    used = set(taken)
    for label in labels:
        base = spec_file_name(label)
        name, k = f"{base}.trec", 2
        while name in used:
            name, k = f"{base}~{k}.trec", k + 1
        out[label] = name
        used.add(name)
    return out


def relative_run_file(path: Path, folder: Path) -> str:
    """How ``results.json`` records the run file *path*: ``runs/<name>`` (POSIX, relative to
    *folder*) for a file inside it, else the absolute path (a run ``compare -o`` did not copy)."""
    try:
        return PurePosixPath(*path.relative_to(folder).parts).as_posix()
    except ValueError:
        return str(path.resolve())


def run_file(folder: Path, recorded: str) -> Path:
    """The run file ``results.json`` records as *recorded*: a relative path is the folder's own
    (a committed swap's copy first); an absolute or older path (made relative to the working
    directory) is looked for in the folder's ``runs/`` first, then where it says. The run's
    fingerprint is checked by the reader, wherever it was found."""
    path = Path(recorded)
    if not path.is_absolute() and path.parts[:1] == ("runs",) and ".." not in path.parts:
        return current_file(folder, path.as_posix())
    own = current_file(folder, f"runs/{path.name}")
    return own if own.is_file() else path


def owned_files(folder: str | Path) -> list[Path]:
    """The files of *folder* that its ``results.json`` names: itself, each system's run file
    and each planned one (by name, under ``runs/``) and ``report.html`` made from it; empty
    without ``results.json``. Nothing outside *folder* is ever named."""
    folder = Path(folder)
    results = folder / "results.json"
    if not results.is_file():
        return []
    out = [results, folder / "report.html"]
    try:
        data = json.loads(results.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return out
    names: list[Any] = []
    systems = data.get("systems") if isinstance(data, dict) else None
    for entry in systems.values() if isinstance(systems, dict) else ():
        names.append(entry.get("run_file") if isinstance(entry, dict) else None)
    prov = data.get("provenance") if isinstance(data, dict) else None
    planned = prov.get("run_files") if isinstance(prov, dict) else None
    names += list(planned.values()) if isinstance(planned, dict) else []
    for name in names:
        if isinstance(name, str) and name:
            out.append(folder / "runs" / Path(name).name)
    return list(dict.fromkeys(out))


def overwrite_plan(folder: Path, names: list[str]) -> list[Path] | None:
    """What ``--overwrite`` of *folder* will replace: :func:`owned_files`, or ``None`` without
    ``results.json``.

    Raises:
        InputError: a file ``runs/<name>`` of *names* (the new run files) exists and is not
            named by ``results.json`` (it is someone else's; nothing is done).
    """
    owned = owned_files(folder)
    foreign = [p for p in (folder / "runs" / n for n in names) if p.exists() and p not in owned]
    if foreign:
        raise InputError(
            f"--overwrite replaces only the files {folder / 'results.json'} names, and "
            f"{', '.join(map(str, foreign))} is not one of them; move it away or choose another "
            "-o folder"
        )
    return owned or None


def check_append(folder: Path, exp: Any, old: Any, specs: list[str]) -> None:
    """``--append`` of the experiment *exp* to *old* (both
    :class:`~nuggetbench.experiment.Experiment`), the one in *folder*.

    Raises:
        InputError: another dataset, measures, profile or depth, another dataset content
            (fingerprint), or a system of *specs* already in *old*.
    """
    mine = (exp.dataset_id, exp.measures, exp.profile, exp.k)
    theirs = (old.dataset_id, old.measures, old.profile, old.k)
    if mine != theirs:
        raise InputError(
            f"--append: {folder} holds {theirs[0]} with measures {theirs[1]}, profile "
            f"{theirs[2]!r}, k={theirs[3]}; this run has {mine[0]} with {mine[1]}, {mine[2]!r}, "
            f"k={mine[3]}. Append with the same settings, or choose another -o folder"
        )
    subsets = [(p.get("queries") or {}) for p in (old.provenance, exp.provenance)]
    if subsets[0].get("ids") != subsets[1].get("ids"):
        theirs, mine = (s.get("how") or "every query" for s in subsets)
        raise InputError(
            f"--append: {folder} was run on {theirs}; this run is on {mine}. Append with the "
            "same queries (the same --queries, --first-queries or --sample-queries and "
            "--query-seed), or choose another -o folder"
        )
    fingerprint = old.provenance.get("dataset_fingerprint")
    if fingerprint and fingerprint != exp.provenance.get("dataset_fingerprint"):
        mine, theirs = (p.get("dataset_options") or {} for p in (exp.provenance, old.provenance))
        raise InputError(
            f"--append: the dataset in {folder} had another content (fingerprint "
            f"{fingerprint}, options {theirs}; now {mine}); append only runs on the same data, "
            f"or write to another -o folder and compare both: nuggetbench compare {folder} OUT"
        )
    twice = [spec for spec in specs if spec in old.systems]
    if twice:
        raise InputError(
            f"--append: {', '.join(twice)} already in {folder}; give only new systems "
            "(or --overwrite)"
        )


@contextlib.contextmanager
def staged(exp: Any, old: list[Path] | None) -> Iterator[None]:
    """Run the ``with`` block with *exp* (an :class:`~nuggetbench.experiment.Experiment`)
    writing into a staging folder inside its ``outdir`` when *old* (the files of the
    experiment it replaces) is given. When the block ends and every file was written
    (``exp.unsaved`` is empty), the new experiment is committed in one step and the *old* files
    it does not rewrite are deleted (:func:`~nuggetbench._outfolder.swap.commit`); the systems'
    ``run_path`` then point into ``outdir``. Otherwise (a failure, a file that could not be
    written) the staging folder is removed and the old experiment stays as it was, whole;
    ``exp.unsaved`` says so. ``exp.outdir`` is the real folder again afterwards."""
    if old is None:
        yield
        return
    final = exp.outdir
    staging = exp.outdir = staging_folder(final)
    (staging / "runs").mkdir()
    try:
        yield
        committed = False
        if not exp.unsaved:
            try:
                commit(staging, final, old)
                committed = True
            except OSError as exc:
                committed = (final / COMMIT_NAME).is_dir()  # the rename was made: it is the new
                exp.unsaved[str(final / COMMIT_NAME)] = f"{exc.strerror or exc}" + (
                    "; committed: the next command on this folder finishes moving it in"
                    if committed
                    else ""
                )
        if not committed:
            exp.unsaved[str(final)] = (
                "not replaced: the experiment already there is kept as it was, whole"
            )
        for system in exp.systems.values() if committed else ():
            if system.run_path is not None and system.run_path.is_relative_to(staging):
                system.run_path = final / system.run_path.relative_to(staging)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        exp.outdir = final


def incomplete_note(data: dict, file: str | Path) -> str | None:
    """Why the experiment in *data* (a ``results.json`` dict of ``nuggetbench run``) is not
    complete: no ``finished`` time, or fewer systems than its provenance names; ``None`` when
    complete (or not written by ``nuggetbench run``)."""
    prov = data.get("provenance") if isinstance(data.get("provenance"), dict) else {}
    if "started" not in prov:
        return None  # not written by `nuggetbench run` (compare -o records a time only)
    planned = prov.get("systems") if isinstance(prov.get("systems"), dict) else {}
    missing = [name for name in planned if name not in data.get("systems", {})]
    if "finished" in prov and not missing:
        return None
    folder = Path(file).parent
    holder = lock_holder(folder) or {}
    writer = not holder.get("invalid") and holder.get("pid") not in (None, os.getpid())
    why = (
        f"still being written (pid {holder.get('pid')} on {holder.get('host')}: "
        f"{holder.get('command')})"
        if writer  # not this process (a report of the folder holds its lock too)
        else "interrupted"
    )
    have = len(data.get("systems", {}))
    gone = f" (missing: {', '.join(missing)})" if missing else ""
    return (
        f"{file}: incomplete experiment: {have} of {have + len(missing)} systems{gone}, no "
        f"'finished' time; the run that wrote it was {why}. Only the systems it holds are "
        "compared or reported; run the same command again to resume it (or --overwrite to "
        "start it anew)"
    )


def folder_notes(paths: list[str | Path]) -> list[str]:
    """The :func:`incomplete_note` of each experiment folder among *paths* (a folder, its
    ``results.json``, or a run file in its ``runs/``), once per folder; a folder whose
    ``results.json`` is absent or invalid gives none (reading it reports that)."""
    notes: list[str] = []
    seen: set[Path] = set()
    for path in map(Path, paths):
        if path.is_dir():
            folder = path
        elif path.name == "results.json":
            folder = path.parent
        elif path.parent.name == "runs":
            folder = path.parent.parent
        else:
            continue
        if folder in seen or not current_file(folder, "results.json").is_file():
            continue
        seen.add(folder)
        try:
            data, file = read_results_file(folder)
        except InputError:
            continue
        note = incomplete_note(data, file)
        if note:
            notes.append(note)
    return notes


EXISTING = ("error", "overwrite", "append")


def reuse(exp: Any, existing: str, labels: list[str]) -> list[Path] | None:
    """Apply the *existing* policy to *exp*'s output folder (locked by the caller) and record
    each system's run file in ``exp.provenance["run_files"]`` (``runs/<name>``, never two
    systems on one file).

    An interrupted experiment (``results.json`` without ``finished``, its writer gone) planned
    with the same systems and settings is resumed under any policy but ``overwrite``: its
    finished systems are kept and ``run`` runs the others. One in which no system finished is
    replaced like ``overwrite``.

    Returns:
        The files of the experiment to replace (``overwrite``, to delete once the new one is
        committed), else ``None``.

    Raises:
        InputError: *existing* is not a policy; the folder holds an experiment and *existing*
            is ``error`` (not a resumable one); the checks of :func:`check_append`.
    """
    if existing not in EXISTING:
        raise InputError(f"existing must be one of {', '.join(EXISTING)}, got {existing!r}")
    folder: Path = exp.outdir
    names = run_file_names(labels)
    exp.provenance["run_files"] = {label: f"runs/{name}" for label, name in names.items()}
    results = folder / "results.json"
    runs = sorted((folder / "runs").glob("*.trec"))
    if not results.exists() and not runs:
        return None
    if existing == "overwrite" or (results.exists() and _nothing_finished(results)):
        return overwrite_plan(folder, list(names.values()))
    if existing == "error" and not results.exists():
        raise _holds(folder, runs)
    old = type(exp).load(folder)
    if existing == "error" and not _resumable(exp, old, labels):
        raise _holds(folder, runs)
    check_append(folder, exp, old, [] if existing == "error" else labels)
    if existing == "error":
        exp.provenance["resumed"] = old.provenance.get("started")
    else:
        exp.provenance["appended_to"] = old.provenance.get("started")
    _adopt(exp, old, labels)
    return None


def _holds(folder: Path, runs: list[Path]) -> InputError:
    results = folder / "results.json"
    return InputError(
        f"{folder} already holds an experiment ({len(runs)} run file(s)"
        f"{', results.json' if results.exists() else ''}); add --append to add these systems "
        "to it, --overwrite to replace it, or choose another -o folder"
    )


def _nothing_finished(results: Path) -> bool:
    """A ``run``'s results.json in which no system finished (the plan of a killed run)."""
    try:
        data = json.loads(results.read_text(encoding="utf-8"))
        return "started" in data["provenance"] and not data["systems"]
    except (OSError, ValueError, RecursionError, KeyError, TypeError):
        return False


def _resumable(exp: Any, old: Any, labels: list[str]) -> bool:
    """*old* is an interrupted experiment that planned exactly *labels* with *exp*'s settings."""
    prov = old.provenance
    planned = prov.get("systems") if isinstance(prov.get("systems"), dict) else {}
    if "started" not in prov or ("finished" in prov and set(old.systems) >= set(planned)):
        return False
    same = (
        exp.dataset_id,
        exp.measures,
        exp.profile,
        exp.k,
        exp.provenance.get("dataset_fingerprint"),
    )
    theirs = (old.dataset_id, old.measures, old.profile, old.k, prov.get("dataset_fingerprint"))
    return set(planned) == set(labels) and same == theirs


def _adopt(exp: Any, old: Any, labels: list[str]) -> None:
    """Take *old*'s systems, notes and run file names into *exp*; the new *labels* get names
    that do not collide with them."""
    exp.systems.update(old.systems)
    exp.notes[:0] = old.notes
    exp.provenance["systems"] = dict(old.provenance.get("systems") or {})
    recorded = old.provenance.get("run_files")
    files = dict(recorded) if isinstance(recorded, dict) else {}
    for name, system in old.systems.items():
        if system.run_path is not None:
            files[name] = f"runs/{Path(system.run_path).name}"
    new = [label for label in labels if label not in files]
    taken = {Path(f).name for f in files.values()}
    files.update({label: f"runs/{name}" for label, name in run_file_names(new, taken).items()})
    exp.provenance["run_files"] = files
