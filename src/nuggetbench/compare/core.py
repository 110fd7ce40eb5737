"""``compare()``: paired tests, bootstrap intervals and corrections over systems' per-query values."""

from __future__ import annotations

import logging
import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from nuggetbench.compare.corrections import adjust_pvalues, normalize_correction
from nuggetbench.compare.missing import (
    AVERAGE_OVER,
    by_name,
    common_queries,
    lacking,
    mark_resting_on_missing,
)
from nuggetbench.compare.reporting import TIE_TOLERANCE, ComparisonReport, Difference, Estimate
from nuggetbench.compare.stats import (
    TESTS,
    TestResult,
    bootstrap_means,
    cohens_d,
    paired_test,
    percentile_interval,
    randomization_many,
)
from nuggetbench.errors import InputError, NuggetbenchError, UnknownNameError, suggest
from nuggetbench.measures.depth import depth_of, shallow
from nuggetbench.measures.registry import get_family
from nuggetbench.measures.spellings import parse_measure

log = logging.getLogger(__name__)

__all__ = ["compare", "PerQuery", "baseline_at"]

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
    intervals: bool = True,
    average_over: str = "qrels",
    missing: Mapping[str, Collection[str]] | None = None,
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
            NaN marks a query a measure does not average (``birco``'s recall without relevant
            documents): on the same queries for every system, left out of that measure.
        baseline: name or 0-based position (not negative) of the baseline (default: the first).
        measures: measure strings to compare (default: those every system has, in the first
            system's order).
        test: ``"t"`` (paired t-test), ``"wilcoxon"`` (signed-rank) or ``"randomization"``
            (sign-flip; exact for <= 16 queries).
        correction: ``"holm"``, ``"bonferroni"``, ``"bh"`` or ``"none"``; default ``"holm"`` with
            more than two systems, else ``"none"``. The family is every comparison with the
            baseline on one measure.
        alpha, ci: significance level (of the corrected p-values); the intervals' level.
        n_resamples: bootstrap resamples (and Monte Carlo sign flips of the randomisation test).
        seed: seed of the resampling :class:`numpy.random.Generator` (same seed, same report).
        query_ids: query ids for the ``name -> {measure: array}`` input form.
        intervals: bootstrap intervals (``False``: NaN, to check a stored comparison quickly);
            a measure of fewer than two queries gets NaN intervals and tests, never significant.
        average_over: ``"qrels"`` (every query evaluated; one a run lacks was scored 0) or
            ``"common"`` (the queries every system has): :mod:`nuggetbench.compare.missing`.
        missing: ``{system: query ids it lacks}`` (default: each Results' ``missing_queries``).

    Returns:
        A :class:`ComparisonReport`: count measures as totals (``totals``), what each system
        lacks (``missing``, ``Difference.rests_on_missing``), depths (``beyond_depth``).

    Raises:
        InputError: fewer than two systems, different query sets under ``"qrels"`` (the
            queries only one side has are named), fewer than two common queries, a measure
            missing from a system, NaNs on different queries, bad levels.
        UnknownNameError: unknown test, correction, baseline name or *average_over*.
    """
    systems = _normalise(results, query_ids)
    base, names = _ordered(list(systems), baseline)
    test_name, corr = _settings(test, correction, alpha, ci, len(names))
    lacks = lacking(results, list(systems), missing)
    qids, left_out = _compared_queries(systems, base, lacks, average_over)
    aligned = {n: _align(systems[n], qids) for n in names}
    measure_list = _choose_measures(aligned, names, measures)
    given = by_name(results, names)
    settings = {"test": test_name, "test_method": test_name, "correction": corr, "alpha": alpha}
    settings.update(ci=ci, n_resamples=n_resamples, seed=seed, average_over=average_over)
    report = ComparisonReport(
        names, base, measure_list, qids, [], [], notes=[], left_out=left_out, **settings
    )
    report.missing = {n: len(lacks[n] & set(qids)) for n in names}
    report.depths = {n: depth_of(obj) for n, obj in given.items()}
    report.beyond_depth = {n: c for n in names if (c := shallow(given[n], measure_list))}
    _fill(report, aligned, intervals)
    if average_over == "qrels":
        mark_resting_on_missing(report, aligned, lacks)
    return report


def _compared_queries(
    systems: dict[str, PerQuery], base: str, lacks: dict[str, set[str]], average_over: str
) -> tuple[list[str], int]:
    """``(the queries compared, how many judged queries were left out)`` under *average_over*
    (see :mod:`nuggetbench.compare.missing`).

    Raises:
        UnknownNameError: an unknown *average_over*; InputError: as :func:`compare`.
    """
    if average_over not in AVERAGE_OVER:
        raise UnknownNameError(
            f"average_over must be one of {', '.join(AVERAGE_OVER)}, got {average_over!r}"
        )
    if average_over == "common":
        return common_queries(systems, lacks, base)
    qids = _check_same_queries(systems, base)
    return qids, len(set().union(*lacks.values()) - set(qids))  # the profile left them out


def _fill(
    report: ComparisonReport, aligned: Mapping[str, Mapping[str, np.ndarray]], intervals: bool
) -> None:
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
        methods |= _compare_measure(report, m, matrix[:, mask], intervals)
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
    if isinstance(baseline, int) and not isinstance(baseline, bool):
        if not 0 <= baseline < len(names):
            raise InputError(
                f"baseline position {baseline} (0-based) is out of range for {len(names)} "
                f"systems (0..{len(names) - 1})"
            )
        return names[baseline]
    if baseline is None:
        return names[0]
    if baseline in names:
        return baseline
    raise UnknownNameError(
        f"baseline {baseline!r} is not one of the systems {names}." + suggest(baseline, names)
    )


def baseline_at(baseline: str | int | None, names: Sequence[str]) -> str | None:
    """The baseline a user named: one of *names*, or its 1-based position (an ``int`` or
    digits; ``--baseline 1`` is the first system); ``None`` stays ``None`` (the first) and
    any other text is returned for :func:`compare` to name the systems and the nearest.

    Raises:
        InputError: a position outside ``1..len(names)`` (0 included: positions start at 1).
    """
    if baseline is None or (isinstance(baseline, str) and baseline in names):
        return baseline
    text = str(baseline)
    if isinstance(baseline, int) and not isinstance(baseline, bool) or text.isdigit():
        position = int(text)
        if not 1 <= position <= len(names):
            raise InputError(
                f"baseline position {text}: positions start at 1 and there are {len(names)} "
                f"systems (1 = {names[0]!r} ... {len(names)} = {names[-1]!r}); give a "
                "position in that range or a system's name"
            )
        return names[position - 1]
    return text


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


def _compare_measure(
    report: ComparisonReport, m: str, matrix: np.ndarray, intervals: bool = True
) -> set[str]:
    """Append the estimates and differences of measure *m* to *report*.

    Args:
        report: the report being filled (systems, baseline first, and the settings).
        m: the measure.
        matrix: (systems, queries) values, NaN-free.
        intervals: compute the bootstrap intervals (else NaN).

    Returns:
        The names of the test methods used (none for a measure of fewer than two queries:
        its intervals and tests are NaN, said in the notes).
    """
    names, n_resamples, seed, ci = report.systems, report.n_resamples, report.seed, report.ci
    # row-major, so each row's mean sums in the order (and to the digit) of the system's own
    # mean (a boolean column selection returns a column-major copy, summed in another order)
    matrix = np.ascontiguousarray(matrix)
    n = int(matrix.shape[1])
    testable = n >= 2
    means = matrix.mean(axis=1) if n else np.full(len(names), np.nan)
    boot = (
        bootstrap_means(matrix, n_resamples=n_resamples, seed=seed)
        if intervals and testable
        else None
    )
    for i, name in enumerate(names):
        lo, hi = percentile_interval(boot[i], ci) if boot is not None else (math.nan, math.nan)
        report.estimates.append(Estimate(name, m, n, float(means[i]), lo, hi))
    if not testable:
        report.notes.append(
            f"{m}: {n} {'query has' if n == 1 else 'queries have'} a value for every system; "
            "its intervals and paired tests need at least 2 (shown as unavailable)"
        )
        tests = [TestResult(math.nan, math.nan, "") for _ in names[1:]]
    elif report.test == "randomization":  # one set of sign flips for every comparison
        tests = randomization_many(matrix[0], matrix[1:], n_resamples=n_resamples, seed=seed)
    else:
        tests = [
            paired_test(matrix[0], matrix[i], report.test, n_resamples=n_resamples, seed=seed)
            for i in range(1, len(names))
        ]
    adjusted = (
        adjust_pvalues([r.p_value for r in tests], report.correction)
        if testable
        else [math.nan] * len(tests)
    )
    for i, (res, p_adj) in enumerate(zip(tests, adjusted), start=1):
        lo, hi = percentile_interval(boot[i] - boot[0], ci) if boot is not None else (math.nan,) * 2
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
                effect_size=cohens_d(matrix[0], matrix[i]) if testable else math.nan,
            )
        )
    return {res.method for res in tests if res.method}


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
                "comparisons need the same queries: evaluate every run against the same qrels/profile, "
                "or compare over the queries every system has (average_over='common', "
                "--average-over common)"
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
