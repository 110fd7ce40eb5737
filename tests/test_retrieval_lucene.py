"""``bm25:backend=lucene``: our Lucene backend against Pyserini called directly on the same index.

The reference is Pyserini's own ``LuceneSearcher`` (every matching document, ordered here by
trec_eval's rule and cut to k) and, for the index, Anserini's ``IndexCollection`` (what
``python -m pyserini.index.lucene --collection JsonCollection`` runs) over the same JSON lines.
Skips when Pyserini or Java is absent, except the checks that need neither.
"""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from nuggetbench.data import Document, InMemoryCorpus, Queries, write_run
from nuggetbench.errors import InputError, ModelError, SpecError
from nuggetbench.retrieval import parse_retriever
from nuggetbench.retrieval.bm25 import lucene
from nuggetbench.retrieval.bm25.retriever import BM25


@pytest.fixture(scope="module")
def api():
    if not lucene.lucene_available():
        pytest.skip("Pyserini is not installed (pip install 'nuggetbench[lucene]')")
    try:
        return lucene.pyserini_api()
    except ModelError as exc:
        pytest.skip(f"Lucene cannot start here: {exc}")


WORDS = [
    "protein", "cells", "gene", "cancer", "virus", "immune", "brain", "heart", "blood", "risk",
    "study", "patients", "therapy", "mutation", "expression", "tumour", "dose", "trial", "mice",
    "signal", "running", "runs", "the", "and", "of", "receptor", "growth", "factor", "insulin",
]  # fmt: skip


def random_corpus(seed: int, n: int = 160) -> InMemoryCorpus:
    """Random titles and texts over a small vocabulary, with 45 identical documents (ties deeper
    than the search margin of 32) and a few empty titles."""
    rng = random.Random(seed)
    docs = []
    for i in range(n):
        title = " ".join(rng.choices(WORDS, k=rng.randint(0, 4)))
        text = " ".join(rng.choices(WORDS, k=rng.randint(3, 30)))
        docs.append(Document(f"doc{rng.randint(0, 10**6):07d}-{i}", text, title))
    for j in range(45):
        docs.append(Document(f"twin{j:03d}", "zygote quorum signal", "zygote"))
    rng.shuffle(docs)
    return InMemoryCorpus(docs)


def random_queries(seed: int, n: int = 25) -> Queries:
    rng = random.Random(seed + 1)
    texts = {f"q{i}": " ".join(rng.choices(WORDS, k=rng.randint(1, 5))) for i in range(n)}
    texts["q-twins"] = "zygote quorum"
    texts["q-nothing"] = "zebra"
    return Queries(texts)


def direct_trec(api, index_path, queries, k, k1, b, fields, tag) -> str:
    """TREC text of Pyserini's own LuceneSearcher.search, one query at a time, in trec_eval's
    order (score descending, doc id descending)."""
    searcher = api.LuceneSearcher(str(index_path))
    searcher.set_bm25(k1, b)
    lines = []
    for qid in sorted(queries):
        hits = searcher.search(queries[qid], k=k, fields=fields)
        pairs = sorted(((h.score, h.docid) for h in hits), reverse=True)
        lines += [f"{qid} Q0 {d} {r} {s!r} {tag}\n" for r, (s, d) in enumerate(pairs, 1)]
    searcher.close()
    return "".join(lines)


@pytest.mark.parametrize("layout", ["flat", "multifield"])
def test_run_equals_direct_pyserini_search(api, tmp_path, layout):
    corpus, queries = random_corpus(3), random_queries(3)
    retriever = BM25(backend="lucene", fields=layout, k1=0.9, b=0.4)
    index = retriever.index(corpus)
    run = index.search(queries, 7)
    ours = write_run(run, tmp_path / "ours.trec", tag="t").read_bytes()
    fields = {"contents": 1.0, "title": 1.0} if layout == "multifield" else {}
    ref = direct_trec(api, index.path, queries, 7, 0.9, 0.4, fields, "t").encode()
    assert ours == ref
    # the 45 twins tie in Lucene; Anserini keeps the lowest ids and spreads their scores by
    # 1e-6 from the 1e-4-rounded score, so trec_eval's order of the run is Pyserini's
    twins = run.to_dict()["q-twins"]
    assert sorted(twins) == [f"twin{j:03d}" for j in range(7)]
    f32 = np.float32
    top = f32(max(twins.values()))
    assert f32(round(float(top) * 1e4)) / f32(1e4) == top  # rounded to 1e-4 in float32
    for j in range(7):
        assert f32(twins[f"twin{j:03d}"]) == f32(top - f32(1e-6) * f32(j))
    assert list(run.to_dict()["q-twins"]) == [f"twin{j:03d}" for j in range(7)]
    assert "q-nothing" not in run.query_ids  # matches nothing: absent, as from a TREC file


@pytest.mark.parametrize("layout", ["flat", "multifield"])
def test_index_equals_pyserini_index_collection(api, tmp_path, layout):
    """Pyserini's command-line indexer (IndexCollection over a JsonCollection folder) gives the
    same index statistics, hence the same run, as our batched LuceneIndexer."""
    from jnius import autoclass

    corpus, queries = random_corpus(5), random_queries(5)
    folder = tmp_path / "collection"
    folder.mkdir()
    with open(folder / "docs.jsonl", "w", encoding="utf-8") as fh:
        for doc in corpus.iter_documents():
            row = {"id": doc.doc_id, "contents": doc.text, "title": doc.title}
            if layout == "flat":
                row = {"id": doc.doc_id, "contents": f"{doc.title}\n{doc.text}"}
            fh.write(json.dumps(row) + "\n")
    args = ["-collection", "JsonCollection", "-input", str(folder), "-index", str(tmp_path / "ic")]
    args += ["-generator", "DefaultLuceneDocumentGenerator", "-threads", "1"]
    args += ["-fields", "title"] if layout == "multifield" else []
    autoclass("io.anserini.index.IndexCollection").main(args)
    fields = {"contents": 1.0, "title": 1.0} if layout == "multifield" else {}
    ref = direct_trec(api, tmp_path / "ic", queries, 10, 1.2, 0.75, fields, "t").encode()
    run = BM25(backend="lucene", fields=layout, k1=1.2, b=0.75).index(corpus).search(queries, 10)
    assert write_run(run, tmp_path / "ours.trec", tag="t").read_bytes() == ref


def test_store_reuses_the_index_and_rebuilds_for_another_corpus(api, monkeypatch):
    corpus = random_corpus(7)
    queries = random_queries(7)
    first = BM25(backend="lucene").index(corpus)
    assert not first.from_cache
    built = []
    real = lucene._index_into
    monkeypatch.setattr(lucene, "_index_into", lambda *a, **k: built.append(1) or real(*a, **k))
    # other k1/b and another spelling reuse the same index (BM25 parameters are search-time)
    again = parse_retriever("bm25:preset=lucene-flat").index(corpus)
    assert again.from_cache and again.path == first.path and not built
    assert again.search(queries, 5).to_dict() != first.search(queries, 5).to_dict()
    changed = InMemoryCorpus([*corpus.values(), Document("extra", "insulin gene", "")])
    other = BM25(backend="lucene").index(changed)
    assert not other.from_cache and other.path != first.path and built == [1]
    multi = BM25(backend="lucene", fields="multifield").index(corpus)
    assert not multi.from_cache and built == [1, 1]
    assert not list(first.path.parent.parent.glob("*.tmp"))  # no staging folder left


def test_failed_build_leaves_nothing(api, monkeypatch):
    corpus = random_corpus(9)

    def boom(doc, layout):
        raise RuntimeError("killed")

    with monkeypatch.context() as patch:  # undoes only this patch, not the test's home
        patch.setattr(lucene, "_json_line", boom)
        with pytest.raises(RuntimeError, match="killed"):
            BM25(backend="lucene").index(corpus)
    index = BM25(backend="lucene").index(corpus)
    assert not index.from_cache
    assert [p.name for p in index.path.parent.parent.iterdir()] == [index.path.parent.name]


def test_bad_inputs(api):
    with pytest.raises(InputError, match="empty corpus"):
        BM25(backend="lucene").index(InMemoryCorpus([]))
    blank = InMemoryCorpus([Document("a", "", ""), Document("b", "  ", "")])
    with pytest.raises(InputError, match="indexed none"):
        BM25(backend="lucene", cache=False).index(blank)
    index = BM25(backend="lucene", cache=False).index(random_corpus(1, n=20))
    with pytest.raises(SpecError, match="doc_filter"):
        index.search(random_queries(1), 5, doc_filter={"q0": ["twin001"]})
    with pytest.raises(Exception, match="k"):
        index.search(random_queries(1), 0)


def test_spec_checks_need_no_java(monkeypatch):
    with pytest.raises(SpecError, match="bm25s backend"):
        BM25(backend="lucene", stemmer="porter")
    with pytest.raises(SpecError, match="bm25s backend"):
        BM25(backend="lucene", method="bm25+")
    with pytest.raises(SpecError, match="backend=lucene"):
        BM25(fields="multifield")
    from dataclasses import replace

    from nuggetbench.retrieval.bm25 import retriever

    missing = replace(retriever.ENGINES["lucene"], available=lambda: False)
    monkeypatch.setitem(retriever.ENGINES, "lucene", missing)
    with pytest.raises(SpecError, match=r"nuggetbench\[lucene\]"):
        parse_retriever("bm25:backend=lucene")


def test_names_and_presets():
    if not lucene.lucene_available():
        pytest.skip("Pyserini is not installed")
    flat = parse_retriever("bm25:preset=lucene-flat")
    assert (flat.k1, flat.b, flat.backend, flat.fields) == (0.9, 0.4, "lucene", "flat")
    assert flat.name == "bm25:k1=0.9,b=0.4,backend=lucene"
    multi = parse_retriever("bm25:preset=lucene-multifield")
    assert multi.name == "bm25:k1=0.9,b=0.4,backend=lucene,fields=multifield"
    assert parse_retriever("bm25:k1=0.9,b=0.4").name == "bm25:k1=0.9,b=0.4"


@pytest.mark.realdata
@pytest.mark.slow
@pytest.mark.parametrize(
    "preset,ndcg10,r100",
    # Anserini's docs/regressions/regressions-beir-v1.0.0-scifact.{flat,multifield}.md
    [("lucene-flat", 0.6789, 0.9253), ("lucene-multifield", 0.6647, 0.9076)],
)
def test_scifact_gives_pyserini_regression_numbers(api, shared_data, preset, ndcg10, r100):
    """Pyserini's published BEIR SciFact BM25 numbers, to their 4 decimals (trec_eval -c, the
    self hits removed as Anserini's -removeQuery), computed by pytrec_eval."""
    if not (shared_data / "beir" / "scifact" / "corpus.jsonl").exists():
        pytest.skip("beir/scifact is absent from the shared data")
    pytrec_eval = pytest.importorskip("pytrec_eval")
    from nuggetbench.datasets.beir import load_folder

    data = load_folder(shared_data / "beir" / "scifact", split="test", dataset_id="beir/scifact")
    run = parse_retriever(f"bm25:preset={preset}").index(data.corpus).search(data.queries, 100)
    run = data.postprocess_run(run)
    evaluator = pytrec_eval.RelevanceEvaluator(data.qrels.to_dict(), {"ndcg_cut.10", "recall.100"})
    per_query = evaluator.evaluate(run.to_dict())
    means = {
        m: float(np.mean([per_query.get(q, {}).get(m, 0.0) for q in data.qrels]))
        for m in ("ndcg_cut_10", "recall_100")
    }
    assert round(means["ndcg_cut_10"], 4) == ndcg10
    assert round(means["recall_100"], 4) == r100


def test_run_cache_key_names_the_engine(api, monkeypatch):
    from nuggetbench.retrieval.compose.caching import retriever_identity

    ident = retriever_identity(BM25(backend="lucene"))
    assert ident["engine"]["pyserini"] == api.pyserini_version
    assert ident["engine"]["anserini_jar"] == api.jar
    assert "engine" not in retriever_identity(BM25())  # bm25s run cache keys unchanged
    monkeypatch.setattr(lucene.importlib.metadata, "version", lambda name: "9.9.9")
    assert retriever_identity(BM25(backend="lucene")) != ident
