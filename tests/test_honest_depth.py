"""Honest depth (issue 38, item 2): a measure whose cutoff exceeds a system's depth is marked in
every output (table, JSON, report) and warned once; results.json records each system's depth.
(The pipeline's depth, ``A >> reranker``, is tested in test_retrieval_rerank.py and
test_llm_rerank.py.)"""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from nuggetbench.cli import cli
from nuggetbench.measures.depth import DEPTH_MARK, beyond_depth, measure_cutoff, shallow


def test_cutoffs_of_every_spelling():
    assert [measure_cutoff(m) for m in ("R@100", "recall_1000", "P.5", "ndcg_cut_10")] == [
        100,
        1000,
        5,
        10,
    ]
    assert measure_cutoff("AP") is None and measure_cutoff("not a measure") is None
    assert beyond_depth(["nDCG@10", "R@100", "AP", "P_1000"], 10) == ["R@100", "P_1000"]
    assert beyond_depth(["R@100"], None) == []  # unknown depth: nothing claimed


@pytest.fixture
def folder(tmp_path):
    """A BEIR folder of 60 documents sharing a word, so BM25 fills any depth up to 60."""
    root = tmp_path / "tiny"
    (root / "qrels").mkdir(parents=True)
    docs = {f"d{i}": f"shared word{i} word{i % 7}" for i in range(60)}
    (root / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": d, "title": "", "text": t}) + "\n" for d, t in docs.items())
    )
    (root / "queries.jsonl").write_text(
        "".join(json.dumps({"_id": f"q{i}", "text": f"shared word{i}"}) + "\n" for i in range(5))
    )
    (root / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"q{i}\td{i + 7}\t1\n" for i in range(5))
    )
    return root


def test_run_marks_and_warns_once_and_records_depth(folder, tmp_path):
    """``run -k 10`` with R@50: the table marks R@50, the JSON names it, the warning is printed
    once, results.json records depth 10 against "k": 10, and the HTML report marks the cell."""
    pytest.importorskip("jinja2")
    base = ["run", str(folder), "-r", "bm25", "-m", "nDCG@10", "-m", "R@50", "-k", "10"]
    out = CliRunner(env={"COLUMNS": "200"}).invoke(cli, [*base, "-o", str(tmp_path / "o")])
    assert out.exit_code == 0, out.output
    assert f"R@50{DEPTH_MARK}" in out.stdout and f"nDCG@10{DEPTH_MARK}" not in out.stdout
    assert out.stderr.count("cutoff beyond the depth") == 1
    saved = json.loads((tmp_path / "o" / "results.json").read_text())
    assert saved["k"] == 10 and saved["systems"]["bm25"]["depth"] == 10
    shown = json.loads(
        CliRunner().invoke(cli, [*base, "--format", "json", "-o", str(tmp_path / "j")]).stdout
    )
    assert shown["beyond_depth"] == {"bm25": ["R@50"]} and shown["depths"] == {"bm25": 10}
    deep = CliRunner().invoke(
        cli, [*base[:-2], "-k", "60", "--format", "json", "-o", str(tmp_path / "d")]
    )
    assert "beyond_depth" not in json.loads(deep.stdout) and "cutoff beyond" not in deep.stderr
    from nuggetbench import report

    page = report.html(tmp_path / "o").read_text()
    assert f"{DEPTH_MARK}" in page and "cutoff beyond the depth of bm25" in page


def test_compare_marks_the_shallow_run_only(folder, tmp_path):
    """Two run files, 10 and 60 deep: R@50 is marked for the shallow one in every format, and
    the legend says the depths differ."""
    for k in (10, 60):
        out = CliRunner().invoke(
            cli,
            [
                "run",
                str(folder),
                "-r",
                "bm25",
                "-m",
                "AP",
                "-k",
                str(k),
                "-o",
                str(tmp_path / f"k{k}"),
            ],
        )
        assert out.exit_code == 0, out.output
    qrels = folder / "qrels" / "test.tsv"
    runs = [str(tmp_path / f"k{k}" / "runs" / "bm25.trec") for k in (10, 60)]
    args = ["compare", str(qrels), *runs, "-m", "R@50", "--resamples", "100"]
    shown = json.loads(CliRunner().invoke(cli, [*args, "--format", "json"]).stdout)
    names = shown["systems"]
    assert shown["beyond_depth"] == {names[0]: ["R@50"]}
    assert shown["depths"] == {names[0]: 10, names[1]: 60}
    rows = [
        json.loads(x)
        for x in CliRunner().invoke(cli, [*args, "--format", "jsonl"]).stdout.splitlines()
    ]
    assert [r["beyond_depth"] for r in rows] == [True, False]
    text = CliRunner(env={"COLUMNS": "200"}).invoke(cli, args).stdout
    assert DEPTH_MARK in text and "depths differ" in " ".join(text.split())
    md = CliRunner().invoke(cli, [*args, "--format", "markdown"]).stdout
    assert md.count(DEPTH_MARK) >= 2  # the shallow run's cell and the legend


def test_evaluate_marks_the_column(folder, tmp_path):
    out = CliRunner().invoke(
        cli, ["run", str(folder), "-r", "bm25", "-m", "AP", "-k", "10", "-o", str(tmp_path / "o")]
    )
    assert out.exit_code == 0, out.output
    args = [
        "evaluate",
        str(folder / "qrels" / "test.tsv"),
        str(tmp_path / "o" / "runs" / "bm25.trec"),
    ]
    args += ["-m", "R@50", "-m", "P@5"]
    table = CliRunner(env={"COLUMNS": "200"}).invoke(cli, args)
    assert f"R@50{DEPTH_MARK}" in table.stdout and f"P@5{DEPTH_MARK}" not in table.stdout
    assert table.stderr.count("cutoff beyond the depth") == 1
    shown = json.loads(CliRunner().invoke(cli, [*args, "--format", "json"]).stdout)
    assert shown["beyond_depth"] == {"measures": ["R@50"], "run_depth": 10}


def test_a_system_ranking_whole_candidate_pools_is_not_cut(tmp_path):
    """BIRCO-like pools of 50: R@100 over a run that ranks each whole pool is the recall of the
    pool (no system can rank more): not marked, not warned; a run cut at -k 10 is."""
    import pickle

    rng = np.random.default_rng(0)
    data = {"query": {}, "corpus": {}, "qrel": {}}
    for q in range(3):
        data["query"][f"q{q}"] = f"question {q}"
        data["qrel"][f"q{q}"] = {}
        for j in range(50):
            cid = f"D{q}_{j}"
            data["corpus"][cid] = f"passage {j} question {q} words"
            data["qrel"][f"q{q}"][cid] = int(rng.integers(0, 3))
    folder = tmp_path / "data" / "birco" / "wtb"
    folder.mkdir(parents=True)
    (folder / "test_set.pickle").write_bytes(pickle.dumps(data, protocol=4))
    env = {"NUGGETBENCH_DATA": str(tmp_path / "data")}
    base = ["run", "birco/wtb", "-r", "bm25", "-m", "R@100", "--format", "json"]
    whole = CliRunner(env=env).invoke(cli, [*base, "-o", str(tmp_path / "w")])
    assert whole.exit_code == 0, whole.output
    assert "beyond_depth" not in json.loads(whole.stdout) and "cutoff beyond" not in whole.stderr
    cut = CliRunner(env=env).invoke(cli, [*base, "-k", "10", "-o", str(tmp_path / "c")])
    assert json.loads(cut.stdout)["beyond_depth"] == {"bm25": ["R@100"]}
    # the same rule when the folders are compared, and in what `compare -o` saves for the report
    w, c = tmp_path / "w", tmp_path / "c"
    folders = CliRunner(env=env).invoke(cli, ["compare", str(w), str(c), "--format", "json"])
    assert folders.exit_code == 0, folders.output
    assert json.loads(folders.stdout)["beyond_depth"] == {"c/bm25": ["R@100"]}
    runs = [str(w / "runs" / "bm25.trec"), str(c / "runs" / "bm25.trec")]
    saved = tmp_path / "saved"
    args = ["compare", "birco/wtb", *runs, "-m", "R@100", "-o", str(saved)]
    assert CliRunner(env=env).invoke(cli, args).exit_code == 0
    systems = json.loads((saved / "results.json").read_text())["systems"]
    assert [shallow(systems[n], ["R@100"]) for n in systems] == [[], ["R@100"]]
    assert [systems[n]["depth"] for n in systems] == [50, 10]
