"""Readers of nugget-judgment files: ndeval diversity qrels and FreshStack queries files."""

from __future__ import annotations

import json

import numpy as np
import pytest

from nuggetbench.data import read_trec_run as read_run
from nuggetbench.data.formats.diversity import (
    load_nugget_qrels_file,
    read_freshstack_queries,
    read_ndeval_qrels,
    sniff_nugget_qrels,
    write_freshstack_queries,
)
from nuggetbench.errors import DuplicateError, FormatError, InputError

NDEVAL = """\
# a comment
7 2 dB 1
7 0 dA 1
7 0 dB 0
7 10 dC 2
12 1 dA 1
12 1 dA 1
"""


def _row(qid, nuggets, **extra):
    row = {
        "query_id": qid,
        "query_title": f"title {qid}",
        "query_text": f"text {qid}",
        "answer_text": f"answer {qid}",
        "nuggets": nuggets,
    }
    row.update(extra)
    return row


def _nug(nid, text, rel=(), non=()):
    return {
        "_id": nid,
        "text": text,
        "relevant_corpus_ids": list(rel),
        "non_relevant_corpus_ids": list(non),
    }


def _write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_ndeval_reader_declares_subtopics_in_numeric_order(tmp_path):
    path = tmp_path / "q.ndeval"
    path.write_text(NDEVAL)
    nq = read_ndeval_qrels(path)
    assert nq.query_ids == ["12", "7"]
    assert [n.nugget_id for n in nq.nuggets_of("7")] == ["7:0", "7:2", "7:10"]  # 10 after 2
    assert nq.nugget("7:10").metadata["subtopic"] == "10"
    assert nq.n_judgments == 5  # the repeated identical line is kept once
    assert nq.supported("7") == {"dA": {"7:0"}, "dB": {"7:2"}, "dC": {"7:10"}}
    qrels = load_nugget_qrels_file(path)
    assert qrels["7"] == {"dA": 1, "dB": 1, "dC": 1}
    assert qrels.nuggets is not None and qrels.metadata["format"] == "ndeval"


def test_ndeval_reader_errors_name_file_and_line(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_text("1 0 d1 1\n1 0 d1 0\n")
    with pytest.raises(
        DuplicateError, match=r"bad\.txt, line 2: document 'd1' is judged twice.*line 1"
    ):
        read_ndeval_qrels(path)
    path.write_text("1 0 d1 1\n1 0 d2\n")
    with pytest.raises(FormatError, match=r"line 2.*4 whitespace-separated columns"):
        read_ndeval_qrels(path)
    path.write_text("1 0 d1 yes\n")
    with pytest.raises(FormatError, match=r"line 1.*integer.*'yes'"):
        read_ndeval_qrels(path)


def test_freshstack_reader_queries_and_nuggets(tmp_path):
    rows = [
        _row(
            "12",
            [
                _nug("12_0", "first fact", rel=["c1", "c2"], non=["c3"]),
                _nug("12_1", "second", rel=["c2"]),
            ],
        ),
        _row("123", [_nug("123_0", "other query's fact", rel=["c9"])], tags=["python"]),
    ]
    path = _write_jsonl(tmp_path / "queries.jsonl", rows)
    queries, nq = read_freshstack_queries(path)
    assert queries["12"] == "title 12 text 12"
    assert queries.meta("12")["answer_text"] == "answer 12"
    assert queries.meta("12")["nugget_ids"] == ["12_0", "12_1"]
    assert queries.meta("123")["tags"] == ["python"]
    # nuggets belong to the query that declares them, never to a prefix match ("12" vs "123")
    assert [n.nugget_id for n in nq.nuggets_of("12")] == ["12_0", "12_1"]
    assert [n.nugget_id for n in nq.nuggets_of("123")] == ["123_0"]
    assert nq.supported("12") == {"c1": {"12_0"}, "c2": {"12_0", "12_1"}}
    qrels = load_nugget_qrels_file(path)
    assert qrels["12"] == {"c1": 1, "c2": 2, "c3": 0}  # FreshStack: number of supported nuggets
    assert qrels["123"] == {"c9": 1}
    assert sniff_nugget_qrels(path) == "freshstack"


def test_freshstack_reader_accepts_columnar_nuggets(tmp_path):
    columnar = {
        "_id": ["a", "b"],
        "text": ["x", "y"],
        "relevant_corpus_ids": [["d1"], []],
        "non_relevant_corpus_ids": [[], ["d2"]],
    }
    path = _write_jsonl(tmp_path / "q.jsonl", [_row("1", columnar)])
    _, nq = read_freshstack_queries(path)
    assert [n.text for n in nq.nuggets_of("1")] == ["x", "y"]
    assert nq.supported("1") == {"d1": {"a"}}


def test_freshstack_bad_input_names_the_record(tmp_path):
    ok = _row("1", [_nug("1_0", "x", rel=["d"])])
    path = _write_jsonl(
        tmp_path / "q.jsonl", [ok, {k: v for k, v in _row("2", []).items() if k != "nuggets"}]
    )
    with pytest.raises(FormatError, match=r"q\.jsonl, line 2: query '2' has no 'nuggets' field"):
        read_freshstack_queries(path)

    orphan = _row("3", [_nug("3_0", "x", rel=["d"])])
    del orphan["query_id"]
    path = _write_jsonl(tmp_path / "q.jsonl", [ok, orphan])
    with pytest.raises(FormatError, match=r"line 2: .*'3_0'.*a nugget with no query"):
        read_freshstack_queries(path)

    twice = _row("4", [_nug("4_0", "x", rel=["d7"], non=["d7"])])
    path = _write_jsonl(tmp_path / "q.jsonl", [ok, twice])
    with pytest.raises(
        DuplicateError, match=r"line 2: document 'd7' is judged twice for nugget '4_0'"
    ):
        read_freshstack_queries(path)

    dup_nugget = _row("5", [_nug("1_0", "x")])
    path = _write_jsonl(tmp_path / "q.jsonl", [ok, dup_nugget])
    with pytest.raises(DuplicateError, match=r"line 2: nugget id '1_0'.*line 1"):
        read_freshstack_queries(path)

    path.write_text(json.dumps(ok) + "\n{not json\n")
    with pytest.raises(FormatError, match=r"line 2: not valid JSON"):
        read_freshstack_queries(path)

    with pytest.raises(InputError, match="does not exist"):
        load_nugget_qrels_file(tmp_path / "absent.jsonl")


def test_freshstack_write_read_round_trip(tmp_path):
    rows = [
        _row("1", [_nug("n1", "a", rel=["d1"], non=["d2"]), _nug("n2", "b")]),
        _row("2", [_nug("n3", "c", rel=["d2", "d3"])]),
    ]
    queries, nq = read_freshstack_queries(_write_jsonl(tmp_path / "a.jsonl", rows))
    write_freshstack_queries(queries, nq, tmp_path / "b.jsonl")
    queries2, nq2 = read_freshstack_queries(tmp_path / "b.jsonl")
    assert dict(queries2) == dict(queries)
    assert [n.nugget_id for n in nq2.iter_nuggets()] == ["n1", "n2", "n3"]
    for a, b in zip(nq.arrays(), nq2.arrays()):
        assert np.array_equal(a, b)


def test_read_run_keeps_input_ranks_aligned(tmp_path):
    path = tmp_path / "run.txt"
    path.write_text("1 Q0 dA 2 5.0 t\n1 Q0 dB 1 1.0 t\n2 Q0 dC 7 3 t\n")
    run = read_run(path, keep_rank=True)
    assert run.doc_ids("1") == ["dA", "dB"]  # ranked by score, the rank column is ignored
    assert run.input_ranks.tolist() == [2, 1, 7]
    assert run.truncate(1).input_ranks.tolist() == [2, 7]
    assert run.filter_queries(["2"]).input_ranks.tolist() == [7]
    assert read_run(path).input_ranks is None
    path.write_text("1 Q0 dA x 5.0 t\n")
    with pytest.raises(FormatError, match="line 1"):
        read_run(path, keep_rank=True)


def test_sniff_tells_nugget_files_from_document_qrels(tmp_path):
    trec = tmp_path / "qrels.txt"
    trec.write_text("1 0 d1 1\n1 0 d2 0\n2 0 d1 2\n")
    assert sniff_nugget_qrels(trec) is None
    rounds = tmp_path / "covid.txt"  # a round number in column 2, each pair judged once
    rounds.write_text("1 1 d1 1\n1 2 d2 0\n2 1 d1 2\n")
    assert sniff_nugget_qrels(rounds) is None
    json_qrels = tmp_path / "qrels.json"
    json_qrels.write_text('{"1": {"d1": 1}}\n')
    assert sniff_nugget_qrels(json_qrels) is None
    diversity = tmp_path / "web.txt"  # the same (topic, doc) under two subtopics
    diversity.write_text("1 1 d1 1\n1 2 d1 0\n")
    assert sniff_nugget_qrels(diversity) == "ndeval"
    named = tmp_path / "qrels.ndeval.txt"
    named.write_text("1 1 d1 1\n")
    assert sniff_nugget_qrels(named) == "ndeval"
    assert load_nugget_qrels_file(trec, fmt="ndeval").nuggets.query_ids == ["1", "2"]
