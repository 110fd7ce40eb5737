"""``nuggetbench datasets list|info`` (issue 18, point 9): local availability, counts, a table."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from nuggetbench.cli import cli
from nuggetbench.datasets import list_datasets, load_dataset
from nuggetbench.errors import InputError, UnknownNameError


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
    assert line.rstrip().endswith("yes")  # on disk; its folder is listed under the table
    assert f"  beir/scifact  {local_scifact}" in out.output.split("on disk:")[1]
    nf = next(row for row in out.output.splitlines() if "beir/nfcorpus" in row)
    assert nf.rstrip().endswith("-") and "data" not in nf
    assert "mmarco/*/*" not in list_datasets()
    local = CliRunner().invoke(cli, ["datasets", "list", "--local", "--format", "json"])
    js = json.loads(local.stdout)
    assert js["datasets"] == {"beir/scifact": str(local_scifact)}
    assert js["patterns"] == {}  # no mMARCO on disk: the cross-lingual ids do not apply
    assert js["facts"]["beir/scifact"]["queries"] == 300  # declared (BEIR's), not counted here


def test_list_json_carries_every_fact_of_the_table(local_scifact):
    """Issue 30, item 20: the folders (null: not on disk) and the id patterns, as the table."""
    table = CliRunner(env={"COLUMNS": "200"}).invoke(cli, ["datasets", "list"]).stdout
    js = json.loads(CliRunner().invoke(cli, ["datasets", "list", "--format", "json"]).stdout)
    assert sorted(js["datasets"]) == list_datasets()  # in the table's order: by family
    assert js["datasets"]["beir/scifact"] == str(local_scifact)
    assert js["datasets"]["beir/nfcorpus"] is None
    assert "mmarco/*/*" in js["patterns"] and "also (mmarco/*/*)" in table
    body = table.split("on disk:")[0]
    for did, folder in js["datasets"].items():  # every row of the table, and its folder
        row = next(r for r in body.splitlines() if r.startswith(f"{did} "))
        assert row.rstrip().endswith("yes" if folder else "-")
        facts = js["facts"][did]
        if facts and facts["queries"] is not None:
            assert f"{facts['queries']:,}" in row
        if folder:
            assert f"{did}  {folder}" in table.split("on disk:")[1]


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


def test_list_filters_by_id_part_and_description_words():
    """Issue 37: ``datasets list beir`` (an id's start), a part of an id, a word of what it is,
    an id pattern; several words list what any of them matches; no match is one error line."""
    runner = CliRunner(env={"COLUMNS": "200"})

    def listed(*words):
        out = runner.invoke(cli, ["datasets", "list", *words, "--format", "json"])
        assert out.exit_code == 0, out.output
        return set(json.loads(out.stdout)["datasets"])

    assert listed("beir") == {d for d in list_datasets() if d.startswith("beir/")}
    assert listed("covid") == {"beir/trec-covid"}
    assert listed("medical") == {"beir/trec-covid", "beir/nfcorpus"}  # "bio-medical"
    assert listed("miracl/?e") == {"miracl/de", "miracl/te"}
    assert listed("scifact", "fastbook") == {"beir/scifact", "fastbook"}
    none = runner.invoke(cli, ["datasets", "list", "nosuchthing"])  # main() says it, exit 2
    assert isinstance(none.exception, InputError)
    assert "no dataset matches 'nosuchthing'" in str(none.exception)


def test_declared_facts_cover_every_id_and_agree_with_the_real_files(shared_data):
    """The numbers ``datasets list`` shows before any download are the source's: every id
    but FreshStack's topics has them, and SciFact's equal what its real files hold."""
    from nuggetbench.datasets import catalog

    assert set(catalog.FACTS) == set(list_datasets())
    missing = [d for d, f in catalog.FACTS.items() if f.queries is None]
    assert all(d.startswith("freshstack/") for d in missing)
    facts = catalog.facts("beir/scifact")
    folder = shared_data / "beir" / "scifact"
    lines = lambda p: sum(1 for line in p.open("rb") if line.strip())  # noqa: E731
    assert facts.documents == lines(folder / "corpus.jsonl")
    assert facts.judgments == lines(folder / "qrels" / "test.tsv") - 1  # its header
    ds = load_dataset(folder)
    assert facts.queries == len(ds.queries) and facts.splits[0] == ds.split == "test"
    assert catalog.facts("fastbook").queries == 191
    for name, size in (("scifact", 2816079), ("arguana", 3773617)):  # the archives' sizes
        assert catalog.facts(f"beir/{name}").download == size


def test_list_at_80_columns_never_splits_an_id_or_a_path(tmp_path, monkeypatch):
    """Issue 37: at 80 columns the folder of a dataset on disk was folded mid-word inside the
    table ('bench|mark-datasets'); now each folder is printed whole under the table, on the
    id's line when it fits, else on a line of its own, and no table line is wider than 80."""
    deep = tmp_path / ("a-rather-long-folder-name-of-our-shared-lab-storage" + "/x" * 10)
    folder = deep / "beir" / "scifact"
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text('{"_id": "d", "text": "x"}\n')
    monkeypatch.setenv("NUGGETBENCH_DATA", str(deep))
    out = CliRunner(env={"COLUMNS": "80"}).invoke(cli, ["datasets", "list"])
    assert out.exit_code == 0, out.output
    table, after = out.output.split("on disk:")
    assert all(len(line) <= 80 for line in table.splitlines()), table
    for did in list_datasets():  # every id whole, at the start of its row
        assert any(line.startswith(f"{did} ") for line in table.splitlines()), did
    assert f"\n  beir/scifact\n    {folder}\n" in after  # the path whole, on its own line
    paths = CliRunner(env={"COLUMNS": "80"}).invoke(cli, ["datasets", "list", "--paths"])
    assert paths.output == f"beir/scifact\t{folder}\n"
