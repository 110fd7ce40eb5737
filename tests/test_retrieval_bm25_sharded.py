"""The sharded BM25 index (``bm25:shard_docs=N``) against the single bm25s index.

The reference is bm25s itself (the single index, ``BM25Index``): for random corpora, several
shard sizes, both presets and planted ties, the sharded run at depth k must be byte for byte
the single index's full ranking cut to k in trec_eval's order (score desc, doc id desc); its
stored per-document scores must equal bm25s' CSC matrix bit for bit. A build killed with
SIGKILL resumes, redoing only unfinished chunks.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from nuggetbench.data import Document, InMemoryCorpus, Queries
from nuggetbench.data.formats.trec import write_run
from nuggetbench.errors import SpecError
from nuggetbench.retrieval import parse_retriever
from nuggetbench.retrieval.bm25.retriever import BM25
from nuggetbench.retrieval.bm25.sharded import ShardedBM25Index


def _zipf_corpus(seed: int, n: int, vocab: int = 400) -> tuple[InMemoryCorpus, Queries]:
    rng = np.random.default_rng(seed)
    words = [f"t{i}x" for i in range(vocab)]
    p = 1.0 / np.arange(1, vocab + 1)
    p /= p.sum()
    ids = rng.permutation(n)  # doc ids not in corpus order
    docs = [
        Document(f"d{ids[i]:05d}", " ".join(rng.choice(words, size=rng.integers(0, 25), p=p)), "")
        for i in range(n)
    ]
    # planted ties: identical documents, and one with no indexable term
    docs += [Document(f"tie{j}", "t1x t2x t3x", "") for j in range(5)]
    docs.append(Document("empty", "the of and", ""))
    order = rng.permutation(len(docs))
    corpus = InMemoryCorpus([docs[i] for i in order])
    qs = {f"q{i}": " ".join(rng.choice(words, size=rng.integers(1, 5), p=p)) for i in range(40)}
    qs["tie"] = "t1x t2x t3x"
    qs["unknown"] = "zzzz"
    return corpus, Queries(qs)


def _text(run, tmp_path: Path) -> bytes:
    path = tmp_path / "run.trec"
    write_run(run, path)
    return path.read_bytes()


@pytest.mark.parametrize("preset", ["", "k1=0.9,b=0.4", "method=robertson", "method=atire"])
@pytest.mark.parametrize("seed", [0, 1])
def test_sharded_runs_equal_single_index(tmp_path, preset, seed):
    corpus, queries = _zipf_corpus(seed, 300)
    sep = "," if preset else ""
    single = parse_retriever(f"bm25:{preset}{sep}cache=false,backend=numpy").index(corpus)
    full = single.search(queries, len(corpus))
    for shard_docs in (1 + seed, 37, 100, 10_000):
        index = parse_retriever(f"bm25:{preset}{sep}shard_docs={shard_docs}").index(corpus)
        assert isinstance(index, ShardedBM25Index)
        for k in (1, 3, 10, len(corpus)):
            assert _text(index.search(queries, k), tmp_path) == _text(full.truncate(k), tmp_path)


def test_sharded_scores_equal_bm25s_matrix():
    corpus, _ = _zipf_corpus(3, 200)
    single = BM25(cache=False).index(corpus)
    sharded = BM25(shard_docs=1000).index(corpus)  # one shard: the whole matrix
    ref = single.bm25.scores
    shard = sharded.shards[0].scores
    # the same matrix up to the vocabulary's numbering
    rev = {v: t for t, v in single.bm25.vocab_dict.items()}
    for tid in range(len(ref["indptr"]) - 1):
        gid = sharded.vocab[rev[tid]]
        a, b = ref["indptr"][tid], ref["indptr"][tid + 1]
        c, d = shard["indptr"][gid], shard["indptr"][gid + 1]
        np.testing.assert_array_equal(ref["indices"][a:b], shard["indices"][c:d])
        assert ref["data"][a:b].tobytes() == np.asarray(shard["data"][c:d]).tobytes()
    assert list(sharded.doc_ids) == single.doc_ids


def test_sharded_doc_filter_and_objective(tmp_path):
    corpus, queries = _zipf_corpus(4, 150)
    single = BM25(cache=False, backend="numpy").index(corpus)
    sharded = BM25(shard_docs=40).index(corpus)
    pool = {"q1": [d for d in list(corpus)[:60]] + ["absent"], "tie": list(corpus)}
    for k in (5, 1000):
        want = single.search(queries, k, doc_filter=pool, objective="t5x")
        got = sharded.search(queries, k, doc_filter=pool, objective="t5x")
        if k == 1000:
            assert _text(got, tmp_path) == _text(want, tmp_path)
        else:
            assert got.n_entries == want.n_entries


def test_sharded_cache_is_reused_and_keyed(tmp_path):
    corpus, queries = _zipf_corpus(5, 120)
    first = BM25(shard_docs=50).index(corpus)
    again = BM25(shard_docs=50).index(corpus)
    assert not first.from_cache and again.from_cache
    assert _text(first.search(queries, 10), tmp_path) == _text(again.search(queries, 10), tmp_path)
    assert BM25(shard_docs=50).cache_key(corpus) != BM25().cache_key(corpus)
    assert BM25(shard_docs=50).name == BM25().name  # same results, same run name
    assert not list(first.folder.parent.glob("*.partial"))


def test_sharded_rejects_nonoccurrence_methods():
    with pytest.raises(SpecError, match="shard_docs"):
        BM25(method="bm25l", shard_docs=10)


def test_sharded_empty_corpus_is_an_error():
    from nuggetbench.errors import InputError

    with pytest.raises(InputError, match="empty"):
        BM25(shard_docs=10).index(InMemoryCorpus([]))
    with pytest.raises(InputError, match="indexable"):
        BM25(shard_docs=10).index(InMemoryCorpus([Document("a", "the of", "")]))


_KILLED_BUILD = textwrap.dedent(
    """
    import sys, time
    from nuggetbench.data import Document, InMemoryCorpus
    from nuggetbench.retrieval.bm25.retriever import BM25

    class Slow(InMemoryCorpus):
        def iter_documents(self):
            for i, doc in enumerate(super().iter_documents()):
                if i >= 250:
                    time.sleep(0.05)  # the test kills the build here
                yield doc

    docs = [Document(f"d{i:04d}", f"w{i % 17}x w{i % 5}y common", "") for i in range(600)]
    BM25(shard_docs=50).index(Slow(docs))
    """
)


def test_killed_build_resumes_unfinished_chunks_only(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.Popen([sys.executable, "-c", _KILLED_BUILD], env=env)
    cache = Path(os.environ["NUGGETBENCH_HOME"]) / "cache" / "bm25"
    deadline = time.time() + 60
    done: list[Path] = []
    while time.time() < deadline and proc.poll() is None:
        done = sorted(cache.glob("*.partial/chunk-*.done"))
        if len(done) >= 5:
            break
        time.sleep(0.05)
    assert proc.poll() is None, "the build finished before it could be killed"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    work = done[0].parent
    finished = {p.name: p.stat().st_mtime_ns for p in work.glob("chunk-*.tokens.npy")}
    assert 5 <= len(finished) < 12
    docs = [Document(f"d{i:04d}", f"w{i % 17}x w{i % 5}y common", "") for i in range(600)]
    corpus = InMemoryCorpus(docs)
    before = {
        n: t for n, t in finished.items() if (work / n.replace(".tokens.npy", ".done")).exists()
    }
    # resume in this process, watching which chunks are written again
    index = BM25(shard_docs=50).index(corpus)
    assert not work.exists()  # removed once the artifact is in place
    meta = (index.folder / "meta.json").read_text()
    assert f'"resumed_chunks": {len(before)}' in meta
    single = BM25(cache=False, backend="numpy").index(corpus)
    queries = Queries({"a": "w3x common", "b": "w1y", "c": "w16x w4y"})
    assert _text(index.search(queries, 600), tmp_path) == _text(
        single.search(queries, 600), tmp_path
    )


@pytest.mark.parametrize("analyzer", ["de", "cjk"])
def test_sharded_with_an_analyzer_equals_single(tmp_path, analyzer):
    docs = [
        Document(f"d{i}", f"Häuser Hauses Haus {i % 7} 東京大学 {'漢字' * (i % 3)} Straße", "")
        for i in range(60)
    ]
    corpus = InMemoryCorpus(docs)
    queries = Queries({"a": "Haus Straße", "b": "東京", "c": "漢字 Häuser"})
    single = BM25(cache=False, backend="numpy", analyzer=analyzer).index(corpus)
    sharded = BM25(analyzer=analyzer, shard_docs=13).index(corpus)
    assert _text(sharded.search(queries, 100), tmp_path) == _text(
        single.search(queries, 100), tmp_path
    )


def test_resume_redoes_only_unfinished_chunks_and_shards(tmp_path):
    from nuggetbench.retrieval.bm25.sharded import build_sharded, finish

    corpus, queries = _zipf_corpus(6, 200)
    retriever = BM25(shard_docs=30)
    work = tmp_path / "work"
    first = build_sharded(retriever, corpus, work, shard_docs=30)
    assert first["n_shards"] == 7 and first["resumed_chunks"] == first["resumed_shards"] == 0
    # as if killed: chunk 6 never finished tokenizing, shards 2 and 6 never finished scoring
    (work / "chunk-00006.done").unlink()
    for i in (2, 6):
        (work / f"shard-{i:05d}.done").unlink()
    stamp = (work / "shard-00003.data.npy").stat().st_mtime_ns
    second = build_sharded(retriever, corpus, work, shard_docs=30)
    assert second["resumed_chunks"] == 6 and second["resumed_shards"] == 5
    assert (work / "shard-00003.data.npy").stat().st_mtime_ns == stamp  # not rewritten
    final = tmp_path / "index"
    final.mkdir()
    finish(work, final, second["n_shards"])
    index = ShardedBM25Index(retriever, final, from_cache=False)
    single = BM25(cache=False, backend="numpy").index(corpus)
    full = single.search(queries, len(corpus))
    assert _text(index.search(queries, 7), tmp_path) == _text(full.truncate(7), tmp_path)


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="needs /proc/self/maps")
def test_search_maps_one_shard_at_a_time(tmp_path, monkeypatch):
    """A search maps each shard while it searches it and unmaps it after: the index's pages the
    queries touched do not stay in the process's resident memory (the peak at 5M+ passages)."""
    import gc

    from nuggetbench.retrieval.bm25 import sharded as bm25_sharded

    corpus, queries = _zipf_corpus(6, 400)
    index = BM25(shard_docs=50, cache=True).index(corpus)
    folder = str(index.folder)

    def mapped() -> set[str]:
        gc.collect()
        with open("/proc/self/maps") as fh:
            return {line.split()[-1] for line in fh if folder in line and "shard-" in line}

    seen: list[set[str]] = []
    original = bm25_sharded.shard_candidates

    def spy(scorer, start, **kw):
        seen.append(mapped())
        return original(scorer, start, **kw)

    monkeypatch.setattr(bm25_sharded, "shard_candidates", spy)
    run = index.search(queries, 10)
    assert len(seen) == len(index.sizes) == 9  # 406 documents, 50 a shard
    # while searching shard i, only shard i's files are mapped
    for i, files in enumerate(seen):
        assert files == {
            f"{folder}/shard-{i:05d}.{part}.npy" for part in ("data", "indices", "indptr")
        }
    assert mapped() == set()  # and nothing after the search
    monkeypatch.undo()
    assert _text(run, tmp_path) == _text(index.search(queries, 10), tmp_path)
