"""Paired tests, bootstrap and corrections against scipy.stats, enumeration and hand computation."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats as sps

from nuggetbench.compare import (
    adjust_pvalues,
    bootstrap_means,
    cohens_d,
    paired_t,
    paired_test,
    percentile_interval,
    randomization,
    wilcoxon,
)
from nuggetbench.errors import InputError, UnknownNameError


def _pair(seed: int, n: int = 30, shift: float = 0.03):
    rng = np.random.default_rng(seed)
    a = rng.random(n)
    b = np.clip(a + rng.normal(shift, 0.1, n), 0, 1)
    return a, b


@pytest.mark.parametrize("seed", range(5))
def test_paired_t_matches_scipy_and_formula(seed):
    a, b = _pair(seed)
    res = paired_t(a, b)
    ref = sps.ttest_rel(b, a)
    assert res.statistic == pytest.approx(ref.statistic, rel=1e-12)
    assert res.p_value == pytest.approx(ref.pvalue, rel=1e-12)
    # independent textbook formula: t = mean(d) / (sd(d)/sqrt(n)), p = 2 * sf(|t|, n-1)
    d = b - a
    t = d.mean() / (d.std(ddof=1) / math.sqrt(len(d)))
    assert res.statistic == pytest.approx(t, rel=1e-10)
    assert res.p_value == pytest.approx(2 * sps.t.sf(abs(t), len(d) - 1), rel=1e-10)


@pytest.mark.parametrize("seed", range(5))
def test_wilcoxon_matches_scipy(seed):
    a, b = _pair(seed, n=40)
    res = wilcoxon(a, b)
    ref = sps.wilcoxon(b - a)
    assert res.statistic == pytest.approx(ref.statistic)
    assert res.p_value == pytest.approx(ref.pvalue, rel=1e-12)


def test_wilcoxon_exact_small_sample_by_enumeration():
    # 10 distinct nonzero differences: the exact null distribution of W+ enumerates 2^10 signs
    d = np.array([0.11, -0.02, 0.35, 0.07, -0.19, 0.23, 0.04, 0.5, -0.09, 0.15])
    a = np.full(10, 0.5)
    b = a + d
    ranks = sps.rankdata(np.abs(d))
    w_plus = ranks[d > 0].sum()
    dist = [
        sum(r for r, s in zip(ranks, signs) if s) for signs in itertools.product([0, 1], repeat=10)
    ]
    dist = np.array(dist)
    mean = ranks.sum() / 2
    p = np.mean(np.abs(dist - mean) >= abs(w_plus - mean) - 1e-12)
    assert wilcoxon(a, b).p_value == pytest.approx(p, rel=1e-9)


def _enumerated_sign_flip_p(d: np.ndarray) -> float:
    observed = abs(d.mean())
    hits = 0
    for signs in itertools.product([1.0, -1.0], repeat=len(d)):
        if abs(np.dot(signs, d)) / len(d) >= observed - 1e-12:
            hits += 1
    return hits / 2 ** len(d)


@pytest.mark.parametrize("seed", range(4))
def test_randomization_exact_equals_enumeration_of_1024_flips(seed):
    a, b = _pair(seed, n=10, shift=0.05)
    res = randomization(a, b)
    assert "exact" in res.method
    assert res.p_value == pytest.approx(_enumerated_sign_flip_p(b - a), abs=1e-15)


def test_randomization_monte_carlo_close_to_exact_and_seeded():
    a, b = _pair(11, n=10, shift=0.04)
    exact = _enumerated_sign_flip_p(b - a)
    mc = randomization(a, b, exact=False, n_resamples=20_000, seed=5)
    se = math.sqrt(exact * (1 - exact) / 20_000)
    assert abs(mc.p_value - exact) < 4 * se + 1e-4
    assert randomization(a, b, exact=False, n_resamples=20_000, seed=5).p_value == mc.p_value
    assert randomization(a, b, exact=False, n_resamples=20_000, seed=6).p_value != mc.p_value


def test_randomization_large_sample_close_to_t_test():
    a, b = _pair(3, n=200, shift=0.015)
    p_t = paired_t(a, b).p_value
    p_r = randomization(a, b, n_resamples=20_000, seed=1).p_value
    assert p_r == pytest.approx(p_t, abs=0.02)


def test_identical_systems_give_p_one():
    a = np.linspace(0, 1, 12)
    for test in ("t", "wilcoxon", "randomization"):
        assert paired_test(a, a.copy(), test).p_value == 1.0
    assert cohens_d(a, a) == 0.0


def test_unknown_test_and_bad_input():
    a, b = _pair(0)
    with pytest.raises(UnknownNameError, match="wilcoxon"):
        paired_test(a, b, "wilcoxn")
    with pytest.raises(InputError, match="same length"):
        paired_t(a, b[:-1])
    with pytest.raises(InputError, match="finite"):
        paired_t(np.r_[a[:-1], np.nan], b)


def test_cohens_d_hand_case():
    a = np.array([0.0, 0.0, 0.0, 0.0])
    b = np.array([1.0, 2.0, 3.0, 4.0])  # d: mean 2.5, sd (ddof=1) = sqrt(5/3)
    assert cohens_d(a, b) == pytest.approx(2.5 / math.sqrt(5 / 3))
    assert cohens_d(a, a + 1) == math.inf


def test_bootstrap_is_paired_seeded_and_sized():
    a, b = _pair(2, n=80)
    boot = bootstrap_means(np.vstack([a, b]), n_resamples=4000, seed=9)
    assert boot.shape == (2, 4000)
    # same positions for both rows: the difference of means is the bootstrap of the differences
    np.testing.assert_allclose(boot[1] - boot[0], bootstrap_means(b - a, 4000, seed=9), atol=1e-12)
    np.testing.assert_array_equal(bootstrap_means(a, 4000, seed=9), boot[0])
    # the bootstrap standard error approximates sd/sqrt(n) (ddof=0 plug-in)
    assert boot[0].std() == pytest.approx(a.std() / math.sqrt(len(a)), rel=0.1)
    lo, hi = percentile_interval(boot[0], 0.95)
    assert lo < a.mean() < hi
    assert (lo, hi) == pytest.approx(tuple(np.quantile(boot[0], [0.025, 0.975])))
    with pytest.raises(InputError):
        percentile_interval(boot[0], 95)


def test_corrections_hand_cases():
    p = [0.01, 0.04, 0.03, 0.005]
    np.testing.assert_allclose(adjust_pvalues(p, "bonferroni"), [0.04, 0.16, 0.12, 0.02])
    # Holm: sorted 0.005*4=0.02, 0.01*3=0.03, 0.03*2=0.06, 0.04*1 -> max(0.06, 0.04)=0.06
    np.testing.assert_allclose(adjust_pvalues(p, "holm"), [0.03, 0.06, 0.06, 0.02])
    # BH: sorted 0.005*4=0.02, 0.01*2=0.02, 0.03*4/3=0.04, 0.04*1=0.04
    np.testing.assert_allclose(adjust_pvalues(p, "bh"), [0.02, 0.04, 0.04, 0.02])
    np.testing.assert_allclose(adjust_pvalues(p, "none"), p)
    np.testing.assert_allclose(adjust_pvalues([0.5, 0.9], "bonferroni"), [1.0, 1.0])
    assert adjust_pvalues([], "holm").shape == (0,)
    with pytest.raises(UnknownNameError, match="holm"):
        adjust_pvalues(p, "hom")
    with pytest.raises(InputError):
        adjust_pvalues([1.5], "holm")


def test_bh_matches_scipy_false_discovery_control():
    rng = np.random.default_rng(0)
    p = rng.random(25) ** 3
    np.testing.assert_allclose(
        adjust_pvalues(p, "bh"), sps.false_discovery_control(p, method="bh"), rtol=1e-12
    )


def test_randomization_many_equals_pairwise_calls():
    from nuggetbench.compare.stats import randomization_many

    rng = np.random.default_rng(8)
    a = rng.random(60)
    others = np.vstack([a + rng.normal(s, 0.1, 60) for s in (0.0, 0.02, 0.05)])
    many = randomization_many(a, others, n_resamples=3000, seed=2)
    for row, res in zip(others, many):
        assert res == randomization(a, row, n_resamples=3000, seed=2)
    small = randomization_many(a[:10], others[:, :10])  # exact enumeration for every row
    for row, res in zip(others[:, :10], small):
        assert res.p_value == pytest.approx(_enumerated_sign_flip_p(row - a[:10]), abs=1e-15)
