"""Diversity families through ``evaluate()``: profiles, parsing, ndeval agreement and the FreshStack
round trip."""

from __future__ import annotations

import csv
import json
import math
from collections import defaultdict

import pytest

from nuggetbench.data import NuggetQrels, Run
from nuggetbench.data import read_trec_run as read_run
from nuggetbench.data.formats.diversity import load_nugget_qrels_file
from nuggetbench.errors import InputError, SpecError
from nuggetbench.measures import get_profile, parse_measure
from nuggetbench.measures import score as evaluate
from nuggetbench.measures.profiles import ndeval_profile


def test_measure_strings_round_trip_and_aliases():
    for text in (
        "alpha_nDCG@10",
        "alpha_nDCG(alpha=0.8)@100",
        "alpha_DCG@5",
        "ERR_IA@20",
        "nERR_IA(alpha=0.8)@5",
        "P_IA@10",
        "StRecall@20",
        "NRBP",
        "nNRBP(alpha=0.8,beta=0.7)",
        "AP_IA",
        "StRecall(rel=2)@5",
    ):
        assert str(parse_measure(text)) == text
    assert str(parse_measure("alpha-nDCG@20")) == "alpha_nDCG@20"
    assert str(parse_measure("strec@10")) == "StRecall@10"
    assert str(parse_measure("MAP-IA")) == "AP_IA"
    with pytest.raises(SpecError, match="cutoff"):
        parse_measure("alpha_nDCG")
    with pytest.raises(SpecError, match="no cutoff"):
        parse_measure("NRBP@10")


def _qrels():
    nuggets = NuggetQrels.from_dict(
        {"q1": ["a", "b", "c"], "q2": ["x"], "q3": ["y"]},
        {"q1": {"a": {"d1": 1, "d2": 1}, "b": {"d2": 1}, "c": {"d9": 0}}, "q2": {"x": {"d5": 1}}},
    )
    return nuggets.document_qrels(mode="count")


def test_freshstack_profile_averages_every_query_with_nuggets():
    qrels = _qrels()
    run = Run.from_dict({"q1": {"d2": 1.0, "d1": 1.0, "d3": 0.5}, "zz": {"d1": 1.0}})
    res = evaluate(qrels, run, ["alpha_nDCG@1", "StRecall@2", "Coverage@2"], profile="freshstack")
    assert res.query_ids == ["q1", "q2", "q3"]  # q3 has nuggets but no judgment: it still counts
    # tie between d1 and d2 -> doc id ascending puts d1 first (gain 1 of an ideal 2: d2 covers a and b)
    assert res.per_query["alpha_nDCG@1"].tolist() == [0.5, 0.0, 0.0]
    # StRecall ignores nugget c (no document supports it); Coverage counts it
    assert res.per_query["StRecall@2"].tolist() == [1.0, 0.0, 0.0]
    assert res.per_query["Coverage@2"][0] == pytest.approx(2 / 3)
    assert res.means["alpha_nDCG@1"] == pytest.approx(0.5 / 3)
    # trec_eval order breaks the same tie the other way
    trec = evaluate(qrels, run, ["alpha_nDCG@1"], profile="ndeval -traditional")
    assert trec.query_ids == ["q1"] and trec.per_query["alpha_nDCG@1"].tolist() == [1.0]


def test_ndeval_profiles_and_errors():
    qrels = _qrels()
    run = Run(["q1", "q1"], ["d2", "d1"], [1.0, 2.0], ranks=[1, 2])
    assert evaluate(qrels, run, "alpha_nDCG@1", profile="ndeval").per_query[
        "alpha_nDCG@1"
    ].tolist() == [1.0]
    complete = evaluate(qrels, run, "alpha_nDCG@1", profile="ndeval -c")
    assert complete.query_ids == ["q1", "q2"] and complete.means["alpha_nDCG@1"] == 0.5
    assert (
        evaluate(qrels, run, "alpha_nDCG@1", profile="ndeval -traditional").means["alpha_nDCG@1"]
        == 0.5
    )
    # -M 1 keeps d2 only (gain 2); the ideal is d2 then d1 (a repeated: 0.5 at rank 2)
    cut = evaluate(qrels, run, "alpha_nDCG@5", profile=ndeval_profile(depth=1))
    assert cut.per_query["alpha_nDCG@5"][0] == pytest.approx(2 / (2 + 0.5 / math.log2(3)))
    assert cut.provenance["profile"] == "ndeval -M 1"
    assert get_profile("ndeval -c").average_over == "qrels"
    with pytest.raises(InputError, match="rank column"):
        evaluate(qrels, Run(["q1"], ["d1"], [1.0]), "alpha_nDCG@5", profile="ndeval")
    plain = qrels.__class__.from_dict({"q1": {"d1": 1}})
    with pytest.raises(InputError, match="nugget-level judgments"):
        evaluate(plain, run, "alpha_nDCG@5", profile="ndeval")
    with pytest.raises(InputError, match="alpha must be between 0 and 1"):
        evaluate(qrels, run, "alpha_nDCG(alpha=1.5)@5", profile="ndeval")


NDEVAL_COLUMNS = {}
for _k in (5, 10, 20):
    NDEVAL_COLUMNS.update(
        {
            f"ERR-IA@{_k}": f"ERR_IA@{_k}",
            f"nERR-IA@{_k}": f"nERR_IA@{_k}",
            f"alpha-DCG@{_k}": f"alpha_DCG@{_k}",
            f"alpha-nDCG@{_k}": f"alpha_nDCG@{_k}",
            f"P-IA@{_k}": f"P_IA@{_k}",
            f"strec@{_k}": f"StRecall@{_k}",
        }
    )
NDEVAL_COLUMNS.update({"NRBP": "NRBP", "nNRBP": "nNRBP", "MAP-IA": "AP_IA"})


def _with(measure: str, alpha: float, beta: float) -> str:
    family, _, k = measure.partition("@")
    if alpha != 0.5 and family in ("ERR_IA", "nERR_IA", "alpha_DCG", "alpha_nDCG"):
        return f"{family}(alpha={alpha})@{k}"
    if alpha != 0.5 and family in ("NRBP", "nNRBP"):
        return f"{family}(alpha={alpha},beta={beta})"
    return measure


@pytest.mark.realdata
@pytest.mark.parametrize(
    "tag,profile,alpha,beta",
    [
        ("default", "ndeval", 0.5, 0.5),
        ("c", "ndeval -c", 0.5, 0.5),
        ("traditional", "ndeval -traditional", 0.5, 0.5),
        ("alpha0.8_beta0.7_M10", ndeval_profile(depth=10), 0.8, 0.7),
    ],
)
@pytest.mark.parametrize("run_name", ["oracle", "partial", "random"])
def test_evaluate_agrees_with_ndeval(shared_data, tag, profile, alpha, beta, run_name):
    base = shared_data / "ndeval"
    qrels = load_nugget_qrels_file(base / "qrels" / "qrels.web.251-300.ndeval.txt")
    run = read_run(base / "runs" / f"synthetic_{run_name}.web.251-300.run", keep_rank=True)
    with open(base / "expected" / f"ndeval.{tag}.{run_name}.251-300.csv") as fh:
        expected = {row["topic"]: row for row in csv.DictReader(fh)}
    measures = [_with(m, alpha, beta) for m in NDEVAL_COLUMNS.values()]
    res = evaluate(qrels, run, measures, profile=profile)
    judged_in_run = [q for q in run.query_ids if q in expected and q in set(qrels.query_ids)]
    assert set(judged_in_run) <= set(res.query_ids)
    for column, measure in zip(NDEVAL_COLUMNS, measures):
        got = dict(zip(res.query_ids, res.per_query[measure].tolist()))
        for q in run.query_ids:  # ndeval prints a row for each run topic (0 when unjudged)
            assert got.get(q, 0.0) == pytest.approx(float(expected[q][column]), abs=1e-6), (
                column,
                q,
            )
        assert res.means[measure] == pytest.approx(float(expected["amean"][column]), abs=1e-6), (
            column
        )


def _freshstack_file_from_trec(qrels_path, out_path):
    """A FreshStack queries file whose nuggets are the TREC Web subtopics (built from the raw lines)."""
    judged: dict[str, dict[int, dict[str, int]]] = defaultdict(lambda: defaultdict(dict))
    with open(qrels_path) as fh:
        for line in fh:
            topic, sub, doc, grade = line.split()
            judged[topic][int(sub)][doc] = int(grade)
    with open(out_path, "w") as fh:
        for topic, subs in judged.items():
            nuggets = [
                {
                    "_id": f"{topic}_{s}",
                    "text": f"subtopic {s}",
                    "relevant_corpus_ids": [d for d, g in docs.items() if g > 0],
                    "non_relevant_corpus_ids": [d for d, g in docs.items() if g <= 0],
                }
                for s, docs in sorted(subs.items())
            ]
            fh.write(
                json.dumps(
                    {
                        "query_id": topic,
                        "query_title": "",
                        "query_text": f"topic {topic}",
                        "answer_text": "",
                        "nuggets": nuggets,
                    }
                )
                + "\n"
            )
    return judged


@pytest.mark.realdata
def test_freshstack_round_trip_of_trec_web_qrels(shared_data, tmp_path):
    base = shared_data / "ndeval"
    judged = _freshstack_file_from_trec(
        base / "qrels" / "qrels.web.251-300.ndeval.txt", tmp_path / "queries.jsonl"
    )
    qrels = load_nugget_qrels_file(tmp_path / "queries.jsonl")
    assert qrels.metadata["format"] == "freshstack" and len(qrels.nuggets.query_ids) == 50
    # no tied scores in these two runs: every order agrees with their rank column
    for run_name in ("oracle", "partial"):
        run = read_run(base / "runs" / f"synthetic_{run_name}.web.251-300.run")
        res = evaluate(qrels, run, ["alpha_nDCG@10", "Coverage@20"], profile="freshstack")
        assert len(res.query_ids) == 50  # every query with nuggets, missing ones scoring 0
        with open(base / "expected" / f"ndeval.c.{run_name}.251-300.csv") as fh:
            expected = {row["topic"]: row for row in csv.DictReader(fh)}
        got = dict(zip(res.query_ids, res.per_query["alpha_nDCG@10"].tolist()))
        for q in res.query_ids:
            want = float(expected[q]["alpha-nDCG@10"]) if q in expected else 0.0
            assert got[q] == pytest.approx(want, abs=1e-6), q
        assert res.means["alpha_nDCG@10"] == pytest.approx(
            float(expected["amean"]["alpha-nDCG@10"]), abs=1e-6
        )
        # Coverage@20 by hand for three queries: subtopics supported in the top 20 / all subtopics
        cov = dict(zip(res.query_ids, res.per_query["Coverage@20"].tolist()))
        for q in ("253", "254", "272"):
            top = run.doc_ids(q)[:20]
            covered = [s for s, docs in judged[q].items() if any(docs.get(d, 0) > 0 for d in top)]
            assert cov[q] == pytest.approx(len(covered) / len(judged[q])), (run_name, q)


def test_ndeval_command_line_profiles():
    from nuggetbench.errors import UnknownNameError
    from nuggetbench.measures.profiles import get_profile

    prof = get_profile("ndeval -M 10 -c")
    assert prof.name == "ndeval -c -M 10"
    assert prof.options["depth"] == 10
    assert get_profile("ndeval -traditional -c").name == "ndeval -c -traditional"
    with pytest.raises(UnknownNameError, match="-alpha"):
        get_profile("ndeval -alpha 0.8")
