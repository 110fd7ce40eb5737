"""Queries a system lacks: which queries a comparison averages, and what rests on the missing ones.

A run that lacks a judged query is scored 0 on it under ``trec_eval -c`` (every profile that
averages over the qrels). Compared with a run that has the query, that 0 counts as a loss: a
20-query run against a 300-query one "loses" 280 queries, and the paired test calls it
significant. :func:`nuggetbench.compare.compare` therefore takes ``average_over``:

* ``"qrels"`` (default): every query the systems were evaluated on; a query a run lacks
  scores 0. The report says how many each system lacks, and a difference whose significance
  rests on them (significant, but not when the test is run again on the queries both systems
  have, with the same correction) carries :data:`MISSING_MARK` instead of the dagger.
* ``"common"``: only the queries every system has (the others are left out of every mean,
  interval and test), as ``trec_eval`` without ``-c`` does for one run.

What a system lacks comes from its ``Results.missing_queries`` (judged queries absent from its
run) or from the ``missing`` argument (``answers``: the questions a system did not answer).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from nuggetbench.compare.corrections import adjust_pvalues
from nuggetbench.compare.stats import paired_test
from nuggetbench.errors import InputError
from nuggetbench.measures.depth import DEPTH_MARK

if TYPE_CHECKING:
    from nuggetbench.compare.reporting import ComparisonReport

__all__ = [
    "AVERAGE_OVER",
    "MISSING_MARK",
    "averaging_line",
    "by_name",
    "extra_legend",
    "common_queries",
    "lacking",
    "mark_resting_on_missing",
]

AVERAGE_OVER = ("qrels", "common")
#: The mark of a difference significant only because of queries a run lacks (scored 0).
MISSING_MARK = "\u2021"  # double dagger


def by_name(results: Any, names: list[str]) -> dict[str, Any]:
    """What ``compare`` was given (a mapping by name, or a sequence in the order of *names*),
    keyed by the systems' names."""
    if isinstance(results, Mapping):
        return {n: results[n] for n in names}
    return dict(zip(names, list(results)))


def lacking(
    results: Any, names: list[str], missing: Mapping[str, Collection[str]] | None
) -> dict[str, set[str]]:
    """``{system: query ids it lacks}``: from *missing* when it names the system, else from its
    ``missing_queries`` (a ``Results``), else none (see :func:`by_name` for *results*)."""
    out = {}
    for name, obj in by_name(results, names).items():
        given = (missing or {}).get(name)
        lacks = given if given is not None else getattr(obj, "missing_queries", None) or ()
        out[name] = {str(q) for q in lacks}
    return out


def common_queries(
    systems: Mapping[str, tuple[list[str], Any]], lacks: Mapping[str, set[str]], base: str
) -> tuple[list[str], int]:
    """``(the queries every system has, in the baseline's order; how many were left out)``.

    Raises:
        InputError: fewer than two queries are common to every system.
    """
    kept = set.intersection(*(set(q) - lacks[n] for n, (q, _) in systems.items()))
    every = set().union(*(set(q) for q, _ in systems.values()))
    order = [q for q in systems[base][0] if q in kept]
    if len(order) < 2:
        raise InputError(
            f"only {len(order)} of {len(every)} queries are in every system: a comparison over "
            "the common queries needs at least 2 (use --average-over qrels: missing ones score 0)"
        )
    return order, len(every) - len(order)


def mark_resting_on_missing(
    report: ComparisonReport, aligned: Mapping[str, Mapping[str, np.ndarray]], lacks: dict
) -> None:
    """Set ``missing`` and ``rests_on_missing`` on *report*'s differences: for each measure,
    every difference whose pair lacks some of the compared queries is tested again on the
    queries both systems have (same test, the family corrected again); a difference
    significant with the missing queries scored 0 but not without them rests on them."""
    qids = report.query_ids
    base = report.baseline
    for m in report.measures:
        rows = [(i, d) for i, d in enumerate(report.differences) if d.measure == m]
        p_values, gone = [], {}
        for _, d in rows:
            lost = (lacks.get(d.system, set()) | lacks.get(base, set())) & set(qids)
            if not lost:
                p_values.append(d.p_value)
                continue
            keep = np.array([q not in lost for q in qids])
            a, b = aligned[base][m][keep], aligned[d.system][m][keep]
            finite = np.isfinite(a) & np.isfinite(b)
            p = 1.0
            if finite.sum() >= 2 and not np.array_equal(a[finite], b[finite]):
                test = paired_test(
                    a[finite],
                    b[finite],
                    report.test,
                    n_resamples=report.n_resamples,
                    seed=report.seed,
                )
                p = test.p_value if np.isfinite(test.p_value) else 1.0
            p_values.append(p)
            gone[d.system] = len(lost)
        if not gone:
            continue
        adjusted = adjust_pvalues(p_values, report.correction)
        for (i, d), p_adj in zip(rows, adjusted):
            if d.system in gone:
                rests = bool(d.significant and not p_adj < report.alpha)
                report.differences[i] = replace(d, missing=gone[d.system], rests_on_missing=rests)


def extra_legend(report: ComparisonReport) -> str:
    """The legend's parts about missing queries and depth (empty when neither applies)."""
    parts = []
    if any(d.rests_on_missing for d in report.differences):
        parts.append(
            f"{MISSING_MARK} significant only with the missing queries scored 0 (not on the "
            "queries both systems have)"
        )
    if report.beyond_depth:
        cut = ", ".join(
            f"{s}: {', '.join(ms)} (depth {report.depths.get(s)})"
            for s, ms in report.beyond_depth.items()
        )
        parts.append(f"{DEPTH_MARK} cutoff beyond the system's depth, not comparable: {cut}")
    depths = {d for d in report.depths.values() if d is not None}
    if len(depths) > 1:
        listed = ", ".join(f"{s} {d}" for s, d in report.depths.items())
        parts.append(
            f"depths differ (documents a query: {listed}); measures without a cutoff "
            "count each system's own"
        )
    return "".join(f"; {p}" for p in parts)


def averaging_line(report: ComparisonReport) -> str:
    """Which queries the comparison averaged and how the missing ones were counted, for the
    legend and the JSON (``"300 queries of the qrels; missing from a run, scored 0: a 280"``)."""
    n = len(report.query_ids)
    if report.average_over == "common":
        left = f"; {report.left_out} left out (not in every system)" if report.left_out else ""
        return f"{n} queries every system has{left}"
    lacks = {s: k for s, k in report.missing.items() if k}
    text = f"{n} queries"
    if lacks:
        listed = ", ".join(f"{s} {k}" for s, k in lacks.items())
        text += f" of the qrels; missing from a system, scored 0: {listed}"
    if report.left_out:
        text += f"; {report.left_out} judged queries missing from the runs left out (profile)"
    return text
