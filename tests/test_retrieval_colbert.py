"""Late interaction (colbert:MODEL): checkpoint formats, MaxSim, reranking and full search."""

from __future__ import annotations

import json
import string

import numpy as np
import pytest

from nuggetbench.data import InMemoryCorpus, Queries, Run
from nuggetbench.errors import ModelError
from nuggetbench.retrieval import parse_retriever
from nuggetbench.retrieval.compose.pipeline import Pipeline
from nuggetbench.retrieval.learned.colbert import ColBERTRetriever, maxsim
from retrieval_tiny_models import DOC_LEN, QUERY_LEN, texts, tiny_models


@pytest.fixture(scope="session")
def tiny():
    return tiny_models()


def _reference_stanford(folder, queries: list[str], docs: list[str]) -> np.ndarray:
    """ColBERTv2 scoring written from its published description, with plain transformers:
    query ``[CLS] [unused0] q [SEP]`` padded with [MASK] to query_maxlen (mask tokens not attended,
    but scored); document ``[CLS] [unused1] d [SEP]`` truncated to doc_maxlen, punctuation not
    scored; token vectors = normalize(linear(BERT)); score = sum over query tokens of max dot."""
    import torch
    from safetensors.torch import load_file
    from transformers import AutoTokenizer, BertModel

    meta = json.loads((folder / "artifact.metadata").read_text())
    tok = AutoTokenizer.from_pretrained(folder)
    bert = BertModel.from_pretrained(folder).eval()
    linear = load_file(str(folder / "model.safetensors"))["linear.weight"]
    qmark, dmark = tok.convert_tokens_to_ids([meta["query_token_id"], meta["doc_token_id"]])
    punct = {tok.convert_tokens_to_ids(c) for c in string.punctuation} - {tok.unk_token_id}

    def vectors(ids, mask):
        with torch.no_grad():
            h = bert(
                input_ids=torch.tensor([ids]), attention_mask=torch.tensor([mask])
            ).last_hidden_state[0]
        return torch.nn.functional.normalize(h @ linear.T, dim=-1).numpy()

    out = np.zeros((len(queries), len(docs)))
    for i, q in enumerate(queries):
        body = tok(q, add_special_tokens=False)["input_ids"][: meta["query_maxlen"] - 3]
        ids = [tok.cls_token_id, qmark, *body, tok.sep_token_id]
        mask = [1] * len(ids) + [0] * (meta["query_maxlen"] - len(ids))
        ids += [tok.mask_token_id] * (meta["query_maxlen"] - len(ids))
        qv = vectors(ids, mask)
        for j, d in enumerate(docs):
            body = tok(d, add_special_tokens=False)["input_ids"][: meta["doc_maxlen"] - 3]
            ids_d = [tok.cls_token_id, dmark, *body, tok.sep_token_id]
            dv = vectors(ids_d, [1] * len(ids_d))
            keep = [t not in punct for t in ids_d]
            out[i, j] = (qv @ dv[keep].T).max(axis=1).sum()
    return out


def test_maxsim_hand_computed():
    q = np.array([[1.0, 0.0], [0.0, 1.0]])
    tokens = np.array([[0.5, 0.5], [1.0, 0.0], [0.0, 0.2], [0.3, 0.9]])
    offsets = np.array([0, 2, 4])
    # doc 0: max(0.5, 1.0) + max(0.5, 0.0) = 1.5 ; doc 1: max(0.0, 0.3) + max(0.2, 0.9) = 1.2
    np.testing.assert_allclose(maxsim(q, tokens, offsets), [1.5, 1.2])


def test_stanford_checkpoint_matches_reference_scoring(tiny):
    docs = [
        "the cat, and the dog!",
        "a fish in the river",
        "music (and coffee) at night",
        " ".join(texts(1, seed=3, length=(30, 30))),
    ]  # the last one is truncated to doc_maxlen
    queries = ["cat dog", "water, river and fish in the city at night with music"]
    corpus = InMemoryCorpus.from_dict({f"d{i}": t for i, t in enumerate(docs)})
    r = ColBERTRetriever(str(tiny.colbert_stanford), device="cpu")
    assert r.format == "stanford"
    first = Run.from_ranked_lists({"q0": ["d0", "d1", "d2", "d3"], "q1": ["d3", "d2", "d1", "d0"]})
    run = r.rerank(Queries({"q0": queries[0], "q1": queries[1]}), first, corpus, 4)
    ref = _reference_stanford(tiny.colbert_stanford, queries, docs)
    for i in range(2):
        for doc, s in run[f"q{i}"]:
            assert s == pytest.approx(ref[i, int(doc[1:])], rel=1e-4, abs=1e-4)


def test_pylate_format_tokens(tiny):
    r = ColBERTRetriever(str(tiny.colbert_pylate), device="cpu")
    assert r.format == "sentence-transformers"
    (qv,) = r.encode_queries(["cat dog"])
    assert qv.shape == (QUERY_LEN, 16)  # expanded with [MASK] to the query length
    np.testing.assert_allclose(np.linalg.norm(qv, axis=1), 1.0, atol=1e-5)
    tokens, offsets = r.encode_documents(["the cat, dog!", "the cat dog", " ".join(["cat"] * 60)])
    lengths = np.diff(offsets).tolist()
    # [CLS] [D] the cat dog [SEP] = 6 scored tokens in both (punctuation skipped); long doc capped
    assert lengths[:2] == [6, 6] and lengths[2] == DOC_LEN
    assert tokens.shape == (sum(lengths), 16)


def test_full_search_equals_exhaustive_rerank(tiny):
    docs = texts(25, seed=8)
    corpus = InMemoryCorpus.from_dict({f"d{i:02d}": t for i, t in enumerate(docs)})
    queries = Queries({f"q{i}": t for i, t in enumerate(texts(3, seed=9))})
    r = ColBERTRetriever(str(tiny.colbert_pylate), device="cpu", doc_block=4, query_block=2)
    index = r.index(corpus)
    assert index.offsets.shape == (26,) and index.tokens.shape[0] == index.offsets[-1]
    run = index.search(queries, 5)
    everything = Run.from_ranked_lists({q: list(corpus) for q in queries})
    reranked = r.rerank(queries, everything, corpus, 25).truncate(5)
    for q in queries:
        assert run.doc_ids(q) == reranked.doc_ids(q)
        np.testing.assert_allclose([s for _, s in run[q]], [s for _, s in reranked[q]], rtol=1e-5)
    # cached: a second retriever loads the token vectors
    again = ColBERTRetriever(str(tiny.colbert_pylate), device="cpu")
    again.index(corpus)
    assert again.encode_calls == 0


def test_rerank_only_top_k_and_pipeline(tiny):
    docs = texts(12, seed=1)
    corpus = InMemoryCorpus.from_dict({f"d{i}": t for i, t in enumerate(docs)})
    queries = Queries({"a": docs[0], "b": docs[4], "c": "cat"})
    first = Run.from_ranked_lists({"a": [f"d{i}" for i in range(12)], "b": ["d4", "d5", "d6"]})
    r = ColBERTRetriever(str(tiny.colbert_pylate) + "@3", device="cpu")
    assert r.depth == 3 and r.name == f"colbert:{tiny.colbert_pylate}@3,device=cpu"
    out = r.rerank(queries, first, corpus, 3)
    assert sorted(out.doc_ids("a")) == ["d0", "d1", "d2"] and out["c"] == []
    pipe = parse_retriever(f"colbert:{tiny.colbert_pylate} >> colbert:{tiny.colbert_stanford}@5")
    assert isinstance(pipe, Pipeline) and pipe.stages[0].depth == 5
    run = pipe.index(corpus).search(queries, 2)
    assert all(len(run.doc_ids(q)) == 2 for q in queries)


def test_non_colbert_folders_are_refused(tiny):
    with pytest.raises(ModelError, match="single-vector"):
        ColBERTRetriever(str(tiny.bi_encoder))
    with pytest.raises(ModelError, match="not a ColBERT checkpoint"):
        ColBERTRetriever(str(tiny.bert))
