"""Past one machine: the sharded indexes' per-shard work on a Ray cluster (``--ray auto|ADDRESS``).

Ray is an optional extra (``pip install nuggetbench[ray]``), imported only when a cluster is
asked for. Inside :func:`use_ray` (what ``nuggetbench run --ray`` and
``run_experiment(ray=...)`` do):

- **BM25** (``bm25:shard_docs=N``): each shard's score matrix is built by a Ray task
  (:func:`.bm25.shard_build.score_shard`, the function the single process runs: it writes the shard's
  files atomically, then its ``.done`` marker), and each query batch is searched shard by shard by
  Ray tasks (:func:`.bm25.sharded.search_shard`); the per-shard candidates come back in shard
  order and are merged and cut to *k* by the single process's code, so the run is the same, byte
  for byte. Tokenizing runs on the cluster too: the driver reads the corpus in order and sends
  chunks, a few at a time, to Ray tasks (:func:`.bm25.shard_build.tokenize_chunk_local`, each chunk
  with its own vocabulary, written to a local file); the driver then re-maps each chunk to the
  one global vocabulary in corpus order with the single process's code, so the token files are
  the same bytes.
- **Dense** (``dense:MODEL,shard_docs=N``): the shards of the single pass (same boundaries, same
  length-sorted order, same encode calls) are encoded with Ray Data, ``map_batches`` over model
  actors, one per GPU (``num_gpus=1``) or, without GPUs, one per CPU slot; each actor writes its
  shard's rows into the shared memory map and then the shard's ``.done`` marker
  (:func:`.dense_sharded.write_shard`), so the vectors are those of the single pass. Exact search
  runs as Ray tasks over ranges of whole ``doc_block`` blocks (the same blocks, so the same score
  bits), each returning its top-k per query; the driver keeps the top-k of their union in
  trec_eval's order (:func:`.topk.select_topk`). faiss indexes and ``doc_filter`` searches run in
  the driver.

Failures: every task is retried by Ray after a worker dies (``max_retries``; Ray Data restarts its
actors and retries their batches); each per-shard function is idempotent, so a retried shard is
written once more with the same bytes and counted once. A driver killed mid-build leaves the
finished shards' markers, and the next run redoes only the others.

Where things live: tasks read and write the index's partial folder and the corpus (file corpora
are read by path), so on several machines that folder, the corpus and the model must be on storage
every node reaches (a shared file system); an in-memory corpus is shipped to the actors.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from nuggetbench.errors import InputError
from nuggetbench.retrieval import shardmap
from nuggetbench.retrieval.dense import sharded as dense_sharded
from nuggetbench.retrieval.models.loading import progress_bar
from nuggetbench.retrieval.models.topk import block_topk, make_run, select_topk

log = logging.getLogger(__name__)

ENV_ADDRESS = "NUGGETBENCH_RAY_ADDRESS"
"""Environment variable naming the cluster when ``--ray`` / ``ray=`` is not given."""

MAX_RETRIES = 3
"""Ray retries of a task whose worker died (system failures; a Python exception is not retried)."""


def ray_address(option: str | None) -> str | None:
    """The cluster to use: *option* if given (``""`` means none), else ``$NUGGETBENCH_RAY_ADDRESS``,
    else ``None`` (no cluster, nothing imports ray)."""
    if option is not None:
        return option.strip() or None
    return os.environ.get(ENV_ADDRESS, "").strip() or None


def _import_ray():
    try:
        import ray  # lazy: the optional extra, only when a cluster is asked for
    except ImportError as exc:
        raise InputError(
            "--ray needs Ray: pip install 'nuggetbench[ray]' (or 'ray[data]>=2.9')"
        ) from exc
    return ray


def connect(address: str = "auto"):
    """Connect this process to a Ray cluster and return the ``ray`` module.

    Args:
        address: ``"auto"`` (a cluster running on this machine, as ``ray start --head`` leaves),
            ``"local"`` (start a new one inside this process, with every local CPU and GPU), or
            ``host:port`` / ``ray://host:port``. A process already connected
            (``ray.is_initialized()``) keeps its connection.

    Raises:
        InputError: Ray is not installed, or no cluster answers at *address* (named).
    """
    ray = _import_ray()
    if ray.is_initialized():
        return ray
    kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
    try:
        if address == "local":
            ray.init(**kwargs)
        else:
            ray.init(address=address, **kwargs)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise InputError(
            f"cannot connect to the Ray cluster at {address!r} ({exc}); start one with "
            "`ray start --head`, or give --ray local to start one in this process"
        ) from exc
    return ray


class RayMapper:
    """A :class:`~.shardmap.Mapper` that runs each call as a Ray task.

    Args:
        address: the cluster (see :func:`connect`); connected on the first call.
        max_retries: Ray retries of a task whose worker died.
        num_cpus: CPUs each task reserves.
    """

    name = "ray"  # recorded in the run's metadata (``shard_mapper``)

    def __init__(self, address: str = "auto", *, max_retries: int = MAX_RETRIES, num_cpus=1):
        self.address = address
        self.max_retries = int(max_retries)
        self.num_cpus = num_cpus
        self._remote: dict[Callable, Any] = {}

    def ray(self):
        """The connected ``ray`` module."""
        return connect(self.address)

    def remote(self, fn: Callable[..., Any]):
        """*fn* as a Ray remote function (retried after a worker dies)."""
        if fn not in self._remote:
            self._remote[fn] = self.ray().remote(
                max_retries=self.max_retries, retry_exceptions=False, num_cpus=self.num_cpus
            )(fn)
        return self._remote[fn]

    def __call__(
        self,
        fn: Callable[..., Any],
        calls: Sequence[tuple],
        *,
        common: dict[str, Any] | None = None,
        sizes: Sequence[int] | None = None,
        desc: str = "",
        show_progress: bool = False,
    ) -> list[Any]:
        """``[fn(*call, **common) for call in calls]``, each call a Ray task (the shared
        arguments put in the object store once); results in call order."""
        if not calls:
            return []
        ray = self.ray()
        remote = self.remote(fn)
        shared = {key: ray.put(value) for key, value in (common or {}).items()}
        refs = [remote.remote(*call, **shared) for call in calls]
        size_of = dict(zip(refs, sizes if sizes else [1] * len(refs)))
        bar = progress_bar(show_progress, int(sum(size_of.values())), f"{desc} (ray)")
        try:
            pending = list(refs)
            while pending:
                done, pending = ray.wait(pending, num_returns=1)
                if bar is not None:
                    bar.update(sum(size_of[r] for r in done))
            return ray.get(refs)
        finally:
            if bar is not None:
                bar.close()

    def __repr__(self) -> str:
        return f"<RayMapper {self.address}>"


@contextmanager
def use_ray(address: str | None) -> Iterator[RayMapper | None]:
    """Within the block, sharded indexes are built and searched on the Ray cluster at *address*
    (see :func:`connect`; ``None`` changes nothing and imports nothing)."""
    if address is None:
        yield None
        return
    mapper = RayMapper(address)
    mapper.ray()  # connect now: a wrong address fails before any work
    with shardmap.using(mapper):
        yield mapper


def active_ray() -> RayMapper | None:
    """The :class:`RayMapper` in use (innermost :func:`use_ray`), or ``None``."""
    mapper = shardmap.active()
    return mapper if isinstance(mapper, RayMapper) else None


# --- dense: encoding with Ray Data ------------------------------------------------------------
class ShardEncoder:
    """A Ray Data model actor: encodes whole shards of the single pass and writes them.

    Args:
        factory: ``(class, model, options)`` of the dense retriever, rebuilt in the actor.
        work: the partial folder holding ``embeddings.npy``.
        corpus, doc_ids: the documents and their ids in index order.
        order: the encoding order (``(n,)`` rows); size: documents per shard; step: documents
            per encode call; with_title: encode ``title + text``.
    """

    def __init__(self, factory, work, corpus, doc_ids, order, size, step, with_title):
        cls, model, options = factory
        self.retriever = cls(model, options)
        self.work = Path(work)
        self.out = np.load(self.work / "embeddings.npy", mmap_mode="r+")
        self.corpus, self.doc_ids, self.order = corpus, doc_ids, order
        self.size, self.step, self.with_title = int(size), int(step), bool(with_title)

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        docs = []
        r = self.retriever
        for i in batch["shard"].tolist():
            docs.append(
                dense_sharded.write_shard(
                    self.work,
                    self.out,
                    int(i),
                    self.order[i * self.size : (i + 1) * self.size],
                    self.corpus,
                    self.doc_ids,
                    with_title=self.with_title,
                    step=self.step,
                    encode=lambda texts: r.backoff(r._encode_docs, texts),
                )
            )
        return {"shard": np.asarray(batch["shard"]), "docs": np.asarray(docs, dtype=np.int64)}


def encode_dense(
    mapper: RayMapper,
    retriever: Any,
    work: Path,
    corpus: Any,
    doc_ids: list[str],
    *,
    dim: int,
    with_title: bool,
    shard_docs: int,
    step: int,
    show_progress: bool = False,
) -> dict[str, int]:
    """:func:`.dense_sharded.encode_sharded` with the shards encoded by Ray Data model actors
    (one per GPU, else one per CPU slot; at most one per pending shard).

    Args: as :func:`.dense_sharded.encode_sharded`, plus the *mapper* (its cluster) and the dense
    *retriever* (its class, model and options are rebuilt in each actor).

    Returns:
        ``{"shards", "resumed", "encoded", "shard_docs", "actors", "gpus"}``.

    Raises:
        RuntimeError: a shard has no ``.done`` marker after the job (not expected: Ray raises first).
    """
    out, order, size, done = dense_sharded.prepare(
        work, corpus, len(doc_ids), dim=dim, with_title=with_title, shard_docs=shard_docs, step=step
    )
    del out  # the actors open their own maps
    pending = [i for i, d in enumerate(done) if not d]
    resumed = len(done) - len(pending)
    ray = mapper.ray()
    resources = ray.cluster_resources()
    gpus = int(resources.get("GPU", 0))
    slots = gpus or max(1, int(resources.get("CPU", 1)))
    actors = max(1, min(slots, len(pending)))
    if pending:
        import ray.data  # lazy: part of the optional extra

        ds = ray.data.from_items([{"shard": i} for i in pending], override_num_blocks=len(pending))
        placement: dict[str, Any] = {"num_gpus": 1} if gpus else {"num_cpus": 1}
        ds = ds.map_batches(
            ShardEncoder,
            fn_constructor_args=(
                (type(retriever), retriever.model_name, retriever.options),
                str(work),
                corpus,
                doc_ids,
                order,
                size,
                step,
                with_title,
            ),
            batch_size=1,
            batch_format="numpy",
            concurrency=actors,
            **placement,
        )
        sizes = {i: len(order[i * size : (i + 1) * size]) for i in pending}
        bar = progress_bar(show_progress, sum(sizes.values()), "encoding corpus (ray data)")
        try:
            for batch in ds.iter_batches(batch_size=None, batch_format="numpy"):
                if bar is not None:
                    bar.update(int(np.sum(batch["docs"])))
        finally:
            if bar is not None:
                bar.close()
    missing = [i for i in range(len(done)) if not (work / f"shard-{i:05d}.done").exists()]
    if missing:
        raise RuntimeError(f"dense encode on Ray: shards {missing} have no .done marker in {work}")
    return {
        "shards": len(done),
        "resumed": resumed,
        "encoded": len(pending),
        "shard_docs": size,
        "actors": actors if pending else 0,
        "gpus": gpus,
    }


# --- dense: exact search over row ranges ------------------------------------------------------
def search_rows(
    path: str,
    d0: int,
    d1: int,
    *,
    queries: np.ndarray,
    tie_key: np.ndarray,
    k: int,
    query_block: int,
    doc_block: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Exact top-*k* of every query over rows ``d0:d1`` of the ``.npy`` at *path* (a task).

    The rows are scored in the single search's blocks (``query_block`` x ``doc_block``, *d0* a
    multiple of *doc_block*), so the scores are the same bits.

    Returns:
        ``(rows, scores)``, shape ``(n_queries, min(k, d1 - d0))``: corpus rows and float64 scores.
    """
    emb = np.load(path, mmap_mode="r")
    q = np.asarray(queries, dtype=np.float32)

    def score(q_rows: np.ndarray, d_rows: np.ndarray) -> np.ndarray:
        docs = emb[d0 + int(d_rows[0]) : d0 + int(d_rows[-1]) + 1]
        return q[q_rows] @ np.asarray(docs, dtype=np.float32).T

    ids, scores = block_topk(
        score,
        len(q),
        d1 - d0,
        k,
        tie_key=tie_key[d0:d1],
        query_block=query_block,
        doc_block=doc_block,
    )
    return ids + d0, scores


def search_dense(
    mapper: RayMapper,
    path: str,
    n_docs: int,
    queries: np.ndarray,
    qids: list[str],
    doc_ids: np.ndarray,
    tie_key: np.ndarray,
    k: int,
    *,
    query_block: int,
    doc_block: int,
    span: int,
    name: str,
    metadata: dict,
    show_progress: bool = False,
):
    """Exact search of *queries* (``(q, dim)`` float32) over the memory-mapped vectors at *path*,
    in Ray tasks over ranges of *span* rows (rounded up to whole ``doc_block`` blocks); the top-k
    of the union of their candidates in trec_eval's order, as a :class:`~nuggetbench.data.Run`
    equal to :func:`.topk.search_topk`'s."""
    kk = min(k, n_docs)
    qid_arr = np.asarray(qids, dtype=object)
    if kk == 0 or not len(qids):
        return make_run(qid_arr, [], [], [], doc_ids, name=name, metadata=metadata)
    block = max(kk, int(doc_block))  # block_topk's own rounding
    span = max(1, -(-int(span) // block)) * block
    ranges = [(path, d0, min(d0 + span, n_docs)) for d0 in range(0, n_docs, span)]
    found = mapper(
        search_rows,
        ranges,
        common={
            "queries": queries,
            "tie_key": tie_key,
            "k": kk,
            "query_block": query_block,
            "doc_block": block,
        },
        sizes=[d1 - d0 for _, d0, d1 in ranges],
        desc="dense search",
        show_progress=show_progress,
    )
    ids = np.concatenate([f[0] for f in found], axis=1)
    scores = np.concatenate([f[1] for f in found], axis=1)
    for r in range(0, len(ids), 64):  # a slice of rows at a time keeps the temporaries small
        sl = slice(r, r + 64)
        ids[sl, :kk], scores[sl, :kk] = select_topk(scores[sl], ids[sl], tie_key[ids[sl]], kk)
    ids, scores = ids[:, :kk], scores[:, :kk]
    return make_run(
        qid_arr,
        [np.repeat(qid_arr, ids.shape[1])],
        [ids.ravel()],
        [scores.ravel()],
        doc_ids,
        name=name,
        metadata={**metadata, "shard_mapper": mapper.name},
    )


__all__ = [
    "ENV_ADDRESS",
    "RayMapper",
    "ShardEncoder",
    "active_ray",
    "connect",
    "encode_dense",
    "ray_address",
    "search_dense",
    "search_rows",
    "use_ray",
]
