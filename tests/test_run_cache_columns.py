"""The run cache's column file (``k<depth>.npz``): a warm start reads it instead of parsing the
TREC file, and gets exactly the run the TREC file holds."""

from __future__ import annotations

import json

import numpy as np
import pytest

from nuggetbench.data import Run
from nuggetbench.data import read_trec_run as read_run
from nuggetbench.retrieval.compose import caching
from nuggetbench.retrieval.compose.caching import RunCache
from nuggetbench.retrieval.models.topk import with_empty_queries as _with_empty_queries


def _random_run(seed: int) -> Run:
    rng = np.random.default_rng(seed)
    pool = [f"d{j}" for j in range(50)] + ["dé", "日本", "d\U0010ff85", "x-1", "10", "9"]
    data = {}
    for i in range(int(rng.integers(1, 25))):
        docs = rng.choice(len(pool), int(rng.integers(1, 30)), replace=False)
        data[f"q{i}" if i % 4 else f"Q\U0010ffa0{i}"] = {
            pool[j]: float(rng.choice([1.0, 2.5, 0.1, 1 / 3, -2.0, rng.normal() * 10]))
            for j in docs
        }
    run = Run.from_dict(data, name="r", metadata={"k": 30})
    return _with_empty_queries(run, ["q-empty"]) if seed % 2 else run


@pytest.fixture
def reads(monkeypatch):
    calls = []

    def spy(path, *args, **kwargs):
        calls.append(path)
        return read_run(path, *args, **kwargs)

    monkeypatch.setattr(caching, "read_run", spy)
    return calls


@pytest.mark.parametrize("seed", range(6))
def test_columns_give_the_run_the_trec_file_holds(seed, reads):
    run = _random_run(seed)
    cache = RunCache({"seed": seed})
    cache.save(run, 30)
    assert (cache.path / "k30.npz").exists()
    meta = json.loads((cache.path / "k30.json").read_text())
    assert meta["columns"] == caching.COLUMNS_FORMAT
    back = cache.load(30)
    assert reads == []  # served from the columns, the text was not parsed
    from_text = read_run(cache.path / "k30.trec")
    assert back == run
    assert back.query_ids == run.query_ids  # empty queries kept
    assert back.filter_queries(from_text.query_ids) == from_text
    for q in run.query_ids:
        assert back[q] == run[q]
        assert [d.encode("utf-8") for d, _ in back[q]] == [d.encode("utf-8") for d, _ in run[q]]
    assert back.name == "r" and back.metadata["cached_depth"] == 30
    assert cache.load(5) == run.truncate(5)


@pytest.mark.parametrize(
    "damage",
    ["missing", "truncated", "garbage", "wrong lengths", "bad code", "bad starts", "format"],
)
def test_unreadable_columns_fall_back_to_the_trec_file(damage, reads, caplog):
    run = _random_run(3)
    cache = RunCache({"damage": damage})
    cache.save(run, 30)
    npz = cache.path / "k30.npz"
    if damage == "missing":
        npz.unlink()
    elif damage == "truncated":
        npz.write_bytes(npz.read_bytes()[:200])
    elif damage == "garbage":
        npz.write_bytes(b"not a zip file at all")
    else:
        with np.load(npz) as z:
            arrays = dict(z)
        if damage == "wrong lengths":
            arrays["scores"] = arrays["scores"][:-1]
        elif damage == "bad code":
            arrays["codes"][3] = int(arrays["n_docs"]) + 2
        elif damage == "bad starts":
            arrays["starts"][1:] = arrays["starts"][1:][::-1]
        else:
            arrays["format"] = np.int64(99)
        with open(npz, "wb") as fh:
            np.savez(fh, **arrays)
    back = cache.load(30)
    assert reads == [cache.path / "k30.trec"]
    assert back == run and back.query_ids == run.query_ids


def test_older_caches_without_columns_are_read_from_the_text(reads):
    run = _random_run(0)
    cache = RunCache({"old": 1})
    cache.save(run, 30)
    meta_path = cache.path / "k30.json"
    meta = json.loads(meta_path.read_text())
    del meta["columns"]
    meta_path.write_text(json.dumps(meta))
    assert cache.load(30) == run and len(reads) == 1
