"""The ``beir`` profile against the ``beir`` package's own code (2.2.0): ``EvaluateRetrieval.evaluate``
and ``evaluate_custom``, on thousands of small random cases with heavy ties, self hits, run-only
and missing queries.

Many cases are packed into one evaluation on our side (query ids prefixed by the case; doc ids
too, so that ``Hole``'s judged pool stays per case) and compared case by case with BEIR's
unrounded values (its ``round`` calls switched off) at 1e-12; a smaller set is compared one case
at a time on the rounded means, which must be equal.
"""

from __future__ import annotations

import copy
import random

import numpy as np
import pytest

from nuggetbench.data import Qrels, Run
from nuggetbench.errors import IdMismatchError
from nuggetbench.measures import score as evaluate

beir_eval = pytest.importorskip("beir.retrieval.evaluation")
beir_custom = pytest.importorskip("beir.retrieval.custom_metrics")

K = [1, 2, 3, 5, 10]
EVALUATE = {"NDCG": "nDCG", "MAP": "AP", "Recall": "R", "P": "P"}
CUSTOM = {"mrr": ("MRR", "RR"), "r_cap": ("R_cap", "R_cap"), "hole": ("Hole", "Hole")}
CUSTOM["acc"] = ("Accuracy", "Success")


def _no_round(value, ndigits=None):
    return value


@pytest.fixture
def unrounded(monkeypatch):
    monkeypatch.setattr(beir_eval, "round", _no_round, raising=False)
    monkeypatch.setattr(beir_custom, "round", _no_round, raising=False)


def _case(rng: random.Random, custom: bool):
    """qrels and results dicts. *custom*: BEIR's custom metrics need every run query judged and
    every judged query with a relevant document (they raise otherwise)."""
    n_docs = 8
    qrels: dict[str, dict[str, int]] = {}
    for qi in range(rng.randint(1, 4)):
        judged = rng.sample(range(n_docs), rng.randint(1, 5))
        grades = {f"d{d}": rng.choice((0, 0, 1, 2)) for d in judged}
        if custom and not any(grades.values()):
            grades[f"d{judged[0]}"] = 1
        qrels[f"q{qi}"] = grades
    results: dict[str, dict[str, float]] = {}
    for q in qrels:
        if results and rng.random() < 0.2:
            continue  # a judged query missing from the run
        docs = [f"d{d}" for d in rng.sample(range(n_docs), rng.randint(1, n_docs))]
        if rng.random() < 0.3:
            docs.insert(rng.randint(0, len(docs)), q)  # a self hit (doc id == query id)
        results[q] = {d: rng.choice((0.5, 1.0, 2.0)) for d in docs}  # arbitrary input order
    if not custom and rng.random() < 0.3:
        results["zz"] = {"d1": 1.0}  # a run-only query
    if len(results) == 1 and rng.random() < 0.2:
        q = next(iter(results))
        results[q] = {q: 1.0}  # only a self hit: the query is left empty
    return qrels, results


def _theirs(qrels, results, custom: bool, ignore_identical_ids: bool = True):
    results = copy.deepcopy(results)
    ndcg, _map, recall, precision = beir_eval.EvaluateRetrieval.evaluate(
        qrels, results, K, ignore_identical_ids=ignore_identical_ids
    )
    out = {}
    for table in (ndcg, _map, recall, precision):
        for key, value in table.items():
            name, k = key.split("@")
            out[f"{EVALUATE[name]}@{k}"] = value
    if custom:  # on the results evaluate() has just stripped of self hits, as BEIR users do
        for metric, (name, ours) in CUSTOM.items():
            table = beir_eval.EvaluateRetrieval.evaluate_custom(qrels, results, K, metric)
            out |= {f"{ours}@{k}": table[f"{name}@{k}"] for k in K}
    return out


def _measures(custom: bool) -> list[str]:
    names = list(EVALUATE.values()) + ([ours for _, ours in CUSTOM.values()] if custom else [])
    return [f"{m}@{k}" for m in names for k in K]


def _ours_packed(cases, measures, profile):
    """Per-case means from one evaluation of every case (ids prefixed by ``c<i>.``)."""
    qq, qd, qg, rq, rd, rs = [], [], [], [], [], []
    for i, (qrels, results) in enumerate(cases):
        for q, docs in qrels.items():
            for d, g in docs.items():
                qq.append(f"c{i}.{q}")
                qd.append(f"c{i}.{d}")
                qg.append(g)
        for q, docs in results.items():
            for d, s in docs.items():
                rq.append(f"c{i}.{q}")
                rd.append(f"c{i}.{d}")
                rs.append(s)
    res = evaluate(Qrels(qq, qd, qg), Run(rq, rd, rs), measures, profile=profile)
    case_of = np.array([int(q.split(".")[0][1:]) for q in res.query_ids])
    n_eval = np.bincount(case_of, minlength=len(cases))
    n_judged = np.array([len(qrels) for qrels, _ in cases])
    custom = {"RR", "R_cap", "Hole", "Success"}
    out = {}
    for m in measures:
        sums = np.bincount(case_of, weights=res.per_query[m], minlength=len(cases))
        out[m] = sums / (n_judged if m.split("@")[0] in custom else n_eval)
    return out


@pytest.mark.parametrize("custom", [False, True], ids=["evaluate", "evaluate_custom"])
def test_beir_profile_equals_beir_package(unrounded, custom):
    rng = random.Random(2024 + custom)
    cases = [_case(rng, custom) for _ in range(2000)]
    measures = _measures(custom)
    ours = _ours_packed(cases, measures, "beir")
    compared = 0
    for i, (qrels, results) in enumerate(cases):
        for m, value in _theirs(qrels, results, custom).items():
            assert ours[m][i] == pytest.approx(value, abs=1e-12), (i, m, qrels, results)
            compared += 1
    assert compared == 2000 * len(measures)


def test_beir_profile_rounded_means_equal_beir_output():
    """One case at a time: the means as BEIR returns them (rounded to 5 decimals), equal."""
    rng = random.Random(5)
    compared = 0
    for _ in range(150):
        custom = rng.random() < 0.5
        qrels, results = _case(rng, custom)
        theirs = _theirs(qrels, results, custom)
        q = [(qid, d, g) for qid, docs in qrels.items() for d, g in docs.items()]
        r = [(qid, d, s) for qid, docs in results.items() for d, s in docs.items()]
        if all(set(docs) <= {qid} for qid, docs in results.items()):
            # every entry is a self hit: BEIR scores the emptied queries 0; we refuse a run
            # left with no entry (IdMismatchError says so) rather than report zeros
            with pytest.raises(IdMismatchError, match="no entries"):
                evaluate(Qrels(*zip(*q)), Run(*zip(*r)), list(theirs), profile="beir")
            continue
        ours = evaluate(Qrels(*zip(*q)), Run(*zip(*r)), list(theirs), profile="beir").means
        assert ours == theirs
        compared += 1
    assert compared > 120


def test_keep_identical_ids_variant(unrounded):
    rng = random.Random(9)
    cases = [_case(rng, False) for _ in range(300)]
    ours = _ours_packed(cases, _measures(False), "beir -keep-identical-ids")
    for i, (qrels, results) in enumerate(cases):
        for m, value in _theirs(qrels, results, False, ignore_identical_ids=False).items():
            assert ours[m][i] == pytest.approx(value, abs=1e-12), (i, m)


def test_beir_custom_measures_by_hand():
    qrels = Qrels(["a", "a", "a", "b"], ["x", "y", "z", "w"], [1, 0, 2, 1])
    run = Run(["a", "a", "a", "a", "b"], ["a", "n", "x", "z", "w"], [9.0, 2.0, 2.0, 1.0, 0.5])
    res = evaluate(qrels, run, ["R_cap@1", "R_cap@3", "Hole@2", "MRR@1"], profile="beir")
    # a: self hit dropped; input order n, x (tied), then z. b: w.
    assert res.values("R_cap@1") == {"a": 0.0, "b": 1.0}  # min(2, 1) = 1
    assert res.values("R_cap@3") == {"a": 1.0, "b": 1.0}  # x, z of min(2, 3)
    assert res.values("Hole@2") == {"a": 0.5, "b": 0.0}  # a: n unjudged of k=2; b: w judged
    assert res.values("MRR@1") == {"a": 0.0, "b": 1.0}
    # BEIR's evaluate() goes through pytrec_eval: doc id descending puts x before n
    p1 = evaluate(qrels, run, ["P@1"], profile="beir").values("P@1")
    assert p1 == {"a": 1.0, "b": 1.0}  # while MRR@1 above (input order) saw n first


def test_hole_departs_from_beir_on_run_only_queries():
    """BEIR's ``hole`` adds the holes of queries without judgments (here ``zz``, whose two
    documents are unjudged: 1.0) to its sum over ``len(qrels)``; we leave run-only queries out,
    as for every other measure (a documented departure)."""
    qrels = {"a": {"d1": 1, "d2": 0}}
    results = {"a": {"d1": 1.0, "d9": 0.5}, "zz": {"x1": 1.0, "x2": 0.5}}
    theirs = beir_eval.EvaluateRetrieval.evaluate_custom(
        copy.deepcopy(qrels), copy.deepcopy(results), [2], metric="hole"
    )["Hole@2"]
    q = Qrels(["a", "a"], ["d1", "d2"], [1, 0])
    r = Run(["a", "a", "zz", "zz"], ["d1", "d9", "x1", "x2"], [1.0, 0.5, 1.0, 0.5])
    ours = evaluate(q, r, ["Hole@2"], profile="beir").means["Hole@2"]
    assert theirs == pytest.approx(1.5) and ours == pytest.approx(0.5)
