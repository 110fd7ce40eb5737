"""Evaluation-time trap checks: each warning is triggered by a small hand-made case."""

from __future__ import annotations

import logging

from nuggetbench.data import Document, InMemoryCorpus, Qrels, Run
from nuggetbench.data import read_trec_run as read_run
from nuggetbench.data.checks import (
    check_corpus_coverage,
    check_findings,
    check_id_formats,
    check_query_overlap,
    check_run_against_qrels,
    check_run_sorted,
)


def codes(findings):
    return [f.code for f in findings if f.level == "warning"]


def qrels_for(qids, doc="d1", rel=1):
    return Qrels(list(qids), [doc] * len(qids), [rel] * len(qids))


def ranked_run(pairs):
    """pairs: {qid: [doc, ...]} best first, already in trec_eval order."""
    return Run.from_ranked_lists(pairs)


def test_overlap_is_reported_and_all_clear_when_complete():
    qrels = qrels_for(["q1", "q2", "q3"])
    run = ranked_run({"q1": ["d1"], "q2": ["d2"], "q3": ["d1"], "q9": ["d1"]})
    found = check_findings(qrels, run)
    assert found[0].code == "query_overlap"
    assert (
        "3 of 3 judged queries are in the run; 1 run queries have no judgments" in found[0].message
    )
    assert codes(found) == []


def test_zero_overlap_is_loud(caplog):
    qrels = qrels_for(["q1", "q2"])
    run = ranked_run({"x1": ["d1"], "x2": ["d1"]})
    with caplog.at_level(logging.INFO, logger="nuggetbench.data.checks"):
        found = check_query_overlap(qrels, run)
    assert codes(found) == ["no_overlap"]
    assert "NO evaluated query has judgments" in found[1].message
    assert any(
        r.levelno == logging.WARNING and "NO evaluated query" in r.message for r in caplog.records
    )


def test_tiny_overlap_warns():
    qrels = qrels_for([f"q{i}" for i in range(20)])
    run = ranked_run({"q0": ["d1"], "zz": ["d1"]})  # 1 of 20 = 5% < 10%
    found = check_query_overlap(qrels, run)
    assert codes(found) == ["tiny_overlap"]
    assert "only 1 of 20 judged queries (5.0%)" in found[1].message
    # 2 of 20 = 10% is not tiny
    assert codes(check_query_overlap(qrels, ranked_run({"q0": ["d1"], "q1": ["d1"]}))) == []


def test_query_ids_differing_by_leading_zero_or_type():
    qrels = qrels_for(["01", "2", "Q3"])
    # 1 written as a number somewhere becomes "1"; 2.0 came from a float column; q3 from lower-casing
    run = Run([1, 2.0, "q3"], ["d1", "d1", "d1"], [1.0, 1.0, 1.0])
    found = check_id_formats(qrels, run)
    assert codes(found) == ["query_id_format"]
    msg = found[0].message
    assert "3 run query ids differ" in msg
    assert "run '1' vs qrels '01'" in msg and "run '2.0' vs qrels '2'" in msg


def test_doc_ids_differing_only_by_format():
    qrels = Qrels(["q1", "q1"], ["007", "d2"], [1, 0])
    run = Run(["q1", "q1"], ["7", "d2"], [2.0, 1.0])
    found = check_id_formats(qrels, run)
    assert codes(found) == ["doc_id_format"]
    assert "qrels '007' vs run '7'" in found[0].message


def test_ids_with_whitespace():
    qrels = qrels_for(["3"])
    run = Run([" 3"], ["d1"], [1.0])
    found = check_id_formats(qrels, run)
    assert "id_whitespace" in codes(found)
    assert "query_id_format" in codes(found)  # ' 3' vs '3'
    assert "' 3'" in [f for f in found if f.code == "id_whitespace"][0].message


def test_truncated_corpus_without_judged_documents():
    qrels = Qrels(["q1", "q1", "q2"], ["d1", "d2", "d3"], [1, 0, 2])
    corpus = InMemoryCorpus([Document("d1", "a"), Document("d9", "b")])
    found = check_corpus_coverage(qrels, corpus, metadata={"subset": {"max_docs": 2}})
    assert codes(found) == ["judged_missing"]
    # d2 is judged non-relevant (grade 0): only d3 counts
    assert "1 of 2 relevant judged documents are not in the corpus" in found[0].message
    assert "2-document subset" in found[0].message


def test_subset_that_keeps_judged_documents_is_flagged_as_easier():
    qrels = Qrels(["q1"], ["d1"], [1])
    corpus = InMemoryCorpus([Document("d1", "a"), Document("d2", "b")])
    meta = {"subset": {"max_docs": 2, "keep_judged": True, "n_docs": 2, "full_size": 8841823}}
    found = check_corpus_coverage(qrels, corpus, metadata=meta)
    assert codes(found) == ["subset_keeps_judged"]
    assert "2 of 8841823 documents" in found[0].message
    assert codes(check_corpus_coverage(qrels, corpus)) == []  # a full corpus: nothing to say


def test_arrival_order_is_never_warned_about(tmp_path):
    """A dict, a frame, objects or a file's lines have no order to respect: nothing is said,
    whatever order the entries came in (the run is ranked by score either way)."""
    sorted_run = Run(["q1", "q1"], ["d2", "d1"], [2.0, 1.0])
    assert codes(check_run_sorted(sorted_run)) == []
    unsorted = Run(["q1", "q1"], ["d1", "d2"], [1.0, 2.0])  # ascending scores in input order
    assert unsorted.input_sorted is False  # known, kept, not warned
    assert codes(check_run_sorted(unsorted)) == []
    path = tmp_path / "run.trec"  # lines out of order, ranks agreeing with the scores
    path.write_text("q2 Q0 dA 1 0.9 s\nq1 Q0 dB 2 0.5 s\nq1 Q0 dA 1 0.9 s\n")
    run = read_run(path, keep_rank=True)
    assert run.input_sorted is False and codes(check_run_sorted(run)) == []


def test_rank_column_that_contradicts_scores(tmp_path):
    path = tmp_path / "run.trec"
    # distances written as scores: rank 1 has the smallest "score"
    path.write_text(
        "q1 Q0 dA 1 0.1 sys\nq1 Q0 dB 2 0.5 sys\nq1 Q0 dC 3 0.9 sys\n"
        "q2 Q0 dA 1 0.9 sys\nq2 Q0 dB 2 0.5 sys\n"
    )
    run = read_run(path, keep_rank=True)
    found = check_run_sorted(run)
    assert codes(found) == ["rank_disagrees"]
    assert "in 1 queries (e.g. q1)" in found[0].message
    assert "measure another ranking" in found[0].message  # the consequence for the numbers


def test_constant_scores_ordered_by_the_rank_column_only(tmp_path):
    """One score for a query's documents: the rank column alone orders them; trec_eval breaks
    the ties by doc id descending. Warned only when the two orders differ."""
    path = tmp_path / "run.trec"
    path.write_text(
        "q1 Q0 dA 1 0 s\nq1 Q0 dB 2 0 s\nq1 Q0 dC 3 0 s\n"  # ranks: A B C; ties: C B A
        "q2 Q0 dC 1 0 s\nq2 Q0 dB 2 0 s\nq2 Q0 dA 3 0 s\n"  # ranks agree with the tie order
        "q3 Q0 dA 1 2 s\nq3 Q0 dB 2 1 s\nq3 Q0 dC 3 1 s\n"  # ties below, ranks A B C: not flat
        "q4 Q0 dA 1 5 s\n"
    )
    run = read_run(path, keep_rank=True)
    found = check_run_sorted(run)
    assert codes(found) == ["constant_scores"]
    assert found[0].counts == {"queries": 1} and "(e.g. q1)" in found[0].message


def test_check_run_against_qrels_lines():
    qrels = qrels_for(["q1", "q2"])
    run = Run(["q1", "q1"], ["d1", "d2"], [1.0, 2.0])
    corpus = InMemoryCorpus([Document("d2", "x")])
    lines = check_run_against_qrels(qrels, run, corpus)
    assert lines[0].startswith("[info] 1 of 2 judged queries are in the run")
    assert any(
        line.startswith("[warning]") and "relevant judged documents" in line for line in lines
    )
    assert not any("did not arrive sorted" in line for line in lines)
