"""BM25 in bounded memory: a sharded index with *global* statistics, exact to the single index.

``bm25:shard_docs=N`` (N > 0) builds the index of :class:`~nuggetbench.retrieval.bm25.retriever.BM25` in
three streamed stages, each with a progress bar in documents/s with an ETA:

1. **tokenize**: the corpus is read in chunks of *N* documents (``title + " " + text``), each
   chunk tokenized by the same tokenizer as the single index (``bm25s.tokenize`` or the chosen
   analyzer), its chunk-local token ids re-mapped to one global vocabulary and written to disk
   (``int32`` token ids, ``int64`` lengths, the doc ids as UTF-8 bytes with offsets, and the tokens
   the chunk added to the vocabulary); no text and no token list outlives its chunk;
2. **statistics**: document frequencies (documents containing each token) and the average
   document length over the *whole* corpus, from the memory-mapped token ids;
3. **score**: each chunk becomes one shard, a CSC matrix ``(shard docs x vocabulary)`` of
   ``idf(t) * tfc(tf, |d|)`` computed with bm25s' own functions (``_select_idf_scorer``,
   ``_select_tfc_scorer``, ``_build_idf_array``: Kamphuis et al., ECIR 2020) from the global
   statistics, in ``float32`` with the same operand types and order as
   ``bm25s.scoring._build_scores_and_indices_for_matrix``, so every stored score equals the
   single index's bit for bit.

Searching scores each shard with bm25s' own ``get_scores_from_ids`` (memory-mapped arrays), keeps
per shard every document scoring at or above its k-th best (ties included), and cuts the merged
candidates to *k* in trec_eval's order (score descending, doc id descending), so the run equals
the single index's full ranking truncated to *k* in that order, byte for byte, whatever the shard
size. Only ``lucene``, ``robertson`` and ``atire`` are supported (``bm25l``/``bm25+`` add a
non-occurrence score that this path does not carry).

Resume: the stages write into ``<artifact>.partial/``; a chunk or shard counts as done once its
``.done`` marker exists (written last), so a build killed at any point (even ``kill -9``) redoes
only unfinished chunks and shards. The finished index is moved into the artifact folder
atomically (:class:`nuggetbench.store.Artifact`) and the partial folder removed.

Peak memory: one chunk's texts and token lists, plus one shard's COO arrays (about 24 bytes per
distinct (document, token) pair of the shard), plus the vocabulary dict; not the corpus.
"""

from __future__ import annotations

import json
import logging
import mmap
import os
import shutil
import tempfile
import time
from collections.abc import Iterable, Iterator, Sequence
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from nuggetbench._atomic import atomic_write
from nuggetbench.data import Corpus, Document, Queries, Run
from nuggetbench.errors import InputError
from nuggetbench.retrieval.bm25.index import tokenize_texts
from nuggetbench.retrieval.models.loading import progress_bar
from nuggetbench.retrieval.protocols import DocFilter, IndexBase, check_k
from nuggetbench.retrieval.shardmap import Mapper, active, serial_map
from nuggetbench.text.bm25s_private import private_api

if TYPE_CHECKING:  # pragma: no cover
    from nuggetbench.retrieval.bm25.retriever import BM25

log = logging.getLogger(__name__)

SHARDED_METHODS = ("lucene", "robertson", "atire")
"""Scoring variants the sharded index supports (no non-occurrence score)."""


# --- doc ids, memory-mapped ------------------------------------------------------------------
class MappedIds(Sequence[str]):
    """Doc ids stored as one UTF-8 byte file plus ``int64`` offsets (shape ``(n + 1,)``), read
    through memory maps: ``ids[i]`` decodes one id; nothing holds a Python list of the corpus.

    Args:
        blob: path of the concatenated UTF-8 ids.
        offsets: path of the ``.npy`` offsets (``offsets[i]:offsets[i+1]`` is id *i*).
    """

    def __init__(self, blob: Path, offsets: Path):
        self._offsets = np.asarray(np.load(offsets, mmap_mode="r"))  # a plain view of the map
        size = int(self._offsets[-1]) if len(self._offsets) else 0
        self._blob: Any = b""
        if size:
            with open(blob, "rb") as fh:
                self._blob = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)

    def __len__(self) -> int:
        return max(len(self._offsets) - 1, 0)

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if not -len(self) <= i < len(self):
            raise IndexError(i)
        i = i % len(self)
        return self._blob[int(self._offsets[i]) : int(self._offsets[i + 1])].decode("utf-8")

    def take(self, positions: np.ndarray) -> np.ndarray:
        """The ids at *positions* (int array, shape ``(m,)``) as an object array, shape ``(m,)``."""
        starts = self._offsets[positions].tolist()
        ends = self._offsets[np.asarray(positions) + 1].tolist()
        blob = self._blob
        out = np.empty(len(starts), dtype=object)
        out[:] = [blob[a:b].decode("utf-8") for a, b in zip(starts, ends)]
        return out


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
    retriever: BM25,
    corpus: Corpus,
    work: Path,
    *,
    shard_docs: int,
    show_progress: bool = False,
    mapper: Mapper | None = None,
) -> dict[str, Any]:
    """Run (or resume) the three stages in *work*; returns the build's summary.

    Args:
        retriever: the :class:`BM25` whose tokenizer and scoring parameters are used.
        corpus: the corpus, read once in corpus order (``iter_documents``).
        work: the partial folder (created; kept between attempts for resuming).
        shard_docs: documents per chunk and shard (>= 1).
        show_progress: tqdm bars (documents/s, ETA) per stage.
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
    vocab: dict[str, int] = {}
    n_chunks, resumed_chunks = _tokenize_stage(
        retriever, corpus, work, shard_docs, total, vocab, show_progress, mapper or active()
    )
    if n_chunks == 0:
        raise InputError(f"cannot index an empty corpus ({corpus.name or corpus!r})")
    if not vocab:
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
    retriever: BM25,
    corpus: Corpus,
    work: Path,
    shard_docs: int,
    total: int,
    vocab: dict[str, int],
    show: bool,
    mapper: Mapper | None = None,
) -> tuple[int, int]:
    """Tokenize the corpus chunk by chunk into *work*, growing the global *vocab* in corpus
    order; returns ``(chunks, chunks resumed)``. With a *mapper* (a cluster), chunks are
    tokenized :data:`MAPPED_WINDOW` at a time by :func:`tokenize_chunk_local` (each with its own
    vocabulary) and then, in corpus order here, re-mapped to the global vocabulary by the code
    the single process runs, so the files are the same bytes."""
    bar = progress_bar(show, total, "bm25 tokenize")
    n_chunks = resumed = 0
    window: list[tuple[Path, list[Document]]] = []

    def flush() -> int:
        """Tokenize the window's unfinished chunks on the mapper, then finish all in order."""
        todo = [(stem, chunk) for stem, chunk in window if not Path(f"{stem}.done").exists()]
        if todo and mapper is not None:
            mapper(
                tokenize_chunk_local,
                [([d.full_text for d in chunk], str(stem)) for stem, chunk in todo],
                common={"tokenizer": retriever.tokenizer},
                sizes=[len(chunk) for _, chunk in todo],
                desc="bm25 tokenize chunks",
            )
        done_before = 0
        for stem, chunk in window:
            if Path(f"{stem}.done").exists():
                added = json.loads(Path(f"{stem}.vocab.json").read_text(encoding="utf-8"))
                for tok in added:
                    vocab[tok] = len(vocab)
                done_before += 1
            elif mapper is not None:
                _write_chunk(stem, chunk, vocab, *_read_local(stem))
            else:
                _tokenize_chunk(retriever, chunk, stem, vocab)
            if bar is not None:
                bar.update(len(chunk))
        window.clear()
        return done_before

    size = MAPPED_WINDOW if mapper is not None else 1
    try:
        for i, chunk in enumerate(_chunks(corpus.iter_documents(), shard_docs)):
            n_chunks += 1
            window.append((work / f"chunk-{i:05d}", chunk))
            if len(window) >= size:
                resumed += flush()
        resumed += flush()
    finally:
        if bar is not None:
            bar.close()
    if resumed:
        log.info("bm25 sharded build: resumed %d of %d tokenized chunks", resumed, n_chunks)
    return n_chunks, resumed


MAPPED_WINDOW = 4
"""Chunks tokenized at once on a cluster (their texts are held by the driver meanwhile)."""


def _tokenize_chunk(retriever: BM25, chunk: list[Document], stem: Path, vocab: dict[str, int]):
    tokens = retriever.tokenize([d.full_text for d in chunk], return_ids=True)
    lens, flat = _flat_ids(tokens.ids, len(chunk))
    _write_chunk(stem, chunk, vocab, list(tokens.vocab.items()), lens, flat)


def _flat_ids(ids: list[list[int]], n: int) -> tuple[np.ndarray, np.ndarray]:
    """``(lens, flat)``: each document's token count (``int64``) and all token ids in order."""
    lens = np.fromiter(map(len, ids), dtype=np.int64, count=n)
    flat = np.fromiter(chain.from_iterable(ids), dtype=np.int64, count=int(lens.sum()))
    return lens, flat


def tokenize_chunk_local(texts: list[str], stem: str, *, tokenizer: tuple[str, str, str]) -> None:
    """A cluster task: tokenize one chunk's *texts* with its own vocabulary (as
    :func:`.bm25_index.tokenize_texts` with *tokenizer*) and write ``<stem>.local.npz``
    (``lens``, ``flat`` token ids, the chunk vocabulary's ``tokens`` as UTF-8 bytes with
    ``offsets`` and their ``ids``, in the order bm25s made it), atomically; running it twice writes the same bytes."""
    tokens = tokenize_texts(texts, tokenizer=tokenizer, return_ids=True, show_progress=False)
    lens, flat = _flat_ids(tokens.ids, len(texts))
    items = list(tokens.vocab.items())
    encoded = [t.encode("utf-8") for t, _ in items]  # no fixed-width array: tokens vary in length
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum([len(e) for e in encoded], out=offsets[1:])
    with atomic_write(Path(f"{stem}.local.npz"), "wb") as fh:
        np.savez(
            fh,
            lens=lens,
            flat=flat,
            tokens=np.frombuffer(b"".join(encoded), dtype=np.uint8),
            offsets=offsets,
            ids=np.array([i for _, i in items], dtype=np.int64),
        )


def _read_local(stem: Path) -> tuple[list[tuple[str, int]], np.ndarray, np.ndarray]:
    """What :func:`tokenize_chunk_local` wrote: ``(vocabulary items, lens, flat)``."""
    with np.load(f"{stem}.local.npz") as data:
        blob, offsets = data["tokens"].tobytes(), data["offsets"].tolist()
        tokens = [blob[a:b].decode("utf-8") for a, b in zip(offsets, offsets[1:])]
        return list(zip(tokens, data["ids"].tolist())), data["lens"], data["flat"]


def _write_chunk(
    stem: Path,
    chunk: list[Document],
    vocab: dict[str, int],
    local_items: list[tuple[str, int]],
    lens: np.ndarray,
    flat: np.ndarray,
) -> None:
    """Re-map one chunk's local token ids to the global *vocab* (new tokens appended in the
    chunk vocabulary's order) and write the chunk's files, its ``.done`` marker last."""
    remap = np.zeros(len(local_items), dtype=np.int32)
    added: list[str] = []
    for tok, local in local_items:
        gid = vocab.get(tok)
        if gid is None:
            gid = vocab[tok] = len(vocab)
            added.append(tok)
        remap[local] = gid
    _save_npy(Path(f"{stem}.tokens.npy"), remap[flat] if len(flat) else np.zeros(0, np.int32))
    _save_npy(Path(f"{stem}.lens.npy"), lens)
    _write_ids([d.doc_id for d in chunk], Path(f"{stem}.ids.bin"), Path(f"{stem}.ids.npy"))
    with atomic_write(Path(f"{stem}.vocab.json")) as fh:
        json.dump(added, fh, ensure_ascii=False)
    Path(f"{stem}.done").touch()  # last: the chunk is complete
    Path(f"{stem}.local.npz").unlink(missing_ok=True)


def _shard_pairs(tokens: np.ndarray, lens: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct (token, doc) pairs of one chunk sorted by token then doc, with their counts."""
    n = len(lens)
    doc = np.repeat(np.arange(n, dtype=np.int64), lens)
    key = tokens.astype(np.int64) * max(n, 1) + doc
    uniq, counts = np.unique(key, return_counts=True)
    return uniq // max(n, 1), uniq % max(n, 1), counts


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
            tok, _doc, _ = _shard_pairs(np.asarray(tokens), lens)
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
    retriever: BM25, work: Path, n_chunks, df, n_docs, avg_doc_len, show, mapper=None
) -> int:
    bm25s_api = private_api()
    idf = bm25s_api.build_idf_array(
        doc_frequencies={t: int(c) for t, c in enumerate(df)},
        n_docs=n_docs,
        compute_idf_fn=bm25s_api.select_idf_scorer(retriever.method),
        dtype="float32",
    )
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
    tok, doc, counts = _shard_pairs(tokens, lens)
    # the operand types of bm25s' _build_scores_and_indices_for_matrix: tf float32,
    # l_d an integer, l_avg a float64 scalar; idf float32; the product to float32
    tfc = private_api().select_tfc_scorer(method)(
        tf_array=counts.astype(np.float32),
        l_d=lens[doc],
        l_avg=avg_doc_len,
        k1=k1,
        b=b,
        delta=delta,
    )
    data = (idf[tok] * tfc).astype(np.float32)
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
        json.dump(vocab, fh, ensure_ascii=False)
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


def load_shard(folder: Path | str, i: int, n: int, *, k1: float, b: float, method: str):
    """Shard *i* of the index in *folder* (*n* documents) as a ``bm25s.BM25`` over memory maps."""
    import bm25s

    stem = Path(folder) / f"shard-{i:05d}"
    scorer = bm25s.BM25(k1=k1, b=b, method=method, backend="numpy")
    scorer.scores = {
        "data": np.load(f"{stem}.data.npy", mmap_mode="r"),
        "indices": np.load(f"{stem}.indices.npy", mmap_mode="r"),
        "indptr": np.load(f"{stem}.indptr.npy", mmap_mode="r"),
        "num_docs": n,
    }
    scorer.nonoccurrence_array = None
    return scorer


def shard_candidates(
    scorer: Any,
    start: int,
    *,
    token_ids: list[list[int]],
    filter_pos: dict[int, np.ndarray],
    k: int,
) -> list[tuple[int, np.ndarray, np.ndarray]]:
    """One shard's candidates for every query: ``[(query number, corpus positions, float32
    scores)]``, every document scoring at or above the shard's k-th best (ties included).

    Args:
        scorer: the shard (:func:`load_shard`); start: its first corpus position.
        token_ids: per query, the global token ids of its terms.
        filter_pos: ``{query number: sorted corpus positions}`` of the restricted queries.
        k: depth (>= 1).
    """
    n = int(scorer.scores["num_docs"])
    out = []
    for i, ids in enumerate(token_ids):
        if i in filter_pos:
            pos = filter_pos[i]
            pos = pos[(pos >= start) & (pos < start + n)] - start
            if not len(pos):
                continue
            s = scorer.get_scores_from_ids(ids)[pos] if ids else np.zeros(len(pos), np.float32)
        elif not ids:
            continue
        else:
            scores = scorer.get_scores_from_ids(ids)
            pos = np.flatnonzero(scores > 0.0)
            s = scores[pos]
        if len(pos) > k:
            kth = np.partition(s, len(s) - k)[len(s) - k]
            keep = s >= kth  # every tie of the k-th score stays a candidate
            pos, s = pos[keep], s[keep]
        out.append((i, pos + start, s))
    return out


def search_shard(
    folder: str, i: int, start: int, n: int, *, k1: float, b: float, method: str, **common: Any
) -> list[tuple[int, np.ndarray, np.ndarray]]:
    """:func:`shard_candidates` of shard *i* loaded from *folder* (a cluster task)."""
    return shard_candidates(load_shard(folder, i, n, k1=k1, b=b, method=method), start, **common)


# --- searching -------------------------------------------------------------------------------
class ShardedBM25Index(IndexBase):
    """A sharded BM25 index (memory-mapped shards); :meth:`search` returns a :class:`Run`.

    Attributes:
        retriever: the :class:`BM25` that built it.
        folder: the index folder (``shard-NNNNN.{data,indices,indptr}.npy``, ``vocab.json``,
            ``doc_ids.bin`` + ``doc_ids.offsets.npy``).
        doc_ids: :class:`MappedIds`, corpus order.
        from_cache: whether it was loaded from the cache.
        mapper: runs the per-shard searches (:mod:`.shardmap`; ``None``: the mapper active at
            search time, :func:`.shardmap.active`, else this process; a cluster's tasks read the
            shards from *folder*, which they must be able to reach).
    """

    def __init__(
        self,
        retriever: BM25,
        folder: Path,
        *,
        from_cache: bool,
        keep: Any = None,
        mapper: Mapper | None = None,
    ):
        self.mapper = mapper  # runs the per-shard searches (None: in this process)
        self.retriever = retriever
        self.folder = Path(folder)
        self.from_cache = from_cache
        self._keep = keep  # a TemporaryDirectory kept alive with the index (cache=false)
        self.vocab: dict[str, int] = json.loads((self.folder / "vocab.json").read_text("utf-8"))
        self.doc_ids = MappedIds(self.folder / "doc_ids.bin", self.folder / "doc_ids.offsets.npy")
        self.sizes: list[int] = []  # documents per shard
        self.starts: list[int] = []
        start = 0
        while (self.folder / f"shard-{len(self.sizes):05d}.data.npy").exists():
            n = int(self._shard_len(len(self.sizes)))
            self.sizes.append(n)
            self.starts.append(start)
            start += n
        if start != len(self.doc_ids):
            raise ValueError(
                f"{self.folder}: the shards hold {start} documents, the ids {len(self.doc_ids)}"
            )
        self._position: dict[str, int] | None = None

    @property
    def shards(self) -> list[Any]:
        """Every shard as a ``bm25s.BM25`` over fresh memory maps (:func:`load_shard`). A search
        does not hold them: it maps one shard at a time and drops it when searched, so the
        index's pages the queries touched leave the process's resident memory shard by shard
        instead of adding up to the whole index (about one byte per corpus byte at 8.8M
        passages)."""
        r = self.retriever
        return [
            load_shard(self.folder, i, n, k1=r.k1, b=r.b, method=r.method)
            for i, n in enumerate(self.sizes)
        ]

    def _shard_len(self, i: int) -> int:
        meta = self._meta()
        return int(meta["shard_sizes"][i])

    def _meta(self) -> dict:
        if not hasattr(self, "_meta_cache"):
            self._meta_cache = json.loads((self.folder / "shards.json").read_text("utf-8"))
        return self._meta_cache

    def search(
        self,
        queries: Queries,
        k: int,
        *,
        doc_filter: DocFilter | None = None,
        show_progress: bool = False,
        objective: str | None = None,
    ) -> Run:
        """Top *k* documents per query, exact, in trec_eval's order; as
        :meth:`nuggetbench.retrieval.bm25.index.BM25Index.search` (same arguments, same run),
        with ties at the k-th score resolved by doc id descending.
        """
        import bm25s

        k = check_k(k)
        qids = list(queries)
        texts = [queries[q] for q in qids]
        if objective:
            texts = [f"{objective}\n{t}" for t in texts]
        tokens = self.tokenize(texts)
        vocab = self.vocab
        token_ids = [[vocab[t] for t in toks if t in vocab and t != ""] for toks in tokens]
        filtered = doc_filter or {}
        cand_pos: dict[int, list[np.ndarray]] = {i: [] for i in range(len(qids))}
        cand_score: dict[int, list[np.ndarray]] = {i: [] for i in range(len(qids))}
        filter_pos: dict[int, np.ndarray] = {}
        missing = 0
        for i, q in enumerate(qids):
            if q in filtered:
                filter_pos[i], n_missing = self._candidates(filtered[q])
                missing += n_missing
        sizes = list(self.sizes)
        params = {"k1": self.retriever.k1, "b": self.retriever.b, "method": self.retriever.method}
        calls = [
            (str(self.folder), i, start, n) for i, (start, n) in enumerate(zip(self.starts, sizes))
        ]
        mapper = self.mapper if self.mapper is not None else active()
        found = (serial_map if mapper is None else mapper)(
            search_shard,  # each call maps its shard and drops it when done
            calls,
            common={"token_ids": token_ids, "filter_pos": filter_pos, "k": k, **params},
            sizes=sizes,
            desc="bm25 search shards",
            show_progress=show_progress,
        )
        for shard_found in found:  # shard order, as the single-process loop
            for i, pos, s in shard_found:
                cand_pos[i].append(pos)
                cand_score[i].append(s)
        if missing:
            log.warning(
                "doc_filter names %d candidate(s) absent from the corpus; they were ignored",
                missing,
            )
        out_q: list[np.ndarray] = []
        out_d: list[np.ndarray] = []
        out_s: list[np.ndarray] = []
        for i, q in enumerate(qids):
            if not cand_pos[i]:
                continue
            pos = np.concatenate(cand_pos[i])
            s = np.concatenate(cand_score[i])
            if not len(pos):
                continue
            if len(pos) > k:
                keep = self._trec_top(pos, s, k)
                pos, s = pos[keep], s[keep]
            docs = self.doc_ids.take(pos)
            out_q.append(np.full(len(docs), q, dtype=object))
            out_d.append(docs)
            out_s.append(s)
        empty = [qids[i] for i, t in enumerate(token_ids) if not t]
        q_arr = np.concatenate(out_q) if out_q else np.zeros(0, dtype=object)
        d_arr = np.concatenate(out_d) if out_d else np.zeros(0, dtype=object)
        s_arr = np.concatenate(out_s).astype(np.float64) if out_s else np.zeros(0)
        return Run(
            q_arr,
            d_arr,
            s_arr,
            name=self.name,
            metadata={
                "retriever": self.name,
                "params": self.retriever.params,
                "bm25s_version": bm25s.__version__,
                "k": k,
                "index_from_cache": self.from_cache,
                "backend": "numpy",
                "shards": len(self.sizes),
                **({"shard_mapper": getattr(mapper, "name", repr(mapper))} if mapper else {}),
                "queries_without_known_terms": len(empty),
                "objective": bool(objective),
            },
        )

    def _trec_top(self, pos: np.ndarray, scores: np.ndarray, k: int) -> np.ndarray:
        """Which of the candidates *pos* (scores *scores*, shape ``(m,)``, m > k) are the first
        *k* in trec_eval's order (score desc, doc id desc); doc ids are decoded only for the
        ties at the k-th score."""
        kth = np.partition(scores, len(scores) - k)[len(scores) - k]
        sure = np.flatnonzero(scores > kth)
        ties = np.flatnonzero(scores == kth)
        need = k - len(sure)
        if len(ties) > need:
            tied_ids = self.doc_ids.take(pos[ties])
            ties = ties[np.argsort(tied_ids, kind="stable")[::-1][:need]]
        return np.concatenate([sure, ties])

    def _candidates(self, doc_ids) -> tuple[np.ndarray, int]:
        if self._position is None:
            self._position = {self.doc_ids[i]: i for i in range(len(self.doc_ids))}
        pos = self._position
        found = [pos[d] for d in doc_ids if d in pos]
        return np.unique(np.asarray(found, dtype=np.int64)), len(doc_ids) - len(found)

    def __repr__(self) -> str:
        return f"<ShardedBM25Index {self.name}: {len(self)} documents in {len(self.sizes)} shards>"


def new_temporary() -> tempfile.TemporaryDirectory:
    """A temporary folder for an uncached sharded index (removed with the index)."""
    return tempfile.TemporaryDirectory(prefix="nuggetbench-bm25-")


def remove(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


__all__ = ["SHARDED_METHODS", "MappedIds", "ShardedBM25Index", "build_sharded", "finish"]
