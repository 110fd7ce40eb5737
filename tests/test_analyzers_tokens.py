"""Language-aware analyzers: CJK/Thai bigrams, combining marks, stemmers; BM25 on ja/zh corpora."""

from __future__ import annotations

import re

import pytest

from nuggetbench.data import Document, InMemoryCorpus, Queries
from nuggetbench.datasets.miracl import LANGUAGES as MIRACL
from nuggetbench.datasets.mmarco import LANGUAGES as MMARCO
from nuggetbench.errors import SpecError
from nuggetbench.retrieval.bm25.retriever import BM25
from nuggetbench.retrieval.spec import parse_retriever
from nuggetbench.text.analyzers import (
    LANGUAGES,
    adapt_to_language,
    analyzer_for_language,
    get_analyzer,
    normalize_language,
)


def test_every_miracl_and_mmarco_language_has_an_analyzer():
    # the tables come from the loaders; their sizes from the papers (MIRACL: 18, mMARCO: 14)
    assert len(set(MIRACL)) == 18 and len(set(MMARCO)) == 14
    for code in MIRACL:
        assert get_analyzer(code).name == code
    for name in MMARCO:
        code = normalize_language(name)
        assert code in LANGUAGES
        assert get_analyzer(name).name == code


def test_cjk_bigrams_as_lucene_cjk_analyzer():
    a = get_analyzer("cjk")
    # hand-made: overlapping bigrams over a run of Han characters
    assert a.analyze("東京都") == ["東京", "京都"]
    # a lone CJK character stays a unigram; Latin words are words
    assert a.analyze("山 hello") == ["hello", "山"]
    # Hiragana and Katakana join the run (CJKBigramFilter bigrams all four scripts)
    assert a.analyze("すしバー") == ["すし", "しバ", "バー"]
    # Hangul is bigrammed too, per space-separated word
    assert a.analyze("한국어 문장") == ["한국", "국어", "문장"]
    # NFKC folds full-width Latin (CJKWidthFilter)
    assert a.analyze("ＡＢＣ１２") == ["abc12"]


def test_thai_bigrams_keep_combining_marks_with_their_base():
    a = get_analyzer("th")
    # ไ ท ย are three base characters -> two bigrams
    assert a.analyze("ไทย") == ["ไท", "ทย"]
    # ก + SARA I (U+0E34, a combining mark) is one cluster, then น: a single bigram
    assert a.analyze("กิน") == ["กิน"]


def test_combining_marks_stay_inside_words():
    """Python's \\w stops at Devanagari vowel signs; the analyzers keep the word whole."""
    word = "हिन्दी"
    assert re.findall(r"\w+", word) != [word]  # the problem being fixed
    assert get_analyzer("standard").analyze(word) == [word]
    assert get_analyzer("te").analyze("తెలుగు భాష") == ["తెలుగు", "భాష"]


def test_language_stemmer_and_stop_words_follow_pystemmer():
    import Stemmer

    de = get_analyzer("german")
    # "die" and "der" are bm25s German stop words; the others go through Snowball's German
    expected = Stemmer.Stemmer("german").stemWords(["häuser", "städte"])
    assert de.analyze("Die Häuser der Städte") == expected
    assert expected == ["haus", "stadt"]
    fa = get_analyzer("fa")
    assert fa.stemmer == "persian"
    assert get_analyzer("sw").stemmer is None


def test_whitespace_analyzer_collapses_a_sentence():
    assert get_analyzer("whitespace").analyze("我喜欢北京 OK") == ["我喜欢北京", "ok"]


def test_tokenize_returns_bm25s_shapes():
    a = get_analyzer("cjk")
    lists = a.tokenize(["東京都", "京都"])
    assert lists == [["東京", "京都"], ["京都"]]
    tok = a.tokenize(["東京都", "京都"], return_ids=True)
    assert tok.vocab == {"東京": 0, "京都": 1}
    assert tok.ids == [[0, 1], [1]]


def test_unknown_analyzer_and_language():
    with pytest.raises(SpecError, match="unknown analyzer 'japanes'.*japanese"):
        get_analyzer("japanes")
    with pytest.raises(SpecError, match="unknown language"):
        normalize_language("klingon")
    with pytest.raises(SpecError, match="unknown analyzer"):
        parse_retriever("bm25:analyzer=nope")


def test_language_resolution():
    assert analyzer_for_language(None) is None
    assert analyzer_for_language("en") is None  # English keeps bm25s' tokenizer
    assert analyzer_for_language("Japanese") == "ja"
    assert analyzer_for_language("de-DE") == "de"


JA_DOCS = {
    "d1": "東京都の天気は晴れです",  # shares 天気 (weather) with the query
    "d2": "大阪の食べ物はおいしい",
    "d3": "京都で桜を見ました",
}
ZH_DOCS = {
    "d1": "我们今天去北京旅游",  # shares 北京 with the query
    "d2": "他喜欢吃苹果和香蕉",
    "d3": "上海是一个大城市",
}


@pytest.mark.parametrize("docs,query", [(JA_DOCS, "明日の天気"), (ZH_DOCS, "北京有什么好玩")])
def test_bm25_finds_the_shared_two_character_word(docs, query):
    corpus = InMemoryCorpus([Document(d, t) for d, t in docs.items()])
    queries = Queries({"q": query})
    for spec in ("bm25:analyzer=cjk", "bm25:analyzer=ja", "bm25:analyzer=zh"):
        run = parse_retriever(spec).index(corpus).search(queries, 3)
        assert run.doc_ids("q")[0] == "d1", spec
    # a whitespace analyzer (and bm25s' default \w\w+ pattern) sees one token per sentence
    for retriever in (BM25(analyzer="whitespace"), BM25()):
        run = retriever.index(corpus).search(queries, 3)
        assert "d1" not in (run.doc_ids("q") if "q" in run else []), retriever.name


def test_dataset_language_selects_the_analyzer_unless_explicit():
    auto = parse_retriever("bm25")
    assert auto.for_language("japanese").name == "bm25:analyzer=ja"
    assert auto.for_language("en").name == "bm25"
    explicit = parse_retriever("bm25:analyzer=whitespace")
    assert adapt_to_language(explicit, "ja").name == "bm25:analyzer=whitespace"
    assert parse_retriever("bm25:analyzer=bm25s").for_language("ja").name == "bm25:analyzer=bm25s"
    assert parse_retriever("bm25:analyzer=german").name == "bm25:analyzer=de"


def test_analyzer_is_part_of_the_cache_key():
    corpus = InMemoryCorpus([Document(d, t) for d, t in JA_DOCS.items()])
    keys = {BM25(analyzer=a).cache_key(corpus) for a in ("auto", "cjk", "ja", "whitespace")}
    assert len(keys) == 4


def test_experiment_uses_the_dataset_language():
    from nuggetbench.data import Qrels
    from nuggetbench.datasets import Dataset
    from nuggetbench.experiment import run_experiment

    docs = {**JA_DOCS, "d4": "hello world"}
    corpus = InMemoryCorpus([Document(d, t) for d, t in docs.items()])
    ds = Dataset(
        id="toy/ja",
        corpus=corpus,
        queries=Queries({"q1": "明日の天気", "q2": "hello"}),
        qrels=Qrels(["q1", "q2"], ["d1", "d4"], [1, 1]),
        split="test",
        default_measures=["RR@10"],
        metadata={"language": "ja"},
    )
    exp = run_experiment(ds, ["bm25", "bm25:analyzer=whitespace"], k=3)
    assert exp.means()["bm25"]["RR@10"] == 1.0  # became bm25:analyzer=ja
    assert exp.systems["bm25"].run.metadata["params"]["analyzer"] == "ja"
    assert exp.means()["bm25:analyzer=whitespace"]["RR@10"] == 0.5  # q1 missed
