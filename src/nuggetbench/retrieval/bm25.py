"""BM25 on `bm25s <https://github.com/xhluca/bm25s>`_ (Lù, 2024), with a cached index.

Documents are indexed as ``title + " " + text`` (BEIR's convention, ``Document.full_text``),
tokenized by ``bm25s.tokenize`` (lower-casing, the ``\\b\\w\\w+\\b`` pattern, stop-word removal,
then a PyStemmer stemmer). Scoring variants are bm25s' (Kamphuis et al., ECIR 2020: "Which
BM25 do you mean?"): ``lucene`` (default), ``robertson``, ``atire``, ``bm25l``, ``bm25+``.

Defaults follow bm25s: ``k1=1.5, b=0.75, method=lucene``, English stemmer and stop words.
``bm25:preset=pyserini`` gives Pyserini's BEIR setting ``k1=0.9, b=0.4``.

Searching is :class:`~nuggetbench.retrieval.bm25_index.BM25Index`: only documents that score
above a document containing none of the query terms are returned (as Lucene returns only
matching documents), so a query can get fewer than *k* results.

The index is cached under ``<home>/cache/bm25/<key>/`` in bm25s' own save format (npy + JSON,
no pickle) plus ``doc_ids.json`` and ``meta.json``; the key hashes the corpus fingerprint, every
scoring and tokenization parameter, and the bm25s version.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from .. import home as _home
from .._atomic import atomic_write
from ..data import Corpus
from ..errors import InputError, SpecError, suggest
from .bm25_index import BM25Index, numba_available

log = logging.getLogger(__name__)

METHODS = ("lucene", "robertson", "atire", "bm25l", "bm25+")
# fmt: off
STOPWORDS = (  # the names bm25s.tokenize accepts, and "none"
    "en", "english", "en_plus", "english_plus", "de", "german", "nl", "dutch", "fr", "french",
    "es", "spanish", "pt", "portuguese", "it", "italian", "ru", "russian", "sv", "swedish",
    "no", "norwegian", "zh", "chinese", "tr", "turkish", "ko", "korean", "da", "danish", "none",
)
# fmt: on
CACHE_FORMAT = 1
_NONOCCURRENCE_METHODS = ("bm25l", "bm25+")


class BM25:
    """A BM25 retriever (``bm25`` in retriever specs).

    Args:
        k1: term-frequency saturation (>= 0).
        b: length normalisation, in [0, 1].
        method: ``lucene`` | ``robertson`` | ``atire`` | ``bm25l`` | ``bm25+``.
        delta: the delta of ``bm25l`` / ``bm25+`` (ignored by the other methods).
        stemmer: a PyStemmer algorithm (``english``, ``porter``, ``french``...) or ``none``.
        stopwords: a bm25s stop-word list (``en``, ``de``, ``fr``...) or ``none``.
        cache: read and write the index cache under the home folder.
        backend: ``auto`` | ``numpy`` | ``numba``: bm25s' retrieval backend. ``auto`` uses
            numba (parallel) when it is importable and the search is large enough to repay its
            just-in-time compilation (about 5 s per process): queries x documents >= 2e8;
            numpy otherwise (300 SciFact queries take 0.03 s with numpy).
        threads: numba retrieval threads; 0 uses every CPU, 1 is serial (numpy is serial).
        analyzer: ``auto`` (default) tokenizes with bm25s (the stemmer / stopwords options
            above) unless the dataset declares a non-English language (see
            :meth:`for_language`); any other value is an analyzer of
            :mod:`nuggetbench.retrieval.analyzers` (``de``, ``ja``, ``cjk``, ``whitespace``...),
            which then replaces the stemmer and stopwords options and is never overridden by the
            dataset's language; ``bm25s`` forces bm25s' tokenizer.

    Raises:
        SpecError: an option is out of range or unknown (the valid values are listed).
    """

    PRESETS = {"pyserini": {"k1": 0.9, "b": 0.4}, "bm25s": {"k1": 1.5, "b": 0.75}}
    _RESULT_OPTIONS = ("k1", "b", "method", "delta", "stemmer", "stopwords")

    def __init__(
        self,
        *,
        k1: float = 1.5,
        b: float = 0.75,
        method: str = "lucene",
        delta: float = 0.5,
        stemmer: str = "english",
        stopwords: str = "en",
        cache: bool = True,
        backend: str = "auto",
        threads: int = 0,
        analyzer: str = "auto",
    ):
        if not k1 >= 0:
            raise SpecError(f"bm25: k1 must be >= 0, got {k1!r}")
        if not 0 <= b <= 1:
            raise SpecError(f"bm25: b must be between 0 and 1, got {b!r}")
        if method not in METHODS:
            raise SpecError(
                f"bm25: unknown method {method!r}.{suggest(method, METHODS)} "
                f"Valid: {', '.join(METHODS)}"
            )
        stemmer = stemmer.lower()
        if stemmer != "none":
            import Stemmer

            algorithms = list(Stemmer.algorithms())
            if stemmer not in algorithms:
                raise SpecError(
                    f"bm25: unknown stemmer {stemmer!r}.{suggest(stemmer, algorithms)} "
                    f"Valid: none, {', '.join(algorithms)}"
                )
        stopwords = stopwords.lower()
        if stopwords not in STOPWORDS:
            raise SpecError(
                f"bm25: unknown stop-word list {stopwords!r}.{suggest(stopwords, STOPWORDS)} "
                f"Valid: {', '.join(STOPWORDS)}"
            )
        if backend not in ("auto", "numpy", "numba"):
            raise SpecError(f"bm25: backend must be auto, numpy or numba, got {backend!r}")
        if backend == "numba" and not numba_available():
            raise SpecError("bm25: backend=numba needs numba (pip install numba); use backend=auto")
        if threads < 0:
            raise SpecError(f"bm25: threads must be >= 0 (0 = every CPU), got {threads!r}")
        self.k1 = float(k1)
        self.b = float(b)
        self.method = method
        self.delta = float(delta)
        self.stemmer = stemmer
        self.stopwords = stopwords
        self.cache = cache
        self.backend = backend
        self.threads = threads
        analyzer = analyzer.strip().lower() or "auto"
        if analyzer not in ("auto", "bm25s"):
            from .analyzers import get_analyzer

            analyzer = get_analyzer(analyzer).name  # SpecError when unknown
        self.analyzer = analyzer

    # --- description -----------------------------------------------------------------------
    @property
    def params(self) -> dict[str, Any]:
        """Every option that changes the results (``delta`` only for bm25l / bm25+)."""
        out = {k: getattr(self, k) for k in self._RESULT_OPTIONS}
        if self.method not in _NONOCCURRENCE_METHODS:
            out.pop("delta")
        if self.analyzer != "auto":
            out["analyzer"] = self.analyzer
        return out

    @property
    def name(self) -> str:
        """Canonical spec: ``bm25`` plus the options that differ from the defaults."""
        from .spec import format_spec, spec_options

        return format_spec("bm25", self.params, spec_options(type(self)))

    def __repr__(self) -> str:
        return f"<BM25 {self.name}>"

    def cache_key(self, corpus: Corpus) -> str:
        """The cache folder name for *corpus* under these parameters (hex, 24 chars)."""
        import bm25s

        payload = {
            "format": CACHE_FORMAT,
            "corpus": corpus.fingerprint(),
            "bm25s": bm25s.__version__,
            "token_pattern": r"(?u)\b\w\w+\b",
            "lower": True,
            **{k: getattr(self, k) for k in self._RESULT_OPTIONS},
        }
        if self.analyzer not in ("auto", "bm25s"):
            from .analyzers import get_analyzer

            payload["analyzer"] = get_analyzer(self.analyzer).params
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:24]

    # --- tokenization ------------------------------------------------------------------------
    def for_language(self, language: str | None) -> BM25:
        """This retriever for a dataset in *language* (``de``, ``japanese``...).

        With ``analyzer=auto``, a copy whose analyzer is the language's (English and ``None``
        keep bm25s' tokenizer); an explicit analyzer is kept unchanged.
        """
        if self.analyzer != "auto":
            return self
        from .analyzers import analyzer_for_language

        name = analyzer_for_language(language)
        if name is None:
            return self
        import copy

        clone = copy.copy(self)
        clone.analyzer = name
        return clone

    def _tokenize(self, texts: list[str], *, return_ids: bool, show_progress: bool):
        if self.analyzer not in ("auto", "bm25s"):
            from .analyzers import get_analyzer

            return get_analyzer(self.analyzer).tokenize(
                texts, return_ids=return_ids, show_progress=show_progress
            )
        import bm25s

        stemmer = None
        if self.stemmer != "none":
            import Stemmer

            stemmer = Stemmer.Stemmer(self.stemmer)
        stopwords: Any = [] if self.stopwords == "none" else self.stopwords
        return bm25s.tokenize(
            texts,
            stopwords=stopwords,
            stemmer=stemmer,
            return_ids=return_ids,
            show_progress=show_progress,
        )

    # --- indexing ----------------------------------------------------------------------------
    def index(self, corpus: Corpus, *, show_progress: bool = False) -> BM25Index:
        """Index *corpus* (``title + " " + text`` of each document), or load the cached index.

        Raises:
            InputError: the corpus is empty.
        """
        folder = _home.cache_dir("bm25") / self.cache_key(corpus) if self.cache else None
        if folder is not None and folder.exists():
            loaded = self._load(folder, corpus) if (folder / "meta.json").exists() else None
            if loaded is not None:
                return loaded
            shutil.rmtree(folder, ignore_errors=True)  # unreadable or partial: rebuilt below
        import bm25s

        doc_ids: list[str] = []
        texts: list[str] = []
        for doc in corpus.iter_documents():
            doc_ids.append(doc.doc_id)
            texts.append(doc.full_text)
        if not doc_ids:
            raise InputError(
                f"cannot index an empty corpus ({getattr(corpus, 'name', None) or corpus!r})"
            )
        tokens = self._tokenize(texts, return_ids=True, show_progress=show_progress)
        del texts
        retriever = bm25s.BM25(
            k1=self.k1, b=self.b, delta=self.delta, method=self.method, backend="numpy"
        )
        retriever.index(tokens, show_progress=show_progress)
        if folder is not None:
            self._save(folder, retriever, doc_ids, corpus)
        return BM25Index(self, retriever, doc_ids, from_cache=False)

    def _save(self, folder: Path, retriever: Any, doc_ids: list[str], corpus: Corpus) -> None:
        import bm25s

        tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
        try:
            retriever.save(str(tmp), show_progress=False)
            with atomic_write(tmp / "doc_ids.json") as fh:
                json.dump(doc_ids, fh, ensure_ascii=False)
            meta = {
                "format": CACHE_FORMAT,
                "retriever": self.name,
                "params": self.params,
                "corpus_fingerprint": corpus.fingerprint(),
                "n_docs": len(doc_ids),
                "bm25s_version": bm25s.__version__,
            }
            with atomic_write(tmp / "meta.json") as fh:
                json.dump(meta, fh, indent=1)
            try:
                os.replace(tmp, folder)
            except OSError:
                if not (folder / "meta.json").exists():
                    raise
        except OSError as exc:
            log.warning("could not cache the BM25 index in %s: %s", folder, exc)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def _load(self, folder: Path, corpus: Corpus) -> BM25Index | None:
        import bm25s

        try:
            meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
            doc_ids = json.loads((folder / "doc_ids.json").read_text(encoding="utf-8"))
            if meta.get("corpus_fingerprint") != corpus.fingerprint() or meta.get("n_docs") != len(
                doc_ids
            ):
                raise ValueError("meta.json does not describe this corpus")
            retriever = bm25s.BM25.load(
                str(folder), mmap=False, load_vocab=True, show_progress=False, backend="numpy"
            )
            if int(retriever.scores["num_docs"]) != len(doc_ids):
                raise ValueError("the index and doc_ids.json differ in length")
        except (OSError, ValueError, KeyError) as exc:
            log.warning("ignoring the unreadable BM25 cache %s (%s); re-indexing", folder, exc)
            return None
        log.info("loaded the cached BM25 index %s", folder)
        return BM25Index(self, retriever, doc_ids, from_cache=True)
