"""BM25 on BEIR SciFact (test split) against bm25s' published nDCG@10 (skips without the data).

bm25s' README reports SciFact nDCG@10 of 0.676 with Pyserini's k1=0.9, b=0.4 and 0.686 with
bm25s' defaults k1=1.5, b=0.75 (method lucene, English stemmer and stop words).
nDCG@10 is computed by pytrec_eval (the reference tool), averaged over the judged queries.
"""

from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.realdata


@pytest.fixture(scope="module")
def scifact(shared_data):
    if not (shared_data / "beir" / "scifact" / "corpus.jsonl").exists():
        pytest.skip("beir/scifact is absent from the shared data")
    from nuggetbench.datasets.beir import load_folder

    return load_folder(shared_data / "beir" / "scifact", split="test", dataset_id="beir/scifact")


def ndcg10(qrels, run) -> float:
    pytrec_eval = pytest.importorskip("pytrec_eval")
    evaluator = pytrec_eval.RelevanceEvaluator(qrels.to_dict(), {"ndcg_cut.10"})
    per_query = evaluator.evaluate(run.to_dict())
    values = [per_query.get(q, {}).get("ndcg_cut_10", 0.0) for q in qrels]
    return float(np.mean(values))


@pytest.mark.parametrize(
    "spec,published", [("bm25:k1=0.9,b=0.4", 0.676), ("bm25:k1=1.5,b=0.75", 0.686)]
)
def test_scifact_ndcg10_matches_bm25s(scifact, spec, published):
    from nuggetbench.retrieval import parse_retriever

    run = parse_retriever(spec).index(scifact.corpus).search(scifact.queries, 100)
    run = scifact.postprocess_run(run)
    value = ndcg10(scifact.qrels, run)
    assert abs(value - published) < 0.005, f"{spec}: nDCG@10 = {value:.4f}, published {published}"
    try:
        from nuggetbench.measures import score as evaluate
    except ImportError:
        return
    results = evaluate(scifact.qrels, run, ["nDCG@10"])
    assert float(results.means["nDCG@10"]) == pytest.approx(value, abs=1e-9)


@pytest.mark.parametrize("spec", ["bm25", "bm25:k1=0.9,b=0.4"])
def test_scifact_sharded_run_is_byte_identical(scifact, spec, tmp_path):
    """The sharded index (several shard sizes) writes the single index's TREC run byte for byte."""
    from nuggetbench.data.formats.trec import write_run
    from nuggetbench.retrieval import parse_retriever

    sep = ":" if ":" not in spec else ","
    single = parse_retriever(f"{spec}{sep}backend=numpy,cache=false").index(scifact.corpus)
    full = single.search(scifact.queries, len(scifact.corpus))
    for shard_docs in (700, 2000):
        index = parse_retriever(f"{spec}{sep}shard_docs={shard_docs}").index(scifact.corpus)
        for k in (10, 1000):
            write_run(index.search(scifact.queries, k), tmp_path / "a.trec")
            write_run(full.truncate(k), tmp_path / "b.trec")
            assert (tmp_path / "a.trec").read_bytes() == (tmp_path / "b.trec").read_bytes()
