"""Edited results are refused, never shown (issue 35, item 7 and its "misleading" cases): a stored
comparison is checked against the per-query values in the same file; every value a check would
reject is one line naming the file and the field; ``--baseline`` positions start at 1; a
measure of fewer than two queries is shown with its intervals and tests unavailable rather than
refusing the folder; two different systems never share a short label."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import numpy as np
import pytest

from nuggetbench import Experiment, report
from nuggetbench.cli import main
from nuggetbench.compare import check_stored, compare
from nuggetbench.compare.missing import MISSING_MARK
from nuggetbench.errors import InputError
from nuggetbench.experiment import run_experiment
from nuggetbench.spec import short_label, short_labels

SYSTEMS = ["bm25", "bm25:k1=0.5", "bm25:b=0.1"]


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("home")


@pytest.fixture()
def dataset(tmp_path, home, monkeypatch) -> Path:
    """A tiny BEIR folder: 8 documents, 4 queries (the systems differ on some)."""
    monkeypatch.setenv("NUGGETBENCH_HOME", str(home))
    folder = tmp_path / "ds"
    (folder / "qrels").mkdir(parents=True)
    docs = [f"word{i} common thing{i % 3} extra{i % 2}" for i in range(8)]
    (folder / "corpus.jsonl").write_text(
        "\n".join(json.dumps({"_id": f"d{i}", "title": "", "text": t}) for i, t in enumerate(docs))
    )
    queries = {"q1": "word1 thing1", "q2": "common extra0", "q3": "thing2 word5", "q4": "word7"}
    (folder / "queries.jsonl").write_text(
        "\n".join(json.dumps({"_id": q, "text": t}) for q, t in queries.items())
    )
    (folder / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td4\t1\nq2\td6\t2\nq3\td5\t1\nq4\td7\t1\nq4\td3\t1\n"
    )
    return folder


@pytest.fixture()
def saved(dataset, tmp_path) -> Path:
    out = tmp_path / "out"
    run_experiment(str(dataset), SYSTEMS, outdir=out, measures=["RR", "nDCG@10", "P@1"])
    return out


def _cli(*args) -> tuple[int, str]:
    """The console script's behaviour: ``(exit status, stderr + stdout)``; a traceback raises."""
    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main([*args, "--no-progress"])
        except SystemExit as exc:
            code = int(exc.code or 0)
    return code, err.getvalue() + out.getvalue()


def _edit(out: Path, change) -> None:
    data = json.loads((out / "results.json").read_text())
    change(data)
    (out / "results.json").write_text(json.dumps(data))


def _one_line(out: Path, *fields: str) -> None:
    """``report``, ``report --plots``, ``Experiment.load`` / ``compare`` of the folder: each
    refuses *out* in one ``error:`` line naming its results.json and each of *fields*."""
    for args in (["report", str(out)], ["report", str(out), "--plots", str(out / "figs")]):
        code, text = _cli(*args)
        errors = [line for line in text.splitlines() if line.startswith("error:")]
        assert code == 2 and len(errors) == 1, text
        assert str(out / "results.json") in errors[0]
        assert all(f in errors[0] for f in fields), errors[0]
    assert not (out / "figs").exists()


def test_an_edited_comparison_is_refused_not_shown_as_significant(saved):
    """Issue 35: an edited ``comparison`` block was shown as ``+0.9627 †`` though the
    per-query values in the same file are those of the untouched run."""

    def significant(data):
        d = data["comparison"]["differences"][0]
        d.update(diff=0.9627, ci_low=0.9, ci_high=1.0, p_value=1e-4, p_adjusted=1e-4)
        d.update(significant=True, wins=4, ties=0, losses=0)

    before = (saved / "results.json").read_text()
    _edit(saved, significant)
    _one_line(saved, "comparison.differences[0].diff: 0.9627, but the per-query values give")
    for field, value in (
        ("p_value", 0.5),
        ("significant", True),
        ("wins", 3),
        ("effect_size", 9.0),
        ("ci_low", 0.5),  # an interval that no longer holds the difference
    ):
        (saved / "results.json").write_text(before)
        _edit(saved, lambda d, f=field, v=value: d["comparison"]["differences"][1].update({f: v}))
        _one_line(saved, f"comparison.differences[1].{field}")
    (saved / "results.json").write_text(before)
    _edit(saved, lambda d: d["comparison"]["estimates"][2].update(mean=0.123))
    _one_line(saved, "comparison.estimates[2].mean: 0.123")
    (saved / "results.json").write_text(before)
    assert _cli("report", str(saved), "--plots", str(saved / "figs"))[0] == 0  # untouched: fine


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda d: d["comparison"].update(alpha="0.05"), "comparison.alpha: str"),
        (lambda d: d["comparison"].update(n_resamples=10**12), "comparison.n_resamples: 10"),
        (lambda d: d["comparison"].update(seed=1.5), "comparison.seed: float"),
        (lambda d: d["comparison"].update(baseline="nope"), "comparison.baseline: 'nope'"),
        (lambda d: d["comparison"].update(estimates="x"), "comparison.estimates: str"),
        (lambda d: d["comparison"]["estimates"].pop(), "comparison.estimates: no row"),
        (lambda d: d["comparison"]["differences"][0].update(ci_low=None), "ci_low: NoneType"),
        (lambda d: d["comparison"]["differences"][0].update(diff="x"), ".diff: str"),
        (lambda d: d.update(comparison=[1]), "'comparison': list"),
        (lambda d: d["measures"].append("P@5"), "'measures'[3]: 'P@5' has no values"),
        (
            lambda d: d["systems"]["bm25"]["per_query"].update(RR=[1e308] * 4),
            "per_query['RR']: values too large",
        ),
        (lambda d: d["systems"]["bm25"]["means"].update(RR=1e308), "means['RR']: 1e+308"),
        (lambda d: d["systems"]["bm25"]["means"].update(RR=float("nan")), "means['RR']: nan"),
        (lambda d: d["systems"]["bm25"]["per_query"]["RR"].__setitem__(0, 1e999), "RR'][0]: inf"),
        (lambda d: d["systems"]["bm25"].update(depth="10"), "systems['bm25'].depth: str"),
        (
            lambda d: d["systems"]["bm25"].update(missing_queries=[7]),
            "systems['bm25'].missing_queries[0]: int",
        ),
        (
            lambda d: d["systems"]["bm25"]["provenance"].update(run_depth=1e999),
            "systems['bm25'].provenance.run_depth: float",
        ),
    ],
)
def test_any_value_a_check_would_reject_is_one_line_naming_the_field(saved, change, field):
    """Issue 35: ``1e308`` per-query values gave OverflowError, an extra measure name a
    KeyError, and ``report --plots`` of an edited comparison a traceback."""
    _edit(saved, change)
    _one_line(saved, field)


def test_readers_of_the_folder_refuse_edited_values_too(saved, dataset):
    other = saved.parent / "other"
    run_experiment(str(dataset), ["bm25:k1=2"], outdir=other, measures=["RR", "nDCG@10", "P@1"])
    _edit(saved, lambda d: d["measures"].append("P@5"))
    with pytest.raises(InputError, match=r"'measures'\[3\]: 'P@5' has no values"):
        Experiment.load(saved)
    code, text = _cli("compare", str(saved), str(other))
    assert code == 2 and f"error: {saved / 'results.json'}: 'measures'[3]: 'P@5'" in text


def _honest_values(rng, n, systems=3, nan_queries=()):
    qids = [f"q{i}" for i in range(n)]
    values = {}
    for s in range(systems):
        per = {
            "RR": rng.random(n).round(3),
            "num_rel": rng.integers(0, 9, n).astype(float),
            "AP": rng.random(n),
        }
        for q in nan_queries:
            per["AP"][q] = np.nan
        values[f"s{s}"] = per
    return qids, values


@pytest.mark.parametrize("test", ["t", "wilcoxon", "randomization"])
@pytest.mark.parametrize("n", [1, 2, 9, 40])
def test_an_honest_comparison_always_passes_the_check(test, n):
    """Every comparison ``compare`` makes (any test, totals, NaN queries, a measure of one
    query) passes :func:`check_stored` as JSON would give it back; a changed value does not."""
    rng = np.random.default_rng(n)
    qids, values = _honest_values(rng, n, nan_queries=range(n // 3))
    stored = json.loads(
        json.dumps(compare(values, query_ids=qids, test=test, n_resamples=500).to_dict())
    )
    per_query = {s: {m: v.tolist() for m, v in pq.items()} for s, pq in values.items()}
    check_stored(stored, per_query, qids)
    stored["differences"][-1]["losses"] += 1
    with pytest.raises(InputError, match=r"comparison.differences\[\d+\].losses"):
        check_stored(stored, per_query, qids)


@pytest.mark.parametrize("average_over", ["qrels", "common"])
def test_a_comparison_over_what_runs_lack_passes_the_check_and_an_edit_does_not(
    average_over, tmp_path
):
    """``compare -o`` of a run lacking 25 of 30 judged queries (issue 38's fair comparisons):
    under ``common`` the stored comparison averages 5 queries while the per-query values hold
    30, and under ``qrels`` its difference rests on the missing queries (double dagger). The
    check recomputes both as stored (``average_over``, each system's ``missing_queries``), so
    ``report`` shows them; a flipped ``rests_on_missing`` or ``average_over`` is refused, and a
    file written before those fields existed is still read."""
    rng = np.random.default_rng(9)
    qrels, lines, qids = [], {}, [f"{i:03d}" for i in range(30)]
    for q in qids:
        qrels += [f"{q} 0 d{j} {rng.integers(1, 3)}\n" for j in rng.choice(50, 4, replace=False)]
        docs = rng.choice(50, 20, replace=False)
        lines[q] = [f"{q} Q0 d{j} {r + 1} {20 - r} t\n" for r, j in enumerate(docs)]
    (tmp_path / "qrels.txt").write_text("".join(qrels))
    (tmp_path / "b.trec").write_text("".join(x for q in qids for x in lines[q]))
    (tmp_path / "a.trec").write_text("".join(x for q in qids[:5] for x in lines[q]))
    out = tmp_path / "c"
    args = [str(tmp_path / n) for n in ("qrels.txt", "a.trec", "b.trec")]
    code, text = _cli(
        "compare", *args, "-m", "nDCG@10", "-o", str(out), "--average-over", average_over
    )
    assert code == 0, text
    stored = json.loads((out / "results.json").read_text())["comparison"]
    (diff,) = stored["differences"]
    assert stored["n_queries"] == (5 if average_over == "common" else 30)
    assert diff["rests_on_missing"] is (average_over == "qrels") and diff["significant"] is (
        average_over == "qrels"
    )
    before = (out / "results.json").read_text()
    assert _cli("report", str(out))[0] == 0
    page = (out / "report.html").read_text()
    assert (MISSING_MARK in page) is (average_over == "qrels")
    flip = "common" if average_over == "qrels" else "qrels"
    _edit(out, lambda d: d["comparison"].update(average_over=flip))
    _one_line(out, "comparison.")
    (out / "results.json").write_text(before)
    _edit(out, lambda d: d["comparison"]["differences"][0].update(rests_on_missing=False))
    if average_over == "qrels":
        _one_line(out, "comparison.differences[0].rests_on_missing: False")
    (out / "results.json").write_text(before)
    _edit(out, lambda d: d["comparison"].update(average_over="some"))
    _one_line(out, "comparison.average_over: 'some'")
    (out / "results.json").write_text(before)

    def older(data):  # a comparison saved before average_over, missing and the marks existed
        for key in ("average_over", "averaging", "missing", "left_out", "depths", "beyond_depth"):
            data["comparison"].pop(key)
        for row in data["comparison"]["differences"]:
            row.pop("missing")
            row.pop("rests_on_missing")

    if average_over == "qrels":
        _edit(out, older)
        assert _cli("report", str(out))[0] == 0


def test_a_measure_of_one_query_is_shown_with_its_test_unavailable(dataset, tmp_path):
    """Issue 35: ``report`` refused a whole valid folder because one measure had fewer than
    two queries (here the birco profile keeps one judged query: every measure has one)."""
    (dataset / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td4\t0\nq3\td5\t0\n"
    )
    out = tmp_path / "one"
    code, text = _cli(
        "run", str(dataset), "-r", "bm25", "-r", "bm25:k1=0.5", "-m", "R@10",
        "--profile", "birco", "-o", str(out),
    )  # fmt: skip
    assert code == 0, text
    assert "R@10: 1 query has a value for every system" in text and "n/a" in text
    code, text = _cli("report", str(out), "--plots", str(tmp_path / "figs"))
    assert code == 0, text
    html = (out / "report.html").read_text()
    assert "n/a" in html
    assert (tmp_path / "figs" / "means.png").is_file()
    data = report.report_data(out)
    diff = data.comparison["differences"][0]
    assert diff["p_value"] is None and diff["significant"] is False and diff["diff"] == 0.0


def test_baseline_positions_start_at_one(saved):
    """Issue 35: ``compare --baseline 0`` silently used the last system (Python's negative
    index). Positions are 1..n; 0 and n+1 are refused naming the range."""
    runs = sorted(str(p) for p in (saved / "runs").glob("*.trec"))
    qrels = str(saved.parent / "ds" / "qrels" / "test.tsv")
    names = [Path(r).stem for r in runs]
    for position, expected in (("1", names[0]), ("3", names[2])):
        code, text = _cli("compare", qrels, *runs, "--baseline", position, "--format", "json")
        assert code == 0 and json.loads(text)["baseline"] == expected, text
    for position in ("0", "4", "-1"):
        code, text = _cli("compare", qrels, *runs, "--baseline", position)
        assert code == 2, text
        if position != "-1":
            assert "positions start at 1 and there are 3 systems" in text
        else:
            assert "not one of the systems" in text
    other = saved.parent / "second"
    run_experiment(str(saved.parent / "ds"), ["bm25:k1=2"], outdir=other, measures=["RR"])
    code, text = _cli("compare", str(saved), str(other), "-m", "RR", "--baseline", "0")
    assert code == 2 and "positions start at 1 and there are 4 systems" in text
    code, text = _cli("compare", str(saved), str(other), "-m", "RR", "--baseline", "4")
    assert code == 0 and "Comparison with second/bm25:k1=2" in text


def test_two_systems_never_share_a_short_label(dataset, tmp_path):
    """Issue 35: two different systems got the same cut label in run/compare tables and in the
    paper figures."""
    a = "experiment_alpha_variant_1_of_the_final_run"
    b = "experiment_alpha_variant_2_of_the_final_run"
    assert short_label(a) == short_label(b)  # what each label alone is cut to
    labels = short_labels([a, b, "bm25", a])
    assert labels[0] != labels[1] and labels[0] == labels[3] and labels[2] == "bm25"
    assert all(len(x) <= 24 for x in labels)
    paths = ["dense:/models/x/e5-small-v2", "dense:/models/y/e5-small-v2"]
    assert len(set(short_labels(paths, 22))) == 2
    out = tmp_path / "labels"
    code, text = _cli(
        "run", str(dataset), "-r", f"bm25:name={a}", "-r", f"bm25:k1=0.5,name={b}",
        "-m", "RR", "-o", str(out),
    )  # fmt: skip
    assert code == 0, text
    shown = short_labels([a, b])
    assert shown[0] in text and shown[1] in text
    data = report.report_data(out)
    assert data.payload["labels"] == short_labels([a, b], 22)
    assert len(set(data.payload["labels"])) == 2
    pytest.importorskip("matplotlib")
    fig = report.means_figure(data, "RR")
    ticks = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert sorted(ticks) == sorted(data.payload["labels"])
