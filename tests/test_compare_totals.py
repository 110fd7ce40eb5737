"""``compare`` reports count measures (a family aggregated by a sum: ``num_q``, ``num_rel``...)
as ``evaluate`` does: totals, differences of totals and intervals scaled the same way; the
paired tests are those of the per-query values."""

from __future__ import annotations

import csv
import io
import json

import numpy as np
import pytest
from click.testing import CliRunner

from nuggetbench.cli.compare import compare_command
from nuggetbench.cli.evaluate import evaluate_command
from nuggetbench.compare import compare

COUNTS = ["num_q", "num_ret", "num_rel", "num_rel_ret"]


def _files(tmp_path, n=12, seed=3):
    """Qrels with a different number of relevant documents per query, and two runs that
    retrieve different numbers of documents."""
    rng = np.random.default_rng(seed)
    qrels, runs = [], {"a": [], "b": []}
    for q in range(n):
        n_rel = 1 + q % 4
        qrels += [f"q{q} 0 d{d} {int(d < n_rel)}" for d in range(8)]
        for name, depth in (("a", 5), ("b", 3 + q % 5)):
            scores = rng.random(depth)
            runs[name] += [f"q{q} Q0 d{d} 0 {s:.6f} {name}" for d, s in enumerate(scores)]
    (tmp_path / "qrels.txt").write_text("\n".join(qrels) + "\n")
    for name, lines in runs.items():
        (tmp_path / f"{name}.trec").write_text("\n".join(lines) + "\n")
    return tmp_path


def _evaluate(qrels, run, measures, extra=()):
    args = [str(qrels), str(run), *[x for m in measures for x in ("-m", m)], *extra]
    res = CliRunner().invoke(evaluate_command, [*args, "--format", "json"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def _compare(qrels, runs, measures, fmt="json", extra=()):
    args = [str(qrels), *map(str, runs), *[x for m in measures for x in ("-m", m)], *extra]
    res = CliRunner().invoke(
        compare_command, [*args, "--format", fmt, "--resamples", "400"], catch_exceptions=False
    )
    assert res.exit_code == 0, res.output
    return res.stdout


def test_counts_are_evaluates_totals(tmp_path):
    root = _files(tmp_path)
    qrels, a, b = root / "qrels.txt", root / "a.trec", root / "b.trec"
    measures = [*COUNTS, "map"]
    data = json.loads(_compare(qrels, [a, b], measures))
    assert data["totals"] == COUNTS
    est = {(e["system"], e["measure"]): e for e in data["estimates"]}
    diffs = {d["measure"]: d for d in data["differences"]}
    for name, path in (("a", a), ("b", b)):
        totals = _evaluate(qrels, path, measures)
        for m in measures:
            assert est[(name, m)]["mean"] == pytest.approx(totals[m]), (name, m)
    base, other = _evaluate(qrels, a, measures), _evaluate(qrels, b, measures)
    assert base["num_ret"] != other["num_ret"]  # the runs retrieve different numbers
    for m in measures:
        assert diffs[m]["diff"] == pytest.approx(other[m] - base[m]), m
    for m in COUNTS:  # the interval of a total holds the total
        e = est[("b", m)]
        assert e["ci_low"] <= e["mean"] <= e["ci_high"]
    assert est[("a", "num_q")]["mean"] == 12 and diffs["num_q"]["diff"] == 0


def test_totals_scale_mean_ci_and_diff_but_not_the_test():
    rng = np.random.default_rng(0)
    qids = [f"q{i}" for i in range(20)]
    counts = {n: rng.integers(0, 50, 20).astype(float) for n in ("x", "y")}
    per = {n: {"num_rel_ret": v, "P_10": v / 50} for n, v in counts.items()}
    report = compare(per, query_ids=qids, n_resamples=500)
    assert report.totals == ["num_rel_ret"]
    total, mean = report.difference("y", "num_rel_ret"), report.difference("y", "P_10")
    # P_10 is num_rel_ret / 50 per query: same test, a mean (not a total) 50 * 20 times smaller
    assert total.p_value == pytest.approx(mean.p_value)
    assert total.statistic == pytest.approx(mean.statistic)
    assert total.effect_size == pytest.approx(mean.effect_size)
    assert total.diff == pytest.approx(counts["y"].sum() - counts["x"].sum())
    assert total.diff == pytest.approx(mean.diff * 50 * 20)
    assert (total.ci_low, total.ci_high) == pytest.approx((mean.ci_low * 1000, mean.ci_high * 1000))
    e = report.estimate("x", "num_rel_ret")
    assert e.mean == pytest.approx(counts["x"].sum())
    m = report.estimate("x", "P_10")
    assert (e.ci_low, e.ci_high) == pytest.approx((m.ci_low * 1000, m.ci_high * 1000))
    assert m.mean == pytest.approx(counts["x"].mean() / 50)


def test_renderings_show_totals(tmp_path):
    root = _files(tmp_path)
    qrels, runs = root / "qrels.txt", [root / "a.trec", root / "b.trec"]
    totals = _evaluate(qrels, runs[0], ["num_rel", "map"])
    rows = list(csv.DictReader(io.StringIO(_compare(qrels, runs, ["num_rel", "map"], "csv"))))
    by = {(r["system"], r["measure"]): r for r in rows}
    assert by[("a", "num_rel")]["aggregate"] == "sum" and by[("a", "map")]["aggregate"] == "mean"
    assert float(by[("a", "num_rel")]["mean"]) == totals["num_rel"]
    shown = f"{totals['num_rel']:.0f}"
    for fmt in ("markdown", "latex", "table"):
        text = " ".join(_compare(qrels, runs, ["num_rel", "map"], fmt).split()).replace("\\_", "_")
        assert shown in text and "num_rel: totals, not means" in text, fmt
        assert f"{totals['num_rel'] / 12:.2f}" not in text, fmt  # not the per-query mean


def test_real_trec_eval_files_match_evaluate(shared_data):
    folder = shared_data / "trec_eval"
    if not (folder / "qrels.test").is_file():
        pytest.skip("no trec_eval test files in the shared data")
    qrels, runs = folder / "qrels.test", [folder / "results.test", folder / "results.trunc"]
    measures = ["num_q", "num_rel", "num_rel_ret", "map"]
    flags = ["--ignore-trailing"]
    data = json.loads(_compare(qrels, runs, measures, extra=flags))
    est = {(e["system"], e["measure"]): e["mean"] for e in data["estimates"]}
    assert len(data["systems"]) == 2
    for name, run in zip(data["systems"], runs):
        totals = _evaluate(qrels, run, measures, flags)
        assert totals["num_rel"] > totals["num_q"] > 1
        for m in measures:
            assert est[(name, m)] == pytest.approx(totals[m]), (name, m)
