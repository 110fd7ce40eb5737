"""BM25 on a tiny inline corpus: hand-computed scores, ties, depth, doc_filter, the index cache."""

from __future__ import annotations

import json
import math

import pytest

from nuggetbench.data import Document, InMemoryCorpus, Queries
from nuggetbench.errors import InputError
from nuggetbench.retrieval import Index, Retriever
from nuggetbench.retrieval.bm25.retriever import BM25

DOCS = {
    "d1": ("", "apple banana apple"),
    "d2": ("", "banana cherry"),
    "d3": ("", "cherry cherry cherry date"),
    "d4": ("", "eggplant"),
    "d5": ("fig", "grape"),
}


def corpus(docs=DOCS) -> InMemoryCorpus:
    return InMemoryCorpus([Document(d, text, title) for d, (title, text) in docs.items()])


def plain(**kw) -> BM25:
    """No stemming, no stop words: tokens are the lower-cased words of two letters or more."""
    return BM25(**{"stemmer": "none", "stopwords": "none", **kw})


def lucene_scores(docs, query, k1=1.5, b=0.75):
    """Hand formula, Lucene's BM25 as in Kamphuis et al. (ECIR 2020), 'Lucene (accurate)'.

    idf = ln(1 + (N - df + 0.5) / (df + 0.5)); tf part = tf / (tf + k1 (1 - b + b |d| / avgdl)).
    """
    toks = {d: f"{t} {x}".lower().split() for d, (t, x) in docs.items()}
    n = len(toks)
    avgdl = sum(len(t) for t in toks.values()) / n
    out = {}
    for d, words in toks.items():
        score = 0.0
        for term in query.lower().split():
            df = sum(term in w for w in toks.values())
            tf = words.count(term)
            if tf:
                idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
                score += idf * tf / (tf + k1 * (1 - b + b * len(words) / avgdl))
        if score > 0:
            out[d] = score
    return out


def test_protocols():
    r = plain()
    assert isinstance(r, Retriever)
    assert isinstance(r.index(corpus()), Index)


@pytest.mark.parametrize("k1,b", [(1.5, 0.75), (0.9, 0.4), (1.2, 1.0)])
def test_scores_match_the_hand_formula(k1, b):
    queries = Queries({"q1": "apple cherry", "q2": "banana", "q3": "fig grape"})
    run = plain(k1=k1, b=b).index(corpus()).search(queries, 10)
    for qid, text in queries.items():
        expected = lucene_scores(DOCS, text, k1, b)
        got = dict(run[qid])
        assert set(got) == set(expected), qid  # only matching documents are returned
        for d, s in expected.items():
            assert got[d] == pytest.approx(s, rel=1e-5)
    order = sorted(lucene_scores(DOCS, "apple cherry", k1, b).items(), key=lambda x: -x[1])
    assert run.doc_ids("q1") == [d for d, _ in order]


def test_title_is_indexed():
    run = plain().index(corpus()).search(Queries({"q": "fig"}), 10)
    assert run.doc_ids("q") == ["d5"]


def test_ties_follow_trec_eval_doc_id_descending():
    docs = {
        "a": ("", "same words here"),
        "c": ("", "same words here"),
        "b": ("", "same words here"),
        "z": ("", "other text"),
    }
    run = plain().index(corpus(docs)).search(Queries({"q": "words"}), 10)
    ranked = run["q"]
    assert [d for d, _ in ranked] == ["c", "b", "a"]
    assert ranked[0][1] == ranked[1][1] == ranked[2][1]


def test_k_larger_than_the_corpus_and_k_cutoff():
    index = plain().index(corpus())
    run = index.search(Queries({"q": "banana cherry apple date"}), 1000)
    assert sorted(run.doc_ids("q")) == ["d1", "d2", "d3"]
    top1 = index.search(Queries({"q": "banana cherry apple date"}), 1)
    assert top1.doc_ids("q") == run.doc_ids("q")[:1]
    with pytest.raises(InputError):
        index.search(Queries({"q": "x"}), 0)


def test_query_without_known_terms_retrieves_nothing():
    run = (
        plain().index(corpus()).search(Queries({"q1": "unknownword", "q2": "a", "q3": "apple"}), 10)
    )
    assert list(run) == ["q3"]
    assert run.metadata["queries_without_known_terms"] == 2


def test_stemming_and_stopwords_defaults():
    docs = {"d1": ("", "the running dogs"), "d2": ("", "a cat sleeps")}
    run = BM25().index(corpus(docs)).search(Queries({"q": "dog runs", "s": "the"}), 10)
    assert run.doc_ids("q") == ["d1"]  # english stemmer: dogs -> dog, running/runs -> run
    assert "s" not in run  # 'the' is an English stop word
    no_stem = plain().index(corpus(docs)).search(Queries({"q": "dog runs"}), 10)
    assert "q" not in no_stem


def test_doc_filter_restricts_listed_queries_only():
    index = plain().index(corpus())
    queries = Queries({"q1": "banana cherry", "q2": "banana cherry"})
    full = index.search(queries, 10)
    filtered = index.search(queries, 10, doc_filter={"q1": ["d2", "d4", "missing-doc"]})
    # the whole pool is ranked: d4 matches nothing and comes last, at the no-match score
    assert filtered.doc_ids("q1") == ["d2", "d4"]
    assert dict(filtered["q1"])["d4"] < dict(filtered["q1"])["d2"]
    assert dict(filtered["q1"])["d2"] == dict(full["q1"])["d2"]  # same scores as unfiltered
    assert filtered["q2"] == full["q2"]  # not listed: unrestricted
    top1 = index.search(queries, 1, doc_filter={"q1": ["d1", "d2", "d3"]})
    assert top1.doc_ids("q1") == full.doc_ids("q1")[:1]
    empty = index.search(queries, 10, doc_filter={"q1": []})
    assert "q1" not in empty and "q2" in empty
    unknown_terms = index.search(Queries({"q1": "zzzz"}), 10, doc_filter={"q1": ["d2", "d1"]})
    assert unknown_terms.doc_ids("q1") == ["d2", "d1"]  # every candidate, ties by doc id desc


@pytest.mark.parametrize("method", ["bm25l", "bm25+", "robertson", "atire", "lucene"])
def test_methods_return_only_matching_documents(method):
    run = plain(method=method).index(corpus()).search(Queries({"q": "cherry"}), 10)
    assert sorted(run.doc_ids("q")) == ["d2", "d3"]
    assert run.doc_ids("q")[0] == "d3"
    filt = (
        plain(method=method)
        .index(corpus())
        .search(Queries({"q": "cherry"}), 10, doc_filter={"q": ["d1", "d2"]})
    )
    assert filt.doc_ids("q") == ["d2", "d1"]  # a pool is ranked whole; d1 matches nothing
    scores = dict(filt["q"])
    assert scores["d2"] > scores["d1"]


def test_run_metadata_and_name():
    run = plain(k1=0.9, b=0.4).index(corpus()).search(Queries({"q": "apple"}), 10)
    assert run.name == "bm25:k1=0.9,b=0.4,stemmer=none,stopwords=none"
    assert run.metadata["params"]["k1"] == 0.9 and run.metadata["index_from_cache"] is False


def test_empty_corpus_is_an_error():
    with pytest.raises(InputError):
        plain().index(InMemoryCorpus([]))


# --- the index cache -------------------------------------------------------------------------


def _forbid_indexing(monkeypatch):
    from nuggetbench.retrieval.bm25 import index

    def boom(*args, **kwargs):
        raise AssertionError("indexed again although the cache should have been used")

    monkeypatch.setattr(index, "build_matrix", boom)


def test_second_index_loads_the_cache(monkeypatch, _isolated_home):
    queries = Queries({"q1": "apple cherry", "q2": "fig"})
    first = plain().index(corpus())
    run1 = first.search(queries, 10)
    assert first.from_cache is False
    folders = list((_isolated_home / "cache" / "bm25").iterdir())
    assert len(folders) == 1
    meta = json.loads((folders[0] / "meta.json").read_text())
    assert meta["n_docs"] == 5 and meta["params"]["stemmer"] == "none"
    assert not list(folders[0].glob("*.pkl")) and not list(folders[0].glob("*.pickle"))
    _forbid_indexing(monkeypatch)
    second = plain().index(corpus())
    assert second.from_cache is True
    run2 = second.search(queries, 10)
    assert run2 == run1 and run2.metadata["index_from_cache"] is True


def test_cache_is_invalidated_by_corpus_and_parameters(monkeypatch, _isolated_home):
    from nuggetbench.retrieval.bm25 import index

    calls = []
    original = index.build_matrix

    def counting(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(index, "build_matrix", counting)
    plain().index(corpus())
    plain().index(corpus())
    assert len(calls) == 1
    changed = dict(DOCS, d4=("", "eggplant soup"))
    plain().index(corpus(changed))
    assert len(calls) == 2
    plain(k1=1.2).index(corpus())
    plain(stemmer="porter").index(corpus())
    plain(method="bm25+").index(corpus())
    assert len(calls) == 5
    plain(threads=1).index(corpus())  # does not change the results: cache hit
    assert len(calls) == 5
    assert len(list((_isolated_home / "cache" / "bm25").iterdir())) == 5


def test_cache_off_and_corrupt_cache(monkeypatch, _isolated_home):
    plain(cache=False).index(corpus())
    assert not list((_isolated_home).rglob("meta.json"))
    plain().index(corpus())
    (folder,) = list((_isolated_home / "cache" / "bm25").iterdir())
    (folder / "doc_ids.json").write_text("[broken", encoding="utf-8")
    index = plain().index(corpus())  # unreadable cache: re-indexed, not an error
    assert index.from_cache is False and len(index) == 5
    assert plain().index(corpus()).from_cache is True  # and the broken folder was replaced


def test_every_accepted_stopword_name_works_in_bm25s():
    import bm25s

    from nuggetbench.retrieval.bm25.retriever import STOPWORDS

    for name in STOPWORDS:
        value = [] if name == "none" else name
        bm25s.tokenize(["some text"], stopwords=value, show_progress=False)


@pytest.mark.slow
def test_numba_backend_gives_the_same_run():
    pytest.importorskip("numba")
    queries = Queries({"q1": "apple cherry", "q2": "banana", "q3": "nothing"})
    a = plain(backend="numpy", cache=False).index(corpus()).search(queries, 3)
    b = plain(backend="numba", threads=1, cache=False).index(corpus()).search(queries, 3)
    assert a == b


def test_objective_is_prepended_to_queries():
    from nuggetbench.data import InMemoryCorpus, Queries
    from nuggetbench.retrieval.bm25.retriever import BM25

    corpus = InMemoryCorpus.from_dict(
        {"a": "apples and pears", "b": "zebra stripes", "c": "unrelated words"}
    )
    index = BM25(cache=False).index(corpus)
    plain = index.search(Queries({"q": "apples"}), 3)
    assert plain.doc_ids("q") == ["a"]
    with_obj = index.search(Queries({"q": "apples"}), 3, objective="zebra")
    assert set(with_obj.doc_ids("q")) == {"a", "b"}
    assert with_obj.metadata["objective"] is True
