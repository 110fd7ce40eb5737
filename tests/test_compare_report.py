"""compare(): input forms, query-set checks, corrections, and the report's renderings."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass

import numpy as np
import pytest
from scipy import stats as sps

from nuggetbench.compare import compare
from nuggetbench.errors import InputError, UnknownNameError

QIDS = [f"q{i:02d}" for i in range(40)]


def _systems(seed: int = 0):
    rng = np.random.default_rng(seed)
    base = rng.random(40)
    better = np.clip(base + 0.15 + rng.normal(0, 0.05, 40), 0, 1)  # clearly better
    same = np.clip(base + rng.normal(0, 0.05, 40), 0, 1)
    return base, better, same


@dataclass
class FakeResults:
    name: str
    query_ids: list
    per_query: dict


def test_results_like_objects_and_values():
    base, better, same = _systems()
    results = [
        FakeResults("bm25", QIDS, {"nDCG@10": base, "AP": base / 2}),
        FakeResults("dense", QIDS, {"nDCG@10": better, "AP": better / 2}),
        FakeResults("other", QIDS, {"nDCG@10": same, "AP": same / 2}),
    ]
    rep = compare(results, seed=3, n_resamples=2000)
    assert rep.systems == ["bm25", "dense", "other"] and rep.baseline == "bm25"
    assert rep.measures == ["nDCG@10", "AP"]
    assert rep.correction == "holm"  # default with more than two systems
    e = rep.estimate("dense", "nDCG@10")
    assert e.mean == pytest.approx(better.mean()) and e.n_queries == 40
    assert e.ci_low < e.mean < e.ci_high
    d = rep.difference("dense", "nDCG@10")
    assert d.diff == pytest.approx(better.mean() - base.mean())
    raw = [sps.ttest_rel(better, base).pvalue, sps.ttest_rel(same, base).pvalue]
    assert d.p_value == pytest.approx(raw[0])
    # Holm over the two comparisons of nDCG@10
    lo, hi = sorted(raw)
    expected_other = max(min(1, 2 * lo), hi) if raw[1] == hi else min(1, 2 * raw[1])
    assert rep.difference("other", "nDCG@10").p_adjusted == pytest.approx(expected_other)
    assert d.significant and d.ci_low > 0
    assert not rep.difference("other", "nDCG@10").significant
    # same seed -> same report; another seed -> other intervals
    again = compare(results, seed=3, n_resamples=2000)
    assert again.estimate("dense", "AP") == rep.estimate("dense", "AP")
    assert compare(results, seed=4, n_resamples=2000).estimate("dense", "AP") != rep.estimate(
        "dense", "AP"
    )


def test_two_systems_default_no_correction_and_baseline_choice():
    base, better, _ = _systems(1)
    data = {"A": {"m": dict(zip(QIDS, base))}, "B": {"m": dict(zip(QIDS, better))}}
    rep = compare(data, baseline="B", test="wilcoxon", n_resamples=500)
    assert rep.baseline == "B" and rep.systems == ["B", "A"] and rep.correction == "none"
    d = rep.difference("A", "m")
    assert d.diff == pytest.approx(base.mean() - better.mean())
    assert d.p_value == pytest.approx(sps.wilcoxon(base - better).pvalue)
    assert d.p_adjusted == d.p_value
    with pytest.raises(UnknownNameError, match="'B'"):
        compare(data, baseline="b")


def test_query_order_does_not_matter():
    base, better, _ = _systems(2)
    rev = {q: v for q, v in reversed(list(zip(QIDS, better)))}
    r1 = compare({"a": {"m": dict(zip(QIDS, base))}, "b": {"m": rev}}, n_resamples=300)
    r2 = compare({"a": {"m": base}, "b": {"m": better}}, query_ids=QIDS, n_resamples=300)
    assert r1.difference("b", "m") == r2.difference("b", "m")


def test_different_query_sets_error_names_the_difference():
    base, better, _ = _systems()
    a = {"m": dict(zip(QIDS, base))}
    b = {"m": dict(zip(QIDS[2:] + ["extra1"], better[2:].tolist() + [0.5]))}
    with pytest.raises(InputError) as err:
        compare({"bm25": a, "dense": b})
    msg = str(err.value)
    assert "'q00'" in msg and "'q01'" in msg and "'extra1'" in msg
    assert "2 queries only in 'bm25'" in msg and "1 query only in 'dense'" in msg


def test_missing_measure_and_mismatched_nan():
    base, better, _ = _systems()
    with pytest.raises(InputError, match="no values for measure 'AP'"):
        compare(
            {"a": {"m": base, "AP": base}, "b": {"m": better}}, query_ids=QIDS, measures=["m", "AP"]
        )
    bad = better.copy()
    bad[5] = np.nan
    with pytest.raises(InputError, match="q05"):
        compare({"a": {"m": base}, "b": {"m": bad}}, query_ids=QIDS)


def test_nan_on_same_queries_is_left_out():
    base, better, _ = _systems()
    a, b = base.copy(), better.copy()
    a[:4] = np.nan
    b[:4] = np.nan
    rep = compare({"a": {"R@5": a}, "b": {"R@5": b}}, query_ids=QIDS, n_resamples=300)
    assert rep.estimate("a", "R@5").n_queries == 36
    assert rep.estimate("a", "R@5").mean == pytest.approx(base[4:].mean())
    assert rep.difference("b", "R@5").p_value == pytest.approx(
        sps.ttest_rel(better[4:], base[4:]).pvalue
    )
    assert rep.notes


def test_renderings_mark_significance():
    base, better, same = _systems()
    rep = compare(
        {"bm25": {"nDCG@10": base}, "dense": {"nDCG@10": better}, "x_y": {"nDCG@10": same}},
        query_ids=QIDS,
        n_resamples=500,
        test="randomization",
    )
    md = rep.to_markdown()
    dense_line = next(line for line in md.splitlines() if line.startswith("| dense"))
    other_line = next(line for line in md.splitlines() if line.startswith("| x_y"))
    assert "\u2020" in dense_line and "\u2020" not in other_line
    tex = rep.to_latex()
    assert r"\begin{tabular}" in tex and r"x\_y" in tex and r"$^{\dagger}$" in tex
    rows = list(csv.DictReader(io.StringIO(rep.to_csv())))
    assert len(rows) == 3
    assert {r["system"]: r["significant"] for r in rows} == {
        "bm25": "",
        "dense": "True",
        "x_y": "False",
    }
    data = json.loads(rep.to_json())
    assert data["baseline"] == "bm25" and len(data["differences"]) == 2
    table = rep.render("table")
    assert "dense" in table and "\u2020" in table and "baseline" in table
    with pytest.raises(UnknownNameError):
        rep.render("html")


def test_fewer_than_two_systems_and_bad_levels():
    with pytest.raises(InputError, match="two systems"):
        compare({"a": {"m": [0.1, 0.2]}}, query_ids=["1", "2"])
    with pytest.raises(InputError, match="ci"):
        compare({"a": {"m": [0.1, 0.2]}, "b": {"m": [0.3, 0.1]}}, query_ids=["1", "2"], ci=95)
    with pytest.raises(UnknownNameError):
        compare({"a": {"m": [0.1, 0.2]}, "b": {"m": [0.3, 0.1]}}, query_ids=["1", "2"], test="z")
