"""The single BM25 index built on every core and searched by the top-k kernel, against bm25s.

The references are bm25s' own code: ``bm25s.tokenize`` + ``bm25s.BM25.index`` must give the very
CSC matrix (bit for bit, every method) that :func:`nuggetbench.retrieval.bm25.index.build_matrix`
gives, and ``bm25s.BM25.get_scores`` over the whole collection, cut to k in trec_eval's order
(score descending, doc id descending), must be the run, byte for byte, for 1 and 2 worker
processes, both search backends (numba's MaxScore and term-at-a-time paths, numpy) and any
number of search threads, through planted ties.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

bm25s = pytest.importorskip("bm25s")

from nuggetbench.data import Document, InMemoryCorpus, Queries  # noqa: E402
from nuggetbench.data.formats.trec import write_run  # noqa: E402
from nuggetbench.retrieval.bm25 import index as bm25_index  # noqa: E402
from nuggetbench.retrieval.bm25 import tokens as bm25_tokens  # noqa: E402
from nuggetbench.retrieval.bm25 import topk  # noqa: E402
from nuggetbench.retrieval.bm25.retriever import BM25  # noqa: E402
from nuggetbench.retrieval.bm25.tokens import Tokenizer, tokenize_corpus  # noqa: E402

METHODS = ["lucene", "robertson", "atire", "bm25l", "bm25+"]
BACKENDS = ["numpy"] + (["numba"] if topk.numba_available() else [])


def _corpus(seed: int, n: int) -> tuple[InMemoryCorpus, Queries]:
    """Zipfian texts, planted duplicates (exact ties under other ids), empty and stop-word
    documents, ids not in corpus order."""
    rng = np.random.default_rng(seed)
    words = [f"t{i}x" for i in range(300)] + ["the", "and", "running", "runs", "ran"]
    p = 1.0 / np.arange(1, len(words) + 1) ** 1.1
    p /= p.sum()
    ids = rng.permutation(n)
    docs = [
        Document(f"d{ids[i]:05d}", " ".join(rng.choice(words, size=rng.integers(0, 30), p=p)))
        for i in range(n)
    ]
    docs += [Document(f"dup{j}", docs[j % 7].text) for j in range(40)]
    docs += [Document("empty", ""), Document("stop", "the and of")]
    order = rng.permutation(len(docs))
    qs = {f"q{i}": " ".join(rng.choice(words, size=rng.integers(1, 7), p=p)) for i in range(60)}
    qs["long"] = " ".join(words[:40])  # more terms than MaxScore takes: term at a time
    qs["unknown"] = "zzzz"
    return InMemoryCorpus([docs[i] for i in order]), Queries(qs)


def _reference_run(corpus, queries, k, method, tmp_path, name) -> bytes:
    """bm25s' index and full scores, cut to k by (score desc, doc id desc)."""
    import Stemmer

    docs = list(corpus.iter_documents())
    texts = [d.full_text for d in docs]
    stem = Stemmer.Stemmer("english")
    model = bm25s.BM25(method=method)
    model.index(bm25s.tokenize(texts, stemmer=stem, show_progress=False), show_progress=False)
    nonocc = model.nonoccurrence_array
    lines = []
    for qid, text in queries.items():
        toks = bm25s.tokenize([text], stemmer=stem, return_ids=False, show_progress=False)[0]
        ids = [model.vocab_dict[t] for t in toks if t in model.vocab_dict]
        if not ids:
            continue
        scores = np.asarray(model.get_scores(ids))
        floor = 0.0
        if nonocc is not None:
            s0 = float(nonocc[np.asarray(ids)].sum())
            floor = s0 + 1e-5 * abs(s0)
        ranked = sorted(
            ((float(scores[i]), docs[i].doc_id) for i in np.flatnonzero(scores > floor)),
            reverse=True,
        )[:k]
        lines += [(qid, d, s) for s, d in ranked]
    from nuggetbench.data import Run

    run = Run(
        np.array([x[0] for x in lines], dtype=object),
        np.array([x[1] for x in lines], dtype=object),
        np.array([x[2] for x in lines]),
        name=name,
    )
    path = tmp_path / "ref.trec"
    write_run(run, path)
    return path.read_bytes()


def _text(run, tmp_path) -> bytes:
    path = tmp_path / "run.trec"
    write_run(run, path)
    return path.read_bytes()


@pytest.mark.parametrize("method", METHODS)
def test_matrix_equals_bm25s_index(method):
    corpus, _ = _corpus(0, 300)
    texts = [d.full_text for d in corpus.iter_documents()]
    retriever = BM25(method=method, cache=False)
    batches = tokenize_corpus(texts, Tokenizer(), workers=1, pairs=True)
    mine, n_docs = bm25_index.build_matrix(batches, retriever)
    ref = bm25s.BM25(method=method)
    ref.index(Tokenizer().tokenize(texts, return_ids=True), show_progress=False)
    assert n_docs == len(texts) == ref.scores["num_docs"]
    # the same words; map bm25s' (hash-ordered) ids to ours and compare column by column
    assert set(mine.vocab_dict) == set(ref.vocab_dict)
    ours_of = {ref.vocab_dict[w]: i for w, i in mine.vocab_dict.items()}
    a, r = mine.scores, ref.scores
    for name in ("data", "indices", "indptr"):
        assert a[name].dtype == r[name].dtype
    for rid in range(len(r["indptr"]) - 1):
        oid = ours_of[rid]
        rs, re_ = r["indptr"][rid], r["indptr"][rid + 1]
        os_, oe = a["indptr"][oid], a["indptr"][oid + 1]
        assert np.array_equal(a["indices"][os_:oe], r["indices"][rs:re_])
        assert a["data"][os_:oe].tobytes() == r["data"][rs:re_].tobytes()  # bit for bit
    if ref.nonoccurrence_array is None:
        assert mine.nonoccurrence_array is None
    else:
        order = [ours_of[i] for i in range(len(ref.nonoccurrence_array))]
        assert np.array_equal(mine.nonoccurrence_array[order], ref.nonoccurrence_array)
    assert mine.vocab_dict[""] == len(a["indptr"]) - 1  # bm25s' empty token, no column


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("backend", BACKENDS)
def test_runs_equal_bm25s_full_ranking(tmp_path, method, backend):
    corpus, queries = _corpus(1, 400)
    index = BM25(method=method, backend=backend, cache=False).index(corpus)
    for k in (1, 5, 100):
        want = _reference_run(corpus, queries, k, method, tmp_path, index.name)
        assert _text(index.search(queries, k), tmp_path) == want


def test_one_and_two_worker_processes_give_the_same_index_and_run(tmp_path, monkeypatch):
    monkeypatch.setattr(bm25_tokens, "PARALLEL_MIN_DOCS", 10)
    monkeypatch.setattr(bm25_tokens, "BATCH_DOCS", 64)
    corpus, queries = _corpus(2, 500)
    shas = set()
    for threads in (1, 2):
        index = BM25(threads=threads, cache=True).index(corpus)
        saved = index.retriever.artifact(corpus).path
        files = sorted(p for p in saved.iterdir() if p.name != "meta.json")
        digest = hashlib.sha256()
        for path in files:
            digest.update(path.name.encode() + path.read_bytes())
        shas.add((digest.hexdigest(), _text(index.search(queries, 10), tmp_path)))
        index.retriever.artifact(corpus).discard()
    assert len(shas) == 1  # the same index files, byte for byte, and the same run


@pytest.mark.skipif(not topk.numba_available(), reason="numba absent")
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_kernel_paths_and_threads_agree(seed):
    """MaxScore, term at a time and numpy: the same candidates, for 1 and 3 threads."""
    corpus, queries = _corpus(seed, 600)
    index = BM25(cache=False).index(corpus)
    vocab = index.bm25.vocab_dict
    ids = [
        [vocab[t] for t in toks if t in vocab] for toks in index.tokenize(list(queries.values()))
    ]
    ids = [q for q in ids if q]
    matrix = index.bm25.scores
    every = topk.term_maxima(matrix["data"], matrix["indptr"])
    none = np.zeros(0, dtype=np.float32)  # no bounds: term at a time only
    for k in (1, 10, 1000):
        ref = topk.candidates(matrix, ids, k, backend="numpy")
        for bounds in (every, none):
            for threads in (1, 3):
                got = topk.candidates(
                    matrix, ids, k, backend="numba", threads=threads, term_max=bounds
                )
                assert np.array_equal(got[0], ref[0])
                ends = np.cumsum(ref[0])
                for j, e in enumerate(ends):
                    a = slice(e - ref[0][j], e)
                    mine = dict(zip(got[1][a].tolist(), got[2][a].tolist()))
                    assert mine == dict(zip(ref[1][a].tolist(), ref[2][a].tolist()))


def test_term_maxima():
    data = np.array([1.0, 3.0, 2.0, 5.0], dtype=np.float32)
    indptr = np.array([0, 2, 2, 3, 4])  # token 1 has no posting
    assert topk.term_maxima(data, indptr).tolist() == [3.0, 0.0, 2.0, 5.0]


def test_auto_backend_choice():
    assert topk.choose_backend("numpy", 10**6, 10**6) == "numpy"
    assert topk.choose_backend("auto", 1, 10) == "numpy"
    big = topk.choose_backend("auto", 10**4, 10**6)
    assert big == ("numba" if topk.numba_available() else "numpy")
