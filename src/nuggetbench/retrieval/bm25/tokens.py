"""BM25 tokenization, the bottom of the BM25 package: texts to token ids, on every core.

**What a token is.** A :class:`Tokenizer` is ``(analyzer, stemmer, stopwords)``. With
``analyzer`` ``auto`` or ``bm25s`` it is ``bm25s.tokenize``'s: each text lower-cased, split by
the pattern :data:`TOKEN_PATTERN`, the stop words of ``stopwords`` removed, then every remaining
word stemmed by PyStemmer's ``stemmer`` (``none``: not stemmed). Any other analyzer is
:mod:`nuggetbench.text.analyzers`' ``Analyzer.analyze``.

**Two implementations of the bm25s tokenizer, one result.** :meth:`Tokenizer.tokenize` calls
``bm25s.tokenize`` itself (queries: a few texts). :func:`analyze_batch`, which indexing uses,
computes the same tokens without bm25s' per-token Python loop: a list comprehension per text
(``lower`` then ``findall``), then the distinct words of the whole batch (``dict.fromkeys``),
their stop-word test and their stems computed once each, and the token ids of the batch by one
``map`` and numpy. ``tests/test_bm25_tokens.py`` checks token for token that the two agree.

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
    "tokenize_batches",
    "tokenize_corpus",
    "tokenize_texts",
    "worker_count",
]

log = logging.getLogger(__name__)

TOKEN_PATTERN = r"(?u)\b\w\w+\b"
"""bm25s' default token pattern (scikit-learn's ``CountVectorizer``'s)."""

BATCH_DOCS = 4096
"""Documents per batch sent to a worker (at most)."""
BATCH_CHARS = 2_000_000
"""Characters per batch sent to a worker (at most, but at least one document)."""
STEM_CACHE = 1_000_000
"""Stems a worker keeps between batches (at most; then it starts afresh)."""
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
        self.findall = re.compile(TOKEN_PATTERN).findall
        self.analyze: Any = None
        if not tokenizer.is_bm25s:
            self.analyze = get_analyzer(tokenizer.analyzer).analyze
        self.stop = stopword_set(tokenizer) if stopwords is None else stopwords
        self.stemmer = _stemmer(tokenizer.stemmer) if tokenizer.is_bm25s else None
        self.stems: dict[str, str] = {}  # words stemmed so far (a batch repeats most)

    def words(self, texts: list[str]) -> list[list[str]]:
        """The words of each text before stop words and stems (bm25s), or its tokens."""
        if self.analyze is not None:
            return [self.analyze(t) for t in texts]
        findall = self.findall
        return [findall(t.lower()) for t in texts]

    def __call__(self, texts: list[str]) -> Batch:
        batch = self.tokens(texts)
        return batch.with_pairs() if self.pairs else batch

    def tokens(self, texts: list[str]) -> Batch:
        per_text = self.words(texts)
        n = len(per_text)
        raw_lens = np.fromiter(map(len, per_text), dtype=np.int64, count=n)
        flat = list(chain.from_iterable(per_text))
        del per_text
        distinct = dict.fromkeys(flat)  # first-occurrence order
        number = dict(zip(distinct, range(len(distinct))))
        raw = np.fromiter(map(number.__getitem__, flat), dtype=np.int32, count=len(flat))
        del flat
        if self.analyze is not None:  # the analyzer's tokens are final
            return Batch(list(distinct), raw_lens.astype(np.int32), raw)
        stop = self.stop
        kept = [w for w in distinct if w not in stop]
        stems = kept
        if self.stemmer is not None:
            known = self.stems
            if len(known) > STEM_CACHE:
                known.clear()
            new = [w for w in kept if w not in known]
            known.update(zip(new, self.stemmer.stemWords(new)))
            stems = list(map(known.__getitem__, kept))
        to_token = np.full(len(distinct) + 1, -1, dtype=np.int32)  # surface word -> token id
        token_of: dict[str, int] = {}
        for surface, stem in zip(kept, stems):
            tid = token_of.get(stem)
            if tid is None:
                tid = token_of[stem] = len(token_of)
            to_token[number[surface]] = tid
        ids = to_token[raw]
        if stop and len(ids):
            keep = ids >= 0
            doc = np.repeat(np.arange(n, dtype=np.int64), raw_lens)
            lens = np.bincount(doc[keep], minlength=n).astype(np.int32)
            ids = ids[keep]
        else:
            lens = raw_lens.astype(np.int32)
        return Batch(list(token_of), lens, np.ascontiguousarray(ids, dtype=np.int32))


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
