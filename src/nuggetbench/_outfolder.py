"""Output folders of ``nuggetbench run``: one writer at a time, replaced only on success, and
their ``results.json`` read back as untrusted input.

- :func:`folder_lock`: a lock file ``.nuggetbench.lock`` created with ``O_EXCL`` in the folder,
  holding the writer's pid, host and start time; a second writer is refused with those named. A
  lock whose process is gone (same host, dead pid) is stale and taken over.
- :func:`owned_files` / :func:`staging_folder` / :func:`swap_in`: ``--overwrite`` builds the new
  experiment in a hidden staging folder beside the old one and swaps it in only on success,
  deleting only the files the old ``results.json`` names.
- :func:`read_results_file`: ``results.json`` parsed and validated (types, required fields,
  means equal to the per-query values within rounding); every problem is one
  :class:`~nuggetbench.errors.InputError` line naming the file and the field.
- :func:`incomplete_note`: why a folder's experiment is incomplete (an interrupted run), or ``None``.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import socket
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from nuggetbench._atomic import clean_stale, make_temp_dir, process_gone, staging_prefix
from nuggetbench.errors import InputError
from nuggetbench.measures import get_family, get_profile, parse_measure

__all__ = [
    "LOCK_NAME",
    "check_append",
    "folder_lock",
    "folder_notes",
    "incomplete_note",
    "lock_holder",
    "overwrite_plan",
    "owned_files",
    "read_results_file",
    "staged",
    "staging_folder",
    "swap_in",
]

#: the lock file's name inside an output folder
LOCK_NAME = ".nuggetbench.lock"


def lock_holder(folder: str | Path) -> dict | None:
    """The live holder of *folder*'s lock (``{"pid", "host", "started", "command"}``), or
    ``None`` when the folder is not locked or its lock is stale (its process is gone)."""
    path = Path(folder) / LOCK_NAME
    try:
        holder = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, RecursionError):
        return {"pid": "?", "host": "?", "started": "?", "command": "unreadable lock file"}
    if not isinstance(holder, dict):
        return {"pid": "?", "host": "?", "started": "?", "command": "unreadable lock file"}
    pid = holder.get("pid")
    if holder.get("host") == socket.gethostname() and isinstance(pid, int) and process_gone(pid):
        return None
    return holder


def _busy(folder: Path, holder: dict) -> InputError:
    return InputError(
        f"{folder} is being written by another nuggetbench process (pid {holder.get('pid')} on "
        f"{holder.get('host')}, started {holder.get('started')}: {holder.get('command')}); wait "
        f"for it to finish or choose another -o folder (if that process is gone, delete "
        f"{folder / LOCK_NAME})"
    )


@contextlib.contextmanager
def folder_lock(folder: str | Path, command: str = "nuggetbench run") -> Iterator[Path]:
    """Hold *folder*'s lock (creating the folder) for the ``with`` block.

    The lock file records this process's pid, host, start time (UTC) and *command*; it is
    removed on exit (only while it is still this process's). A stale lock (same host, process
    gone) is replaced, and the staging entries a killed writer left are removed
    (:func:`nuggetbench._atomic.clean_stale`).

    Raises:
        InputError: another live process holds the lock (its pid, host and start are named).
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
    for _ in range(3):
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            holder = lock_holder(folder)
            if holder is not None:
                raise _busy(folder, holder) from None
            with contextlib.suppress(FileNotFoundError):
                path.unlink()  # stale: its process is gone
            continue
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(mine, fh)
        except BaseException:  # a full disk: no half-written lock left behind
            path.unlink(missing_ok=True)
            raise
        break
    else:
        raise _busy(folder, lock_holder(folder) or {})
    clean_stale(folder, force=True)  # what a killed writer left (an --overwrite staging folder)
    try:
        yield path
    finally:
        with contextlib.suppress(OSError, ValueError):
            if json.loads(path.read_text(encoding="utf-8")).get("pid") == mine["pid"]:
                path.unlink()


def owned_files(folder: str | Path) -> list[Path]:
    """The files of *folder* that its ``results.json`` names: itself, each system's run file
    (by name, under ``runs/``) and ``report.html`` made from it; empty without ``results.json``.
    Nothing outside *folder* is ever named."""
    folder = Path(folder)
    results = folder / "results.json"
    if not results.is_file():
        return []
    out = [results, folder / "report.html"]
    try:
        data = json.loads(results.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return out
    systems = data.get("systems") if isinstance(data, dict) else None
    for entry in (systems or {}).values() if isinstance(systems, dict) else ():
        run_file = entry.get("run_file") if isinstance(entry, dict) else None
        if isinstance(run_file, str) and run_file:
            out.append(folder / "runs" / Path(run_file).name)
    return out


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


def staging_folder(folder: Path) -> Path:
    """A new hidden staging folder inside *folder* (with ``runs/``), named so that a killed
    run's is removed by :func:`nuggetbench._atomic.clean_stale`."""
    # mode 0o777 less the umask (mkdtemp's 0700 would not do for a folder people share)
    staging = Path(make_temp_dir(folder, staging_prefix("overwrite"), ".part"))
    (staging / "runs").mkdir()
    return staging


def swap_in(staging: Path, folder: Path, old: list[Path]) -> dict[str, Path]:
    """Move the run files of *staging* into ``folder/runs`` (replacing same-named ones), delete
    the *old* files not replaced (except ``results.json``, which the caller rewrites), and remove
    *staging*.

    Returns:
        ``{old path: new path}`` of each run file moved.
    """
    runs = folder / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    moved: dict[str, Path] = {}
    for path in sorted((staging / "runs").iterdir()):
        target = runs / path.name
        os.replace(path, target)
        moved[str(path)] = target
    kept = {*moved.values(), folder / "results.json"}
    for path in old:
        if path not in kept:
            path.unlink(missing_ok=True)
    shutil.rmtree(staging, ignore_errors=True)
    return moved


@contextlib.contextmanager
def staged(exp: Any, old: list[Path] | None) -> Iterator[None]:
    """Run the ``with`` block with *exp* (an :class:`~nuggetbench.experiment.Experiment`)
    writing into a staging folder inside its ``outdir`` when *old* (the files of the
    experiment it replaces) is given; on success the runs are swapped in (:func:`swap_in`) and
    the systems' ``run_path`` point at them; on failure the staging folder is removed and the
    old experiment stays as it was. ``exp.outdir`` is the real folder again afterwards."""
    if old is None:
        yield
        return
    final = exp.outdir
    exp.outdir = staging_folder(final)
    try:
        yield
        moved = swap_in(exp.outdir, final, old)
        for system in exp.systems.values():
            system.run_path = moved.get(str(system.run_path), system.run_path)
    finally:
        shutil.rmtree(exp.outdir, ignore_errors=True)
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
    holder = lock_holder(folder)
    why = (
        f"still being written (pid {holder.get('pid')} on {holder.get('host')})"
        if holder
        else "interrupted"
    )
    have = len(data.get("systems", {}))
    gone = f" (missing: {', '.join(missing)})" if missing else ""
    return (
        f"{file}: incomplete experiment: {have} of {have + len(missing)} systems{gone}, no "
        f"'finished' time; the run that wrote it was {why}. Run it again with --overwrite "
        "(or --append the missing systems)"
    )


def folder_notes(paths: list[str | Path]) -> list[str]:
    """The :func:`incomplete_note` of each experiment folder among *paths* (a folder, its
    ``results.json``, or a run file in its ``runs/``), once per folder; a folder whose
    ``results.json`` is absent or invalid gives none (reading it reports that)."""
    notes: list[str] = []
    seen: set[Path] = set()
    for path in map(Path, paths):
        if path.is_dir():
            file = path / "results.json"
        elif path.name == "results.json":
            file = path
        elif path.parent.name == "runs":
            file = path.parent.parent / "results.json"
        else:
            continue
        if file in seen or not file.is_file():
            continue
        seen.add(file)
        try:
            note = incomplete_note(read_results_file(file)[0], file)
        except InputError:
            continue
        if note:
            notes.append(note)
    return notes


def read_results_file(path: str | Path) -> tuple[dict, Path]:
    """Read and validate ``results.json`` (*path* is the file or its folder).

    Returns:
        ``(results dict, the results.json path)``.

    Raises:
        InputError: one line naming the file and the field: no file, unreadable, not JSON,
            nested too deeply, a missing field or one of the wrong type, per-query lists of
            another length than ``query_ids``, or a mean that is not the per-query values' mean
            (sum, geometric mean) within rounding.
    """
    path = Path(path)
    file = path / "results.json" if path.is_dir() else path
    if not file.is_file():
        raise InputError(
            f"{path}: no results.json here; give the output folder of `nuggetbench run` "
            "(it holds results.json and runs/)"
        )
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(f"{file}: line {exc.lineno}: not valid JSON ({exc.msg})") from exc
    except RecursionError:
        raise InputError(f"{file}: nested too deeply to be a results.json") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{file}: cannot be read ({exc})") from exc
    try:
        _check_results(data)
    except _Bad as exc:
        raise InputError(f"{file}: {exc}") from None
    return data, file


class _Bad(Exception):
    """One problem of a results dict: ``field: what``."""


def _need(value: Any, kind: type | tuple[type, ...], where: str, what: str) -> Any:
    if value is None and kind is not type(None) and not (isinstance(kind, tuple) and None in kind):
        raise _Bad(f"{where}: missing; it should be {what}")
    if isinstance(value, bool) or not isinstance(value, kind):
        raise _Bad(f"{where}: {type(value).__name__} {_short(value)} where {what} belongs")
    return value


def _short(value: Any) -> str:
    text = json.dumps(value, default=str) if not isinstance(value, (dict, list)) else "[...]"
    return text if len(text) <= 40 else text[:37] + "..."


def _check_results(data: Any) -> None:
    if not isinstance(data, dict):
        raise _Bad(f"top level: {type(data).__name__} where an object belongs")
    if "systems" not in data:
        raise _Bad(
            "not an experiment's results.json (no 'systems'); give the folder of `nuggetbench "
            "run -o`, or read one run's results with nuggetbench.read_results"
        )
    _need(data.get("dataset"), str, "'dataset'", "a dataset id")
    measures = _need(data.get("measures"), list, "'measures'", "a list of measure names")
    for i, m in enumerate(measures):
        _need(m, str, f"'measures'[{i}]", "a measure name")
    _need(data.get("profile"), str, "'profile'", "a profile name")
    if data.get("k") is not None:
        _need(data["k"], int, "'k'", "an integer depth")
    for key, kind in (("provenance", dict), ("notes", list)):
        if data.get(key) is not None:
            _need(data[key], kind, f"'{key}'", f"a{'n object' if kind is dict else ' list'}")
    systems = _need(data.get("systems"), dict, "'systems'", "an object of systems")
    if not systems:
        raise _Bad("'systems': empty; is it the results.json of `nuggetbench run`?")
    for name, entry in systems.items():
        _check_system(name, entry, measures)


def _check_system(name: str, entry: Any, measures: list[str]) -> None:
    where = f"systems[{name!r}]"
    _need(entry, dict, where, "an object")
    qids = _need(entry.get("query_ids"), list, f"{where}.query_ids", "a list of query ids")
    per_query = _need(entry.get("per_query"), dict, f"{where}.per_query", "an object of lists")
    means = _need(entry.get("means"), dict, f"{where}.means", "an object of numbers")
    mine = _need(entry.get("measures", measures), list, f"{where}.measures", "a list")
    if entry.get("run_file") is not None:
        _need(entry["run_file"], str, f"{where}.run_file", "a path")
    for m in mine:
        values = _need(
            per_query.get(m), list, f"{where}.per_query[{m!r}]", "a list of per-query values"
        )
        if len(values) != len(qids):
            raise _Bad(f"{where}.per_query[{m!r}]: {len(values)} values for {len(qids)} query_ids")
        for i, v in enumerate(values):
            if v is not None:
                _need(v, (int, float), f"{where}.per_query[{m!r}][{i}]", "a number")
        if m not in means:
            raise _Bad(f"{where}.means[{m!r}]: missing; it should be a number")
        mean = means[m]
        if mean is not None:
            _need(mean, (int, float), f"{where}.means[{m!r}]", "a number")
            _check_mean(f"{where}.means[{m!r}]", float(mean), values, entry, m)


def _aggregate(measure: str, profile: str) -> str | None:
    """How *measure*'s mean is made under *profile*: ``mean``, ``sum``, ``gmean`` or
    ``sum_over_judged``; ``None`` when the measure or profile is not known here."""
    try:
        family = get_family(parse_measure(measure).family)
        prof = get_profile(profile)
    except Exception:  # noqa: BLE001 - a name of a plug-in not loaded, or trec_eval's output names
        return None
    if family.aggregate == "mean" and family.name in prof.options.get("sum_over_judged", ()):
        return "sum_over_judged"
    return family.aggregate


def _check_mean(where: str, mean: float, values: list, entry: dict, measure: str) -> None:
    """*mean* must be the values' aggregate (mean, sum, geometric mean, or sum over the judged
    queries, whose count is not recorded and at least the values'), within rounding (5e-5)."""
    if any(v is None for v in values) or not values or math.isnan(mean):
        return
    nums = [float(v) for v in values]
    total = math.fsum(nums)
    average = total / len(nums)
    gmean = math.exp(math.fsum(math.log(max(v, 1e-5)) for v in nums) / len(nums))
    how = _aggregate(measure, str(entry.get("profile", "")))
    judged = [len(nums) + len(entry.get("missing_queries") or [])]
    if how in (None, "sum_over_judged") and mean > 0:
        judged += [
            max(len(nums), math.floor(total / mean)),
            max(len(nums), math.ceil(total / mean)),
        ]
    candidates = {
        "mean": [average],
        "sum": [total],
        "gmean": [gmean] if min(nums) >= 0 else [],
        "sum_over_judged": [total / n for n in judged],
    }.get(how) or [average, total, gmean, *(total / n for n in judged)]
    if any(abs(mean - c) <= 5e-5 + 1e-9 * abs(c) for c in candidates):
        return
    raise _Bad(
        f"{where}: {mean:g}, but its {len(nums)} per-query values average {average:.4f}; "
        "the file was edited or damaged: run the experiment again"
    )
