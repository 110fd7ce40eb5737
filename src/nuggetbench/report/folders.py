"""``compare_folders``: paired tests between the systems of several ``nuggetbench run`` folders.

``nuggetbench compare OUT_A OUT_B`` compares output folders rather than run files: each folder's
runs are scored against its own dataset, loaded with the loader options the folder records
(``-O chunker=...``, the split), so two chunkings of a span-judged benchmark (fastbook) are
compared query by query with a paired test. The folders must share the dataset and its queries;
the dataset, judgments and runs must still have the fingerprints the folders record
(:func:`nuggetbench.report.inputs.load_inputs` checks them).

With *outdir* (``compare OUT_A OUT_B -o OUT``) the comparison is saved as a ``compare`` output
folder: a ``results.json`` in the schema of ``nuggetbench run`` (every system named
``FOLDER/SYSTEM``, its per-query values, its run file's absolute path and the folder it came
from; ``provenance["folders"]`` records each folder's path, options and fingerprints), which
``Experiment.load`` and ``nuggetbench report`` read.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from nuggetbench._atomic import atomic_write
from nuggetbench._outfolder import run_file, writing
from nuggetbench._version import __version__
from nuggetbench.compare import ComparisonReport, baseline_at, compare
from nuggetbench.compare.runs import missing_note
from nuggetbench.data.formats.rankfile import check_pools
from nuggetbench.data.subset import QuerySubset, query_subset
from nuggetbench.errors import InputError
from nuggetbench.jsonl import json_text
from nuggetbench.measures import Results, plain_measures, score
from nuggetbench.measures.depth import depth_of, note_pools
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
    outdir: str | Path | None = None,
    queries: QuerySubset | str | Path | Sequence[str] | None = None,
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
        outdir: also save the comparison there, as a ``compare`` output folder (see the module
            docstring); written whole under its lock, refused when it holds another kind of
            output (an experiment of ``nuggetbench run``).
        queries: compare on some of the folders' queries only
            (:class:`~nuggetbench.data.subset.QuerySubset`, ids, or a file of ids).
        **compare_options: passed to :func:`nuggetbench.compare.compare` (``test``,
            ``correction``, ``alpha``, ``ci``, ``n_resamples``, ``seed``, ``average_over``).

    Returns:
        A :class:`~nuggetbench.compare.ComparisonReport` whose systems are named
        ``<folder>/<system>`` (the folder's name, or more of its path where names repeat).

    Raises:
        InputError: fewer than two folders, a folder without results, folders on different
            datasets, splits or queries, different recorded profiles without *profile*, a
            dataset, judgments or run whose fingerprint differs from the recorded one, query ids
            that are not the folders', or an *outdir* another process writes or that holds
            another kind of output (before any work).
    """
    if len(folders) < 2:
        raise InputError(f"comparing output folders needs at least two, got {len(folders)}")
    labels = _labels(folders)
    subset = query_subset(queries)
    if outdir is None:
        return _compared(labels, measures, profile, baseline, subset, compare_options)[0]
    with writing(outdir, "compare", "nuggetbench compare -o", replaces=("report.html",)) as out:
        report, results = _compared(labels, measures, profile, baseline, subset, compare_options)
        with atomic_write(out / "results.json") as fh:
            fh.write(json_text(results, indent=1, default=str))  # never NaN (numbers' rule)
    return report


def _compared(
    labels: dict[str, Path],
    measures: Sequence[str] | None,
    profile: str | None,
    baseline: str | int | None,
    subset: QuerySubset | None,
    compare_options: dict[str, Any],
) -> tuple[ComparisonReport, dict]:
    """The comparison of the folders *labels* names, and the ``results.json`` dict that saves
    it (:func:`compare_folders`)."""
    inputs = {label: _inputs(path) for label, path in labels.items()}
    _check_same_data(inputs)
    for inp in inputs.values():  # the folders share their queries: one subset fits all
        inp.target = inp.target.subset(subset, what=f"the folders' {len(inp.queries)} queries")
        inp.runs = {s: inp.target.restrict_run(r) for s, r in inp.runs.items()}
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
            note_pools(results[name], inp.target.doc_filter)  # whole pools are not a cut depth
            if results[name].missing_queries:
                over = compare_options.get("average_over")
                notes.append(missing_note(name, results[name], over))
    report = compare(
        results, measures=measures, baseline=_baseline(baseline, own), **compare_options
    )
    subset_notes = [n for n in next(iter(inputs.values())).target.notes if n.startswith("queries")]
    where = "; ".join(f"{label} = {path.resolve()}" for label, path in labels.items())
    report.notes[:0] = [f"folders: {where}", *subset_notes, *notes]  # the rows' FOLDER/
    return report, _saved(inputs, labels, results, own, report, profile)


def _saved(
    inputs: dict[str, ReportInputs],
    labels: dict[str, Path],
    results: dict[str, Results],
    own: dict[str, str],
    report: ComparisonReport,
    profile: str,
) -> dict:
    """The ``results.json`` of ``compare FOLDERS -o OUT``: each system's values, run file and
    folder; the folders in ``provenance["folders"]``; the dataset's facts where the folders
    agree (``None`` where they differ: another chunking is other data)."""
    systems: dict[str, dict] = {}
    for name in report.systems:
        label, system = name[: -len(own[name]) - 1], own[name]
        inp = inputs[label]
        entry = inp.results["systems"][system]
        path = run_file(Path(inp.source), str(entry.get("run_file") or f"runs/{system}.trec"))
        values = results[name].to_dict()  # scored on a query subset, if any: the file's run
        recorded = (entry.get("provenance") or {}).get("run_fingerprint")
        values["provenance"]["run_fingerprint"] = (
            recorded or values["provenance"]["run_fingerprint"]
        )
        systems[name] = {
            **values,
            "run_file": str(path.resolve()),
            "seconds": dict(entry.get("seconds") or {}),
            "run_metadata": dict(entry.get("run_metadata") or {}),
            "folder": label,
            "depth": depth_of(results[name]),  # the most documents it ranked for a query
        }
    provs = {label: inp.results.get("provenance") or {} for label, inp in inputs.items()}
    first = next(iter(inputs.values()))
    fingerprints = {inp.dataset.fingerprint() if inp.dataset else None for inp in inputs.values()}
    options = [p.get("dataset_options") or {} for p in provs.values()]
    record = first.target.query_subset
    prov = {
        "dataset": first.results["dataset"],
        "dataset_fingerprint": fingerprints.pop() if len(fingerprints) == 1 else None,
        "split": provs[next(iter(provs))].get("split"),
        "dataset_options": options[0] if all(o == options[0] for o in options) else None,
        "nuggetbench_version": __version__,
        "made_by": "nuggetbench compare",
        "time": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "folders": {
            label: {
                "path": str(labels[label].resolve()),
                "dataset_options": provs[label].get("dataset_options"),
                "dataset_fingerprint": provs[label].get("dataset_fingerprint"),
                "k": inp.results.get("k"),
            }
            for label, inp in inputs.items()
        },
    }
    if record is not None:
        prov["queries"] = record
    depths = {inp.results.get("k") for inp in inputs.values()}
    return {
        "dataset": first.results["dataset"],
        "measures": list(report.measures),
        "profile": profile,
        "k": depths.pop() if len(depths) == 1 else None,
        "provenance": prov,
        "notes": list(report.notes),
        "baseline": report.baseline,
        "systems": systems,
        "comparison": report.to_dict(),
    }


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


def _baseline(baseline: str | int | None, own: dict[str, str]) -> str | None:
    """A system's full name, its name within one folder (when unique; *own*: full name ->
    name in its folder), or its 1-based position (0 and beyond the last are refused)."""
    if baseline is None or baseline in own:
        return baseline
    text = str(baseline)
    if isinstance(baseline, int) or text.isdigit():
        return baseline_at(baseline, list(own))
    matches = [n for n, system in own.items() if system == text]
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        raise InputError(
            f"baseline {text!r} is a system of several folders ({', '.join(matches)}); "
            "give it as FOLDER/SYSTEM"
        )
    return text  # compare() names the systems and the nearest one
