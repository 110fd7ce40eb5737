"""Reading a run on two cores: the doc ids factorised in a thread while the score order is
computed (:func:`nuggetbench.data.ranking.score_order`), and the repeated-pair check beside the
ranking. The result and the errors are those of the one-thread path."""

from __future__ import annotations

import numpy as np
import pytest

from nuggetbench.data import ranking
from nuggetbench.data import run as run_module
from nuggetbench.errors import DuplicateError


def _columns(rng: np.random.Generator, case: int):
    n_queries = int(rng.integers(1, 12))
    depth = int(rng.integers(1, 30))
    q = np.repeat(np.arange(n_queries), depth)
    s = rng.integers(0, 4 if case % 2 else 1000, len(q)).astype(np.float64) / 2
    docs = np.array([f"d{i}" for i in range(60)], dtype=object)
    d = np.concatenate([rng.choice(60, depth, replace=False) for _ in range(n_queries)])
    if case % 3 == 0:  # ranked already, queries in order
        order = np.lexsort((-s, q))
        q, s, d = q[order], s[order], d[order]
    elif case % 3 == 1:  # queries contiguous but not in order
        blocks = rng.permutation(n_queries)
        order = np.concatenate([np.flatnonzero(q == b) for b in blocks])
        q, s, d = q[order], s[order], d[order]
    else:  # entries in any order
        order = rng.permutation(len(q))
        q, s, d = q[order], s[order], d[order]
    return q, s, docs, d


@pytest.mark.parametrize("seed", range(4))
def test_score_order_handed_to_rank_codes_ranks_as_rank_codes(seed):
    """score_order groups by query and orders by score (ties in any order); rank_codes given it
    returns exactly the permutation it computes alone, and that of rank_order."""
    rng = np.random.default_rng(seed)
    for case in range(60):
        q, s, docs, d = _columns(rng, case)
        order = ranking.score_order(q, s)
        seen = np.arange(len(q)) if order is None else order
        assert sorted(seen.tolist()) == list(range(len(q)))
        qo, so = q[seen], s[seen]
        assert bool((qo[1:] >= qo[:-1]).all())
        assert not ((qo[1:] == qo[:-1]) & (so[1:] > so[:-1])).any()
        for tie_break in ("docid_desc", "docid_asc"):
            alone = ranking.rank_codes(q, s, docs, d, tie_break=tie_break)
            given = ranking.rank_codes(q, s, docs, d, tie_break=tie_break, order=order)
            want = ranking.rank_order(q, s, docs[d], tie_break=tie_break)
            alone = np.arange(len(q)) if alone is None else alone
            given = np.arange(len(q)) if given is None else given
            assert given.tolist() == alone.tolist() == want.tolist()


def _write_run(path, rng: np.random.Generator, *, repeat: bool = False) -> None:
    lines = []
    for q in rng.permutation(25):
        for d in rng.choice(300, int(rng.integers(1, 40)), replace=False):
            lines.append(f"q{q} Q0 doc{d} {int(rng.integers(1, 9))} {rng.integers(0, 6) / 4} t\n")
    if repeat:
        first = lines[len(lines) // 3].split()
        lines.insert(len(lines) // 2, f"{first[0]} Q0 {first[2]} 3 0.5 t\n")
    path.write_text("".join(lines))


@pytest.mark.parametrize("cpus", [1, 2])
@pytest.mark.parametrize("seed", range(3))
def test_fast_reader_with_ids_in_a_thread_reads_what_the_careful_reader_reads(
    seed, cpus, tmp_path, monkeypatch
):
    pytest.importorskip("pyarrow")
    from nuggetbench.data import lookup as _lookup
    from nuggetbench.data import read_trec_run as read_run
    from nuggetbench.data.formats import trec
    from nuggetbench.data.formats import trec_arrow as _arrow_trec

    rng = np.random.default_rng(seed)
    path = tmp_path / "run.txt"
    _write_run(path, rng, repeat=seed == 2)
    with monkeypatch.context() as m:
        m.setattr(trec, "_read_run_arrow", lambda *a, **k: None)
        careful = read_run(path, keep_rank=True, duplicates="first")
    monkeypatch.setattr(_arrow_trec, "MIN_BYTES", 1)
    for module in (_arrow_trec, _lookup, run_module):
        monkeypatch.setattr(module, "usable_cpus", lambda: cpus)
    monkeypatch.setattr(_lookup, "SPLIT_MIN", 16)  # the doc ids split between two threads too
    monkeypatch.setattr(_arrow_trec, "BACKGROUND_MIN", 1)
    monkeypatch.setattr(run_module, "CHECK_BESIDE_MIN", 1)
    waited = []
    original = _arrow_trec.read_columns

    def spy(*args, **kwargs):
        out = original(*args, **kwargs)
        waited.append(callable(out[2]))
        return out

    monkeypatch.setattr(_arrow_trec, "read_columns", spy)
    fast = read_run(path, keep_rank=True, duplicates="first")
    assert waited == [cpus == 2]  # a thread only with two CPUs
    assert fast == careful
    assert fast.input_ranks.tolist() == careful.input_ranks.tolist()
    assert fast.input_order.tolist() == careful.input_order.tolist()


@pytest.mark.parametrize("seed", range(3))
def test_repeated_pair_found_beside_the_ranking_is_the_same_pair(seed, monkeypatch):
    """The check in a thread, on the entries in input order, raises the DuplicateError the check
    after the ranking raises (the pair of the smallest codes, whatever the order)."""
    rng = np.random.default_rng(seed)
    q = np.repeat(np.array([f"q{i}" for i in range(8)], dtype=object), 12)
    d = np.array([f"d{int(x)}" for x in rng.integers(0, 15, len(q))], dtype=object)
    s = rng.permutation(len(q)).astype(float)
    errors = []
    for beside in (False, True):
        with monkeypatch.context() as m:
            m.setattr(run_module, "CHECK_BESIDE_MIN", 1 if beside else 10**9)
            m.setattr(run_module, "usable_cpus", lambda: 2)
            with pytest.raises(DuplicateError) as info:
                run_module.Run(q, d, s, source="r.txt")
            errors.append((str(info.value), info.value.key))
    assert errors[0] == errors[1]
