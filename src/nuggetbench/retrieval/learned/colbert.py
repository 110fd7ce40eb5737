"""Late interaction (ColBERT-style MaxSim), as a reranker or as full search over small corpora.

``colbert:MODEL`` loads a checkpoint in one of its published formats through sentence-transformers'
``MultiVectorEncoder`` (sentence-transformers >= 6.2; PyLate itself is not needed, it pins an old
CUDA torch):

* PyLate folders (``modules.json`` with a Transformer and a ``pylate.models.Dense.Dense``
  projection, ``config_sentence_transformers.json`` with ``query_prefix`` ``[Q] ``,
  ``document_prefix`` ``[D] ``, ``query_length``, ``document_length``, ``do_query_expansion``,
  ``attend_to_expansion_tokens``, ``skiplist_words``);
* Stanford ColBERT(v2) checkpoints (``config.json`` with ``architectures: ["HF_ColBERT"]``, the BERT
  weights plus a ``linear.weight`` projection, and ``artifact.metadata`` with ``query_token_id``
  ``[unused0]``, ``doc_token_id`` ``[unused1]``, ``query_maxlen``, ``doc_maxlen``,
  ``attend_to_mask_tokens``);
* native sentence-transformers ``MultiVectorEncoder`` folders.

As those formats define: the query marker follows ``[CLS]``, queries are padded with ``[MASK]``
expansion tokens to the query length (attended to or not as the checkpoint says) and every query
position is scored; document punctuation (the skiplist) is excluded from scoring; token vectors are
L2-normalised. A plain BERT / bi-encoder folder is refused (loading it would add a randomly
initialised projection).

Scoring is ``MaxSim(q, d) = sum_i max_j <q_i, d_j>`` (Khattab & Zaharia, SIGIR 2020).
``rerank`` is index-free (it encodes only the candidates, as the fastbook author used ColBERT);
``index``/``search`` encode the whole corpus (cached as ``tokens.npy`` + ``offsets.npy``) and score
it exhaustively in blocks with a running top-k: meant for small corpora.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Collection, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from nuggetbench.data import Corpus, Queries, Run
from nuggetbench.errors import ModelError
from nuggetbench.retrieval.compose.pipeline import DEFAULT_DEPTH, Composable
from nuggetbench.retrieval.models import embcache
from nuggetbench.retrieval.models.loading import _cached_snapshot
from nuggetbench.retrieval.models.plumbing import (
    BlockIndex,
    ModelBacked,
    contiguous,
    encode_by_length,
)
from nuggetbench.retrieval.options import ColBERTOptions
from nuggetbench.retrieval.protocols import check_k

log = logging.getLogger(__name__)


def check_colbert_folder(folder: str | Path, name: str) -> str:
    """The checkpoint format of a local folder: ``"sentence-transformers"`` or ``"stanford"``.

    Raises:
        ModelError: neither a sentence-transformers folder with a projection layer nor an
            ``HF_ColBERT`` checkpoint.
    """
    folder = Path(folder)
    modules = folder / "modules.json"
    if modules.exists():
        try:
            entries = json.loads(modules.read_text())
        except json.JSONDecodeError as exc:
            raise ModelError(f"{modules}: not valid JSON ({exc.msg})") from None
        if any("Dense" in str(e.get("type", "")) for e in entries):
            return "sentence-transformers"
        raise ModelError(
            f"colbert model {name!r} ({folder}) has no Dense projection in modules.json: it is a "
            "single-vector model, not a ColBERT checkpoint; use dense:{name} instead"
        )
    config = folder / "config.json"
    if config.exists():
        try:
            arch = json.loads(config.read_text()).get("architectures") or []
        except json.JSONDecodeError as exc:
            raise ModelError(f"{config}: not valid JSON ({exc.msg})") from None
        if "HF_ColBERT" in arch:
            return "stanford"
    raise ModelError(
        f"colbert model {name!r} ({folder}) is not a ColBERT checkpoint (PyLate / "
        "sentence-transformers folder with a Dense projection, or a Stanford HF_ColBERT "
        "checkpoint); loading it would add a randomly initialised projection"
    )


def maxsim(query: np.ndarray, tokens: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """MaxSim of one query against consecutive documents.

    Args:
        query: (Lq, dim) query token vectors.
        tokens: (T, dim) document token vectors, documents one after another.
        offsets: (n + 1,) start of each document in *tokens* (``offsets[0] == 0``,
            ``offsets[-1] == T``); every document has at least one token.

    Returns:
        float32 scores, shape (n,).
    """
    sims = np.asarray(query, dtype=np.float32) @ np.asarray(tokens, dtype=np.float32).T
    return np.maximum.reduceat(sims, offsets[:-1], axis=1).sum(axis=0)


def _pack(vecs: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Per-document (L_i, dim) token vectors -> ``(tokens (T, dim), offsets (n + 1,))``."""
    lengths = np.array([len(v) for v in vecs], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    dim = vecs[0].shape[1] if vecs else 0
    tokens = np.concatenate(vecs, axis=0) if vecs else np.zeros((0, dim), dtype=np.float32)
    return tokens, offsets


def _gather(
    tokens: np.ndarray, offsets: np.ndarray, rows: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The token vectors of documents *rows* (any order), one after another, and their offsets."""
    idx = np.concatenate([np.arange(offsets[r], offsets[r + 1]) for r in rows])
    sub = np.concatenate([[0], np.cumsum(offsets[rows + 1] - offsets[rows])])
    return tokens[idx], sub


class ColBERTRetriever(ModelBacked, Composable):
    """ColBERT late interaction (spec ``colbert:MODEL[@depth][,option=value...]``).

    Args:
        model: hub id or local folder of a ColBERT checkpoint; ``MODEL@N`` sets the depth.
        options: a :class:`~nuggetbench.retrieval.options.ColBERTOptions` (``depth``: candidates
            re-scored as a reranker; blocks, chunk, cache...), or its fields as keyword arguments.
    """

    PREFIX = "colbert"
    LOADER = "MultiVectorEncoder"
    WHAT = "colbert model"

    OPTIONS = ColBERTOptions

    def __init__(self, model: str, options: ColBERTOptions | None = None, /, **kwargs: Any):
        self._configure(model, options, kwargs, depth=True)
        if self.ref.local:
            self.format = check_colbert_folder(self.ref.location, self.model_name)
        self.name = self._spec_name(
            self.model_name + (f"@{self.depth}" if self.depth != DEFAULT_DEPTH else ""),
            replace(self.options, depth=DEFAULT_DEPTH),
        )
        self._setup_model()
        self.encode_calls = 0

    @property
    def model(self):
        """The loaded ``MultiVectorEncoder`` (loaded on first use)."""
        return self._loaded_model()

    def _on_load(self) -> None:
        if not self.ref.local:
            snap = _cached_snapshot(self.ref.name, self.ref.revision)
            if snap:
                self.format = check_colbert_folder(snap, self.model_name)

    def identity(self) -> dict:
        return {
            **self._model_identity(),
            "with_title": self.options["with_title"],
            "depth": self.depth,
        }

    # --- encoding -------------------------------------------------------------------------------
    def _encode(self, texts: list[str], *, query: bool) -> list[np.ndarray]:
        def enc(items: list[str], batch_size: int) -> list[np.ndarray]:
            self.encode_calls += 1
            fn = self.model.encode_query if query else self.model.encode_document
            out = fn(items, batch_size=batch_size, convert_to_numpy=True, show_progress_bar=False)
            return [np.asarray(x, dtype=np.float32) for x in out]

        return self.backoff(enc, texts) if texts else []

    def encode_queries(self, texts: list[str]) -> list[np.ndarray]:
        """Token vectors of each query: a list of (Lq, dim) float32 arrays."""
        return self._encode(texts, query=True)

    def encode_documents(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """``(tokens (T, dim), offsets (n + 1,))`` of the documents, in the given order."""
        return _pack(self._encode(texts, query=False))

    # --- reranking (index-free) ----------------------------------------------------------------
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
        """Re-score the top *k* candidates of each query of *run* by MaxSim; returns those *k* only.

        Queries absent from *run* get no entries. Candidates missing from *corpus* raise ``KeyError``.
        """
        k = check_k(k)
        qids = [q for q in queries if q in run]
        per_group = max(1, self.options["chunk"] // k)
        q_col: list[str] = []
        d_col: list[str] = []
        s_col: list[float] = []
        for g in range(0, len(qids), per_group):
            group = qids[g : g + per_group]
            cands = {q: run.doc_ids(q)[:k] for q in group}
            unique = sorted({d for ds in cands.values() for d in ds})
            tokens, offsets = self.encode_documents(
                corpus.texts(unique, with_title=self.options["with_title"])
            )
            pos = {d: i for i, d in enumerate(unique)}
            qvecs = self.encode_queries([queries[q] for q in group])
            for q, qv in zip(group, qvecs):
                rows = np.array([pos[d] for d in cands[q]], dtype=np.int64)
                if not len(rows):
                    continue
                scores = maxsim(qv, *_gather(tokens, offsets, rows))
                q_col += [q] * len(rows)
                d_col += cands[q]
                s_col += scores.astype(np.float64).tolist()
        return self._reranked_run(queries, run, k, q_col, d_col, s_col)

    # --- full search ----------------------------------------------------------------------------
    def index(self, corpus: Corpus, *, show_progress: bool = False) -> ColBERTIndex:
        """Encode every document (or load the cached token vectors) for exhaustive MaxSim search."""
        doc_ids = corpus.doc_ids()
        key = self._corpus_key(corpus, doc_ids, drop=("depth",))
        artifact = embcache.Artifact("embeddings/colbert", key, label=self.model_name)
        cached = (
            embcache.load_multivector(artifact, len(doc_ids)) if self.options["cache"] else None
        )
        if cached is not None:
            return ColBERTIndex(
                self, doc_ids, cached[0], cached[1], cache_path=str(artifact.path), from_cache=True
            )
        per_doc: list[Any] = [None] * len(doc_ids)

        def store(rows: np.ndarray, vecs: list[np.ndarray]) -> None:
            for r, v in zip(rows.tolist(), vecs):
                per_doc[r] = v

        encode_by_length(
            corpus,
            doc_ids,
            with_title=self.options["with_title"],
            chunk=self.options["chunk"],
            encode=lambda texts: self._encode(texts, query=False),
            store=store,
            show_progress=show_progress,
            desc="encoding corpus (colbert)",
            step=self.options["batch_size"],
        )
        tokens, offsets = _pack(per_doc)
        per_doc.clear()  # free the per-document arrays before saving
        if self.options["cache"]:
            embcache.save_multivector(artifact, tokens, offsets)
        return ColBERTIndex(
            self,
            doc_ids,
            tokens,
            offsets,
            cache_path=str(artifact.path) if self.options["cache"] else None,
        )


class ColBERTIndex(BlockIndex):
    """Token vectors of a corpus for exhaustive MaxSim search.

    Attributes:
        tokens: (T, dim) float32; offsets: (n_docs + 1,) int64; stats: of the last search.
    """

    def __init__(
        self,
        retriever: ColBERTRetriever,
        doc_ids: list[str],
        tokens: np.ndarray,
        offsets: np.ndarray,
        *,
        cache_path: str | None = None,
        from_cache: bool = False,
    ):
        super().__init__(retriever, doc_ids, cache_path=cache_path, from_cache=from_cache)
        self.tokens = tokens
        self.offsets = offsets

    def search(
        self,
        queries: Queries,
        k: int,
        *,
        doc_filter: Mapping[str, Collection[str]] | None = None,
        show_progress: bool = False,
        objective: str | None = None,
    ) -> Run:
        """Top-*k* documents per query by MaxSim over the whole corpus (or the ``doc_filter`` candidates).

        Raises:
            CacheError: the model's token-vector size differs from the cached vectors'.
        """
        k = check_k(k)
        qids = list(queries)
        qvecs = self.retriever.encode_queries([queries[q] for q in qids])
        if qvecs:
            self._check_dim(self.tokens.shape[1], qvecs[0].shape[1])
        tokens, offsets = self.tokens, self.offsets

        def score(q_rows: np.ndarray, d_rows: np.ndarray) -> np.ndarray:
            if contiguous(d_rows):
                a, b = int(offsets[d_rows[0]]), int(offsets[d_rows[-1] + 1])
                block, sub = tokens[a:b], offsets[d_rows[0] : d_rows[-1] + 2] - a
            else:
                block, sub = _gather(tokens, offsets, d_rows)
            block = np.asarray(block, dtype=np.float32)
            return np.stack([maxsim(qvecs[i], block, sub) for i in q_rows.tolist()])

        return self._search_blocks(score, qids, k, doc_filter, self._meta(k=k))
