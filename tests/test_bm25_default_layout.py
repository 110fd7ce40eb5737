"""Plain ``bm25`` plans its layout (issue 28, item 3): a small corpus keeps the single index, a
large one is sharded, decided from the corpus's size and the available memory (injected here);
and the layout never changes the run: the single index cuts a tie at the k-th score by doc id
as the sharded one does, so both write the same TREC file byte for byte."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

from nuggetbench.data import Document, InMemoryCorpus, Queries
from nuggetbench.data.formats.trec import write_run
from nuggetbench.retrieval import parse_retriever
from nuggetbench.retrieval.bm25 import memory as bm25_memory
from nuggetbench.retrieval.bm25.index import BM25Index
from nuggetbench.retrieval.bm25.memory import (
    DEFAULT_BUDGET,
    GIB,
    MIB,
    CostModel,
    available_memory,
    default_budget,
    plan_default,
    plan_memory,
)
from nuggetbench.retrieval.bm25.retriever import BM25
from nuggetbench.retrieval.bm25.sharded import ShardedBM25Index
from nuggetbench.retrieval.bm25.topk import numba_available
from nuggetbench.retrieval.compose.caching import retriever_identity

#: a model without the interpreter's share, so that a tiny corpus needs shards of a few docs
TOY = CostModel(
    base=0,
    single_per_byte=100.0,
    sharded_per_doc=0.0,
    sharded_per_shard_byte=100.0,
    min_shard_docs=10,
    round_to=10,
)


def _corpus(seed: int = 0, n: int = 300) -> tuple[InMemoryCorpus, Queries]:
    """Zipfian documents with many equal scores (short documents over a small vocabulary), plus
    identical documents whose ids sort apart from their corpus order, so that most depths cut
    through a tie."""
    rng = np.random.default_rng(seed)
    words = [f"t{i}x" for i in range(120)]
    p = 1.0 / np.arange(1, len(words) + 1)
    p /= p.sum()
    docs = [
        Document(f"d{i:04d}", " ".join(rng.choice(words, size=rng.integers(1, 8), p=p)), "")
        for i in rng.permutation(n)
    ]
    docs += [Document(f"tie{j}", "t1x t2x t3x", "") for j in (3, 0, 4, 1, 2)]
    qs = {f"q{i}": " ".join(rng.choice(words, size=rng.integers(1, 4), p=p)) for i in range(30)}
    qs["tie"] = "t1x t2x t3x"
    return InMemoryCorpus(docs), Queries(qs)


def _text(run, tmp_path: Path) -> bytes:
    path = tmp_path / "run.trec"
    write_run(run, path)
    return path.read_bytes()


def _ties_at(run, k: int) -> int:
    """Queries whose full ranking has the k-th and (k+1)-th scores equal (a tie to cut)."""
    _, starts, _, column = run.arrays()
    count = 0
    for a, b in zip(starts[:-1], starts[1:]):
        scores = np.sort(column[a:b])[::-1]  # already ranked; sorted again to be sure
        count += bool(len(scores) > k and scores[k - 1] == scores[k])
    return count


def test_default_budget_is_2g_or_half_the_available_memory():
    assert DEFAULT_BUDGET == 2 * GIB
    assert default_budget(None) == 2 * GIB
    assert default_budget(64 * GIB) == 2 * GIB
    assert default_budget(3 * GIB) == 3 * GIB // 2
    assert default_budget(800 * MIB) == 400 * MIB
    free = available_memory()
    assert free is None or free > 0


def test_small_corpus_keeps_the_single_index(monkeypatch, caplog):
    monkeypatch.setattr(bm25_memory, "available_memory", lambda: 64 * GIB)
    corpus, _ = _corpus()
    retriever = BM25(backend="numpy", cache=False)
    with caplog.at_level(logging.INFO, logger="nuggetbench.retrieval.bm25.retriever"):
        index = retriever.index(corpus)
    plan = retriever.memory_plan(corpus)
    assert plan.chosen_by == "default" and plan.budget == 2 * GIB and plan.available == 64 * GIB
    assert plan.engine == "single" and isinstance(index, BM25Index)
    assert "default budget 2G (available memory 64G): the single index" in caplog.text


def test_large_corpus_is_sharded_as_memory_would(tmp_path, monkeypatch, caplog):
    """'Large' against the cost model: the toy model makes this corpus's single index cost four
    times the budget that half the (injected) available memory gives."""
    monkeypatch.setattr(bm25_memory, "COST_MODEL", TOY)
    corpus, queries = _corpus(1)
    size, _ = bm25_memory.corpus_bytes(corpus, len(corpus))
    budget = int(TOY.single(len(corpus), size) / 4)
    monkeypatch.setattr(bm25_memory, "available_memory", lambda: 2 * budget)
    plain = BM25()
    with caplog.at_level(logging.INFO, logger="nuggetbench.retrieval.bm25.retriever"):
        index = plain.index(corpus)
    plan = plain.memory_plan(corpus)
    assert plan.engine == "sharded" and plan.budget == budget and plan.estimate <= budget
    assert isinstance(index, ShardedBM25Index) and len(index.sizes) >= 4
    assert f"shard_docs={plan.shard_docs}" in caplog.text
    # the very layout and artifact of bm25:memory=<that budget> (one index, built once)
    assert BM25(memory=budget).memory_plan(corpus).shard_docs == plan.shard_docs
    assert BM25(memory=budget).cache_key(corpus) == plain.cache_key(corpus)
    assert BM25(memory=budget).index(corpus).from_cache
    # ...and the run of the single index, forced by a budget it fits
    single = BM25(memory="64G", cache=False).index(corpus)
    assert isinstance(single, BM25Index)
    full = single.search(queries, len(corpus))
    for k in (1, 3, 10, 40):
        assert _text(index.search(queries, k), tmp_path) == _text(
            single.search(queries, k), tmp_path
        )
    assert sum(_ties_at(full, k) for k in (1, 3, 10, 40)) >= 10  # the cut went through ties


def test_the_choice_follows_the_available_memory(monkeypatch):
    monkeypatch.setattr(bm25_memory, "COST_MODEL", TOY)
    corpus, _ = _corpus(2)
    size, _ = bm25_memory.corpus_bytes(corpus, len(corpus))
    single = TOY.single(len(corpus), size)
    assert plan_default(corpus, available=4 * single).engine == "single"
    assert plan_default(corpus, available=single).engine == "sharded"  # budget = half of it
    roomy = plan_default(corpus, available=single)
    assert roomy.shard_docs == plan_memory(corpus, single // 2).shard_docs


def test_default_never_refuses_a_corpus(monkeypatch, caplog):
    corpus, _ = _corpus(3)
    with caplog.at_level(logging.WARNING, logger="nuggetbench.retrieval.bm25.memory"):
        plan = plan_default(corpus, available=2 * MIB)  # the real model's imports exceed it
    assert plan.estimate > plan.budget == MIB
    size, _ = bm25_memory.corpus_bytes(corpus, len(corpus))
    cheapest_sharded = bm25_memory.COST_MODEL.sharded(
        len(corpus), size, bm25_memory.COST_MODEL.cheapest_shard(len(corpus), size)
    )
    assert plan.engine == "single" and plan.estimate == plan.single_estimate < cheapest_sharded
    assert "no index layout fits the default budget 1M" in caplog.text


def test_options_that_fix_the_layout_are_not_planned():
    assert BM25().plans_layout and BM25(memory="1G").plans_layout
    assert not BM25(shard_docs=100).plans_layout
    assert not BM25(method="bm25l").plans_layout and not BM25(method="bm25+").plans_layout
    corpus, _ = _corpus()
    assert BM25(method="bm25l").memory_plan(corpus) is None


@pytest.mark.parametrize(
    "backend",
    [
        "numpy",
        pytest.param(
            "numba", marks=pytest.mark.skipif(not numba_available(), reason="numba absent")
        ),
    ],
)
@pytest.mark.parametrize("seed", [0, 4])
def test_single_and_sharded_runs_are_byte_identical_through_ties(tmp_path, backend, seed):
    corpus, queries = _corpus(seed)
    single = BM25(backend=backend, cache=False).index(corpus)
    assert isinstance(single, BM25Index)
    full = single.search(queries, len(corpus))
    depths = (1, 2, 5, 20, 60)
    assert sum(_ties_at(full, k) for k in depths) >= 10
    for shard_docs in (17, 100):
        sharded = BM25(shard_docs=shard_docs, cache=False).index(corpus)
        for k in depths:
            expected = _text(full.truncate(k), tmp_path)  # trec_eval's order: doc id descending
            assert _text(single.search(queries, k), tmp_path) == expected
            assert _text(sharded.search(queries, k), tmp_path) == expected


def test_pools_are_cut_by_doc_id_too(tmp_path):
    corpus, queries = _corpus(5)
    pool = {"tie": [d for d in corpus if d.startswith("tie")] + ["d0001", "d0002"]}
    single = BM25(cache=False).index(corpus)
    sharded = BM25(shard_docs=50, cache=False).index(corpus)
    for k in (1, 3, 6):
        a = single.search(queries, k, doc_filter=pool)
        assert _text(a, tmp_path) == _text(sharded.search(queries, k, doc_filter=pool), tmp_path)
    top3 = single.search(Queries({"tie": "t1x t2x t3x"}), 3, doc_filter=pool)
    assert top3.doc_ids("tie") == ["tie4", "tie3", "tie2"]


def test_every_layout_shares_one_run_cache_identity():
    plain = retriever_identity(BM25())
    assert plain["ties"] == "score desc, doc id desc" and plain["name"] == "bm25"
    assert retriever_identity(BM25(memory="4G")) == plain
    assert retriever_identity(BM25(shard_docs=1000)) == plain
    assert retriever_identity(parse_retriever("bm25:memory=2G")) == plain
    german = retriever_identity(BM25(memory="4G").for_language("de"))
    assert german["params"]["analyzer"] == "de" and german != plain
