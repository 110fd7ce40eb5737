"""Issue 18, point 13: the small things a new user trips over."""

from __future__ import annotations

import json
import time

import pytest
from click.testing import CliRunner

from nuggetbench.cli import cli
from nuggetbench.data import InMemoryCorpus, Queries, Run
from nuggetbench.errors import UnknownNameError
from nuggetbench.retrieval import parse_retriever
from nuggetbench.retrieval.compose.caching import CachedIndex


def test_overlap_counts_are_printed_once(tmp_path):
    qrels = tmp_path / "q.txt"
    qrels.write_text("1 0 a 1\n2 0 c 1\n")
    run = tmp_path / "r.txt"
    run.write_text("1 Q0 a 1 2.0 t\n9 Q0 z 1 1.0 t\n")
    out = CliRunner().invoke(cli, ["evaluate", str(qrels), str(run), "-m", "P@1"])
    assert out.exit_code == 0
    assert out.stderr.count("run queries have no judgments") == 1
    assert out.stderr.count("judged queries are missing") == 1


def test_unknown_profile_fails_before_loading_the_dataset(tmp_path):
    run = tmp_path / "r.txt"
    run.write_text("1 Q0 a 1 2.0 t\n")
    # beir/nfcorpus is not local and downloads are off: the profile must be named first
    out = CliRunner().invoke(cli, ["evaluate", "beir/nfcorpus", str(run), "--profile", "trec_evl"])
    assert out.exit_code == 2
    assert "trec_evl" in out.output and "download" not in out.output.lower()
    typo = CliRunner().invoke(cli, ["run", "beir/nfcorpus", "-r", "bm25", "-m", "nDGC@10"])
    assert typo.exit_code == 2 and "nDCG" in typo.output  # measures too, before loading


def test_unknown_retriever_inside_a_pipeline_is_named():
    with pytest.raises(UnknownNameError, match=r"unknown retriever 'foo'.*Known: bm25"):
        parse_retriever("bm25 >> foo(k=3)")


def test_measures_table_keeps_parameters_whole_at_80_columns():
    out = CliRunner(env={"COLUMNS": "80"}).invoke(cli, ["measures"])
    assert out.exit_code == 0
    assert "drop_extraneous=false:" in out.output and "drop_implicit=false:" in out.output
    assert max(len(line) for line in out.output.splitlines()) <= 80


class _SlowRetriever:
    name = "slow"
    params = {"x": 1}

    def index(self, corpus, *, show_progress=False):
        time.sleep(0.05)
        return self

    def search(self, queries, k, *, doc_filter=None, show_progress=False):
        return Run(["q1"], ["d1"], [1.0])


def test_index_time_is_recorded_when_a_cached_retriever_builds_its_index():
    corpus = InMemoryCorpus([])
    index = CachedIndex(_SlowRetriever(), corpus)
    assert index.index_seconds == 0.0
    index.search(Queries({"q1": "x"}), 10)
    assert index.index_seconds >= 0.05
    again = CachedIndex(_SlowRetriever(), corpus)
    again.search(Queries({"q1": "x"}), 10)  # served from the run cache: no index built
    assert again.hits == 1 and again.index_seconds == 0.0


def test_results_json_splits_index_and_search_seconds(tmp_path):
    folder = tmp_path / "ds"
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text(
        "\n".join(
            json.dumps({"_id": f"d{i}", "title": "", "text": f"word{i} common"}) for i in range(5)
        )
    )
    (folder / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "word1"}))
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    out = CliRunner().invoke(cli, ["run", str(folder), "-r", "bm25", "-o", str(tmp_path / "o")])
    assert out.exit_code == 0, out.output
    saved = json.loads((tmp_path / "o" / "results.json").read_text())
    seconds = saved["systems"]["bm25"]["seconds"]
    assert set(seconds) == {"index", "search"} and seconds["index"] >= 0 and seconds["search"] >= 0
