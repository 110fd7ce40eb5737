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
import logging
import shutil
import weakref
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from nuggetbench.data import Corpus
from nuggetbench.errors import SpecError, suggest
from nuggetbench.retrieval.bm25 import lucene, pisa
from nuggetbench.retrieval.bm25.engine import Engine
from nuggetbench.retrieval.bm25.index import BM25Index, build_single
from nuggetbench.retrieval.bm25.memory import MemoryPlan, parse_size, plan_default, plan_memory
from nuggetbench.retrieval.bm25.scoring import NONOCCURRENCE_METHODS
from nuggetbench.retrieval.bm25.sharded import (
    SHARDED_METHODS,
    ShardedBM25Index,
    build_sharded,
    finish,
    new_temporary,
)
from nuggetbench.retrieval.bm25.tokens import Tokenizer
from nuggetbench.retrieval.bm25.topk import numba_available
from nuggetbench.retrieval.compose.pipeline import Composable
from nuggetbench.retrieval.options import METHODS, STOPWORDS, BM25Options
from nuggetbench.retrieval.protocols import IndexBase
from nuggetbench.spec import format_colon_spec
from nuggetbench.store import Artifact
from nuggetbench.text.analyzers import analyzer_for_language, get_analyzer

__all__ = ["BM25", "BM25Options", "METHODS", "STOPWORDS"]

log = logging.getLogger(__name__)

CACHE_FORMAT = 1
#: how a run is cut at the k-th score, in the run cache's identity (runs cut by bm25s' arbitrary
#: tie order, before both layouts cut ties by doc id, are not served again)
TIE_ORDER = "score desc, doc id desc"

#: The external engines, by ``backend`` value: each one :class:`~.engine.Engine` record in its
#: module (a new engine: its module's ``ENGINE``, one line here, its name among
#: ``BM25Options.backend``'s choices). The bm25s layouts, ``single`` and ``sharded``, are
#: :data:`LAYOUTS`.
ENGINES: dict[str, Engine] = {"lucene": lucene.ENGINE, "pisa": pisa.ENGINE}


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
        analyzer = opts.analyzer.strip().lower() or "auto"
        memory = None if opts.memory is None else parse_size(opts.memory)
        self.engine: Engine | None = ENGINES.get(opts.backend)
        if self.engine is not None:
            _check_engine(self.engine, opts, stemmer, analyzer)
            if self.engine.check is not None:  # the engine's own values (its stemmers...)
                opts = self.engine.check(opts)
                stemmer = opts.stemmer.lower()
        else:
            _check_bm25s(opts, stemmer, memory)
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
        self.algorithm = self.options.algorithm  # backend=pisa's own options
        self.encoding = self.options.encoding
        # the run cache keys on it (a method bound to this object: see for_language)
        self.identity = self._engine_identity if self.engine else self._bm25s_identity

    # --- description -----------------------------------------------------------------------
    @property
    def params(self) -> dict[str, Any]:
        """Every option that changes the results (``delta`` only for bm25l / bm25+; with an
        external engine, the engine's: ``k1``, ``b``, ``backend`` and ``fields`` for Lucene)."""
        if self.engine is not None:
            return self.engine.params(self)
        out = {k: getattr(self, k) for k in self._RESULT_OPTIONS}
        if self.method not in NONOCCURRENCE_METHODS:
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
        """What identifies an external engine's run: the spec plus the engine's versions
        (:attr:`.engine.Engine.versions`: Pyserini's and Anserini's for Lucene), so that another
        version does not reuse cached runs."""
        assert self.engine is not None
        return {
            "name": self.name,
            "params": self.params,
            "class": f"{type(self).__module__}.{type(self).__qualname__}",
            **self.engine.versions(self),
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
        return self.artifact(corpus).key

    def artifact(self, corpus: Corpus) -> Artifact:
        """Where the bm25s index of *corpus* (its layout's) is kept in the artifact store."""
        return Artifact(
            "bm25",
            self._key_params(self._shard_docs(corpus)),
            {"corpus": corpus.fingerprint()},
            label=self.name,
        )

    @property
    def plans_layout(self) -> bool:
        """Whether the layout is chosen from the corpus and a memory budget: with ``memory=``,
        and for plain ``bm25`` (the default budget), but not with ``shard_docs``, an external
        engine or ``bm25l``/``bm25+`` (single index only)."""
        if self.engine is not None:
            return False
        if self.memory is not None:
            return True
        return not self.shard_docs and self.method in SHARDED_METHODS

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

    def _shard_docs(self, corpus: Corpus) -> int:
        """Documents per shard of the index of *corpus*: ``shard_docs``, or the one chosen for
        the budget (:meth:`memory_plan`); 0 for the single index."""
        plan = self.memory_plan(corpus)
        return self.shard_docs if plan is None else plan.shard_docs

    def layout(self, corpus: Corpus) -> str:
        """The index layout *corpus* gets: an external engine's name (``backend=lucene``),
        else ``sharded`` or ``single`` (``shard_docs``, or the memory plan): a key of
        :data:`LAYOUTS`, or of :data:`ENGINES`."""
        if self.engine is not None:
            return self.engine.name
        return "sharded" if self._shard_docs(corpus) else "single"

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

    def plan_meta(self, corpus: Corpus) -> dict[str, Any]:
        """``{"memory_plan": ...}`` for the index's meta.json when a budget (given or the
        default) chose the layout."""
        plan = self.memory_plan(corpus)
        return {} if plan is None else {"memory_plan": plan.as_dict()}

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
        if self.engine is not None:
            raise SpecError(
                f"bm25: backend={self.engine.name} indexes with its own English analyzer, but "
                f"the dataset's language is {language!r}; use the bm25s backend (bm25 without "
                f"backend={self.engine.name})"
            )
        clone = copy.copy(self)
        clone.analyzer = name
        clone.identity = clone._bm25s_identity  # bound to the clone, whose params name its analyzer
        return clone

    def tokenize(self, texts: list[str], *, return_ids: bool = False, show_progress: bool = False):
        """*texts* tokenized as this retriever indexes them (:meth:`.tokens.Tokenizer.tokenize`
        of :attr:`tokenizer`): token strings per text, or a ``bm25s`` ``Tokenized`` (ids and
        vocabulary) with *return_ids*."""
        return self.tokenizer.tokenize(texts, return_ids=return_ids, show_progress=show_progress)

    @property
    def tokenizer(self) -> Tokenizer:
        """``Tokenizer(analyzer, stemmer, stopwords)``: how this retriever tokenizes (plain
        strings, so a worker process can tokenize as this retriever does)."""
        return Tokenizer(self.analyzer, self.stemmer, self.stopwords)

    # --- indexing ----------------------------------------------------------------------------
    def index(self, corpus: Corpus, *, show_progress: bool = False) -> IndexBase:
        """Index *corpus* (``title + " " + text`` of each document), or load the cached index:
        the layout :meth:`layout` names, built by :data:`LAYOUTS` or :data:`ENGINES`
        (``backend=lucene``: a :class:`~nuggetbench.retrieval.bm25.lucene.LuceneIndex` built
        by Pyserini).

        Raises:
            InputError: the corpus is empty, or no document has a single indexable term (every
                text empty or made of stop words / one-letter tokens): nothing could be ranked.
            ModelError: an external engine is missing (names the extra), or a tokenizing worker
                process died.
        """
        if self.engine is not None:
            return self.engine.index(self, corpus, show_progress=show_progress)
        return LAYOUTS[self.layout(corpus)](self, corpus, show_progress=show_progress)


def _index_single(retriever: BM25, corpus: Corpus, *, show_progress: bool) -> BM25Index:
    """The single index (:func:`.index.build_single`), cached in :meth:`BM25.artifact`."""
    artifact = retriever.artifact(corpus) if retriever.cache else None
    return build_single(retriever, corpus, artifact, show_progress=show_progress)


def _index_sharded(retriever: BM25, corpus: Corpus, *, show_progress: bool) -> ShardedBM25Index:
    """The sharded index (:mod:`nuggetbench.retrieval.bm25.sharded`), built or resumed in
    ``<artifact>.partial/`` and moved into the artifact folder; without the cache, in a
    temporary folder removed with the index."""
    shard_docs = retriever._shard_docs(corpus)
    if not retriever.cache:
        tmp = new_temporary()
        work = Path(tmp.name) / "partial"
        summary = build_sharded(
            retriever, corpus, work, shard_docs=shard_docs, show_progress=show_progress
        )
        final = Path(tmp.name) / "index"
        final.mkdir()
        finish(work, final, summary["n_shards"])
        return ShardedBM25Index(retriever, final, from_cache=False, keep=tmp)
    artifact = retriever.artifact(corpus)
    if artifact.path.exists():
        meta = artifact.meta()
        if meta is not None and meta.get("corpus_fingerprint") == corpus.fingerprint():
            try:
                return ShardedBM25Index(retriever, artifact.path, from_cache=True)
            except (OSError, ValueError, KeyError) as exc:
                log.warning("ignoring the unreadable BM25 cache %s (%s)", artifact.path, exc)
        artifact.discard()
    work = artifact.path.with_name(artifact.path.name + ".partial")
    summary = build_sharded(
        retriever, corpus, work, shard_docs=shard_docs, show_progress=show_progress
    )
    with artifact.build() as (staging, meta):
        finish(work, staging, summary["n_shards"])
        meta.update(
            retriever=retriever.name,
            params=retriever.params,
            corpus_fingerprint=corpus.fingerprint(),
            **summary,
            **retriever.plan_meta(corpus),
        )
    shutil.rmtree(work, ignore_errors=True)
    return ShardedBM25Index(retriever, artifact.path, from_cache=False)


#: The bm25s index layouts, by :meth:`BM25.layout` name: ``(retriever, corpus, *,
#: show_progress) -> index``.
LAYOUTS: dict[str, Callable[..., IndexBase]] = {"single": _index_single, "sharded": _index_sharded}


def _check_bm25s(opts: BM25Options, stemmer: str, memory: int | None) -> None:
    """Refuse the bm25s backend's impossible combinations (and an unknown stemmer)."""
    if stemmer != "none":
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
    if memory is not None and opts.shard_docs:
        raise SpecError(
            f"bm25: memory={opts.memory} chooses shard_docs itself (from the corpus and the "
            f"budget); give memory= or shard_docs={opts.shard_docs}, not both"
        )
    if memory is not None and opts.method not in SHARDED_METHODS:
        raise SpecError(
            f"bm25: memory= may choose the sharded index, which needs method="
            f"{'|'.join(SHARDED_METHODS)} (got {opts.method!r}, whose non-occurrence score "
            "it does not carry); drop memory="
        )
    defaults = BM25Options()
    for engine in ENGINES.values():
        for name in engine.own:
            value = getattr(opts, name)
            if value != getattr(defaults, name):
                raise SpecError(
                    f"bm25: {name}={value} is an option of backend={engine.name}; add "
                    f"backend={engine.name}, or drop {name}="
                )
        for name, values in engine.own_values:
            value = str(getattr(opts, name)).lower()
            if value in values:
                raise SpecError(
                    f"bm25: {name}={value} is a value of backend={engine.name} only; add "
                    f"backend={engine.name}, or choose another {name}"
                )


def _check_engine(engine: Engine, opts: BM25Options, stemmer: str, analyzer: str) -> None:
    """Refuse the options an external *engine* does not honour (those that differ from their
    defaults, all named at once), then check that it is installed: the spec is checked first,
    so that a wrong option is named even without the engine."""
    defaults = BM25Options()
    given = {**vars(opts), "stemmer": stemmer, "stopwords": opts.stopwords.lower()}
    given["analyzer"] = analyzer
    changed = [
        f"{name}={given[name]}"
        for name in BM25Options.params()
        if name not in engine.options
        and name != "backend"
        and given[name] != getattr(defaults, name)
    ]
    if changed:
        note = f"; {engine.memory_note}" if opts.memory is not None and engine.memory_note else ""
        raise SpecError(
            f"bm25: backend={engine.name} {engine.about}; {', '.join(changed)} belong to the "
            f"bm25s backend (drop them, or drop backend={engine.name}){note}"
        )
    if not engine.available():
        raise SpecError(f"bm25: backend={engine.name} needs {engine.requires}: {engine.extra}")
