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
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from nuggetbench.data import Queries, Run
from nuggetbench.retrieval.bm25.engine import Settings
from nuggetbench.retrieval.bm25.shard_build import build_sharded, finish
from nuggetbench.retrieval.bm25.topk import candidates, choose_backend, trec_top
from nuggetbench.retrieval.protocols import DocFilter, IndexBase, check_k
from nuggetbench.retrieval.shardmap import Mapper, active, serial_map

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
    backend: str = "auto",
    threads: int = 0,
) -> list[tuple[int, np.ndarray, np.ndarray]]:
    """One shard's candidates for every query: ``[(query number, corpus positions, float32
    scores)]``, every document scoring at or above the shard's k-th best (ties included).

    Args:
        scorer: the shard (:func:`load_shard`); start: its first corpus position.
        token_ids: per query, the global token ids of its terms.
        filter_pos: ``{query number: sorted corpus positions}`` of the restricted queries.
        k: depth (>= 1).
        backend, threads: the search backend (``auto``: :func:`.topk.choose_backend` for this
            shard) and its threads (:func:`.topk.candidates`).
    """
    n = int(scorer.scores["num_docs"])
    out = []
    free = [i for i, ids in enumerate(token_ids) if ids and i not in filter_pos]
    if free:
        counts, docs, scores = candidates(
            scorer.scores,
            [token_ids[i] for i in free],
            k,
            backend=choose_backend(backend, len(free), n),
            threads=threads,
        )
        ends = np.cumsum(counts)
        for j, i in enumerate(free):
            if counts[j]:
                lo = int(ends[j] - counts[j])
                out.append((i, docs[lo : ends[j]] + start, scores[lo : ends[j]]))
    for i, pos in filter_pos.items():
        pos = pos[(pos >= start) & (pos < start + n)] - start
        if not len(pos):
            continue
        ids = token_ids[i]
        s = scorer.get_scores_from_ids(ids)[pos] if ids else np.zeros(len(pos), np.float32)
        if len(pos) > k:
            kth = np.partition(s, len(s) - k)[len(s) - k]
            keep = s >= kth  # every tie of the k-th score stays a candidate
            pos, s = pos[keep], s[keep]
        out.append((i, pos + start, s))
    return sorted(out, key=lambda c: c[0])


def search_shard(
    folder: str, i: int, start: int, n: int, *, k1: float, b: float, method: str, **common: Any
) -> list[tuple[int, np.ndarray, np.ndarray]]:
    """:func:`shard_candidates` of shard *i* loaded from *folder* (a cluster task)."""
    return shard_candidates(load_shard(folder, i, n, k1=k1, b=b, method=method), start, **common)


# --- searching -------------------------------------------------------------------------------
class ShardedBM25Index(IndexBase):
    """A sharded BM25 index (memory-mapped shards); :meth:`search` returns a :class:`Run`.

    Attributes:
        retriever: the retriever (:class:`~.engine.Settings`) that built it.
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
        retriever: Settings,
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
        r = self.retriever
        params = {"k1": r.k1, "b": r.b, "method": r.method}
        search = {"backend": r.backend, "threads": r.threads}
        calls = [
            (str(self.folder), i, start, n) for i, (start, n) in enumerate(zip(self.starts, sizes))
        ]
        mapper = self.mapper if self.mapper is not None else active()
        found = (serial_map if mapper is None else mapper)(
            search_shard,  # each call maps its shard and drops it when done
            calls,
            common={"token_ids": token_ids, "filter_pos": filter_pos, "k": k, **params, **search},
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
                "doc_filter names %d candidate(s) absent from the corpus; they were ignored "
                "(they cannot be retrieved)",
                missing,
            )
        q_arr, d_arr, s_arr = self._merge(qids, cand_pos, cand_score, k)
        empty = [qids[i] for i, t in enumerate(token_ids) if not t]
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
                "backend": choose_backend(r.backend, len(qids), max(self.sizes, default=0)),
                "shards": len(self.sizes),
                **({"shard_mapper": getattr(mapper, "name", repr(mapper))} if mapper else {}),
                "queries_without_known_terms": len(empty),
                "objective": bool(objective),
            },
        )

    def _merge(
        self,
        qids: list[str],
        cand_pos: dict[int, list[np.ndarray]],
        cand_score: dict[int, list[np.ndarray]],
        k: int,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The shards' candidates of each query merged and cut to *k* in trec_eval's order:
        ``(query ids, doc ids, scores)`` columns."""
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
        q_arr = np.concatenate(out_q) if out_q else np.zeros(0, dtype=object)
        d_arr = np.concatenate(out_d) if out_d else np.zeros(0, dtype=object)
        s_arr = np.concatenate(out_s).astype(np.float64) if out_s else np.zeros(0)
        return q_arr, d_arr, s_arr

    def _trec_top(self, pos: np.ndarray, scores: np.ndarray, k: int) -> np.ndarray:
        """Which of the candidates *pos* (scores *scores*, shape ``(m,)``, m > k) are the first
        *k* in trec_eval's order (score desc, doc id desc); doc ids are decoded only for the
        ties at the k-th score (:func:`~nuggetbench.retrieval.bm25.index.trec_top`)."""
        return trec_top(scores, k, lambda t: self.doc_ids.take(pos[t]))

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
