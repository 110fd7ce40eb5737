"""A full disk while saving: the scores are still printed, what could not be saved is named, and
the exit status is non-zero (issue 13, case 12).

The disk is filled by injection at the writers, without root: every temporary file that our atomic
writers create under the home folder (``nuggetbench._atomic.make_temp`` beside the target) is opened on
``/dev/full``, so its writes fail with ``ENOSPC`` exactly as on a full file system.
"""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest

from build_fixtures import make_inputs, write_plan
from nuggetbench import _atomic
from nuggetbench.cli import main
from nuggetbench.datasets import load_dataset
from nuggetbench.experiment import run_experiment

pytestmark = pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")

DOCS = {
    "d1": "the turbine spins clockwise",
    "d2": "widgets are frobnicated at a level",
    "d3": "pancakes tunnel through barriers",
    "d4": "install widgets with pip",
}
QUERIES = {"q1": "turbine spin", "q2": "frobnicate widgets level", "q3": "pancakes tunnel"}
QRELS = [("q1", "d1", 1), ("q2", "d2", 2), ("q2", "d4", 1), ("q3", "d3", 1)]


@pytest.fixture()
def dataset(tmp_path) -> Path:
    folder = tmp_path / "data" / "tiny"
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": k, "title": "", "text": v}) + "\n" for k, v in DOCS.items())
    )
    (folder / "queries.jsonl").write_text(
        "".join(json.dumps({"_id": k, "text": v}) + "\n" for k, v in QUERIES.items())
    )
    (folder / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t{r}\n" for q, d, r in QRELS)
    )
    return folder


@pytest.fixture()
def full_home(tmp_path, monkeypatch) -> Path:
    root = (tmp_path / "home").resolve()
    root.mkdir()
    real = _atomic.make_temp

    def make_temp(folder, prefix, suffix=".tmp"):
        fd, name = real(folder, prefix, suffix)
        if Path(folder).resolve().is_relative_to(root):
            os.close(fd)
            fd = os.open("/dev/full", os.O_WRONLY)
        return fd, name

    monkeypatch.setattr(_atomic, "make_temp", make_temp)  # the writers' temporary files
    monkeypatch.setenv("NUGGETBENCH_HOME", str(root))
    return root


def test_the_injection_fails_like_a_full_disk(full_home):
    fd, name = _atomic.make_temp(full_home, ".x.")
    with pytest.raises(OSError) as info, os.fdopen(fd, "w") as fh:
        fh.write("x")
        fh.flush()
    assert info.value.errno == errno.ENOSPC
    os.unlink(name)


def test_run_on_a_full_disk_prints_the_scores_names_what_was_not_saved_and_fails(
    dataset, full_home, capsys, monkeypatch
):
    expected = run_experiment(
        load_dataset(str(dataset)), ["bm25"], measures=["P@1", "nDCG@10"], cache_runs=False
    ).means()["bm25"]
    out_dir = full_home / "outputs" / "exp"
    with pytest.raises(SystemExit) as exit_info:
        main(["run", str(dataset), "-r", "bm25", "-m", "P@1", "-m", "nDCG@10", "--format", "json",
              "-o", str(out_dir)])  # fmt: skip
    assert exit_info.value.code != 0
    captured = capsys.readouterr()
    printed = json.loads(captured.out)["results"]["bm25"]
    assert printed == pytest.approx(expected)  # the scores are shown, and are the right ones
    err = " ".join(captured.err.split())
    assert "could not be saved" in err and "No space left on device" in err
    assert str(out_dir / "results.json") in err and str(out_dir / "runs" / "bm25.trec") in err
    # nothing half-written stays: no results file, no temporary file
    leftovers = [
        p for p in full_home.rglob("*") if p.is_file() and p.suffix in (".tmp", ".json", ".trec")
    ]
    assert leftovers == []


def test_table_output_is_printed_before_the_error(dataset, full_home, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["run", str(dataset), "-r", "bm25", "-m", "P@1", "--no-progress"])
    assert exit_info.value.code != 0
    captured = capsys.readouterr()
    assert "P@1" in captured.out and "bm25" in captured.out
    assert "could not be saved" in " ".join(captured.err.split())
    assert str(full_home / "outputs") in " ".join(captured.err.split())


def test_saved_normally_when_the_disk_has_room(dataset, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("NUGGETBENCH_HOME", str(tmp_path / "roomy"))
    out_dir = tmp_path / "roomy-out"
    with pytest.raises(SystemExit) as exit_info:
        main(
            ["run", str(dataset), "-r", "bm25", "-m", "P@1", "--format", "json", "-o", str(out_dir)]
        )
        raise SystemExit(0)
    assert exit_info.value.code == 0
    assert (out_dir / "results.json").is_file() and (out_dir / "runs" / "bm25.trec").is_file()


def test_a_build_on_a_full_disk_names_the_file_without_a_traceback(full_home, capsys):
    inputs = make_inputs(full_home.parent / "inputs")
    plan = write_plan(full_home / "p", inputs)
    with pytest.raises(SystemExit) as exit_info:
        main(["build", str(plan), "--stage", "questions", "--no-progress"])
    assert exit_info.value.code == 2
    err = " ".join(capsys.readouterr().err.split())
    target = full_home / "p" / "out" / "_build" / "questions.jsonl"
    assert f"error: {target}: No space left on device [errno {errno.ENOSPC}]" in err
    assert "Traceback" not in err
    assert not (full_home / "p" / "out" / "_build" / "questions.meta.json").exists()
