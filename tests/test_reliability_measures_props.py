"""Property-based tests of the measures against pytrec_eval and ir_measures (issue 13).

Generated cases: graded qrels with negative, zero and positive grades, tied and untied scores,
queries present on one side only, empty run queries, doc ids whose string order differs from their
numeric order, and huge grades (every grade multiplied by 2**60: nDCG is scale-free and the
binary measures see the same relevant set, so the values must equal pytrec_eval's on the
unscaled qrels; pytrec_eval itself keeps grades in a C int, so it cannot take them directly).

Examples per test are in ``EXAMPLES``; the report quotes ``--hypothesis-show-statistics``.
"""

from __future__ import annotations

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
pytrec_eval = pytest.importorskip("pytrec_eval")
from hypothesis import HealthCheck, event, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from nuggetbench.data import Qrels, Run  # noqa: E402
from nuggetbench.errors import IdMismatchError  # noqa: E402
from nuggetbench.measures import get_family, parse_measure  # noqa: E402
from nuggetbench.measures import score as evaluate  # noqa: E402
from nuggetbench.measures.params import SHARED  # noqa: E402

EXAMPLES = 300
PROPS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)

#: trec_eval names (pytrec_eval) -> our measure, each checked per query on every example
PYTREC_NAMES = [
    "ndcg",
    "ndcg_cut_3",
    "ndcg_cut_10",
    "map",
    "map_cut_5",
    "recip_rank",
    "P_1",
    "P_5",
    "recall_5",
    "recall_20",
    "success_1",
    "success_5",
    "Rprec",
    "bpref",
    "num_ret",
    "num_rel",
    "num_rel_ret",
]

DOCS = [f"d{i}" for i in range(12)] + ["9", "10", "010", "É", "doc 中"[-1]]
QUERIES = ["1", "2", "10", "q", "Q", "é"]
TIED = [0.0, 1.0, 0.5, -2.0]


@st.composite
def cases(draw, *, distinct_scores: bool = False):
    """``(qrels dict, run dict)`` for pytrec_eval."""
    qids = draw(st.lists(st.sampled_from(QUERIES), min_size=1, max_size=5, unique=True))
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for qid in qids:
        if draw(st.integers(0, 9)) > 0:
            judged = draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=8, unique=True))
            grades = draw(st.lists(st.integers(-2, 4), min_size=len(judged), max_size=len(judged)))
            if all(g < 0 for g in grades):  # pytrec_eval's ndcg_cut never ends on such a query
                grades[0] = 0
            qrels[qid] = dict(zip(judged, grades))
        if draw(st.integers(0, 9)) > 0:
            empty = draw(st.integers(0, 9)) == 0  # an empty run query now and then
            ranked = draw(
                st.lists(
                    st.sampled_from(DOCS), min_size=0 if empty else 1, max_size=12, unique=True
                )
            )
            if distinct_scores:
                values = draw(
                    st.lists(
                        st.integers(-1000, 1000),
                        min_size=len(ranked),
                        max_size=len(ranked),
                        unique=True,
                    )
                )
                run[qid] = {d: float(v) for d, v in zip(ranked, values)}
            else:
                score = st.one_of(
                    st.sampled_from(TIED), st.floats(-1e3, 1e3, allow_nan=False, width=32)
                )
                run[qid] = {d: float(draw(score)) for d in ranked}
    return qrels, run


def _pairs(rel: int, judged_only: bool):
    out = []
    for name in PYTREC_NAMES:
        measure = parse_measure(name)
        params = get_family(measure.family).params
        extra = {}
        if params.get("rel") is SHARED["rel"] and rel != 1:  # trec_eval's -l (not NumRet's)
            extra["rel"] = rel
        if params.get("judged_only") is SHARED["judged_only"] and judged_only:
            extra["judged_only"] = True
        out.append((name, measure(**extra) if extra else measure))
    return out


def _check_against_pytrec(qrels_dict, run_dict, rel, judged_only, *, scale: int = 1):
    evaluator = pytrec_eval.RelevanceEvaluator(
        qrels_dict, set(PYTREC_NAMES), relevance_level=rel, judged_docs_only_flag=judged_only
    )
    # an empty run query crashes pytrec_eval (judged-only): give it the queries with documents;
    # ours gets the empty ones too and must score them 0, as trec_eval -c scores a missing query
    ref = evaluator.evaluate({q: docs for q, docs in run_dict.items() if docs})
    ours_qrels = Qrels.from_dict(
        {q: {d: g * scale for d, g in docs.items()} for q, docs in qrels_dict.items()}
    )
    pairs = _pairs(rel, judged_only)
    judged = {q for q, docs in qrels_dict.items() if docs}
    if not judged & {q for q, docs in run_dict.items() if docs}:
        # nothing in common: our clear error, where pytrec_eval silently returns nothing
        with pytest.raises(IdMismatchError):
            evaluate(ours_qrels, Run.from_dict(run_dict), [m for _, m in pairs])
        event("no shared query: our IdMismatchError")
        return 0
    event("compared with pytrec_eval")
    res = evaluate(
        ours_qrels, Run.from_dict(run_dict), [m for _, m in pairs], profile="trec_eval -c"
    )
    assert set(res.query_ids) == judged
    for name, measure in pairs:
        values = res.values(str(measure))
        for qid in res.query_ids:
            if qid in ref:
                expected = ref[qid][name]
            elif name == "num_rel":
                continue  # a judged query missing from the run: pytrec_eval leaves it out
            else:
                expected = 0.0
            assert values[qid] == pytest.approx(expected, abs=1e-9), (name, qid, values[qid])
    return len(ref)


@PROPS
@given(cases(), st.sampled_from([1, 2]), st.booleans())
def test_measures_match_pytrec_eval(case, rel, judged_only):
    qrels_dict, run_dict = case
    _check_against_pytrec(qrels_dict, run_dict, rel, judged_only)


@PROPS
@given(cases(), st.booleans())
def test_huge_grades_give_the_values_of_their_scaled_down_qrels(case, judged_only):
    qrels_dict, run_dict = case
    # grades times 2**60 (up to 2**62): rel=1 keeps the same relevant set, nDCG is scale-free
    _check_against_pytrec(qrels_dict, run_dict, 1, judged_only, scale=2**60)


@PROPS
@given(cases(distinct_scores=True))
def test_measures_match_ir_measures(case):
    ir_measures = pytest.importorskip("ir_measures")
    qrels_dict, run_dict = case
    names = {"nDCG@10": "nDCG@10", "P@5": "P@5", "AP": "AP", "RR": "RR", "R@5": "R@5"}
    names.update({f"Judged@{k}": f"Judged@{k}" for k in (1, 5, 10)})
    judged = {q for q, docs in qrels_dict.items() if docs}
    shared = judged & {q for q, docs in run_dict.items() if docs}
    if not shared:
        event("no shared query")
        return
    event("compared with ir_measures")
    measures = [ir_measures.parse_measure(m) for m in names.values()]
    ref: dict[tuple[str, str], float] = {}
    nonempty = {q: docs for q, docs in run_dict.items() if docs}  # ir_measures divides by 0
    for metric in ir_measures.iter_calc(measures, qrels_dict, nonempty):
        ref[(str(metric.measure), metric.query_id)] = metric.value
    res = evaluate(Qrels.from_dict(qrels_dict), Run.from_dict(run_dict), list(names))
    for ours, theirs in names.items():
        values = res.values(ours)
        for qid in shared:
            assert values[qid] == pytest.approx(ref[(theirs, qid)], abs=1e-9), (ours, qid)


@PROPS
@given(cases())
def test_scores_are_bounded_and_means_are_averages(case):
    qrels_dict, run_dict = case
    judged = {q for q, docs in qrels_dict.items() if docs}
    if not judged & {q for q, docs in run_dict.items() if docs}:
        return
    names = ["nDCG@10", "AP", "P@5", "R@5", "RR", "Bpref", "Rprec", "Success@5"]
    res = evaluate(Qrels.from_dict(qrels_dict), Run.from_dict(run_dict), names)
    for name in names:
        values = np.array(list(res.values(name).values()))
        assert np.all((values >= 0) & (values <= 1 + 1e-12))
        assert res.mean(name) == pytest.approx(values.mean(), abs=1e-12)
