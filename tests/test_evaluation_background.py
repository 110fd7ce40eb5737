"""``evaluate_dataset`` reads the run file in a thread while the judgments load
(:func:`nuggetbench._threads.in_background`): same values, the judgments' error first."""

from __future__ import annotations

import threading

import pytest

from nuggetbench._runtime import in_background
from nuggetbench.errors import DatasetError, FormatError
from nuggetbench.evaluation import evaluate_dataset


def test_in_background_returns_the_value_and_raises_the_error():
    seen = []

    def work(x, *, y):
        seen.append(threading.current_thread().name)
        return x + y

    assert in_background(work, 1, y=2)() == 3
    assert seen == ["nuggetbench-work"]

    def fail():
        raise FormatError("f.txt", 3, "bad")

    result = in_background(fail)
    with pytest.raises(FormatError, match="f.txt"):
        result()


def test_idle_cpus_counts_the_threads_at_work(monkeypatch):
    """A background thread takes a CPU while it runs; a caller waiting for it gives its own
    back (factorize_keys splits a column in two only when a CPU is idle)."""
    import time

    from nuggetbench import _runtime as _threads

    monkeypatch.setattr(_threads, "usable_cpus", lambda: 2)
    assert _threads.idle_cpus() == 1  # the caller works
    started = threading.Event()

    def job():
        started.set()
        deadline = time.monotonic() + 10
        while _threads.idle_cpus() != 1 and time.monotonic() < deadline:
            time.sleep(0.001)  # until the caller waits in result()
        return _threads.idle_cpus()

    result = in_background(job)
    started.wait(10)
    assert _threads.idle_cpus() == 0  # the caller and the job
    assert result() == 1  # the job saw the waiting caller's CPU free
    assert _threads.idle_cpus() == 1


def _files(tmp_path):
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 1\nq1 0 d2 0\nq2 0 d3 2\n")
    run = tmp_path / "run.txt"
    run.write_text("q1 Q0 d2 1 3.0 t\nq1 Q0 d1 2 2.0 t\nq2 Q0 d3 1 1.0 t\n")
    return qrels, run


def test_a_run_read_in_the_background_gives_the_values_of_a_run_read_first(tmp_path):
    from nuggetbench.data import read_trec_run as read_run

    qrels, run = _files(tmp_path)
    from_file = evaluate_dataset(qrels, run, ["AP", "nDCG@10"]).results
    from_run = evaluate_dataset(qrels, read_run(run, keep_rank=True), ["AP", "nDCG@10"]).results
    assert from_file.to_dict()["per_query"] == from_run.to_dict()["per_query"]
    assert from_file.means["AP"] == pytest.approx((0.5 + 1.0) / 2, abs=1e-15)


def test_the_judgments_error_comes_first(tmp_path):
    _, run = _files(tmp_path)
    bad_run = tmp_path / "bad.txt"
    bad_run.write_text("q1 Q0 d1 1 nan-ish t\n")
    with pytest.raises(DatasetError, match="missing.txt"):
        evaluate_dataset(tmp_path / "missing.txt", bad_run, ["AP"])
    qrels, _ = _files(tmp_path)
    with pytest.raises(FormatError, match="bad.txt"):
        evaluate_dataset(qrels, bad_run, ["AP"])


def _unsorted_files(tmp_path):
    """A run with unsorted entries, a contradicting rank column, a run-only query and a judged
    query it lacks: the checks and the measures both log."""
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 1\nq1 0 d2 0\nq2 0 d3 2\nq3 0 d9 1\n")
    run = tmp_path / "run.txt"
    run.write_text(
        "q1 Q0 d1 1 1.0 t\nq1 Q0 d2 2 3.0 t\nq2 Q0 d3 1 1.0 t\nq2 Q0 d4 2 2.0 t\nq4 Q0 d1 1 1.0 t\n"
    )
    return qrels, run


@pytest.mark.parametrize("profile", ["trec_eval -c", "trec_eval"])
def test_measures_beside_the_checks_give_the_same_values_findings_and_log(
    tmp_path, monkeypatch, profile
):
    """The measures computed in a thread while the checks run: the values, the findings and the
    log lines (the checks', then the measures', in that order) are those of one after the
    other; an error of the measures is raised as it is."""
    import logging

    from nuggetbench import evaluation

    qrels, run = _unsorted_files(tmp_path)
    outcomes = []
    threads: list[str] = []
    original = evaluation.evaluate_quietly

    def spy(*args, **kwargs):
        threads.append(threading.current_thread().name)
        return original(*args, **kwargs)

    monkeypatch.setattr(evaluation, "evaluate_quietly", spy)
    monkeypatch.setattr(evaluation, "usable_cpus", lambda: 2)
    for beside in (False, True):
        monkeypatch.setattr(evaluation, "MEASURES_BESIDE_CHECKS_MIN", 0 if beside else 10**12)
        threads.clear()
        records: list[logging.LogRecord] = []
        handler = logging.Handler(logging.INFO)
        handler.emit = records.append  # type: ignore[method-assign]
        logger = logging.getLogger("nuggetbench")
        level = logger.level
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        # the CLI (run by other tests in this process) quiets the checks' logger
        emitting = [
            logging.getLogger(n)
            for n in ("nuggetbench.data.checks", "nuggetbench.measures.compute")
        ]
        saved = [(e.disabled, e.level) for e in emitting]
        for e in emitting:
            e.disabled = False
            e.setLevel(logging.NOTSET)
        try:
            done = evaluate_dataset(qrels, run, ["AP", "nDCG@10", "RR"], profile=profile)
        finally:
            logger.removeHandler(handler)
            logger.setLevel(level)
            for e, (was_disabled, was_level) in zip(emitting, saved):
                e.disabled = was_disabled
                e.setLevel(was_level)
        assert threads == (["nuggetbench-spy"] if beside else [])
        outcomes.append(
            (
                done.results.to_dict()["per_query"],
                done.results.means,
                [str(f) for f in done.findings],
                [(r.name, r.levelname, r.getMessage()) for r in records],
            )
        )
    assert outcomes[0] == outcomes[1]
    messages = [m for _, _, m in outcomes[0][3]]
    assert any("rank column contradicts" in m for m in messages)
    assert any("run queries have no judgments and were ignored" in m for m in messages)
    last_check = max(i for i, m in enumerate(messages) if "rank column" in m)
    assert all(i > last_check for i, m in enumerate(messages) if "were ignored" in m)
