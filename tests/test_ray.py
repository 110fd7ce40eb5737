"""Sharded indexes on a local Ray cluster (``--ray``) against the single process.

One local cluster per test session (``ray.init(num_cpus=2)``). The distributed build and search
must write the same TREC file, byte for byte, as the single process, for BM25
(``bm25:shard_docs=N``) and dense (``dense:MODEL,shard_docs=N``, a tiny random-weight model); a
worker killed with SIGKILL mid-job (once, on its first attempt, remembered by a marker file) is
retried by Ray and no shard is missing or written by two finished attempts; a driver killed
mid-build resumes redoing only the shards without a ``.done`` marker.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

ray = pytest.importorskip("ray")

from nuggetbench.data import Document, InMemoryCorpus, Queries  # noqa: E402
from nuggetbench.data.formats.trec import write_run  # noqa: E402
from nuggetbench.retrieval import distributed, shardmap  # noqa: E402
from nuggetbench.retrieval.bm25 import sharded as bm25_sharded  # noqa: E402
from nuggetbench.retrieval.bm25.retriever import BM25  # noqa: E402
from nuggetbench.retrieval.dense.retriever import DenseRetriever  # noqa: E402
from retrieval_tiny_models import texts, tiny_models  # noqa: E402

TESTS = Path(__file__).parent
SRC = TESTS.parent / "src"


@pytest.fixture(scope="session")
def cluster():
    """A local Ray cluster for the session: 2 CPUs, no dashboard, a small object store."""
    if not ray.is_initialized():
        ray.init(
            num_cpus=2,
            include_dashboard=False,
            object_store_memory=80 * 1024**2,
            log_to_driver=False,
        )
    # this module's helpers (the killers, the dense subclass) travel by value to the workers
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    yield ray.get_runtime_context().gcs_address
    ray.shutdown()


@pytest.fixture(scope="session")
def tiny():
    return tiny_models()


def _zipf_corpus(seed: int, n: int, vocab: int = 300) -> tuple[InMemoryCorpus, Queries]:
    rng = np.random.default_rng(seed)
    words = [f"t{i}x" for i in range(vocab)]
    p = 1.0 / np.arange(1, vocab + 1)
    p /= p.sum()
    ids = rng.permutation(n)
    docs = [
        Document(f"d{ids[i]:05d}", " ".join(rng.choice(words, size=rng.integers(0, 25), p=p)), "")
        for i in range(n)
    ]
    docs += [Document(f"tie{j}", "t1x t2x t3x", "") for j in range(5)]  # planted ties
    corpus = InMemoryCorpus([docs[i] for i in rng.permutation(len(docs))])
    qs = {f"q{i}": " ".join(rng.choice(words, size=rng.integers(1, 5), p=p)) for i in range(30)}
    qs["tie"] = "t1x t2x t3x"
    return corpus, Queries(qs)


def _trec(run, path: Path) -> bytes:
    write_run(run, path)
    return path.read_bytes()


def _single_bm25(corpus, queries, k, shard_docs, tmp_path) -> bytes:
    index = BM25(shard_docs=shard_docs, cache=False).index(corpus)
    return _trec(index.search(queries, k), tmp_path / "single.trec")


def _build(corpus, work: Path, shard_docs: int, mapper) -> bm25_sharded.ShardedBM25Index:
    retriever = BM25(shard_docs=shard_docs, cache=False)
    summary = bm25_sharded.build_sharded(
        retriever, corpus, work, shard_docs=shard_docs, mapper=mapper
    )
    final = work.parent / "index"
    final.mkdir(exist_ok=True)
    bm25_sharded.finish(work, final, summary["n_shards"])
    index = bm25_sharded.ShardedBM25Index(retriever, final, from_cache=False, mapper=mapper)
    index.summary = summary
    return index


# --- helpers that run inside the workers --------------------------------------------------------
def _logged(fn, log_dir: str, kill_shard: int | None):
    """*fn* (the product's per-shard function) as a task that logs each attempt and SIGKILLs its
    worker on the first attempt at shard *kill_shard*."""

    def task(*args, **kwargs):
        shard = args[1]
        if isinstance(shard, str):  # tokenize_chunk_local(texts, ".../chunk-00003")
            shard = int(shard[-5:])
        with open(Path(log_dir) / "attempts.log", "a") as fh:
            fh.write(f"{fn.__name__} {shard}\n")
        marker = Path(log_dir) / f"killed-{fn.__name__}-{shard}"
        if shard == kill_shard and not marker.exists():
            marker.touch()
            os.kill(os.getpid(), signal.SIGKILL)
        return fn(*args, **kwargs)

    task.__name__ = task.__qualname__ = fn.__name__
    return task


class LoggingMapper(distributed.RayMapper):
    """A RayMapper whose tasks log each attempt and kill their worker once at one shard."""

    def __init__(self, log_dir: Path, kill_shard: int | None = None, **kwargs):
        super().__init__(**kwargs)
        self.log_dir, self.kill_shard = str(log_dir), kill_shard

    def remote(self, fn):
        if fn not in self._remote:
            self._remote[fn] = super().remote(_logged(fn, self.log_dir, self.kill_shard))
        return self._remote[fn]


def _attempts(log_dir: Path, name: str) -> list[int]:
    path = log_dir / "attempts.log"
    lines = path.read_text().split() if path.exists() else []
    return sorted(int(s) for f, s in zip(lines[::2], lines[1::2]) if f == name)


# --- BM25 ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(("n", "shard_docs", "k"), [(400, 37, 10), (250, 100, 1000)])
def test_bm25_on_ray_equals_single_process(cluster, tmp_path, n, shard_docs, k):
    corpus, queries = _zipf_corpus(n, n)
    expected = _single_bm25(corpus, queries, k, shard_docs, tmp_path)
    with distributed.use_ray(cluster) as mapper:
        index = BM25(shard_docs=shard_docs, cache=False).index(corpus)
        assert shardmap.active() is mapper
        got = _trec(index.search(queries, k), tmp_path / "ray.trec")
    assert got == expected and expected


def test_bm25_worker_killed_mid_build_is_retried_once(cluster, tmp_path):
    corpus, queries = _zipf_corpus(5, 300)
    expected = _single_bm25(corpus, queries, 20, 40, tmp_path)
    logs = tmp_path / "logs"
    logs.mkdir()
    work = tmp_path / "work" / "partial"
    index = _build(corpus, work, 40, LoggingMapper(logs, kill_shard=3))
    n_shards = index.summary["n_shards"]
    assert n_shards == 8
    # chunk 3's and shard 3's workers died on their first attempts and Ray ran them again;
    # every other chunk and shard ran once
    assert _attempts(logs, "tokenize_chunk_local") == sorted([*range(n_shards), 3])
    assert _attempts(logs, "score_shard") == sorted([*range(n_shards), 3])
    assert (logs / "killed-tokenize_chunk_local-3").exists()
    assert (logs / "killed-score_shard-3").exists()
    assert not list(work.glob("*.local.npz"))  # the chunks' local files were consumed
    assert sorted(p.name for p in work.glob("shard-*.done")) == [
        f"shard-{i:05d}.done" for i in range(n_shards)
    ]
    got = _trec(index.search(queries, 20), tmp_path / "ray.trec")
    assert got == expected


def test_bm25_worker_killed_mid_search_is_retried(cluster, tmp_path):
    corpus, queries = _zipf_corpus(6, 200)
    expected = _single_bm25(corpus, queries, 15, 30, tmp_path)
    logs = tmp_path / "logs"
    logs.mkdir()
    index = _build(corpus, tmp_path / "work" / "partial", 30, None)
    index.mapper = LoggingMapper(logs, kill_shard=2)
    got = _trec(index.search(queries, 15), tmp_path / "ray.trec")
    assert _attempts(logs, "search_shard") == sorted([*range(len(index.shards)), 2])
    assert got == expected


DRIVER = """
import os, signal, sys
import ray
from nuggetbench.retrieval import distributed
from nuggetbench.retrieval.bm25 import sharded as bm25_sharded
sys.path.insert(0, {tests!r})
import test_ray
from test_ray import _zipf_corpus, LoggingMapper
ray.cloudpickle.register_pickle_by_value(test_ray)
from nuggetbench.retrieval.bm25.retriever import BM25
ray.init(address={address!r}, log_to_driver=False)

class DyingDriver(LoggingMapper):
    def __call__(self, fn, calls, **kw):
        if fn.__name__ != "score_shard":  # tokenizing runs to its end
            return super().__call__(fn, calls, **kw)
        refs = [self.remote(fn).remote(*c, **kw.get("common", {{}})) for c in calls]
        ray.wait(refs, num_returns=3)  # three shards done, the others queued or running
        os.kill(os.getpid(), signal.SIGKILL)

corpus, _ = _zipf_corpus(7, 400)
bm25_sharded.build_sharded(BM25(shard_docs=25, cache=False), corpus, __import__("pathlib").Path({work!r}),
                           shard_docs=25, mapper=DyingDriver({logs!r}))
"""


def test_bm25_driver_killed_resumes_only_unfinished_shards(cluster, tmp_path):
    corpus, queries = _zipf_corpus(7, 400)
    expected = _single_bm25(corpus, queries, 10, 25, tmp_path)
    logs = tmp_path / "logs"
    logs.mkdir()
    work = tmp_path / "work" / "partial"
    code = DRIVER.format(tests=str(TESTS), address=cluster, work=str(work), logs=str(logs))
    env = {**os.environ, "PYTHONPATH": f"{SRC}{os.pathsep}{TESTS}"}
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, timeout=300)
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()[-3000:]
    time.sleep(3)  # Ray stops the dead driver's tasks
    done = {p.name: p.stat().st_mtime_ns for p in work.glob("shard-*.done")}
    data = {p.name: p.stat().st_mtime_ns for p in work.glob("shard-*.data.npy")}
    assert 3 <= len(done) < 17, sorted(done)
    (logs / "attempts.log").unlink()
    index = _build(corpus, work, 25, LoggingMapper(logs))
    assert index.summary["resumed_shards"] == len(done)
    assert index.summary["resumed_chunks"] == 17  # the tokenizing had finished
    redone = _attempts(logs, "score_shard")
    finished = sorted(int(name[6:11]) for name in done)
    assert redone == sorted(set(range(17)) - set(finished))
    for name, mtime in done.items():  # the finished shards were left untouched
        assert (work / name).stat().st_mtime_ns == mtime
        assert (work / name.replace(".done", ".data.npy")).stat().st_mtime_ns == data[
            name.replace(".done", ".data.npy")
        ]
    assert _trec(index.search(queries, 10), tmp_path / "ray.trec") == expected


# --- dense --------------------------------------------------------------------------------------
class DyingDense(DenseRetriever):
    """The dense retriever whose first encode call (across actors) kills its actor; the marker
    path (a class attribute) travels with the class, pickled by value."""

    marker: str = ""

    def _encode_docs(self, texts, batch_size):
        marker = Path(self.marker)
        if self.marker and not marker.exists():
            marker.touch()
            os.kill(os.getpid(), signal.SIGKILL)
        return super()._encode_docs(texts, batch_size)


def _dense_corpus(n: int, seed: int) -> InMemoryCorpus:
    return InMemoryCorpus.from_dict({f"d{i:04d}": t for i, t in enumerate(texts(n, seed=seed))})


@pytest.mark.parametrize("kill", [False, True])
def test_dense_on_ray_data_equals_single_process(cluster, tiny, tmp_path, monkeypatch, kill):
    n = 157
    corpus = _dense_corpus(n, 4)
    queries = Queries({f"q{i}": t for i, t in enumerate(texts(9, seed=11))})
    opts = dict(device="cpu", chunk=16, batch_size=8, shard_docs=40, doc_block=32)
    marker = tmp_path / "killed"
    DyingDense.marker = str(marker)
    cls = DyingDense if kill else DenseRetriever
    single = DenseRetriever(str(tiny.bi_encoder), **opts).index(corpus)
    expected = _trec(single.search(queries, 25), tmp_path / "single.trec")
    # a fresh home: nothing cached, the Ray path encodes every shard
    monkeypatch.setenv("NUGGETBENCH_HOME", str(tmp_path / "home2"))
    with distributed.use_ray(cluster):
        r = cls(str(tiny.bi_encoder), **opts)
        index = r.index(corpus)
        assert r.encode_calls == 0  # every encode call ran in the Ray Data actors
        assert np.array_equal(np.asarray(index.embeddings), np.asarray(single.embeddings))
        got = _trec(index.search(queries, 25), tmp_path / "ray.trec")
    assert got == expected and expected
    assert marker.exists() == kill  # the actor was killed, restarted and its shard retried
    meta = json.loads((Path(index.cache_path) / "meta.json").read_text())
    assert meta["shards"] == 4 and meta["encoded"] == 4 and meta["resumed"] == 0


def test_dense_search_on_ray_equals_block_search(cluster, tiny, tmp_path):
    corpus = _dense_corpus(300, 5)
    queries = Queries({f"q{i}": t for i, t in enumerate(texts(70, seed=12))})
    r = DenseRetriever(
        str(tiny.bi_encoder), device="cpu", shard_docs=64, doc_block=16, query_block=32
    )
    index = r.index(corpus)
    for k in (1, 7, 400):
        expected = _trec(index.search(queries, k), tmp_path / "single.trec")
        with distributed.use_ray(cluster):
            run = index.search(queries, k)
        assert run.metadata["shard_mapper"] == "ray"
        assert _trec(run, tmp_path / "ray.trec") == expected and expected


# --- the command line and the switch ------------------------------------------------------------
def _beir_folder(root: Path, corpus: InMemoryCorpus, queries: Queries) -> Path:
    folder = root / "ds"
    (folder / "qrels").mkdir(parents=True)
    with open(folder / "corpus.jsonl", "w") as fh:
        for doc in corpus.iter_documents():
            fh.write(json.dumps({"_id": doc.doc_id, "title": doc.title, "text": doc.text}) + "\n")
    with open(folder / "queries.jsonl", "w") as fh:
        for qid in queries:
            fh.write(json.dumps({"_id": qid, "text": queries[qid]}) + "\n")
    rows = "".join(f"{q}\ttie0\t1\n" for q in queries)
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + rows)
    return folder


def test_cli_ray_option_writes_the_same_run(cluster, tmp_path, monkeypatch):
    from click.testing import CliRunner

    from nuggetbench.cli import cli

    corpus, queries = _zipf_corpus(9, 300)
    folder = _beir_folder(tmp_path, corpus, queries)
    spec = "bm25:shard_docs=64"
    outs = {}
    for how, args, env in [
        ("single", [], ""),
        ("option", ["--ray", cluster], ""),
        ("env", [], cluster),
    ]:
        monkeypatch.setenv("NUGGETBENCH_HOME", str(tmp_path / f"home-{how}"))
        monkeypatch.setenv(distributed.ENV_ADDRESS, env)
        out = CliRunner().invoke(
            cli, ["run", str(folder), "-r", spec, "-k", "50", "-o", str(tmp_path / how), *args]
        )
        assert out.exit_code == 0, out.output
        (trec,) = (tmp_path / how / "runs").glob("*.trec")
        outs[how] = trec.read_bytes()
        saved = json.loads((tmp_path / how / "results.json").read_text())
        meta = saved["systems"][spec]["run_metadata"]
        assert meta.get("shard_mapper") == ("ray" if how != "single" else None), how
    assert outs["option"] == outs["single"] == outs["env"] and outs["single"]


def test_without_ray_nothing_imports_ray(tmp_path):
    code = textwrap.dedent(
        """
        import sys
        from nuggetbench.data import InMemoryCorpus, Queries
        from nuggetbench.experiment import run_experiment
        from nuggetbench.retrieval.bm25.retriever import BM25
        index = BM25(shard_docs=2, cache=False).index(InMemoryCorpus.from_dict(
            {"a": "red fox", "b": "blue fox", "c": "red hen"}))
        index.search(Queries({"q": "red"}), 2)
        assert "ray" not in sys.modules, "ray was imported"
        """
    )
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    env.pop(distributed.ENV_ADDRESS, None)
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]


def test_ray_address_resolution(monkeypatch):
    monkeypatch.delenv(distributed.ENV_ADDRESS, raising=False)
    assert distributed.ray_address(None) is None
    monkeypatch.setenv(distributed.ENV_ADDRESS, "10.0.0.2:6379")
    assert distributed.ray_address(None) == "10.0.0.2:6379"
    assert distributed.ray_address("") is None  # an explicit "none" beats the environment
    assert distributed.ray_address("auto") == "auto"
