"""The diversity computations (measures/diversity_core.py) against hand computation, ndeval's own
output files and pyndeval."""

from __future__ import annotations

import csv
import math
import random

import numpy as np
import pytest

from nuggetbench.data import NuggetQrels, Run
from nuggetbench.data import read_trec_run as read_run
from nuggetbench.data.formats.diversity import read_ndeval_qrels
from nuggetbench.errors import InputError
from nuggetbench.measures.diversity.core import DiversityScorer, RankedEntries, SubtopicTable


def d(i: int) -> float:
    """DCG discount of 0-based rank i."""
    return 1.0 / math.log2(i + 2)


def _scorer(nuggets, run, qids, order="trec", depth=None, rel=1):
    return DiversityScorer(
        SubtopicTable.build(nuggets, qids, rel=rel),
        RankedEntries.from_run(run, qids, order=order, depth=depth),
    )


@pytest.fixture
def small():
    # subtopics A, B; d1 {A}, d2 {A, B}, d3 judged for nothing, d4 {B}
    nuggets = NuggetQrels.from_dict(
        {"q": ["A", "B"]},
        {"q": {"A": {"d1": 1, "d2": 1, "d3": 0}, "B": {"d2": 2, "d4": 1, "d3": 0}}},
    )
    run = Run.from_ranked_lists({"q": ["d1", "d3", "d2", "d4", "dX"]})
    return _scorer(nuggets, run, ["q"])


def test_hand_computed_small_case(small):
    gains = [1.0, 0.0, 0.5 + 1.0, 0.5, 0.0]  # alpha = 0.5: d2 repeats A (x0.5), first for B
    dcg5 = sum(g * d(i) for i, g in enumerate(gains))
    ideal_ideal5 = 2 * sum(0.5**i * d(i) for i in range(5))
    assert small.alpha_dcg(5)[0] == pytest.approx(dcg5 / ideal_ideal5, abs=1e-12)
    # greedy ideal: d2 (2), then d1 / d4 tie at 0.5 -> larger id d4, then d1 (0.5)
    ideal = [2.0, 0.5, 0.5]
    assert small.alpha_ndcg(5)[0] == pytest.approx(
        dcg5 / sum(g * d(i) for i, g in enumerate(ideal)), abs=1e-12
    )
    err5 = sum(g / (i + 1) for i, g in enumerate(gains))
    assert small.alpha_dcg(5, kind="err")[0] == pytest.approx(
        err5 / (2 * sum(0.5**i / (i + 1) for i in range(5)))
    )
    assert small.alpha_ndcg(5, kind="err")[0] == pytest.approx(err5 / (2 + 0.5 / 2 + 0.5 / 3))
    assert small.p_ia(5)[0] == pytest.approx(4 / (5 * 2))
    assert small.p_ia(2)[0] == pytest.approx(1 / (2 * 2))
    assert small.strecall(1)[0] == 0.5 and small.strecall(3)[0] == 1.0
    nrbp_sum = sum(g * 0.5**i for i, g in enumerate(gains))
    assert small.nrbp()[0] == pytest.approx((1 - 0.5 * 0.5) / 2 * nrbp_sum)
    assert small.nnrbp()[0] == pytest.approx(nrbp_sum / (2 + 0.5 * 0.5 + 0.5 * 0.25))
    # AP-IA: A relevant at ranks 1, 3 (2 relevant); B at ranks 3, 4 (2 relevant)
    assert small.ap_ia()[0] == pytest.approx(((1 / 1 + 2 / 3) / 2 + (1 / 3 + 2 / 4) / 2) / 2)
    # alpha = 0.8 changes the repeat discount to 0.2
    gains8 = [1.0, 0.0, 0.2 + 1.0, 0.2, 0.0]
    ideal8 = [2.0, 0.2, 0.2]
    assert small.alpha_ndcg(10, alpha=0.8)[0] == pytest.approx(
        sum(g * d(i) for i, g in enumerate(gains8)) / sum(g * d(i) for i, g in enumerate(ideal8))
    )


def test_any_depth_alpha_ndcg_at_50_and_100():
    # two subtopics; ab supports both, a1 only A, b1 only B; all placed beyond rank 20
    nuggets = NuggetQrels.from_dict(
        {"q": ["A", "B"]}, {"q": {"A": {"ab": 1, "a1": 1}, "B": {"ab": 1, "b1": 1}}}
    )
    ranked = [f"n{i:03d}" for i in range(130)]
    ranked[30], ranked[62], ranked[126] = "ab", "a1", "b1"  # discounts 1/5, 1/6, 1/7
    sc = _scorer(nuggets, Run.from_ranked_lists({"q": ranked}), ["q"])
    ideal = 2 * 1 + 0.5 / math.log2(3) + 0.5 / 2  # ab, then b1 (tie won by the larger id), a1
    assert sc.alpha_ndcg(20)[0] == 0.0
    assert sc.alpha_ndcg(50)[0] == pytest.approx((2 / 5) / ideal, abs=1e-12)
    assert sc.alpha_ndcg(100)[0] == pytest.approx((2 / 5 + 0.5 / 6) / ideal, abs=1e-12)
    assert sc.alpha_ndcg(200)[0] == pytest.approx((2 / 5 + 0.5 / 6 + 0.5 / 7) / ideal, abs=1e-12)
    assert (2 / 5 + 0.5 / 6) / ideal == pytest.approx(
        0.188400, abs=1e-6
    )  # the figure in the report
    assert sc.strecall(50)[0] == 1.0 and sc.p_ia(100)[0] == pytest.approx(3 / 200)


def test_rank_order_and_depth():
    nuggets = NuggetQrels.from_dict({"q": ["A"]}, {"q": {"A": {"good": 1}}})
    # scores put "good" first, the rank column puts it second
    run = Run(["q", "q"], ["good", "bad"], [2.0, 1.0], ranks=[2, 1])
    assert _scorer(nuggets, run, ["q"], order="trec").alpha_ndcg(1)[0] == 1.0
    assert _scorer(nuggets, run, ["q"], order="rank").alpha_ndcg(1)[0] == 0.0
    assert _scorer(nuggets, run, ["q"], order="rank", depth=1).alpha_ndcg(10)[0] == 0.0
    with pytest.raises(InputError, match="rank column"):
        _scorer(nuggets, Run(["q"], ["good"], [1.0]), ["q"], order="rank")
    with pytest.raises(InputError, match="rank 1 occurs twice"):
        _scorer(
            nuggets, Run(["q", "q"], ["good", "bad"], [2.0, 1.0], ranks=[1, 1]), ["q"], order="rank"
        )
    # tied scores: trec breaks ties by doc id descending, pyndeval/FreshStack ascending
    tied = Run(["q", "q"], ["bad", "good"], [1.0, 1.0])
    assert _scorer(nuggets, tied, ["q"], order="trec").alpha_ndcg(1)[0] == 1.0
    assert _scorer(nuggets, tied, ["q"], order="docid_asc").alpha_ndcg(1)[0] == 0.0


def test_queries_without_support_and_missing_queries_score_zero():
    nuggets = NuggetQrels.from_dict(
        {"a": ["x"], "b": ["y"]}, {"a": {"x": {"d": 1}}, "b": {"y": {"d": 0}}}
    )
    run = Run.from_ranked_lists({"a": ["d"], "b": ["d"], "zzz": ["d"]})
    sc = _scorer(nuggets, run, ["a", "b", "c"])
    for values in (
        sc.alpha_ndcg(5),
        sc.nnrbp(),
        sc.ap_ia(),
        sc.strecall(5),
        sc.alpha_dcg(5, kind="err"),
    ):
        assert values[1] == 0.0 and values[2] == 0.0 and not np.isnan(values).any()
    assert sc.alpha_ndcg(5)[0] == 1.0


COLUMNS = [
    f"{m}@{k}"
    for m in ("ERR-IA", "nERR-IA", "alpha-DCG", "alpha-nDCG", "P-IA", "strec")
    for k in (5, 10, 20)
] + ["NRBP", "nNRBP", "MAP-IA"]
PROFILES = {  # expected-file tag: (order, alpha, beta, depth, average over all judged topics)
    "default": ("rank", 0.5, 0.5, None, False),
    "c": ("rank", 0.5, 0.5, None, True),
    "traditional": ("trec", 0.5, 0.5, None, False),
    "alpha0.8_beta0.7_M10": ("rank", 0.8, 0.7, 10, False),
}


def _column(sc: DiversityScorer, name: str, alpha: float, beta: float) -> np.ndarray:
    if "@" in name:
        base, k = name.split("@")
        k = int(k)
        return {
            "ERR-IA": lambda: sc.alpha_dcg(k, alpha, kind="err"),
            "nERR-IA": lambda: sc.alpha_ndcg(k, alpha, kind="err"),
            "alpha-DCG": lambda: sc.alpha_dcg(k, alpha),
            "alpha-nDCG": lambda: sc.alpha_ndcg(k, alpha),
            "P-IA": lambda: sc.p_ia(k),
            "strec": lambda: sc.strecall(k),
        }[base]()
    return {
        "NRBP": lambda: sc.nrbp(alpha, beta),
        "nNRBP": lambda: sc.nnrbp(alpha, beta),
        "MAP-IA": sc.ap_ia,
    }[name]()


@pytest.mark.realdata
@pytest.mark.parametrize("profile", list(PROFILES))
@pytest.mark.parametrize("run_name", ["oracle", "partial", "random"])
def test_agreement_with_ndeval_output(shared_data, profile, run_name):
    base = shared_data / "ndeval"
    nuggets = read_ndeval_qrels(base / "qrels" / "qrels.web.251-300.ndeval.txt")
    run = read_run(base / "runs" / f"synthetic_{run_name}.web.251-300.run", keep_rank=True)
    with open(base / "expected" / f"ndeval.{profile}.{run_name}.251-300.csv") as fh:
        expected = {row["topic"]: row for row in csv.DictReader(fh)}
    order, alpha, beta, depth, complete = PROFILES[profile]
    judged = nuggets.query_ids
    qids = sorted(set(judged) | set(run.query_ids))
    sc = _scorer(nuggets, run, qids, order=order, depth=depth)
    averaged = judged if complete else [q for q in run.query_ids if q in set(judged)]
    pos = {q: i for i, q in enumerate(qids)}
    for column in COLUMNS:
        values = _column(sc, column, alpha, beta)
        got = {q: values[pos[q]] for q in run.query_ids}
        want = {q: float(expected[q][column]) for q in run.query_ids}
        assert got == pytest.approx(want, abs=1e-6), column
        mean = float(np.mean([values[pos[q]] for q in averaged]))
        assert mean == pytest.approx(float(expected["amean"][column]), abs=1e-6), column


@pytest.mark.realdata
def test_agreement_with_ndeval_tiny(shared_data):
    base = shared_data / "ndeval"
    nuggets = read_ndeval_qrels(base / "qrels" / "tiny_irmeasures.ndeval.qrels")
    run = read_run(base / "runs" / "tiny_irmeasures.run", keep_rank=True)
    with open(base / "expected" / "tiny_irmeasures.ndeval.csv") as fh:
        expected = {row["topic"]: row for row in csv.DictReader(fh)}
    sc = _scorer(nuggets, run, ["0", "1"], order="rank")
    for column in COLUMNS:
        assert _column(sc, column, 0.5, 0.5).tolist() == pytest.approx(
            [float(expected[q][column]) for q in ("0", "1")], abs=1e-6
        ), column


def _random_case(seed: int):
    rng = random.Random(seed)
    nug: dict[str, list[str]] = {}
    judg: dict[str, dict[str, dict[str, int]]] = {}
    runs: dict[str, dict[str, float]] = {}
    for q in range(12):
        qid = f"q{q}"
        subs = [f"{qid}_{j}" for j in range(rng.randint(1, 5))]
        nug[qid] = subs
        docs = [f"d{i}" for i in range(rng.randint(5, 40))]
        judg[qid] = {
            s: {
                doc: rng.choice([0, 0, 1, 2]) for doc in rng.sample(docs, rng.randint(1, len(docs)))
            }
            for s in subs
        }
        judg[qid][subs[0]][docs[0]] = 2  # every query has a supported subtopic (also at rel=2)
        pool = docs + [f"u{i}" for i in range(10)]
        runs[qid] = {
            doc: float(rng.randint(0, 6)) for doc in rng.sample(pool, rng.randint(1, len(pool)))
        }
    return nug, judg, runs


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("alpha,beta,rel", [(0.5, 0.5, 1), (0.8, 0.7, 1), (0.3, 0.9, 2)])
def test_agreement_with_pyndeval_random(seed, alpha, beta, rel):
    pyndeval = pytest.importorskip("pyndeval")
    nug, judg, runs = _random_case(seed)
    nuggets = NuggetQrels.from_dict(nug, judg)
    qids = sorted(nug)
    sc = _scorer(nuggets, Run.from_dict(runs), qids, order="docid_asc", rel=rel)
    qrels = [
        pyndeval.SubtopicQrel(q, s, doc, g)
        for q in qids
        for s in nug[q]
        for doc, g in judg[q][s].items()
    ]
    cut = [2, 3, 5, 10, 17, 20]
    measures = [
        f"{m}@{k}"
        for m in ("ERR-IA", "nERR-IA", "alpha-DCG", "alpha-nDCG", "P-IA", "strec")
        for k in cut
    ] + ["nERR-IA@1", "alpha-nDCG@1", "P-IA@1", "strec@1", "NRBP", "nNRBP", "MAP-IA"]
    ev = pyndeval.RelevanceEvaluator(qrels, measures, relevance_level=rel, alpha=alpha, beta=beta)
    ref = ev.evaluate([pyndeval.ScoredDoc(q, doc, s) for q in qids for doc, s in runs[q].items()])
    for m in measures:
        ours = _column(sc, m, alpha, beta)
        theirs = [ref[q][m] for q in qids]
        assert ours.tolist() == pytest.approx(theirs, abs=1e-9), m
