"""The ``freshstack`` profile against the ``freshstack`` package's own evaluation code (0.0.6).

Thousands of small random cases with heavy ties (scores drawn from three values) are packed into
one evaluation on our side (query ids prefixed by the case) and scored case by case by
``freshstack.retrieval.evaluation.EvaluateRetrieval.evaluate``, whose rounding is switched off so
that the comparison is at 1e-12. Its three tie orders are what is tested: Coverage keeps the
run's input order, alpha-nDCG is pyndeval over the top ``max(k <= 20)`` in input order, Recall
goes through pytrec_eval (doc id descending).
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from nuggetbench.data import NuggetQrels, Run
from nuggetbench.measures import get_profile
from nuggetbench.measures import score as evaluate
from nuggetbench.measures.profiles import freshstack_profile

fs_eval = pytest.importorskip("freshstack.retrieval.evaluation")
fs_metrics = pytest.importorskip("freshstack.retrieval.metrics")
fs_util = pytest.importorskip("freshstack.retrieval.util")
fs_data = pytest.importorskip("freshstack.datasets.util")


def _no_round(value, ndigits=None):
    return value


@pytest.fixture
def unrounded(monkeypatch):
    """FreshStack's evaluation with its ``round`` calls turned into the identity."""
    monkeypatch.setattr(fs_metrics, "round", _no_round, raising=False)
    monkeypatch.setattr(fs_util, "round", _no_round, raising=False)


def _case(rng: random.Random, n_docs: int):
    """One random case: FreshStack's inputs (qrels_nuggets, run dict in file order)."""
    n_queries = rng.randint(1, 4)
    qrels_nuggets: dict[str, dict[str, int]] = {}
    for qi in range(n_queries):
        for ni in range(rng.randint(1, 4)):
            judged = rng.sample(range(n_docs), rng.randint(1, min(6, n_docs)))
            # every nugget has a judgment (FreshStack indexes qrels_nuggets[nugget] directly)
            qrels_nuggets[f"q{qi}_{ni}"] = {f"d{d}": int(rng.random() < 0.6) for d in judged}
    results: dict[str, dict[str, float]] = {}
    for qi in range(n_queries):
        if qi and rng.random() < 0.15:
            continue  # a query with nuggets missing from the run (FreshStack needs one present)
        docs = rng.sample(range(n_docs), rng.randint(1, n_docs))  # arbitrary file order
        results[f"q{qi}"] = {f"d{d}": float(rng.choice((0.5, 1.0, 2.0))) for d in docs}
    if rng.random() < 0.2:
        results["zz"] = {"d0": 1.0}  # a run-only query
    return qrels_nuggets, results


def _cases(seed: int, n: int, n_docs: int):
    rng = random.Random(seed)
    return [_case(rng, n_docs) for _ in range(n)]


def _ours(cases, measures, profile):
    """Our per-case means: every case in one evaluation, query ids prefixed by ``c<i>.``."""
    nuggets: dict[str, list[str]] = {}
    judgments: dict[str, dict[str, dict[str, int]]] = {}
    q, d, s = [], [], []
    for i, (qrels_nuggets, results) in enumerate(cases):
        for nugget, docs in qrels_nuggets.items():
            qid = f"c{i}.{nugget.split('_')[0]}"
            nuggets.setdefault(qid, []).append(f"c{i}.{nugget}")
            judgments.setdefault(qid, {})[f"c{i}.{nugget}"] = dict(docs)
        for qid, docs in results.items():
            for doc, score in docs.items():  # file order
                q.append(f"c{i}.{qid}")
                d.append(doc)
                s.append(score)
    qrels = NuggetQrels.from_dict(nuggets, judgments).document_qrels(mode="count")
    res = evaluate(qrels, Run(q, d, s), measures, profile=profile)
    case_of = np.array([int(x.split(".")[0][1:]) for x in res.query_ids])
    return {
        m: np.bincount(case_of, weights=res.per_query[m], minlength=len(cases))
        / np.bincount(case_of, minlength=len(cases))
        for m in measures
    }


def _theirs(qrels_nuggets, results, k_values):
    query_to_nuggets, qrels_query = fs_data.nuggets_to_query_qrels(qrels_nuggets)
    evaluator = fs_eval.EvaluateRetrieval(k_values=k_values)
    return evaluator.evaluate(qrels_nuggets, query_to_nuggets, qrels_query, results)


def _compare(cases, k_values, profile):
    div_k = [k for k in k_values if k <= 20]
    measures = (
        [f"alpha_nDCG@{k}" for k in div_k]
        + [f"Coverage@{k}" for k in k_values]
        + [f"R@{k}" for k in k_values]
    )
    ours = _ours(cases, measures, profile)
    compared = 0
    for i, (qrels_nuggets, results) in enumerate(cases):
        alpha, coverage, recall = _theirs(qrels_nuggets, results, k_values)
        expected = {f"alpha_nDCG@{k}": alpha[f"alpha-nDCG@{k}"] for k in div_k}
        expected |= {f"Coverage@{k}": coverage[f"Coverage@{k}"] for k in k_values}
        expected |= {f"R@{k}": recall[f"Recall@{k}"] for k in k_values}
        for m, value in expected.items():
            assert ours[m][i] == pytest.approx(value, abs=1e-12), (i, m, cases[i])
            compared += 1
    return compared


def test_freshstack_profile_equals_freshstack_package_small_pools(unrounded):
    """3000 cases, pools of 8 documents, k in (1, 2, 3, 5): FreshStack cuts alpha-nDCG at 5."""
    cases = _cases(seed=12, n=3000, n_docs=8)
    n = _compare(cases, [1, 2, 3, 5], freshstack_profile(cut=5))
    assert n == 3000 * 12


def test_freshstack_profile_equals_freshstack_package_published_k_values(unrounded):
    """600 cases with pools of 30 documents and FreshStack's published k_values (10, 20, 50):
    the registered ``freshstack`` profile (alpha-nDCG cut at 20)."""
    cases = _cases(seed=7, n=600, n_docs=30)
    n = _compare(cases, [10, 20, 50], "freshstack")
    assert n == 600 * 8


def test_the_three_orders_differ_on_one_run():
    """One query whose three documents tie: each family sees its own order."""
    nuggets = NuggetQrels.from_dict({"q": ["n1", "n2"]}, {"q": {"n1": {"b": 1}, "n2": {"a": 1}}})
    qrels = nuggets.document_qrels()
    run = Run(["q", "q", "q"], ["c", "b", "a"], [1.0, 1.0, 1.0])  # file order c, b, a
    res = evaluate(qrels, run, ["Coverage@1", "R@1", "alpha_nDCG@1"], profile="freshstack")
    assert res.per_query["Coverage@1"].tolist() == [0.0]  # input order: c first
    assert res.per_query["R@1"].tolist() == [0.0]  # doc id descending: c first
    assert res.per_query["alpha_nDCG@1"].tolist() == [1.0]  # doc id ascending: a first
    swapped = Run(["q", "q", "q"], ["b", "c", "a"], [1.0, 1.0, 1.0])
    res = evaluate(qrels, swapped, ["Coverage@1", "R@1"], profile="freshstack")
    assert res.per_query["Coverage@1"].tolist() == [0.5]  # b first now
    assert res.per_query["R@1"].tolist() == [0.0]  # unchanged: c first


def test_freshstack_profile_cut_is_checked():
    from nuggetbench.errors import InputError

    with pytest.raises(InputError, match="positive integer"):
        freshstack_profile(cut=0)
    assert freshstack_profile(cut=10).name == "freshstack -cut 10"
    assert get_profile("freshstack -cut 10") == freshstack_profile(cut=10)
