"""``BM25Index.search`` builds its run from integer codes (``Run._from_codes``): every entry is
the document bm25s scored, with its score, ranked as the ``Run`` constructor ranks the same
columns; queries that retrieve nothing are absent."""

from __future__ import annotations

import numpy as np
import pytest

from nuggetbench.data import Document, InMemoryCorpus, Queries, Run
from nuggetbench.retrieval.bm25.retriever import BM25

WORDS = [
    "apple",
    "banana",
    "cherry",
    "date",
    "eggplant",
    "fig",
    "grape",
    "honeydew",
    "kiwi",
    "lemon",
    "mango",
]


def _corpus(rng, n):
    docs = []
    for i in rng.permutation(n):
        text = " ".join(rng.choice(WORDS, int(rng.integers(1, 6))))
        docs.append(Document(f"d{i}" if i % 5 else f"é{i}", text))
    return InMemoryCorpus(docs)


@pytest.mark.parametrize("seed", range(4))
def test_entries_are_the_scored_documents(seed):
    rng = np.random.default_rng(seed)
    corpus = _corpus(rng, int(rng.integers(20, 120)))
    queries = Queries(
        {f"q{j}": " ".join(rng.choice(WORDS + ["zzz"], 2)) for j in range(25)} | {"none": "zzz"}
    )
    pool = {"q3": [f"d{i}" for i in range(0, 40, 3)] + ["absent"], "none": ["d1", "d2"]}
    k = int(rng.integers(1, 30))
    index = BM25(stemmer="none", stopwords="none", cache=False).index(corpus)
    for doc_filter in (None, pool):
        run = index.search(queries, k, doc_filter=doc_filter)
        position = {d: i for i, d in enumerate(index.doc_ids)}
        vocab = index.bm25.vocab_dict
        q, d, s = [], [], []
        for qid in run.query_ids:
            ids = [vocab[t] for t in queries[qid].split() if t in vocab]
            scores = np.asarray(index.bm25.get_scores(ids)) if ids else np.zeros(len(position))
            entries = run[qid]
            assert 0 < len(entries) <= k
            for doc, score in entries:
                assert score == scores[position[doc]]
                if not (doc_filter and qid in doc_filter):
                    assert score > 0
                q.append(qid)
                d.append(doc)
                s.append(score)
            if not (doc_filter and qid in doc_filter):
                assert len(entries) == min(k, int((scores > 0).sum()))
        assert "none" not in run.query_ids or (doc_filter and "none" in doc_filter)
        rebuilt = Run(q, d, s)
        assert rebuilt == run and rebuilt.query_ids == run.query_ids
        assert rebuilt.fingerprint() == run.fingerprint()
