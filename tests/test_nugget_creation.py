"""``nuggetbench nuggets`` against the loopback server: creation from the relevant documents in
windows of 10 (each window's reply = the nuggets so far + each document's first sentence, at most
30), then vital/okay (vital: the nugget holds the word "important"); the result feeds ``answers``."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from llm_server import LLMServer
from nuggetbench.cli import cli
from nuggetbench.judging.document_nuggets import relevant_documents, validate_importance
from nuggetbench.llm.jsonout import InvalidAnswer


@pytest.fixture()
def server(monkeypatch):
    with LLMServer(hang_seconds=10) as srv:
        monkeypatch.setenv("NUGGETBENCH_LLM_BASE_URL", srv.base_url)
        yield srv


def _invoke(*args):
    result = CliRunner().invoke(cli, [*args, "--no-progress"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


def _dataset(tmp_path):
    """q0: 35 relevant documents (grades 1-2) and 5 non-relevant; q1: 4 relevant; q2: none."""
    folder = tmp_path / "ds"
    (folder / "qrels").mkdir(parents=True)
    grades = {
        "q0": {f"d0_{i:02d}": (0 if i >= 35 else 1 + i % 2) for i in range(40)},
        "q1": {f"d1_{i:02d}": 1 for i in range(4)},
        "q2": {"d2_00": 0},
    }
    with open(tmp_path / "ds" / "queries.jsonl", "w") as fh:
        for q in grades:
            fh.write(json.dumps({"_id": q, "text": f"what is {q}?"}) + "\n")
    with open(folder / "corpus.jsonl", "w") as fh:
        for docs in grades.values():
            for d in docs:
                word = "important" if int(d[-2:]) % 3 == 0 else "minor"
                fh.write(
                    json.dumps(
                        {"_id": d, "title": "", "text": f"F{d} is an {word} fact. More text."}
                    )
                    + "\n"
                )
    with open(folder / "qrels" / "test.tsv", "w") as fh:
        fh.write("query-id\tcorpus-id\tscore\n")
        for q, docs in grades.items():
            for d, g in docs.items():
                fh.write(f"{q}\t{d}\t{g}\n")
    return folder, grades


def test_nuggets_from_relevant_documents_then_scored_answers(server, tmp_path):
    folder, grades = _dataset(tmp_path)
    out = tmp_path / "nuggets.jsonl"
    shown = json.loads(
        _invoke("nuggets", str(folder), "--model", "m", "-o", str(out), "--format", "json")
    )
    rows = {r["qid"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert set(rows) == {"q0", "q1"}  # q2 has no relevant document
    for q, row in rows.items():
        rel = sorted(((d, g) for d, g in grades[q].items() if g >= 1), key=lambda t: (-t[1], t[0]))
        expected = [
            f"F{d} is an {'important' if int(d[-2:]) % 3 == 0 else 'minor'} fact." for d, _ in rel
        ][:30]
        assert [n["text"] for n in row["nuggets"]] == expected
        assert [n["importance"] for n in row["nuggets"]] == [
            "vital" if "important" in t else "okay" for t in expected
        ]
    assert shown["creation_windows"] == 4 + 1  # 35 documents in windows of 10, and 4
    assert shown["importance_windows"] == 3 + 1  # 30 nuggets, and 4
    assert (
        shown["requests_sent"]
        == 9
        == len(server.answered("create")) + len(server.answered("importance"))
    )
    # the nuggets feed `answers`
    answers = tmp_path / "sys.jsonl"
    pick = next(i for i, n in enumerate(rows["q0"]["nuggets"]) if n["importance"] == "vital")
    first = rows["q0"]["nuggets"][pick]["text"].split()[0]
    answers.write_text(json.dumps({"query_id": "q0", "answer": f"It says +{first}."}) + "\n")
    scored = json.loads(
        _invoke("answers", str(out), str(answers), "--model", "m", "--format", "json")
    )
    vital = sum(n["importance"] == "vital" for n in rows["q0"]["nuggets"])
    assert scored["results"]["sys"]["all_score"] == pytest.approx((1 / 30 + 0) / 2)
    assert scored["results"]["sys"]["vital_score"] == pytest.approx((1 / vital) / 2)
    n = len(server.log)
    again = json.loads(
        _invoke("nuggets", str(folder), "--model", "m", "-o", str(out), "--format", "json")
    )
    assert again["requests_sent"] == 0 and len(server.log) == n


def test_unusable_answers_leave_the_query_out_and_reported(server, tmp_path):
    folder, _ = _dataset(tmp_path)
    server.malformed, server.malformed_repairs = 1.0, True
    result = CliRunner().invoke(
        cli,
        [
            "nuggets",
            str(folder),
            "--model",
            "m",
            "-o",
            str(tmp_path / "n.jsonl"),
            "--max-repairs",
            "1",
            "--format",
            "json",
            "--no-progress",
        ],
    )
    assert result.exit_code == 0
    shown = json.loads(result.stdout)
    assert set(shown["failed"]) == {"q0", "q1"} and shown["queries"] == 0
    assert (tmp_path / "n.jsonl").read_text() == ""


def test_helpers():
    assert relevant_documents({"b": 1, "a": 1, "c": 2, "z": 0}, 1) == ["c", "a", "b"]
    assert validate_importance('{"importance": ["Vital", "okay"]}', n=2) == ["vital", "okay"]
    for bad in ('{"importance": ["vital"]}', '{"importance": ["high", "okay"]}', "vital, okay"):
        with pytest.raises(InvalidAnswer):
            validate_importance(bad, n=2)


def test_strict_fails_when_a_query_got_no_nuggets(server, tmp_path):
    """``--strict`` as on ``judge``: unusable answers (after their re-asks) are an error, and the
    file is still written, without those queries."""
    folder, _ = _dataset(tmp_path)
    out = tmp_path / "n.jsonl"
    args = ["nuggets", str(folder), "--model", "m", "-o", str(out), "--no-progress", "--strict"]
    assert json.loads(_invoke(*args, "--format", "json"))["failed"] == {}  # all usable: exit 0
    server.malformed, server.malformed_repairs = 1.0, True
    result = CliRunner().invoke(cli, [*args, "--model", "m2", "--max-repairs", "0"])
    assert result.exit_code != 0
    assert "--strict: 2 queries' answers stayed unusable" in str(result.exception)
    assert type(result.exception).__name__ == "LLMError"  # exit 2 from the entry point
    assert out.read_text() == ""  # still written: q0 and q1 failed, q2 has no relevant document
