"""Output folders under a second writer, --overwrite and interruptions (issue 29, cases 13, 14,
15 and 19)."""

from __future__ import annotations

import json
import os

import pytest
from click.testing import CliRunner

from nuggetbench.cli import cli
from nuggetbench.errors import OutputError
from nuggetbench.experiment import Experiment
from nuggetbench.outfolder import folder_lock

pytestmark = pytest.mark.skipif(os.name != "posix", reason="the lock is fcntl.flock")


@pytest.fixture()
def tiny(tmp_path):
    folder = tmp_path / "tiny"
    (folder / "qrels").mkdir(parents=True)
    docs = {"d1": "cats purr loudly", "d2": "dogs bark", "d3": "birds sing songs"}
    (folder / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": k, "text": v}) + "\n" for k, v in docs.items())
    )
    (folder / "queries.jsonl").write_text(
        '{"_id": "q1", "text": "cats purr"}\n{"_id": "q2", "text": "birds sing"}\n'
    )
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td3\t1\n")
    return folder


def _run(tiny, out, *extra):
    args = ["run", str(tiny), "-m", "AP", "-o", str(out), "--no-progress", *extra]
    return CliRunner().invoke(cli, args)


def test_a_second_writer_is_refused_naming_the_holder(tiny, tmp_path):
    out = tmp_path / "out"
    with folder_lock(out):
        result = _run(tiny, out, "-r", "bm25")
        assert isinstance(result.exception, OutputError)
        assert f"pid {os.getpid()}" in str(result.exception) and "another -o" in str(
            result.exception
        )
        assert not (out / "results.json").exists()
    assert _run(tiny, out, "-r", "bm25").exit_code == 0  # released with the block


def test_a_failed_overwrite_leaves_the_old_results(tiny, tmp_path):
    out = tmp_path / "out"
    assert _run(tiny, out, "-r", "bm25").exit_code == 0
    before = (out / "results.json").read_text()
    run_before = (out / "runs" / "bm25.trec").read_text()
    failing = "bm25 >> llm_listwise(model=m,k=2,no_api_key=true,base_url=http://127.0.0.1:9/v1,"
    failing += "max_retries=0,timeout=2)"  # nothing listens on port 9: fails after bm25:k1=0.5
    result = _run(tiny, out, "-r", "bm25:k1=0.5", "-r", failing, "--overwrite")
    assert result.exit_code != 0
    assert (out / "results.json").read_text() == before  # case 14: nothing lost
    assert (out / "runs" / "bm25.trec").read_text() == run_before
    assert sorted(p.name for p in (out / "runs").iterdir()) == ["bm25.trec"]
    assert [p.name for p in out.iterdir() if p.name.startswith(".previous")] == []
    # a successful overwrite replaces what the old results named
    assert _run(tiny, out, "-r", "bm25:k1=0.5", "--overwrite").exit_code == 0
    assert sorted(p.name for p in (out / "runs").iterdir()) == ["bm25_k1=0.5.trec"]
    assert list(json.loads((out / "results.json").read_text())["systems"]) == ["bm25:k1=0.5"]


def test_overwrite_deletes_only_what_its_results_name(tiny, tmp_path):
    out = tmp_path / "out"
    (out / "runs").mkdir(parents=True)
    (out / "runs" / "mine.trec").write_text("q1 Q0 d2 1 1.0 mine\n")
    assert _run(tiny, out, "-r", "bm25").exit_code != 0  # not ours: refused without --overwrite
    assert _run(tiny, out, "-r", "bm25", "--overwrite").exit_code == 0
    assert (out / "runs" / "mine.trec").read_text() == "q1 Q0 d2 1 1.0 mine\n"  # case 15
    (out / "runs" / "other.trec").write_text("q1 Q0 d2 1 1.0 other\n")
    assert _run(tiny, out, "-r", "bm25:k1=0.5", "--overwrite").exit_code == 0
    names = sorted(p.name for p in (out / "runs").iterdir())
    assert names == ["bm25_k1=0.5.trec", "mine.trec", "other.trec"]


def test_an_interrupted_run_says_so_in_report(tiny, tmp_path):
    out = tmp_path / "out"
    assert _run(tiny, out, "-r", "bm25", "-r", "bm25:k1=0.5").exit_code == 0
    saved = json.loads((out / "results.json").read_text())
    del saved["provenance"]["finished"]  # what kill -9 after the first system leaves
    del saved["systems"]["bm25:k1=0.5"]
    (out / "results.json").write_text(json.dumps(saved))
    note = " ".join(Experiment.load(out).notes)
    assert "did not finish" in note and "1 of the 2 systems" in note and "bm25:k1=0.5" in note
    result = CliRunner().invoke(cli, ["report", str(out), "-o", str(tmp_path / "r.html")])
    assert result.exit_code == 0, result.output
    assert "did not finish" in " ".join(result.output.split())


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (lambda d, s: s["means"].__setitem__("AP", "high"), "AP: expected a number, got 'high'"),
        (lambda d, s: s["per_query"]["AP"].__setitem__(0, "x"), "expected a number, got 'x'"),
        (lambda d, s: d.pop("measures"), "'measures' must be a list"),
        (lambda d, s: s["means"].__setitem__("AP", 0.99), "means.AP = 0.99 but its per-query"),
        (lambda d, s: s["per_query"]["AP"].__setitem__(0, 7.5), "but its per-query values"),
        (lambda d, s: s["per_query"]["AP"].pop(), "needs one value per query"),
    ],
)
def test_report_checks_an_edited_results_file(tiny, tmp_path, edit, expected):
    out = tmp_path / "out"
    assert _run(tiny, out, "-r", "bm25").exit_code == 0
    saved = json.loads((out / "results.json").read_text())
    edit(saved, saved["systems"]["bm25"])
    (out / "results.json").write_text(json.dumps(saved))
    result = CliRunner().invoke(cli, ["report", str(out), "-o", str(tmp_path / "r.html")])
    assert result.exit_code != 0
    message = str(result.exception)
    assert expected in message and "results.json" in message and "\n" not in message


def test_report_refuses_deeply_nested_json(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "results.json").write_text("[" * 100000 + "]" * 100000)
    result = CliRunner().invoke(cli, ["report", str(out), "-o", str(tmp_path / "r.html")])
    assert result.exit_code != 0 and "nested too deeply" in str(result.exception)
