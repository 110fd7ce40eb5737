"""Hand-computed values of the trec_eval measures on inline TREC files; evaluate() and Results."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from nuggetbench.data import Qrels, Run
from nuggetbench.data import read_trec_qrels as read_qrels
from nuggetbench.data import read_trec_run as read_run
from nuggetbench.errors import IdMismatchError, SpecError, UnknownNameError
from nuggetbench.measures import EvalContext, Profile, Results, read_results
from nuggetbench.measures import score as evaluate

# q1: R = 3 at rel 1 (d1=2, d3=1, d4=1; d4 never retrieved), d2 judged non-relevant, d9 judged -1
# q2: R = 1; q3: judged but absent from the run; q4: in the run only
QRELS = """\
q1 0 d1 2
q1 0 d2 0
q1 0 d3 1
q1 0 d4 1
q1 0 d9 -1
q2 0 d1 1
q3 0 d5 1
"""
# q1 ranks (score desc, ties by doc id desc): d1, d2, d5 (unjudged), d9, d3 (tie 0.5: d9 > d3), d6
RUN = """\
q1 Q0 d1 1 0.9 t
q1 Q0 d2 2 0.8 t
q1 Q0 d5 3 0.7 t
q1 Q0 d3 4 0.5 t
q1 Q0 d9 5 0.5 t
q1 Q0 d6 6 0.1 t
q2 Q0 d7 1 2.0 t
q2 Q0 d1 2 1.0 t
q4 Q0 d1 1 1.0 t
"""

L2, L3, L4, L6 = math.log2(2), math.log2(3), math.log2(4), math.log2(6)
IDCG_Q1 = 2 / L2 + 1 / L3 + 1 / L4

# hand-computed per-query values for (q1, q2); q3 scores 0 everywhere but NumRel = 1
EXPECTED = {
    "P@5": (2 / 5, 1 / 5),
    "P@2": (1 / 2, 1 / 2),
    "R@5": (2 / 3, 1.0),
    "R@1": (1 / 3, 0.0),
    "AP": ((1 + 2 / 5) / 3, 0.5),
    "AP@3": (1 / 3, 0.5),
    "RR": (1.0, 0.5),
    "RR@1": (1.0, 0.0),
    "Rprec": (1 / 3, 0.0),
    "Success@1": (1.0, 0.0),
    "Success@2": (1.0, 1.0),
    "nDCG": ((2 + 1 / L6) / IDCG_Q1, (1 / L3) / 1.0),
    "nDCG@3": (2 / IDCG_Q1, (1 / L3) / 1.0),
    "nDCG@1": (1.0, 0.0),
    "Bpref": (1 / 3, 1.0),
    "NumRet": (6.0, 2.0),
    "NumRel": (3.0, 1.0),
    "NumRelRet": (2.0, 1.0),
    "Judged@5": (4 / 5, 1 / 2),
    "Judged": (4 / 6, 1 / 2),
    "Judged@1": (1.0, 0.0),
    # rel=2: only q1's d1 is relevant; q2 has none. bpref's N counts grades 0 and 1 (d2, d3, d4)
    "P(rel=2)@5": (1 / 5, 0.0),
    "AP(rel=2)": (1.0, 0.0),
    "R(rel=2)@5": (1.0, 0.0),
    "Bpref(rel=2)": (1.0, 0.0),
    "NumRel(rel=2)": (1.0, 0.0),
    # judged_only drops d5, d6 (unjudged) and d9 (negative): q1 = d1, d2, d3; q2 = d1
    "P(judged_only=True)@2": (1 / 2, 1 / 2),
    "AP(judged_only=True)": ((1 + 2 / 3) / 3, 1.0),
    "nDCG(judged_only=True)": ((2 + 1 / L4) / IDCG_Q1, 1.0),
    "RR(judged_only=True)": (1.0, 1.0),
    "NumRet(judged_only=True)": (3.0, 1.0),
}
COUNTS = {"NumRet", "NumRel", "NumRelRet", "NumRel(rel=2)", "NumRet(judged_only=True)"}


@pytest.fixture()
def data(tmp_path):
    (tmp_path / "qrels.txt").write_text(QRELS)
    (tmp_path / "run.txt").write_text(RUN)
    return read_qrels(tmp_path / "qrels.txt"), read_run(tmp_path / "run.txt")


def test_hand_computed_trec_eval_profile(data):
    qrels, run = data
    res = evaluate(qrels, run, list(EXPECTED), profile="trec_eval")
    assert res.query_ids == ["q1", "q2"]
    assert res.run_only_queries == ["q4"] and res.missing_queries == ["q3"]
    for m, (v1, v2) in EXPECTED.items():
        got = res.values(m)
        assert got["q1"] == pytest.approx(v1, abs=1e-12), m
        assert got["q2"] == pytest.approx(v2, abs=1e-12), m
        agg = v1 + v2 if m in COUNTS else (v1 + v2) / 2
        assert res.mean(m) == pytest.approx(agg, abs=1e-12), m


def test_hand_computed_default_profile_scores_missing_queries_zero(data):
    qrels, run = data
    res = evaluate(qrels, run, list(EXPECTED))
    assert res.profile == "trec_eval -c"
    assert res.query_ids == ["q1", "q2", "q3"]
    for m, (v1, v2) in EXPECTED.items():
        q3 = 1.0 if m in ("NumRel",) else 0.0
        assert res.values(m)["q3"] == q3, m
        agg = v1 + v2 + q3 if m in COUNTS else (v1 + v2 + q3) / 3
        assert res.mean(m) == pytest.approx(agg, abs=1e-12), m


def test_ties_follow_trec_eval_doc_id_descending(data):
    qrels, run = data
    # with ascending tie order d3 would come before d9 and AP would be (1 + 2/4) / 3
    ap = evaluate(qrels, run, ["AP"], profile="trec_eval").values("AP")["q1"]
    assert ap == pytest.approx((1 + 2 / 5) / 3, abs=1e-12)
    asc = Profile("test-asc", average_over="run_and_qrels", tie_break="docid_asc")
    assert evaluate(qrels, run, ["AP"], profile=asc).values("AP")["q1"] == pytest.approx(
        0.5, abs=1e-12
    )


def test_query_without_relevant_documents_scores_zero():
    qrels = Qrels(["a", "a", "b"], ["x", "y", "x"], [0, 0, 1])
    run = Run(["a", "a", "b"], ["x", "y", "x"], [2.0, 1.0, 1.0])
    res = evaluate(
        qrels, run, ["nDCG@10", "AP", "RR", "R@5", "Bpref", "Rprec", "P@1"], profile="trec_eval"
    )
    for m in res.measures:
        assert res.values(m)["a"] == 0.0
        assert res.values(m)["b"] == 1.0


def test_only_negative_judgments_and_empty_views():
    qrels = Qrels(["a", "b"], ["x", "x"], [-1, 1])
    run = Run(["a", "b", "b"], ["x", "y", "z"], [1.0, 3.0, 2.0])
    res = evaluate(
        qrels,
        run,
        ["nDCG", "nDCG@2", "AP(judged_only=True)", "Bpref", "Judged@2"],
        profile="trec_eval",
    )
    assert res.values("nDCG") == {"a": 0.0, "b": 0.0}
    assert res.values("Judged@2") == {"a": 1.0, "b": 0.0}
    assert res.values("AP(judged_only=True)") == {"a": 0.0, "b": 0.0}


def test_results_api_and_json_round_trip(data, tmp_path):
    qrels, run = data
    res = evaluate(qrels, run, "nDCG@10 AP P(rel=2)@5 NumRet")
    assert isinstance(res, Results)
    assert res.measures == ["nDCG@10", "AP", "P(rel=2)@5", "NumRet"]
    assert res.mean("ndcg_cut_10") == res.mean("nDCG@10")  # any spelling of the same measure
    assert res.mean("map") == res.mean("AP")
    with pytest.raises(UnknownNameError) as info:
        res.mean("nDCG@20")
    assert "nDCG@10" in str(info.value)
    prov = res.provenance
    assert prov["run"] == "t" and prov["run_fingerprint"] == run.fingerprint()
    assert prov["qrels_fingerprint"] == qrels.fingerprint() and prov["profile"] == "trec_eval -c"
    assert prov["nuggetbench_version"] and prov["time"].endswith("Z")
    d = res.to_dict()
    assert json.loads(json.dumps(d)) == d
    assert d["per_query"]["AP"] == res.per_query["AP"].tolist()
    path = res.to_json(tmp_path / "out" / "res.json")
    back = read_results(path)
    assert back.query_ids == res.query_ids and back.measures == res.measures
    assert back.means == res.means and np.array_equal(back.per_query["AP"], res.per_query["AP"])
    frame = res.to_pandas()  # long: one vocabulary with Experiment.to_pandas (issue 30)
    assert list(frame.columns) == ["query_id", "measure", "value"]
    assert len(frame) == len(res.measures) * len(res.query_ids)
    row = frame[(frame.query_id == "q1") & (frame.measure == "NumRet")]
    assert row.value.tolist() == [6]
    wide = res.to_pandas(wide=True)
    assert list(wide.columns) == res.measures and list(wide.index) == res.query_ids
    assert wide.loc["q1", "NumRet"] == 6
    assert not res.per_query["AP"].flags.writeable


def test_measures_as_values_and_duplicates(data):
    from nuggetbench.measures import Measure

    qrels, run = data
    res = evaluate(qrels, run, [Measure("P", 5), "P@5", "P(rel=1)@5"])
    assert res.measures == ["P@5", "P(rel=1)@5"]
    assert res.mean("P@5") == res.mean("P(rel=1)@5")
    with pytest.raises(SpecError):
        evaluate(qrels, run, [])


def test_id_mismatch_error_hints_at_format():
    qrels = Qrels(["1", "2"], ["x", "y"], [1, 1])
    run = Run(["01", "02 "], ["x", "y"], [1.0, 1.0])
    with pytest.raises(IdMismatchError) as info:
        evaluate(qrels, run, ["AP"])
    msg = str(info.value)
    assert "overlap 0" in msg and "'01' vs '1'" in msg
    other = Run(["zz"], ["x"], [1.0])
    with pytest.raises(IdMismatchError) as info:
        evaluate(qrels, other, ["AP"])
    assert "same dataset" in str(info.value)


def test_profile_hooks_select_transform_scale(data):
    qrels, run = data

    def only_q2(qrels, run):
        return ["q2", "q9"]

    def drop_d7(qrels, run):
        keep = run.arrays()[2] != "d7"
        return qrels, run.filter_entries(keep)

    prof = Profile("test-hooks", select_queries=only_q2, transform=drop_d7, scale=100.0)
    res = evaluate(qrels, run, ["RR", "NumRet", "NumRel"], profile=prof)
    assert res.query_ids == ["q2", "q9"]
    assert res.values("RR") == {"q2": 100.0, "q9": 0.0}  # d7 removed: d1 first; scaled
    assert res.values("NumRet") == {"q2": 1.0, "q9": 0.0}  # counts are not scaled
    assert res.values("NumRel") == {"q2": 1.0, "q9": 0.0}


def test_eval_context_views(data):
    qrels, run = data
    ctx = EvalContext(qrels, run, "trec_eval")
    view = ctx.ranked()
    assert view.qidx.tolist() == [0] * 6 + [1] * 2
    assert view.rank.tolist() == [0, 1, 2, 3, 4, 5, 0, 1]
    docs = run.arrays()[2][view.run_index].tolist()
    assert docs == ["d1", "d2", "d5", "d9", "d3", "d6", "d7", "d1"]
    grades = [None if g < -(2**62) else g for g in view.grade.tolist()]
    assert grades == [2, 0, None, -1, 1, None, None, 1]
    assert ctx.ranked(cutoff=2).num_ret.tolist() == [2, 2]
    jo = ctx.ranked(judged_only=True)
    assert jo.rank.tolist() == [0, 1, 2, 0] and jo.grade.tolist() == [2, 0, 1, 1]
    assert ctx.num_rel(1).tolist() == [3, 1] and ctx.num_judged_nonrel(2).tolist() == [3, 1]
    assert ctx.ranked() is view  # cached


def test_context_counts_once_and_hands_out_copies():
    """``num_rel``/``num_judged_nonrel`` and per-view values are computed once per context; a
    caller changing the array it got changes nothing for the next caller; nDCG@k cut from the
    whole ranking's terms equals nDCG computed on the top-k view itself."""
    from nuggetbench.data import Qrels, Run
    from nuggetbench.measures import EvalContext
    from nuggetbench.measures import score as evaluate
    from nuggetbench.measures.gains import sum_by_query

    rng = np.random.default_rng(5)
    q = [f"q{i}" for i in rng.integers(0, 30, 600)]
    d = [f"d{i}" for i in rng.integers(0, 80, 600)]
    pairs = dict(zip(zip(q, d), rng.integers(-1, 4, 600).tolist()))
    qrels = Qrels([k[0] for k in pairs], [k[1] for k in pairs], list(pairs.values()))
    run = Run(
        [f"q{i}" for i in rng.integers(0, 30, 900)],
        [f"d{i}" for i in rng.integers(0, 80, 900)],
        rng.integers(0, 5, 900).astype(float),
        duplicates="first",
    )
    ctx = EvalContext(qrels, run)
    first = ctx.num_rel(2)
    first[:] = -7
    assert (ctx.num_rel(2) >= 0).all()
    assert ctx.num_judged_nonrel(2).tolist() != first.tolist()
    calls = []
    view = ctx.ranked()
    assert ctx.per_view(view, "x", lambda: calls.append(1) or 5) == 5
    assert ctx.per_view(view, "x", lambda: calls.append(1) or 6) == 5 and calls == [1]
    got = evaluate(qrels, run, ["nDCG@3", "nDCG@10", "nDCG", "nDCG(dcg=exp-log2)@5"])
    for k, key in ((3, "nDCG@3"), (10, "nDCG@10"), (None, "nDCG")):
        fresh = EvalContext(qrels, run)
        top = fresh.ranked(cutoff=k)
        pos = top.grade > 0
        n = len(fresh.query_ids)
        dcg = sum_by_query(
            top.qidx[pos], weights=top.grade[pos] / np.log2(top.rank[pos] + 2.0), minlength=n
        )
        iq, ig = fresh.ideal_gains()
        starts = np.searchsorted(iq, np.arange(n))
        irank = np.arange(len(iq)) - starts[iq]
        keep = irank < k if k is not None else np.ones(len(iq), dtype=bool)
        idcg = sum_by_query(iq[keep], weights=ig[keep] / np.log2(irank[keep] + 2.0), minlength=n)
        want = np.where(idcg > 0, dcg / np.where(idcg > 0, idcg, 1), 0.0)
        assert np.array_equal(np.array(list(got.values(key).values())), want)
