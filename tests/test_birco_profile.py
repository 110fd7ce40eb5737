"""The ``birco`` profile against an independent re-implementation of BIRCO's rank2metric.py."""

from __future__ import annotations

import math

import numpy as np
import pytest

from nuggetbench.compare import birco_bootstrap, birco_summary
from nuggetbench.data import Qrels, Run
from nuggetbench.measures import get_profile
from nuggetbench.measures import score as evaluate
from nuggetbench.measures.profiles import BIRCO_MEASURES

# --- a plain re-implementation of rank2metric.py's definitions (dicts and loops) -------------


def _ref_recall(relevant, ranking, k):
    return len(set(relevant) & set(ranking[:k])) / len(relevant)


def _ref_ap(relevant, ranking):
    hits, total = 0, 0.0
    for i, d in enumerate(ranking):
        if d in relevant:
            hits += 1
            total += hits / (i + 1)
    return total / len(relevant)


def _ref_ndcg10(pool, ranking):
    ideal = sorted(pool.values(), reverse=True)
    dcg = sum(pool[ranking[i]] / math.log2(i + 2) for i in range(10))
    idcg = sum(ideal[i] / math.log2(i + 2) for i in range(10))
    return dcg / idcg


def _ref_mrr10(pool, ranking):
    top = max(pool.values())
    best = {d for d, g in pool.items() if g == top}
    for i, d in enumerate(ranking[:10]):
        if d in best:
            return 1 / (i + 1)
    return 0.0


def _ref_bootstrap(values):
    np.random.seed(42)  # exactly as BIRCO: the global legacy RandomState
    means = []
    for _ in range(1000):
        idx = list(np.random.choice(range(len(values)), len(values), replace=True))
        means.append(np.mean([values[i] for i in idx]))
    return np.mean(means) * 100, np.std(means) * 100


def _reference(qrel, ranks):
    lists = {m: [] for m in ("R@5", "R@10", "R@20", "R@100", "nDCG@10", "RRmax@10", "AP")}
    for qid, pool in qrel.items():  # qrel dict order, as upstream
        ranking = ranks[qid]
        lists["nDCG@10"].append(_ref_ndcg10(pool, ranking))
        lists["RRmax@10"].append(_ref_mrr10(pool, ranking))
        relevant = [d for d, g in pool.items() if g >= 1]
        if not relevant:
            continue
        for k in (5, 10, 20, 100):
            lists[f"R@{k}"].append(_ref_recall(relevant, ranking, k))
        lists["AP"].append(_ref_ap(relevant, ranking))
    return {m: _ref_bootstrap(v) for m, v in lists.items()}


def _random_case(seed, n_queries=30, pool=40, max_grade=2):
    rng = np.random.default_rng(seed)
    qrel, ranks = {}, {}
    for q in rng.permutation(n_queries):  # unsorted query order
        qid = f"q{q}"
        docs = [f"d{q}_{i}" for i in range(pool)]
        grades = rng.integers(0, max_grade + 1, size=pool) * (rng.random(pool) < 0.3)
        grades[rng.integers(pool)] = max(1, int(grades.max()))  # at least one relevant
        qrel[qid] = {d: int(g) for d, g in zip(docs, grades)}
        ranks[qid] = [docs[i] for i in rng.permutation(pool)]
    return qrel, ranks


def _ours(qrel, ranks, order):
    res = evaluate(
        Qrels.from_dict(qrel), Run.from_ranked_lists(ranks), list(BIRCO_MEASURES), profile="birco"
    )
    return res, birco_summary(res, order=order)


@pytest.mark.parametrize("seed", [0, 1])
def test_birco_profile_equals_reference_on_random_pools(seed):
    qrel, ranks = _random_case(seed)
    ref = _reference(qrel, ranks)
    _, ours = _ours(qrel, ranks, list(qrel))
    for m in BIRCO_MEASURES:
        assert ours[m][0] == pytest.approx(ref[m][0], rel=1e-9, abs=1e-9), m
        assert ours[m][1] == pytest.approx(ref[m][1], rel=1e-9, abs=1e-9), m


def test_query_order_matters_for_the_bootstrap_only():
    qrel, ranks = _random_case(3)
    res, in_order = _ours(qrel, ranks, list(qrel))
    sorted_order = birco_summary(res)
    assert any(
        in_order[m][1] != pytest.approx(sorted_order[m][1], rel=1e-12) for m in BIRCO_MEASURES
    )
    for m in BIRCO_MEASURES:
        assert res.means[m] == pytest.approx(np.mean(res.per_query[m]))


def test_rrmax_hand_case_and_query_selection():
    qrel = {
        "a": {"d1": 0, "d2": 1, "d3": 2, "d4": 2},  # max grade 2
        "b": {"e1": 1, "e2": 0},  # max grade 1
        "c": {"f1": 0, "f2": 0},  # no relevant document: not evaluated by the profile
    }
    ranks = {"a": ["d2", "d1", "d4", "d3"], "b": ["e2", "e1"], "c": ["f1", "f2"]}
    res = evaluate(
        Qrels.from_dict(qrel),
        Run.from_ranked_lists(ranks),
        ["RRmax@10", "RR@10", "RRmax@2", "AP"],
        profile="birco",
    )
    assert res.query_ids == ["a", "b"]
    vals = {m: res.values(m) for m in res.measures}
    assert vals["RRmax@10"] == {"a": pytest.approx(100 / 3), "b": pytest.approx(50.0)}
    assert vals["RR@10"] == {"a": pytest.approx(100.0), "b": pytest.approx(50.0)}
    assert vals["RRmax@2"]["a"] == 0.0
    # AP of a: relevant d2 (rank 1), d4 (rank 3), d3 (rank 4) -> (1 + 2/3 + 3/4) / 3
    assert vals["AP"]["a"] == pytest.approx(100 * (1 + 2 / 3 + 3 / 4) / 3)
    assert get_profile("birco").scale == 100.0


def test_birco_bootstrap_matches_global_state_procedure_and_leaves_it_alone():
    values = np.random.default_rng(0).random(37)
    np.random.seed(7)
    before = np.random.get_state()[1].copy()
    mean, std = birco_bootstrap(values)
    assert np.array_equal(np.random.get_state()[1], before)
    ref_mean, ref_std = _ref_bootstrap(list(values))
    assert mean * 100 == pytest.approx(ref_mean, rel=1e-12)
    assert std * 100 == pytest.approx(ref_std, rel=1e-12)


@pytest.mark.realdata
@pytest.mark.parametrize("name", ["arguana", "clinical-trial", "relic", "wtb"])
def test_published_rank_files_match_reference(shared_data, name, monkeypatch):
    from nuggetbench.data.formats.rankfile import check_pools, read_rank_file
    from nuggetbench.data.formats.safepickle import safe_load, to_builtin
    from nuggetbench.datasets import load_dataset

    folder = shared_data / "birco" / name
    if not folder.is_dir():
        pytest.skip(f"no BIRCO {name}")
    monkeypatch.setenv("NUGGETBENCH_DATA", str(shared_data))
    ds = load_dataset(f"birco/{name}")
    raw = to_builtin(safe_load(folder / "test_set.pickle"))
    for system in ("e5_rank", "Monot5"):
        path = folder / "ranks" / f"{system}.pickle"
        run = read_rank_file(path)
        assert check_pools(run, ds.doc_filter).ok
        res = evaluate(ds.qrels, run, list(BIRCO_MEASURES), profile=ds.default_profile)
        ours = birco_summary(res, order=list(ds.queries))
        ref = _reference(raw["qrel"], to_builtin(safe_load(path)))
        for m in BIRCO_MEASURES:
            assert ours[m][0] == pytest.approx(ref[m][0], abs=1e-9), (system, m)
            assert ours[m][1] == pytest.approx(ref[m][1], abs=1e-9), (system, m)


@pytest.mark.realdata
def test_birco_profile_agrees_with_pytrec_eval_where_documented(shared_data, monkeypatch):
    """nDCG@10, R@k and AP are trec_eval's on the pool (x100); only the query set and RRmax differ."""
    pytrec_eval = pytest.importorskip("pytrec_eval")
    from nuggetbench.data.formats.rankfile import read_rank_file
    from nuggetbench.datasets import load_dataset

    path = shared_data / "birco" / "clinical-trial" / "ranks" / "Monot5.pickle"
    if not path.exists():
        pytest.skip("no BIRCO clinical-trial")
    monkeypatch.setenv("NUGGETBENCH_DATA", str(shared_data))
    ds = load_dataset("birco/clinical-trial")
    run = read_rank_file(path)
    res = evaluate(ds.qrels, run, ["nDCG@10", "R@5", "R@20", "AP"], profile="birco")
    ev = pytrec_eval.RelevanceEvaluator(
        ds.qrels.to_dict(), {"ndcg_cut_10", "recall_5", "recall_20", "map"}
    )
    ref = ev.evaluate(run.to_dict())
    for ours, theirs in (
        ("nDCG@10", "ndcg_cut_10"),
        ("R@5", "recall_5"),
        ("R@20", "recall_20"),
        ("AP", "map"),
    ):
        values = res.values(ours)
        for qid in res.query_ids:
            assert values[qid] == pytest.approx(100 * ref[qid][theirs], abs=1e-9), (ours, qid)
