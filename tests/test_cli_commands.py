"""End-to-end CLI checks on a tiny local BEIR folder (click's runner, no network)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from nuggetbench.cli import cli, main


@pytest.fixture()
def beir_folder(tmp_path):
    folder = tmp_path / "tiny"
    (folder / "qrels").mkdir(parents=True)
    docs = {
        "d1": ("Cats", "cats purr and sleep all day"),
        "d2": ("Dogs", "dogs bark at the mail carrier"),
        "d3": ("Birds", "birds sing in the morning"),
        "d4": ("Fish", "fish swim in the sea"),
    }
    with open(folder / "corpus.jsonl", "w") as fh:
        for did, (title, text) in docs.items():
            fh.write(json.dumps({"_id": did, "title": title, "text": text}) + "\n")
    with open(folder / "queries.jsonl", "w") as fh:
        fh.write(json.dumps({"_id": "q1", "text": "why do cats purr"}) + "\n")
        fh.write(json.dumps({"_id": "q2", "text": "birds singing"}) + "\n")
    (folder / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\r\nq1\td1\t1\r\nq2\td3\t2\r\n"
    )
    return folder


def test_run_json_output_is_one_object(beir_folder, tmp_path):
    out = tmp_path / "out"
    result = CliRunner().invoke(
        cli,
        [
            "run",
            str(beir_folder),
            "-r",
            "bm25",
            "-r",
            "bm25:k1=0.9,b=0.4",
            "-m",
            "nDCG@10",
            "-m",
            "RR",
            "-o",
            str(out),
            "--format",
            "json",
        ],
    )
    assert result.exit_code == 0, result.output
    obj = json.loads(result.stdout)
    # issue 18: json carries the comparison; issue 38: which queries, and the depths when a
    # cutoff (nDCG@10) exceeds what the systems ranked (1 document a query here)
    assert set(obj) == {"dataset", "results", "comparison", "averaged", "depths", "beyond_depth"}
    assert obj["depths"] == {"bm25": 1, "bm25:k1=0.9,b=0.4": 1}  # bm25 returns matches only
    assert obj["comparison"]["beyond_depth"] == {s: ["nDCG@10"] for s in obj["depths"]}
    assert obj["averaged"]["bm25"] == "averaged over 2 queries of the qrels"
    assert obj["comparison"]["baseline"] == "bm25" and len(obj["comparison"]["differences"]) == 2
    assert set(obj["results"]) == {"bm25", "bm25:k1=0.9,b=0.4"}
    assert obj["results"]["bm25"]["RR"] == pytest.approx(1.0)
    saved = json.loads((out / "results.json").read_text())
    assert saved["systems"]["bm25"]["means"]["RR"] == pytest.approx(1.0)
    assert saved["provenance"]["dataset_fingerprint"]
    runs = sorted(p.name for p in (out / "runs").iterdir())
    assert runs == ["bm25.trec", "bm25_k1=0.9,b=0.4.trec"]

    # the saved run scores the same through `evaluate`
    ev = CliRunner().invoke(
        cli,
        [
            "evaluate",
            str(beir_folder / "qrels" / "test.tsv"),
            str(out / "runs" / "bm25.trec"),
            "nDCG@10",
            "RR",
            "--format",
            "json",
        ],
    )
    assert ev.exit_code == 0, ev.output
    shown = json.loads(ev.stdout)
    assert shown.pop("averaged")["queries"] == 2  # which queries the means average
    assert shown.pop("beyond_depth")["measures"] == ["nDCG@10"]  # 3 documents: a shallow run
    assert shown == pytest.approx(obj["results"]["bm25"])


def test_evaluate_per_query_tsv_and_profiles(tmp_path):
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("1 0 a 1\n1 0 b 0\n2 0 c 1\n")
    run = tmp_path / "run.txt"
    run.write_text("1 Q0 a 1 2.0 t\n1 Q0 b 2 1.0 t\n9 Q0 z 1 1.0 t\n")
    r = CliRunner().invoke(
        cli, ["evaluate", str(qrels), str(run), "P@1", "--per-query", "--format", "tsv"]
    )
    assert r.exit_code == 0, r.output
    lines = [line.split("\t") for line in r.stdout.strip().splitlines()]
    assert ["P@1", "1", "1"] in [[a, b, c] for a, b, c in lines]
    assert ["P@1", "all", "0.5"] in lines  # -c: query 2 missing scores 0; tsv: full precision
    r2 = CliRunner().invoke(
        cli, ["evaluate", str(qrels), str(run), "P@1", "--profile", "trec_eval", "--format", "json"]
    )
    shown = json.loads(r2.stdout)
    assert shown.pop("averaged")["text"] == (
        "averaged over 1 query in both the run and the qrels; 1 missing from the run left out; "
        "1 run queries without judgments ignored"
    )
    assert shown == {"P@1": 1.0}


def test_bad_measure_and_bad_file_exit_cleanly(tmp_path, capsys):
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("1 0 a 1\n")
    run = tmp_path / "run.txt"
    run.write_text("1 Q0 a 1 2.0\n")
    with pytest.raises(SystemExit) as info:
        main(["evaluate", str(qrels), str(run), "nDGC@10"])
    assert info.value.code == 2
    assert "nDCG" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["evaluate", str(qrels), str(run), "nDCG@10"])
    err = capsys.readouterr().err
    assert "run.txt, line 1" in err


def test_datasets_and_measures_commands():
    r = CliRunner().invoke(cli, ["datasets", "list", "--format", "json"])
    assert r.exit_code == 0
    ids = json.loads(r.stdout)["datasets"]
    assert "beir/scifact" in ids and "beir/cqadupstack/android" in ids
    info = CliRunner().invoke(cli, ["datasets", "info", "beir/arguana"])
    assert info.exit_code == 0 and "self" in info.stdout.lower()
    m = CliRunner().invoke(cli, ["measures"])
    assert m.exit_code == 0 and "nDCG" in m.stdout and "trec_eval -c" in m.stdout


def test_offline_missing_dataset_names_the_folder(monkeypatch, tmp_path):
    r = CliRunner().invoke(cli, ["run", "beir/nfcorpus", "-r", "bm25"])
    assert r.exit_code != 0
    assert "beir/nfcorpus" in str(r.exception) or "nfcorpus" in r.output


@pytest.mark.realdata
def test_scifact_bm25_published_figures(shared_data, monkeypatch, tmp_path):
    monkeypatch.setenv("NUGGETBENCH_DATA", str(shared_data))
    r = CliRunner().invoke(
        cli,
        [
            "run",
            "beir/scifact",
            "-r",
            "bm25:k1=0.9,b=0.4",
            "-r",
            "bm25:k1=1.5,b=0.75",
            "-m",
            "nDCG@10",
            "-o",
            str(tmp_path / "o"),
            "--format",
            "json",
        ],
    )
    assert r.exit_code == 0, r.output
    res = json.loads(r.stdout)["results"]
    assert abs(res["bm25:k1=0.9,b=0.4"]["nDCG@10"] - 0.676) < 0.005
    assert abs(res["bm25:k1=1.5,b=0.75"]["nDCG@10"] - 0.686) < 0.005


def test_second_experiment_is_served_from_the_run_cache(beir_folder, monkeypatch):
    from nuggetbench.datasets import load_dataset
    from nuggetbench.experiment import run_experiment
    from nuggetbench.retrieval.bm25 import retriever as bm25

    ds = load_dataset(str(beir_folder))
    first = run_experiment(ds, ["bm25"], measures=["RR"])

    def boom(*args, **kwargs):
        raise AssertionError("indexed again")

    monkeypatch.setattr(bm25.BM25, "index", boom)
    second = run_experiment(ds, ["bm25"], measures=["RR"])
    assert second.systems["bm25"].run == first.systems["bm25"].run
    with pytest.raises(AssertionError, match="indexed again"):
        run_experiment(ds, ["bm25"], measures=["RR"], cache_runs=False)


def test_dataset_options_are_passed_and_checked(beir_folder):
    ok = CliRunner().invoke(
        cli,
        ["run", str(beir_folder), "-r", "bm25", "-m", "RR", "-O", "split=test", "--format", "json"],
    )
    assert ok.exit_code == 0, ok.output
    bad = CliRunner().invoke(cli, ["run", str(beir_folder), "-r", "bm25", "-O", "max_dcos=10"])
    assert bad.exit_code != 0
    assert "max_dcos" in str(bad.exception)
    malformed = CliRunner().invoke(cli, ["run", str(beir_folder), "-r", "bm25", "-O", "novalue"])
    assert malformed.exit_code != 0 and "KEY=VALUE" in malformed.output


def test_freshstack_queries_file_as_qrels_uses_freshstack_defaults(tmp_path):
    rows = [
        {
            "query_id": "1",
            "query_title": "t",
            "query_text": "x",
            "answer_text": "a",
            "nuggets": [
                {
                    "_id": "1_n1",
                    "text": "n1",
                    "relevant_corpus_ids": ["d1"],
                    "non_relevant_corpus_ids": ["d2"],
                },
                {
                    "_id": "1_n2",
                    "text": "n2",
                    "relevant_corpus_ids": [],
                    "non_relevant_corpus_ids": [],
                },
            ],
        },
        {
            "query_id": "2",
            "query_title": "t",
            "query_text": "y",
            "answer_text": "b",
            "nuggets": [
                {
                    "_id": "2_n1",
                    "text": "n",
                    "relevant_corpus_ids": [],
                    "non_relevant_corpus_ids": ["d3"],
                }
            ],
        },
    ]
    qfile = tmp_path / "queries.jsonl"
    qfile.write_text("".join(json.dumps(r) + "\n" for r in rows))
    run = tmp_path / "run.txt"
    run.write_text("1 Q0 d1 1 2.0 t\n1 Q0 d2 2 1.0 t\n2 Q0 d3 1 1.0 t\n")
    r = CliRunner().invoke(cli, ["evaluate", str(qfile), str(run), "--format", "json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out.pop("averaged")["of"] == "profile"  # the freshstack profile picks its queries
    assert out.pop("beyond_depth") == {
        "measures": ["alpha_nDCG@10", "Coverage@20", "R@50"],
        "run_depth": 2,
    }
    assert set(out) == {"alpha_nDCG@10", "Coverage@20", "R@50"}
    # freshstack profile: query 2 (no supported nugget) still counts, scoring 0
    assert out["Coverage@20"] == pytest.approx((1 / 2 + 0) / 2)


def test_profile_that_selects_no_query_is_an_error(tmp_path):
    from nuggetbench.data import Qrels, Run
    from nuggetbench.errors import InputError
    from nuggetbench.measures import score as evaluate

    qrels = Qrels.from_dict({"q": {"a": 0, "b": 0}})
    run = Run.from_dict({"q": {"a": 1.0}})
    with pytest.raises(InputError, match="selects no query"):
        evaluate(qrels, run, ["nDCG@10"], profile="birco")
