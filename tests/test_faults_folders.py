"""Output folders under every fault (issue 35, items 1 and 8): a full disk (a small tmpfs), a
``kill -9`` at each step of a save, and concurrent writers of every kind. Each test asserts that
nothing is lost: the folder holds the old experiment or the new one, whole, readable by
``report``, ``compare`` and ``Experiment.load``, and the next run completes or cleans up without
help.

The writer is a forked child of the test process (no interpreter start: the suite takes
seconds), stopped or killed at an exact moment by the test hook
``NUGGETBENCH_TEST_FAULT=STEP[#N]:kill|stop`` (``nuggetbench._atomic.fault_point``; the steps
are ``nuggetbench._outfolder.FAULT_POINTS``). Linux (fork, signals, tmpfs) only.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import socket
import subprocess
import sys
import time
import traceback
from pathlib import Path

import pytest
from click.testing import CliRunner

from llm_server import LLMServer
from nuggetbench import Experiment, report
from nuggetbench._atomic import FAULT_ENV, clean_stale, process_gone
from nuggetbench._outfolder import COMMIT_NAME, FAULT_POINTS, LOCK_NAME, folder_lock, lock_holder
from nuggetbench.cli import cli, main
from nuggetbench.errors import InputError
from nuggetbench.experiment import run_experiment
from nuggetbench.report import compare_folders

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="fork, signals and tmpfs: Linux")

OLD = ["bm25", "bm25:k1=0.5"]
NEW = ["bm25:b=0.3", "bm25"]  # "bm25" is in both: its new run replaces the old file


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> Path:
    """One home for the module: its run cache serves the runs of every test after the first."""
    return tmp_path_factory.mktemp("home")


@pytest.fixture()
def folder(tmp_path_factory, home, monkeypatch):
    """A tiny BEIR folder (6 documents, 3 queries; the same content in every test)."""
    monkeypatch.setenv("NUGGETBENCH_HOME", str(home))
    monkeypatch.delenv(FAULT_ENV, raising=False)
    folder = tmp_path_factory.mktemp("data") / "ds"
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text(
        "\n".join(
            json.dumps({"_id": f"d{i}", "title": "", "text": f"word{i} common thing{i % 2}"})
            for i in range(6)
        )
    )
    queries = {"q1": "word1 thing1", "q2": "word4 common", "q3": "common word2"}
    (folder / "queries.jsonl").write_text(
        "\n".join(json.dumps({"_id": q, "text": t}) for q, t in queries.items())
    )
    (folder / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td4\t1\nq3\td2\t1\nq3\td0\t1\n"
    )
    return folder


def _run(folder, out, specs, existing="error"):
    return run_experiment(
        str(folder), specs, outdir=out, measures=["RR", "nDCG@10"], existing=existing
    )


def _child(fn, fault: str | None) -> int:
    """Fork; the child sets the fault hook, runs *fn* and exits 0 (1 on an error). Returns the
    child's pid."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 1
        try:
            if fault:
                os.environ[FAULT_ENV] = fault
            fn()
            code = 0
        except BaseException:
            traceback.print_exc()
        finally:
            os._exit(code)
    return pid


def _wait(pid: int, *, stopped: bool = False, timeout: float = 120) -> int:
    """The child's end: ``-signal`` when killed, its exit code, or ``"stopped"`` (as
    ``-SIGSTOP``) when *stopped* is allowed and it stopped itself."""
    flags = os.WNOHANG | (os.WUNTRACED if stopped else 0)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got, status = os.waitpid(pid, flags)
        if got:
            if os.WIFSTOPPED(status):
                return -os.WSTOPSIG(status)
            if os.WIFSIGNALED(status):
                return -os.WTERMSIG(status)
            return os.WEXITSTATUS(status)
        time.sleep(0.02)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    raise AssertionError(f"the writer (pid {pid}) did not reach its fault point in {timeout} s")


def _killed_at(fault: str, fn) -> None:
    assert _wait(_child(fn, f"{fault}:kill")) == -signal.SIGKILL, f"never reached {fault}"


def _readable(out: Path, reference: Path) -> list[str]:
    """The systems of the experiment in *out*, after reading it as every reader does:
    ``Experiment.load`` (runs and their fingerprints), the report's data and ``compare`` of
    folders (each run scored again)."""
    exp = Experiment.load(out)
    assert all(s.run is not None for s in exp.systems.values())
    data = report.report_data(out)
    assert data.systems == list(exp.systems)
    compared = compare_folders([reference, out])
    assert len(compared.systems) == 1 + len(exp.systems)
    for name, system in exp.systems.items():  # the saved scores are the runs' scores
        mine = compared.estimate(f"{out.name}/{name}", "RR").mean
        assert mine == pytest.approx(system.results.means["RR"])
    return list(exp.systems)


def _leftovers(out: Path) -> list[str]:
    """Staging folders, a pending commit, a lock: what no finished writer leaves."""
    names = [p.name for p in out.iterdir()]
    return [n for n in names if n.endswith((".part", ".tmp")) or n in (COMMIT_NAME, LOCK_NAME)]


def test_every_fault_point_is_exercised_below():
    """The list of moments the suite kills a writer at is the saver's own list."""
    here = Path(__file__).read_text()
    assert all(f'"{step}' in here for step in FAULT_POINTS), FAULT_POINTS


# --- kill -9 at each step of a save -----------------------------------------------------------

OVERWRITE_STEPS = [  # (fault, the experiment then in the folder)
    ("lock.taken", OLD),
    ("save.results-written#1", OLD),  # the new plan, in staging
    ("save.run-written#1", OLD),
    ("save.results-written#3", OLD),  # after the last new system, in staging
    ("swap.staged", OLD),
    ("swap.committed", NEW),
    ("swap.files-moved", NEW),
    ("swap.head-replaced", NEW),
    ("swap.old-deleted", NEW),
]


@pytest.mark.parametrize(("fault", "held"), OVERWRITE_STEPS, ids=[f for f, _ in OVERWRITE_STEPS])
def test_overwrite_killed_at_each_step_leaves_the_old_or_the_new_experiment(
    folder, tmp_path, fault, held
):
    out, reference = tmp_path / "out", tmp_path / "reference"
    _run(folder, reference, ["bm25:k1=2"])
    _run(folder, out, OLD)
    (out / "runs" / "mine.trec").write_text("q1 Q0 d1 1 1.0 mine\n")  # not ours: never touched
    _killed_at(fault, lambda: _run(folder, out, NEW, existing="overwrite"))
    assert lock_holder(out) is None  # the killed writer's lock is stale
    assert _readable(out, reference) == held
    # the next writer completes (or cleans up) without help
    again = _run(folder, out, NEW, existing="overwrite")
    assert list(again.systems) == NEW
    assert _readable(out, reference) == NEW
    assert _leftovers(out) == []
    assert sorted(p.name for p in (out / "runs").iterdir()) == [
        "bm25.trec",
        "bm25_b=0.3.trec",
        "mine.trec",
    ]
    assert (out / "runs" / "mine.trec").read_text() == "q1 Q0 d1 1 1.0 mine\n"


@pytest.mark.parametrize("fault", ["swap.committed", "swap.files-moved", "swap.head-replaced"])
def test_a_committed_swap_is_read_as_the_new_experiment_and_finished_by_any_writer(
    folder, tmp_path, fault
):
    """Between the commit and the end of the swap, readers see the new experiment; the next
    writer of any kind (here a report into the folder) finishes the swap first."""
    out = tmp_path / "out"
    _run(folder, out, OLD)
    _killed_at(fault, lambda: _run(folder, out, NEW, existing="overwrite"))
    assert (out / COMMIT_NAME).is_dir()
    assert list(Experiment.load(out).systems) == NEW
    assert report.html(out) == out / "report.html"  # takes the lock: finishes the swap
    assert not (out / COMMIT_NAME).exists()
    saved = json.loads((out / "results.json").read_text())
    assert list(saved["systems"]) == NEW and "finished" in saved["provenance"]
    assert not (out / "runs" / "bm25_k1=0.5.trec").exists()  # the old run, deleted


FRESH_STEPS = [  # (fault, systems finished when killed)
    ("lock.taken", None),  # nothing written yet
    ("save.results-written#1", []),  # the plan: no system yet
    ("save.run-written#1", []),  # the first run file, not yet in results.json
    ("save.results-written#2", ["bm25"]),
    ("save.run-written#2", ["bm25"]),
]


@pytest.mark.parametrize(("fault", "done"), FRESH_STEPS, ids=[f for f, _ in FRESH_STEPS])
def test_a_killed_run_is_resumed_by_the_same_command(folder, tmp_path, fault, done):
    out, reference = tmp_path / "out", tmp_path / "reference"
    _run(folder, reference, ["bm25:k1=2"])
    _killed_at(fault, lambda: _run(folder, out, OLD))
    if done is None:
        assert not (out / "results.json").exists()
    elif not done:
        with pytest.raises(InputError, match="no system to report yet") as info:
            report.report_data(out)
        assert "interrupted" in str(info.value) and "\n" not in str(info.value)
        assert list(Experiment.load(out).systems) == []
    else:
        assert _readable(out, reference) == done
        assert "incomplete experiment" in CliRunner().invoke(cli, ["report", str(out)]).output
    finished = _run(folder, out, OLD)  # the same command: resumed, not refused
    assert list(finished.systems) == OLD
    assert ("resumed" in finished.provenance) == bool(done)
    assert _readable(out, reference) == OLD
    assert "finished" in json.loads((out / "results.json").read_text())["provenance"]
    assert _leftovers(out) == []


def test_a_lock_killed_while_being_taken_is_never_half_written(folder, tmp_path):
    """The lock is written under a staging name and linked into place: a writer killed at any
    moment leaves no lock or a whole one naming a dead process (stale: taken over)."""
    out = tmp_path / "out"
    _killed_at("lock.taken", lambda: _run(folder, out, OLD))
    held = json.loads((out / LOCK_NAME).read_text())
    assert held["host"] == socket.gethostname() and process_gone(held["pid"])
    assert lock_holder(out) is None
    assert list(_run(folder, out, OLD).systems) == OLD
    assert _leftovers(out) == []


# --- concurrent writers of every kind -------------------------------------------------------


@pytest.fixture()
def server(monkeypatch):
    with LLMServer(hang_seconds=5) as srv:
        monkeypatch.setenv("NUGGETBENCH_LLM_BASE_URL", srv.base_url)
        yield srv


def _invoke(*args) -> tuple[int, str]:
    """Run the command line as the console script does (``cli.main``: errors as one
    ``error:`` line and exit status 2; anything else would raise here, a traceback).
    Returns ``(exit status, stdout and stderr)``."""
    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main([*args, "--no-progress"])
        except SystemExit as exc:
            code = int(exc.code or 0)
    return code, err.getvalue() + out.getvalue()


def _error(text: str) -> str:
    """The one ``error:`` line of a command's output."""
    lines = [line for line in text.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, text
    return lines[0]


def _writers(folder: Path, out: Path, tmp_path: Path) -> dict[str, list[str]]:
    """One command line per kind of writer, each into *out*."""
    run_a = tmp_path / "a.trec"
    run_a.write_text("q1 Q0 d1 1 2.0 a\nq1 Q0 d3 2 1.0 a\nq2 Q0 d4 1 1.0 a\nq3 Q0 d2 1 1.0 a\n")
    run_b = tmp_path / "b.trec"
    run_b.write_text("q1 Q0 d3 1 2.0 b\nq1 Q0 d1 2 1.0 b\nq2 Q0 d5 1 1.0 b\nq3 Q0 d0 1 1.0 b\n")
    nuggets = tmp_path / "nuggets.jsonl"
    nuggets.write_text(json.dumps({"qid": "q1", "query": "q", "nuggets": [{"text": "word1"}]}))
    answers = tmp_path / "sys.jsonl"
    answers.write_text(json.dumps({"query_id": "q1", "answer": "+word1 is it"}) + "\n")
    llm = ["--model", "m"]
    return {
        "run": ["run", str(folder), "-r", "bm25:k1=0.7", "-m", "RR", "-o", str(out)],
        "compare -o": ["compare", str(folder), str(run_a), str(run_b), "-m", "RR", "-o", str(out)],
        "judge -o": ["judge", str(folder), str(run_a), "--depth", "2", *llm, "-o", str(out)],
        "judge --agreement -o": ["judge", str(folder), "--agreement", *llm, "-o", str(out)],
        "answers -o": ["answers", str(nuggets), str(answers), *llm, "-o", str(out)],
        "report": ["report", str(out)],
    }


def _snapshot(out: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(out)): p.read_bytes()
        for p in sorted(out.rglob("*"))
        if p.is_file() and p.name != LOCK_NAME
    }


@pytest.mark.parametrize("step", ["save.run-written", "swap.staged"])
def test_every_writer_is_refused_while_a_run_writes_the_folder(folder, tmp_path, server, step):
    """A ``run`` (fresh, or ``--overwrite``) is stopped in the middle of its save; every other
    writer (another run, compare -o, judge -o, judge --agreement -o, answers -o, report) is
    refused naming it, before any LLM request; resumed, the run finishes and nothing is lost."""
    out = tmp_path / "out"
    existing = "error"
    if step == "swap.staged":
        _run(folder, out, OLD)
        existing = "overwrite"
    before = _snapshot(out) if out.exists() else {}
    pid = _child(lambda: _run(folder, out, NEW, existing=existing), f"{step}:stop")
    try:
        assert _wait(pid, stopped=True) == -signal.SIGSTOP
        assert lock_holder(out)["pid"] == pid
        for kind, args in _writers(folder, out, tmp_path).items():
            code, text = _invoke(*args)
            assert code == 2 and f"pid {pid}" in _error(text), (kind, text)
        assert not server.log  # refused before any request
        if before:
            assert {k: v for k, v in _snapshot(out).items() if not k.startswith(".")} == before
    finally:
        os.kill(pid, signal.SIGCONT)
    assert _wait(pid) == 0
    assert list(Experiment.load(out).systems) == NEW
    assert _leftovers(out) == []


def test_two_overwrites_at_once_keep_one_whole_experiment(folder, tmp_path):
    out = tmp_path / "out"
    _run(folder, out, OLD)
    pid = _child(lambda: _run(folder, out, NEW, existing="overwrite"), "swap.committed:stop")
    try:
        assert _wait(pid, stopped=True) == -signal.SIGSTOP
        with pytest.raises(InputError, match=f"pid {pid}"):
            _run(folder, out, ["bm25:k1=3"], existing="overwrite")
        assert list(Experiment.load(out).systems) == NEW  # committed: readers see the new one
    finally:
        os.kill(pid, signal.SIGCONT)
    assert _wait(pid) == 0
    assert list(_run(folder, out, ["bm25:k1=3"], existing="overwrite").systems) == ["bm25:k1=3"]
    assert sorted(p.name for p in (out / "runs").iterdir()) == ["bm25_k1=3.trec"]


def test_a_compare_folder_is_refused_to_a_run_while_it_is_written(folder, tmp_path):
    """``compare -o`` holds the lock from its start; stopped before its commit, a run is
    refused naming it, and the folder it then commits is a comparison that ``report`` reads."""
    out, run_a, run_b = tmp_path / "cmp", tmp_path / "a.trec", tmp_path / "b.trec"
    run_a.write_text("q1 Q0 d1 1 2.0 a\nq2 Q0 d4 1 1.0 a\nq3 Q0 d2 1 1.0 a\n")
    run_b.write_text("q1 Q0 d3 1 2.0 b\nq2 Q0 d4 1 1.0 b\nq3 Q0 d0 1 1.0 b\n")
    args = ["compare", str(folder), str(run_a), str(run_b), "-m", "RR", "-o", str(out)]
    pid = _child(lambda: CliRunner().invoke(cli, args, catch_exceptions=False), "swap.staged:stop")
    try:
        assert _wait(pid, stopped=True) == -signal.SIGSTOP
        with pytest.raises(InputError, match=f"pid {pid}.*nuggetbench compare -o"):
            _run(folder, out, OLD)
        with pytest.raises(InputError, match=f"no results.json yet.*pid {pid}"):
            Experiment.load(out)  # a reader names the writer
    finally:
        os.kill(pid, signal.SIGCONT)
    assert _wait(pid) == 0
    assert report.report_data(out).systems == ["a", "b"]
    code, text = _invoke("run", str(folder), "-r", "bm25", "-o", str(out))
    assert code == 2 and "holds a comparison saved by `nuggetbench compare -o`" in _error(text)


# --- folders of another kind ----------------------------------------------------------------


def test_a_writer_refuses_a_folder_of_another_kind(folder, tmp_path, server):
    """Issue 35: ``compare DATASET a b -o DIR`` replaced a run folder's results.json. Each kind
    of writer now refuses a folder holding another kind, and leaves it byte for byte."""
    run_out = tmp_path / "run"
    _run(folder, run_out, OLD)
    writers = _writers(folder, run_out, tmp_path)
    before = _snapshot(run_out)
    for kind in ("compare -o", "judge -o", "judge --agreement -o", "answers -o"):
        code, text = _invoke(*writers[kind])
        assert code == 2 and "holds an experiment of `nuggetbench run`" in _error(text), kind
        assert _snapshot(run_out) == before, kind
    assert not server.log
    judged = tmp_path / "judged"
    code, text = _invoke(*_writers(folder, judged, tmp_path)["judge -o"])
    assert code == 0, text
    for kind in ("run", "compare -o", "judge --agreement -o", "answers -o"):
        code, text = _invoke(*_writers(folder, judged, tmp_path)[kind])
        assert code == 2 and "the judgments of `nuggetbench judge -o`" in _error(text), kind
    code, text = _invoke(*_writers(folder, judged, tmp_path)["judge -o"])  # the same kind
    assert code == 0, text


# --- the lock file --------------------------------------------------------------------------


def test_a_lock_whose_pid_cannot_be_a_process_is_refused_in_one_line(folder, tmp_path):
    """Issue 35: a lock naming pid 10**30 raised OverflowError in _atomic.process_gone."""
    out = tmp_path / "out"
    out.mkdir()
    for pid in (10**30, -1, 0, "12", True):
        lock = {"pid": pid, "host": socket.gethostname(), "started": "x", "command": "x"}
        (out / LOCK_NAME).write_text(json.dumps(lock))
        with pytest.raises(InputError) as info:
            _run(folder, out, OLD)
        message = str(info.value)
        assert "invalid lock file" in message and str(out / LOCK_NAME) in message
        assert "delete that file" in message and "\n" not in message
    (out / LOCK_NAME).write_text("")  # empty (an older version killed while taking it)
    with pytest.raises(InputError, match="unreadable lock file"):
        _run(folder, out, OLD)
    assert process_gone(10**30) and process_gone(-1) and process_gone(0)
    (out / f".x.nb{10**30}h000000.abcd.tmp").write_text("")  # a staging name: no overflow
    clean_stale(out, force=True)
    (out / LOCK_NAME).unlink()
    assert list(_run(folder, out, OLD).systems) == OLD


def test_the_lock_is_released_and_readable_while_held(folder, tmp_path):
    out = tmp_path / "out"
    with folder_lock(out, "nuggetbench test") as path:
        held = json.loads(path.read_text())
        assert held["pid"] == os.getpid() and held["command"] == "nuggetbench test"
        assert [p.name for p in out.iterdir()] == [LOCK_NAME]  # no staging file left
    assert not path.exists()


# --- a full disk ------------------------------------------------------------------------------


@contextlib.contextmanager
def _tmpfs(path: Path, size: str):
    path.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()[:120]}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def _fill(disk: Path, leave_pages: int) -> Path:
    """Fill *disk* but *leave_pages* pages (4 KiB)."""
    filler = disk / "filler"
    free = os.statvfs(disk)
    filler.write_bytes(b"\0" * max(0, (free.f_bavail - leave_pages) * free.f_bsize))
    return filler


def test_overwrite_on_a_full_disk_keeps_the_old_experiment_whole(folder, tmp_path):
    """Issue 35: the new run file failed with ENOSPC in staging, the swap happened anyway, the
    old runs were deleted and results.json said "finished" for a run that did not exist."""
    with _tmpfs(tmp_path / "disk", "512k") as disk:
        out = disk / "out"
        _run(folder, out, OLD)
        before = _snapshot(out)
        filler = _fill(disk, 1)  # the lock fits, the new experiment does not
        code, text = _invoke(
            "run",
            str(folder),
            *sum((["-r", s] for s in NEW), []),
            "-m",
            "RR",
            "-m",
            "nDCG@10",
            "-o",
            str(out),
            "--overwrite",
        )
        assert code == 2 and "No space left on device" in _error(text)
        assert "the experiment already there is kept as it was, whole" in _error(text)
        assert _snapshot(out) == before and _leftovers(out) == []
        assert list(Experiment.load(out).systems) == OLD
        filler.unlink()  # space again: the same command succeeds
        code, text = _invoke(
            "run",
            str(folder),
            *sum((["-r", s] for s in NEW), []),
            "-m",
            "RR",
            "-m",
            "nDCG@10",
            "-o",
            str(out),
            "--overwrite",
        )
        assert code == 0, text
        assert list(Experiment.load(out).systems) == NEW and _leftovers(out) == []


def test_writers_on_a_full_disk_leave_nothing_half_written(folder, tmp_path):
    """No page left: a run, compare -o and report fail with one line, leave no lock, no
    staging and the folder's files as they were."""
    with _tmpfs(tmp_path / "disk", "512k") as disk:
        out, cmp = disk / "out", disk / "cmp"
        _run(folder, out, OLD)
        run_a = out / "runs" / "bm25.trec"
        run_b = out / "runs" / "bm25_k1=0.5.trec"
        assert _invoke("compare", str(folder), str(run_a), str(run_b), "-o", str(cmp))[0] == 0
        before = {d: _snapshot(d) for d in (out, cmp)}
        _fill(disk, 0)
        for args in (
            ["run", str(folder), "-r", "bm25:k1=3", "-o", str(out), "--append"],
            ["compare", str(folder), str(run_b), str(run_a), "-o", str(cmp)],
            ["report", str(out)],
        ):
            code, text = _invoke(*args)
            assert code == 2 and "No space left on device" in _error(text), (args, text)
        for d in (out, cmp):
            assert _snapshot(d) == before[d] and _leftovers(d) == []
        assert list(Experiment.load(out).systems) == OLD
        assert report.report_data(cmp).systems == ["bm25", "bm25_k1=0.5"]


def test_fault_hook_does_nothing_unset(folder, tmp_path, monkeypatch):
    """Outside tests the hook is inert; a step that is not named is passed."""
    monkeypatch.setenv(FAULT_ENV, "no.such-step:kill")
    assert list(_run(folder, tmp_path / "out", OLD).systems) == OLD
