"""Scored published runs written into a normal ``nuggetbench run`` output folder.

A condition of published run files is scored by ``evaluate``, which writes nothing; so that
``OUT/<recipe>/<dataset>/`` is a complete output folder whatever made its rankings, each scored
run is recorded there as ``run`` records its own systems: ``runs/<label>.trec`` and
``results.json`` (:func:`nuggetbench.experiment.save_experiment`), under the folder's lock, a
replaced experiment swapped in only on success (:func:`nuggetbench._outfolder.staged`).
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from nuggetbench._outfolder import folder_lock, reuse, staged
from nuggetbench._version import __version__
from nuggetbench.data import Run, write_run
from nuggetbench.datasets import Dataset
from nuggetbench.errors import InputError
from nuggetbench.experiment import Experiment, SystemOutcome, save_experiment, slug
from nuggetbench.measures import Results

__all__ = ["record_runs"]


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _new(folder: Path, ds: Dataset, key: tuple) -> Experiment:
    profile, measures, depth = key
    exp = Experiment(ds.id, list(measures), profile, depth, outdir=folder)
    exp.provenance = {
        "dataset": ds.id,
        "dataset_fingerprint": ds.fingerprint(),
        "split": ds.split,
        "dataset_options": json.loads(json.dumps(dict(ds.options or {}), default=str)),
        "nuggetbench_version": __version__,
        "started": _now(),
        "k": depth,
        "profile": profile,
        "remove_self_hits": bool(ds.remove_self_hits),
        "systems": {},
    }
    return exp


def record_runs(
    folder: Path,
    ds: Dataset,
    key: tuple,
    outcomes: dict[str, tuple[Run, Results, dict, dict[str, Any]]],
    existing: str,
) -> Experiment:
    """Write scored runs as systems of the experiment in *folder*.

    Args:
        folder: the output folder (created).
        ds: the dataset they were scored on.
        key: ``(profile, measures, depth)`` of the experiment.
        outcomes: ``{label: (run, results, seconds, run metadata)}``.
        existing: ``"error"`` (refuse a folder holding an experiment), ``"overwrite"`` (replace
            it, on success only) or ``"append"`` (add to it; same dataset, measures, profile,
            depth).

    Returns:
        The experiment as saved.

    Raises:
        InputError: the folder holds an experiment *existing* does not allow, or another
            process is writing it.
    """
    labels = list(outcomes)
    with folder_lock(folder, "nuggetbench reproduce", kind="run"):
        exp = _new(folder, ds, key)
        old = reuse(exp, existing, labels)  # refuses, resumes, appends or plans the overwrite
        names = exp.provenance["run_files"]
        with staged(exp, old):
            (exp.outdir / "runs").mkdir(parents=True, exist_ok=True)
            for label, (run, results, seconds, meta) in outcomes.items():
                named = run.with_name(label, {**run.metadata, **meta})
                path = write_run(named, exp.outdir / names[label], tag=slug(label))
                exp.systems[label] = SystemOutcome(label, named, results, path, seconds, dict(meta))
                exp.provenance["systems"][label] = label
            exp.provenance["finished"] = _now()
            save_experiment(exp)
    if exp.unsaved:
        raise InputError(
            f"{folder}: not saved ({'; '.join(f'{k}: {v}' for k, v in exp.unsaved.items())})"
        )
    return exp
