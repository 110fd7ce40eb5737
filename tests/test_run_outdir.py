"""``run -o DIR`` reused (issue 18, point 10): refused unless --overwrite or --append."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from nuggetbench import Experiment
from nuggetbench.cli import cli


@pytest.fixture()
def folder(tmp_path):
    folder = tmp_path / "ds"
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text(
        "\n".join(
            json.dumps({"_id": f"d{i}", "title": "", "text": f"word{i} common thing{i % 2}"})
            for i in range(6)
        )
    )
    (folder / "queries.jsonl").write_text(
        json.dumps({"_id": "q1", "text": "word1 thing1"})
        + "\n"
        + json.dumps({"_id": "q2", "text": "word4"})
    )
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td4\t1\n")
    return folder


def _run(folder, out, *args):
    return CliRunner().invoke(cli, ["run", str(folder), "-m", "RR", "-o", str(out), *args])


def test_reused_output_is_refused_then_overwritten_or_appended(folder, tmp_path):
    out = tmp_path / "out"
    assert _run(folder, out, "-r", "bm25").exit_code == 0
    before = (out / "results.json").read_bytes()
    again = _run(folder, out, "-r", "bm25:k1=0.5")
    assert again.exit_code != 0
    assert "--append" in str(again.exception) and "--overwrite" in str(again.exception)
    assert (out / "results.json").read_bytes() == before  # nothing touched
    assert not (out / "runs" / "bm25_k1=0.5.trec").exists()

    appended = _run(folder, out, "-r", "bm25:k1=0.5", "--append")
    assert appended.exit_code == 0, appended.output
    exp = Experiment.load(out)
    assert list(exp.systems) == ["bm25", "bm25:k1=0.5"]
    assert sorted(p.name for p in (out / "runs").iterdir()) == ["bm25.trec", "bm25_k1=0.5.trec"]
    saved = json.loads((out / "results.json").read_text())
    assert saved["comparison"]["systems"] == ["bm25", "bm25:k1=0.5"]

    twice = _run(folder, out, "-r", "bm25", "--append")
    assert twice.exit_code != 0 and "already in" in str(twice.exception)
    other = CliRunner().invoke(
        cli, ["run", str(folder), "-m", "AP", "-o", str(out), "-r", "bm25:b=0.5", "--append"]
    )
    assert other.exit_code != 0 and "same settings" in str(other.exception)

    replaced = _run(folder, out, "-r", "bm25:b=0.3", "--overwrite")
    assert replaced.exit_code == 0, replaced.output
    assert list(Experiment.load(out).systems) == ["bm25:b=0.3"]
    assert sorted(p.name for p in (out / "runs").iterdir()) == ["bm25_b=0.3.trec"]
    both = _run(folder, out, "-r", "bm25", "--overwrite", "--append")
    assert both.exit_code != 0


def test_one_query_experiment_keeps_its_scores(tmp_path):
    folder = tmp_path / "one"
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text(
        "\n".join(json.dumps({"_id": f"d{i}", "title": "", "text": f"word{i} x"}) for i in range(3))
    )
    (folder / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "word1"}))
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    out = CliRunner().invoke(
        cli,
        [
            "run",
            str(folder),
            "-r",
            "bm25",
            "-r",
            "bm25:k1=0.5",
            "-m",
            "RR",
            "-o",
            str(tmp_path / "o"),
        ],
    )
    assert out.exit_code == 0, out.output
    # one query: the means are compared, their intervals and tests are unavailable (issue 35;
    # before, the comparison was refused as a whole)
    assert "1.0000" in out.stdout and "n/a" in out.stdout
    assert "RR: 1 query has a value for every system" in out.stderr
    saved = json.loads((tmp_path / "o" / "results.json").read_text())
    assert saved["systems"]["bm25"]["means"]["RR"] == 1.0
    diff = saved["comparison"]["differences"][0]
    assert diff["diff"] == 0.0 and diff["p_value"] is None and diff["significant"] is False
    assert saved["comparison"]["estimates"][0]["ci_low"] is None
    assert "report written" in CliRunner().invoke(cli, ["report", str(tmp_path / "o")]).output
