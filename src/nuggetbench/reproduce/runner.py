"""Run a recipe through the code of ``nuggetbench run`` and ``evaluate`` and check its values.

:func:`reproduce` selects the (condition, dataset) pairs that have expected values, skips those
whose needs this machine lacks (with the reason), loads each dataset once, and then:

* a retriever condition goes through :func:`nuggetbench.experiment.run_experiment` (the run
  cache, ``--ray``, the output folder and its lock included), exactly what ``run`` does;
* a condition of published run files fetches each file (:mod:`.runfiles`) and scores it with
  :func:`nuggetbench.evaluation.evaluate_dataset`, exactly what ``evaluate`` does;
* a value read from a summary row (``statistic``) is taken from the summaries
  ``evaluate_dataset`` computes (BIRCO's bootstrap mean).

Values are compared on the recipe's scale: a profile's ``scale`` (BIRCO's x100) is divided out.
With an output folder, ``OUT/<recipe>/<dataset>/`` is a normal ``nuggetbench run`` folder (its
systems are the conditions; ``report``, ``compare`` and ``Experiment.load`` read it) and
``OUT/<recipe>/reproduction.json`` holds the verdicts, written atomically under the folder's
lock.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from nuggetbench._atomic import atomic_write
from nuggetbench._outfolder import folder_lock
from nuggetbench.datasets import Dataset, load_dataset
from nuggetbench.errors import (
    ChecksumError,
    DatasetError,
    InputError,
    ModelError,
    OutputError,
    UnknownNameError,
    suggest,
)
from nuggetbench.evaluation import evaluate_dataset
from nuggetbench.experiment import run_experiment, slug, system_labels
from nuggetbench.jsonl import json_text
from nuggetbench.measures import get_family, get_profile, parse_measure
from nuggetbench.reproduce.commands import commands_for, substitute_models
from nuggetbench.reproduce.needs import blocking_reason
from nuggetbench.reproduce.outcome import Reproduction, ValueCheck
from nuggetbench.reproduce.recipe import Condition, DatasetRef, Expected, Recipe
from nuggetbench.reproduce.record import record_runs
from nuggetbench.reproduce.runfiles import checksum_of, fetch_run_file
from nuggetbench.retrieval.spec import public_spec

__all__ = ["Pair", "matches", "reproduce", "select"]

log = logging.getLogger(__name__)

Pair = tuple[Condition, DatasetRef, Expected]
#: Errors that mean "cannot run here" (absent data offline, a model not to be had, a download
#: that failed), not "wrong": their condition is skipped with the message as its reason. A file
#: whose checksum differs from the published one (``ChecksumError``) is an error, not a skip.
SKIPPING = (DatasetError, ModelError)
RESULT_NAME = "reproduction.json"


def select(
    recipe: Recipe, conditions: Sequence[str] | None = None, datasets: Sequence[str] | None = None
) -> list[Pair]:
    """The (condition, dataset, expected) pairs to run, in the recipe's order.

    Args:
        conditions: condition names (default: all).
        datasets: dataset ids or labels (default: all).

    Raises:
        UnknownNameError: a condition or dataset the recipe does not declare.
        InputError: the selection holds no expected value.
    """
    names = [c.name for c in recipe.conditions]
    for name in conditions or ():
        if name not in names:
            raise UnknownNameError(
                f"recipe {recipe.name!r} has no condition {name!r}.{suggest(name, names)} "
                f"Conditions: {', '.join(names)}"
            )
    wanted_ds = _dataset_ids(recipe, datasets) if datasets else None
    pairs: list[Pair] = []
    for cond in recipe.conditions:
        if conditions and cond.name not in conditions:
            continue
        for ref in recipe.datasets:
            if wanted_ds is not None and ref.id not in wanted_ds:
                continue
            exp = next(
                (e for e in recipe.expected if e.condition == cond.name and e.dataset == ref.id),
                None,
            )
            if exp is not None:
                pairs.append((cond, ref, exp))
    if not pairs:
        raise InputError(
            f"recipe {recipe.name!r} has no expected value for condition(s) "
            f"{', '.join(conditions or names)} on dataset(s) {', '.join(datasets or ['any'])}"
        )
    return pairs


def matches(
    recipe: Recipe, conditions: Sequence[str] | None = None, datasets: Sequence[str] | None = None
) -> bool:
    """Whether *recipe* has expected values for the selection (see :func:`select`)."""
    try:
        select(recipe, conditions, datasets)
    except InputError:  # UnknownNameError is an InputError too
        return False
    return True


def _dataset_ids(recipe: Recipe, given: Sequence[str]) -> set[str]:
    known = {d.id: d.id for d in recipe.datasets}
    known.update({d.label: d.id for d in recipe.datasets if d.label})
    out = set()
    for item in given:
        if item not in known:
            raise UnknownNameError(
                f"recipe {recipe.name!r} has no dataset {item!r}.{suggest(item, list(known))} "
                f"Datasets: {', '.join(d.id for d in recipe.datasets)}"
            )
        out.add(known[item])
    return out


def _checks(recipe: Recipe, pair: Pair) -> list[ValueCheck]:
    cond, ref, exp = pair
    return [
        ValueCheck(
            cond.name,
            ref.id,
            measure,
            value,
            recipe.tolerance(exp, measure),
            recipe.source.precision,
            note=exp.notes.get(measure, ""),
        )
        for measure, value in exp.values.items()
    ]


def reproduce(
    recipe: Recipe,
    *,
    conditions: Sequence[str] | None = None,
    datasets: Sequence[str] | None = None,
    outdir: str | Path | None = None,
    overwrite: bool = False,
    models: Mapping[str, str] | None = None,
    ray: str | None = None,
    cache_runs: bool = True,
    show_progress: bool = False,
    dry_run: bool = False,
    progress: Callable[[str], None] | None = None,
) -> Reproduction:
    """Run *recipe*'s selected conditions and check every expected value.

    Args:
        recipe: a validated :class:`~nuggetbench.reproduce.recipe.Recipe`.
        conditions, datasets: the selection (see :func:`select`); default everything.
        outdir: write ``OUT/<recipe>/`` (one ``run`` folder per dataset, ``reproduction.json``).
        overwrite: replace what ``OUT/<recipe>/`` holds (default: refuse, before any work).
        models: ``{model id: local folder}`` substituted in retriever specs (weights installed
            by hand, e.g. a package's copy of a hub model).
        ray: as ``run --ray``.
        cache_runs: serve runs from the run cache (``run``'s default).
        show_progress: progress bars.
        dry_run: run nothing: every value is skipped ("dry run") and the commands are filled.
        progress: called with one line before each (condition, dataset).

    Returns:
        A :class:`Reproduction`; skipped values carry their reason.

    Raises:
        UnknownNameError, InputError: a bad selection, a folder that holds a reproduction, a
            retriever spec or summary row the code does not know (before or while running).
        OutputError: files that could not be saved.
    """
    pairs = select(recipe, conditions, datasets)
    models = dict(models or {})
    out = Reproduction(recipe, models=models, dry_run=dry_run)
    for pair in pairs:
        cond, ref, _ = pair
        out.commands.setdefault(cond.name, []).extend(
            commands_for(recipe, cond, ref, models=models)
        )
    checks = {(c.name, r.id): _checks(recipe, (c, r, e)) for c, r, e in pairs}
    out.checks = [v for vs in checks.values() for v in vs]
    if dry_run:
        for v in out.checks:
            v.skip("dry run")
        return out
    root = Path(outdir) / recipe.name if outdir is not None else None
    if root is not None:
        _check_free(root, overwrite)
    t0 = time.perf_counter()
    out.started = _now()
    ctx = folder_lock(root, "nuggetbench reproduce") if root else contextlib.nullcontext()
    with ctx:
        state = _State(root, overwrite, models, ray, cache_runs, show_progress, progress)
        for ref in recipe.datasets:
            todo = [p for p in pairs if p[1].id == ref.id]
            if todo:
                _run_dataset(state, ref, todo, checks, out)
        out.finished = _now()
        out.wall_seconds = time.perf_counter() - t0
        if root is not None:
            with atomic_write(root / RESULT_NAME) as fh:
                fh.write(json_text(out.to_dict(), note=True, indent=1, default=str))
    return out


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _check_free(root: Path, overwrite: bool) -> None:
    """Refuse (before any work) a recipe folder that already holds a reproduction."""
    if overwrite or not root.exists():
        return
    held = [p.name for p in root.iterdir() if not p.name.startswith(".")]
    if held:
        raise InputError(
            f"{root} already holds a reproduction ({', '.join(sorted(held)[:4])}); add "
            "--overwrite to replace it, or choose another -o folder"
        )


class _State:
    """The settings of one reproduction and the folders written so far."""

    def __init__(self, root, overwrite, models, ray, cache_runs, show_progress, progress):
        self.root, self.overwrite, self.models, self.ray = root, overwrite, models, ray
        self.cache_runs, self.show_progress = cache_runs, show_progress
        self.progress = progress or (lambda _line: None)
        self.written: set[Path] = set()
        self.done = 0

    def existing(self, folder: Path) -> str:
        """``run_experiment``'s policy for *folder*: replace or refuse at first, then append."""
        if folder in self.written:
            return "append"
        return "overwrite" if self.overwrite else "error"


def _run_dataset(state: _State, ref: DatasetRef, todo: list[Pair], checks, out) -> None:
    """Load *ref* once and run its pairs; a dataset that cannot be had skips them all."""
    runnable = []
    for cond, _, _ in todo:
        why = blocking_reason(cond.needs)
        if why:
            for v in checks[(cond.name, ref.id)]:
                v.skip(why)
        else:
            runnable.append(cond)
    if not runnable:
        return
    state.progress(f"loading {ref.id}")
    try:
        ds = load_dataset(ref.id, **dict(ref.options))
    except ChecksumError:  # another file than the published one: an error, never a skip
        raise
    except SKIPPING as exc:
        for cond in runnable:
            for v in checks[(cond.name, ref.id)]:
                v.skip(str(exc))
        return
    out.datasets[ref.id] = {"fingerprint": ds.fingerprint(), "options": dict(ref.options)}
    keys: list[tuple] = []
    for cond in runnable:
        key = (cond.profile or ds.default_profile, cond.measures, cond.depth)
        keys += [key] if key not in keys else []
        folder = _folder(state, ref, keys.index(key))
        if folder is not None:
            out.folders.setdefault(ref.id, str(folder.relative_to(state.root)))
        state.progress(f"{cond.name} on {ref.id}")
        t0 = time.perf_counter()
        try:
            values = _values(state, ds, cond, key, folder)
        except ChecksumError:
            raise
        except SKIPPING as exc:
            for v in checks[(cond.name, ref.id)]:
                v.skip(str(exc))
            continue
        finally:
            out.seconds[f"{cond.name}@{ref.id}"] = round(time.perf_counter() - t0, 3)
        for v in checks[(cond.name, ref.id)]:
            v.judge(values[v.measure])


def _folder(state: _State, ref: DatasetRef, index: int) -> Path | None:
    if state.root is None:
        return None
    name = slug(ref.id) + (f"-{index + 1}" if index else "")
    return state.root / name


def _values(state: _State, ds: Dataset, cond: Condition, key: tuple, folder: Path | None):
    """``{measure: obtained value}`` of *cond* on *ds* (on the recipe's scale)."""
    profile, measures, depth = key
    if cond.retriever is not None:
        results, run = _retrieve(state, ds, cond, key, folder)
        evaluation = None
    else:
        run_file = cond.run_file(ds.id)
        path = fetch_run_file(run_file, show_progress=state.show_progress)
        t0 = time.perf_counter()
        evaluation = evaluate_dataset(ds, path, list(measures), profile)
        results, run = evaluation.results, evaluation.run
        if folder is not None:
            algorithm, digest = checksum_of(run_file)
            meta = {"run_file": run_file.url, algorithm: digest, "path": str(path)}
            seconds = {"evaluate": round(time.perf_counter() - t0, 3)}
            record_runs(
                folder, ds, key, {cond.name: (run, results, seconds, meta)}, state.existing(folder)
            )
            state.written.add(folder)
    if cond.statistic != "mean" and evaluation is None:
        evaluation = evaluate_dataset(ds, run, list(measures), profile)
    if cond.statistic == "mean":
        raw = {m: float(results.means[m]) for m in measures}
    else:
        raw = _summary_row(evaluation, cond)
    return _unscaled(raw, profile)


def _retrieve(state: _State, ds: Dataset, cond: Condition, key: tuple, folder: Path | None):
    profile, measures, depth = key
    spec = substitute_models(cond.retriever, state.models)
    exp = run_experiment(
        ds,
        [spec],
        measures=list(measures),
        k=depth,
        profile=profile,
        outdir=folder,
        with_objective=cond.with_objective,
        show_progress=state.show_progress,
        cache_runs=state.cache_runs,
        existing=state.existing(folder) if folder is not None else "error",
        ray=state.ray or "",
    )
    if folder is not None:
        state.written.add(folder)
    if exp.unsaved:
        raise OutputError(exp.unsaved_message())
    outcome = exp.systems[system_labels([public_spec(spec)])[0]]
    return outcome.results, outcome.run


def _summary_row(evaluation: Any, cond: Condition) -> dict[str, float]:
    """The values of the summary row named *cond.statistic* (``bootstrap mean``)."""
    rows = {name: values for s in evaluation.summaries for name, values in s.rows.items()}
    if cond.statistic not in rows:
        raise InputError(
            f"condition {cond.name!r}: statistic {cond.statistic!r} is not a row of the summaries "
            f"this dataset and profile print ({', '.join(rows) or 'none'}); use one of them or "
            "'mean'"
        )
    return {m: float(v) for m, v in rows[cond.statistic].items()}


def _unscaled(values: Mapping[str, float], profile: str) -> dict[str, float]:
    """*values* with the profile's ``scale`` (BIRCO's x100) divided out of scalable measures."""
    prof = get_profile(profile)
    if prof.scale == 1.0:
        return dict(values)
    out = {}
    for m, v in values.items():
        scalable = get_family(parse_measure(m).family).scalable
        out[m] = v / prof.scale if scalable else v
    return out
