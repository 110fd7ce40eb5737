"""``compare_folders``: paired tests between the systems of several ``nuggetbench run`` folders.

``nuggetbench compare OUT_A OUT_B`` compares output folders rather than run files: each folder's
runs are scored against its own dataset, loaded with the loader options the folder records
(``-O chunker=...``, the split), so two chunkings of a span-judged benchmark (fastbook) are
compared query by query with a paired test. The folders must share the dataset and its queries;
the dataset, judgments and runs must still have the fingerprints the folders record
(:func:`nuggetbench.report.inputs.load_inputs` checks them).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from nuggetbench.compare import ComparisonReport, compare
from nuggetbench.data.formats.rankfile import check_pools
from nuggetbench.errors import InputError
from nuggetbench.measures import Results, plain_measures, score
from nuggetbench.report.inputs import ReportInputs, load_inputs, read_results_json

__all__ = ["compare_folders", "is_output_folder"]


def is_output_folder(path: str | Path) -> bool:
    """Whether *path* is a folder holding a ``results.json`` (``nuggetbench run -o``)."""
    return Path(path).is_dir() and (Path(path) / "results.json").is_file()


def compare_folders(
    folders: Sequence[str | Path],
    measures: Sequence[str] | None = None,
    profile: str | None = None,
    *,
    baseline: str | int | None = None,
    **compare_options: Any,
) -> ComparisonReport:
    """Compare every system of the output *folders* with paired tests.

    Args:
        folders: two or more output folders of ``nuggetbench run`` (or ``compare -o``); each
            holds ``results.json`` and ``runs/``.
        measures: measure strings (default: those the first folder records).
        profile: a profile name (default: the one the folders record; they must agree).
        baseline: a system's name (``<folder>/<system>``, or the system's own name when it is
            unique) or its 1-based position; default the first folder's first system.
        **compare_options: passed to :func:`nuggetbench.compare.compare` (``test``,
            ``correction``, ``alpha``, ``ci``, ``n_resamples``, ``seed``).

    Returns:
        A :class:`~nuggetbench.compare.ComparisonReport` whose systems are named
        ``<folder>/<system>`` (the folder's name, or more of its path where names repeat).

    Raises:
        InputError: fewer than two folders, a folder without results, folders on different
            datasets, splits or queries, different recorded profiles without *profile*, or a
            dataset, judgments or run whose fingerprint differs from the recorded one.
    """
    if len(folders) < 2:
        raise InputError(f"comparing output folders needs at least two, got {len(folders)}")
    inputs = {label: _inputs(path) for label, path in _labels(folders).items()}
    _check_same_data(inputs)
    first = next(iter(inputs.values())).results
    measures = plain_measures(list(measures or first["measures"]))
    profile = profile or _recorded_profile(inputs)
    results: dict[str, Results] = {}
    own: dict[str, str] = {}  # full name -> the system's name in its folder
    notes: list[str] = []
    for label, inp in inputs.items():
        for system, run in inp.runs.items():
            name = f"{label}/{system}"
            own[name] = system
            if inp.target.doc_filter is not None:
                check = check_pools(run, inp.target.doc_filter, on_outside="report")
                if not check.ok:
                    notes.append(f"{name}: {check.describe()}")
            results[name] = score(inp.target.qrels, run, measures, profile=profile)
            if results[name].missing_queries:
                missing = len(results[name].missing_queries)
                notes.append(f"{name}: {missing} judged queries are missing from the run")
    report = compare(
        results, measures=measures, baseline=_baseline(baseline, own), **compare_options
    )
    report.notes[:0] = notes
    return report


def _inputs(folder: Path) -> ReportInputs:
    """One folder's results, runs and target (its recorded options), its name on any error."""
    read_results_json(folder)  # an invalid results.json is said as it is: its file and field
    try:
        return load_inputs(folder)
    except InputError as exc:
        raise InputError(
            f"{folder}: {exc}. Each folder is scored with the options its results.json records; "
            "a folder made before they were recorded must be made again (`nuggetbench run`)"
        ) from exc


def _labels(folders: Sequence[str | Path]) -> dict[str, Path]:
    """A short label per folder: its name, or more of its path where names repeat."""
    paths = [Path(f) for f in folders]
    for path in paths:
        if not path.is_dir():
            what = "does not exist" if not path.exists() else "is a file, not a folder"
            raise InputError(
                f"{path} {what}; give the output folders of `nuggetbench run -o` to compare "
                "them, or a dataset (or qrels file) followed by run files"
            )
    resolved = [p.resolve() for p in paths]
    if len(set(resolved)) < len(resolved):
        raise InputError(f"a folder is given twice: {', '.join(map(str, paths))}")
    depth = 1
    while True:
        labels = ["/".join(p.parts[-depth:]) for p in resolved]
        if len(set(labels)) == len(labels):
            return dict(zip(labels, paths))
        depth += 1


def _check_same_data(inputs: dict[str, ReportInputs]) -> None:
    """The folders must be on one dataset (id and split) with the same queries."""
    (label0, inp0), *rest = inputs.items()
    for label, inp in rest:
        for what, a, b in (
            ("dataset", inp0.results["dataset"], inp.results["dataset"]),
            ("split", _split(inp0), _split(inp)),
        ):
            if a != b:
                raise InputError(
                    f"{label0} and {label} are not on the same data: {what} {a!r} vs {b!r}; "
                    "only folders of one dataset and split can be compared"
                )
        q0, q = set(_query_ids(inp0)), set(_query_ids(inp))
        if q0 != q:
            only0, only = sorted(q0 - q), sorted(q - q0)
            raise InputError(
                f"{label0} and {label} do not share their queries: {len(only0)} only in "
                f"{label0} (e.g. {only0[:3]}), {len(only)} only in {label} (e.g. {only[:3]}); "
                "compare folders made on the same queries"
            )


def _split(inp: ReportInputs) -> Any:
    return (inp.results.get("provenance") or {}).get("split")


def _query_ids(inp: ReportInputs) -> list[str]:
    """The dataset's queries, else the judged ones."""
    if inp.dataset is not None:
        return list(inp.dataset.queries)
    return list(inp.qrels)


def _recorded_profile(inputs: dict[str, ReportInputs]) -> str:
    profiles = {label: inp.results["profile"] for label, inp in inputs.items()}
    if len(set(profiles.values())) > 1:
        listed = ", ".join(f"{label}: {p!r}" for label, p in profiles.items())
        raise InputError(
            f"the folders were scored under different profiles ({listed}); choose one with --profile"
        )
    return next(iter(profiles.values()))


def _baseline(baseline: str | int | None, own: dict[str, str]) -> str | int | None:
    """A system's full name, its name within one folder (when unique; *own*: full name ->
    name in its folder), or a 0-based index from a 1-based position."""
    if baseline is None or baseline in own:
        return baseline
    text = str(baseline)
    if text.isdigit():
        return int(text) - 1
    matches = [n for n, system in own.items() if system == text]
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        raise InputError(
            f"baseline {text!r} is a system of several folders ({', '.join(matches)}); "
            "give it as FOLDER/SYSTEM"
        )
    return text  # compare() names the systems and the nearest one
