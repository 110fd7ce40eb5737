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

from nuggetbench.data import Corpus, Qrels, Queries, Run, read_run
from nuggetbench.datasets import Dataset, Target, family_of, is_dataset_id, load_target
from nuggetbench.errors import InputError, NuggetbenchError
from nuggetbench.experiment import Experiment, slug
from nuggetbench.measures import get_family, parse_measure

__all__ = ["ReportInputs", "load_inputs", "read_results"]


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


def read_results(path: str | Path) -> tuple[dict, Path]:
    """Read ``results.json`` from an output folder (or the file itself).

    Returns:
        ``(results dict, output folder)``.

    Raises:
        InputError: no ``results.json``, malformed JSON, or not a ``nuggetbench run`` results file
            (no ``systems`` with per-query values).
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
        raise InputError(f"{file}: the JSON is nested too deeply to be a results.json") from None
    systems = data.get("systems") if isinstance(data, dict) else None
    if not isinstance(systems, dict) or not systems:
        raise InputError(
            f"{file}: no 'systems' entry; is it the results.json of `nuggetbench run`?"
        )
    for name, entry in systems.items():
        if not isinstance(entry, dict) or "per_query" not in entry or "query_ids" not in entry:
            raise InputError(
                f"{file}: system {name!r} has no per-query values; rerun `nuggetbench run` "
                "(results.json keeps them by default)"
            )
        check_saved_system(entry, data.get("measures"), f"{file}: systems.{name}")
    return data, file.parent


def _number(value: Any) -> bool:
    return value is None or (isinstance(value, (int, float)) and not isinstance(value, bool))


def check_saved_system(entry: Mapping[str, Any], measures: Any, where: str) -> None:
    """One system of a ``results.json`` checked as input (issue 29, cases 17-18): its measures,
    query ids, per-query lists (one number or null per query) and means (numbers), and each
    mean-aggregated measure's mean equal to the average of its per-query values (within 1e-6;
    trec_eval -c's missing queries count 0).

    Raises:
        InputError: one line naming the file, the field and the value found.
    """
    if not isinstance(measures, list) or not all(isinstance(m, str) for m in measures):
        raise InputError(f"{where.split(':')[0]}: 'measures' must be a list of measure names")
    qids, per_query, means = entry.get("query_ids"), entry.get("per_query"), entry.get("means")
    if not isinstance(qids, list) or not isinstance(per_query, dict) or not isinstance(means, dict):
        raise InputError(f"{where}: query_ids (a list), per_query and means (objects) are required")
    missing = entry.get("missing_queries") if isinstance(entry.get("missing_queries"), list) else []
    for m in measures:
        values, mean = per_query.get(m), means.get(m, "absent")
        if not isinstance(values, list) or len(values) != len(qids):
            raise InputError(f"{where}.per_query.{m}: needs one value per query ({len(qids)})")
        bad = next((v for v in values if not _number(v)), "none")
        if bad != "none" or not _number(mean):
            shown = bad if bad != "none" else mean
            raise InputError(f"{where}: {m}: expected a number, got {shown!r}")
        _check_mean(where, m, mean, values, len(missing))


def _check_mean(where: str, measure: str, mean: Any, values: list, n_missing: int) -> None:
    try:
        family = get_family(parse_measure(measure).family)
    except NuggetbenchError:
        return  # a measure of a plug-in not loaded here: its aggregate is unknown
    present = [float(v) for v in values if v is not None]
    if family.aggregate != "mean" or mean is None or not present:
        return
    averages = [sum(present) / len(present), sum(present) / (len(present) + n_missing)]
    if all(abs(float(mean) - a) > 1e-6 for a in averages):
        raise InputError(
            f"{where}.means.{measure} = {mean} but its per-query values average "
            f"{averages[0]:.6f}; the file was edited or damaged: run `nuggetbench run` again"
        )


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
        results, folder = read_results(source)
        runs = {
            name: _read_checked(name, entry, folder) for name, entry in results["systems"].items()
        }
        origin = str(folder)
    return ReportInputs(results, runs, _target(results, dataset, options), origin)
