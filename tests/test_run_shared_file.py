"""``run_experiment`` copies the run cache's TREC file to ``runs/<spec>.trec`` when it holds
exactly the run with the same tag, and writes the file otherwise; either way the bytes are those
``write_run`` gives."""

from __future__ import annotations

import json
import os

import pytest

from nuggetbench import _atomic, experiment
from nuggetbench.data import read_trec_run as read_run
from nuggetbench.data import write_run
from nuggetbench.experiment import run_experiment, slug
from report_fixtures import beir_folder


@pytest.fixture
def dataset(tmp_path):
    return str(beir_folder(tmp_path / "data", n_queries=10, n_docs=60))


@pytest.fixture
def copies(monkeypatch):
    calls = []
    original = _atomic.copy_file

    def spy(source, path):
        calls.append(source)
        return original(source, path)

    monkeypatch.setattr(experiment, "copy_file", spy)
    return calls


def _expected(exp, label: str, tmp_path) -> bytes:
    """What write_run writes for the system's run (the bytes before the copy existed)."""
    run = exp.systems[label].run
    return write_run(run, tmp_path / "expected.trec", tag=slug(label)).read_bytes()


def _run_cache_files():
    from nuggetbench import home

    return sorted((home.home() / "cache" / "runs").glob("*/k*.trec"))


def test_cold_and_warm_runs_copy_the_cached_file(dataset, tmp_path, copies):
    cold = run_experiment(dataset, ["bm25"], k=20, outdir=tmp_path / "cold")
    assert len(copies) == 1 and copies[0] in _run_cache_files()
    want = _expected(cold, "bm25", tmp_path)
    assert (tmp_path / "cold" / "runs" / "bm25.trec").read_bytes() == want
    warm = run_experiment(dataset, ["bm25"], k=20, outdir=tmp_path / "warm")
    assert len(copies) == 2 and warm.systems["bm25"].run.metadata["cached"] is True
    assert (tmp_path / "warm" / "runs" / "bm25.trec").read_bytes() == want
    assert warm.systems["bm25"].results.means == cold.systems["bm25"].results.means
    uncached = run_experiment(dataset, ["bm25"], k=20, outdir=tmp_path / "u", cache_runs=False)
    assert len(copies) == 2  # no cache: written
    assert (tmp_path / "u" / "runs" / "bm25.trec").read_bytes() == want
    assert uncached.systems["bm25"].results.means == cold.systems["bm25"].results.means


@pytest.mark.parametrize(
    "spec, label, copied",
    [
        ("bm25:k1=0.9,b=0.4", "bm25:k1=0.9,b=0.4", True),  # the cache's tag is this slug too
        ("bm25:b=0.4,k1=0.9", "bm25:b=0.4,k1=0.9", False),  # canonical name bm25:k1=0.9,b=0.4
        ("bm25:k1=0.9,b=0.4,name=mine", "mine", False),
    ],
)
def test_a_file_with_another_tag_is_written(spec, label, copied, dataset, tmp_path, copies):
    for folder in ("a", "b"):
        exp = run_experiment(dataset, [spec], k=20, outdir=tmp_path / folder)
        path = tmp_path / folder / "runs" / f"{slug(label)}.trec"
        assert path.read_bytes() == _expected(exp, label, tmp_path)
        assert read_run(path) == exp.systems[label].run
    assert len(copies) == (2 if copied else 0)


def test_a_run_cut_from_a_deeper_one_is_written(dataset, tmp_path, copies):
    run_experiment(dataset, ["bm25"], k=30, outdir=tmp_path / "deep")
    shallow = run_experiment(dataset, ["bm25"], k=3, outdir=tmp_path / "shallow")
    assert len(copies) == 1  # only the first
    path = tmp_path / "shallow" / "runs" / "bm25.trec"
    assert path.read_bytes() == _expected(shallow, "bm25", tmp_path)
    assert max(read_run(path).lengths()) == 3


def test_an_edited_cache_file_is_neither_copied_nor_trusted(dataset, tmp_path, copies):
    cold = run_experiment(dataset, ["bm25"], k=20, outdir=tmp_path / "cold")
    (cached,) = _run_cache_files()
    lines = cached.read_text().splitlines(keepends=True)
    q, _, d, rank, score, tag = lines[0].split()
    lines[0] = f"{q} Q0 {d} {rank} {float(score) + 100} {tag}\n"  # another score, another run
    cached.write_text("".join(lines))
    os.utime(cached, ns=(1, 1))
    warm = run_experiment(dataset, ["bm25"], k=20, outdir=tmp_path / "warm")
    assert len(copies) == 1  # the cold run only
    assert warm.systems["bm25"].run == read_run(cached)  # the text is the cache's truth
    assert warm.systems["bm25"].run != cold.systems["bm25"].run
    meta = json.loads(cached.with_suffix(".json").read_text())
    assert meta["trec_stat"] != [cached.stat().st_size, cached.stat().st_mtime_ns]


def test_a_post_processed_run_is_written(tmp_path, copies):
    from dataclasses import replace

    from nuggetbench.data import Qrels, Queries
    from nuggetbench.datasets import load_dataset

    folder = beir_folder(tmp_path / "data", n_queries=4, n_docs=40)
    ds = load_dataset(str(folder))
    texts = {d: ds.corpus[d].full_text for d in ("d1", "d2", "d3")}
    qrels = Qrels(["d1", "d2", "d3"], ["d5", "d6", "d7"], [1, 1, 1])
    ds = replace(ds, queries=Queries(texts), qrels=qrels, remove_self_hits=True)  # queries = docs
    exp = run_experiment(ds, ["bm25"], k=10, outdir=tmp_path / "out")
    run = read_run(tmp_path / "out" / "runs" / "bm25.trec")
    assert copies == []
    assert run.query_ids == ["d1", "d2", "d3"]
    assert all(q not in run.doc_ids(q) for q in run.query_ids)  # the self hits are gone
    assert exp.systems["bm25"].run.metadata["self_hits_removed"] == 3
