"""BM25 on `bm25s <https://github.com/xhluca/bm25s>`_ (Lù, 2024), with a cached index.

Documents are indexed as ``title + " " + text`` (BEIR's convention, ``Document.full_text``),
tokenized by ``bm25s.tokenize`` (lower-casing, the ``\\b\\w\\w+\\b`` pattern, stop-word removal,
then a PyStemmer stemmer). Scoring variants are bm25s' (Kamphuis et al., ECIR 2020: "Which
BM25 do you mean?"): ``lucene`` (default), ``robertson``, ``atire``, ``bm25l``, ``bm25+``.

Defaults follow bm25s: ``k1=1.5, b=0.75, method=lucene``, English stemmer and stop words.
Pyserini's BEIR parameters on this engine are spelled out, ``bm25:k1=0.9,b=0.4``: they are not
Pyserini's BM25 (another analyzer; 0.6762 against Pyserini's 0.6789 nDCG@10 on SciFact), so no
preset names Pyserini for them (the old ``preset=pyserini`` is refused, naming both spellings).

``bm25:backend=lucene`` indexes and searches with Lucene through Pyserini instead (the optional
``lucene`` extra; :mod:`nuggetbench.retrieval.bm25.lucene`): Lucene's English analyzer, ``fields=flat``
or ``fields=multifield``; ``bm25:preset=lucene-flat`` / ``lucene-multifield`` are Pyserini's BEIR
regressions (with ``k1=0.9, b=0.4``). From Python: ``parse_retriever("bm25:backend=lucene")`` or
``BM25(backend="lucene", k1=0.9, b=0.4)``; ``.index(corpus).search(queries, k)`` gives a Run.

Searching is :class:`~nuggetbench.retrieval.bm25.index.BM25Index`: only documents that score
above a document containing none of the query terms are returned (as Lucene returns only
matching documents), so a query can get fewer than *k* results.

``bm25:memory=SIZE`` (``4G``, ``800M``) sets the peak memory of indexing and searching by a
budget rather than by the corpus: the single index when its estimated peak fits, else the
sharded index (:mod:`nuggetbench.retrieval.bm25.sharded`) with shards sized to fit
(:mod:`nuggetbench.retrieval.bm25.memory`: the cost model and its calibration). Either way the
index is the one plain ``bm25`` or ``bm25:shard_docs=N`` builds (same artifact, same scores).

Plain ``bm25`` (no ``memory=``, no ``shard_docs``, method ``lucene``/``robertson``/``atire``)
plans its layout the same way under a default budget
(:func:`~nuggetbench.retrieval.bm25.memory.plan_default`): 2 GiB, or half the available memory
when that is less; so a small corpus keeps the single index and a large one (about 600,000
passages and up) is sharded, in bounded memory. The layout never changes the run: both indexes
cut a tie at the k-th score by doc id (trec_eval's order), so ``bm25``, ``bm25:memory=SIZE`` and
``bm25:shard_docs=N`` write the same run byte for byte, and share the run cache.

The index is an artifact of the store (:mod:`nuggetbench.store`), ``<home>/cache/bm25/<spec>-<key>/``,
in bm25s' own save format (npy + JSON, no pickle) plus ``doc_ids.json`` and ``meta.json``; the
key hashes the corpus fingerprint, every scoring and tokenization parameter, and the bm25s version.
"""

from __future__ import annotations

import copy
import json
import logging
import shutil
import weakref
from dataclasses import replace
from pathlib import Path
from typing import Any

from nuggetbench._atomic import atomic_write
from nuggetbench.data import Corpus
from nuggetbench.errors import InputError, SpecError, suggest
from nuggetbench.retrieval.bm25 import pisa
from nuggetbench.retrieval.bm25.index import BM25Index, numba_available, tokenize_texts
from nuggetbench.retrieval.bm25.lucene import EXTRA as LUCENE_EXTRA
from nuggetbench.retrieval.bm25.lucene import LuceneIndex, build_lucene_index, lucene_available
from nuggetbench.retrieval.bm25.lucene import index_key as lucene_index_key
from nuggetbench.retrieval.bm25.memory import MemoryPlan, parse_size, plan_default, plan_memory
from nuggetbench.retrieval.bm25.pisa import PisaIndex
from nuggetbench.retrieval.bm25.pisa_engine import check_options as check_pisa_options
from nuggetbench.retrieval.bm25.sharded import (
    SHARDED_METHODS,
    ShardedBM25Index,
    build_sharded,
    finish,
    new_temporary,
)
from nuggetbench.retrieval.compose.pipeline import Composable
from nuggetbench.retrieval.models.loading import stage_bar
from nuggetbench.retrieval.options import METHODS, STOPWORDS, BM25Options
from nuggetbench.spec import format_colon_spec
from nuggetbench.store import Artifact
from nuggetbench.text.analyzers import analyzer_for_language, get_analyzer

__all__ = ["BM25", "BM25Options", "METHODS", "STOPWORDS"]

log = logging.getLogger(__name__)

CACHE_FORMAT = 1
#: how a run is cut at the k-th score, in the run cache's identity (runs cut by bm25s' arbitrary
#: tie order, before both layouts cut ties by doc id, are not served again)
TIE_ORDER = "score desc, doc id desc"
_NONOCCURRENCE_METHODS = ("bm25l", "bm25+")


class BM25(Composable):
    """A BM25 retriever (``bm25`` in retriever specs).

    Args:
        options: a :class:`~nuggetbench.retrieval.options.BM25Options` (``k1``, ``b``, ``method``,
            ``delta``, ``stemmer``, ``stopwords``, ``cache``, ``backend``, ``threads``,
            ``analyzer``: each declared there with its default and meaning), or its fields as
            keyword arguments (``BM25(k1=0.9, b=0.4)``). ``analyzer=auto`` tokenizes with bm25s
            unless the dataset declares a non-English language (:meth:`for_language`); any other
            analyzer (:mod:`nuggetbench.text.analyzers`) replaces the stemmer and stop words.

    Raises:
        SpecError: an option is out of range or unknown (the valid values are listed).
    """

    PRESETS = {
        "bm25s": {"k1": 1.5, "b": 0.75},
        "lucene-flat": {"backend": "lucene", "fields": "flat", "k1": 0.9, "b": 0.4},
        "lucene-multifield": {"backend": "lucene", "fields": "multifield", "k1": 0.9, "b": 0.4},
        "pisa": {"backend": "pisa", "k1": 0.9, "b": 0.4, "stopwords": "terrier"},
    }
    #: What each preset reproduces (``nuggetbench retrievers`` prints it beside its options).
    PRESET_NOTES = {
        "bm25s": "bm25s' default parameters, as plain bm25 (its README's SciFact nDCG@10 0.686)",
        "lucene-flat": "Pyserini's BEIR BM25 flat regression (SciFact nDCG@10 0.6789, R@100 "
        "0.9253, tested to the 4th decimal; needs the lucene extra)",
        "lucene-multifield": "Pyserini's BEIR BM25 multifield regression (SciFact 0.6647, "
        "0.9076, tested; needs the lucene extra)",
        "pisa": "pyterrier-pisa's own BM25 defaults (k1=0.9, b=0.4, Terrier's stop words, "
        "Porter2): every score equal to its PisaIndex.bm25()'s, tested; needs the pisa extra",
    }
    #: Presets that are gone, and what to write instead (a clear error, never a guess).
    RETIRED_PRESETS = {
        "pyserini": "it set k1=0.9,b=0.4 on bm25s, which is not Pyserini's BM25 (SciFact "
        "nDCG@10 0.6762, Pyserini 0.6789): write bm25:k1=0.9,b=0.4 for those parameters, or "
        "bm25:preset=lucene-flat for Pyserini's BEIR BM25 itself (the lucene extra)",
    }
    OPTIONS = BM25Options
    _RESULT_OPTIONS = ("k1", "b", "method", "delta", "stemmer", "stopwords")
    #: BM25 expands the query with the task objective's terms (BIRCO "+O").
    uses_objective = True

    def __init__(self, options: BM25Options | None = None, /, **kwargs: Any):
        opts = options if options is not None else BM25Options(**kwargs)
        stemmer = opts.stemmer.lower()
        if stemmer != "none" and opts.backend != "pisa":
            import Stemmer

            algorithms = list(Stemmer.algorithms())
            if stemmer not in algorithms:
                raise SpecError(
                    f"bm25: unknown stemmer {stemmer!r}.{suggest(stemmer, algorithms)} "
                    f"Valid: none, {', '.join(algorithms)}"
                )
        if opts.backend == "numba" and not numba_available():
            raise SpecError("bm25: backend=numba needs numba (pip install numba); use backend=auto")
        if opts.shard_docs and opts.method not in SHARDED_METHODS:
            raise SpecError(
                f"bm25: shard_docs needs method={'|'.join(SHARDED_METHODS)} (got {opts.method!r}, "
                "whose non-occurrence score the sharded index does not carry); use shard_docs=0"
            )
        memory = None if opts.memory is None else parse_size(opts.memory)
        if memory is not None and opts.shard_docs:
            raise SpecError(
                f"bm25: memory={opts.memory} chooses shard_docs itself (from the corpus and the "
                f"budget); give memory= or shard_docs={opts.shard_docs}, not both"
            )
        if memory is not None and opts.backend != "lucene" and opts.method not in SHARDED_METHODS:
            raise SpecError(
                f"bm25: memory= may choose the sharded index, which needs method="
                f"{'|'.join(SHARDED_METHODS)} (got {opts.method!r}, whose non-occurrence score "
                "it does not carry); drop memory="
            )
        analyzer = opts.analyzer.strip().lower() or "auto"
        if opts.backend == "lucene":
            _check_lucene(opts, stemmer, analyzer)
        elif opts.backend == "pisa":
            stemmer = check_pisa_options(opts, analyzer)
        elif opts.fields != "flat":
            raise SpecError(
                "bm25: fields=multifield is a layout of backend=lucene; add backend=lucene"
            )
        if opts.backend != "pisa":
            _check_not_pisa(opts)
        if analyzer not in ("auto", "bm25s"):
            analyzer = get_analyzer(analyzer).name  # SpecError when unknown
        self.options = replace(
            opts, stemmer=stemmer, stopwords=opts.stopwords.lower(), analyzer=analyzer
        )
        self.k1 = self.options.k1
        self.b = self.options.b
        self.method = self.options.method
        self.delta = self.options.delta
        self.stemmer = self.options.stemmer
        self.stopwords = self.options.stopwords
        self.cache = self.options.cache
        self.backend = self.options.backend
        self.threads = self.options.threads
        self.analyzer = self.options.analyzer
        self.shard_docs = self.options.shard_docs
        self.memory = memory  # the budget in bytes (None: no budget)
        self._plan: tuple[Any, MemoryPlan] | None = None  # (weak ref to the corpus, its plan)
        self.fields = self.options.fields
        self.algorithm = self.options.algorithm  # backend=pisa
        self.encoding = self.options.encoding
        if self.backend in ("lucene", "pisa"):  # the run cache keys on it
            self.identity = self._engine_identity
        else:
            self.identity = self._bm25s_identity

    # --- description -----------------------------------------------------------------------
    @property
    def params(self) -> dict[str, Any]:
        """Every option that changes the results (``delta`` only for bm25l / bm25+; with
        ``backend=lucene``: ``k1``, ``b``, ``backend`` and ``fields``; with ``backend=pisa``:
        ``k1``, ``b``, ``backend``, ``stemmer``, ``stopwords``, ``algorithm`` and ``encoding``)."""
        if self.backend == "lucene":
            return {"k1": self.k1, "b": self.b, "backend": "lucene", "fields": self.fields}
        if self.backend == "pisa":
            return pisa.engine_params(self)
        out = {k: getattr(self, k) for k in self._RESULT_OPTIONS}
        if self.method not in _NONOCCURRENCE_METHODS:
            out.pop("delta")
        if self.analyzer != "auto":
            out["analyzer"] = self.analyzer
        return out

    @property
    def name(self) -> str:
        """Canonical spec: ``bm25`` plus the options that differ from the defaults."""
        defaults = BM25Options.params()
        changed = {
            k: v
            for k, v in self.params.items()
            if not (defaults[k].default == v and type(defaults[k].default) is type(v))
        }
        return format_colon_spec("bm25", changed)

    def __repr__(self) -> str:
        return f"<BM25 {self.name}>"

    def _engine_identity(self) -> dict[str, Any]:
        """What identifies a ``backend=lucene`` or ``pisa`` run: the spec plus the engine's
        versions (Pyserini's and Anserini's, or pyterrier-pisa's), so that another engine does
        not reuse cached runs."""
        engine = (
            lucene_index_key(self.fields)
            if self.backend == "lucene"
            else pisa.engine_versions(self)
        )
        return {
            "name": self.name,
            "params": self.params,
            "class": f"{type(self).__module__}.{type(self).__qualname__}",
            "engine": engine,
        }

    def _bm25s_identity(self) -> dict[str, Any]:
        """What identifies a bm25s run in the run cache: name, params and :data:`TIE_ORDER`.
        Not the layout (``memory=``, ``shard_docs``): the single and the sharded index give the
        same run, ties at the k-th score included, so their runs are served to each other."""
        return {
            "name": self.name,
            "params": self.params,
            "class": f"{type(self).__module__}.{type(self).__qualname__}",
            "ties": TIE_ORDER,
        }

    def cache_key(self, corpus: Corpus) -> str:
        """The key of the index of *corpus* under these parameters in the artifact store (hex, 24)."""
        return self._artifact(corpus).key

    def _artifact(self, corpus: Corpus) -> Artifact:
        return Artifact(
            "bm25",
            self._key_params(self._layout(corpus)),
            {"corpus": corpus.fingerprint()},
            label=self.name,
        )

    @property
    def plans_layout(self) -> bool:
        """Whether the layout is chosen from the corpus and a memory budget: with ``memory=``,
        and for plain ``bm25`` (the default budget), but not with ``shard_docs``,
        ``backend=lucene``/``pisa`` or ``bm25l``/``bm25+`` (single index only)."""
        if self.memory is not None:
            return True
        return (
            not self.shard_docs
            and self.backend not in ("lucene", "pisa")
            and self.method in SHARDED_METHODS
        )

    def memory_plan(self, corpus: Corpus) -> MemoryPlan | None:
        """The layout chosen for *corpus* (logged once per corpus): with ``memory=``,
        :func:`~nuggetbench.retrieval.bm25.memory.plan_memory` under that budget; for plain
        ``bm25``, :func:`~nuggetbench.retrieval.bm25.memory.plan_default` (2 GiB, or half the
        available memory when less; never refused); ``None`` when not :attr:`plans_layout`.

        Raises:
            SpecError: ``memory=`` is too small even for the smallest shards.
        """
        if not self.plans_layout:
            return None
        if self._plan is None or self._plan[0]() is not corpus:
            if self.memory is None:
                plan = plan_default(corpus)
            else:
                plan = plan_memory(corpus, self.memory)
            log.info("%s", plan.describe())
            self._plan = (weakref.ref(corpus), plan)
        return self._plan[1]

    def _layout(self, corpus: Corpus) -> int:
        """Documents per shard of the index of *corpus*: ``shard_docs``, or the one chosen for
        the budget (:meth:`memory_plan`); 0 for the single index."""
        plan = self.memory_plan(corpus)
        return self.shard_docs if plan is None else plan.shard_docs

    def _key_params(self, shard_docs: int) -> dict[str, Any]:
        import bm25s

        payload = {
            "bm25_format": CACHE_FORMAT,
            "bm25s": bm25s.__version__,
            "token_pattern": r"(?u)\b\w\w+\b",
            "lower": True,
            **{k: getattr(self, k) for k in self._RESULT_OPTIONS},
        }
        if self.analyzer not in ("auto", "bm25s"):
            payload["analyzer"] = get_analyzer(self.analyzer).params
        if shard_docs:  # the sharded index is another artifact (same scores, other files)
            payload["shard_docs"] = shard_docs
        return payload

    # --- tokenization ------------------------------------------------------------------------
    def for_language(self, language: str | None) -> BM25:
        """This retriever for a dataset in *language* (``de``, ``japanese``...).

        With ``analyzer=auto``, a copy whose analyzer is the language's (English and ``None``
        keep bm25s' tokenizer); an explicit analyzer is kept unchanged.
        """
        if self.analyzer != "auto":
            return self
        name = analyzer_for_language(language)
        if name is None:
            return self
        if self.backend in ("lucene", "pisa"):
            engine = "Lucene's English analyzer" if self.backend == "lucene" else "PISA's tokenizer"
            raise SpecError(
                f"bm25: backend={self.backend} indexes with {engine}, but the dataset's language "
                f"is {language!r}; use the bm25s backend (bm25 without backend={self.backend})"
            )
        clone = copy.copy(self)
        clone.analyzer = name
        clone.identity = clone._bm25s_identity  # bound to the clone, whose params name its analyzer
        return clone

    def tokenize(self, texts: list[str], *, return_ids: bool = False, show_progress: bool = False):
        """*texts* tokenized as this retriever indexes them (:func:`.index.tokenize_texts` with
        :attr:`tokenizer`): token strings per text, or a ``bm25s`` ``Tokenized`` (ids and
        vocabulary) with *return_ids*."""
        return tokenize_texts(
            texts,
            tokenizer=self.tokenizer,
            return_ids=return_ids,
            show_progress=show_progress,
        )

    @property
    def tokenizer(self) -> tuple[str, str, str]:
        """``(analyzer, stemmer, stopwords)``: what :func:`.index.tokenize_texts` needs
        (plain strings, so a worker process can tokenize as this retriever does)."""
        return (self.analyzer, self.stemmer, self.stopwords)

    # --- indexing ----------------------------------------------------------------------------
    def index(
        self, corpus: Corpus, *, show_progress: bool = False
    ) -> BM25Index | ShardedBM25Index | LuceneIndex | PisaIndex:
        """Index *corpus* (``title + " " + text`` of each document), or load the cached index.

        With ``backend=lucene``, a :class:`~nuggetbench.retrieval.bm25.lucene.LuceneIndex` built by
        Pyserini (:func:`~nuggetbench.retrieval.bm25.lucene.build_lucene_index`); with
        ``backend=pisa``, a :class:`~nuggetbench.retrieval.bm25.pisa.PisaIndex`
        (:func:`~nuggetbench.retrieval.bm25.pisa.build_pisa_index`).

        Raises:
            InputError: the corpus is empty, or no document has a single indexable term (every
                text empty or made of stop words / one-letter tokens): nothing could be ranked.
            ModelError: ``backend=lucene`` without Pyserini or Java (names the extra), or
                PISA failed.
        """
        if self.backend == "pisa":
            return pisa.engine_build(self, corpus, show_progress=show_progress)
        if self.backend == "lucene":
            return build_lucene_index(
                corpus,
                layout=self.fields,
                k1=self.k1,
                b=self.b,
                threads=self.threads,
                cache=self.cache,
                name=self.name,
                params=self.params,
                show_progress=show_progress,
            )
        shard_docs = self._layout(corpus)
        if shard_docs:
            return self._index_sharded(corpus, shard_docs, show_progress=show_progress)
        artifact = self._artifact(corpus) if self.cache else None
        if artifact is not None and artifact.path.exists():
            loaded = self._load(artifact, corpus)
            if loaded is not None:
                return loaded
            artifact.discard()  # unreadable or partial: rebuilt below
        import bm25s

        doc_ids: list[str] = []
        texts: list[str] = []
        for doc in corpus.iter_documents():
            doc_ids.append(doc.doc_id)
            texts.append(doc.full_text)
        if not doc_ids:
            raise InputError(f"cannot index an empty corpus ({corpus.name or corpus!r})")
        with stage_bar(show_progress, f"bm25 index ({len(doc_ids)} docs)", 2) as bar:
            bar.step("tokenizing")  # one bar for the stage, not bm25s' four
            tokens = self.tokenize(texts, return_ids=True)
            del texts
            if not len(getattr(tokens, "vocab", None) or {}):
                raise InputError(
                    f"cannot index the corpus{' ' + repr(corpus.name) if corpus.name else ''}: "
                    f"none of its {len(doc_ids)} documents has an indexable term (every title "
                    f"and text is empty or made of stop words after {self.analyzer!r} analysis "
                    f"with stopwords={self.stopwords!r}); check the corpus's text fields, or "
                    "index with bm25:stopwords=none"
                )
            retriever = bm25s.BM25(
                k1=self.k1, b=self.b, delta=self.delta, method=self.method, backend="numpy"
            )
            bar.step("scoring")
            retriever.index(tokens, show_progress=False)
        if artifact is not None:
            self._save(artifact, retriever, doc_ids, corpus)
        return BM25Index(self, retriever, doc_ids, from_cache=False)

    def _save(self, artifact: Artifact, retriever: Any, doc_ids: list[str], corpus: Corpus) -> None:
        import bm25s

        try:
            with artifact.build() as (staging, meta):
                retriever.save(str(staging), show_progress=False)
                with atomic_write(staging / "doc_ids.json") as fh:
                    json.dump(doc_ids, fh, ensure_ascii=False)
                meta.update(
                    retriever=self.name,
                    params=self.params,
                    corpus_fingerprint=corpus.fingerprint(),
                    n_docs=len(doc_ids),
                    bm25s_version=bm25s.__version__,
                    **self._plan_meta(corpus),
                )
        except OSError as exc:
            log.warning("could not cache the BM25 index in %s: %s", artifact.path, exc)

    def _load(self, artifact: Artifact, corpus: Corpus) -> BM25Index | None:
        import bm25s

        folder = artifact.path
        try:
            meta = artifact.meta()
            if meta is None:
                raise ValueError("no meta.json for these parameters")
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

    def _index_sharded(
        self, corpus: Corpus, shard_docs: int, *, show_progress: bool
    ) -> ShardedBM25Index:
        """The sharded index (:mod:`nuggetbench.retrieval.bm25.sharded`), built or resumed in
        ``<artifact>.partial/`` and moved into the artifact folder; without the cache, in a
        temporary folder removed with the index."""
        if not self.cache:
            tmp = new_temporary()
            work = Path(tmp.name) / "partial"
            summary = build_sharded(
                self, corpus, work, shard_docs=shard_docs, show_progress=show_progress
            )
            final = Path(tmp.name) / "index"
            final.mkdir()
            finish(work, final, summary["n_shards"])
            return ShardedBM25Index(self, final, from_cache=False, keep=tmp)
        artifact = self._artifact(corpus)
        if artifact.path.exists():
            meta = artifact.meta()
            if meta is not None and meta.get("corpus_fingerprint") == corpus.fingerprint():
                try:
                    return ShardedBM25Index(self, artifact.path, from_cache=True)
                except (OSError, ValueError, KeyError) as exc:
                    log.warning("ignoring the unreadable BM25 cache %s (%s)", artifact.path, exc)
            artifact.discard()
        work = artifact.path.with_name(artifact.path.name + ".partial")
        summary = build_sharded(
            self, corpus, work, shard_docs=shard_docs, show_progress=show_progress
        )
        with artifact.build() as (staging, meta):
            finish(work, staging, summary["n_shards"])
            meta.update(
                retriever=self.name,
                params=self.params,
                corpus_fingerprint=corpus.fingerprint(),
                **summary,
                **self._plan_meta(corpus),
            )
        shutil.rmtree(work, ignore_errors=True)
        return ShardedBM25Index(self, artifact.path, from_cache=False)

    def _plan_meta(self, corpus: Corpus) -> dict[str, Any]:
        """``{"memory_plan": ...}`` for the index's meta.json when a budget (given or the
        default) chose the layout."""
        plan = self.memory_plan(corpus)
        return {} if plan is None else {"memory_plan": plan.as_dict()}


def _check_not_pisa(opts: BM25Options) -> None:
    """Refuse the options of ``backend=pisa`` with another backend."""
    changed = [
        f"{name}={getattr(opts, name)}"
        for name in ("algorithm", "encoding")
        if getattr(opts, name) != getattr(BM25Options, name)
    ]
    if opts.stopwords.lower() in ("terrier", "lucene"):
        changed.append(f"stopwords={opts.stopwords}")
    if changed:
        raise SpecError(
            f"bm25: {', '.join(changed)} belong to backend=pisa (pyterrier-pisa); add "
            "backend=pisa, or drop them"
        )


def _check_lucene(opts: BM25Options, stemmer: str, analyzer: str) -> None:
    """Refuse options that ``backend=lucene`` cannot honour (it uses Lucene's own analyzer)."""
    defaults = BM25Options()
    changed = [
        f"{name}={value}"
        for name, value, default in (
            ("method", opts.method, defaults.method),
            ("stemmer", stemmer, defaults.stemmer),
            ("stopwords", opts.stopwords.lower(), defaults.stopwords),
            ("analyzer", analyzer, defaults.analyzer),
            ("shard_docs", opts.shard_docs, defaults.shard_docs),
            ("memory", opts.memory, defaults.memory),
        )
        if value != default
    ]
    if changed:
        heap = (
            "; Lucene's memory is its JVM heap, NUGGETBENCH_LUCENE_HEAP (default 4g)"
            if opts.memory is not None
            else ""
        )
        raise SpecError(
            f"bm25: backend=lucene uses Lucene's BM25 and English analyzer (Porter stemmer, Lucene's "
            f"stop words), as Pyserini; {', '.join(changed)} belong to the bm25s backend "
            f"(drop them, or drop backend=lucene){heap}"
        )
    # The spec is checked first, so that a wrong option is named even without Pyserini.
    if not lucene_available():
        raise SpecError(f"bm25: backend=lucene needs Pyserini and Java: {LUCENE_EXTRA}")
