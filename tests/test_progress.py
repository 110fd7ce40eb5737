"""Progress (issue 18, point 8): the dense bar moves every batch with a rate and an ETA; BM25
shows one bar per stage instead of bm25s' own bars."""

from __future__ import annotations

import numpy as np
import pytest

from nuggetbench.data import InMemoryCorpus, Queries
from nuggetbench.retrieval import parse_retriever
from nuggetbench.retrieval.dense.retriever import DenseRetriever
from nuggetbench.retrieval.models.plumbing import encode_in_length_order
from retrieval_tiny_models import texts, tiny_models


def test_progress_moves_every_step_and_encodes_the_same():
    ids = [f"d{i}" for i in range(23)]
    lengths = np.array([len(i) * (i.__hash__() % 7 + 1) for i in ids])
    calls, ticks = [], []
    store = {}

    def encode(texts_):
        calls.append(len(texts_))
        return [t.upper() for t in texts_]

    def put(rows, vectors):
        store.update(zip(rows.tolist(), vectors))

    order = encode_in_length_order(
        lambda xs: xs, ids, lengths, encode, put, chunk=10, progress=ticks.append, step=4
    )
    assert ticks == [4, 4, 4, 4, 4, 3] and sum(ticks) == 23  # every batch, not every chunk
    plain_store = dict(store)
    store.clear()
    order2 = encode_in_length_order(lambda xs: xs, ids, lengths, encode, put, chunk=10)
    assert calls[-3:] == [10, 10, 3] and np.array_equal(order, order2) and store == plain_store


def test_dense_bar_every_batch_same_embeddings(capsys):
    tiny = tiny_models()
    docs = texts(30, seed=5)
    corpus = InMemoryCorpus.from_dict({f"d{i:02d}": t for i, t in enumerate(docs)})
    quiet = DenseRetriever(str(tiny.bi_encoder), device="cpu", chunk=16, batch_size=4, cache=False)
    a = quiet.index(corpus).embeddings
    shown = DenseRetriever(str(tiny.bi_encoder), device="cpu", chunk=16, batch_size=4, cache=False)
    b = shown.index(corpus, show_progress=True).embeddings
    assert quiet.encode_calls == 2 and shown.encode_calls == 8  # ceil(30 / 4): one per batch
    np.testing.assert_allclose(a, b, atol=1e-5)
    err = capsys.readouterr().err
    assert "encoding corpus" in err and "30/30" in err and "doc/s" in err


def test_bm25_shows_one_bar_per_stage(capsys):
    corpus = InMemoryCorpus.from_dict({f"d{i}": f"word{i} common text" for i in range(50)})
    index = parse_retriever("bm25").index(corpus, show_progress=True)
    run = index.search(Queries({"q": "word3 text"}), 5, show_progress=True)
    assert run.doc_ids("q")[0] == "d3"
    err = capsys.readouterr().err
    for noise in ("Split strings", "Stem Tokens", "BM25S Count Tokens", "BM25S Retrieve"):
        assert noise not in err
    assert "bm25 index (50 docs, " in err and "bm25 search (1 queries)" in err


@pytest.mark.parametrize("show", [False, True])
def test_bm25_scores_do_not_depend_on_the_bar(show):
    corpus = InMemoryCorpus.from_dict({f"d{i}": f"word{i % 7} common text {i}" for i in range(40)})
    run = (
        parse_retriever("bm25")
        .index(corpus, show_progress=show)
        .search(Queries({"q": "word3 common"}), 10, show_progress=show)
    )
    ref = parse_retriever("bm25").index(corpus).search(Queries({"q": "word3 common"}), 10)
    assert run == ref
