"""``compare()``: paired tests, bootstrap intervals and corrections over systems' per-query values."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from nuggetbench.compare.corrections import adjust_pvalues, normalize_correction
from nuggetbench.compare.reporting import TIE_TOLERANCE, ComparisonReport, Difference, Estimate
from nuggetbench.compare.stats import (
    TESTS,
    bootstrap_means,
    cohens_d,
    paired_test,
    percentile_interval,
    randomization_many,
)
from nuggetbench.errors import InputError, NuggetbenchError, UnknownNameError, suggest
from nuggetbench.measures.registry import get_family
from nuggetbench.measures.spellings import parse_measure

log = logging.getLogger(__name__)

__all__ = ["compare", "PerQuery"]

#: The normalised input of one system: query ids and ``{measure: per-query values}``.
PerQuery = tuple[list[str], dict[str, np.ndarray]]


def compare(
    results: Mapping[str, Any] | Sequence[Any],
    *,
    baseline: str | int | None = None,
    measures: Sequence[str] | None = None,
    test: str = "t",
    correction: str | None = None,
    alpha: float = 0.05,
    ci: float = 0.95,
    n_resamples: int = 10_000,
    seed: int | None = 0,
    query_ids: Sequence[str] | None = None,
) -> ComparisonReport:
    """Compare systems evaluated on the same queries against a baseline.

    For every system and measure: the mean and its percentile bootstrap interval. For every other
    system and measure: the mean paired difference to the baseline with its (paired) bootstrap
    interval, a two-sided paired test, the corrected p-value and Cohen's d_z.

    Args:
        results: the systems' per-query values, one of
            - a sequence of ``Results``-like objects (attributes ``query_ids`` and ``per_query``, a
              mapping ``measure -> array`` aligned with ``query_ids``; named by their ``name``,
              ``run_name`` or ``provenance['run']``, else ``system1``, ``system2``...);
            - a mapping ``name -> Results``-like;
            - a mapping ``name -> {measure: {query_id: value}}``;
            - a mapping ``name -> {measure: array}`` together with *query_ids* (shared order).
            NaN marks a query a measure does not average (e.g. the ``birco`` profile's recall
            over queries without relevant documents); NaNs must fall on the same queries for
            every system and those queries are left out of that measure.
        baseline: name or position of the baseline (default: the first system).
        measures: measure strings to compare (default: those every system has, in the first
            system's order).
        test: ``"t"`` (paired t-test), ``"wilcoxon"`` (signed-rank) or ``"randomization"``
            (sign-flip; exact for <= 16 queries).
        correction: ``"holm"``, ``"bonferroni"``, ``"bh"`` or ``"none"``; default ``"holm"`` with
            more than two systems, else ``"none"``. The family is every comparison with the
            baseline on one measure.
        alpha: significance level applied to the corrected p-values.
        ci: confidence level of the bootstrap intervals.
        n_resamples: bootstrap resamples (and Monte Carlo sign flips of the randomisation test).
        seed: seed of the :class:`numpy.random.Generator` used for resampling; the same seed and
            inputs give the same report.
        query_ids: query ids for the ``name -> {measure: array}`` input form.

    Returns:
        A :class:`ComparisonReport`; count measures (``num_rel``...) as totals (its ``totals``).

    Raises:
        InputError: fewer than two systems, systems evaluated on different query sets (the
            message names the queries only one side has), a measure missing from a system,
            NaNs on different queries, bad levels.
        UnknownNameError: unknown test, correction or baseline name.
    """

    systems = _normalise(results, query_ids)
    base, names = _ordered(list(systems), baseline)
    test_name, corr = _settings(test, correction, alpha, ci, len(names))
    qids = _check_same_queries(systems, base)
    aligned = {n: _align(systems[n], qids) for n in names}
    measure_list = _choose_measures(aligned, names, measures)
    report = ComparisonReport(
        systems=names,
        baseline=base,
        measures=measure_list,
        query_ids=qids,
        estimates=[],
        differences=[],
        test=test_name,
        test_method=test_name,
        correction=corr,
        alpha=alpha,
        ci=ci,
        n_resamples=n_resamples,
        seed=seed,
        notes=[],
    )
    _fill(report, aligned)
    return report


def _fill(report: ComparisonReport, aligned: Mapping[str, Mapping[str, np.ndarray]]) -> None:
    """Every measure's estimates, differences and tests into *report* (*aligned*: each
    system's per-query values on the report's queries); queries NaN for every system are left
    out of that measure, with a note."""
    names, qids = report.systems, report.query_ids
    methods: set[str] = set()
    for m in report.measures:
        matrix = np.vstack([aligned[n][m] for n in names])  # (k, n)
        mask = _common_mask(matrix, names, m, qids)
        if not mask.all():
            report.notes.append(
                f"{m}: {int((~mask).sum())} of {len(qids)} queries not averaged (NaN for every system)"
            )
        methods |= _compare_measure(report, m, matrix[:, mask])
        if _is_total(m):
            _scale_to_totals(report, m, int(mask.sum()))
        _add_deltas(report, m, matrix[:, mask], [q for q, keep in zip(qids, mask) if keep])
    report.test_method = "; ".join(sorted(methods)) or report.test


def _is_total(measure: str) -> bool:
    """*measure*'s family aggregates per-query values by their sum (a count such as
    ``num_rel``); ``False`` for a name not known to the measure registry."""
    try:
        return get_family(parse_measure(measure).family).aggregate == "sum"
    except (NuggetbenchError, ValueError):
        return False


def _scale_to_totals(report: ComparisonReport, m: str, n: int) -> None:
    """Multiply *m*'s means, differences and intervals by *n* (the sum is n times the mean);
    the paired tests and effect sizes are unchanged."""
    report.totals.append(m)
    report.estimates[:] = [
        replace(e, mean=e.mean * n, ci_low=e.ci_low * n, ci_high=e.ci_high * n)
        if e.measure == m
        else e
        for e in report.estimates
    ]
    report.differences[:] = [
        replace(d, diff=d.diff * n, ci_low=d.ci_low * n, ci_high=d.ci_high * n)
        if d.measure == m
        else d
        for d in report.differences
    ]


def _ordered(names: list[str], baseline: str | int | None) -> tuple[str, list[str]]:
    """``(baseline, systems with the baseline first)``.

    Raises:
        InputError: fewer than two systems; UnknownNameError: an unknown baseline.
    """
    if len(names) < 2:
        raise InputError(f"comparing needs at least two systems, got {len(names)}")
    base = _baseline(names, baseline)
    return base, [base] + [n for n in names if n != base]


def _settings(
    test: str, correction: str | None, alpha: float, ci: float, n_systems: int
) -> tuple[str, str]:
    """``(test name, correction)`` checked; the correction defaults to Holm's with more than
    two systems.

    Raises:
        InputError: *alpha* or *ci* outside (0, 1); UnknownNameError: an unknown test or
            correction.
    """
    if not 0.0 < alpha < 1.0:
        raise InputError(f"alpha must be between 0 and 1, got {alpha}")
    if not 0.0 < ci < 1.0:
        raise InputError(f"ci must be between 0 and 1 (e.g. 0.95), got {ci}")
    test_name = _test_name(test)
    corr = normalize_correction(
        correction if correction is not None else ("holm" if n_systems > 2 else "none")
    )
    return test_name, corr


def _add_deltas(report: ComparisonReport, m: str, matrix: np.ndarray, qids: list[str]) -> None:
    """Per-query differences to the baseline (row 0) and each difference's win/tie/loss counts
    (a difference within :data:`~.report.TIE_TOLERANCE` of zero is a tie)."""
    by_system = {d.system: i for i, d in enumerate(report.differences) if d.measure == m}
    for row, name in enumerate(report.systems[1:], start=1):
        delta = matrix[row] - matrix[0]
        report.deltas.setdefault(name, {})[m] = dict(zip(qids, delta.tolist()))
        wins = int((delta > TIE_TOLERANCE).sum())
        losses = int((delta < -TIE_TOLERANCE).sum())
        i = by_system[name]
        report.differences[i] = replace(
            report.differences[i], wins=wins, ties=len(delta) - wins - losses, losses=losses
        )


def _baseline(names: list[str], baseline: str | int | None) -> str:
    """The baseline's name from a name, a position or ``None`` (the first system)."""
    if isinstance(baseline, int):
        if not -len(names) <= baseline < len(names):
            raise InputError(
                f"baseline position {baseline} is out of range for {len(names)} systems"
            )
        return names[baseline]
    if baseline is None:
        return names[0]
    if baseline in names:
        return baseline
    raise UnknownNameError(
        f"baseline {baseline!r} is not one of the systems {names}." + suggest(baseline, names)
    )


def _test_name(test: str) -> str:
    name = {
        "ttest": "t",
        "t-test": "t",
        "permutation": "randomization",
        "randomisation": "randomization",
    }.get(test, test)
    if name not in TESTS:
        raise UnknownNameError(
            f"unknown test {test!r}; choose one of {', '.join(TESTS)}." + suggest(test, TESTS)
        )
    return name


def _compare_measure(report: ComparisonReport, m: str, matrix: np.ndarray) -> set[str]:
    """Append the estimates and differences of measure *m* to *report*.

    Args:
        report: the report being filled (systems, baseline first, and the settings).
        m: the measure.
        matrix: (systems, queries) values, NaN-free.

    Returns:
        The names of the test methods used.
    """
    names, n_resamples, seed, ci = report.systems, report.n_resamples, report.seed, report.ci
    if matrix.shape[1] == 0:
        raise InputError(f"measure {m!r} has no query with a value for every system")
    boot = bootstrap_means(matrix, n_resamples=n_resamples, seed=seed)
    means = matrix.mean(axis=1)
    for i, n in enumerate(names):
        lo, hi = percentile_interval(boot[i], ci)
        report.estimates.append(Estimate(n, m, int(matrix.shape[1]), float(means[i]), lo, hi))
    if matrix.shape[1] < 2:
        raise InputError(f"measure {m!r}: a paired test needs at least 2 queries")
    if report.test == "randomization":  # one set of sign flips for every comparison
        tests = randomization_many(matrix[0], matrix[1:], n_resamples=n_resamples, seed=seed)
    else:
        tests = [
            paired_test(matrix[0], matrix[i], report.test, n_resamples=n_resamples, seed=seed)
            for i in range(1, len(names))
        ]
    adjusted = adjust_pvalues([r.p_value for r in tests], report.correction)
    for i, (res, p_adj) in enumerate(zip(tests, adjusted), start=1):
        lo, hi = percentile_interval(boot[i] - boot[0], ci)
        report.differences.append(
            Difference(
                system=names[i],
                baseline=report.baseline,
                measure=m,
                diff=float(means[i] - means[0]),
                ci_low=lo,
                ci_high=hi,
                statistic=res.statistic,
                p_value=res.p_value,
                p_adjusted=float(p_adj),
                significant=bool(p_adj < report.alpha),
                effect_size=cohens_d(matrix[0], matrix[i]),
            )
        )
    return {res.method for res in tests}


# --- input normalisation ------------------------------------------------------------------
def _name_of(obj: Any, position: int) -> str:
    for attr in ("name", "run_name"):
        value = getattr(obj, attr, None)
        if isinstance(value, str) and value:
            return value
    prov = getattr(obj, "provenance", None)
    if isinstance(prov, Mapping):
        for key in ("run", "run_name", "retriever"):
            if isinstance(prov.get(key), str) and prov[key]:
                return prov[key]
    return f"system{position + 1}"


def _from_results_like(obj: Any, label: str) -> PerQuery:
    qids = [str(q) for q in obj.query_ids]
    per_query = obj.per_query
    out: dict[str, np.ndarray] = {}
    for m, values in per_query.items():
        arr = np.asarray(values, dtype=np.float64)
        if arr.shape != (len(qids),):
            raise InputError(
                f"{label}: values of {m} have shape {arr.shape}, expected ({len(qids)},) (one per query)"
            )
        out[str(m)] = arr
    return qids, out


def _from_mapping(data: Mapping[str, Any], label: str, query_ids: Sequence[str] | None) -> PerQuery:
    out: dict[str, np.ndarray] = {}
    qids: list[str] | None = [str(q) for q in query_ids] if query_ids is not None else None
    for m, values in data.items():
        if isinstance(values, Mapping):
            these = [str(q) for q in values]
            if qids is None:
                qids = these
            elif set(these) != set(qids):
                raise InputError(
                    f"{label}: measure {m} covers other queries than the first measure; {_diff_text(qids, these, 'first measure', str(m))}"
                )
            lookup = {str(q): v for q, v in values.items()}
            out[str(m)] = np.array([float(lookup[q]) for q in qids], dtype=np.float64)
        else:
            if qids is None:
                raise InputError(
                    f"{label}: per-query arrays need query_ids=[...] (or pass {{query_id: value}} mappings)"
                )
            arr = np.asarray(values, dtype=np.float64)
            if arr.shape != (len(qids),):
                raise InputError(
                    f"{label}: values of {m} have shape {arr.shape}, expected ({len(qids)},)"
                )
            out[str(m)] = arr
    return (qids or []), out


def _normalise(results: Any, query_ids: Sequence[str] | None) -> dict[str, PerQuery]:
    systems: dict[str, PerQuery] = {}
    if isinstance(results, Mapping):
        for name, obj in results.items():
            label = f"system {name!r}"
            if hasattr(obj, "per_query") and hasattr(obj, "query_ids"):
                systems[str(name)] = _from_results_like(obj, label)
            elif isinstance(obj, Mapping):
                systems[str(name)] = _from_mapping(obj, label, query_ids)
            else:
                raise InputError(
                    f"{label}: expected Results or {{measure: per-query values}}, got {type(obj).__name__}"
                )
        return systems
    if isinstance(results, (str, bytes)) or not isinstance(results, Sequence):
        raise InputError(
            "results must be a sequence of Results or a mapping name -> Results / per-query values"
        )
    for i, obj in enumerate(results):
        if not (hasattr(obj, "per_query") and hasattr(obj, "query_ids")):
            raise InputError(
                f"results[{i}] is a {type(obj).__name__}, not a Results (needs query_ids and per_query)"
            )
        name = _name_of(obj, i)
        base, k = name, 2
        while name in systems:
            name = f"{base}#{k}"
            k += 1
        systems[name] = _from_results_like(obj, f"system {name!r}")
    return systems


def _diff_text(a: Sequence[str], b: Sequence[str], a_name: str, b_name: str, limit: int = 5) -> str:
    sa, sb = set(a), set(b)
    only_a = sorted(sa - sb)
    only_b = sorted(sb - sa)
    parts = []
    for who, only in ((a_name, only_a), (b_name, only_b)):
        if only:
            shown = ", ".join(repr(q) for q in only[:limit]) + (
                f" and {len(only) - limit} more" if len(only) > limit else ""
            )
            parts.append(
                f"{len(only)} quer{'y' if len(only) == 1 else 'ies'} only in {who} ({shown})"
            )
    return "; ".join(parts)


def _check_same_queries(systems: dict[str, PerQuery], base: str) -> list[str]:
    qids = systems[base][0]
    if len(set(qids)) != len(qids):
        raise InputError(f"system {base!r} lists a query id twice")
    for name, (other, _) in systems.items():
        if name != base and set(other) != set(qids):
            raise InputError(
                f"systems {base!r} ({len(qids)} queries) and {name!r} ({len(other)} queries) were evaluated "
                f"on different query sets: {_diff_text(qids, other, repr(base), repr(name))}. Paired "
                "comparisons need the same queries: evaluate every run against the same qrels/profile"
            )
    return list(qids)


def _align(per: PerQuery, qids: list[str]) -> dict[str, np.ndarray]:
    own, values = per
    if own == qids:
        return values
    pos = {q: i for i, q in enumerate(own)}
    order = np.array([pos[q] for q in qids], dtype=np.int64)
    return {m: v[order] for m, v in values.items()}


def _choose_measures(
    aligned: dict[str, dict[str, np.ndarray]], names: list[str], measures: Sequence[str] | None
) -> list[str]:
    if measures is None:
        first = list(aligned[names[0]])
        chosen = [m for m in first if all(m in aligned[n] for n in names)]
        if not chosen:
            raise InputError("the systems share no measure")
        return chosen
    chosen = [str(m) for m in measures]
    for m in chosen:
        for n in names:
            if m not in aligned[n]:
                raise InputError(
                    f"system {n!r} has no values for measure {m!r}." + suggest(m, list(aligned[n]))
                )
    return chosen


def _common_mask(matrix: np.ndarray, names: list[str], measure: str, qids: list[str]) -> np.ndarray:
    finite = np.isfinite(matrix)
    if (np.isinf(matrix)).any():
        i, j = map(int, np.argwhere(np.isinf(matrix))[0])
        raise InputError(
            f"system {names[i]!r}, measure {measure}: value of query {qids[j]!r} is infinite"
        )
    mask = finite.all(axis=0)
    mixed = finite.any(axis=0) & ~mask
    if mixed.any():
        j = int(np.flatnonzero(mixed)[0])
        have = [names[i] for i in range(len(names)) if finite[i, j]]
        lack = [names[i] for i in range(len(names)) if not finite[i, j]]
        raise InputError(
            f"measure {measure}: query {qids[j]!r} has a value for {have} but NaN for {lack}; "
            "evaluate every system with the same qrels and profile"
        )
    return mask
