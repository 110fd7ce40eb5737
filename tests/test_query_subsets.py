"""Query subsets (issue 37, item 5): ``--queries FILE|IDS``, ``--first-queries N``,
``--sample-queries N --query-seed S`` wherever a dataset is taken, recorded in ``results.json``
and applied again by ``--append``, ``report`` and ``compare``; the averages are over the subset
(checked against pytrec_eval on the same restricted judgments and run)."""

from __future__ import annotations

import json
import random

import pytest
import pytrec_eval
from click.testing import CliRunner

from nuggetbench import Experiment, report
from nuggetbench._outfolder.results import read_results_file
from nuggetbench.cli import cli, main
from nuggetbench.cli._common import OPTION_EXAMPLES
from nuggetbench.data.subset import QuerySubset, query_subset
from nuggetbench.datasets import family_of, load_dataset, load_target
from nuggetbench.errors import InputError, UnknownNameError
from nuggetbench.evaluation import compare_run_files, evaluate_dataset
from nuggetbench.judging.files import load_judging_inputs

N = 12


@pytest.fixture()
def folder(tmp_path):
    """A BEIR-layout folder of 12 queries (q0..q11, listed out of id order), each judging 2 of
    30 documents."""
    folder = tmp_path / "ds"
    (folder / "qrels").mkdir(parents=True)
    rng = random.Random(3)
    words = ["owl", "river", "stone", "night", "honey", "bee", "tree", "wing", "song", "light"]
    docs = [" ".join(rng.choice(words) for _ in range(8)) for _ in range(30)]
    (folder / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": f"d{i}", "text": t}) + "\n" for i, t in enumerate(docs))
    )
    order = [f"q{i}" for i in (5, 0, 11, 3, 8, 1, 10, 2, 7, 4, 9, 6)]
    (folder / "queries.jsonl").write_text(
        "".join(
            json.dumps({"_id": q, "text": " ".join(rng.sample(words, 3))}) + "\n" for q in order
        )
    )
    lines = ["query-id\tcorpus-id\tscore"]
    lines += [f"{q}\td{rng.randrange(30)}\t{1 + i % 2}" for q in order for i in range(2)]
    (folder / "qrels" / "test.tsv").write_text("\n".join(lines) + "\n")
    return folder


def test_first_sample_and_ids_choose_in_the_dataset_order():
    available = [f"q{i}" for i in (5, 0, 11, 3, 8, 1, 10, 2, 7, 4, 9, 6)]
    assert QuerySubset(first=3).select(available) == ["q5", "q0", "q11"]  # head(3), as listed
    assert QuerySubset(("q3", "q5")).select(available) == ["q5", "q3"]  # the dataset's order
    assert QuerySubset(("q3", "q5", "q1"), first=2).select(available) == ["q5", "q3"]
    five = QuerySubset(sample=5, seed=7).select(available)
    assert len(five) == 5 and five == [q for q in available if q in five]
    shuffled = random.Random(1).sample(available, len(available))
    assert set(QuerySubset(sample=5, seed=7).select(shuffled)) == set(five)  # order-free
    assert set(five) <= set(QuerySubset(sample=6, seed=7).select(available))  # nested
    seeds = {tuple(QuerySubset(sample=5, seed=s).select(available)) for s in range(6)}
    assert len(seeds) > 1  # the seed matters


def test_bad_subsets_say_what_and_which(tmp_path):
    available = ["1", "3", "5"]
    with pytest.raises(
        InputError, match=r"2 of the 3 query ids given are not queries of X: 'x', 'y'"
    ):
        QuerySubset(("x", "1", "y")).select(available, what="X")
    many = QuerySubset(tuple(f"z{i}" for i in range(10)))
    with pytest.raises(InputError, match="'z7' and 2 more"):
        many.select(available)
    with pytest.raises(InputError, match=r"the first 4 queries asked for, but X has 3 queries"):
        QuerySubset(first=4).select(available, what="X")
    with pytest.raises(InputError, match="exclude each other"):
        QuerySubset(first=1, sample=1)
    with pytest.raises(InputError, match="no file of that name exists either"):
        query_subset("ids.txt").select(available)
    ids = tmp_path / "ids.txt"
    ids.write_text("\ufeff# judged by hand\n3\n\n  5 \n3\n", encoding="utf-8")
    subset = query_subset(ids, first=1)
    assert subset.ids == ("3", "5") and subset.file == str(ids)
    assert subset.select(available) == ["3"]
    assert subset.describe(1, 3) == f"the first 1 of 3 queries, of the 2 listed in {ids}"
    assert query_subset(None) is None and query_subset("1, 3").ids == ("1", "3")


def test_a_dataset_keeps_the_subset_and_records_it(folder):
    full = load_dataset(folder)
    ds = load_dataset(folder, queries=QuerySubset(sample=4, seed=2))
    assert len(ds.queries) == 4 and set(ds.qrels.query_ids) == set(ds.queries)
    assert ds.query_subset["ids"] == list(ds.queries) and ds.query_subset["of"] == N
    assert ds.query_subset["how"] == f"a sample of 4 of {N} queries (seed 2)"
    assert ds.fingerprint() != full.fingerprint() and len(ds.corpus) == len(full.corpus)
    again = full.subset(QuerySubset.from_record(ds.query_subset))
    assert again.fingerprint() == ds.fingerprint()  # what report/compare reload
    inner = ds.subset(QuerySubset(first=2))
    assert inner.query_subset["of"] == N and list(inner.queries) == list(ds.queries)[:2]
    target = load_target(folder / "qrels" / "test.tsv", queries="q1,q2")
    assert target.dataset is None and sorted(target.qrels.query_ids) == ["q1", "q2"]
    assert target.notes == [f"queries: 2 of {N} queries, given by id"]


def _run_file(folder, path):
    """A run of every query of *folder*: 10 documents each, scored at random."""
    rng = random.Random(5)
    queries = [json.loads(line)["_id"] for line in (folder / "queries.jsonl").open()]
    lines = [
        f"{q} Q0 d{d} {r + 1} {10 - r + rng.random():.4f} sys"
        for q in queries
        for r, d in enumerate(rng.sample(range(30), 10))
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_evaluate_averages_over_the_subset_as_pytrec_eval(folder, tmp_path):
    run = _run_file(folder, tmp_path / "run.trec")
    ev = evaluate_dataset(folder, run, ["nDCG@10", "AP"], queries=QuerySubset(sample=5, seed=1))
    chosen = ev.target.query_subset["ids"]
    assert list(ev.results.query_ids) == sorted(chosen) or set(ev.results.query_ids) == set(chosen)
    qrels = {}
    for line in (folder / "qrels" / "test.tsv").read_text().splitlines()[1:]:
        q, d, g = line.split("\t")
        if q in chosen:
            qrels.setdefault(q, {})[d] = int(g)
    runs = {}
    for line in run.read_text().splitlines():
        q, _, d, _, s, _ = line.split()
        if q in chosen:
            runs.setdefault(q, {})[d] = float(s)
    ref = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "map"}).evaluate(runs)
    for ours, theirs in (("nDCG@10", "ndcg_cut_10"), ("AP", "map")):
        expected = sum(v[theirs] for v in ref.values()) / len(chosen)
        assert ev.results.means[ours] == pytest.approx(expected, abs=1e-12)
    assert ev.notes == [f"queries: a sample of 5 of {N} queries (seed 1)"]
    report_ = compare_run_files(folder, [run, run], ["AP"], queries=["q1", "q2"], n_resamples=50)
    assert report_.n_queries == 2 and report_.notes[0] == f"queries: 2 of {N} queries, given by id"


def test_run_records_the_subset_and_append_report_compare_apply_it(folder, tmp_path):
    out = tmp_path / "out"
    runner = CliRunner()
    ran = runner.invoke(
        cli, ["run", str(folder), "-r", "bm25", "-m", "RR", "-o", str(out), "--first-queries", "3"]
    )
    assert ran.exit_code == 0, ran.output
    saved = json.loads((out / "results.json").read_text())
    first3 = list(load_dataset(folder).queries)[:3]  # the dataset's order (BEIR folders: by id)
    assert saved["provenance"]["queries"]["ids"] == first3
    assert saved["provenance"]["queries"]["how"] == f"the first 3 of {N} queries"
    assert sorted(saved["systems"]["bm25"]["query_ids"]) == sorted(first3)
    assert "queries: the first 3 of 12 queries" in ran.output
    refused = runner.invoke(cli, ["run", str(folder), "-r", "bm25:k1=0.5", "-m", "RR", "-o", str(out), "--append"])  # fmt: skip
    assert "was run on the first 3 of 12 queries; this run is on every query" in str(
        refused.exception
    )
    appended = runner.invoke(cli, ["run", str(folder), "-r", "bm25:k1=0.5", "-m", "RR", "-o", str(out), "--append", "--first-queries", "3"])  # fmt: skip
    assert appended.exit_code == 0, appended.output
    exp = Experiment.load(out)
    assert list(exp.systems) == ["bm25", "bm25:k1=0.5"] and exp.n_queries == 3
    data = report.report_data(out)  # reloads the dataset with the recorded subset
    assert sorted(data.query_ids) == sorted(first3) and not data.missing
    other = tmp_path / "other"
    assert runner.invoke(cli, ["run", str(folder), "-r", "bm25:b=0.3", "-m", "RR", "-o", str(other)]).exit_code == 0  # fmt: skip
    mixed = runner.invoke(cli, ["compare", str(out), str(other)])
    assert "do not share their queries" in str(mixed.exception)
    sub = runner.invoke(cli, ["compare", str(out), str(out.parent / "out"), "--format", "json"])
    assert "given twice" in str(sub.exception)


def test_cli_unknown_ids_are_one_error_line(folder, tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        main(["run", str(folder), "-r", "bm25", "-o", str(tmp_path / "o"), "--queries", "q1,nope"])
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    first = ", ".join(repr(q) for q in list(load_dataset(folder).queries)[:3])
    assert err == [
        f"error: 1 of the 2 query ids given are not queries of {folder} (split test): 'nope'; "
        f"its query ids look like {first}; give ids of its queries"
    ]
    assert not (tmp_path / "o").exists()  # refused before any work
    ev = CliRunner().invoke(cli, ["evaluate", str(folder), str(_run_file(folder, tmp_path / "r")), "--first-queries", "2", "--sample-queries", "2"])  # fmt: skip
    assert "exclude each other" in ev.output


def test_judging_inputs_are_restricted_to_the_subset(folder, tmp_path):
    run = _run_file(folder, tmp_path / "run.trec")
    ds, runs = load_judging_inputs(folder, [run], queries=["q3", "q4"])
    assert sorted(ds.queries) == ["q3", "q4"] and sorted(runs["run"].query_ids) == ["q3", "q4"]
    assert ds.query_subset["ids"] == ["q3", "q4"]


def test_the_dataset_option_examples_are_valid_for_the_datasets_they_name():
    """Every -O help text showed ``-O max_docs=100000``, which BEIR datasets refuse; each
    example now names its dataset and is one its family takes."""
    help_text = " ".join(CliRunner().invoke(cli, ["run", "--help"]).output.split())
    for dataset, option in OPTION_EXAMPLES:
        key, _, value = option.partition("=")
        family_of(dataset).check_options(dataset, {key: value})  # raises when refused
        assert f"-O {option} ({dataset})" in help_text
    with pytest.raises(UnknownNameError, match="max_docs"):
        family_of("beir/scifact").check_options("beir/scifact", {"max_docs": "100000"})


def test_comparisons_saved_on_a_subset_are_read_and_reported_again(folder, tmp_path):
    """``compare ... --first-queries/--queries -o``: the saved comparison records the subset
    and each run file's own fingerprint, so ``report`` and ``Experiment.load`` read it back."""
    runner = CliRunner()
    for name, spec in (("A", "bm25"), ("B", "bm25:k1=0.5")):
        done = runner.invoke(cli, ["run", str(folder), "-r", spec, "-m", "RR", "-o", str(tmp_path / name)])  # fmt: skip
        assert done.exit_code == 0, done.output
    ab = tmp_path / "AB"
    args = ["compare", str(tmp_path / "A"), str(tmp_path / "B"), "--first-queries", "4"]
    assert runner.invoke(cli, [*args, "-o", str(ab), "--resamples", "50"]).exit_code == 0
    first4 = list(load_dataset(folder).queries)[:4]
    data = report.report_data(ab)  # the runs read whole, the dataset with the subset
    assert sorted(data.query_ids) == sorted(first4) and data.comparison["n_queries"] == 4
    assert all(s.run is not None for s in Experiment.load(ab).systems.values())
    files = [tmp_path / n / "runs" / f"{s}.trec" for n, s in (("A", "bm25"), ("B", "bm25_k1=0.5"))]
    saved = tmp_path / "F"
    args = ["compare", str(folder), *map(str, files), "--queries", "q1,q2", "-o", str(saved)]
    assert runner.invoke(cli, [*args, "--resamples", "50"]).exit_code == 0
    data = report.report_data(saved)
    assert sorted(data.query_ids) == ["q1", "q2"]
    assert json.loads((saved / "results.json").read_text())["provenance"]["queries"]["ids"] == [
        q for q in load_dataset(folder).queries if q in ("q1", "q2")
    ]


def test_a_subset_counts_what_runs_lack_over_itself_and_its_saved_comparisons_read_back(
    folder, tmp_path
):
    """A subset restricts the judgments, so a run's missing queries are counted over the subset
    (not over the whole dataset); ``--average-over common`` on a subset, and ``compare FOLDERS
    -o`` of subset folders, write folders that the results.json reader, the stored-comparison
    check (``report_data``) and ``Experiment.load`` accept, with each system's depth and no
    NaN (one query: the intervals are null)."""
    runner = CliRunner()
    order = list(load_dataset(folder).queries)
    lacks = (order[1], order[9], order[10])  # one of the first 4, two outside them
    a = _run_file(folder, tmp_path / "a.trec")
    a.write_text(
        "".join(ln + "\n" for ln in a.read_text().splitlines() if ln.split()[0] not in lacks)
    )
    b = _run_file(folder, tmp_path / "b.trec")
    args = ["compare", str(folder), str(a), str(b), "-m", "RR", "--first-queries", "4"]
    shown = runner.invoke(cli, [*args, "--format", "json", "--resamples", "50"])
    assert shown.exit_code == 0, shown.output
    got = json.loads(shown.stdout[shown.stdout.index("{") :])
    assert got["n_queries"] == 4 and got["missing"] == {"a": 1, "b": 0}
    for over, kept in (("qrels", 4), ("common", 3)):
        out = tmp_path / f"files-{over}"
        done = runner.invoke(cli, [*args, "--average-over", over, "-o", str(out), "--resamples", "50"])  # fmt: skip
        assert done.exit_code == 0, done.output
        saved, _ = read_results_file(out)
        assert saved["systems"]["a"]["missing_queries"] == [order[1]]
        assert saved["comparison"]["n_queries"] == kept
        assert report.report_data(out).comparison["n_queries"] == kept  # check_stored passes
        assert Experiment.load(out).n_queries == 4
    for name, spec in (("R1", "bm25"), ("R2", "bm25:k1=0.5")):
        ran = runner.invoke(cli, ["run", str(folder), "-r", spec, "-m", "RR", "-m", "R@100", "--first-queries", "6", "--average-over", "common", "-o", str(tmp_path / name)])  # fmt: skip
        assert ran.exit_code == 0, ran.output
        assert report.report_data(tmp_path / name).comparison is None  # one system: read back
    for extra, n in ((["--average-over", "common"], 6), (["--queries", order[0]], 1)):
        out = tmp_path / f"folders-{n}"
        done = runner.invoke(cli, ["compare", str(tmp_path / "R1"), str(tmp_path / "R2"), "-o", str(out), "--resamples", "50", *extra])  # fmt: skip
        assert done.exit_code == 0, done.output
        assert "NaN" not in (out / "results.json").read_text()
        saved, _ = read_results_file(out)
        assert saved["provenance"]["queries"]["of"] == N
        assert all(isinstance(v["depth"], int) for v in saved["systems"].values())
        assert report.report_data(out).comparison["n_queries"] == n
        exp = Experiment.load(out)
        assert exp.n_queries == n and all(s.run is not None for s in exp.systems.values())
