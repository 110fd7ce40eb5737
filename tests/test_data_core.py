"""Core values and their file formats: hand-written inline cases."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest

from nuggetbench.data import (
    InMemoryCorpus,
    JsonlCorpus,
    Qrels,
    Run,
    read_beir_folder,
    read_beir_qrels,
    read_json_run,
    write_json_run,
    write_qrels,
    write_run,
)
from nuggetbench.data import read_document_qrels as load_qrels
from nuggetbench.data import read_run as load_run
from nuggetbench.data import read_trec_qrels as read_qrels
from nuggetbench.data import read_trec_run as read_run
from nuggetbench.errors import DuplicateError, FormatError, InputError

RUN = """\
q1 Q0 d1 1 0.5 tagA
q1 Q0 d2 2 0.9 tagA
q1 Q0 d3 3 0.5 tagA
q2 Q0 x 1 1.0 tagA
q10 Q0 d9 7 -2 tagA
"""


def test_run_ranking_follows_trec_eval(tmp_path):
    p = tmp_path / "run.txt"
    p.write_text(RUN)
    run = read_run(p)
    # score desc; ties (d1, d3 at 0.5) broken by doc id descending -> d3 before d1
    assert run.doc_ids("q1") == ["d2", "d3", "d1"]
    assert run["q10"] == [("d9", -2.0)]
    assert run.name == "tagA"
    assert run.input_sorted is False
    assert sorted(run) == ["q1", "q10", "q2"]


def test_rank_column_is_ignored(tmp_path):
    a = tmp_path / "a.txt"
    b = tmp_path / "b.txt"
    a.write_text("q Q0 d1 1 1.0 t\nq Q0 d2 2 2.0 t\n")
    b.write_text("q Q0 d1 99 1.0 t\nq Q0 d2 1 2.0 t\n")
    assert read_run(a) == read_run(b)
    assert read_run(a).doc_ids("q") == ["d2", "d1"]


def test_gz_and_comments(tmp_path):
    p = tmp_path / "run.txt.gz"
    p.write_bytes(gzip.compress(("# a comment\n" + RUN).encode()))
    plain = tmp_path / "run.txt"
    plain.write_text(RUN)
    assert read_run(p) == read_run(plain)


def test_malformed_line_names_file_and_line(tmp_path):
    p = tmp_path / "bad.run"
    p.write_text("q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 0.4\nq1 Q0 d3 3 0.3 t\n")
    with pytest.raises(FormatError) as info:
        read_run(p)
    assert info.value.line == 2
    assert "bad.run" in str(info.value) and "line 2" in str(info.value)
    assert "found 5" in str(info.value)


def test_bad_score_named(tmp_path):
    p = tmp_path / "bad.run"
    p.write_text("q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 high t\n")
    with pytest.raises(FormatError) as info:
        read_run(p)
    assert info.value.line == 2 and "'high'" in str(info.value)


def test_doc_id_with_space_is_a_column_error(tmp_path):
    p = tmp_path / "bad.run"
    p.write_text("q1 Q0 doc one 1 0.5 t\n")
    with pytest.raises(FormatError, match="may not contain spaces"):
        read_run(p)


def test_duplicate_pair_rejected(tmp_path):
    p = tmp_path / "dup.run"
    p.write_text("q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 0.4 t\nq1 Q0 d1 3 0.3 t\n")
    with pytest.raises(DuplicateError, match=r"'q1'.*'d1'"):
        read_run(p)


def test_run_round_trip_and_writer_rejects_spaces(tmp_path):
    run = Run.from_dict({"q1": {"a": 0.1234567890123, "b": 2.0}, "q2": {"c": 1.0}}, name="x y")
    p = write_run(run, tmp_path / "r.trec")
    back = read_run(p)
    assert back == run
    assert p.read_text().splitlines()[0] == "q1 Q0 b 1 2 x_y"
    with pytest.raises(InputError, match="whitespace"):
        write_run(Run.from_dict({"q 1": {"a": 1.0}}), tmp_path / "bad.trec")


def test_truncate_and_filters():
    run = Run.from_dict({"q": {f"d{i}": float(i) for i in range(10)}, "r": {"a": 1.0}})
    top = run.truncate(3)
    assert top.doc_ids("q") == ["d9", "d8", "d7"] and top.doc_ids("r") == ["a"]
    assert run.filter_queries(["r"]).query_ids == ["r"]
    kept = run.filter_entries(np.array([d != "d9" for d in run.arrays()[2]]))
    assert kept.doc_ids("q")[0] == "d8"


def test_qrels_trec_and_conflicts(tmp_path):
    p = tmp_path / "qrels.txt"
    p.write_text("q1 0 d1 1\nq1 0 d2 0\nq2 0 d3 2\nq2 0 d4 -1\n")
    qrels = read_qrels(p)
    assert qrels.to_dict() == {"q1": {"d1": 1, "d2": 0}, "q2": {"d3": 2, "d4": -1}}
    assert qrels.n_relevant() == {"q1": 1, "q2": 1}
    assert qrels.n_relevant(2) == {"q1": 0, "q2": 1}
    bad = tmp_path / "bad.txt"
    bad.write_text("q1 0 d1 1\nq1 0 d1 2\n")
    with pytest.raises(DuplicateError, match="judged twice"):
        read_qrels(bad)
    frac = tmp_path / "frac.txt"
    frac.write_text("q1 0 d1 1\nq1 0 d2 0.5\n")
    with pytest.raises(FormatError, match="line 2"):
        read_qrels(frac)
    out = write_qrels(qrels, tmp_path / "out.txt")
    assert read_qrels(out) == qrels


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_beir_qrels_header_and_line_endings(tmp_path, newline):
    p = tmp_path / "test.tsv"
    p.write_bytes(
        newline.join(
            ["query-id\tcorpus-id\tscore", "1\t10\t1", "1\t11\t2", "2\t12\t1", ""]
        ).encode()
    )
    qrels = read_beir_qrels(p)
    assert qrels.to_dict() == {"1": {"10": 1, "11": 2}, "2": {"12": 1}}
    assert load_qrels(p) == qrels


def test_beir_folder(tmp_path):
    (tmp_path / "qrels").mkdir()
    (tmp_path / "corpus.jsonl").write_text(
        json.dumps({"_id": "d1", "title": "T", "text": "alpha"})
        + "\n"
        + json.dumps({"_id": "d2", "title": "", "text": "beta"})
        + "\n"
    )
    (tmp_path / "queries.jsonl").write_text(
        json.dumps({"_id": "q1", "text": "alpha?"})
        + "\n"
        + json.dumps({"_id": "q9", "text": "other split"})
        + "\n"
    )
    (tmp_path / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\r\nq1\td1\t1\r\n")
    corpus, queries, qrels = read_beir_folder(tmp_path)
    assert list(queries) == ["q1"]
    assert corpus["d1"].full_text == "T alpha" and corpus["d2"].full_text == "beta"
    assert len(corpus) == 2 and "d2" in corpus
    assert corpus.texts(["d2", "d1"]) == ["beta", "T alpha"]
    fp = corpus.fingerprint()
    (tmp_path / "corpus.jsonl").write_text(
        json.dumps({"_id": "d1", "title": "T", "text": "changed"}) + "\n"
    )
    assert JsonlCorpus(tmp_path / "corpus.jsonl").fingerprint() != fp
    with pytest.raises(InputError, match="splits available.*test"):
        read_beir_folder(tmp_path, split="dev")


def test_jsonl_corpus_errors(tmp_path):
    p = tmp_path / "corpus.jsonl"
    p.write_text('{"_id": "a", "text": "x"}\n{not json}\n')
    with pytest.raises(FormatError, match="line 2"):
        len(JsonlCorpus(p))
    p.write_text('{"_id": "a", "text": "x"}\n{"_id": "a", "text": "y"}\n')
    with pytest.raises(DuplicateError):
        len(JsonlCorpus(p))


def test_json_run_and_sniffing(tmp_path):
    run = Run.from_dict({"q1": {"a": 1.0, "b": 3.0}})
    p = write_json_run(run, tmp_path / "run.json")
    assert read_json_run(p) == run
    assert load_run(p) == run
    ranked = tmp_path / "ranked.json"
    ranked.write_text(json.dumps({"q1": ["b", "a"]}))
    assert load_run(ranked).doc_ids("q1") == ["b", "a"]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"q1": {"a": "x"}}))
    with pytest.raises(FormatError, match="'q1'"):
        load_run(bad)


def test_in_memory_corpus_fingerprint_changes_with_text():
    a = InMemoryCorpus.from_dict({"d1": "x", "d2": {"title": "t", "text": "y"}})
    b = InMemoryCorpus.from_dict({"d1": "x", "d2": {"title": "t", "text": "z"}})
    assert a.fingerprint() != b.fingerprint()
    assert a["d2"].full_text == "t y"


def test_qrels_from_dict_equals_file(tmp_path):
    p = tmp_path / "q.txt"
    p.write_text("a 0 x 1\nb 0 y 3\n")
    assert read_qrels(p) == Qrels.from_dict({"b": {"y": 3}, "a": {"x": 1}})
