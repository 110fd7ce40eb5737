"""BM25 tokenization on every core (:mod:`nuggetbench.retrieval.bm25.tokens`) against bm25s'
own ``bm25s.tokenize`` (and the named analyzers' ``tokenize``): the same tokens, text for text,
whatever the number of worker processes; the ids numbered by first occurrence."""

from __future__ import annotations

import numpy as np
import pytest

bm25s = pytest.importorskip("bm25s")

from nuggetbench.errors import ModelError  # noqa: E402
from nuggetbench.retrieval.bm25 import tokens as bm25_tokens  # noqa: E402
from nuggetbench.retrieval.bm25.tokens import (  # noqa: E402
    TOKEN_PATTERN,
    Tokenizer,
    Vocabulary,
    analyze_batch,
    surface_words,
    tokenize_corpus,
)

TEXTS = [
    "The Running dogs ran; the runner runs.",
    "",  # empty
    "the of and",  # stop words only
    "x y z 1",  # one-letter tokens only
    "Über naïve café ΟΔΟΣ Straße straße",
    "foo_bar 42 4.2 e-mail e_mail",
    "jump jumping jumps JUMPED jump",
    "日本語のテキスト and 中文",
    "Running running RUNNING",
]


def _texts(seed: int, n: int) -> list[str]:
    rng = np.random.default_rng(seed)
    words = [w for t in TEXTS for w in t.split()] + [f"w{i}q" for i in range(300)]
    return [" ".join(rng.choice(words, size=int(rng.integers(0, 30)))) for _ in range(n)]


def _strings(batches) -> list[list[str]]:
    """Every text's tokens as strings, from merged batches."""
    vocab = Vocabulary()
    out: list[list[str]] = []
    for batch in batches:
        ids = vocab.merge(batch)
        words = list(vocab.ids)
        ends = np.cumsum(batch.lens)
        out += [[words[i] for i in ids[e - n : e]] for e, n in zip(ends, batch.lens)]
    return out


TOKENIZERS = [
    Tokenizer(),
    Tokenizer(stemmer="none", stopwords="none"),
    Tokenizer(stemmer="porter", stopwords="en_plus"),
    Tokenizer(stemmer="german", stopwords="de"),
    Tokenizer(analyzer="de"),
    Tokenizer(analyzer="cjk"),
]


@pytest.mark.parametrize("tokenizer", TOKENIZERS, ids=lambda t: "-".join(t.as_tuple()))
def test_batches_give_bm25s_tokens(tokenizer):
    texts = TEXTS + _texts(0, 200)
    want = tokenizer.tokenize(texts)  # bm25s.tokenize, or the analyzer's own
    assert _strings([analyze_batch(texts, tokenizer)]) == want
    # cut into batches of any size: the same tokens
    small = [analyze_batch(texts[i : i + 7], tokenizer) for i in range(0, len(texts), 7)]
    assert _strings(small) == want


# characters where a byte-level word cutter could go wrong: multi-byte letters, marks (not \w
# in Python's re), final sigma, dotted I (lowers to two code points), digits of other scripts,
# superscripts and fractions (\w), emoji (4 bytes), lone surrogates, controls and spaces
TRICKY = (
    "aZ09_ \n\t\x00-.,;'\"éÉßẞﬁΣσςİıIΐ٣۴²½ⅷ①中文日本語ひらがなカタカナ한국어हिन्दीกขฃ"
    "\u0301\u0308\u200d\u00a0\u2028🙂🇫🇷𝔘𝔫\ud800\udfff\U000e0041"
)


def _unicode_texts(seed: int, n: int) -> list[str]:
    """Random texts of tricky characters, ASCII words and any code point at all."""
    rng = np.random.default_rng(seed)
    pool = list(TRICKY) + ["w1q", "The", "ΟΔΟΣ", "straße", "İstanbul"]
    out = []
    for _ in range(n):
        parts = []
        for _ in range(int(rng.integers(0, 40))):
            pick = rng.random()
            if pick < 0.7:
                parts.append(pool[int(rng.integers(len(pool)))])
            elif pick < 0.85:
                parts.append(" ")
            else:
                parts.append(chr(int(rng.integers(0, 0x110000))))
        out.append("".join(parts))
    return out


@pytest.mark.parametrize("seed", range(20))
def test_surface_words_equal_re_findall_on_random_unicode(seed):
    import re

    texts = _unicode_texts(seed, 60) + ["", "a", "ab", "\ud800", "x\u0301y"]
    want = [re.findall(TOKEN_PATTERN, t.lower()) for t in texts]
    words, ids, lens = surface_words(texts)
    flat = [w for t in want for w in t]
    assert words == list(dict.fromkeys(flat))  # numbered by first occurrence
    assert [words[i] for i in ids] == flat
    assert lens.tolist() == [len(t) for t in want]
    assert ids.dtype == np.int32 and len(lens) == len(texts)


def test_surface_words_of_ascii_and_empty_batches():
    words, ids, lens = surface_words([])
    assert words == [] and len(ids) == 0 and len(lens) == 0
    words, ids, lens = surface_words(["", "a b", "!!"])
    assert words == [] and len(ids) == 0 and lens.tolist() == [0, 0, 0]
    words, ids, lens = surface_words(["Ab ab_c x", "AB.ab-ab"])
    assert words == ["ab", "ab_c"] and ids.tolist() == [0, 1, 0, 0, 0]
    assert lens.tolist() == [2, 3]


@pytest.mark.parametrize("tokenizer", TOKENIZERS[:4], ids=lambda t: "-".join(t.as_tuple()))
def test_unicode_batches_give_bm25s_tokens(tokenizer):
    texts = _unicode_texts(7, 300)
    want = tokenizer.tokenize(texts)  # bm25s.tokenize
    assert _strings([analyze_batch(texts, tokenizer)]) == want
    small = [analyze_batch(texts[i : i + 11], tokenizer) for i in range(0, len(texts), 11)]
    assert _strings(small) == want


def test_ids_are_numbered_by_first_occurrence():
    batch = analyze_batch(["bb aa bb", "cc aa dd"], Tokenizer(stemmer="none", stopwords="none"))
    assert batch.words == ["bb", "aa", "cc", "dd"]
    assert batch.ids.tolist() == [0, 1, 0, 2, 1, 3] and batch.lens.tolist() == [3, 3]
    vocab = Vocabulary({"dd": 0})
    assert vocab.merge(batch).tolist() == [1, 2, 1, 3, 2, 0]
    assert list(vocab.ids) == ["dd", "bb", "aa", "cc"]


def test_pairs_are_sorted_by_token_then_text():
    batch = analyze_batch(["bb aa bb", "", "aa cc"], Tokenizer(stemmer="none", stopwords="none"))
    tok, doc, count = batch.with_pairs().pairs
    assert list(zip(tok.tolist(), doc.tolist(), count.tolist())) == [
        (0, 0, 2),  # bb in text 0, twice
        (1, 0, 1),
        (1, 2, 1),
        (2, 2, 1),
    ]


def test_worker_processes_give_the_same_batches(monkeypatch):
    monkeypatch.setattr(bm25_tokens, "BATCH_DOCS", 50)
    texts = _texts(1, 400)
    tokenizer = Tokenizer()
    here = list(tokenize_corpus(texts, tokenizer, workers=1, pairs=True))
    there = list(tokenize_corpus(iter(texts), tokenizer, workers=2, pairs=True))
    assert len(here) == len(there) == 8
    for a, b in zip(here, there):
        assert a.words == b.words and np.array_equal(a.lens, b.lens)
        assert all(np.array_equal(x, y) for x, y in zip(a.pairs, b.pairs))


def test_a_worker_failure_is_one_model_error(monkeypatch):
    # an analyzer the workers cannot build: the error names the worker processes and what to do
    bad = Tokenizer(analyzer="no-such-analyzer-xyz")
    with pytest.raises(ModelError, match="worker processes.*threads=1"):
        list(tokenize_corpus(["a b"] * 10, bad, workers=2))


def test_worker_count():
    assert bm25_tokens.worker_count(0, 10) == 1  # a small corpus stays here
    assert bm25_tokens.worker_count(1, 10**6) == 1
    assert bm25_tokens.worker_count(0, 10**6) == bm25_tokens.usable_cpus()
    assert bm25_tokens.worker_count(10**4, 10**6) == bm25_tokens.usable_cpus()
