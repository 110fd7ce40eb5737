"""What a report is built from: an experiment's results, its runs and its dataset.

:func:`load_inputs` accepts an :class:`~nuggetbench.experiment.Experiment` (in memory) or the
output folder of ``nuggetbench run`` (its ``results.json`` and the TREC files it names) and returns
:class:`ReportInputs`: the results dict (the ``results.json`` schema), one
:class:`~nuggetbench.data.Run` per system, and the :class:`~nuggetbench.datasets.Dataset` whose
corpus, queries and judgments the page shows. The dataset is reloaded by the id the results record
unless one is given, and its fingerprint must match the recorded one, so that grades and snippets
never come from other data than the scores.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..data import Run, read_run
from ..datasets import Dataset, load_dataset
from ..errors import InputError
from ..experiment import Experiment, slug

__all__ = ["ReportInputs", "load_inputs", "read_results"]


@dataclass
class ReportInputs:
    """Everything a report reads.

    Attributes:
        results: the ``results.json`` dict (``dataset``, ``measures``, ``profile``, ``k``,
            ``provenance``, ``notes``, ``systems`` with per-query values, ``comparison``).
        runs: ``{system name: Run}`` in the order of ``results["systems"]``.
        dataset: the dataset the runs were scored on.
        source: where the results came from (a path, or ``"<experiment>"``).
    """

    results: dict
    runs: dict[str, Run]
    dataset: Dataset
    source: str

    @property
    def systems(self) -> list[str]:
        return list(self.results["systems"])


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
    return data, file.parent


def _run_path(name: str, entry: Mapping[str, Any], folder: Path) -> Path:
    """The TREC file of one system: the recorded path, else ``runs/<slug>.trec`` beside it."""
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


def _dataset(
    results: dict, dataset: Dataset | str | None, options: Mapping[str, Any] | None
) -> Dataset:
    if isinstance(dataset, Dataset):
        ds = dataset
    else:
        options = dict(options or {})
        ds = load_dataset(dataset or results["dataset"], **options)
        split = (results.get("provenance") or {}).get("split")
        if split and ds.split != split and "split" not in options:  # the run's split
            ds = load_dataset(dataset or results["dataset"], **options, split=split)
    recorded = (results.get("provenance") or {}).get("dataset_fingerprint")
    if recorded and recorded != ds.fingerprint():
        raise InputError(
            f"dataset {ds.id!r} has fingerprint {ds.fingerprint()} but the results were scored on "
            f"{recorded}; load it with the same options as the run (-O KEY=VALUE, e.g. the "
            "chunker) or point NUGGETBENCH_DATA at the same files"
        )
    return ds


def load_inputs(
    source: Experiment | str | Path,
    *,
    dataset: Dataset | str | None = None,
    options: Mapping[str, Any] | None = None,
) -> ReportInputs:
    """Collect a report's inputs from an experiment or an output folder.

    Args:
        source: an :class:`Experiment` (its runs are used as they are in memory), an output
            folder of ``nuggetbench run``, or its ``results.json``.
        dataset: the dataset (a :class:`Dataset` or an id/folder); default: the id recorded in
            the results, loaded with *options*.
        options: loader options for the dataset (``{"chunker": ...}``), as ``-O KEY=VALUE``.

    Raises:
        InputError: unreadable results, a missing run file, or a dataset whose fingerprint differs
            from the one the results record.
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
            name: read_run(_run_path(name, entry, folder), name=name)
            for name, entry in results["systems"].items()
        }
        origin = str(folder)
    return ReportInputs(results, runs, _dataset(results, dataset, options), origin)
