"""Caching wrappers: a retriever whose runs are served from the artifact store.

:class:`CachedRetriever` wraps any retriever with the same protocol; its index is only built when
a search misses the cache, so a second experiment, or a pipeline or fusion sharing a first stage,
neither encodes nor indexes anything. :class:`RunCache` keeps the runs of one retriever on one
corpus and query set (and filter, and objective) at every depth searched: an
:class:`~nuggetbench.store.Artifact` folder ``<home>/cache/runs/<label>-<key>/`` holding
``k<depth>.trec`` plus ``k<depth>.json`` (written last, atomically), so a request for depth *k* is
served by the smallest cached depth >= *k*, truncated. Beside the TREC file, ``k<depth>.npz`` holds
the same run by columns (distinct ids as UTF-8 text, integer codes, float64 scores; no pickle),
which a warm start reads in milliseconds instead of parsing the text; a cache without it (older
versions) or with an unreadable one is read from the TREC file.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import time
import zipfile
from collections.abc import Mapping
from typing import Any

import numpy as np

from nuggetbench._atomic import atomic_write
from nuggetbench._version import __version__
from nuggetbench.data import Run, write_run
from nuggetbench.data import read_trec_run as read_run  # the name tests spy on
from nuggetbench.errors import InputError
from nuggetbench.retrieval.models.topk import with_empty_queries
from nuggetbench.retrieval.protocols import search, uses_objective
from nuggetbench.store import Artifact, spec_file_name

log = logging.getLogger(__name__)

__all__ = [
    "CachedIndex",
    "CachedRetriever",
    "RunCache",
    "doc_filter_digest",
    "raise_if_empty",
    "retriever_identity",
    "why_empty",
]


def _canonical(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


def doc_filter_digest(doc_filter: Mapping[str, Any] | None) -> str | None:
    """SHA-256 (16 hex) of a ``{query_id: doc ids}`` filter, order-independent; ``None`` for none."""
    if not doc_filter:
        return None
    h = hashlib.sha256()
    for q in sorted(doc_filter):
        docs = "\x1f".join(sorted(map(str, doc_filter[q])))
        h.update(q.encode() + b"\x1f" + docs.encode() + b"\x1e")
    return h.hexdigest()[:16]


class RunCache:
    """Cached runs of one retriever on one corpus and query set, at any depth.

    The folder ``<home>/cache/runs/<label>-<key>/`` (key: the *fields*, which must not include the
    depth) holds ``k<depth>.trec`` and ``k<depth>.json`` (name, metadata, queries without results,
    the key fields; written last). A request for depth *k* is served by the smallest cached depth
    >= *k*, truncated: the top *k* of a deeper run are the same documents in the same order.

    Args:
        fields: key fields (retriever identity, corpus and queries fingerprints, filter...).
        label: folder-name prefix.
    """

    def __init__(self, fields: Mapping[str, Any], *, label: str = "run"):
        self.artifact = Artifact("runs", fields, label=label)
        self.fields = self.artifact.fields
        self.path = self.artifact.path
        #: ``(TREC file, its tag)`` holding exactly the run last loaded or saved (``None``: none,
        #: or the run was cut from a deeper one)
        self.served: tuple[Any, str] | None = None

    def depths(self) -> list[int]:
        """Depths cached, ascending."""
        if not self.path.exists():
            return []
        found = (re.fullmatch(r"k(\d+)\.json", p.name) for p in self.path.iterdir())
        return sorted(int(m.group(1)) for m in found if m)

    def load(self, k: int, *, exact: bool = False):
        """The cached run truncated to depth *k*, or ``None`` when no cached depth >= *k* exists
        (with *exact*, only depth *k* itself serves: for retrievers whose top *k* depends on *k*)."""
        self.served = None
        for depth in (d for d in self.depths() if (d == k if exact else d >= k)):
            try:
                meta = json.loads((self.path / f"k{depth}.json").read_text())
            except (OSError, json.JSONDecodeError):
                continue
            if _canonical(meta.get("fields")) != _canonical(self.fields):
                continue
            trec = self.path / f"k{depth}.trec"
            # the columns and the copy serve only while the text is the file written beside them
            same = meta.get("trec_stat") is not None and _stat(trec) == meta.get("trec_stat")
            run = (
                _read_columns(self.path / f"k{depth}.npz") if same and meta.get("columns") else None
            )
            if run is None:
                run = read_run(trec)
            if meta.get("queries_without_results"):
                run = with_empty_queries(run, meta["queries_without_results"])
            metadata = dict(meta.get("metadata") or {}, cached=True, cached_depth=depth)
            cut = run.truncate(k)
            if cut is run and same and meta.get("tag"):  # the TREC file holds exactly this run
                self.served = (trec, str(meta["tag"]))
            return cut.with_name(meta.get("name"), metadata)
        return None

    def save(self, run, k: int) -> None:
        """Store *run*, searched at depth *k* (its name and metadata go to ``k<k>.json``)."""
        empty = [q for q, n in zip(run.query_ids, run.lengths().tolist()) if n == 0]
        meta = {
            "fields": self.fields,
            "name": run.name,
            "metadata": json.loads(json.dumps(run.metadata, default=str)),
            "queries_without_results": empty,
            "created": time.strftime("%Y-%m-%dT%H:%M:%S"),
            "nuggetbench": __version__,
        }
        tag = spec_file_name(run.name or "run")
        write_run(run, self.path / f"k{int(k)}.trec", tag=tag)  # checks every id
        meta["tag"] = tag
        meta["trec_stat"] = _stat(self.path / f"k{int(k)}.trec")
        meta["columns"] = _write_columns(run, self.path / f"k{int(k)}.npz")
        with atomic_write(self.path / f"k{int(k)}.json") as fh:
            json.dump(meta, fh, indent=1, default=str)
        self.served = (self.path / f"k{int(k)}.trec", tag)


COLUMNS_FORMAT = 1


def _stat(path) -> list[int] | None:
    """``[size, mtime_ns]`` of *path* (``None`` when it cannot be read)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns]


def _id_blob(ids: np.ndarray) -> np.ndarray:
    """Ids (no newline in any: the TREC writer checked them) as one UTF-8 byte array."""
    return np.frombuffer("\n".join(ids.tolist()).encode("utf-8"), dtype=np.uint8)


def _ids(blob: np.ndarray, n: int) -> np.ndarray:
    ids = blob.tobytes().decode("utf-8").split("\n") if n else []
    if len(ids) != n:
        raise ValueError(f"{len(ids)} ids where {n} were written")
    return np.array(ids, dtype=object)


def _write_columns(run: Any, path) -> int | None:
    """Save *run* by columns in *path* (``.npz``); its format number, or ``None`` when *run* is not
    a :class:`Run` (then only the TREC file serves)."""
    if not isinstance(run, Run):
        return None
    qids, starts = run.query_offsets()
    uniques, codes = run.doc_codes()
    with atomic_write(path, "wb") as fh:
        np.savez(
            fh,
            format=np.int64(COLUMNS_FORMAT),
            n_queries=np.int64(len(qids)),
            queries=_id_blob(qids),
            starts=np.asarray(starts, dtype=np.int64),
            n_docs=np.int64(len(uniques)),
            docs=_id_blob(uniques),
            codes=np.asarray(codes, dtype=np.int64),
            scores=np.asarray(run.score_column(), dtype=np.float64),
        )
    return COLUMNS_FORMAT


def _read_columns(path) -> Run | None:
    """The run :func:`_write_columns` saved, built (and ranked, and checked) as any run is;
    ``None`` when the file is missing or not consistent (the TREC file serves then)."""
    try:
        with np.load(path, allow_pickle=False) as z:
            if int(z["format"]) != COLUMNS_FORMAT:
                return None
            qids = _ids(z["queries"], int(z["n_queries"]))
            docs = _ids(z["docs"], int(z["n_docs"]))
            starts, codes, scores = z["starts"], z["codes"], z["scores"]
        counts = np.diff(starts)
        if (
            len(starts) != len(qids) + 1
            or starts[0] != 0
            or (counts < 0).any()
            or starts[-1] != len(codes)
            or len(codes) != len(scores)
            or (len(codes) and (codes.min() < 0 or codes.max() >= len(docs)))
        ):
            raise ValueError("the columns do not fit together")
        qcodes = np.repeat(np.arange(len(qids), dtype=np.int64), counts)
        return Run.from_codes(qids, qcodes, docs, codes, scores, source=str(path))
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
        log.warning("ignoring the unreadable run columns %s (%s); reading the TREC file", path, exc)
        return None


#: The warning after the count of :func:`failed_answers`.
UNUSABLE = (
    "LLM answers stayed unusable after their re-asks (a listwise window that ranked no passage "
    "keeps the order its passages came in, a pointwise pair with no grade scores the lowest; "
    "run_metadata.llm.failed in results.json); not cached: running again asks again; --strict "
    "makes this an error"
)


def failed_answers(metadata: Any) -> int:
    """LLM answers that stayed unusable after their re-asks, from a run's *metadata*
    (``["llm"]["failed"]``, set by the LLM rerankers); such a run is never cached."""
    llm = metadata.get("llm") if isinstance(metadata, dict) else None
    failed = llm.get("failed") if isinstance(llm, dict) else None
    return int(failed) if isinstance(failed, (int, float)) and failed > 0 else 0


def why_empty(run: Any, name: str, n_queries: int, *, searched: int, filtered: bool = False) -> str:
    """The error of a system whose run has no entries: why (as far as the run's metadata and
    the search tell) and what to do. *searched*: the entries before the dataset's
    post-processing; *filtered*: the dataset restricts each query to candidate documents."""
    meta = run.metadata if isinstance(getattr(run, "metadata", None), dict) else {}
    head = f"{name}: the run has no entries (none of the {n_queries} queries got a document)"
    if meta.get("empty_stage"):  # an LLM step's failures keep the entries or stop the run
        stage = meta["empty_stage"]
        return (
            f"{head}: its first stage {stage!r} returned no document for any query, so nothing "
            f"was left to rerank; run the first stage alone (-r {stage!r}) to see why"
        )
    if searched:
        return (
            f"{head}: the search returned {searched} entries and the dataset's post-processing "
            "removed them all (e.g. a query's own document); check the dataset's options"
        )
    if filtered:
        return (
            f"{head}: the dataset restricts each query to its candidate documents and the "
            "search returned none of them; check that the corpus holds the candidates"
        )
    return (
        f"{head}: its queries matched no document; check that the queries are not empty or all "
        "stop words (bm25:stopwords=none keeps them), that the corpus is the dataset's, and the "
        "retriever's options"
    )


def raise_if_empty(run: Any, name: str, dataset: Any, searched: int) -> None:
    """Stop a system whose run has no entries with :func:`why_empty`'s message (*dataset*: its
    ``queries`` and ``doc_filter``; *searched*: the entries before its post-processing).

    Raises:
        InputError: the run has no entries.
    """
    if run.n_entries == 0:
        filtered = getattr(dataset, "doc_filter", None) is not None
        raise InputError(
            why_empty(run, name, len(dataset.queries), searched=searched, filtered=filtered)
        )


def retriever_identity(retriever: Any) -> Any:
    """What identifies a retriever's results: its ``identity()`` when it has one (the neural
    retrievers add the model fingerprint), else its ``name`` and ``params`` (e.g. BM25); ``None``
    when it has neither ``identity()`` nor ``params`` (its runs are then not cached)."""
    fn = getattr(retriever, "identity", None)
    if callable(fn):
        return fn()
    params = getattr(retriever, "params", None)
    if not isinstance(params, dict):
        return None
    return {
        "name": getattr(retriever, "name", None),
        "params": params,
        "class": f"{type(retriever).__module__}.{type(retriever).__qualname__}",
    }


class CachedRetriever:
    """Wraps a retriever so that its search results are cached as runs (same protocol).

    The wrapped retriever's index is only built when a search misses the cache, so a second
    experiment (or a pipeline / fusion reusing the same first stage, at the same or a smaller
    depth) neither encodes nor indexes anything. Retrievers without ``identity()`` or ``params``
    are passed through uncached; a retriever whose top *k* depends on *k* (``depth_dependent``,
    e.g. a fusion without an explicit depth) is served only from a run of the same depth.
    """

    def __init__(self, retriever: Any):
        self.retriever = retriever
        self.name = retriever.name
        self.uses_objective = uses_objective(retriever)

    def identity(self) -> Any:
        return retriever_identity(self.retriever)

    def index(self, corpus, *, show_progress: bool = False) -> CachedIndex:
        return CachedIndex(self.retriever, corpus, show_progress=show_progress)


class CachedIndex:
    """The index side of :class:`CachedRetriever` (built lazily on the first cache miss).

    Attributes:
        hits, misses: cache lookups served and missed.
        run_file: ``(path, tag)`` of the run cache's TREC file that holds exactly the run the
            last search returned, written with that tag; ``None`` when there is none (a run cut
            from a deeper one, or not saved). A caller writing the same run with the same tag may
            copy this file instead.
        index_seconds: wall-clock seconds spent building the wrapped index (0 while it was not
            built: every search so far was served from the cache).
    """

    def __init__(self, retriever: Any, corpus, *, show_progress: bool = False):
        self.retriever = retriever
        self.corpus = corpus
        self.name = retriever.name
        self._inner = None
        self._show_progress = show_progress
        self.hits = 0
        self.misses = 0
        self.index_seconds = 0.0
        self.run_file: tuple[Any, str] | None = None

    def _cache(self, queries, doc_filter, objective) -> RunCache | None:
        identity = retriever_identity(self.retriever)
        if identity is None:
            return None
        fields = {
            "retriever": identity,
            "corpus": self.corpus.fingerprint(),
            "queries": queries.fingerprint(),
            "doc_filter": doc_filter_digest(doc_filter),
            "objective": objective,
            "nuggetbench": __version__,
        }
        return RunCache(fields, label=self.name)

    def search(
        self,
        queries,
        k: int,
        *,
        doc_filter=None,
        show_progress: bool = False,
        objective: str | None = None,
    ):
        """As the wrapped index's ``search``; served from the run cache when possible."""
        cache = self._cache(queries, doc_filter, objective)
        self.run_file = None
        exact = bool(getattr(self.retriever, "depth_dependent", False))
        run = cache.load(k, exact=exact) if cache is not None else None
        if run is not None:
            self.hits += 1
            log.info("reusing cached run %s", cache.path)
            self.run_file = cache.served
            return run
        self.misses += 1
        if self._inner is None:
            started = time.perf_counter()
            self._inner = self.retriever.index(
                self.corpus, show_progress=show_progress or self._show_progress
            )
            self.index_seconds = time.perf_counter() - started
        run = search(
            self._inner,
            queries,
            k,
            doc_filter=doc_filter,
            show_progress=show_progress,
            objective=objective,
        )
        if cache is not None and failed_answers(run.metadata):
            log.info(  # the command's one warning (UNUSABLE) says it too
                "%s: not saved in the run cache (%d LLM answers were unusable): a later run "
                "retrieves again",
                self.name,
                failed_answers(run.metadata),
            )
        elif cache is not None:
            try:
                cache.save(run, k)
                self.run_file = cache.served
            except OSError as exc:  # a cache is optional: a full disk must not cost the run
                log.warning("could not save the run in the run cache %s: %s", cache.path, exc)
        return run
