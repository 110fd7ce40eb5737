"""Fair comparisons (issue 38, item 3): what each system lacks is said, counted as chosen, and a
significance that rests on it is marked.

``--average-over qrels`` (default): every judged query, one a run lacks scored 0; the footer and
the JSON give each system's count, and a difference significant only because of those zeros
(not when tested again on the queries both have) carries a double dagger. ``--average-over
common``: only the queries every system has. Numbers are checked against pytrec_eval and scipy.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner
from scipy.stats import ttest_rel

from nuggetbench.cli import cli
from nuggetbench.compare import compare
from nuggetbench.compare.missing import MISSING_MARK
from nuggetbench.compare.reporting import MARK


def test_five_unanswered_questions_alone_are_marked():
    """The issue's ``answers`` case: B equals A on 295 questions and lacks 5 (scored 0): the
    paired test calls the difference significant (W/T/L 0/295/5) and it is marked as resting
    on the missing questions; over the common questions there is no difference at all."""
    rng = np.random.default_rng(3)
    qids = [f"q{i}" for i in range(300)]
    a = {q: float(v) for q, v in zip(qids, rng.uniform(0.3, 1.0, 300))}
    lacks = qids[:5]
    b = {q: (0.0 if q in lacks else v) for q, v in a.items()}
    report = compare({"A": {"s": a}, "B": {"s": b}}, missing={"B": lacks})
    d = report.difference("B", "s")
    assert (d.wins, d.ties, d.losses) == (0, 295, 5)
    assert d.p_value == pytest.approx(ttest_rel(list(b.values()), list(a.values())).pvalue)
    assert d.significant and d.rests_on_missing and d.missing == 5
    assert report.missing == {"A": 0, "B": 5}
    text = report.render("table")
    assert MISSING_MARK in text and "scored 0: B 5" in " ".join(text.split())
    assert report.to_dict()["differences"][0]["rests_on_missing"] is True
    common = compare({"A": {"s": a}, "B": {"s": b}}, missing={"B": lacks}, average_over="common")
    dc = common.difference("B", "s")
    assert common.n_queries == 295 and common.left_out == 5
    assert dc.diff == 0.0 and not dc.significant and MISSING_MARK not in common.render("table")


def test_a_significance_that_survives_is_not_marked():
    """A difference significant on the common queries too keeps the plain dagger."""
    rng = np.random.default_rng(4)
    qids = [f"q{i}" for i in range(100)]
    a = {q: float(v) for q, v in zip(qids, rng.uniform(0.0, 0.5, 100))}
    up = rng.uniform(0.1, 0.4, 100)
    b = {q: (0.0 if i < 3 else v + up[i]) for i, (q, v) in enumerate(a.items())}
    report = compare({"A": {"s": a}, "B": {"s": b}}, missing={"B": qids[:3]})
    d = report.difference("B", "s")
    assert d.significant and not d.rests_on_missing and d.missing == 3
    assert MARK in report.render("table") and MISSING_MARK not in report.render("table")


@pytest.fixture
def runs(tmp_path):
    """30 judged queries; run b answers all of them, run a only the first 5 (b's lines)."""
    rng = np.random.default_rng(9)
    qrels, run = {}, {}
    for i in range(30):
        q = f"{i:03d}"
        qrels[q] = {f"d{j}": int(rng.integers(1, 3)) for j in rng.choice(50, 4, replace=False)}
        docs = rng.choice(50, 20, replace=False)
        run[q] = {f"d{j}": float(20 - r) for r, j in enumerate(docs)}
    qpath = tmp_path / "qrels.txt"
    qpath.write_text("".join(f"{q} 0 {d} {g}\n" for q, ds in qrels.items() for d, g in ds.items()))
    lines = {
        q: [f"{q} Q0 {d} {r + 1} {s} t\n" for r, (d, s) in enumerate(ds.items())]
        for q, ds in run.items()
    }
    (tmp_path / "b.trec").write_text("".join(x for q in run for x in lines[q]))
    (tmp_path / "a.trec").write_text("".join(x for q in list(run)[:5] for x in lines[q]))
    return qpath, tmp_path / "a.trec", tmp_path / "b.trec", qrels, run


def test_compare_counts_what_a_run_lacks(runs):
    """``compare QRELS a b``: a lacks 25 queries, scored 0; the means are pytrec_eval's sums
    over the 30 judged queries; the difference rests on the 25 (a equals b on its 5) and is
    marked; the warning says they scored 0. ``--average-over common``: the 5 queries both have,
    means equal to pytrec_eval's over those."""
    pytrec_eval = pytest.importorskip("pytrec_eval")
    qpath, a, b, qrels, run = runs
    per = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(run)
    base = ["compare", str(qpath), str(a), str(b), "-m", "nDCG@10", "--resamples", "200"]
    out = CliRunner().invoke(cli, [*base, "--format", "json"])
    assert out.exit_code == 0, out.output
    shown = json.loads(out.stdout)
    assert shown["missing"] == {"a": 25, "b": 0} and shown["average_over"] == "qrels"
    means = {e["system"]: e["mean"] for e in shown["estimates"]}
    first5 = list(run)[:5]
    assert means["b"] == pytest.approx(np.mean([per[q]["ndcg_cut_10"] for q in run]))
    assert means["a"] == pytest.approx(sum(per[q]["ndcg_cut_10"] for q in first5) / 30)
    (diff,) = shown["differences"]
    assert diff["significant"] and diff["rests_on_missing"] and diff["missing"] == 25
    assert "scored 0" in out.stderr and "--average-over common" in out.stderr
    table = CliRunner(env={"COLUMNS": "200"}).invoke(cli, base).stdout
    assert MISSING_MARK in table and "missing from a system, scored 0: a 25" in " ".join(
        table.split()
    )
    common = json.loads(
        CliRunner().invoke(cli, [*base, "--format", "json", "--average-over", "common"]).stdout
    )
    assert common["n_queries"] == 5 and common["left_out"] == 25
    means = {e["system"]: e["mean"] for e in common["estimates"]}
    expected = np.mean([per[q]["ndcg_cut_10"] for q in first5])
    assert means["a"] == pytest.approx(expected) and means["b"] == pytest.approx(expected)
    assert not common["differences"][0]["significant"]


def test_run_average_over_common_agrees_everywhere(tmp_path):
    """``run --average-over common``: the means printed, the comparison and results.json are
    over the queries every system's run has (here: all, bm25 answers every query), and the
    provenance records it."""
    folder = tmp_path / "tiny"
    (folder / "qrels").mkdir(parents=True)
    docs = {f"d{i}": f"word{i} common text {i % 3}" for i in range(40)}
    (folder / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": d, "title": "", "text": t}) + "\n" for d, t in docs.items())
    )
    (folder / "queries.jsonl").write_text(
        "".join(json.dumps({"_id": f"q{i}", "text": f"word{i} text"}) + "\n" for i in range(6))
    )
    (folder / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"q{i}\td{i}\t1\n" for i in range(6))
    )
    out = CliRunner().invoke(
        cli,
        [
            "run",
            str(folder),
            "-r",
            "bm25",
            "-r",
            "bm25:k1=0.9,b=0.4",
            "-m",
            "RR",
            "-k",
            "10",
            "-o",
            str(tmp_path / "o"),
            "--average-over",
            "common",
            "--format",
            "json",
        ],
    )
    assert out.exit_code == 0, out.output
    shown = json.loads(out.stdout)
    saved = json.loads((tmp_path / "o" / "results.json").read_text())
    assert saved["provenance"]["average_over"] == "common"
    assert shown["comparison"]["average_over"] == "common"
    for name, means in shown["results"].items():
        assert saved["systems"][name]["means"]["RR"] == pytest.approx(means["RR"])
        est = next(e for e in shown["comparison"]["estimates"] if e["system"] == name)
        assert est["mean"] == pytest.approx(means["RR"])
