"""Dense encoding at scale: corpus embeddings written shard by shard into a memory-mapped ``.npy``,
resumable after a kill (``dense:MODEL,shard_docs=N``).

The documents are put in the same encoding order as the single pass (text length descending,
stable; :func:`~._common.encode_in_length_order`), and that order is cut into shards of *N*
documents (rounded up to a multiple of the single pass's encode call, ``chunk`` documents, or the
batch size while a progress bar is shown), so every encode call gets the same texts as in the
single pass and the vectors are the same bits. Each shard is encoded, its rows written
into ``embeddings.npy`` (opened with ``numpy.lib.format.open_memmap``; row *i* is ``doc_ids[i]``),
the map flushed to disk, and only then a ``shard-XXXXX.done`` marker written. A build killed at any
point (even ``kill -9``) therefore resumes from ``<artifact>.partial/`` and re-encodes only the
shards without a marker; ``partial.json`` records the shape, dtype and shard size, and a partial
folder written with other values is discarded. When every shard is done, the array is hard-linked
(or copied) into the artifact's staging folder and the artifact is committed atomically
(:class:`nuggetbench.store.Artifact`), then the partial folder is removed.

Peak memory: one shard's texts and vectors (plus the model), never the corpus' vectors; the
encoded array lives on disk and is searched in blocks (:class:`~.dense_index.DenseIndex`).

Progress: one bar over documents (documents/s and ETA), starting at the documents of the shards
already done.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from nuggetbench._atomic import atomic_write
from nuggetbench.data import Corpus
from nuggetbench.retrieval.models.loading import progress_bar, text_lengths
from nuggetbench.store import Artifact

log = logging.getLogger(__name__)


def shard_size(shard_docs: int, step: int) -> int:
    """*shard_docs* rounded up to a multiple of *step* (>= 1), so shard boundaries fall on batch
    boundaries of the single pass."""
    step = max(1, int(step))
    return max(step, -(-int(shard_docs) // step) * step)


def partial_folder(artifact: Artifact) -> Path:
    """The resumable work folder of *artifact*: ``<artifact path>.partial``."""
    return Path(f"{artifact.path}.partial")


def encode_sharded(
    work: Path,
    corpus: Corpus,
    doc_ids: list[str],
    *,
    dim: int,
    with_title: bool,
    shard_docs: int,
    step: int,
    encode: Callable[[list[str]], Any],
    show_progress: bool = False,
    desc: str = "encoding corpus",
) -> dict[str, int]:
    """Encode *corpus* into ``work/embeddings.npy`` ``(len(doc_ids), dim)`` float32, shard by shard.

    Args:
        work: the partial folder (created; kept between attempts for resuming).
        corpus: the documents; texts are read per shard (``corpus.texts(ids, with_title=...)``).
        doc_ids: all ids in index order (row *i* of the array is ``doc_ids[i]``).
        dim: embedding size.
        with_title: encode ``title + text``.
        shard_docs: documents per shard (rounded up to a multiple of *step*: :func:`shard_size`).
        step: documents per encode call, the single pass's stride (``chunk``, or
            ``min(chunk, batch_size)`` with a progress bar).
        encode: ``encode(texts) -> (len(texts), dim)`` vectors.
        show_progress: a bar in documents with documents/s and ETA.
        desc: the bar's title.

    Returns:
        ``{"shards": count, "resumed": shards found done, "encoded": shards encoded now,
        "shard_docs": the shard size used}``.
    """
    out, order, size, done = prepare(
        work, corpus, len(doc_ids), dim=dim, with_title=with_title, shard_docs=shard_docs, step=step
    )
    n = len(doc_ids)
    n_shards = len(done)
    resumed = sum(done)
    if resumed:
        log.info("dense sharded encode: resuming, %d of %d shards done", resumed, n_shards)
    bar = progress_bar(show_progress, n, desc)
    try:
        if bar is not None and resumed:
            bar.update(
                sum(len(order[i * size : (i + 1) * size]) for i in range(n_shards) if done[i])
            )
        for i in range(n_shards):
            if done[i]:
                continue
            write_shard(
                work,
                out,
                i,
                order[i * size : (i + 1) * size],
                corpus,
                doc_ids,
                with_title=with_title,
                step=step,
                encode=encode,
                progress=bar.update if bar is not None else None,
            )
    finally:
        if bar is not None:
            bar.close()
        del out
    return {
        "shards": n_shards,
        "resumed": resumed,
        "encoded": n_shards - resumed,
        "shard_docs": size,
    }


def prepare(
    work: Path,
    corpus: Corpus,
    n: int,
    *,
    dim: int,
    with_title: bool,
    shard_docs: int,
    step: int,
) -> tuple[np.ndarray, np.ndarray, int, list[bool]]:
    """Open (or create) the partial folder *work* for *n* vectors of *dim* and plan the shards.

    A partial folder written with another shape, dtype or shard size is discarded.

    Returns:
        ``(out, order, size, done)``: the ``(n, dim)`` float32 memory map ``embeddings.npy``
        (writable), the encoding order (``(n,)`` rows, text length descending, stable), the shard
        size (:func:`shard_size`; shard *i* is ``order[i * size : (i + 1) * size]``) and, per
        shard, whether its ``.done`` marker exists.
    """
    size = shard_size(shard_docs, step)
    n_shards = max(1, -(-n // size))
    work.mkdir(parents=True, exist_ok=True)
    layout = {"n": n, "dim": int(dim), "dtype": "float32", "shard_docs": size}
    layout_path = work / "partial.json"
    array_path = work / "embeddings.npy"
    if layout_path.exists():
        try:
            old = json.loads(layout_path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            old = None
        if old != layout or not array_path.exists():
            log.warning("dense sharded encode: discarding %s (written with %s)", work, old)
            shutil.rmtree(work)
            work.mkdir(parents=True)
    if not layout_path.exists():
        for stale in work.iterdir():
            stale.unlink()
        arr = np.lib.format.open_memmap(array_path, mode="w+", dtype=np.float32, shape=(n, dim))
        arr.flush()
        del arr
        with atomic_write(layout_path) as fh:
            json.dump(layout, fh)
    out = np.load(array_path, mmap_mode="r+")
    order = np.argsort(-text_lengths(corpus, n, with_title=with_title), kind="stable")
    done = [(work / f"shard-{i:05d}.done").exists() for i in range(n_shards)]
    return out, order, size, done


def write_shard(
    work: Path,
    out: np.ndarray,
    i: int,
    shard_rows: np.ndarray,
    corpus: Corpus,
    doc_ids: list[str],
    *,
    with_title: bool,
    step: int,
    encode: Callable[[list[str]], Any],
    progress: Callable[[int], Any] | None = None,
) -> int:
    """Encode shard *i* (rows *shard_rows* of *doc_ids*, *step* per encode call, as the single
    pass), write its vectors into *out*, flush the map, then write ``shard-NNNNN.done``.
    Idempotent: a repeated call writes the same rows. Returns the shard's documents."""
    for start in range(0, len(shard_rows), step):
        rows = shard_rows[start : start + step]
        texts = corpus.texts([doc_ids[r] for r in rows.tolist()], with_title=with_title)
        out[rows] = np.asarray(encode(texts), dtype=np.float32)
        if progress is not None:
            progress(len(rows))
    out.flush()  # the rows are on disk before the marker says so
    (Path(work) / f"shard-{i:05d}.done").touch()
    return len(shard_rows)


def commit(work: Path, staging: Path) -> None:
    """Move the finished ``embeddings.npy`` of *work* into the artifact's *staging* folder (a hard
    link, or a copy across file systems; *work* stays whole until the artifact is in place)."""
    src, dst = work / "embeddings.npy", staging / "embeddings.npy"
    try:
        os.link(src, dst)
    except OSError:
        shutil.copyfile(src, dst)


def remove(work: Path) -> None:
    """Delete a partial folder (after its artifact was committed)."""
    shutil.rmtree(work, ignore_errors=True)
