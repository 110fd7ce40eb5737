"""Dense retrieval at scale: resumable sharded encoding into a memory map, and faiss indexes.

The sharded encode (``shard_docs=N``) must give the same vectors bit for bit, hence byte-identical
TREC runs, as the single pass; a process killed with SIGKILL mid-encode must resume re-encoding
only the shards without a ``.done`` marker; ``index=flat`` must rank as the exact search, and the
approximate indexes report their recall against it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from nuggetbench.data import InMemoryCorpus, Queries, Run
from nuggetbench.data.formats.trec import write_run
from nuggetbench.errors import SpecError
from nuggetbench.retrieval import parse_retriever
from nuggetbench.retrieval.dense import sharded as dense_sharded
from nuggetbench.retrieval.dense.index import faiss_factory, recall_against_exact
from nuggetbench.retrieval.dense.retriever import DenseRetriever
from retrieval_tiny_models import texts, tiny_models

TESTS = Path(__file__).parent


@pytest.fixture(scope="session")
def tiny():
    return tiny_models()


def _corpus(n: int, seed: int = 3) -> InMemoryCorpus:
    return InMemoryCorpus.from_dict({f"d{i:04d}": t for i, t in enumerate(texts(n, seed=seed))})


def _queries(n: int = 12, seed: int = 9) -> Queries:
    return Queries({f"q{i}": t for i, t in enumerate(texts(n, seed=seed))})


def _trec(run: Run, path: Path) -> bytes:
    write_run(run, path, tag="t")
    return path.read_bytes()


@pytest.mark.parametrize(
    ("n", "chunk", "batch_size", "shard_docs", "doc_block"),
    [(157, 16, 8, 40, 16384), (230, 8192, 32, 50, 64), (61, 7, 4, 1, 13)],
)
def test_sharded_encode_gives_byte_identical_runs(
    tiny, tmp_path, n, chunk, batch_size, shard_docs, doc_block
):
    corpus, queries = _corpus(n, seed=n), _queries()
    common = dict(device="cpu", chunk=chunk, batch_size=batch_size, doc_block=doc_block)
    single = DenseRetriever(str(tiny.bi_encoder), cache=False, **common).index(corpus)
    sharded_r = DenseRetriever(str(tiny.bi_encoder), shard_docs=shard_docs, **common)
    sharded = sharded_r.index(corpus)
    assert isinstance(sharded.embeddings, np.memmap)  # searched from disk
    assert np.array_equal(np.asarray(single.embeddings), np.asarray(sharded.embeddings))
    for k in (1, 10, n + 5):
        a = _trec(single.search(queries, k), tmp_path / "a.trec")
        b = _trec(sharded.search(queries, k), tmp_path / "b.trec")
        assert a == b and a
    # the committed artifact is the ordinary cache: a single-pass retriever reuses it
    again = DenseRetriever(str(tiny.bi_encoder), **common)
    calls = again.encode_calls
    reused = again.index(corpus)
    assert again.encode_calls == calls and reused.cache_path == sharded.cache_path
    assert not Path(f"{sharded.cache_path}.partial").exists()


def test_sharded_encode_without_cache_uses_a_temporary_memmap(tiny, tmp_path):
    corpus, queries = _corpus(50), _queries(4)
    base = DenseRetriever(str(tiny.bi_encoder), device="cpu", cache=False, chunk=16)
    tmp = DenseRetriever(str(tiny.bi_encoder), device="cpu", cache=False, chunk=16, shard_docs=10)
    a, b = base.index(corpus), tmp.index(corpus)
    assert isinstance(b.embeddings, np.memmap)
    assert _trec(a.search(queries, 5), tmp_path / "a") == _trec(
        b.search(queries, 5), tmp_path / "b"
    )


def test_shard_size_rounds_to_whole_encode_calls():
    assert dense_sharded.shard_size(40, 16) == 48
    assert dense_sharded.shard_size(1, 7) == 7
    assert dense_sharded.shard_size(64, 32) == 64
    assert dense_sharded.shard_size(5, 0) == 5


_KILLED = textwrap.dedent(
    """
    import os, signal, sys
    sys.path.insert(0, {tests!r})
    from nuggetbench.data import InMemoryCorpus
    from nuggetbench.retrieval.dense.retriever import DenseRetriever
    from retrieval_tiny_models import texts
    corpus = InMemoryCorpus.from_dict({{f"d{{i:04d}}": t for i, t in enumerate(texts({n}, seed=5))}})
    r = DenseRetriever({model!r}, device="cpu", chunk=10, shard_docs=20)
    real = r._encode_docs
    calls = []
    def encode(texts, batch_size):
        calls.append(len(texts))
        if len(calls) == {kill_at}:  # mid-shard: 5 shards done, the 6th half encoded
            os.kill(os.getpid(), signal.SIGKILL)
        return real(texts, batch_size)
    r._encode_docs = encode
    r.index(corpus)
    """
)


def test_killed_encode_resumes_unfinished_shards_only(tiny, tmp_path):
    n, model = 137, str(tiny.bi_encoder)  # shards of 20 docs = 2 calls of 10: 7 shards
    code = _KILLED.format(tests=str(TESTS), n=n, model=model, kill_at=12)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS.parent / "src"), str(TESTS)])}
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, timeout=300)
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()[-2000:]

    corpus = InMemoryCorpus.from_dict({f"d{i:04d}": t for i, t in enumerate(texts(n, seed=5))})
    r = DenseRetriever(model, device="cpu", chunk=10, shard_docs=20)
    key = r._corpus_key(corpus, corpus.doc_ids(), drop=("query_prompt", "objective", "faiss"))
    work = dense_sharded.partial_folder(
        dense_sharded.Artifact("embeddings/dense", key, label=model)
    )
    assert sorted(p.name for p in work.glob("*.done")) == [f"shard-{i:05d}.done" for i in range(5)]

    seen: list[int] = []
    real = r._encode_docs

    def spy(texts_, batch_size):
        seen.append(len(texts_))
        return real(texts_, batch_size)

    r._encode_docs = spy
    resumed = r.index(corpus)
    assert sum(seen) == n - 5 * 20 and len(seen) == 4  # shard 5 (2 calls) and shard 6 (17 docs)
    assert not work.exists()
    fresh = DenseRetriever(model, device="cpu", chunk=10, cache=False).index(corpus)
    assert np.array_equal(np.asarray(resumed.embeddings), np.asarray(fresh.embeddings))


def test_partial_folder_of_another_layout_is_discarded(tiny):
    corpus = _corpus(30)
    r = DenseRetriever(str(tiny.bi_encoder), device="cpu", chunk=10, shard_docs=10)
    key = r._corpus_key(corpus, corpus.doc_ids(), drop=("query_prompt", "objective", "faiss"))
    art = dense_sharded.Artifact("embeddings/dense", key, label=str(tiny.bi_encoder))
    work = dense_sharded.partial_folder(art)
    work.mkdir(parents=True)
    (work / "partial.json").write_text('{"n": 30, "dim": 32, "dtype": "float32", "shard_docs": 20}')
    (work / "embeddings.npy").write_bytes(b"garbage")
    (work / "shard-00000.done").touch()
    index = r.index(corpus)
    fresh = DenseRetriever(str(tiny.bi_encoder), device="cpu", chunk=10, cache=False).index(corpus)
    assert np.array_equal(np.asarray(index.embeddings), np.asarray(fresh.embeddings))


def test_sharded_progress_bar_counts_documents(tiny, capsys):
    DenseRetriever(str(tiny.bi_encoder), device="cpu", shard_docs=8, batch_size=4).index(
        _corpus(25), show_progress=True
    )
    err = capsys.readouterr().err
    assert "encoding corpus" in err and "25/25" in err and "doc/s" in err


def test_faiss_flat_ranks_as_exact_search(tiny):
    pytest.importorskip("faiss")
    corpus, queries = _corpus(400, seed=11), _queries(30)
    exact = DenseRetriever(str(tiny.bi_encoder), device="cpu").index(corpus).search(queries, 20)
    flat_r = DenseRetriever(str(tiny.bi_encoder), device="cpu", index="flat", doc_block=50)
    flat = flat_r.index(corpus).search(queries, 20)
    assert flat.metadata["faiss"] == "Flat" and flat.metadata["index"] == "flat"
    for q in queries:
        assert flat.doc_ids(q) == exact.doc_ids(q)
        np.testing.assert_allclose(
            [s for _, s in flat[q]], [s for _, s in exact[q]], rtol=0, atol=1e-6
        )
    assert recall_against_exact(flat, exact, 20) == 1.0


def test_faiss_flat_cuts_ties_in_trec_order(tiny):
    pytest.importorskip("faiss")
    base = texts(30, seed=4)
    # 12 copies of one text: identical vectors, tied scores; trec_eval keeps larger ids first
    docs = {f"d{i:02d}": t for i, t in enumerate(base)} | {f"x{i:02d}": base[0] for i in range(12)}
    corpus, queries = InMemoryCorpus.from_dict(docs), Queries({"q": base[0]})
    exact = DenseRetriever(str(tiny.bi_encoder), device="cpu").index(corpus).search(queries, 5)
    flat = DenseRetriever(str(tiny.bi_encoder), device="cpu", index="flat").index(corpus)
    got = flat.search(queries, 5)
    assert exact.doc_ids("q") == ["x11", "x10", "x09", "x08", "x07"]
    assert got.doc_ids("q") == exact.doc_ids("q")


@pytest.mark.parametrize("kind", ["ivf", "hnsw"])
def test_approximate_indexes_report_recall_against_exact(tiny, kind):
    pytest.importorskip("faiss")
    corpus, queries = _corpus(600, seed=12), _queries(40)
    exact = DenseRetriever(str(tiny.bi_encoder), device="cpu").index(corpus).search(queries, 10)
    wide = dict(nlist=16, nprobe=16) if kind == "ivf" else dict(ef_search=600)
    narrow = dict(nlist=16, nprobe=1) if kind == "ivf" else dict(hnsw_m=2, ef_search=1)
    full = DenseRetriever(str(tiny.bi_encoder), device="cpu", index=kind, **wide)
    approx = DenseRetriever(str(tiny.bi_encoder), device="cpu", index=kind, **narrow)
    r_full = recall_against_exact(full.index(corpus).search(queries, 10), exact, 10)
    r_approx = recall_against_exact(approx.index(corpus).search(queries, 10), exact, 10)
    assert r_full >= 0.99  # every list probed / a search as wide as the corpus
    assert 0.0 < r_approx < r_full


def test_recall_against_exact_by_hand():
    exact = Run.from_ranked_lists({"a": ["1", "2", "3"], "b": ["4", "5"], "c": []})
    approx = Run.from_ranked_lists({"a": ["1", "9", "3"], "b": ["6"]})
    assert recall_against_exact(approx, exact, 2) == pytest.approx((1 / 2 + 0 / 2) / 2)
    assert recall_against_exact(approx, exact, 3) == pytest.approx((2 / 3 + 0) / 2)


def test_index_option_spec_and_factories(tiny):
    r = parse_retriever(f"dense:{tiny.bi_encoder},index=ivf,nlist=8,nprobe=2")
    assert r.options["index"] == "ivf" and "index=ivf" in r.name
    assert faiss_factory(r.options, 1000) == "IVF8,Flat"
    r = parse_retriever(f"dense:{tiny.bi_encoder},index=ivf")
    assert faiss_factory(r.options, 10000) == "IVF400,Flat"
    assert faiss_factory(r.options, 3) == "IVF3,Flat"
    r = parse_retriever(f"dense:{tiny.bi_encoder},index=hnsw,hnsw_m=16")
    assert faiss_factory(r.options, 10) == "HNSW16"
    with pytest.raises(SpecError, match="index"):
        parse_retriever(f"dense:{tiny.bi_encoder},index=annoy")
    # the default identity (run cache keys) carries no index field
    plain = parse_retriever(f"dense:{tiny.bi_encoder}")
    assert "index" not in plain.identity() and "nprobe" not in plain.identity()
    assert r.identity()["index"] == "hnsw"
