"""Learned sparse retrieval (sparse:MODEL) with a tiny random-weight SPLADE-style SparseEncoder."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from nuggetbench.data import InMemoryCorpus, Queries
from nuggetbench.errors import ModelError
from nuggetbench.retrieval import parse_retriever
from nuggetbench.retrieval.learned.sparse import SparseRetriever, idf_weights, to_csr
from retrieval_tiny_models import texts, tiny_models


@pytest.fixture(scope="session")
def tiny():
    return tiny_models()


@pytest.fixture(scope="session")
def encoder(tiny):
    from sentence_transformers import SparseEncoder

    return SparseEncoder(str(tiny.sparse), device="cpu")


def _corpus(n=30, seed=11):
    docs = texts(n, seed=seed)
    return InMemoryCorpus.from_dict({f"d{i:02d}": t for i, t in enumerate(docs)}), docs


def test_idf_formula_hand_computed():
    # 4 documents x 3 terms: term 0 in every document, term 1 in one, term 2 in none
    m = sp.csr_matrix(
        np.array([[1.0, 0, 0], [2.0, 3.0, 0], [0.5, 0, 0], [1.0, 0, 0]], dtype=np.float32)
    )
    idf = idf_weights(m)
    # ln(1 + (N - df + 0.5) / (df + 0.5)) with N = 4
    np.testing.assert_allclose(
        idf, [np.log(1 + 0.5 / 4.5), np.log(1 + 3.5 / 1.5), np.log(10.0)], rtol=1e-6
    )
    np.testing.assert_allclose(idf, [0.1053605, 1.2039728, 2.3025851], rtol=1e-6)


def test_to_csr_from_torch_sparse():
    import torch

    dense = torch.tensor([[0.0, 1.5, 0.0], [2.0, 0.0, 0.25]])
    csr = to_csr(dense.to_sparse())
    assert isinstance(csr, sp.csr_matrix) and csr.dtype == np.float32
    np.testing.assert_array_equal(csr.toarray(), dense.numpy())


def test_scores_equal_direct_sparse_encoder_products(tiny, encoder):
    corpus, docs = _corpus()
    qtexts = texts(4, seed=2)
    index = SparseRetriever(
        str(tiny.sparse), device="cpu", chunk=8, doc_block=7, query_block=3
    ).index(corpus)
    assert sp.isspmatrix_csr(index.matrix) and index.matrix.shape == (30, len(encoder.tokenizer))
    run = index.search(Queries({f"q{i}": t for i, t in enumerate(qtexts)}), 5)
    d = encoder.encode_document(docs).to_dense().numpy()
    q = encoder.encode_query(qtexts).to_dense().numpy()
    np.testing.assert_allclose(index.matrix.toarray(), d, atol=1e-5)
    full = q @ d.T
    for i in range(4):
        got = run[f"q{i}"]
        np.testing.assert_allclose(
            [s for _, s in got], np.sort(full[i])[::-1][:5], rtol=1e-5, atol=1e-5
        )
        for doc, s in got:
            assert full[i, int(doc[1:])] == pytest.approx(s, rel=1e-5, abs=1e-5)
    assert index.stats.max_block_elements <= 3 * 7


def test_idf_option_reweights_queries(tiny, encoder):
    corpus, docs = _corpus()
    qtexts = texts(3, seed=4)
    index = SparseRetriever(str(tiny.sparse), device="cpu", idf=True).index(corpus)
    run = index.search(Queries({f"q{i}": t for i, t in enumerate(qtexts)}), 4)
    d = encoder.encode_document(docs).to_dense().numpy()
    df = (d > 0).sum(axis=0)
    idf = np.log(1 + (len(docs) - df + 0.5) / (df + 0.5))
    q = encoder.encode_query(qtexts).to_dense().numpy() * idf
    full = q @ d.T
    for i in range(3):
        np.testing.assert_allclose(
            [s for _, s in run[f"q{i}"]], np.sort(full[i])[::-1][:4], rtol=1e-4
        )
    assert run.metadata["idf"] is True


def test_doc_filter(tiny):
    corpus, docs = _corpus()
    index = SparseRetriever(str(tiny.sparse), device="cpu").index(corpus)
    run = index.search(Queries({"a": docs[0], "b": docs[1]}), 3, doc_filter={"a": ["d05", "d06"]})
    assert set(run.doc_ids("a")) <= {"d05", "d06"}
    assert len(run.doc_ids("b")) == 3


def test_spec_and_errors(tiny):
    r = parse_retriever(f"sparse:{tiny.sparse},idf=true")
    assert isinstance(r, SparseRetriever) and r.options["idf"] is True
    assert r.name == f"sparse:{tiny.sparse},idf=true"
    with pytest.raises(ModelError, match="does not exist"):
        parse_retriever("sparse:/no/such/splade")
