"""What a report is built from: an experiment's results, its runs and its dataset.

:func:`load_inputs` accepts an :class:`~nuggetbench.experiment.Experiment` (in memory) or the
output folder of ``nuggetbench run`` or ``nuggetbench compare -o`` (its ``results.json`` and the
run files it names) and returns :class:`ReportInputs`: the results dict (the ``results.json``
schema), one :class:`~nuggetbench.data.Run` per system, and the
:class:`~nuggetbench.datasets.Target` (a dataset, or a judgments file without corpus or query
texts) whose judgments, corpus and queries the page shows. The target is reloaded from what the
results record unless one is given; the dataset's and the judgments' fingerprints must match the
recorded ones, and each run's too, so that grades and snippets never come from other data than
the scores.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nuggetbench._outfolder import read_results_file
from nuggetbench.data import Corpus, Qrels, Queries, Run, read_run
from nuggetbench.datasets import Dataset, Target, family_of, is_dataset_id, load_target
from nuggetbench.errors import InputError
from nuggetbench.experiment import Experiment, slug

__all__ = ["ReportInputs", "load_inputs", "read_results_json"]


@dataclass
class ReportInputs:
    """Everything a report reads.

    Attributes:
        results: the ``results.json`` dict (``dataset``, ``measures``, ``profile``, ``k``,
            ``provenance``, ``notes``, ``systems`` with per-query values, ``comparison``).
        runs: ``{system name: Run}`` in the order of ``results["systems"]``.
        target: the dataset (or judgments file) the runs were scored on.
        source: where the results came from (a path, or ``"<experiment>"``).
    """

    results: dict
    runs: dict[str, Run]
    target: Target
    source: str

    @property
    def systems(self) -> list[str]:
        return list(self.results["systems"])

    @property
    def dataset(self) -> Dataset | None:
        """The dataset, ``None`` for a judgments file."""
        return self.target.dataset

    @property
    def qrels(self) -> Qrels:
        return self.target.qrels

    @property
    def corpus(self) -> Corpus | None:
        """The corpus, ``None`` for a judgments file (then no snippets)."""
        return self.target.corpus

    @property
    def queries(self) -> Queries:
        """The query texts (empty for a judgments file)."""
        return self.dataset.queries if self.dataset is not None else Queries({})


def read_results_json(path: str | Path) -> tuple[dict, Path]:
    """Read ``results.json`` from an output folder (or the file itself), as a dict: the report's
    input (one system's :class:`~nuggetbench.measures.Results` is ``nuggetbench.read_results``).

    Returns:
        ``(results dict, output folder)``.

    Raises:
        InputError: no ``results.json``, malformed JSON, or not a ``nuggetbench run`` results file
            (no ``systems`` with per-query values); a field of the wrong type or a mean that is
            not its per-query values' (:func:`nuggetbench._outfolder.read_results_file`).
    """
    data, file = read_results_file(path)  # types, required fields, means: file and field named
    return data, file.parent


def _run_path(name: str, entry: Mapping[str, Any], folder: Path) -> Path:
    """The run file of one system: the recorded path (or its name under ``runs/``), else
    ``runs/<slug>.trec`` beside results.json."""
    candidates = []
    if entry.get("run_file"):
        recorded = Path(entry["run_file"])
        candidates.append(recorded)
        candidates.append(folder / "runs" / recorded.name)
    candidates.append(folder / "runs" / f"{slug(name)}.trec")
    for c in candidates:
        if c.is_file():
            return c
    raise InputError(
        f"{folder / 'results.json'}: the run of system {name!r} is missing (looked for "
        f"{', '.join(str(c) for c in candidates)}); keep runs/ beside results.json"
    )


def _read_checked(name: str, entry: Mapping[str, Any], folder: Path) -> Run:
    """Read one system's run; its fingerprint must be the one its results record."""
    path = _run_path(name, entry, folder)
    run = read_run(path, name=name)
    recorded = (entry.get("provenance") or {}).get("run_fingerprint")
    if recorded and recorded != run.fingerprint():
        raise InputError(
            f"{path}: this run (fingerprint {run.fingerprint()}) is not the one scored in "
            f"results.json for {name!r} ({recorded}); it changed since; rerun `nuggetbench run`"
        )
    return run


def _dataset_target(ds: Dataset) -> Target:
    family = family_of(ds.id) if is_dataset_id(ds.id) else None
    return Target(ds.qrels, tuple(ds.default_measures), ds.default_profile, family, ds)


def _recorded_options(results: dict, dataset: Dataset | str | None) -> dict[str, Any]:
    """The loader options the results record (``nuggetbench run -O``), for their own dataset
    (*dataset* ``None`` or the recorded id); ``{}`` for another dataset or older results."""
    prov = results.get("provenance") or {}
    if dataset is not None and str(dataset) != str(results.get("dataset")):
        return {}
    return dict(prov.get("dataset_options") or {})


def _flags(options: Mapping[str, Any]) -> str:
    return " ".join(f"-O {k}={v}" for k, v in options.items()) or "the default options"


def _made(prov: Mapping[str, Any]) -> str:
    """The options the results were made with, as words."""
    if "dataset_options" not in prov:
        return "options not recorded: made before nuggetbench recorded them"
    return f"made with {_flags(prov['dataset_options'] or {})}"


def _target(
    results: dict, dataset: Dataset | str | None, options: Mapping[str, Any] | None
) -> Target:
    """The dataset (or judgments file) of the results, checked against their fingerprints."""
    prov = results.get("provenance") or {}
    if isinstance(dataset, Dataset):
        target = _dataset_target(dataset)
    else:
        options = {**_recorded_options(results, dataset), **dict(options or {})}
        target = load_target(dataset or results["dataset"], **options)
        split = prov.get("split")
        ds = target.dataset
        if ds is not None and split and ds.split != split and "split" not in options:
            target = load_target(dataset or results["dataset"], **options, split=split)
    ds = target.dataset
    recorded = prov.get("dataset_fingerprint")
    if ds is not None and recorded and recorded != ds.fingerprint():
        raise InputError(
            f"dataset {ds.id!r} loaded with {_flags(ds.options)} has fingerprint "
            f"{ds.fingerprint()} but the results were scored on {recorded} ({_made(prov)}); "
            "load it with the same options as the run (-O KEY=VALUE, e.g. the chunker) or point "
            "NUGGETBENCH_DATA at the same files"
        )
    for name, entry in results["systems"].items():
        scored = (entry.get("provenance") or {}).get("qrels_fingerprint")
        if scored and scored != target.qrels.fingerprint():
            raise InputError(
                f"the judgments of {results['dataset']!r} (fingerprint "
                f"{target.qrels.fingerprint()}) are not those {name!r} was scored on ({scored}); "
                "give the same dataset, options and files as when the results were made"
            )
    return target


def load_inputs(
    source: Experiment | str | Path,
    *,
    dataset: Dataset | str | None = None,
    options: Mapping[str, Any] | None = None,
) -> ReportInputs:
    """Collect a report's inputs from an experiment or an output folder.

    Args:
        source: an :class:`Experiment` (its runs are used as they are in memory), an output
            folder of ``nuggetbench run`` or ``nuggetbench compare -o``, or its ``results.json``.
        dataset: the dataset (a :class:`Dataset`, an id, a folder or a judgments file); default:
            the one recorded in the results, loaded with *options*.
        options: loader options for the dataset (``{"chunker": ...}``), as ``-O KEY=VALUE``;
            they add to (and override) the options the results record (``nuggetbench run``
            records those it loaded the dataset with).

    Raises:
        InputError: unreadable results, a missing run file, or a dataset, judgments or run whose
            fingerprint differs from the one the results record.
    """
    if isinstance(source, Experiment):
        if not source.systems:
            raise InputError("the experiment has no systems; run at least one retriever first")
        results = json.loads(json.dumps(source.to_dict(), default=str))
        runs = {name: s.run for name, s in source.systems.items()}
        origin = str(source.outdir) if source.outdir else "<experiment>"
    else:
        results, folder = read_results_json(source)
        runs = {
            name: _read_checked(name, entry, folder) for name, entry in results["systems"].items()
        }
        origin = str(folder)
    return ReportInputs(results, runs, _target(results, dataset, options), origin)
