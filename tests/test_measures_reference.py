"""Agreement with the reference tools.

* trec_eval 9.0.8's own reference outputs (``../shared/data/trec_eval``; skipped when absent):
  every measure we implement that appears there, per query and ``all``, within the printed
  precision (4 decimals), and pytrec_eval on the same files to 1e-9.
* pytrec_eval (pytrec-eval-terrier) on thousands of random queries: graded qrels with 0 and
  negative grades, tied scores, queries missing on either side, unjudged documents, thresholds 1
  and 2, judged-only.
* ir_measures' ``Judged@k``.
"""

from __future__ import annotations

import collections
from pathlib import Path

import numpy as np
import pytest

from nuggetbench.data import Qrels, Run
from nuggetbench.data import read_trec_qrels as read_qrels
from nuggetbench.data import read_trec_run as read_run
from nuggetbench.errors import NuggetbenchError
from nuggetbench.measures import get_family, parse_measure
from nuggetbench.measures import score as evaluate
from nuggetbench.measures.params import SHARED

pytrec_eval = pytest.importorskip("pytrec_eval")

PRINTED_TOL = 5e-5 + 1e-9


def _trec_eval_dir(shared_data: Path) -> Path:
    folder = shared_data / "trec_eval"
    if not folder.is_dir():
        pytest.skip("../shared/data/trec_eval is absent")
    return folder


def _read_output(path: Path) -> dict[str, dict[str, str]]:
    """trec_eval ``-q`` output: ``{measure: {query or 'all': printed value}}``."""
    out: dict[str, dict[str, str]] = collections.defaultdict(dict)
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) == 3:
            out[parts[0]][parts[1]] = parts[2]
    return out


def _ours(name: str, rel: int):
    """Our measure for a trec_eval output name (``None`` when we do not implement it)."""
    try:
        measure = parse_measure(name)
    except NuggetbenchError:
        return None
    params = get_family(measure.family).params
    # trec_eval's -l reaches the families whose rel is the shared one (NumRet(rel=) is
    # ir_measures' filter, not -l: num_ret counts every document under -l 2)
    shared = params.get("rel") is SHARED["rel"]
    return measure(rel=rel) if rel != 1 and shared else measure


def _trunc_run(path: Path) -> Run:
    """results.trunc has junk after the 6th column (trec_eval skips it): keep the first 6."""
    q, d, s = [], [], []
    for line in path.read_text().splitlines():
        parts = line.split()
        if parts and not parts[0].startswith("#"):
            q.append(parts[0])
            d.append(parts[2])
            s.append(float(parts[4]))
    return Run(q, d, s, name=parts[5])


CASES = [
    # (qrels, run, reference output, profile, -l, trec_eval names run with non-default params)
    ("qrels.test", "results.test", "out.test", "trec_eval", 1, ()),
    ("qrels.test", "results.test", "out.test.aq", "trec_eval", 1, ()),
    ("qrels.test", "results.test", "out.test.meas_params", "trec_eval", 1, ("ndcg",)),
    ("qrels.test", "results.trunc", "out.test.aqc", "trec_eval -c", 1, ()),
    ("qrels.rel_level", "results.test", "out.test.aql", "trec_eval", 2, ()),
    *[
        (
            f"tiny_irmeasures/qrels.{q}.txt",
            "tiny_irmeasures/run.txt",
            f"tiny_irmeasures/out.qrels.{q}.txt.l{lvl}.all_trec.q.txt",
            "trec_eval",
            lvl,
            (),
        )
        for q in ("graded", "infap_negative")
        for lvl in (1, 2)
    ],
]


@pytest.mark.realdata
@pytest.mark.parametrize(("qrels_name", "run_name", "out_name", "profile", "rel", "skip"), CASES)
def test_trec_eval_reference_outputs(
    shared_data, qrels_name, run_name, out_name, profile, rel, skip
):
    folder = _trec_eval_dir(shared_data)
    ref = _read_output(folder / out_name)
    pairs = [(name, _ours(name, rel)) for name in ref if name not in skip]
    pairs = [(n, m) for n, m in pairs if m is not None]
    assert len(pairs) >= (8 if out_name.endswith("meas_params") or out_name == "out.test" else 40)
    qrels = read_qrels(folder / qrels_name)
    run = (
        _trunc_run(folder / run_name) if run_name.endswith("trunc") else read_run(folder / run_name)
    )
    res = evaluate(qrels, run, [m for _, m in pairs], profile=profile)
    if "num_q" in ref:
        assert len(res.query_ids) == int(ref["num_q"]["all"])
    compared = 0
    for name, measure in pairs:
        values = res.values(str(measure))
        for qid, printed in ref[name].items():
            ours = res.mean(str(measure)) if qid == "all" else values[qid]
            assert abs(float(printed) - ours) <= PRINTED_TOL, (out_name, name, qid, printed, ours)
            compared += 1
    assert compared >= len(pairs)


PYTREC_MEASURES = {
    "ndcg",
    "ndcg_cut.3,10,23",
    "map",
    "map_cut.5,100",
    "recip_rank",
    "P.1,5,7",
    "recall.5,20",
    "success.1,5",
    "Rprec",
    "bpref",
    "num_ret",
    "num_rel",
    "num_rel_ret",
}


def _pytrec_pairs(rel: int, judged_only: bool) -> list[tuple[str, object]]:
    names = [
        "ndcg",
        "ndcg_cut_3",
        "ndcg_cut_10",
        "ndcg_cut_23",
        "map",
        "map_cut_5",
        "map_cut_100",
        "recip_rank",
        "P_1",
        "P_5",
        "P_7",
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
    pairs = []
    for name in names:
        measure = parse_measure(name)
        params = get_family(measure.family).params
        extra = {}
        if params.get("rel") is SHARED["rel"] and rel != 1:  # trec_eval's -l (not NumRet's)
            extra["rel"] = rel
        if params.get("judged_only") is SHARED["judged_only"] and judged_only:
            extra["judged_only"] = True
        pairs.append((name, measure(**extra) if extra else measure))
    return pairs


def _compare_with_pytrec(qrels_dict, run_dict, rel, judged_only, qrels=None, run=None):
    evaluator = pytrec_eval.RelevanceEvaluator(
        qrels_dict, PYTREC_MEASURES, relevance_level=rel, judged_docs_only_flag=judged_only
    )
    ref = evaluator.evaluate(run_dict)
    pairs = _pytrec_pairs(rel, judged_only)
    qrels = qrels if qrels is not None else Qrels.from_dict(qrels_dict)
    run = run if run is not None else Run.from_dict(run_dict)
    res = evaluate(qrels, run, [m for _, m in pairs], profile="trec_eval")
    assert sorted(res.query_ids) == sorted(ref)  # both average over the queries in both
    for name, measure in pairs:
        values = res.per_query[str(measure)]
        expected = np.array([ref[q][name] for q in res.query_ids])
        bad = np.flatnonzero(np.abs(values - expected) > 1e-9)
        assert not len(bad), (
            name,
            str(measure),
            [res.query_ids[i] for i in bad[:5]],
            values[bad[:5]],
            expected[bad[:5]],
        )
    return res, ref


@pytest.mark.realdata
@pytest.mark.parametrize(
    ("qrels_name", "run_name", "rel"),
    [
        ("qrels.test", "results.test", 1),
        ("qrels.rel_level", "results.test", 2),
        ("tiny_irmeasures/qrels.graded.txt", "tiny_irmeasures/run.txt", 2),
    ],
)
def test_pytrec_eval_on_trec_eval_files(shared_data, qrels_name, run_name, rel):
    folder = _trec_eval_dir(shared_data)
    with open(folder / qrels_name) as fh:
        qrels_dict = pytrec_eval.parse_qrel(fh)
    with open(folder / run_name) as fh:
        run_dict = pytrec_eval.parse_run(fh)
    for judged_only in (False, True):
        _compare_with_pytrec(
            qrels_dict,
            run_dict,
            rel,
            judged_only,
            read_qrels(folder / qrels_name),
            read_run(folder / run_name),
        )


def _random_case(rng: np.random.Generator, n_queries: int):
    """Random graded qrels and runs; ids chosen so that string order differs from numeric order."""
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for q in range(n_queries):
        qid = f"q{q}"
        n_docs = int(rng.integers(1, 30))
        docs = [f"d{int(x)}" for x in rng.choice(200, n_docs, replace=False)]
        if rng.random() < 0.9:
            judged = rng.choice(n_docs, int(rng.integers(1, n_docs + 1)), replace=False)
            grades = rng.choice([-1, 0, 0, 1, 1, 2, 3], len(judged))
            # a query whose judgments are all negative makes pytrec_eval's ndcg_cut loop forever
            if (grades < 0).all():
                grades[0] = 0
            qrels[qid] = {docs[j]: int(g) for j, g in zip(judged, grades)}
        if rng.random() < 0.9:
            retrieved = rng.choice(n_docs, int(rng.integers(1, n_docs + 1)), replace=False)
            tied = rng.random() < 0.5
            scores = (
                rng.choice([0.0, 0.5, 1.0, -2.0], len(retrieved))
                if tied
                else rng.normal(size=len(retrieved))
            )
            run[qid] = {docs[j]: float(s) for j, s in zip(retrieved, scores)}
    return qrels, run


@pytest.mark.parametrize(("rel", "judged_only"), [(1, False), (2, False), (1, True), (2, True)])
def test_random_cases_against_pytrec_eval(rel, judged_only):
    rng = np.random.default_rng(1000 * rel + judged_only)
    qrels_dict, run_dict = _random_case(rng, 1500)
    res, ref = _compare_with_pytrec(qrels_dict, run_dict, rel, judged_only)
    assert len(res.query_ids) > 1000
    # the default profile (trec_eval -c): the same values, plus judged queries missing from the run
    pairs = _pytrec_pairs(rel, judged_only)
    full = evaluate(Qrels.from_dict(qrels_dict), Run.from_dict(run_dict), [m for _, m in pairs])
    assert full.query_ids == sorted(qrels_dict)
    assert full.missing_queries == sorted(set(qrels_dict) - set(run_dict))
    assert full.run_only_queries == sorted(set(run_dict) - set(qrels_dict))
    assert full.missing_queries and full.run_only_queries
    for name, measure in pairs:
        values = full.values(str(measure))
        for qid in full.query_ids:
            if qid in ref:
                assert values[qid] == pytest.approx(ref[qid][name], abs=1e-9)
            elif name != "num_rel":
                assert values[qid] == 0.0
        agg = sum(ref[q][name] for q in ref) + (
            sum(values[q] for q in full.missing_queries) if name == "num_rel" else 0.0
        )
        if name not in ("num_ret", "num_rel", "num_rel_ret"):
            agg /= len(full.query_ids)
        assert full.mean(str(measure)) == pytest.approx(agg, abs=1e-9)


def test_judged_against_ir_measures():
    ir_measures = pytest.importorskip("ir_measures")
    rng = np.random.default_rng(7)
    qrels_dict, run_dict = _random_case(rng, 300)
    # ir_measures breaks ties by doc id ascending, trec_eval descending: use distinct scores
    run_dict = {
        q: {d: float(i) + rng.random() * 0.5 for i, d in enumerate(docs)}
        for q, docs in run_dict.items()
    }
    measures = [
        ir_measures.parse_measure(m) for m in ("Judged@1", "Judged@5", "Judged@10", "Judged")
    ]
    expected: dict[tuple[str, str], float] = {}
    for metric in ir_measures.iter_calc(measures, qrels_dict, run_dict):
        expected[(str(metric.measure), metric.query_id)] = metric.value
    # ir_measures scores judged queries missing from the run 0, like trec_eval -c (our default)
    res = evaluate(Qrels.from_dict(qrels_dict), Run.from_dict(run_dict), [str(m) for m in measures])
    assert res.missing_queries
    compared = 0
    for m in measures:
        for qid, value in res.values(str(m)).items():
            assert value == pytest.approx(expected[(str(m), qid)], abs=1e-12), (str(m), qid)
            compared += 1
    assert compared == len(expected) and compared > 800
