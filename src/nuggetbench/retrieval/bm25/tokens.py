"""BM25 tokenization, the bottom of the BM25 package: texts to token ids, on every core.

**What a token is.** A :class:`Tokenizer` is ``(analyzer, stemmer, stopwords)``. With
``analyzer`` ``auto`` or ``bm25s`` it is ``bm25s.tokenize``'s: each text lower-cased, split by
the pattern :data:`TOKEN_PATTERN`, the stop words of ``stopwords`` removed, then every remaining
word stemmed by PyStemmer's ``stemmer`` (``none``: not stemmed). Any other analyzer is
:mod:`nuggetbench.text.analyzers`' ``Analyzer.analyze``.

**Two implementations of the bm25s tokenizer, one result.** :meth:`Tokenizer.tokenize` calls
``bm25s.tokenize`` itself (queries: a few texts). :func:`analyze_batch`, which indexing uses,
computes the same tokens without a Python string per token: :func:`surface_words` cuts the
lower-cased texts' UTF-8 bytes into words with numpy (the pattern's matches are the runs of two
or more word characters, classed by ``re``'s own ``\\w``) and numbers the distinct words with
Arrow's hash table; then each distinct word's stop-word test and stem are computed once per
worker (a cache of :data:`STEM_CACHE` words), and the token ids of the batch follow by numpy
indexing. ``tests/test_bm25_tokens.py`` checks token for token that the two agree, and
:func:`surface_words` against ``re.findall`` on random Unicode text.

**Ids are numbered by first occurrence** (a word's id is the number of distinct words before its
first occurrence in the batch or the corpus), not by bm25s' numbering (the order of a Python
``set``, which changes with the hash seed). So the index of a corpus is the same bytes in every
process and with any number of workers; the scores do not depend on the numbering either way.

**On every core** (:func:`tokenize_corpus`): the texts are cut into batches of
:data:`BATCH_DOCS` documents (or :data:`BATCH_CHARS` characters), each batch tokenized by
:func:`analyze_batch` in one of *workers* processes (:func:`nuggetbench._runtime.process_map`:
fresh interpreters, not threads, as tokenizing is Python code under the GIL), and the batches
merged in corpus order by a :class:`Vocabulary`: a batch's words are looked up (or appended) in
the global vocabulary in the batch's first-occurrence order, which makes the global numbering
the corpus's first-occurrence order whatever the batch size or the number of workers. At most
``2 * workers`` batches are in flight, so the texts held at once are bounded; one worker (or a
corpus under :data:`PARALLEL_MIN_DOCS` documents) tokenizes in this process, with the same code.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from itertools import chain
from typing import Any

import numpy as np

from nuggetbench._runtime import process_map, usable_cpus
from nuggetbench.errors import ModelError
from nuggetbench.retrieval.bm25.scoring import pairs_of
from nuggetbench.text.analyzers import get_analyzer
from nuggetbench.text.bm25s_private import private_api

__all__ = [
    "BATCH_CHARS",
    "BATCH_DOCS",
    "Batch",
    "PARALLEL_MIN_DOCS",
    "TOKEN_PATTERN",
    "Tokenizer",
    "Vocabulary",
    "analyze_batch",
    "split_batches",
    "surface_words",
    "tokenize_batches",
    "tokenize_corpus",
    "tokenize_texts",
    "worker_count",
]

log = logging.getLogger(__name__)

TOKEN_PATTERN = r"(?u)\b\w\w+\b"
"""bm25s' default token pattern (scikit-learn's ``CountVectorizer``'s)."""

BATCH_DOCS = 16384
"""Documents per batch sent to a worker (at most)."""
BATCH_CHARS = 8_000_000
"""Characters per batch sent to a worker (at most, but at least one document)."""
STEM_CACHE = 1_000_000
"""Words whose stems a worker keeps between batches (at most; then it starts afresh)."""
_STOP: Any = object()
"""A worker cache's entry for a stop word."""
PARALLEL_MIN_DOCS = 20_000
"""Corpora with fewer documents are tokenized in this process (starting workers costs ~1 s)."""


@dataclass(frozen=True)
class Tokenizer:
    """How a BM25 retriever turns text into tokens (plain strings, so a worker process can
    rebuild it): ``analyzer`` (``auto``/``bm25s`` or a :mod:`~nuggetbench.text.analyzers`
    name), ``stemmer`` (a PyStemmer algorithm or ``none``) and ``stopwords`` (a bm25s stop-word
    list name or ``none``)."""

    analyzer: str = "auto"
    stemmer: str = "english"
    stopwords: str = "en"

    @property
    def is_bm25s(self) -> bool:
        """Whether this is bm25s' tokenizer (pattern, stop words, PyStemmer)."""
        return self.analyzer in ("auto", "bm25s")

    def tokenize(self, texts: list[str], *, return_ids: bool = False, show_progress: bool = False):
        """*texts* tokenized by ``bm25s.tokenize`` (or the named analyzer): token lists, or
        bm25s' ``Tokenized`` (``ids`` lists and ``vocab``) when *return_ids*."""
        return tokenize_texts(
            texts, tokenizer=self.as_tuple(), return_ids=return_ids, show_progress=show_progress
        )

    def as_tuple(self) -> tuple[str, str, str]:
        return (self.analyzer, self.stemmer, self.stopwords)


def tokenize_texts(
    texts: list[str], *, tokenizer: tuple[str, str, str], return_ids: bool, show_progress: bool
):
    """Tokenize *texts* with ``tokenizer = (analyzer, stemmer, stopwords)``: a named analyzer
    (:mod:`nuggetbench.text.analyzers`), or ``bm25s.tokenize`` with PyStemmer's *stemmer*
    (``"none"``: none) and *stopwords* (``"none"``: none).

    Returns bm25s' ``Tokenized`` (``ids`` lists and ``vocab``) when *return_ids*, else the token
    lists."""
    analyzer, stemmer_name, stopwords = tokenizer
    if analyzer not in ("auto", "bm25s"):
        return get_analyzer(analyzer).tokenize(
            texts, return_ids=return_ids, show_progress=show_progress
        )
    import bm25s

    return bm25s.tokenize(
        texts,
        stopwords=[] if stopwords == "none" else stopwords,
        stemmer=_stemmer(stemmer_name),
        return_ids=return_ids,
        show_progress=show_progress,
    )


def _stemmer(name: str) -> Any:
    if name == "none":
        return None
    import Stemmer

    return Stemmer.Stemmer(name)


def stopword_set(tokenizer: Tokenizer) -> frozenset[str]:
    """The stop words bm25s removes for *tokenizer* (empty for ``none``)."""
    if tokenizer.stopwords == "none":
        return frozenset()
    return frozenset(private_api().infer_stopwords(tokenizer.stopwords))


@dataclass
class Batch:
    """The tokens of a batch of texts, numbered by first occurrence in the batch.

    Attributes:
        words: the batch's distinct tokens; ``words[i]`` is token id ``i``.
        lens: int32 ``(n,)``, tokens per text.
        ids: int32 ``(lens.sum(),)``, the token ids of every text, text after text (empty when
            *pairs* is given instead).
        pairs: ``(tokens, texts, counts)``, int32 arrays, the distinct (token, text) pairs
            sorted by token then text (:func:`.scoring.pairs_of`), when asked for.
    """

    words: list[str]
    lens: np.ndarray
    ids: np.ndarray
    pairs: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    def with_pairs(self) -> Batch:
        """This batch with :attr:`pairs` instead of :attr:`ids` (a smaller message)."""
        tok, doc, count = pairs_of(self.ids, self.lens)
        pairs = (tok.astype(np.int32), doc.astype(np.int32), count.astype(np.int32))
        return Batch(self.words, self.lens, np.zeros(0, dtype=np.int32), pairs)


class _Analyzer:
    """:func:`analyze_batch`'s state for one tokenizer: the stop words and the stemmer (built
    once per process), and the stems already computed."""

    def __init__(
        self, tokenizer: Tokenizer, stopwords: frozenset[str] | None = None, pairs: bool = False
    ):
        self.tokenizer = tokenizer
        self.pairs = pairs
        self.analyze: Any = None
        if not tokenizer.is_bm25s:
            self.analyze = get_analyzer(tokenizer.analyzer).analyze
        self.stop = stopword_set(tokenizer) if stopwords is None else stopwords
        self.stemmer = _stemmer(tokenizer.stemmer) if tokenizer.is_bm25s else None
        # each word seen so far: its stem, or _STOP for a stop word (a batch repeats most)
        self.known: dict[str, Any] = {}

    def __call__(self, texts: list[str]) -> Batch:
        batch = self.tokens(texts)
        return batch.with_pairs() if self.pairs else batch

    def tokens(self, texts: list[str]) -> Batch:
        if self.analyze is not None:  # the analyzer's tokens are final
            per_text = [self.analyze(t) for t in texts]
            n = len(per_text)
            lens = np.fromiter(map(len, per_text), dtype=np.int32, count=n)
            flat = list(chain.from_iterable(per_text))
            del per_text
            distinct = dict.fromkeys(flat)  # first-occurrence order
            number = dict(zip(distinct, range(len(distinct))))
            ids = np.fromiter(map(number.__getitem__, flat), dtype=np.int32, count=len(flat))
            return Batch(list(distinct), lens, ids)
        import pyarrow as pa

        distinct, raw, raw_lens = surface_words(texts)
        # each distinct word's token (its stem, or _STOP), from the worker's cache
        known = self.known
        if len(known) > STEM_CACHE:
            known.clear()
        found = list(map(known.get, distinct))  # None: not seen yet
        new = [w for w, f in zip(distinct, found) if f is None]
        if new:
            stop = self.stop
            words = [w for w in new if w not in stop]
            stems = self.stemmer.stemWords(words) if self.stemmer is not None else words
            known.update(dict.fromkeys(new, _STOP))
            known.update(zip(words, stems))
            found = list(map(known.__getitem__, distinct))
        kept_at: list[int] | None = [i for i, f in enumerate(found) if f is not _STOP]
        if len(kept_at) == len(found):
            kept_at, stems = None, found
        else:
            stems = [found[i] for i in kept_at]
        # a stem's token id: the number of distinct stems before its first occurrence
        token_words, token_of = _first_occurrence(pa.array(stems, pa.large_string()))
        to_token = np.full(len(distinct), -1, dtype=np.int32)  # surface word -> token id
        if kept_at is None:
            to_token[:] = token_of
        elif kept_at:
            to_token[np.array(kept_at, dtype=np.int64)] = token_of
        ids = to_token[raw]
        lens = raw_lens
        if kept_at is not None and len(ids):
            keep = ids >= 0
            before = np.zeros(len(keep) + 1, dtype=np.int64)  # tokens kept before each position
            np.cumsum(keep, out=before[1:])
            bounds = np.zeros(len(raw_lens) + 1, dtype=np.int64)
            np.cumsum(raw_lens, out=bounds[1:])
            lens = np.diff(before[bounds])
            ids = ids[keep]
        return Batch(token_words, lens.astype(np.int32), np.ascontiguousarray(ids, np.int32))


def _first_occurrence(values: Any) -> tuple[list[str], np.ndarray]:
    """``(distinct, indices)`` of *values* (an Arrow string array): the distinct strings in
    first-occurrence order (Arrow's hash table numbers them so) and int32 ``(len(values),)``
    each value's position in them."""
    encoded = values.dictionary_encode()
    return encoded.dictionary.to_pylist(), encoded.indices.to_numpy().astype(np.int32, copy=False)


@lru_cache(maxsize=1)
def _word_table() -> np.ndarray:
    """bool ``(0x110000,)``: whether each code point is a word character (``\\w``) for
    Python's ``re`` on ``str``, read from ``re`` itself (so it is that definition, in this
    Python's Unicode version)."""
    table = np.zeros(0x110000, dtype=bool)
    every = "".join(map(chr, range(0x110000)))
    for match in re.finditer(r"(?u)\w+", every):
        table[match.start() : match.end()] = True
    return table


_BYTE_WORD = np.array([c < 0x80 and (chr(c).isalnum() or c == 0x5F) for c in range(256)])
"""Whether each byte is an ASCII word character (``\\w``: letter, digit, underscore)."""


def surface_words(texts: list[str]) -> tuple[list[str], np.ndarray, np.ndarray]:
    """``re.findall(TOKEN_PATTERN, text.lower())`` for every text, numbered by first occurrence,
    computed on the UTF-8 bytes with numpy and Arrow instead of one Python string per token.

    ``\\b\\w\\w+\\b`` matches exactly the maximal runs of word characters (``\\w``) that are
    at least two characters long: ``\\b`` admits no start inside a run and the greedy ``\\w+``
    always reaches the run's end. So the texts are lower-cased by ``str.lower`` (each text
    alone), encoded to UTF-8 (lone surrogates, which are not word characters, with
    ``surrogatepass``) and joined by ``"\\n"``; each code point is classed by :func:`_word_table`
    (``re``'s own ``\\w``); the runs of two or more word code points are cut out and numbered
    by Arrow's ``dictionary_encode`` (first-occurrence order). ``tests/test_bm25_tokens.py``
    compares it with ``re.findall`` on random Unicode text.

    Returns:
        ``(words, ids, lens)``: the distinct words in first-occurrence order, int32 ``(tokens,)``
        every token's index in *words* (text after text) and int64 ``(len(texts),)`` tokens
        per text.
    """
    import pyarrow as pa

    n = len(texts)
    encoded = [t.lower().encode("utf-8", "surrogatepass") for t in texts]
    starts = np.zeros(n + 1, dtype=np.int64)  # each text's first byte in the joined buffer
    np.cumsum(np.fromiter(map(len, encoded), dtype=np.int64, count=n) + 1, out=starts[1:])
    buf = np.frombuffer(b"\n".join(encoded), dtype=np.uint8)
    del encoded
    size = len(buf)
    if size == 0:
        return [], np.zeros(0, dtype=np.int32), np.zeros(n, dtype=np.int64)
    word = _BYTE_WORD[buf]  # ASCII bytes classed; the bytes of other characters follow
    multi = np.flatnonzero(buf >= 0xC0)  # the first byte of each character of 2 to 4 bytes
    if len(multi):
        b0 = buf[multi].astype(np.int32)
        n_bytes = 2 + (b0 >= 0xE0) + (b0 >= 0xF0)
        b1, b2, b3 = (
            buf[np.minimum(multi + k, size - 1)].astype(np.int32) & 0x3F for k in (1, 2, 3)
        )
        code = np.where(
            n_bytes == 2,
            ((b0 & 0x1F) << 6) | b1,
            np.where(
                n_bytes == 3,
                ((b0 & 0x0F) << 12) | (b1 << 6) | b2,
                ((b0 & 0x07) << 18) | (b1 << 12) | (b2 << 6) | b3,
            ),
        )
        is_word = _word_table()[code]
        for k in range(4):
            at = n_bytes > k
            word[multi[at] + k] = is_word[at]
        del b0, b1, b2, b3, code, is_word
    edge = np.diff(word.view(np.int8), prepend=np.int8(0), append=np.int8(0))
    run_start = np.flatnonzero(edge == 1)
    run_end = np.flatnonzero(edge == -1)
    del edge
    length = run_end - run_start
    if len(multi):  # a run of one character: as many bytes as its first byte announces
        first = buf[run_start]
        one_char = 1 + (first >= 0xC0) + (first >= 0xE0) + (first >= 0xF0)
        short = length == one_char
    else:
        short = length == 1
    cut, cut_length = run_start[short], length[short]  # not tokens: their bytes are dropped
    for k in range(int(cut_length.max(initial=0))):
        word[cut[cut_length > k] + k] = False
    keep = ~short
    run_start, run_end = run_start[keep], run_end[keep]
    del cut, cut_length, keep, short, length
    offsets = np.zeros(len(run_start) + 1, dtype=np.int64)
    np.cumsum(run_end - run_start, out=offsets[1:])
    data = buf[word]
    tokens = pa.Array.from_buffers(
        pa.large_string(), len(run_start), [None, pa.py_buffer(offsets), pa.py_buffer(data)]
    )
    words, ids = _first_occurrence(tokens)
    lens = np.diff(np.searchsorted(run_start, starts))
    return words, ids, lens


def analyze_batch(texts: list[str], tokenizer: Tokenizer) -> Batch:
    """The tokens of *texts* as *tokenizer* makes them (the same tokens as
    :meth:`Tokenizer.tokenize`), numbered by first occurrence in the batch."""
    return _Analyzer(tokenizer)(texts)


def batch_analyzer(tokenizer: Tokenizer, stopwords: frozenset[str], pairs: bool) -> _Analyzer:
    """A worker process's tokenizer (:func:`nuggetbench._runtime.process_map`'s factory)."""
    return _Analyzer(tokenizer, stopwords, pairs)


def worker_count(threads: int, n_docs: int) -> int:
    """Processes to tokenize *n_docs* documents with: *threads* (0: every usable core), 1 for a
    corpus under :data:`PARALLEL_MIN_DOCS` documents."""
    if n_docs < PARALLEL_MIN_DOCS:
        return 1
    return max(1, min(threads or usable_cpus(), usable_cpus()))


def split_batches(texts: Iterable[str]) -> Iterator[list[str]]:
    """*texts* in batches of :data:`BATCH_DOCS` texts or :data:`BATCH_CHARS` characters."""
    batch: list[str] = []
    chars = 0
    for text in texts:
        batch.append(text)
        chars += len(text)
        if len(batch) >= BATCH_DOCS or chars >= BATCH_CHARS:
            yield batch
            batch, chars = [], 0
    if batch:
        yield batch


def tokenize_corpus(
    texts: Iterable[str], tokenizer: Tokenizer, *, workers: int, pairs: bool = False
) -> Iterator[Batch]:
    """The :class:`Batch` of each batch of *texts* (an iterable, read once, in order;
    :func:`split_batches`), in corpus order, tokenized by *workers* processes (1: in this
    process). Merging them with a :class:`Vocabulary` gives the same ids whatever *workers* is.
    With *pairs*, each batch carries its (token, text, count) pairs instead of its token ids.

    Raises:
        ModelError: a worker process failed or died (out of memory, killed); the message says
            what to do.
    """
    return tokenize_batches(split_batches(texts), tokenizer, workers=workers, pairs=pairs)


def tokenize_batches(
    batches: Iterable[list[str]], tokenizer: Tokenizer, *, workers: int, pairs: bool = False
) -> Iterator[Batch]:
    """:func:`tokenize_corpus` of batches the caller cut (each a list of texts), in order."""
    if workers <= 1:
        analyzer = _Analyzer(tokenizer, pairs=pairs)
        for batch in batches:
            yield analyzer(batch)
        return
    target = f"{__name__}:batch_analyzer"
    try:
        yield from process_map(
            target, (tokenizer, stopword_set(tokenizer), pairs), batches, workers
        )
    except (ChildProcessError, RuntimeError) as exc:
        raise ModelError(
            f"bm25: tokenizing in {workers} worker processes failed: {exc}; if memory ran out, "
            "index with bm25:threads=1 (in this process)"
        ) from None


class Vocabulary:
    """The corpus vocabulary, grown batch by batch in corpus order (see the module docstring).

    Attributes:
        ids: ``token -> id``, ids in first-occurrence order over the batches merged so far.
    """

    def __init__(self, ids: dict[str, int] | None = None):
        self.ids: dict[str, int] = {} if ids is None else ids

    def __len__(self) -> int:
        return len(self.ids)

    def remap(self, words: list[str]) -> tuple[np.ndarray, list[str]]:
        """``(global id of each of *words*, the words new to the vocabulary)``: *words* (a
        batch's, in its first-occurrence order) looked up, the new ones appended in that order.
        """
        ids = self.ids
        found = list(map(ids.get, words))  # one C-level pass; None where new
        added = [w for w, g in zip(words, found) if g is None]
        if added:
            base = len(ids)
            ids.update(zip(added, range(base, base + len(added))))
            found = list(map(ids.__getitem__, words))
        return np.array(found, dtype=np.int32), added

    def merge(self, batch: Batch) -> np.ndarray:
        """The batch's token ids in the global numbering (int32, shape of ``batch.ids``)."""
        remap, _ = self.remap(batch.words)
        return remap[batch.ids] if len(batch.ids) else np.zeros(0, dtype=np.int32)
