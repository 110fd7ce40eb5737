"""Datasets say what is wrong (issue 29, cases 11, 12 and 20)."""

from __future__ import annotations

import json

from click.testing import CliRunner

from nuggetbench.cli import cli
from nuggetbench.errors import FormatError


def _folder(tmp_path, docs, qrels="q1\td1\t1\n"):
    folder = tmp_path / "tiny"
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    (folder / "queries.jsonl").write_text('{"_id": "q1", "text": "cats purr"}\n')
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + qrels)
    return folder


def test_a_document_without_text_is_an_error_naming_file_line_and_keys(tmp_path):
    docs = [
        {"_id": "d1", "title": "Cats", "text": "cats purr"},
        {"_id": "d2", "title": "Dogs", "body": "dogs bark"},  # indexed by its title only, before
    ]
    folder = _folder(tmp_path, docs)
    result = CliRunner().invoke(cli, ["run", str(folder), "-r", "bm25", "-o", str(tmp_path / "o")])
    assert isinstance(result.exception, FormatError)
    text = str(result.exception)
    assert "corpus.jsonl" in text and "line 2" in text and "'body'" in text and "'text'" in text


def test_an_empty_text_is_still_a_document(tmp_path):
    docs = [{"_id": "d1", "title": "Cats purr", "text": ""}, {"_id": "d2", "text": "dogs"}]
    result = CliRunner().invoke(
        cli, ["run", str(_folder(tmp_path, docs)), "-r", "bm25", "-o", str(tmp_path / "o")]
    )
    assert result.exit_code == 0, result.output


def test_run_warns_about_judged_documents_missing_from_the_corpus(tmp_path):
    docs = [{"_id": "d1", "text": "cats purr"}, {"_id": "d2", "text": "dogs bark"}]
    folder = _folder(tmp_path, docs, qrels="q1\td1\t1\nq1\tgone7\t2\n")
    result = CliRunner().invoke(
        cli, ["run", str(folder), "-r", "bm25", "-o", str(tmp_path / "o"), "--no-progress"]
    )
    assert result.exit_code == 0, result.output
    shown = " ".join(result.output.split())
    assert "1 of 2 relevant judged documents are not in the corpus" in shown and "gone7" in shown
    assert shown.count("relevant judged documents are not in the corpus") == 1


def test_datasets_info_describes_a_local_folder(tmp_path):
    folder = _folder(tmp_path, [{"_id": "d1", "text": "cats"}])
    result = CliRunner().invoke(cli, ["datasets", "info", str(folder), "--format", "json"])
    assert result.exit_code == 0, result.output
    facts = json.loads(result.stdout)
    assert facts["loader"] == "local beir folder" and facts["family"] == "beir"
    assert facts["files"]["files"] == 3 and facts["files"]["path"] == str(folder)
    assert "remove_self_hits" in facts["options"]
    missing = CliRunner().invoke(cli, ["datasets", "info", str(tmp_path / "nope")])
    assert missing.exit_code != 0 and "not a folder" in str(missing.exception)


def test_an_output_path_under_a_file_names_the_real_cause(tmp_path, capsys):
    import pytest

    from nuggetbench.cli import main

    folder = _folder(tmp_path, [{"_id": "d1", "text": "cats"}])
    (tmp_path / "afile").write_text("x")
    with pytest.raises(SystemExit) as info:
        main(["run", str(folder), "-r", "bm25", "-o", str(tmp_path / "afile" / "sub")])
    err = " ".join(capsys.readouterr().err.split())
    assert info.value.code == 2
    assert "a file, not a folder" in err and "Free some space" not in err and "Traceback" not in err
