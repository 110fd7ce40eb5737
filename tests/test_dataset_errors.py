"""Datasets say what is wrong (issue 29, item 8; cases 11, 12, 20): a document without text is an
error unless a field is named, ``run`` warns of judged documents outside the corpus as
``evaluate`` does, and errors name the real cause (missing, a file, permission, not a folder)."""

from __future__ import annotations

import errno
import json

import pytest
from click.testing import CliRunner

import nuggetbench.experiment as experiment
from nuggetbench import Experiment
from nuggetbench.cli import cli, main
from nuggetbench.datasets import dataset_info, load_dataset
from nuggetbench.errors import DatasetError, FormatError, InputError

DOCS = {
    "d1": ("Turbines", "the turbine spins clockwise"),
    "d2": ("Widgets", "widgets are frobnicated at a level"),
    "d3": ("Pancakes", "pancakes tunnel through barriers"),
    "d4": ("Pip", "install widgets with pip"),
}
QUERIES = {"q1": "spins clockwise", "q2": "frobnicated level", "q3": "tunnel barriers"}
QRELS = [("q1", "d1", 1), ("q2", "d2", 1), ("q3", "d3", 1)]


def _folder(root, field="text", qrels=QRELS):
    folder = root / f"ds_{field}"
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text(
        "".join(
            json.dumps({"_id": d, "title": title, field: text}) + "\n"
            for d, (title, text) in DOCS.items()
        )
    )
    (folder / "queries.jsonl").write_text(
        "".join(json.dumps({"_id": q, "text": t}) + "\n" for q, t in QUERIES.items())
    )
    (folder / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t{r}\n" for q, d, r in qrels)
    )
    return folder


def test_a_document_without_text_is_an_error_naming_the_field(tmp_path):
    """Case 11: a corpus with ``body`` instead of ``text`` is not indexed by its titles."""
    folder = _folder(tmp_path, "body")
    result = CliRunner().invoke(cli, ["run", str(folder), "-r", "bm25", "-o", str(tmp_path / "o")])
    assert result.exit_code != 0
    assert isinstance(result.exception, FormatError)
    message = str(result.exception)
    assert "corpus.jsonl, line 1: document 'd1' has no 'text' field" in message
    assert "(its fields: _id, title, body)" in message and "-O text_field=body" in message


def test_a_named_text_field_is_indexed_as_text(tmp_path):
    body, text = _folder(tmp_path, "body"), _folder(tmp_path, "text")
    means = {}
    for name, folder, opts in (("body", body, ["-O", "text_field=body"]), ("text", text, [])):
        out = tmp_path / f"out_{name}"
        result = CliRunner().invoke(
            cli, ["run", str(folder), "-r", "bm25", "-m", "nDCG@10", "-o", str(out), *opts]
        )
        assert result.exit_code == 0, result.output
        means[name] = Experiment.load(out).means()["bm25"]["nDCG@10"]
    assert means["body"] == means["text"] == pytest.approx(1.0)
    ds_body = load_dataset(str(body), text_field="body")
    assert ds_body.corpus["d2"].text == "widgets are frobnicated at a level"
    assert "body" not in ds_body.corpus["d2"].metadata
    # the same bytes read with another field are another corpus (the run cache keys on it)
    assert ds_body.corpus.fingerprint() != load_dataset(str(body)).corpus.fingerprint()
    with pytest.raises(FormatError, match="has no 'summary' field"):
        list(load_dataset(str(text), text_field="summary").corpus.iter_documents())


def test_run_warns_of_judged_documents_outside_the_corpus(tmp_path):
    """Case 12: as ``evaluate`` does."""
    folder = _folder(tmp_path, qrels=[*QRELS, ("q1", "d9", 1)])
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["run", str(folder), "-r", "bm25", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "1 of 4 relevant judged documents are not in the corpus" in result.output
    assert "'d9'" in result.output
    evaluated = CliRunner().invoke(cli, ["evaluate", str(folder), str(out / "runs" / "bm25.trec")])
    assert "1 of 4 relevant judged documents are not in the corpus" in evaluated.output
    saved = json.loads((out / "results.json").read_text())
    assert sum("not in the corpus" in note for note in saved["notes"]) == 1
    again = CliRunner().invoke(
        cli, ["run", str(folder), "-r", "bm25:k1=0.5", "-o", str(out), "--append"]
    )
    assert again.exit_code == 0, again.output
    saved = json.loads((out / "results.json").read_text())
    assert sum("not in the corpus" in note for note in saved["notes"]) == 1  # not repeated
    clean = CliRunner().invoke(
        cli, ["run", str(_folder(tmp_path / "c")), "-r", "bm25", "-o", str(tmp_path / "o2")]
    )
    assert clean.exit_code == 0 and "not in the corpus" not in clean.output


def test_datasets_info_describes_a_local_folder(tmp_path):
    """Case 20: ``datasets info PATH`` of a BEIR folder, not "unknown dataset"."""
    folder = _folder(tmp_path)
    facts = dataset_info(str(folder))
    assert facts["family"] == "beir" and "text_field" in facts["options"]
    assert facts["files"]["files"] == 3
    result = CliRunner().invoke(cli, ["datasets", "info", str(folder)])
    assert result.exit_code == 0, result.output
    assert "unknown dataset" not in result.output and "beir" in result.output
    with pytest.raises(DatasetError, match="does not exist"):
        dataset_info(str(tmp_path / "nowhere"))
    (tmp_path / "afile").write_text("x")
    with pytest.raises(DatasetError, match="is a file, not a dataset folder"):
        load_dataset(str(tmp_path / "afile"))


def test_errors_name_the_real_cause(tmp_path, capsys, monkeypatch):
    """Case 20: a corpus that is a folder, ``-o`` under a file, a folder we may not write."""
    folder = _folder(tmp_path)
    broken = _folder(tmp_path / "b")
    (broken / "corpus.jsonl").unlink()
    (broken / "corpus.jsonl").mkdir()
    with pytest.raises(InputError, match="corpus.jsonl is a folder, not a file of JSON lines"):
        load_dataset(str(broken))

    (tmp_path / "afile").write_text("x")
    with pytest.raises(SystemExit):
        main(["run", str(folder), "-r", "bm25", "-o", str(tmp_path / "afile" / "out")])
    err = capsys.readouterr().err
    assert "Not a directory" in err and "a file, not a folder" in err
    assert "Free some space" not in err

    def denied(path, command="nuggetbench run", **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied", str(path))

    monkeypatch.setattr(experiment, "folder_lock", denied)
    with pytest.raises(SystemExit):
        main(["run", str(folder), "-r", "bm25", "-o", str(tmp_path / "ro")])
    err = capsys.readouterr().err
    assert "Permission denied" in err and "Check its permissions" in err
    assert "Free some space" not in err
