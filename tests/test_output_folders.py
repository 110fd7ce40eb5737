"""Output folders under fault (issue 29, item 5; cases 13, 14, 15, 19): one writer at a time,
``--overwrite`` that swaps only on success and deletes only what ``results.json`` names, and an
interrupted run's folder that says it is incomplete."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import nuggetbench.experiment as experiment
from nuggetbench import Experiment, report
from nuggetbench._outfolder import LOCK_NAME, folder_lock, lock_holder
from nuggetbench.cli import cli
from nuggetbench.errors import InputError

SRC = Path(__file__).resolve().parents[1] / "src"


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
    queries = {"q1": "word1 thing1", "q2": "word4", "q3": "common word2"}
    (folder / "queries.jsonl").write_text(
        "\n".join(json.dumps({"_id": q, "text": t}) for q, t in queries.items())
    )
    (folder / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td4\t1\nq3\td2\t1\n"
    )
    return folder


def _run(folder, out, *args):
    return CliRunner().invoke(cli, ["run", str(folder), "-m", "RR", "-o", str(out), *args])


def _fail_second_system(monkeypatch, exc: BaseException | None = None):
    """Make the second system of a run fail after the first was saved."""
    real = experiment._run_one
    calls = []

    def run_one(exp, *args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise exc or RuntimeError("the second system failed")
        return real(exp, *args, **kwargs)

    monkeypatch.setattr(experiment, "_run_one", run_one)


def _contents(out: Path) -> dict[str, bytes | None]:
    return {str(p.relative_to(out)): None if p.is_dir() else p.read_bytes() for p in out.rglob("*")}


def test_a_second_writer_is_refused_naming_the_holder(folder, tmp_path):
    """Case 13: a run into a folder another live process is writing is refused before any
    work, naming that process; once the holder is killed (-9) its lock is stale and taken."""
    out = tmp_path / "out"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from nuggetbench._outfolder import folder_lock\n"
            "with folder_lock(sys.argv[1]):\n    print('held', flush=True); time.sleep(120)",
            str(out),
        ],
        env={**os.environ, "PYTHONPATH": str(SRC)},
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        refused = _run(folder, out, "-r", "bm25")
        assert refused.exit_code != 0
        message = str(refused.exception)
        assert f"pid {holder.pid}" in message and socket.gethostname() in message
        assert "another -o folder" in message and "\n" not in message
        assert not (out / "results.json").exists()
        assert lock_holder(out)["pid"] == holder.pid
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    assert (out / LOCK_NAME).exists()  # a killed holder cannot remove its lock
    assert lock_holder(out) is None  # ... but it is stale
    done = _run(folder, out, "-r", "bm25")
    assert done.exit_code == 0, done.output
    assert not (out / LOCK_NAME).exists()  # released after the run
    assert list(Experiment.load(out).systems) == ["bm25"]


def test_the_lock_is_held_for_the_whole_run_and_released_on_failure(folder, tmp_path, monkeypatch):
    out = tmp_path / "out"
    seen = []
    real = experiment._run_one

    def run_one(exp, *args, **kwargs):
        seen.append(lock_holder(out))
        return real(exp, *args, **kwargs)

    monkeypatch.setattr(experiment, "_run_one", run_one)
    assert _run(folder, out, "-r", "bm25", "-r", "bm25:k1=0.5").exit_code == 0
    assert [h["pid"] for h in seen] == [os.getpid()] * 2
    # this process holds it: a run in the same process is refused too
    with folder_lock(out), pytest.raises(InputError, match=f"pid {os.getpid()}"):
        experiment.run_experiment(str(folder), ["bm25:b=0.1"], outdir=out, existing="append")
    _fail_second_system(monkeypatch)
    failed = _run(folder, out, "-r", "bm25:b=0.2", "-r", "bm25:b=0.3", "--append")
    assert failed.exit_code != 0
    assert not (out / LOCK_NAME).exists()


def test_overwrite_that_fails_keeps_the_old_experiment(folder, tmp_path, monkeypatch):
    """Case 14: the new results are built beside the old ones; a failure leaves the old ones."""
    out = tmp_path / "out"
    assert _run(folder, out, "-r", "bm25", "-r", "bm25:k1=0.5", "--html").exit_code == 0
    before = _contents(out)
    _fail_second_system(monkeypatch)
    failed = _run(folder, out, "-r", "bm25:b=0.3", "-r", "bm25:b=0.9", "--overwrite")
    assert failed.exit_code != 0 and "second system failed" in str(failed.exception)
    assert _contents(out) == before  # results.json, report.html, both runs; no staging folder left
    assert list(Experiment.load(out).systems) == ["bm25", "bm25:k1=0.5"]

    monkeypatch.undo()
    replaced = _run(folder, out, "-r", "bm25:b=0.3", "--overwrite")
    assert replaced.exit_code == 0, replaced.output
    exp = Experiment.load(out)
    assert list(exp.systems) == ["bm25:b=0.3"]
    assert exp.systems["bm25:b=0.3"].run_path == out / "runs" / "bm25_b=0.3.trec"
    saved = json.loads((out / "results.json").read_text())
    assert saved["systems"]["bm25:b=0.3"]["run_file"] == "runs/bm25_b=0.3.trec"  # the folder's own
    assert sorted(p.name for p in out.iterdir()) == ["results.json", "runs"]  # stale report gone
    assert sorted(p.name for p in (out / "runs").iterdir()) == ["bm25_b=0.3.trec"]


def test_overwrite_deletes_only_what_results_json_names(folder, tmp_path):
    """Case 15: files the experiment does not name are never deleted (nor replaced)."""
    out = tmp_path / "out"
    (out / "runs").mkdir(parents=True)
    mine = out / "runs" / "mine.trec"
    mine.write_text("q1 Q0 d1 1 1.0 mine\n")
    (out / "report.html").write_text("<p>my own page</p>")
    done = _run(folder, out, "-r", "bm25", "--overwrite")
    assert done.exit_code == 0, done.output
    assert mine.read_text() == "q1 Q0 d1 1 1.0 mine\n"
    assert (out / "report.html").read_text() == "<p>my own page</p>"  # no results.json named it
    again = _run(folder, out, "-r", "bm25:k1=0.5", "--overwrite")
    assert again.exit_code == 0, again.output
    assert mine.exists() and not (out / "runs" / "bm25.trec").exists()
    assert sorted(p.name for p in (out / "runs").iterdir()) == ["bm25_k1=0.5.trec", "mine.trec"]

    theirs = tmp_path / "theirs"
    (theirs / "runs").mkdir(parents=True)
    (theirs / "runs" / "bm25.trec").write_text("q1 Q0 d1 1 1.0 theirs\n")
    refused = _run(folder, theirs, "-r", "bm25", "--overwrite")
    assert refused.exit_code != 0 and "is not one of them" in str(refused.exception)
    assert (theirs / "runs" / "bm25.trec").read_text() == "q1 Q0 d1 1 1.0 theirs\n"


def test_an_interrupted_run_says_it_is_incomplete(folder, tmp_path, monkeypatch):
    """Case 19: the folder of an interrupted two-system run has no ``finished`` time and one
    of the two systems its provenance names; ``report`` and ``compare`` warn."""
    out = tmp_path / "out"
    _fail_second_system(monkeypatch, KeyboardInterrupt())
    with pytest.raises(KeyboardInterrupt):
        experiment.run_experiment(str(folder), ["bm25", "bm25:k1=0.5"], outdir=out, measures=["RR"])
    monkeypatch.undo()
    saved = json.loads((out / "results.json").read_text())
    assert list(saved["systems"]) == ["bm25"]
    assert list(saved["provenance"]["systems"]) == ["bm25", "bm25:k1=0.5"]
    assert "finished" not in saved["provenance"]

    report = CliRunner().invoke(cli, ["report", str(out)])
    assert report.exit_code == 0, report.output
    assert "incomplete experiment: 1 of 2 systems (missing: bm25:k1=0.5)" in report.output
    assert "interrupted" in report.output
    qrels = folder / "qrels" / "test.tsv"
    compared = CliRunner().invoke(cli, ["compare", str(qrels), str(out / "runs" / "bm25.trec")])
    assert "incomplete experiment" in compared.output

    finished = _run(folder, out, "-r", "bm25:k1=0.5", "--append")
    assert finished.exit_code == 0, finished.output
    assert "finished" in json.loads((out / "results.json").read_text())["provenance"]
    report = CliRunner().invoke(cli, ["report", str(out)])
    assert report.exit_code == 0 and "incomplete" not in report.output


def test_a_killed_run_leaves_no_staging_behind(folder, tmp_path):
    """A ``kill -9`` during ``--overwrite`` leaves the old experiment and a staging folder that
    the next write into the folder removes."""
    out = tmp_path / "out"
    assert _run(folder, out, "-r", "bm25").exit_code == 0
    before = (out / "results.json").read_bytes()
    script = (
        "import os, sys\n"
        "import nuggetbench.experiment as e\n"
        "real = e._run_all\n"
        "def run_all(exp, *a):\n"
        "    real(exp, *a)\n"
        "    os.kill(os.getpid(), 9)\n"
        "e._run_all = run_all\n"
        "e.run_experiment(sys.argv[1], ['bm25:k1=0.5'], outdir=sys.argv[2], existing='overwrite')\n"
    )
    killed = subprocess.run(
        [sys.executable, "-c", script, str(folder), str(out)],
        env={**os.environ, "PYTHONPATH": str(SRC)},
        timeout=120,
    )
    assert killed.returncode == -9
    assert (out / "results.json").read_bytes() == before
    assert [p.name for p in (out / "runs").iterdir()] == ["bm25.trec"]
    assert any(p.name.startswith(".overwrite.") for p in out.iterdir())
    again = _run(folder, out, "-r", "bm25:k1=0.5", "--append")
    assert again.exit_code == 0, again.output
    assert not any(p.name.startswith(".overwrite.") for p in out.iterdir())


# Item 7 (cases 17, 18): results.json is input too.


@pytest.fixture()
def saved(folder, tmp_path) -> Path:
    out = tmp_path / "saved"
    done = _run(folder, out, "-r", "bm25", "-r", "bm25:k1=0.5", "-m", "nDCG@10")
    assert done.exit_code == 0, done.output
    return out


def _edit(out: Path, change) -> None:
    data = json.loads((out / "results.json").read_text())
    change(data)
    (out / "results.json").write_text(json.dumps(data))


def _report_error(out: Path) -> str:
    result = CliRunner().invoke(cli, ["report", str(out)])
    assert result.exit_code != 0
    assert isinstance(result.exception, InputError), repr(result.exception)
    message = str(result.exception)
    assert "\n" not in message and str(out / "results.json") in message
    with pytest.raises(InputError) as loaded:
        Experiment.load(out)
    assert str(loaded.value) == message
    return message


def _set_value(data, value):
    data["systems"]["bm25"]["per_query"]["RR"][0] = value


def test_report_refuses_a_string_where_a_number_belongs(saved):
    _edit(saved, lambda d: _set_value(d, "0.5"))
    message = _report_error(saved)
    assert "systems['bm25'].per_query['RR'][0]: str \"0.5\" where a number belongs" in message


def test_report_refuses_missing_measures_and_wrong_types(saved):
    _edit(saved, lambda d: d.pop("measures"))
    assert "'measures': missing" in _report_error(saved)
    _edit(saved, lambda d: d.update(measures=["RR", "nDCG@10"], k="deep"))
    assert "'k': str \"deep\" where an integer depth belongs" in _report_error(saved)
    _edit(saved, lambda d: d.update(k=10) or d["systems"].update(bm25=[1, 2]))
    assert "systems['bm25']: list [...] where an object belongs" in _report_error(saved)


def test_report_refuses_deep_nesting_without_a_traceback(saved):
    (saved / "results.json").write_text("[" * 100_000 + "]" * 100_000)
    assert "nested too deeply" in _report_error(saved)
    (saved / "results.json").write_text('{"systems": ' + "[" * 100_000 + "]" * 100_000 + "}")
    assert "nested too deeply" in _report_error(saved)


def test_report_checks_means_against_per_query_values(saved):
    """Case 18: an edited mean, or an edited per-query value, no longer agree."""
    data = json.loads((saved / "results.json").read_text())
    values = data["systems"]["bm25"]["per_query"]["RR"]
    mean = data["systems"]["bm25"]["means"]["RR"]
    assert mean == pytest.approx(sum(values) / len(values))
    _edit(saved, lambda d: d["systems"]["bm25"]["means"].update(RR=0.99))
    message = _report_error(saved)
    assert "systems['bm25'].means['RR']: 0.99, but its 3 per-query values average" in message
    _edit(saved, lambda d: d["systems"]["bm25"]["means"].update(RR=mean) or _set_value(d, 7.5))
    assert "systems['bm25'].means['RR']" in _report_error(saved)
    # within rounding is fine: a mean written with 4 decimals
    _edit(
        saved,
        lambda d: (
            _set_value(d, values[0]) or d["systems"]["bm25"]["means"].update(RR=round(mean, 4))
        ),
    )
    assert list(Experiment.load(saved).systems) == ["bm25", "bm25:k1=0.5"]


def test_compare_of_folders_refuses_an_edited_results_json(folder, tmp_path):
    """Case 17/18 for ``compare OUT_A OUT_B``: the field is named, nothing else blamed."""
    a, b = tmp_path / "a", tmp_path / "b"
    assert _run(folder, a, "-r", "bm25").exit_code == 0
    assert _run(folder, b, "-r", "bm25:k1=0.5").exit_code == 0
    assert CliRunner().invoke(cli, ["compare", str(a), str(b)]).exit_code == 0
    _edit(b, lambda d: d["systems"]["bm25:k1=0.5"]["means"].update(RR=0.2))
    result = CliRunner().invoke(cli, ["compare", str(a), str(b)])
    assert result.exit_code != 0
    message = str(result.exception)
    assert message.startswith(f"{b / 'results.json'}: systems['bm25:k1=0.5'].means['RR']: 0.2")
    assert "options" not in message and "\n" not in message


# Issue 35: run file names, paths relative to the folder, readers naming the writer.


def test_run_files_never_collide(folder, tmp_path):
    """Systems ``x y`` and ``x_y`` both slug to ``x_y``: ``--append`` silently replaced the
    first system's run with the second's. Each system now has its own file."""
    out = tmp_path / "out"
    assert _run(folder, out, "-r", "bm25:name=x y").exit_code == 0
    first = (out / "runs" / "x_y.trec").read_bytes()
    assert _run(folder, out, "-r", "bm25:k1=0.2,name=x_y", "--append").exit_code == 0
    assert (out / "runs" / "x_y.trec").read_bytes() == first
    saved = json.loads((out / "results.json").read_text())
    files = {name: entry["run_file"] for name, entry in saved["systems"].items()}
    assert files == {"x y": "runs/x_y.trec", "x_y": "runs/x_y~2.trec"}
    exp = Experiment.load(out)  # each run read back is the run scored (fingerprints)
    assert exp.systems["x y"].run.fingerprint() != exp.systems["x_y"].run.fingerprint()
    both = _run(folder, tmp_path / "both", "-r", "bm25:name=a b", "-r", "bm25:k1=0.2,name=a_b")
    assert both.exit_code == 0, both.output
    assert sorted(p.name for p in (tmp_path / "both" / "runs").iterdir()) == [
        "a_b.trec",
        "a_b~2.trec",
    ]


def test_a_copied_folder_reads_its_own_runs(folder, tmp_path, monkeypatch):
    """Run files were recorded relative to the working directory and read before the folder's
    own ``runs/``: a copy loaded the other folder's run, unchecked. Now ``runs/<name>`` is the
    folder's own, and a run that is not the one scored is refused (its fingerprint)."""
    monkeypatch.chdir(tmp_path)
    assert _run(folder, Path("out"), "-r", "bm25:name=sys").exit_code == 0
    shutil.copytree("out", "copy")
    mine = (tmp_path / "copy" / "runs" / "sys.trec").read_bytes()
    replaced = _run(folder, Path("out"), "-r", "bm25:k1=0.1,b=0.1,name=sys", "--overwrite")
    assert replaced.exit_code == 0, replaced.output
    assert (tmp_path / "out" / "runs" / "sys.trec").read_bytes() != mine
    for where in (tmp_path / "copy", Path("copy")):
        exp = Experiment.load(where)
        assert exp.systems["sys"].run_path.resolve() == (tmp_path / "copy/runs/sys.trec")
        assert report.report_data(where).systems == ["sys"]
    # an older results.json (paths relative to the working directory): the own copy first
    _edit(tmp_path / "copy", lambda d: d["systems"]["sys"].update(run_file="out/runs/sys.trec"))
    assert Experiment.load("copy").systems["sys"].run_path == Path("copy/runs/sys.trec")
    # a run that is not the one scored is refused by every reader, naming the file
    (tmp_path / "copy" / "runs" / "sys.trec").write_bytes(mine.split(b"\n", 1)[1])  # a line less
    with pytest.raises(InputError, match=r"copy/runs/sys.trec: this run .* is not the one scored"):
        Experiment.load("copy")
    with pytest.raises(InputError, match="not the one scored"):
        report.report_data("copy")


def test_readers_of_a_folder_being_written_name_the_writer(folder, tmp_path):
    """``report`` of a folder another process is writing said "no results.json"; it now names
    that process (pid and command), as ``Experiment.load`` does."""
    out = tmp_path / "out"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from nuggetbench._outfolder import folder_lock\n"
            "with folder_lock(sys.argv[1], 'nuggetbench run beir/x'):\n"
            "    print('held', flush=True); time.sleep(120)",
            str(out),
        ],
        env={**os.environ, "PYTHONPATH": str(SRC)},
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        result = CliRunner().invoke(cli, ["report", str(out)])
        assert result.exit_code != 0
        message = str(result.exception)
        assert f"pid {holder.pid}" in message and "nuggetbench run beir/x" in message
        with pytest.raises(InputError, match=f"no results.json yet.*pid {holder.pid}"):
            Experiment.load(out)
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    with pytest.raises(InputError, match="no results.json here"):
        Experiment.load(out)  # the writer is gone: the plain message
