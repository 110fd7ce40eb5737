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

With ``partial=True`` (what ``nuggetbench report`` does) a report is still made when what it reads
besides ``results.json`` is not there: a dataset absent from this machine (not on disk, downloads
off or impossible: a colleague without non-redistributable data), run files that were not copied,
or a comparison of folders scored on different data (two chunkings). The inputs then hold no
runs (and, without the dataset, no judgments or texts), and :attr:`ReportInputs.missing` says what
is missing and what it leaves out: the numbers-only views (means, intervals, tests, per-query
values, wins/ties/losses) come from ``results.json`` alone. Data that is there but differs from
the recorded data is refused as before.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nuggetbench._outfolder import current_file, incomplete_note, read_results_file, run_file
from nuggetbench.data import Corpus, Qrels, Queries, Run, read_run
from nuggetbench.data.subset import QuerySubset
from nuggetbench.datasets import Dataset, Target, family_of, is_dataset_id, load_target
from nuggetbench.errors import DatasetError, InputError
from nuggetbench.experiment import Experiment, slug

__all__ = ["ReportInputs", "load_inputs", "read_results_json"]


@dataclass
class ReportInputs:
    """Everything a report reads.

    Attributes:
        results: the ``results.json`` dict (``dataset``, ``measures``, ``profile``, ``k``,
            ``provenance``, ``notes``, ``systems`` with per-query values, ``comparison``).
        runs: ``{system name: Run}`` in the order of ``results["systems"]``.
        target: the dataset (or judgments file) the runs were scored on; empty judgments
            without a dataset when it could not be loaded (see *missing*).
        source: where the results came from (a path, or ``"<experiment>"``).
        missing: what could not be read (with ``partial=True``) and what the report leaves out
            for it, one line each; empty when everything is there.
    """

    results: dict
    runs: dict[str, Run]
    target: Target
    source: str
    missing: list[str] = field(default_factory=list)

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
    """The run file of one system: the recorded one (a relative path is the folder's own, an
    absolute one is looked for in the folder's ``runs/`` first:
    :func:`nuggetbench._outfolder.run_file`), else ``runs/<slug>.trec`` beside results.json."""
    candidates = []
    if entry.get("run_file"):
        candidates.append(run_file(folder, str(entry["run_file"])))
    candidates.append(current_file(folder, f"runs/{slug(name)}.trec"))
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
    if prov.get("queries") is not None and target.query_subset is None:  # run on a subset
        subset = QuerySubset.from_record(prov["queries"], where=str(results.get("dataset")))
        target = target.subset(subset, what=str(results.get("dataset")))
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
    partial: bool = False,
) -> ReportInputs:
    """Collect a report's inputs from an experiment or an output folder.

    Args:
        source: an :class:`Experiment` (its runs are used as they are in memory), an output
            folder of ``nuggetbench run`` or ``nuggetbench compare -o``, or its ``results.json``.
        dataset: the dataset (a :class:`Dataset`, an id, a folder or a judgments file); default:
            the one recorded in the results, loaded with *options* (and the query subset the
            results record, ``provenance["queries"]``).
        options: loader options for the dataset (``{"chunker": ...}``), as ``-O KEY=VALUE``;
            they add to (and override) the options the results record (``nuggetbench run``
            records those it loaded the dataset with).
        partial: a dataset that cannot be loaded (absent, downloads off: a ``DatasetError``),
            run files that are not there, or a comparison of folders scored on different data
            give inputs without runs (and judgments) and a line in
            :attr:`ReportInputs.missing` each, instead of an error (see the module docstring).

    Raises:
        InputError: unreadable results, a missing run file (without *partial*), or a dataset,
            judgments or run whose fingerprint differs from the one the results record.
        DatasetError: the dataset cannot be loaded (without *partial*).
    """
    if isinstance(source, Experiment):
        if not source.systems:
            raise InputError("the experiment has no systems; run at least one retriever first")
        results = json.loads(json.dumps(source.to_dict(), default=str))
        runs = {name: s.run for name, s in source.systems.items()}
        origin = str(source.outdir) if source.outdir else "<experiment>"
    else:
        results, folder = read_results_json(source)
        if not results["systems"]:  # the plan of a run that has finished no system yet
            note = incomplete_note(results, folder / "results.json")
            raise InputError(f"{note or folder}: no system to report yet")
        origin = str(folder)
        if partial:
            return _partial(results, folder, dataset, options)
        runs = {
            name: _read_checked(name, entry, folder) for name, entry in results["systems"].items()
        }
    return ReportInputs(results, runs, _target(results, dataset, options), origin)


#: What the views that need the runs or the dataset show, for the lines of ``missing``.
_LEFT_OUT = (
    "the report shows the numbers results.json holds (means, intervals, tests, per-query "
    "values, wins/ties/losses)"
)


def _partial(
    results: dict, folder: Path, dataset: Dataset | str | None, options: Mapping[str, Any] | None
) -> ReportInputs:
    """:func:`load_inputs` with ``partial=True`` from an output folder: what is there, and a
    line in ``missing`` for each thing that is not."""
    missing: list[str] = []
    prov = results.get("provenance") or {}
    folders = prov.get("folders") if isinstance(prov.get("folders"), dict) else {}
    if dataset is None and folders and prov.get("dataset_fingerprint") is None:
        made = "; ".join(
            f"{k}: {_flags((v or {}).get('dataset_options') or {})}" for k, v in folders.items()
        )
        paths = ", ".join(str((v or {}).get("path")) for v in folders.values())
        missing.append(
            f"the systems were scored on different data ({made}): {_LEFT_OUT}; each folder's "
            "own report shows its documents, judgments, nuggets and depth curves "
            f"(nuggetbench report FOLDER, for {paths})"
        )
        return ReportInputs(results, {}, Target(Qrels.from_dict({})), str(folder), missing)
    loaded = True
    try:
        target = _target(results, dataset, options)
    except DatasetError as exc:
        loaded = False
        what = re.split(r"\. |; ", str(exc), maxsplit=1)[0]
        missing.append(
            f"the dataset {results['dataset']} could not be loaded here ({what}): {_LEFT_OUT}; "
            "the query texts, documents, judgments, nuggets and depth curves need it (point "
            "NUGGETBENCH_DATA at it, or `nuggetbench datasets fetch` it, then report again)"
        )
        target = Target(Qrels.from_dict({}))
    runs: dict[str, Run] = {}
    absent = [n for n, e in results["systems"].items() if not _has_run(n, e, folder)]
    if absent:
        missing.append(
            f"the run files of {', '.join(absent)} are not here: {_LEFT_OUT}; the documents each "
            "system ranked and the depth curves need the runs (keep them where results.json "
            "names them)"
        )
    elif loaded:
        runs = {n: _read_checked(n, e, folder) for n, e in results["systems"].items()}
    return ReportInputs(results, runs, target, str(folder), missing)


def _has_run(name: str, entry: Mapping[str, Any], folder: Path) -> bool:
    try:
        _run_path(name, entry, folder)
    except InputError:
        return False
    return True
