"""How differently two systems rank a query (RBO, weighted tau), significance between every
pair of systems, and the query a report opens on: against scipy.stats.weightedtau, an RBO written
here from the paper's equation (and the ``rbo`` package of PyPI where it is installed), ranx's
pairwise superscripts, and the runs of real experiments."""

from __future__ import annotations

import json
import math
import random

import numpy as np
import pytest
from scipy.stats import ttest_rel, weightedtau

from nuggetbench import report
from nuggetbench.data import Run
from nuggetbench.experiment import run_experiment
from nuggetbench.report.pairwise import pairwise
from nuggetbench.report.rankdiff import rank_differences, rbo, start_query, weighted_tau
from report_fixtures import SIX, beir_folder, page_data, read_trec


def _random_pairs(n: int, seed: int = 0):
    """*n* pairs of rankings drawn from pools of 1..60 documents: any overlap, any lengths
    (empty ones included)."""
    rng = random.Random(seed)
    for _ in range(n):
        pool = [f"d{i}" for i in range(rng.randint(1, 60))]
        yield (
            rng.sample(pool, rng.randint(0, len(pool))),
            rng.sample(pool, rng.randint(0, len(pool))),
        )


def _scipy_tau(a: list[str], b: list[str]) -> float:
    """scipy's weighted tau of the two rankings over their union: a document's value is
    ``len + 1 - rank`` in a ranking, 0 when absent (diffir's construction, with ranks)."""
    union = list(dict.fromkeys(a + b))
    x = [len(a) + 1 - a.index(d) if d in a else 0 for d in union]
    y = [len(b) + 1 - b.index(d) if d in b else 0 for d in union]
    return float(weightedtau(x, y).statistic)


def _rbo_ext(a: list[str], b: list[str], p: float) -> float:
    """RBO_ext, Webber, Moffat and Zobel (2010), eq. 32, term by term with sets: S the shorter
    list (length s), L the longer (length l), X_d the overlap of their prefixes at depth d (S's
    prefix stops at s)."""
    S, L = (a, b) if len(a) <= len(b) else (b, a)
    s, n = len(S), len(L)
    if n == 0:
        return 1.0
    if s == 0:
        return 0.0

    def x(d: int) -> int:
        return len(set(S[: min(d, s)]) & set(L[:d]))

    total = sum(x(d) / d * p**d for d in range(1, n + 1))
    total += sum(x(s) * (d - s) / (s * d) * p**d for d in range(s + 1, n + 1))
    return (1 - p) / p * total + ((x(n) - x(s)) / n + x(s) / s) * p**n


def test_weighted_tau_is_scipys_on_random_rankings():
    checked = undefined = 0
    for a, b in _random_pairs(800):
        ours = weighted_tau(a, b)
        if len(set(a) | set(b)) < 2:
            assert math.isnan(ours)
            continue
        ref = _scipy_tau(a, b)
        if math.isnan(ref):
            assert math.isnan(ours), (a, b)
            undefined += 1
            continue
        assert ours == pytest.approx(ref, abs=1e-12), (a, b)
        checked += 1
    assert checked > 600 and undefined > 0  # empty rankings: every value tied, tau undefined
    docs = [f"d{i}" for i in range(30)]
    assert weighted_tau(docs, docs) == pytest.approx(1.0)
    assert weighted_tau(docs, docs[::-1]) == pytest.approx(-1.0)


def test_rbo_is_the_papers_extrapolation_on_random_rankings():
    for p in (0.5, 0.9, 0.98):
        for a, b in _random_pairs(400, seed=int(p * 100)):
            assert rbo(a, b, p) == pytest.approx(_rbo_ext(a, b, p), abs=1e-12), (a, b, p)
    # a published value (Webber's example as the rankmeasures and rbo packages give it)
    assert rbo(list("abcde"), list("bcdae"), 0.9) == pytest.approx(0.828)
    docs = [f"d{i}" for i in range(50)]
    assert rbo(docs, docs) == pytest.approx(1.0) and rbo(docs[:25], docs[25:]) == 0.0
    assert rbo([], []) == 1.0 and rbo(docs, []) == 0.0
    with pytest.raises(ValueError, match="between 0 and 1"):
        rbo(docs, docs, 1.0)


def test_rbo_is_the_rbo_packages_rbo_ext():
    """The ``rbo`` package of PyPI (``RankingSimilarity.rbo_ext``), where it is installed (its
    numpy < 2 pin keeps it out of the dev dependencies)."""
    rbo_package = pytest.importorskip("rbo", reason="the rbo package is not installed")
    for a, b in _random_pairs(300, seed=7):
        if a and b:
            ref = rbo_package.RankingSimilarity(a, b).rbo_ext(p=0.9)
            assert rbo(a, b, 0.9) == pytest.approx(ref, abs=1e-12)


def test_rank_differences_of_runs_over_their_top_k():
    rng = random.Random(3)
    docs = [f"d{i}" for i in range(300)]
    a = {f"q{q}": rng.sample(docs, 150) for q in range(5)}
    b = {
        q: (ranked[:3] + rng.sample(docs, 120)) if q != "q0" else ranked for q, ranked in a.items()
    }
    b = {q: list(dict.fromkeys(r)) for q, r in b.items()}
    run_a, run_b = Run.from_ranked_lists(a), Run.from_ranked_lists(b)
    qids = [*a, "absent"]
    rbos, taus = rank_differences(run_a, run_b, qids, k=100)
    for q, r, t in zip(qids, rbos, taus):
        top_a, top_b = run_a.doc_ids(q)[:100], run_b.doc_ids(q)[:100]
        assert r == pytest.approx(_rbo_ext(top_a, top_b, 0.9))
        if q == "absent":  # neither run has it: two empty rankings
            assert r == 1.0 and math.isnan(t)
        else:
            assert t == pytest.approx(_scipy_tau(top_a, top_b))
    assert rbos[0] == pytest.approx(1.0) and taus[0] == pytest.approx(1.0)


def test_pairwise_superscripts_are_ranxs():
    """Every pair tested with the paired t-test and no correction: the systems each one is
    significantly better than are ranx's superscripts (its report's ``get_superscript_for_table``
    over its own ``compute_statistical_significance``)."""
    pytest.importorskip("ranx")
    from ranx.data_structures.report import Report, super_chars
    from ranx.statistical_tests import compute_statistical_significance

    rng = np.random.default_rng(5)
    n = 80
    base = rng.random(n)
    per_query = {
        f"s{i}": {"m1": np.clip(base + shift + rng.normal(0, 0.08, n), 0, 1), "m2": rng.random(n)}
        for i, shift in enumerate((0.0, 0.01, 0.05, 0.12))
    }
    names = list(per_query)
    ours = pairwise(per_query, ["m1", "m2"], {"test": "t", "correction": "none", "alpha": 0.05})
    comparisons = compute_statistical_significance(
        names, per_query, stat_test="student", max_p=0.05
    )
    means = {s: {m: float(v.mean()) for m, v in pq.items()} for s, pq in per_query.items()}
    ranx_report = Report(names, means, comparisons, ["m1", "m2"], 0.05, {}, stat_test="student")
    marks = 0
    for s in names:
        for m in ("m1", "m2"):
            expected = ranx_report.get_superscript_for_table(s, m)
            assert "".join(super_chars[names.index(o)] for o in ours.better[s][m]) == expected
            marks += len(expected)
    assert marks >= 3
    for (a, b), p in ours.p_adjusted["m1"].items():
        assert p == pytest.approx(ttest_rel(per_query[a]["m1"], per_query[b]["m1"]).pvalue)
    # Holm over the six pairs of a measure: each p-value scaled, never a significance gained
    holm = pairwise(per_query, ["m1"], {"test": "t", "alpha": 0.05})
    assert holm.correction == "holm"
    raw = sorted(ours.p_adjusted["m1"].values())
    assert min(holm.p_adjusted["m1"].values()) == pytest.approx(min(1.0, raw[0] * 6))
    for s in names:
        assert set(holm.better[s]["m1"]) <= set(ours.better[s]["m1"])


def test_start_query_is_the_largest_difference():
    pq = {
        "A": {"m": np.array([0.0, 0.5, 0.2, 0.9, np.nan])},
        "B": {"m": np.array([0.0, 0.1, 0.6, 0.5, np.nan])},
    }
    # |differences| 0, 0.4, 0.4, 0.4: the tie goes to the lower RBO
    rbos = {"B": np.array([0.1, 0.9, 0.3, 0.5, 1.0])}
    assert start_query(pq, "A", "m", rbos) == 2
    assert start_query(pq, "A", "m", {"B": np.array([0.1, 0.2, 0.3, 0.5, 1.0])}) == 1
    # one system: the query nearest its median (0.35 between 0.2 and 0.5: the first of them)
    assert start_query({"A": pq["A"]}, "A", "m", {}) == 2


def test_report_finds_the_queries_whose_rankings_differ(tmp_path):
    """A real experiment of four systems: the page's RBO and tau per query are those computed
    here from the run files, the view opens on the largest difference, and the pairwise tests
    are the comparison's own where the pair includes the baseline."""
    folder = beir_folder(tmp_path, n_queries=30, n_docs=150)
    out = tmp_path / "out"
    run_experiment(str(folder), SIX[:4], k=100, outdir=out, cache_runs=False)
    data = report.report_data(out)
    page = page_data(report.html(out).read_text())
    results = json.loads((out / "results.json").read_text())
    runs = {s: read_trec(tmp_path / "out" / e["run_file"]) for s, e in results["systems"].items()}
    base = SIX[0]
    for s in SIX[1:4]:
        for i, q in enumerate(data.query_ids):
            a = [d for d, _ in runs[base].get(q, [])][:100]
            b = [d for d, _ in runs[s].get(q, [])][:100]
            assert page["rankRBO"][s][i] == pytest.approx(_rbo_ext(a, b, 0.9), abs=1e-4)
            tau = _scipy_tau(a, b)
            assert page["ranktau"][s][i] == (
                None if math.isnan(tau) else pytest.approx(tau, abs=1e-4)
            )
    m = results["measures"][0]
    delta = [abs(x - y) for x, y in zip(data.per_query[SIX[1]][m], data.per_query[base][m])]
    assert (
        delta[page["start"]] == pytest.approx(max(delta), abs=1e-9) and page["start"] == data.start
    )
    # the pairs with the baseline: the comparison's own raw p-values
    raw = pairwise(data.per_query, data.measures, {"test": "t", "correction": "none"})
    for d in data.comparison["differences"]:
        assert raw.p_adjusted[d["measure"]][(base, d["system"])] == pytest.approx(d["p_value"])
    # each mark: a pair whose corrected p is under alpha, the marked system the better mean
    pw = data.pairwise
    assert pw.correction == "holm" and len(pw.p_adjusted[m]) == 6
    for s in SIX[:4]:
        for mm in data.measures:
            for o in pw.better[s][mm]:
                p = pw.p_adjusted[mm].get((s, o), pw.p_adjusted[mm].get((o, s)))
                assert p < pw.alpha
                assert np.nanmean(data.per_query[s][mm]) > np.nanmean(data.per_query[o][mm])
