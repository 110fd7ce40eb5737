"""``compare_to_folder``: what ``nuggetbench compare -o OUTDIR`` saves, so it can be reported.

The folder holds one ``results.json`` in the schema ``nuggetbench run`` writes (``dataset``,
``measures``, ``profile``, ``provenance``, ``notes``, ``systems`` with per-query values and the
absolute path of each run file, ``comparison``), so ``nuggetbench report OUTDIR`` reads both.
The run files stay where they are (they are not copied). The folder is written as every output
folder is (:func:`nuggetbench._outfolder.writing`): under its lock, refused when it holds
another kind of output (a ``run`` experiment), replaced whole.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from nuggetbench._atomic import atomic_write
from nuggetbench._outfolder import writing
from nuggetbench._version import __version__
from nuggetbench.compare import ComparisonReport
from nuggetbench.data import read_run
from nuggetbench.data.subset import QuerySubset, query_subset
from nuggetbench.datasets import Dataset, load_target
from nuggetbench.evaluation import compare_run_files
from nuggetbench.jsonl import json_text
from nuggetbench.measures import score
from nuggetbench.measures.depth import depth_of, note_pools

__all__ = ["compare_to_folder"]


def _names(runs: Sequence[str | Path]) -> dict[str, Path]:
    """Run names as ``compare_run_files`` gives them: the file stem, the path when stems repeat."""
    out: dict[str, Path] = {}
    for path in runs:
        name = Path(path).stem
        out[str(path) if name in out else name] = Path(path)
    return out


def compare_to_folder(
    dataset: str | Path | Dataset,
    runs: Sequence[str | Path],
    outdir: str | Path,
    measures: Sequence[str] | None = None,
    profile: str | None = None,
    *,
    options: Mapping[str, Any] | None = None,
    trailing: str = "error",
    duplicates: str | None = None,
    queries: QuerySubset | str | Path | Sequence[str] | None = None,
    **compare_options: Any,
) -> ComparisonReport:
    """Compare run files as :func:`nuggetbench.evaluation.compare_run_files` does and save
    ``<outdir>/results.json`` (atomically) for :func:`nuggetbench.report.html`.

    Args:
        dataset, runs, measures, profile, options, trailing, duplicates, queries,
            compare_options: as ``compare_run_files`` (the query subset is recorded as
            ``provenance["queries"]``)
            (``baseline``, ``test``, ``correction``, ``alpha``, ``ci``, ``n_resamples``, ``seed``,
            ``average_over``).
        outdir: the folder (created).

    Returns:
        The :class:`~nuggetbench.compare.ComparisonReport`.

    Raises:
        InputError: as ``compare_run_files``; *outdir* is being written by another process or
            holds another kind of output (an experiment of ``nuggetbench run``), before any work.
    """
    with writing(outdir, "compare", "nuggetbench compare -o", replaces=("report.html",)) as out:
        compare_options["queries"] = query_subset(queries)
        report, results = _compared(
            dataset, runs, measures, profile, options, trailing, duplicates, compare_options
        )
        with atomic_write(out / "results.json") as fh:
            fh.write(json_text(results, indent=1, default=str))
    return report


def _compared(
    dataset: str | Path | Dataset,
    runs: Sequence[str | Path],
    measures: Sequence[str] | None,
    profile: str | None,
    options: Mapping[str, Any] | None,
    trailing: str,
    duplicates: str | None,
    compare_options: dict[str, Any],
) -> tuple[ComparisonReport, dict]:
    """The comparison and the ``results.json`` dict :func:`compare_to_folder` saves."""
    subset = compare_options.pop("queries")
    target = load_target(dataset, **dict(options or {})).subset(subset, what=str(dataset))
    source = target.dataset if target.dataset is not None else dataset
    reading = {"trailing": trailing, "duplicates": duplicates}
    report = compare_run_files(
        source,
        runs,
        measures,
        profile,
        **reading,
        queries=subset if target.dataset is None else None,  # a dataset is already restricted
        **compare_options,
    )
    profile_name = profile or target.default_profile or "trec_eval -c"
    ds = target.dataset
    name = ds.id if ds is not None else str(dataset)
    if Path(name).exists():  # a folder or judgments file: found again from anywhere
        name = str(Path(name).resolve())
    systems: dict[str, dict] = {}
    for system, path in _names(runs).items():
        whole = read_run(path, name=system, keep_rank=True, **reading)
        run = target.restrict_run(whole)  # a query subset: the file's run is scored on it
        res = score(target.qrels, run, report.measures, profile=profile_name)
        note_pools(res, target.doc_filter)  # a system that ranks whole pools is not cut
        entry = res.to_dict()
        entry["provenance"]["run_fingerprint"] = whole.fingerprint()  # the file's, as `run`'s
        entry.update(run_file=str(path.resolve()), seconds={}, run_metadata=dict(run.metadata))
        entry["depth"] = depth_of(res)  # the most documents it ranked for a query
        systems[system] = entry
    results = {
        "dataset": name,
        "measures": list(report.measures),
        "profile": profile_name,
        "k": None,
        "provenance": {
            "dataset": name,
            "dataset_fingerprint": ds.fingerprint() if ds is not None else None,
            "split": ds.split if ds is not None else None,
            "dataset_options": dict(ds.options) if ds is not None else {},
            "qrels_fingerprint": target.qrels.fingerprint(),
            "nuggetbench_version": __version__,
            "made_by": "nuggetbench compare",
            "time": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            **({"queries": target.query_subset} if target.query_subset else {}),
        },
        "notes": list(report.notes),
        "baseline": report.baseline,
        "systems": {system: systems[system] for system in report.systems},
        "comparison": report.to_dict(),
    }
    return report, results
