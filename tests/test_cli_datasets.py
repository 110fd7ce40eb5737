"""``nuggetbench datasets list|info`` (issue 18, point 9): local availability, counts, a table."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from nuggetbench.cli import cli
from nuggetbench.datasets import list_datasets, load_dataset
from nuggetbench.errors import UnknownNameError


@pytest.fixture()
def local_scifact(tmp_path, monkeypatch):
    folder = tmp_path / "data" / "beir" / "scifact"
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": f"d{i}", "title": "", "text": "x"}) + "\n" for i in range(7))
    )
    (folder / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "x"}) + "\n\n")
    (folder / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\r\nq1\td1\t1\r\nq1\td2\t1\r\n"
    )
    monkeypatch.setenv("NUGGETBENCH_DATA", str(tmp_path / "data"))
    return folder


def test_list_shows_local_folders_and_no_pattern_rows(local_scifact):
    out = CliRunner(env={"COLUMNS": "200"}).invoke(cli, ["datasets", "list"])
    assert out.exit_code == 0
    line = next(row for row in out.output.splitlines() if "beir/scifact " in row)
    assert str(local_scifact) in line
    nf = next(row for row in out.output.splitlines() if "beir/nfcorpus" in row)
    assert "-" in nf and "data" not in nf
    assert "mmarco/*/*" not in list_datasets()
    local = CliRunner().invoke(cli, ["datasets", "list", "--local", "--format", "json"])
    assert json.loads(local.stdout) == {"beir/scifact": str(local_scifact)}


def test_info_is_a_table_with_counts_when_local(local_scifact):
    out = CliRunner(env={"COLUMNS": "200"}).invoke(cli, ["datasets", "info", "beir/scifact"])
    assert out.exit_code == 0 and not out.stdout.lstrip().startswith("{")
    assert "documents: 7" in out.stdout and "queries: 1" in out.stdout
    assert "judgments (test): 2" in out.stdout
    js = json.loads(
        CliRunner().invoke(cli, ["datasets", "info", "beir/scifact", "--format", "json"]).stdout
    )
    assert js["counts"] == {"documents": 7, "queries": 1, "judgments (test)": 2}
    ds = load_dataset("beir/scifact")  # the counts agree with the loaded dataset
    assert (len(ds.corpus), len(ds.queries), ds.qrels.n_judgments) == (7, 1, 2)


def test_unknown_dataset_points_to_datasets_list():
    with pytest.raises(UnknownNameError, match="nuggetbench datasets list"):
        load_dataset("beir/scifakt")


def test_info_counts_of_other_families_when_local(shared_data, monkeypatch):
    monkeypatch.setenv("NUGGETBENCH_DATA", str(shared_data))
    from nuggetbench.datasets import dataset_info

    assert dataset_info("fastbook")["counts"] == {
        "questions": 191,
        "answer components": 357,
        "notebooks": 7,
    }  # as the data README records
    birco = dataset_info("birco/arguana")["counts"]
    assert birco["queries"] == 100 and birco["documents"] > 0 and birco["judgments"] > 0
    assert dataset_info("freshstack/langchain")["counts"] is None  # not local: no counts
