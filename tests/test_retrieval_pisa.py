"""``bm25:backend=pisa``: PISA's scores against its BM25 formula computed here with numpy, our
runs against bare pyterrier-pisa (``PisaIndex.index`` + ``PisaIndex.bm25``) on the same corpus,
the cut at the k-th score by doc id, and the two cached artifacts.

Skips when pyterrier-pisa is absent, except the checks of the spec that need none.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from nuggetbench.data import Document, InMemoryCorpus, Queries, write_run
from nuggetbench.errors import InputError, SpecError
from nuggetbench.retrieval import parse_retriever
from nuggetbench.retrieval.bm25 import pisa, pisa_engine
from nuggetbench.retrieval.bm25.retriever import BM25


@pytest.fixture(scope="module")
def engine():
    if not pisa_engine.pisa_available():
        pytest.skip("pyterrier-pisa is not installed (pip install 'nuggetbench[pisa]')")
    return pisa_engine.pisathon()


WORDS = [
    "protein", "cells", "gene", "cancer", "virus", "immune", "brain", "heart", "blood", "risk",
    "study", "patients", "therapy", "mutation", "expression", "tumour", "dose", "trial", "mice",
    "signal", "receptor", "growth", "factor", "insulin", "the", "and", "of",
]  # fmt: skip


def random_corpus(seed: int, n: int = 150, twins: int = 45) -> InMemoryCorpus:
    """Lower-case words (PISA's tokenizer keeps them whole), a few empty documents, one word
    ("common") in most documents (its IDF is floored), and *twins* identical documents."""
    rng = random.Random(seed)
    docs = []
    for i in range(n):
        title = " ".join(rng.choices(WORDS, k=rng.randint(0, 3)))
        words = rng.choices(WORDS, k=rng.randint(0, 40))
        if rng.random() < 0.8:
            words.append("common")
        docs.append(Document(f"doc{rng.randint(0, 10**6):07d}-{i}", " ".join(words), title))
    for j in range(twins):
        docs.append(Document(f"twin{j:03d}", "zygote quorum signal", "zygote"))
    rng.shuffle(docs)
    return InMemoryCorpus(docs)


def random_queries(seed: int, n: int = 30) -> Queries:
    rng = random.Random(seed + 1)
    texts = {f"q{i}": " ".join(rng.choices(WORDS, k=rng.randint(1, 5))) for i in range(n)}
    texts.update({"q-twins": "zygote quorum", "q-common": "common gene", "q-none": "zebra"})
    texts["q-repeat"] = "gene gene gene cancer"  # a term counts once (query_weighted=False)
    return Queries(texts)


def formula_scores(
    corpus: InMemoryCorpus, query: str, k1: float, b: float, stop: set[str]
) -> dict[str, float]:
    """PISA's BM25 (``include/pisa/scorer/bm25.hpp``, wand_data's ``norm_len``) in float32:
    ``max(1e-6, ln((N - df + .5) / (df + .5))) * (1 + k1) * tf / (tf + k1 * (1 - b + b *
    len / avgdl))`` over the distinct non-stop query terms; ``len`` counts stop words."""
    f32 = np.float32
    docs = list(corpus.iter_documents())
    tokens = [d.full_text.split() for d in docs]
    lengths = np.array([len(t) for t in tokens], dtype=np.float64)
    n = len(docs)
    avgdl = f32(lengths.sum() / float(n))  # float(collection_len / double(num_docs))
    norm = lengths.astype(np.float32) / avgdl
    k1, b = f32(k1), f32(b)
    total = np.zeros(n, dtype=np.float32)
    matched = np.zeros(n, dtype=bool)
    for term in dict.fromkeys(query.split()):
        if term in stop:
            continue
        tf = np.array([t.count(term) for t in tokens], dtype=np.float32)
        df = f32((tf > 0).sum())
        if df == 0:
            continue
        idf = np.log((f32(n) - df + f32(0.5)) / (df + f32(0.5)), dtype=np.float32)
        weight = max(f32(1e-6), idf) * (f32(1) + k1)
        part = weight * (tf / (tf + k1 * (f32(1) - b + b * norm)))
        total = np.where(tf > 0, total + part, total)
        matched |= tf > 0
    return {docs[i].doc_id: float(total[i]) for i in np.flatnonzero(matched)}


@pytest.mark.parametrize(
    "k1,b,stopwords,algorithm",
    [
        (0.9, 0.4, "none", "ranked_or"),
        (1.5, 0.75, "en", "block_max_wand"),
        (1.2, 1.0, "lucene", "maxscore"),
    ],
)
def test_scores_equal_the_pisa_formula_computed_with_numpy(engine, k1, b, stopwords, algorithm):
    corpus, queries = random_corpus(1), random_queries(1)
    retriever = BM25(
        backend="pisa", k1=k1, b=b, stemmer="none", stopwords=stopwords, algorithm=algorithm
    )
    run = retriever.index(corpus).search(queries, len(corpus)).to_dict()
    stop = set(pisa_engine.stop_list(stopwords))
    floored = 0
    for qid in queries:
        want = formula_scores(corpus, queries[qid], k1, b, stop)
        got = run.get(qid, {})
        assert set(got) == set(want), qid  # exactly the documents holding a query term
        ids = sorted(want)
        np.testing.assert_allclose(
            [got[d] for d in ids], [want[d] for d in ids], rtol=2e-6, atol=1e-9, err_msg=qid
        )
        floored += any(v < 1e-4 for v in want.values())
    # "common" (in most documents) was scored with the floored IDF, where Lucene's
    # ln(1 + (N - df + .5) / (df + .5)) would give more than 0.1: the formulas differ here
    assert floored
    assert "q-none" not in run


def full_ranking_cut(full: dict[str, float], k: int) -> list[tuple[str, float]]:
    """The top *k* of every scored document by (score descending, doc id descending)."""
    return sorted(full.items(), key=lambda p: (p[1], p[0]), reverse=True)[:k]


@pytest.mark.parametrize("algorithm", ["ranked_or", "block_max_wand", "maxscore", "wand"])
def test_cut_at_k_is_score_then_doc_id_descending(engine, algorithm):
    """Each run at depth k is the whole ranking cut by (score, doc id) descending: exactly for
    ranked_or (which sums a document's term scores in query order at every depth); for the
    pruning algorithms, whose sums may differ in the last bit between depths, the scores agree
    within float32 precision and the 45 twins (two-term query: exact ties) are cut by doc id."""
    corpus, queries = random_corpus(2), random_queries(2)
    index = BM25(backend="pisa", k1=0.9, b=0.4, algorithm=algorithm).index(corpus)
    full = index.search(queries, len(corpus)).to_dict()
    for k in (1, 7, 20):
        run = index.search(queries, k)
        got = run.to_dict()
        assert run.metadata["ties_searched_deeper"] >= 1  # the twins tie across every k
        for qid, scores in full.items():
            want = full_ranking_cut(scores, k)
            mine = sorted(got[qid].items(), key=lambda p: (p[1], p[0]), reverse=True)
            if algorithm == "ranked_or":
                assert mine == want
            else:
                np.testing.assert_allclose([s for _, s in mine], [s for _, s in want], rtol=1e-6)
        assert sorted(got["q-twins"]) == [f"twin{j:03d}" for j in range(45 - k, 45)]


def test_run_equals_bare_pyterrier_pisa(engine, tmp_path):
    """pyterrier-pisa's own PisaIndex (indexing real doc ids through its FIFO) and PisaRetrieve
    score every (query, document) pair as our backend does, bit for bit."""
    pd = pytest.importorskip("pandas")
    pyterrier_pisa = pytest.importorskip("pyterrier_pisa")
    corpus, queries = random_corpus(3), random_queries(3)
    bare = pyterrier_pisa.PisaIndex(
        str(tmp_path / "bare"), text_field="text", stemmer="porter2", stops="terrier"
    )
    bare.index({"docno": d.doc_id, "text": d.full_text} for d in corpus.iter_documents())
    frame = pd.DataFrame({"qid": list(queries), "query": [queries[q] for q in queries]})
    ref = bare.bm25(k1=0.9, b=0.4, num_results=len(corpus)).transform(frame)
    want: dict[str, dict[str, float]] = {}
    for row in ref.itertuples():
        want.setdefault(row.qid, {})[row.docno] = float(row.score)
    ours = parse_retriever("bm25:preset=pisa").index(corpus).search(queries, len(corpus))
    assert ours.to_dict() == want


def test_store_reuses_the_index_and_rescores_for_other_k1_b(engine, monkeypatch):
    corpus, queries = random_corpus(4), random_queries(4)
    first = BM25(backend="pisa").index(corpus)
    assert not first.from_cache
    built = []
    real = pisa.index_into
    monkeypatch.setattr(pisa, "index_into", lambda *a, **k: built.append(1) or real(*a, **k))
    again = parse_retriever("bm25:backend=pisa,algorithm=maxscore").index(corpus)
    assert again.from_cache and again.path == first.path and not built
    other = BM25(backend="pisa", k1=0.9, b=0.4).index(corpus)  # re-scored, not re-indexed
    assert other.from_cache and other.path != first.path and not built
    assert other.search(queries, 5).to_dict() != first.search(queries, 5).to_dict()
    changed = InMemoryCorpus([*corpus.values(), Document("extra", "insulin gene", "")])
    assert not BM25(backend="pisa").index(changed).from_cache and built == [1]
    assert not BM25(backend="pisa", stemmer="krovetz").index(corpus).from_cache and built == [1, 1]
    store = first.path.parents[1]
    assert not [p for p in store.rglob("*") if p.name.endswith(".tmp")]  # no staging left


def test_failed_build_leaves_nothing(engine, monkeypatch):
    corpus = random_corpus(5)

    def boom(corpus, doc_ids):
        yield 1, "0 first document\n"
        raise RuntimeError("killed")

    with monkeypatch.context() as patch:
        patch.setattr(pisa_engine, "_document_lines", boom)
        with pytest.raises(RuntimeError, match="killed"):
            BM25(backend="pisa").index(corpus)
    index = BM25(backend="pisa").index(corpus)
    assert not index.from_cache
    store = index.path.parents[1]
    assert sorted(p.name for p in store.iterdir()) == ["bm25", "index"]
    assert len(list((store / "index").iterdir())) == 1


def test_bad_inputs(engine, tmp_path):
    with pytest.raises(InputError, match="empty corpus"):
        BM25(backend="pisa").index(InMemoryCorpus([]))
    blank = InMemoryCorpus([Document("a", "", ""), Document("b", "  ... ", "")])
    with pytest.raises(InputError, match="indexable term"):
        BM25(backend="pisa", cache=False).index(blank)
    index = BM25(backend="pisa", cache=False).index(random_corpus(6, n=20))
    with pytest.raises(SpecError, match="doc_filter"):
        index.search(random_queries(6), 5, doc_filter={"q0": ["twin001"]})
    with pytest.raises(InputError, match="k"):
        index.search(random_queries(6), 0)
    odd = Queries({"nul": "gene\x00cancer", "surrogate": "gene \udc80 cancer"})
    got = index.search(odd, 5).to_dict()
    assert (
        got["nul"]
        == got["surrogate"]
        == index.search(Queries({"q": "gene cancer"}), 5).to_dict()["q"]
    )
    expanded = index.search(Queries({"q": "zygote"}), 50, objective="gene").to_dict()["q"]
    assert any(not d.startswith("twin") for d in expanded)  # the objective's term is searched
    run = index.search(random_queries(6), 5)
    assert run.metadata["params"]["algorithm"] == "block_max_wand"
    entries = sum(len(v) for v in run.to_dict().values())
    assert write_run(run, tmp_path / "run.trec").read_text().count("\n") == entries


def test_spec_checks_need_no_pisa(monkeypatch):
    with pytest.raises(SpecError, match="krovetz"):
        BM25(backend="pisa", stemmer="porter")
    with pytest.raises(SpecError, match="method=bm25"):
        BM25(backend="pisa", method="bm25+")
    with pytest.raises(SpecError, match="stopwords=terrier is a value of backend=pisa only"):
        BM25(stopwords="terrier")
    with pytest.raises(SpecError, match="algorithm=maxscore is an option of backend=pisa"):
        parse_retriever("bm25:algorithm=maxscore")
    monkeypatch.setattr(pisa_engine, "pisa_available", lambda: False)
    with pytest.raises(SpecError, match=r"nuggetbench\[pisa\]"):
        parse_retriever("bm25:backend=pisa")


def test_names_presets_and_params():
    if not pisa_engine.pisa_available():
        pytest.skip("pyterrier-pisa is not installed")
    preset = parse_retriever("bm25:preset=pisa")
    assert preset.name == "bm25:k1=0.9,b=0.4,backend=pisa,stopwords=terrier"
    assert parse_retriever("bm25:backend=pisa,stemmer=porter2").name == "bm25:backend=pisa"
    params = parse_retriever("bm25:backend=pisa,algorithm=maxscore,encoding=ef").params
    assert params == {
        "k1": 1.5,
        "b": 0.75,
        "backend": "pisa",
        "stemmer": "english",
        "stopwords": "en",
        "algorithm": "maxscore",
        "encoding": "ef",
    }
    assert parse_retriever(preset.name).params == preset.params
