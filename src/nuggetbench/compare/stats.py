"""Paired significance tests, bootstrap confidence intervals and effect sizes.

All functions take per-query values of two systems over the *same* queries, as float arrays of
shape ``(n,)`` aligned position by position, and are deterministic given their seed: random draws
come from a seeded :class:`numpy.random.Generator` in fixed-size chunks, so the answer does not
depend on threads or on how many measures are compared.

Sources: Student's paired t-test and Wilcoxon's signed-rank test via :mod:`scipy.stats`; the paired
randomisation (sign-flip) test of Fisher as recommended for IR by Smucker, Allan & Carterette
(CIKM 2007); percentile bootstrap intervals (Efron & Tibshirani 1993, ch. 13); Cohen's d for paired
samples (d_z, Cohen 1988), with p-values of Monte Carlo tests as (b + 1) / (B + 1)
(Phipson & Smyth 2010).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from nuggetbench.errors import InputError, UnknownNameError, suggest

if TYPE_CHECKING:  # pragma: no cover
    from nuggetbench.measures.results import Results

__all__ = [
    "TestResult",
    "TESTS",
    "paired_test",
    "randomization_many",
    "paired_t",
    "wilcoxon",
    "randomization",
    "bootstrap_means",
    "percentile_interval",
    "cohens_d",
]

TESTS = ("t", "wilcoxon", "randomization")
_CHUNK = 256  # rows of random draws per chunk (fixed: part of the reproducibility contract)
EXACT_LIMIT = 16  # enumerate all 2^n sign flips when n <= this


@dataclass(frozen=True)
class TestResult:
    """Outcome of a two-sided paired test.

    Attributes:
        statistic: the test statistic (t for the t-test, W for Wilcoxon, mean difference for the
            randomisation test); ``nan`` when undefined.
        p_value: two-sided p-value in [0, 1]; 1.0 when every difference is zero.
        method: a short description (``"paired t-test"``, ``"randomization (exact, 1024 flips)"``...).
    """

    statistic: float
    p_value: float
    method: str


def _pair(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1:
        raise InputError(
            f"paired values must be two 1-d arrays of the same length, got shapes {a.shape} and {b.shape}"
        )
    if len(a) < 2:
        raise InputError(f"a paired test needs at least 2 queries, got {len(a)}")
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise InputError("per-query values must be finite numbers (found NaN or infinity)")
    return a, b


def paired_t(a: np.ndarray, b: np.ndarray) -> TestResult:
    """Student's paired t-test of ``b - a`` (two-sided), via :func:`scipy.stats.ttest_rel`.

    Args:
        a, b: per-query values of the baseline and the other system, shape (n,), n >= 2.

    Returns:
        :class:`TestResult` with t and its p-value; p = 1 when all differences are zero.
    """
    from scipy import stats

    a, b = _pair(a, b)
    d = b - a
    if not np.any(d):
        return TestResult(0.0, 1.0, "paired t-test")
    res = stats.ttest_rel(b, a)
    return TestResult(float(res.statistic), float(res.pvalue), "paired t-test")


def wilcoxon(a: np.ndarray, b: np.ndarray, *, zero_method: str = "wilcox") -> TestResult:
    """Wilcoxon signed-rank test of ``b - a`` (two-sided), via :func:`scipy.stats.wilcoxon`.

    Args:
        a, b: per-query values, shape (n,).
        zero_method: scipy's handling of zero differences (``"wilcox"`` drops them, scipy's default;
            ``"pratt"``, ``"zsplit"``).

    Returns:
        :class:`TestResult` with scipy's W statistic and p-value (``method="auto"``: exact for
        small samples without ties or zeros, normal approximation otherwise); p = 1 when all
        differences are zero.
    """
    from scipy import stats

    a, b = _pair(a, b)
    d = b - a
    if not np.any(d):
        return TestResult(0.0, 1.0, "Wilcoxon signed-rank")
    res = stats.wilcoxon(b, a, zero_method=zero_method, alternative="two-sided")
    return TestResult(float(res.statistic), float(res.pvalue), "Wilcoxon signed-rank")


def randomization(
    a: np.ndarray,
    b: np.ndarray,
    *,
    n_resamples: int = 10_000,
    seed: int | None = 0,
    exact: bool | None = None,
) -> TestResult:
    """Two-sided paired randomisation (sign-flip permutation) test of the mean difference.

    Under the null hypothesis the two systems are exchangeable on every query, so each difference
    ``d_i = b_i - a_i`` is equally likely to have either sign. The p-value is the share of sign
    assignments whose ``|mean(s * d)|`` is at least the observed ``|mean(d)|`` (a relative tolerance
    of 1e-9 absorbs rounding, so the count does not depend on BLAS threads).

    Args:
        a, b: per-query values, shape (n,).
        n_resamples: number of random sign assignments for the Monte Carlo version.
        seed: seed of the :class:`numpy.random.Generator` (``None``: fresh entropy, not reproducible).
        exact: enumerate all ``2^n`` assignments (``None``: when ``n <= 16``). The exact p-value
            counts the observed assignment; the Monte Carlo one is ``(b + 1) / (B + 1)``.

    Returns:
        :class:`TestResult` with the observed mean difference as statistic.
    """
    a, b = _pair(a, b)
    return randomization_many(a, b[None, :], n_resamples=n_resamples, seed=seed, exact=exact)[0]


def randomization_many(
    a: np.ndarray,
    others: np.ndarray,
    *,
    n_resamples: int = 10_000,
    seed: int | None = 0,
    exact: bool | None = None,
) -> list[TestResult]:
    """:func:`randomization` of each row of *others* (shape (k, n)) against *a* (shape (n,)).

    The same sign assignments serve every row, so each result equals the one :func:`randomization`
    gives for that pair with the same seed; sharing them makes k comparisons cost about one.
    """
    a = np.asarray(a, dtype=np.float64)
    others = np.atleast_2d(np.asarray(others, dtype=np.float64))
    for row in others:
        _pair(a, row)
    diffs = (others - a[None, :]).T  # (n, k)
    n, k = diffs.shape
    observed = diffs.mean(axis=0)
    scale = np.maximum(np.abs(diffs).max(axis=0), 1e-300)
    threshold = np.abs(observed) - 1e-9 * scale
    counts = np.zeros(k, dtype=np.int64)
    if exact is None:
        exact = n <= EXACT_LIMIT
    if exact:
        if n > 24:
            raise InputError(f"exact enumeration of 2^{n} sign flips is too large; use exact=False")
        total = 1 << n
        bits = np.arange(n, dtype=np.int64)  # bit j of a row number -> sign of query j
        for start in range(0, total, 1 << 16):
            rows = np.arange(start, min(total, start + (1 << 16)), dtype=np.int64)
            signs = 1.0 - 2.0 * ((rows[:, None] >> bits[None, :]) & 1)
            counts += np.count_nonzero(np.abs(signs @ diffs) / n >= threshold, axis=0)
        p_values = counts / total
        method = f"randomization (exact, {total} sign flips)"
    else:
        if n_resamples < 1:
            raise InputError(f"n_resamples must be >= 1, got {n_resamples}")
        rng = np.random.default_rng(seed)
        done = 0
        while done < n_resamples:
            rows = min(_CHUNK, n_resamples - done)
            signs = rng.integers(0, 2, size=(rows, n), dtype=np.int64) * 2.0 - 1.0
            counts += np.count_nonzero(np.abs(signs @ diffs) / n >= threshold, axis=0)
            done += rows
        p_values = (counts + 1) / (n_resamples + 1)
        method = f"randomization ({n_resamples} sign flips)"
    out = []
    for j in range(k):
        if not np.any(diffs[:, j]):
            out.append(TestResult(0.0, 1.0, method))
        else:
            out.append(TestResult(float(observed[j]), float(p_values[j]), method))
    return out


def paired_test(
    a: np.ndarray,
    b: np.ndarray,
    test: str = "t",
    *,
    n_resamples: int = 10_000,
    seed: int | None = 0,
) -> TestResult:
    """Dispatch to :func:`paired_t`, :func:`wilcoxon` or :func:`randomization` by name.

    Raises:
        UnknownNameError: *test* is not one of ``t``, ``wilcoxon``, ``randomization``.
    """
    name = {
        "ttest": "t",
        "t-test": "t",
        "student": "t",
        "permutation": "randomization",
        "randomisation": "randomization",
        "signed-rank": "wilcoxon",
    }.get(test, test)
    if name == "t":
        return paired_t(a, b)
    if name == "wilcoxon":
        return wilcoxon(a, b)
    if name == "randomization":
        return randomization(a, b, n_resamples=n_resamples, seed=seed)

    raise UnknownNameError(
        f"unknown test {test!r}; choose one of {', '.join(TESTS)}." + suggest(test, TESTS)
    )


def bootstrap_means(
    values: np.ndarray, n_resamples: int = 10_000, seed: int | None = 0
) -> np.ndarray:
    """Bootstrap distribution of the mean of each row of *values*, resampling queries jointly.

    Each resample draws ``n`` query positions with replacement from
    ``numpy.random.default_rng(seed).integers(0, n)`` (in fixed chunks of rows) and applies the
    same positions to every row, so rows that are systems over the same queries stay paired: the
    difference of two rows' resampled means is the resampled mean of their per-query differences.

    Args:
        values: shape (n,) or (k, n): per-query values of k systems over the same n queries.
        n_resamples: number of resamples B.
        seed: generator seed (``None``: fresh entropy).

    Returns:
        Shape (B,) for 1-d input, (k, B) otherwise.

    Raises:
        InputError: no queries, or n_resamples < 1.
    """
    arr = np.asarray(values, dtype=np.float64)
    flat = arr.ndim == 1
    arr = np.atleast_2d(arr)
    n = arr.shape[1]
    if n < 1:
        raise InputError("cannot bootstrap zero queries")
    if n_resamples < 1:
        raise InputError(f"n_resamples must be >= 1, got {n_resamples}")
    rng = np.random.default_rng(seed)
    out = np.empty((arr.shape[0], n_resamples), dtype=np.float64)
    for start in range(0, n_resamples, _CHUNK):
        stop = min(n_resamples, start + _CHUNK)
        idx = rng.integers(0, n, size=(stop - start, n), dtype=np.int64)
        for row in range(arr.shape[0]):
            out[row, start:stop] = arr[row][idx].mean(axis=1)
    return out[0] if flat else out


def percentile_interval(samples: np.ndarray, ci: float = 0.95) -> tuple[float, float]:
    """The percentile bootstrap interval ``(q_{(1-ci)/2}, q_{(1+ci)/2})`` of *samples*.

    Uses :func:`numpy.quantile` with linear interpolation. Raises InputError unless 0 < ci < 1.
    """
    if not 0.0 < ci < 1.0:
        raise InputError(f"confidence level must be between 0 and 1 (e.g. 0.95), got {ci}")
    lo, hi = np.quantile(samples, [(1.0 - ci) / 2.0, (1.0 + ci) / 2.0])
    return float(lo), float(hi)


def cohens_d(a: np.ndarray, b: np.ndarray) -> float:
    """Cohen's d for paired samples (d_z): ``mean(b - a) / std(b - a, ddof=1)``.

    Returns 0.0 when every difference is zero and ``±inf`` when the differences are a nonzero
    constant.
    """
    a, b = _pair(a, b)
    d = b - a
    mean = d.mean()
    sd = d.std(ddof=1)
    if sd == 0.0:
        return 0.0 if mean == 0.0 else float(np.copysign(np.inf, mean))
    return float(mean / sd)


# --- BIRCO's bootstrap (rank2metric.py --boot True) ------------------------------------------
def birco_bootstrap(
    values: Sequence[float] | np.ndarray, *, n_resamples: int = 1000, seed: int = 42
) -> tuple[float, float]:
    """BIRCO's ``bootstrap_stats``: mean and std (ddof=0) of bootstrap means.

    Draws ``n_resamples`` index vectors with a legacy ``numpy.random.RandomState(seed)`` (the same
    stream as ``numpy.random.seed(seed)``) via ``choice(n, n, replace=True)``, one after the other,
    without touching numpy's global state.

    Args:
        values: per-query values, shape (n,), *in the order BIRCO lists the queries* (its qrel
            dict order; for a ``birco/<name>`` dataset: ``list(dataset.queries)``).
        n_resamples: number of resamples (BIRCO: 1000).
        seed: RandomState seed (BIRCO: 42).

    Returns:
        ``(mean of resampled means, std of resampled means)``.

    Raises:
        InputError: no values.
    """
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 1 or len(arr) == 0:
        raise InputError("birco_bootstrap needs a non-empty 1-d array of per-query values")
    rs = np.random.RandomState(seed)
    n = len(arr)
    means = np.empty(n_resamples, dtype=np.float64)
    for i in range(n_resamples):
        means[i] = arr[rs.choice(n, n, replace=True)].mean()
    return float(means.mean()), float(means.std())


def birco_summary(
    results: Results, order: Sequence[str] | None = None, *, n_resamples: int = 1000, seed: int = 42
) -> dict[str, tuple[float, float]]:
    """``{measure: (bootstrap mean, bootstrap std)}`` as ``rank2metric.py --boot True`` prints them.

    Args:
        results: from ``evaluate(..., profile="birco")`` (values already x100).
        order: query ids in BIRCO's order (``list(dataset.queries)``); evaluated queries are taken
            in this order (default: ``results.query_ids``, sorted, which changes the resamples).
        n_resamples, seed: see :func:`birco_bootstrap`.

    Raises:
        InputError: *order* lacks some evaluated query.
    """
    qids = list(results.query_ids)
    if order is not None:
        pos = {q: i for i, q in enumerate(qids)}
        missing = sorted(set(qids) - set(order))
        if missing:
            raise InputError(f"order lacks {len(missing)} evaluated queries, e.g. {missing[:3]}")
        index = np.array([pos[q] for q in order if q in pos], dtype=np.int64)
    else:
        index = np.arange(len(qids))
    return {
        m: birco_bootstrap(
            np.asarray(results.per_query[m])[index], n_resamples=n_resamples, seed=seed
        )
        for m in results.measures
    }
