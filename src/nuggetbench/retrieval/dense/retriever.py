"""Dense retrieval with sentence-transformers bi-encoders (``dense:MODEL``).

The corpus is encoded once (documents sorted by length, longest first, so batches carry little
padding; out-of-memory errors halve the batch size) into a memory-mapped cache keyed by the model
fingerprint, the encoding parameters and the corpus fingerprint (:mod:`.embcache`). Search is exact
inner product in blocks with a running top-k (:mod:`.topk`), so memory is bounded by the block
size, never by queries x corpus; ``faiss=Flat`` (exact) or any other faiss factory string
(approximate, e.g. ``HNSW32``) uses faiss instead.

Prompts (prefixes) are chosen, in order: ``query_prompt`` / ``document_prompt`` when given; else the
``prompts`` preset (``e5``: ``query: `` / ``passage: ``; ``bge``: BGE's English query instruction;
``instruct``: ``Instruct: {objective}\\nQuery: `` as e5-mistral / gte-Qwen); with ``prompts=auto``
(default) the model's own configured ``query``/``document`` prompts, else a preset guessed from
the model name (e5 and bge families), else none. The preset used is logged and recorded in the
run's metadata.

Task objectives (BIRCO-style instructions): ``search(..., objective=...)`` or the ``objective``
option. A query prompt containing ``{objective}`` gets it substituted; otherwise the objective is
prepended to each query text, followed by a newline.
"""

from __future__ import annotations

import logging
import re
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from nuggetbench import progress
from nuggetbench.data import Corpus
from nuggetbench.retrieval import distributed
from nuggetbench.retrieval.compose.pipeline import Composable
from nuggetbench.retrieval.dense import sharded as dense_sharded
from nuggetbench.retrieval.dense.index import DenseIndex
from nuggetbench.retrieval.models import embcache
from nuggetbench.retrieval.models.loading import BatchBackoff, resolve_model
from nuggetbench.retrieval.models.plumbing import (
    ModelBacked,
    encode_by_length,
    encode_in_length_order,
)
from nuggetbench.retrieval.options import PROMPT_PRESETS, DenseOptions

log = logging.getLogger(__name__)

ANN_FIELDS = ("index", "nlist", "nprobe", "hnsw_m", "ef_search")
"""Options of the faiss index (``index=flat|ivf|hnsw``): part of a run's identity, not of the
corpus vectors'."""

DEFAULT_OBJECTIVE = "Given a web search query, retrieve relevant passages that answer the query"


def guess_preset(model_name: str) -> str | None:
    """The prompt preset of well-known model families, from the model name (``None``: unknown)."""
    name = model_name.lower().rstrip("/").split("/")[-1]
    if "e5" in name and ("instruct" in name or "mistral" in name):
        return "instruct"
    if re.search(r"(^|[-_])e5([-_]|$)", name):
        return "e5"
    if name.startswith("bge-") and "-en" in name and "m3" not in name:
        return "bge"
    return None


def encode_sorted(
    encode,
    texts_of,
    doc_ids: list[str],
    lengths: np.ndarray,
    out: np.ndarray,
    *,
    backoff: BatchBackoff,
    chunk: int,
    progress=None,
) -> None:
    """Encode documents longest first, in chunks, writing row *i* of *out* for ``doc_ids[i]``.

    Args:
        encode: ``encode(texts, batch_size) -> np.ndarray (len(texts), dim)``.
        texts_of: ``texts_of(ids) -> list[str]``.
        doc_ids: all ids, in index order.
        lengths: text length (characters) of each document, shape (n,).
        out: (n, dim) array (memory-mapped) to fill.
        backoff: batch-size controller (halves on out-of-memory).
        chunk: documents per encode call.
        progress: optional callable receiving the number of documents done after each chunk.
    """
    encode_in_length_order(
        texts_of,
        doc_ids,
        lengths,
        lambda texts: backoff(encode, texts),
        _row_writer(out),
        chunk=chunk,
        progress=progress,
    )


def _row_writer(out: np.ndarray):
    """``store(rows, vectors)`` writing *vectors* into rows *rows* of *out* (in its dtype)."""

    def store(rows: np.ndarray, vectors: Any) -> None:
        out[rows] = np.asarray(vectors, dtype=out.dtype)

    return store


class DenseRetriever(ModelBacked, Composable):
    """A sentence-transformers bi-encoder retriever (spec ``dense:MODEL[,option=value...]``).

    Args:
        model: hub id or local folder (checked at construction: :class:`~nuggetbench.errors.ModelError`
            for an unknown id, a missing folder, or offline without a cached copy).
        options: a :class:`~nuggetbench.retrieval.options.DenseOptions` (prompts, objective,
            batch size, device, blocks, cache...: each declared there with its default and
            meaning), or its fields as keyword arguments.

    Raises:
        SpecError: an option of the wrong type or out of range (the option is named).
        ModelError: the model cannot be found.
    """

    PREFIX = "dense"
    LOADER = "SentenceTransformer"
    WHAT = "dense model"

    OPTIONS = DenseOptions
    #: The objective fills the query prompt's ``{objective}`` slot, or prefixes each query.
    uses_objective = True

    def __init__(self, model: str, options: DenseOptions | None = None, /, **kwargs: Any):
        self.options = options if options is not None else DenseOptions(**kwargs)
        self.model_name = str(model)
        self.ref = resolve_model(  # looked up here: tests replace it to freeze a fingerprint
            self.model_name, revision=self.options.revision, what=self.WHAT
        )
        self.name = self._spec_name(self.model_name, self.options)
        self._setup_model()
        self.encode_calls = 0

    # --- model and prompts ----------------------------------------------------------------------
    @property
    def model(self):
        """The loaded ``SentenceTransformer`` (loaded on first use)."""
        return self._loaded_model(max_length=self.options["max_length"])

    def _preset(self) -> str | None:
        preset = self.options["prompts"]
        if preset != "auto":
            return preset
        return guess_preset(self.model_name) if not self._model_has_prompts() else None

    def _model_has_prompts(self) -> bool:
        return bool({"query", "document", "passage"} & set((self.model.prompts or {}).keys()))

    def prompts_used(self) -> tuple[str | None, str | None]:
        """``(query prompt, document prompt)``; ``None`` means the model's configured prompt."""
        preset = self._preset()
        q, d = PROMPT_PRESETS[preset] if preset else (None, None)
        if self.options["query_prompt"] is not None:
            q = self.options["query_prompt"]
        if self.options["document_prompt"] is not None:
            d = self.options["document_prompt"]
        return q, d

    def normalizes(self) -> bool:
        """Whether embeddings are L2-normalised (the ``normalize`` option, else whether the
        model's similarity is cosine)."""
        if self.options["normalize"] is not None:
            return bool(self.options["normalize"])
        return (getattr(self.model, "similarity_fn_name", None) or "cosine") == "cosine"

    def identity(self) -> dict:
        """What determines the corpus embeddings and the search results of this retriever."""
        keep = (
            "prompts",
            "query_prompt",
            "document_prompt",
            "objective",
            "max_length",
            "normalize",
            "with_title",
            "faiss",
        )
        out = {**self._model_identity(), **{k: self.options[k] for k in keep}}
        if self.options["index"] != "exact":  # absent by default: earlier cache keys stay valid
            out.update({k: self.options[k] for k in ANN_FIELDS})
        return out

    # --- encoding -----------------------------------------------------------------------------
    def _encode_docs(self, texts: list[str], batch_size: int) -> np.ndarray:
        self.encode_calls += 1
        _, doc_prompt = self.prompts_used()
        return self.model.encode_document(
            texts,
            prompt=doc_prompt,
            batch_size=batch_size,
            normalize_embeddings=self.normalizes(),
            convert_to_numpy=True,
            show_progress_bar=False,
        )

    def encode_queries(
        self, texts: list[str], *, objective: str | None = None, show_progress: bool = False
    ) -> np.ndarray:
        """Query embeddings ``(len(texts), dim)`` float32, with the query prompt and objective applied."""
        q_prompt, _ = self.prompts_used()
        objective = objective or self.options["objective"]
        if q_prompt and "{objective}" in q_prompt:
            q_prompt = q_prompt.replace("{objective}", objective or DEFAULT_OBJECTIVE)
        elif objective:
            texts = [f"{objective}\n{t}" for t in texts]

        def enc(items: list[str], batch_size: int) -> np.ndarray:
            return self.model.encode_query(
                items,
                prompt=q_prompt,
                batch_size=batch_size,
                normalize_embeddings=self.normalizes(),
                convert_to_numpy=True,
                # sentence-transformers' own bar: a terminal's redraws, not a log's lines
                show_progress_bar=show_progress and progress.style() == "bar",
            )

        return np.asarray(self.backoff(enc, texts), dtype=np.float32)

    def index(self, corpus: Corpus, *, show_progress: bool = False) -> DenseIndex:
        """Encode *corpus* (or load its cached embeddings) and return a :class:`DenseIndex`."""
        doc_ids = corpus.doc_ids()
        drop = ("query_prompt", "objective", "faiss")
        if self.options["index"] != "exact":
            drop += ANN_FIELDS
        key = self._corpus_key(corpus, doc_ids, drop=drop)
        artifact = embcache.Artifact("embeddings/dense", key, label=self.model_name)
        cached = embcache.load_dense(artifact, len(doc_ids)) if self.options["cache"] else None
        if cached is not None:
            log.info("loaded cached embeddings %s", artifact.path)
            return DenseIndex(
                self, doc_ids, cached[0], cache_path=str(artifact.path), from_cache=True
            )
        dim = int(
            self.model.get_embedding_dimension()
            if hasattr(self.model, "get_embedding_dimension")
            else self.model.get_sentence_embedding_dimension()
        )
        log.info(
            "encoding %d documents with %s on %s (prompts %s)",
            len(doc_ids),
            self.model_name,
            self.device,
            self.prompts_used(),
        )

        if self.options["shard_docs"]:
            return self._index_sharded(corpus, doc_ids, artifact, dim, show_progress=show_progress)

        def fill(out: np.ndarray) -> None:
            encode_by_length(
                corpus,
                doc_ids,
                with_title=self.options["with_title"],
                chunk=self.options["chunk"],
                encode=lambda texts: self.backoff(self._encode_docs, texts),
                store=_row_writer(out),
                show_progress=show_progress,
                desc="encoding corpus",
                step=self.options["batch_size"],
            )

        if self.options["cache"]:
            with embcache.write_dense(artifact, len(doc_ids), dim) as out:
                fill(out)
            emb = embcache.load_dense(artifact, len(doc_ids))[0]
            return DenseIndex(self, doc_ids, emb, cache_path=str(artifact.path))
        out = np.empty((len(doc_ids), dim), dtype=np.float32)
        fill(out)
        return DenseIndex(self, doc_ids, out)

    def _index_sharded(
        self,
        corpus: Corpus,
        doc_ids: list[str],
        artifact: embcache.Artifact,
        dim: int,
        *,
        show_progress: bool,
    ) -> DenseIndex:
        """Encode in resumable shards (:mod:`.dense_sharded`) into ``<artifact>.partial/``, then
        commit the artifact (with ``cache=false`` the shards go to a temporary folder that lives
        as long as the index)."""
        opts = self.options
        stride = min(opts["chunk"], opts["batch_size"]) if show_progress else opts["chunk"]
        keep = None
        if opts["cache"]:
            work = dense_sharded.partial_folder(artifact)
        else:
            keep = tempfile.TemporaryDirectory(prefix="nuggetbench-dense-")
            work = Path(keep.name)
        ray_mapper = distributed.active_ray()
        if ray_mapper is not None:  # the same shards, encoded by Ray Data model actors
            summary = distributed.encode_dense(
                ray_mapper,
                self,
                work,
                corpus,
                doc_ids,
                dim=dim,
                with_title=opts["with_title"],
                shard_docs=opts["shard_docs"],
                step=stride,
                show_progress=show_progress,
            )
        else:
            summary = dense_sharded.encode_sharded(
                work,
                corpus,
                doc_ids,
                dim=dim,
                with_title=opts["with_title"],
                shard_docs=opts["shard_docs"],
                step=stride,
                encode=lambda texts: self.backoff(self._encode_docs, texts),
                show_progress=show_progress,
            )
        log.info("dense sharded encode: %s", summary)
        if keep is not None:
            emb = np.load(work / "embeddings.npy", mmap_mode="r")
            index = DenseIndex(self, doc_ids, emb)
            index._keep = keep
            return index
        with artifact.build() as (staging, extra):
            dense_sharded.commit(work, staging)
            extra.update({"n": len(doc_ids), "dim": dim, "dtype": "float32", **summary})
        dense_sharded.remove(work)
        emb = embcache.load_dense(artifact, len(doc_ids))[0]
        return DenseIndex(self, doc_ids, emb, cache_path=str(artifact.path))
