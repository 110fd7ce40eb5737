"""``compare_runs()``: evaluate several runs on the same qrels and compare them.

Used by ``nuggetbench compare`` and usable by anything that holds runs rather than results.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from nuggetbench.compare.core import compare
from nuggetbench.compare.reporting import ComparisonReport
from nuggetbench.data.formats.rankfile import check_pools
from nuggetbench.measures import measure_pairs, score
from nuggetbench.measures.depth import note_pools

log = logging.getLogger(__name__)

__all__ = ["compare_runs", "missing_note"]


def compare_runs(
    qrels: Any,
    runs: Mapping[str, Any] | Sequence[Any],
    measures: Sequence[str],
    *,
    profile: str | None = None,
    doc_filter: Mapping[str, Collection[str]] | None = None,
    **compare_options: Any,
) -> ComparisonReport:
    """Evaluate every run with :func:`nuggetbench.measures.compute` and :func:`compare` them.

    Args:
        qrels: the judgments (a :class:`~nuggetbench.data.Qrels`).
        runs: ``{name: Run}`` or a sequence of runs (named by ``run.name``; duplicates get ``#2``...).
        measures: measure strings; the report names each as given (``map`` stays ``map``,
            ``AC_Recall@10`` stays ``AC_Recall@10``), trec_eval's groups by the names
            trec_eval prints (``P.5,10`` -> ``P_5``, ``P_10``), as ``evaluate`` does.
        profile: evaluation profile name (default: ``score``'s default).
        doc_filter: per-query candidate pools; each run is checked against them and the report's
            notes say how many ranked documents lie outside (they are not removed).
        **compare_options: passed to :func:`compare` (``baseline``, ``test``, ``correction``,
            ``alpha``, ``ci``, ``n_resamples``, ``seed``, ``average_over``).

    Returns:
        A :class:`ComparisonReport` (its ``notes`` also carry run-only / missing query counts).

    Raises:
        InputError: fewer than two runs, or from :func:`compare`.
    """

    given = list(measures)
    keys = [key for key, _ in measure_pairs(given)]  # as evaluate prints them: one vocabulary
    named = _named(runs)
    notes: list[str] = []
    results: dict[str, Any] = {}
    kwargs = {"profile": profile} if profile else {}
    for name, run in named.items():
        if doc_filter is not None:
            check = check_pools(run, doc_filter, on_outside="report")
            if not check.ok:
                notes.append(f"{name}: {check.describe()}")
        res = score(qrels, run, given, **kwargs)
        note_pools(res, doc_filter)  # a system that ranks whole pools is not cut
        if res.missing_queries:
            notes.append(missing_note(name, res, compare_options.get("average_over")))
        results[name] = res
    report = compare(results, measures=keys, **compare_options)
    report.notes[:0] = notes
    return report


def _named(runs: Mapping[str, Any] | Sequence[Any]) -> dict[str, Any]:
    if isinstance(runs, Mapping):
        return {str(k): v for k, v in runs.items()}
    out: dict[str, Any] = {}
    for i, run in enumerate(runs):
        base = getattr(run, "name", None) or f"run{i + 1}"
        name, k = base, 2
        while name in out:
            name = f"{base}#{k}"
            k += 1
        out[name] = run
    return out


def missing_note(name: str, results: Any, average_over: str | None) -> str:
    """The note (a warning on the command line) for a system whose run lacks judged queries
    (``results.missing_queries``, not empty): how many, and how the comparison counts them."""
    missing = results.missing_queries
    counted = (
        "left out of the comparison for every run (--average-over common)"
        if average_over == "common"
        else "scored 0 in its means and tests (--average-over common compares the "
        "queries every run has)"
        if missing[0] in set(results.query_ids)
        else f"left out by profile {results.profile!r}"
    )
    return f"{name}: {len(missing)} judged queries are missing from the run, {counted}"
