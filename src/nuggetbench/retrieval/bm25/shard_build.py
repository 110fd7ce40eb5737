"""Building the sharded BM25 index (:mod:`.sharded`): the corpus tokenized chunk by chunk (on
every core: :mod:`.tokens`) to token ids on disk, the global document frequencies and average length collected, then each chunk
scored into a CSC shard with bm25s' own functions from the global statistics (so every stored
score equals the single index's), resumable in ``<artifact>.partial/`` (a ``.done`` marker per
chunk and shard). The per-chunk and per-shard functions are module-level, idempotent and write
their marker last, so a mapper (:mod:`..shardmap`) may run them in this process or as Ray tasks.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import time
from collections import deque
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from nuggetbench._atomic import atomic_write
from nuggetbench.data import Corpus, Document
from nuggetbench.errors import InputError
from nuggetbench.retrieval.bm25.engine import Settings
from nuggetbench.retrieval.bm25.scoring import idf_array, pair_scores, pairs_of
from nuggetbench.retrieval.bm25.tokens import (
    Tokenizer,
    Vocabulary,
    analyze_batch,
    split_batches,
    tokenize_batches,
    worker_count,
)
from nuggetbench.retrieval.models.loading import progress_bar
from nuggetbench.retrieval.shardmap import Mapper, active, serial_map

log = logging.getLogger(__name__)


def _write_ids(ids: list[str], blob: Path, offsets: Path) -> None:
    encoded = [s.encode("utf-8") for s in ids]
    off = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum([len(e) for e in encoded], out=off[1:])
    with atomic_write(blob, "wb") as fh:
        fh.write(b"".join(encoded))
    _save_npy(offsets, off)


def _save_npy(path: Path, array: np.ndarray) -> None:
    with atomic_write(path, "wb") as fh:
        np.save(fh, array)


def _chunks(docs: Iterable[Document], size: int) -> Iterator[list[Document]]:
    chunk: list[Document] = []
    for doc in docs:
        chunk.append(doc)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


# --- building --------------------------------------------------------------------------------
def build_sharded(
    retriever: Settings,
    corpus: Corpus,
    work: Path,
    *,
    shard_docs: int,
    show_progress: bool = False,
    mapper: Mapper | None = None,
) -> dict[str, Any]:
    """Run (or resume) the three stages in *work*; returns the build's summary.

    Args:
        retriever: the retriever (:class:`~.engine.Settings`) whose tokenizer and scoring
            parameters are used.
        corpus: the corpus, read once in corpus order (``iter_documents``).
        work: the partial folder (created; kept between attempts for resuming).
        shard_docs: documents per chunk and shard (>= 1).
        show_progress: progress meters (documents/s, ETA) per stage.
        mapper: runs the per-chunk tokenizing and the per-shard scoring (:mod:`.shardmap`;
            default: the active one, :func:`.shardmap.active`, else this process).

    Returns:
        ``{"n_docs", "n_shards", "n_vocab", "avg_doc_len", "resumed_chunks", "resumed_shards",
        "stage_seconds"}`` (wall seconds of this attempt per stage).

    Raises:
        InputError: the corpus is empty or has no indexable term.
    """
    work.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    total = len(corpus)
    vocab = Vocabulary()
    n_chunks, resumed_chunks = _tokenize_stage(
        retriever, corpus, work, shard_docs, total, vocab, show_progress, mapper or active()
    )
    if n_chunks == 0:
        raise InputError(f"cannot index an empty corpus ({corpus.name or corpus!r})")
    if not len(vocab):
        raise InputError(
            f"cannot index the corpus{' ' + repr(corpus.name) if corpus.name else ''}: none of "
            f"its documents has an indexable term (every title and text is empty or made of "
            f"stop words after {retriever.analyzer!r} analysis with stopwords="
            f"{retriever.stopwords!r}); check the corpus's text fields, or index with "
            "bm25:stopwords=none"
        )
    t1 = time.perf_counter()
    df, n_docs, avg_doc_len = _stats_stage(work, n_chunks, len(vocab), total, show_progress)
    t2 = time.perf_counter()
    resumed_shards = _score_stage(
        retriever, work, n_chunks, df, n_docs, avg_doc_len, show_progress, mapper
    )
    t3 = time.perf_counter()
    return {
        "n_docs": n_docs,
        "n_shards": n_chunks,
        "n_vocab": len(vocab),
        "avg_doc_len": float(avg_doc_len),
        "resumed_chunks": resumed_chunks,
        "resumed_shards": resumed_shards,
        "stage_seconds": {"tokenize": t1 - t0, "statistics": t2 - t1, "score": t3 - t2},
    }


def _tokenize_stage(
    settings: Settings,
    corpus: Corpus,
    work: Path,
    shard_docs: int,
    total: int,
    vocab: Vocabulary,
    show: bool,
    mapper: Mapper | None = None,
) -> tuple[int, int]:
    """Tokenize the corpus chunk by chunk into *work*, growing the global *vocab* in corpus
    order; returns ``(chunks, chunks resumed)``. Without a *mapper*, the chunks' texts go in
    batches to local worker processes (:func:`.tokens.tokenize_batches`, one pool for the whole
    corpus); with a *mapper* (a cluster), chunks are tokenized :data:`MAPPED_WINDOW` at a time
    by :func:`tokenize_chunk_local`. Either way each chunk's words are numbered in the global
    vocabulary in corpus order (first occurrence), so the files are the same bytes."""
    bar = progress_bar(show, total, "bm25 tokenize")
    try:
        if mapper is None:
            n_chunks, resumed = _tokenize_local(settings, corpus, work, shard_docs, vocab, bar)
        else:
            n_chunks, resumed = _tokenize_mapped(
                settings, corpus, work, shard_docs, vocab, bar, mapper
            )
    finally:
        if bar is not None:
            bar.close()
    if resumed:
        log.info("bm25 sharded build: resumed %d of %d tokenized chunks", resumed, n_chunks)
    return n_chunks, resumed


def _replay(stem: Path, vocab: Vocabulary) -> int:
    """Add a finished chunk's new words (its ``vocab.json``) to *vocab*; returns its documents."""
    vocab.remap(json.loads(Path(f"{stem}.vocab.json").read_text(encoding="utf-8")))
    return int(np.load(f"{stem}.lens.npy", mmap_mode="r").shape[0])


def _tokenize_local(settings, corpus, work, shard_docs, vocab: Vocabulary, bar) -> tuple[int, int]:
    """The local path of :func:`_tokenize_stage`: unfinished chunks are cut into batches for the
    workers while a plan records, in corpus order, which chunk each result belongs to (finished
    chunks only replay their vocabulary)."""
    plan: deque[tuple[Path, list[str] | None, int]] = deque()

    def work_items():
        for i, chunk in enumerate(_chunks(corpus.iter_documents(), shard_docs)):
            stem = work / f"chunk-{i:05d}"
            if Path(f"{stem}.done").exists():
                plan.append((stem, None, 0))
                continue
            batches = list(split_batches([d.full_text for d in chunk]))
            plan.append((stem, [d.doc_id for d in chunk], len(batches)))
            del chunk
            yield from batches

    counts = {"chunks": 0, "resumed": 0}

    def replay_finished() -> None:
        while plan and plan[0][1] is None:
            done = _replay(plan.popleft()[0], vocab)
            counts["chunks"] += 1
            counts["resumed"] += 1
            if bar is not None:
                bar.update(done)

    workers = worker_count(settings.threads, len(corpus))
    current: list[Any] = []
    for batch in tokenize_batches(work_items(), settings.tokenizer, workers=workers):
        if not current:
            replay_finished()  # chunks finished before this one come first
            stem, ids, n_batches = plan.popleft()
            current = [stem, ids, n_batches, [], [], []]
        remap, added = vocab.remap(batch.words)
        current[3].append(remap[batch.ids] if len(batch.ids) else np.zeros(0, np.int32))
        current[4].append(batch.lens)
        current[5].extend(added)
        current[2] -= 1
        if current[2] == 0:
            stem, ids, _, flat, lens, added_all = current
            _write_chunk(stem, ids, added_all, np.concatenate(lens), np.concatenate(flat))
            counts["chunks"] += 1
            if bar is not None:
                bar.update(len(ids))
            current = []
    replay_finished()
    return counts["chunks"], counts["resumed"]


def _tokenize_mapped(settings, corpus, work, shard_docs, vocab, bar, mapper) -> tuple[int, int]:
    """The cluster path of :func:`_tokenize_stage`."""
    n_chunks = resumed = 0
    window: list[tuple[Path, list[Document]]] = []

    def flush() -> int:
        """Tokenize the window's unfinished chunks on the mapper, then finish all in order."""
        todo = [(stem, chunk) for stem, chunk in window if not Path(f"{stem}.done").exists()]
        if todo:
            mapper(
                tokenize_chunk_local,
                [([d.full_text for d in chunk], str(stem)) for stem, chunk in todo],
                common={"tokenizer": settings.tokenizer.as_tuple()},
                sizes=[len(chunk) for _, chunk in todo],
                desc="bm25 tokenize chunks",
            )
        done_before = 0
        for stem, chunk in window:
            if Path(f"{stem}.done").exists():
                _replay(stem, vocab)
                done_before += 1
            else:
                words, lens, flat = _read_local(stem)
                remap, added = vocab.remap(words)
                ids = [d.doc_id for d in chunk]
                _write_chunk(stem, ids, added, lens, remap[flat] if len(flat) else flat)
                Path(f"{stem}.local.npz").unlink(missing_ok=True)
            if bar is not None:
                bar.update(len(chunk))
        window.clear()
        return done_before

    for i, chunk in enumerate(_chunks(corpus.iter_documents(), shard_docs)):
        n_chunks += 1
        window.append((work / f"chunk-{i:05d}", chunk))
        if len(window) >= MAPPED_WINDOW:
            resumed += flush()
    resumed += flush()
    return n_chunks, resumed


MAPPED_WINDOW = 4
"""Chunks tokenized at once on a cluster (their texts are held by the driver meanwhile)."""


def tokenize_chunk_local(texts: list[str], stem: str, *, tokenizer: tuple[str, str, str]) -> None:
    """A cluster task: tokenize one chunk's *texts* (:func:`.tokens.analyze_batch` with
    ``Tokenizer(*tokenizer)``: words numbered by first occurrence) and write
    ``<stem>.local.npz`` (``lens``, ``flat`` token ids, the chunk's words as UTF-8 bytes with
    ``offsets``), atomically; running it twice writes the same bytes."""
    batch = analyze_batch(texts, Tokenizer(*tokenizer))
    encoded = [t.encode("utf-8") for t in batch.words]  # no fixed-width array: words vary
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum([len(e) for e in encoded], out=offsets[1:])
    with atomic_write(Path(f"{stem}.local.npz"), "wb") as fh:
        np.savez(
            fh,
            lens=batch.lens.astype(np.int64),
            flat=batch.ids.astype(np.int64),
            tokens=np.frombuffer(b"".join(encoded), dtype=np.uint8),
            offsets=offsets,
        )


def _read_local(stem: Path) -> tuple[list[str], np.ndarray, np.ndarray]:
    """What :func:`tokenize_chunk_local` wrote: ``(words, lens, flat)``."""
    with np.load(f"{stem}.local.npz") as data:
        blob, offsets = data["tokens"].tobytes(), data["offsets"].tolist()
        words = [blob[a:b].decode("utf-8") for a, b in zip(offsets, offsets[1:])]
        return words, data["lens"], data["flat"]


def _write_chunk(
    stem: Path, doc_ids: list[str], added: list[str], lens: np.ndarray, flat: np.ndarray
) -> None:
    """Write one chunk's files (its global token ids, lengths, doc ids and the words it added
    to the vocabulary), its ``.done`` marker last."""
    tokens = flat.astype(np.int32) if len(flat) else np.zeros(0, np.int32)
    _save_npy(Path(f"{stem}.tokens.npy"), tokens)
    _save_npy(Path(f"{stem}.lens.npy"), lens.astype(np.int64))
    _write_ids(doc_ids, Path(f"{stem}.ids.bin"), Path(f"{stem}.ids.npy"))
    with atomic_write(Path(f"{stem}.vocab.json")) as fh:
        fh.write(json.dumps(added, ensure_ascii=False))  # dumps: json's C encoder
    Path(f"{stem}.done").touch()  # last: the chunk is complete


def _stats_stage(work: Path, n_chunks: int, n_vocab: int, total: int, show: bool):
    df = np.zeros(n_vocab, dtype=np.int64)
    n_docs = 0
    length_sum = 0
    bar = progress_bar(show, total, "bm25 statistics")
    try:
        for i in range(n_chunks):
            stem = work / f"chunk-{i:05d}"
            tokens = np.load(f"{stem}.tokens.npy", mmap_mode="r")
            lens = np.load(f"{stem}.lens.npy")
            tok, _doc, _ = pairs_of(np.asarray(tokens), lens)
            df += np.bincount(tok, minlength=n_vocab)
            n_docs += len(lens)
            length_sum += int(lens.sum())
            if bar is not None:
                bar.update(len(lens))
    finally:
        if bar is not None:
            bar.close()
    # bm25s: np.array(lengths).mean(); an integer sum below 2**53 is exact in float64, so this
    # is the same float64 value.
    avg_doc_len = np.float64(length_sum) / np.float64(n_docs)
    return df, n_docs, avg_doc_len


def _score_stage(
    retriever: Settings, work: Path, n_chunks, df, n_docs, avg_doc_len, show, mapper=None
) -> int:
    idf = idf_array(df, n_docs, retriever.method)
    pending = [i for i in range(n_chunks) if not (work / f"shard-{i:05d}.done").exists()]
    resumed = n_chunks - len(pending)
    sizes = [
        int(np.load(work / f"chunk-{i:05d}.lens.npy", mmap_mode="r").shape[0]) for i in pending
    ]
    common = {
        "idf": idf,
        "method": retriever.method,
        "k1": retriever.k1,
        "b": retriever.b,
        "delta": retriever.delta,
        "avg_doc_len": avg_doc_len,
    }
    (mapper or active() or serial_map)(
        score_shard,
        [(str(work), i) for i in pending],
        common=common,
        sizes=sizes,
        desc="bm25 score shards",
        show_progress=show,
    )
    if resumed:
        log.info("bm25 sharded build: resumed %d of %d scored shards", resumed, n_chunks)
    return resumed


def score_shard(
    work: str,
    i: int,
    *,
    idf: np.ndarray,
    method: str,
    k1: float,
    b: float,
    delta: float,
    avg_doc_len: np.float64,
) -> int:
    """Write shard *i*'s CSC score matrix (``shard-NNNNN.{data,indices,indptr}.npy``) from chunk
    *i*'s token ids in the partial folder *work*, then its ``.done`` marker; idempotent (every
    file written atomically, the marker last), so a retried call gives the same files.

    Args:
        work: the partial folder; i: the shard number.
        idf: float32 ``(vocabulary,)`` global idf (bm25s' ``_build_idf_array``).
        method, k1, b, delta: the BM25 variant and parameters.
        avg_doc_len: the global average document length (float64).

    Returns:
        The shard's number of documents.
    """
    stem = Path(work) / f"chunk-{i:05d}"
    shard = Path(work) / f"shard-{i:05d}"
    lens = np.load(f"{stem}.lens.npy")
    n_vocab = len(idf)
    tokens = np.asarray(np.load(f"{stem}.tokens.npy", mmap_mode="r"))
    tok, doc, counts = pairs_of(tokens, lens)
    data = pair_scores(
        counts,
        lens[doc],
        idf[tok],
        method=method,
        k1=k1,
        b=b,
        delta=delta,
        avg_doc_len=avg_doc_len,
    )
    indptr = np.zeros(n_vocab + 1, dtype=np.int64)
    np.cumsum(np.bincount(tok, minlength=n_vocab), out=indptr[1:])
    _save_npy(Path(f"{shard}.data.npy"), data)
    _save_npy(Path(f"{shard}.indices.npy"), doc.astype(np.int32))
    _save_npy(Path(f"{shard}.indptr.npy"), indptr)
    Path(f"{shard}.done").touch()
    return len(lens)


def finish(work: Path, staging: Path, n_chunks: int, vocab: dict[str, int] | None = None) -> None:
    """Link (or copy) the shards, the vocabulary and the concatenated doc ids from *work* into *staging*."""
    vocab = vocab if vocab is not None else _replay_vocab(work, n_chunks)
    with atomic_write(staging / "vocab.json") as fh:
        fh.write(json.dumps(vocab, ensure_ascii=False))
    blobs: list[bytes] = []
    offsets = [np.zeros(1, dtype=np.int64)]
    base = 0
    for i in range(n_chunks):
        stem = work / f"chunk-{i:05d}"
        off = np.load(f"{stem}.ids.npy")
        blobs.append(Path(f"{stem}.ids.bin").read_bytes())
        offsets.append(off[1:] + base)
        base += int(off[-1])
        for part in ("data", "indices", "indptr"):
            src, dst = work / f"shard-{i:05d}.{part}.npy", staging / f"shard-{i:05d}.{part}.npy"
            try:  # a link: the partial folder stays whole until the artifact is in place
                os.link(src, dst)
            except OSError:
                shutil.copyfile(src, dst)
    with atomic_write(staging / "doc_ids.bin", "wb") as fh:
        for blob in blobs:
            fh.write(blob)
    _save_npy(staging / "doc_ids.offsets.npy", np.concatenate(offsets))
    sizes = [int(len(o)) for o in offsets[1:]]
    with atomic_write(staging / "shards.json") as fh:
        json.dump({"shard_sizes": sizes}, fh)


def _replay_vocab(work: Path, n_chunks: int) -> dict[str, int]:
    vocab: dict[str, int] = {}
    for i in range(n_chunks):
        for tok in json.loads((work / f"chunk-{i:05d}.vocab.json").read_text(encoding="utf-8")):
            vocab[tok] = len(vocab)
    return vocab
