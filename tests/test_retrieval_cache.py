"""Embedding and run caches (retrieval.embcache): reuse, staleness, dimension changes, atomicity."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from nuggetbench import home
from nuggetbench.data import InMemoryCorpus, Queries, Run
from nuggetbench.errors import CacheError
from nuggetbench.retrieval.compose.caching import CachedRetriever, RunCache
from nuggetbench.retrieval.dense.retriever import DenseRetriever
from nuggetbench.retrieval.learned.sparse import SparseRetriever
from nuggetbench.retrieval.models import embcache
from nuggetbench.store import Artifact
from retrieval_tiny_models import HIDDEN, texts, tiny_models


@pytest.fixture(scope="session")
def tiny():
    return tiny_models()


def _corpus(n=25, seed=5, change=None):
    docs = {f"d{i}": t for i, t in enumerate(texts(n, seed=seed))}
    if change:
        docs.update(change)
    return InMemoryCorpus.from_dict(docs)


def _dense_dirs():
    root = home.home() / "cache" / "embeddings" / "dense"
    return sorted(p for p in root.iterdir() if not p.name.startswith(".")) if root.exists() else []


def test_second_run_loads_without_encoding_or_loading_the_model(tiny):
    corpus = _corpus()
    first = DenseRetriever(str(tiny.bi_encoder), device="cpu")
    emb1 = np.array(first.index(corpus).embeddings)
    assert first.encode_calls > 0 and len(_dense_dirs()) == 1
    meta = json.loads((_dense_dirs()[0] / "meta.json").read_text())
    assert (
        meta["dim"] == HIDDEN
        and meta["n"] == 25
        and meta["fields"]["corpus"] == corpus.fingerprint()
    )
    second = DenseRetriever(str(tiny.bi_encoder), device="cpu")
    index = second.index(corpus)
    assert second.encode_calls == 0 and second._model is None  # loaded from disk, model untouched
    assert isinstance(index.embeddings, np.memmap)
    np.testing.assert_array_equal(np.asarray(index.embeddings), emb1)
    run = index.search(Queries({"q": corpus["d3"].text}), 3)
    assert run.doc_ids("q")[0] == "d3"


def test_changed_corpus_or_parameter_never_reuses(tiny):
    DenseRetriever(str(tiny.bi_encoder), device="cpu").index(_corpus())
    changed = _corpus(change={"d4": "an entirely different text about coffee"})
    r = DenseRetriever(str(tiny.bi_encoder), device="cpu")
    r.index(changed)
    assert r.encode_calls > 0
    r2 = DenseRetriever(str(tiny.bi_encoder), device="cpu", max_length=8)
    r2.index(_corpus())
    assert r2.encode_calls > 0
    r3 = DenseRetriever(str(tiny.bi_encoder), device="cpu", with_title=False)
    r3.index(_corpus())
    assert r3.encode_calls > 0
    assert len(_dense_dirs()) == 4
    r4 = DenseRetriever(
        str(tiny.bi_encoder), device="cpu", batch_size=3
    )  # batch size is not a key field
    r4.index(_corpus())
    assert r4.encode_calls == 0


def test_edited_model_folder_changes_the_key(tiny, tmp_path):
    model = tmp_path / "m"
    shutil.copytree(tiny.bi_encoder, model)
    DenseRetriever(str(model), device="cpu").index(_corpus())
    cfg = json.loads((model / "sentence_bert_config.json").read_text())
    cfg["max_seq_length"] = 16
    (model / "sentence_bert_config.json").write_text(json.dumps(cfg))
    r = DenseRetriever(str(model), device="cpu")
    r.index(_corpus())
    assert r.encode_calls > 0


def test_embedding_size_change_is_detected(tiny, tmp_path, monkeypatch):
    """A model that changes under the same fingerprint (e.g. a hub revision not pinned) is caught."""
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.base.modules import Dense

    from nuggetbench.retrieval.dense import retriever as dense_mod

    model = tmp_path / "m"
    shutil.copytree(tiny.bi_encoder, model)
    real_resolve = dense_mod.resolve_model
    frozen = real_resolve(str(model))
    monkeypatch.setattr(dense_mod, "resolve_model", lambda name, **kw: frozen)
    DenseRetriever(str(model), device="cpu").index(_corpus())
    # replace the model by one producing 24-d embeddings
    st = SentenceTransformer(str(tiny.bi_encoder), device="cpu")
    torch.manual_seed(0)
    st.append(Dense(HIDDEN, 24))
    shutil.rmtree(model)
    st.save(str(model))
    index = DenseRetriever(str(model), device="cpu").index(_corpus())
    with pytest.raises(CacheError, match="dimension 32.*dimension 24"):
        index.search(Queries({"q": "cat"}), 3)


def test_inconsistent_cache_raises(tiny):
    corpus = _corpus()
    DenseRetriever(str(tiny.bi_encoder), device="cpu").index(corpus)
    folder = _dense_dirs()[0]
    np.save(folder / "embeddings.npy", np.zeros((25, 7), dtype=np.float32))
    with pytest.raises(CacheError, match="delete that folder"):
        DenseRetriever(str(tiny.bi_encoder), device="cpu").index(corpus)


def test_meta_with_other_fields_is_not_reused():
    art = Artifact("embeddings/test", {"a": 1}, label="x")
    with embcache.write_dense(art, 2, 3) as out:
        out[:] = 1.0
    assert embcache.load_dense(art, 2) is not None
    meta = json.loads((art.path / "meta.json").read_text())
    meta["fields"]["a"] = 2
    (art.path / "meta.json").write_text(json.dumps(meta))
    assert embcache.load_dense(art, 2) is None


def test_interrupted_build_leaves_nothing():
    art = Artifact("embeddings/test", {"b": 1}, label="x")
    with pytest.raises(RuntimeError), embcache.write_dense(art, 4, 2) as out:
        out[0] = 1.0
        raise RuntimeError("killed")
    assert not art.path.exists()
    assert not [p for p in art.path.parent.iterdir() if p.name.endswith(".tmp")]


def test_sparse_cache_round_trip(tiny):
    corpus = _corpus()
    a = SparseRetriever(str(tiny.sparse), device="cpu")
    m1 = a.index(corpus).matrix
    b = SparseRetriever(
        str(tiny.sparse), device="cpu", idf=True
    )  # idf is applied at query time only
    m2 = b.index(corpus).matrix
    assert b.encode_calls == 0 and b._model is None
    assert (m1 != m2).nnz == 0 and m1.shape == m2.shape


class _CountingRetriever:
    """A stand-in retriever counting index() and search() calls; it returns k docs per query."""

    def __init__(self, name="fake:x=1"):
        self.name = name
        self.params = {"x": 1, "name": name}
        self.indexed = 0
        self.searched = 0

    def index(self, corpus, *, show_progress=False):
        self.indexed += 1
        outer = self

        class _Index:
            name = outer.name

            def search(self, queries, k, *, doc_filter=None, show_progress=False):
                outer.searched += 1
                q = [x for x in queries for _ in range(k)]
                d = [f"d{i}" for _ in queries for i in range(k)]
                s = [float(k - i) for _ in queries for i in range(k)]
                return Run(q, d, s, name=outer.name, metadata={"k": k})

        return _Index()


class _FakeReranker:
    def __init__(self, depth):
        self.depth = depth
        self.name = f"flip@{depth}"

    def identity(self):
        return {"flip": self.depth}

    def rerank(self, queries, run, corpus, k, *, show_progress=False):
        q, d, s = [], [], []
        for qid in run:
            for doc, score in run[qid][:k]:
                q.append(qid)
                d.append(doc)
                s.append(-score)
        return Run(q, d, s, name=f"{run.name} >> {self.name}")


def test_run_cache_reuses_first_stage_without_indexing():
    corpus = _corpus(5)
    queries = Queries({"q1": "cat", "q2": "dog"})
    inner = _CountingRetriever()
    r1 = CachedRetriever(inner).index(corpus).search(queries, 10)
    assert inner.indexed == 1
    again = CachedRetriever(inner).index(corpus)
    r2 = again.search(queries, 10)
    assert inner.indexed == 1 and again.hits == 1
    assert r2 == r1 and r2.name == r1.name and r2.metadata["cached"] is True
    r3 = again.search(queries, 4)  # a shallower depth is served by truncating the deeper run
    assert again.hits == 2 and r3 == r1.truncate(4) and r3.metadata["cached_depth"] == 10
    again.search(queries, 20)  # deeper: a miss
    again.search(Queries({"q1": "cat"}), 10)  # other queries: a miss
    assert again.misses == 2 and inner.indexed == 2


def test_pipelines_and_fusions_share_a_first_stage():
    from nuggetbench.retrieval.compose.pipeline import Fusion, Pipeline

    corpus = _corpus(5)
    queries = Queries({"q1": "cat"})
    first = _CountingRetriever()
    Fusion([first, _CountingRetriever("other")], depth=30).index(corpus).search(queries, 10)
    assert first.searched == 1
    run = Pipeline(first, _FakeReranker(20)).index(corpus).search(queries, 5)
    assert first.searched == 1 and first.indexed == 1  # depth 20 served from the depth-30 run
    assert run.doc_ids("q1") == ["d19", "d18", "d17", "d16", "d15"]
    Pipeline(first, _FakeReranker(20), cache_runs=False).index(corpus).search(queries, 5)
    assert first.searched == 2


def test_depth_dependent_fusion_is_served_only_at_its_depth():
    from nuggetbench.retrieval.compose.pipeline import Fusion

    corpus = _corpus(5)
    queries = Queries({"q1": "cat"})
    f = Fusion([_CountingRetriever("a"), _CountingRetriever("b")])
    assert f.depth_dependent
    outer = CachedRetriever(f).index(corpus)
    outer.search(queries, 10)
    outer.search(queries, 5)
    assert outer.misses == 2 and outer.hits == 0
    outer.search(queries, 5)
    assert outer.hits == 1


def test_retrievers_without_identity_are_not_cached():
    class Anonymous(_CountingRetriever):
        def __init__(self):
            super().__init__("anon")
            del self.params

    corpus = _corpus(5)
    anon = Anonymous()
    for _ in range(2):
        CachedRetriever(anon).index(corpus).search(Queries({"q": "x"}), 3)
    assert (
        anon.searched == 2
        and not (home.home() / "cache" / "runs").exists()
        or not any((home.home() / "cache" / "runs").iterdir())
    )


def test_run_cache_keeps_empty_queries():
    from nuggetbench.retrieval.models.topk import with_empty_queries as _with_empty_queries

    run = _with_empty_queries(Run(["q1", "q1"], ["a", "b"], [2.0, 1.0], name="x"), ["q0"])
    cache = RunCache({"t": 1})
    cache.save(run, 2)
    back = cache.load(2)
    assert back.query_ids == ["q0", "q1"] and back["q0"] == [] and back == run
    assert cache.load(3) is None and cache.depths() == [2]
