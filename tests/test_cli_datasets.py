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
    assert json.loads(local.stdout) == {
        "datasets": {"beir/scifact": str(local_scifact)},
        "patterns": {},  # no mMARCO on disk: the cross-lingual ids do not apply
    }


def test_list_json_carries_every_fact_of_the_table(local_scifact):
    """Issue 30, item 20: the folders (null: not on disk) and the id patterns, as the table."""
    table = CliRunner(env={"COLUMNS": "200"}).invoke(cli, ["datasets", "list"]).stdout
    js = json.loads(CliRunner().invoke(cli, ["datasets", "list", "--format", "json"]).stdout)
    assert list(js["datasets"]) == list_datasets()
    assert js["datasets"]["beir/scifact"] == str(local_scifact)
    assert js["datasets"]["beir/nfcorpus"] is None
    assert "mmarco/*/*" in js["patterns"] and "also (mmarco/*/*)" in table
    for did, folder in js["datasets"].items():  # every row of the table, and its folder
        row = next(r for r in table.splitlines() if f" {did} " in r)
        assert (folder or " - ") in row


def test_local_list_has_the_mmarco_footnote_only_with_mmarco_on_disk(local_scifact, tmp_path):
    local = CliRunner(env={"COLUMNS": "200"}).invoke(cli, ["datasets", "list", "--local"])
    assert local.exit_code == 0 and "beir/scifact" in local.stdout
    assert "mMARCO" not in local.stdout and "also (" not in local.stdout
    from test_mmarco_local import write_raw

    write_raw(tmp_path / "data", "german")  # a local mMARCO language: cross-lingual ids apply
    local = CliRunner(env={"COLUMNS": "200"}).invoke(cli, ["datasets", "list", "--local"])
    assert "mmarco/german" in local.stdout and "also (mmarco/*/*)" in local.stdout


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


def test_info_reads_as_words(local_scifact):
    """Issue 30, item 20: the family's name, the split, the files and their size; no import
    string, no ``split=None``; the fingerprint on request, equal to the loaded dataset's."""
    out = CliRunner(env={"COLUMNS": "200"}).invoke(cli, ["datasets", "info", "beir/scifact"])
    assert out.exit_code == 0, out.output
    text = out.stdout
    assert ":FAMILY" not in text and "nuggetbench.datasets" not in text and "=None" not in text
    rows = {
        line.split("│")[1].strip(): line.split("│")[2].strip()
        for line in text.splitlines()
        if line.count("│") == 3 and line.split("│")[1].strip()
    }
    assert rows["family"] == "beir"
    assert rows["split"].startswith("test (the default")
    size = sum(p.stat().st_size for p in local_scifact.rglob("*") if p.is_file())
    assert rows["files"] == f"{local_scifact} (3 files, {size} bytes)"
    assert rows["fingerprint"].startswith("not computed")
    fp = CliRunner(env={"COLUMNS": "200"}).invoke(
        cli, ["datasets", "info", "beir/scifact", "--fingerprint"]
    )
    assert f"{load_dataset('beir/scifact').fingerprint()} (split test)" in fp.stdout
    js = json.loads(
        CliRunner().invoke(cli, ["datasets", "info", "beir/scifact", "--format", "json"]).stdout
    )
    assert js["family"] == "beir" and js["files"] == {
        "path": str(local_scifact),
        "files": 3,
        "bytes": size,
    }
    assert js["options"]["split"]["default"] is None and js["options"]["download"]["default"]


def test_info_of_a_dataset_not_on_disk_says_where_it_goes():
    out = CliRunner(env={"COLUMNS": "200"}).invoke(cli, ["datasets", "info", "beir/nfcorpus"])
    assert "not on disk; downloaded on first use into" in out.stdout
    assert "not computed" in out.stdout


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
