"""Composition of retrievers and rerankers: ``retriever >> reranker`` and spec strings.

Python::

    pipe = BM25() >> CrossEncoderReranker("cross-encoder/ms-marco-MiniLM-L-6-v2", depth=100)
    run = pipe.index(corpus).search(queries, k=10)

Spec strings (CLI ``-r``)::

    bm25 >> rerank:cross-encoder/ms-marco-MiniLM-L-6-v2@100
    fuse(bm25, dense:sentence-transformers/all-MiniLM-L6-v2; method=rrf)
    fuse(bm25:k1=0.9,b=0.4, dense:MODEL; preset=freshstack) >> colbert:MODEL@50

A stage after ``>>`` is a reranker (an object with ``rerank``); a retriever used there (e.g.
``bm25 >> dense:MODEL``) re-scores the candidates through its index with a ``doc_filter``. The
first stage of a pipeline retrieves ``depth`` documents (the first reranker's depth, default 100),
each reranker re-scores the top ``depth`` of what it receives, and the pipeline returns the top
``k`` of the last stage: documents below a reranker's depth are dropped, as in PyTerrier's
``bm25 % 100 >> reranker``.

In ``fuse(...)`` the retrievers are separated by commas and the fusion options follow a ``;``
(``method``, ``depth``, ``norm``, ``weights`` as ``0.3/0.7``, ``k``, ``preset``); a comma followed by
``name=value`` without a registered retriever prefix continues the previous retriever's options.
"""

from __future__ import annotations

import inspect
import logging
import re
from typing import Any

from ..data import Corpus, Queries, Run
from ..errors import SpecError

log = logging.getLogger(__name__)

DEFAULT_DEPTH = 100


def call_search(
    index: Any,
    queries: Queries,
    k: int,
    *,
    doc_filter=None,
    show_progress: bool = False,
    objective: str | None = None,
) -> Run:
    """``index.search(...)``, passing ``objective`` only to indexes that accept it."""
    kwargs: dict[str, Any] = {"doc_filter": doc_filter, "show_progress": show_progress}
    if objective is not None:
        try:
            params = inspect.signature(index.search).parameters
        except (TypeError, ValueError):  # pragma: no cover
            params = {}
        if "objective" in params or any(p.kind is p.VAR_KEYWORD for p in params.values()):
            kwargs["objective"] = objective
    return index.search(queries, k, **kwargs)


class Composable:
    """Mixin: ``self >> reranker`` builds a :class:`Pipeline`; ``retriever >> self`` too (``__rrshift__``
    lets rerankers compose with retrievers that do not inherit this mixin)."""

    def __rshift__(self, other: Any) -> Pipeline:
        return Pipeline(self, other)

    def __rrshift__(self, other: Any) -> Pipeline:
        return Pipeline(other, self)


class IndexReranker(Composable):
    """Use a retriever as a reranker: its index scores each query's candidates via ``doc_filter``.

    Args:
        retriever: any Retriever.
        depth: candidates re-scored per query.
    """

    def __init__(self, retriever: Any, *, depth: int = DEFAULT_DEPTH):
        self.retriever = retriever
        self.depth = int(depth)
        self.name = retriever.name
        self._index: tuple[str, Any] | None = None

    def identity(self) -> Any:
        from .embcache import retriever_identity

        inner = retriever_identity(self.retriever)
        return None if inner is None else {"rerank_with": inner, "depth": self.depth}

    def rerank(
        self,
        queries: Queries,
        run: Run,
        corpus: Corpus,
        k: int,
        *,
        show_progress: bool = False,
        objective: str | None = None,
    ) -> Run:
        fp = corpus.fingerprint()
        if self._index is None or self._index[0] != fp:
            self._index = (fp, self.retriever.index(corpus, show_progress=show_progress))
        cands = {q: run.doc_ids(q)[:k] for q in queries if q in run}
        cands.update({q: [] for q in queries if q not in run})
        return call_search(
            self._index[1],
            queries,
            k,
            doc_filter=cands,
            show_progress=show_progress,
            objective=objective,
        )


def as_reranker(stage: Any) -> Any:
    """*stage* if it can rerank, else a retriever wrapped in :class:`IndexReranker`.

    Raises:
        SpecError: *stage* has neither ``rerank`` nor ``index``.
    """
    if hasattr(stage, "rerank"):
        return stage
    if hasattr(stage, "index"):
        return IndexReranker(stage)
    raise SpecError(f"{stage!r} cannot follow '>>': it is neither a reranker nor a retriever")


class Pipeline(Composable):
    """A first-stage retriever followed by rerankers (see the module docstring).

    Args:
        first: a Retriever (or a Pipeline, which is flattened).
        *stages: rerankers (retrievers are wrapped in :class:`IndexReranker`).
        cache_runs: serve the first stage from the run cache (:class:`~.embcache.CachedRetriever`)
            so pipelines sharing a first stage, or a later experiment, reuse its run.
    """

    def __init__(self, first: Any, *stages: Any, cache_runs: bool = True):
        if isinstance(first, Pipeline):
            stages = (*first.stages, *stages)
            first = first.first
        if not hasattr(first, "index"):
            raise SpecError(
                f"the first stage of a pipeline must be a retriever, got {getattr(first, 'name', first)!r}"
            )
        more: list[Any] = []
        for s in stages:
            if isinstance(s, Pipeline):
                raise SpecError("a pipeline cannot follow '>>'; compose stages left to right")
            more.append(as_reranker(s))
        self.first = first
        self.stages = more
        self.cache_runs = cache_runs
        self.name = " >> ".join([first.name, *(s.name for s in more)])

    def identity(self) -> Any:
        from .embcache import retriever_identity

        parts = [retriever_identity(self.first), *(retriever_identity(s) for s in self.stages)]
        if None in parts:
            return None
        return {
            "pipeline": parts,
            "depths": [getattr(s, "depth", DEFAULT_DEPTH) for s in self.stages],
        }

    def index(self, corpus: Corpus, *, show_progress: bool = False) -> PipelineIndex:
        from .embcache import CachedRetriever

        first = CachedRetriever(self.first) if self.cache_runs else self.first
        return PipelineIndex(self, first.index(corpus, show_progress=show_progress), corpus)


class PipelineIndex:
    """Index side of :class:`Pipeline`."""

    def __init__(self, pipeline: Pipeline, first_index: Any, corpus: Corpus):
        self.pipeline = pipeline
        self.first_index = first_index
        self.corpus = corpus
        self.name = pipeline.name

    def search(
        self,
        queries: Queries,
        k: int,
        *,
        doc_filter=None,
        show_progress: bool = False,
        objective: str | None = None,
    ) -> Run:
        from .base import check_k

        k = check_k(k)
        stages = self.pipeline.stages
        depth = getattr(stages[0], "depth", DEFAULT_DEPTH) if stages else k
        run = call_search(
            self.first_index,
            queries,
            depth,
            doc_filter=doc_filter,
            show_progress=show_progress,
            objective=objective,
        )
        for stage in stages:
            d = int(getattr(stage, "depth", DEFAULT_DEPTH))
            kwargs: dict[str, Any] = {"show_progress": show_progress}
            if objective is not None and "objective" in inspect.signature(stage.rerank).parameters:
                kwargs["objective"] = objective
            run = stage.rerank(queries, run, self.corpus, d, **kwargs)
        return run.truncate(k).with_name(self.name, {**run.metadata, "pipeline": self.name})


# --- spec strings -------------------------------------------------------------------------------
def split_top(text: str, sep: str) -> list[str]:
    """Split *text* on *sep* outside parentheses."""
    parts, depth, start, i = [], 0, 0, 0
    while i < len(text):
        ch = text[i]
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth < 0:
                raise SpecError(f"retriever spec {text!r}: unbalanced ')'")
        elif depth == 0 and text.startswith(sep, i):
            parts.append(text[start:i])
            i += len(sep)
            start = i
            continue
        i += 1
    if depth != 0:
        raise SpecError(f"retriever spec {text!r}: unbalanced '('")
    parts.append(text[start:])
    return parts


def _starts_retriever(piece: str) -> bool:
    from .spec import RETRIEVERS

    m = re.match(r"\s*([A-Za-z][A-Za-z0-9_\-]*)\s*(\(|:|$|>>)", piece)
    from .spec import WRAPPERS

    return bool(m) and (
        m.group(1).lower() in RETRIEVERS
        or m.group(1).lower() in WRAPPERS
        or m.group(1).lower() == "fuse"
    )


def _fuse_options(spec: str, text: str) -> dict[str, Any]:
    from .spec import parse_literal

    options: dict[str, Any] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, eq, value = part.partition("=")
        name, value = name.strip(), value.strip()
        if not eq:
            raise SpecError(f"retriever spec {spec!r}: fusion option {part!r} must be name=value")
        if name == "weights":
            try:
                options[name] = [float(w) for w in re.split(r"[/\s]+", value) if w]
            except ValueError:
                raise SpecError(
                    f"retriever spec {spec!r}: weights={value!r} must be numbers separated by '/'"
                ) from None
        elif name in ("method", "norm", "preset"):
            options[name] = None if value.lower() in ("none", "") else value
        elif name in ("depth", "k"):
            v = parse_literal(value)
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise SpecError(f"retriever spec {spec!r}: {name}={value!r} must be a number")
            options[name] = int(v) if name == "depth" else v
        else:
            raise SpecError(
                f"retriever spec {spec!r}: unknown fusion option {name!r}; "
                "valid: method, depth, norm, weights, k, preset"
            )
    return options


def _call_parts(spec: str, text: str, name: str) -> list[str]:
    """The ``;``-separated parts inside ``name(...)``; *text* must end with its closing ``)``."""
    if not text.endswith(")"):
        raise SpecError(f"retriever spec {spec!r}: text after the closing ')' of {name}(...)")
    return split_top(text[text.index("(") + 1 : -1], ";")


def parse_composite(spec: str):
    """Parse ``a >> b`` and ``fuse(...)`` specs; ``None`` when *spec* is a single retriever.

    Raises:
        SpecError: malformed composition (the part is named).
    """
    from .spec import parse_retriever

    text = spec.strip()
    stages = split_top(text, ">>")
    if len(stages) > 1:
        if any(not s.strip() for s in stages):
            raise SpecError(f"retriever spec {spec!r}: empty stage around '>>'")
        return Pipeline(parse_retriever(stages[0]), *(parse_retriever(s) for s in stages[1:]))
    if re.match(r"^fuse\s*\(", text, re.IGNORECASE):
        parts = _call_parts(spec, text, "fuse")
        if len(parts) > 2:
            raise SpecError(f"retriever spec {spec!r}: fuse(...) takes one ';' before its options")
        pieces: list[str] = []
        for piece in split_top(parts[0], ","):
            if pieces and not _starts_retriever(piece):
                pieces[-1] += "," + piece
            else:
                pieces.append(piece)
        pieces = [p.strip() for p in pieces if p.strip()]
        if not pieces:
            raise SpecError(
                f"retriever spec {spec!r}: fuse(...) needs retrievers, e.g. fuse(bm25, dense:MODEL)"
            )
        options = _fuse_options(spec, parts[1]) if len(parts) == 2 else {}
        from .fusion import Fusion

        return Fusion([parse_retriever(p) for p in pieces], **options)
    wrapper = re.match(r"^([A-Za-z][A-Za-z0-9_\-]*)\s*\(", text)
    if wrapper is not None:
        from .spec import WRAPPERS

        if wrapper.group(1).lower() in WRAPPERS:
            return _parse_wrapper(spec, text, wrapper.group(1).lower())
    return None


def _parse_wrapper(spec: str, text: str, name: str):
    """``hyde(bm25; model=gpt-4o)`` -> ``HyDE(parse_retriever("bm25"), model="gpt-4o")``."""
    import importlib

    from .spec import WRAPPERS, _coerce, parse_retriever, spec_options

    parts = _call_parts(spec, text, name)
    if len(parts) > 2 or not parts[0].strip():
        raise SpecError(
            f"retriever spec {spec!r}: write {name}(RETRIEVER) or {name}(RETRIEVER; option=value,...)"
        )
    module, _, attr = WRAPPERS[name].partition(":")
    cls = getattr(importlib.import_module(module), attr)
    defaults = spec_options(cls)
    options: dict[str, Any] = {}
    for part in filter(None, (p.strip() for p in (parts[1] if len(parts) == 2 else "").split(","))):
        key, eq, value = part.partition("=")
        key = key.strip()
        if not eq or key not in defaults:
            raise SpecError(
                f"retriever spec {spec!r}: {name} option {part!r} must be one of "
                f"{', '.join(f'{k}=...' for k in sorted(defaults))}"
            )
        options[key] = _coerce(spec, key, value, defaults[key])
    return cls(parse_retriever(parts[0].strip()), **options)
