"""Cross-encoder reranking (rerank:MODEL@k) and `>>` pipelines, in Python and in spec strings."""

from __future__ import annotations

import numpy as np
import pytest

from nuggetbench.data import InMemoryCorpus, Queries, Run
from nuggetbench.errors import ModelError, SpecError
from nuggetbench.retrieval import parse_retriever
from nuggetbench.retrieval.compose.pipeline import IndexReranker, Pipeline
from nuggetbench.retrieval.dense.retriever import DenseRetriever
from nuggetbench.retrieval.rerankers.cross_encoder import CrossEncoderReranker, split_depth
from nuggetbench.spec import split_top
from retrieval_tiny_models import texts, tiny_models


@pytest.fixture(scope="session")
def tiny():
    return tiny_models()


@pytest.fixture(scope="session")
def ce_model(tiny):
    from sentence_transformers import CrossEncoder

    return CrossEncoder(str(tiny.cross_encoder), device="cpu")


def _corpus(n=15, seed=21):
    docs = texts(n, seed=seed)
    return InMemoryCorpus.from_dict({f"d{i:02d}": t for i, t in enumerate(docs)}), docs


def test_split_depth():
    assert split_depth("cross-encoder/ms-marco-MiniLM-L-6-v2@100") == (
        "cross-encoder/ms-marco-MiniLM-L-6-v2",
        100,
    )
    assert split_depth("org/model") == ("org/model", None)
    assert split_depth("/path/with@sign/model@20") == ("/path/with@sign/model", 20)


def test_scores_are_cross_encoder_logits_of_the_top_k(tiny, ce_model):
    import torch

    corpus, docs = _corpus()
    queries = Queries({"q1": "cat and dog", "q2": "coffee at night", "q3": "not in the run"})
    first = Run.from_ranked_lists({"q1": ["d00", "d01", "d02", "d03", "d04"], "q2": ["d09", "d08"]})
    rr = CrossEncoderReranker(str(tiny.cross_encoder) + "@3", device="cpu", batch_size=2, group=3)
    out = rr.rerank(queries, first, corpus, 3)
    assert sorted(out.doc_ids("q1")) == ["d00", "d01", "d02"]  # only the top 3 are kept
    assert sorted(out.doc_ids("q2")) == ["d08", "d09"] and out["q3"] == []
    expect = ce_model.predict(
        [("cat and dog", docs[i]) for i in range(3)], activation_fn=torch.nn.Identity()
    )
    got = dict(out["q1"])
    np.testing.assert_allclose([got[f"d0{i}"] for i in range(3)], expect, rtol=1e-5, atol=1e-6)
    assert out.name == f"{first.name} >> {rr.name}" if first.name else out.name == rr.name
    assert out.metadata["depth"] == 3


def test_oom_on_predict_halves_the_batch(tiny, monkeypatch):
    import torch

    corpus, _ = _corpus()
    rr = CrossEncoderReranker(str(tiny.cross_encoder), device="cpu", batch_size=16)
    original = rr.model.predict

    def flaky(items, batch_size, **kw):
        if batch_size > 4:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory")
        return original(items, batch_size=batch_size, **kw)

    monkeypatch.setattr(rr.model, "predict", flaky)
    out = rr.rerank(Queries({"q": "cat"}), Run.from_ranked_lists({"q": ["d01", "d02"]}), corpus, 2)
    assert len(out["q"]) == 2 and rr.backoff.batch_size == 4


def test_python_rshift_with_any_retriever(tiny):
    from nuggetbench.retrieval.bm25.retriever import BM25

    corpus, docs = _corpus()
    rr = CrossEncoderReranker(str(tiny.cross_encoder), depth=4, device="cpu")
    pipe = (
        BM25(cache=False) >> rr
    )  # BM25 does not know about pipelines: rerankers compose from the right
    assert isinstance(pipe, Pipeline) and pipe.name == f"bm25 >> {rr.name}"
    queries = Queries({"q": docs[3], "r": docs[7]})
    run = pipe.index(corpus).search(queries, 3)
    first = BM25(cache=False).index(corpus).search(queries, 4)
    for q in queries:
        assert len(run.doc_ids(q)) == min(3, len(first.doc_ids(q)))
        assert set(run.doc_ids(q)) <= set(first.doc_ids(q))
    dense = DenseRetriever(str(tiny.bi_encoder), device="cpu")
    chained = dense >> rr >> CrossEncoderReranker(str(tiny.cross_encoder), depth=2, device="cpu")
    assert len(chained.stages) == 2
    run2 = chained.index(corpus).search(queries, 10)
    base = dense.index(corpus).search(queries, 10)
    for q in queries:  # as deep as the first stage; only the top 4 reordered, then the top 2
        got, first_docs = run2.doc_ids(q), base.doc_ids(q)
        assert len(got) == len(first_docs) == 10
        assert got[4:] == first_docs[4:] and set(got[:4]) == set(first_docs[:4])


def test_documents_below_the_depth_stay_in_the_first_stage_order():
    """``under_head``: the reranked head, then the first stage's other documents in its order,
    scored strictly below the head and strictly decreasing (so trec_eval keeps the order); a
    query the reranker returned nothing for keeps the first stage's order; empty queries stay."""
    from nuggetbench.retrieval.compose.pipeline import under_head
    from nuggetbench.retrieval.models.topk import with_empty_queries

    before = Run(
        ["a"] * 5 + ["b"] * 3,
        ["d1", "d2", "d3", "d4", "d5", "e1", "e2", "e3"],
        [5.0, 4.0, 3.0, 3.0, 1.0, 9.0, 8.0, 7.0],
    )
    before = with_empty_queries(before, ["c"])
    head = Run(["a", "a"], ["d3", "d1"], [-0.5, -2.0], name="rr", metadata={"llm": 1})
    out = under_head(head, before)
    assert out.doc_ids("a") == ["d3", "d1", "d2", "d4", "d5"]  # before: d1 d2 d4 d3 d5
    scores = [s for _, s in out["a"]]
    assert scores[:2] == [-0.5, -2.0] and all(x > y for x, y in zip(scores, scores[1:]))
    assert out.doc_ids("b") == ["e1", "e2", "e3"] and out.doc_ids("c") == []
    assert "c" in out.query_ids and out.name == "rr" and out.metadata == {"llm": 1}
    huge = under_head(Run(["a"], ["d5"], [1e20]), before)  # a step the float can hold
    assert huge.doc_ids("a") == ["d5", "d1", "d2", "d4", "d3"]


def test_retriever_after_rshift_reranks_through_its_index(tiny):
    corpus, docs = _corpus()
    queries = Queries({"q": docs[5]})
    pipe = parse_retriever(f"bm25 >> dense:{tiny.bi_encoder}")
    assert isinstance(pipe.stages[0], IndexReranker)
    run = pipe.index(corpus).search(queries, 5)
    first = parse_retriever("bm25").index(corpus).search(queries, 100)
    assert set(run.doc_ids("q")) <= set(first.doc_ids("q"))
    assert "d05" in first.doc_ids("q")
    assert run.doc_ids("q")[0] == "d05"  # the identical document wins the dense re-scoring


def test_spec_pipeline_parsing(tiny):
    pipe = parse_retriever(f" bm25:k1=0.9,b=0.4 >> rerank:{tiny.cross_encoder}@7 ")
    assert isinstance(pipe, Pipeline) and pipe.stages[0].depth == 7
    assert pipe.name == f"bm25:k1=0.9,b=0.4 >> rerank:{tiny.cross_encoder}@7"
    assert parse_retriever(pipe.name).name == pipe.name
    with pytest.raises(SpecError, match="empty stage"):
        parse_retriever("bm25 >> ")
    with pytest.raises(ModelError, match="does not exist"):
        parse_retriever("bm25 >> rerank:./missing/cross-encoder@10")
    assert split_top("fuse(a, b >> c) >> d", ">>") == ["fuse(a, b >> c) ", " d"]
    with pytest.raises(SpecError, match="unbalanced"):
        split_top("fuse(a, b", ",")
