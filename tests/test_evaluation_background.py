"""``evaluate_dataset`` reads the run file in a thread while the judgments load
(:func:`nuggetbench._threads.in_background`): same values, the judgments' error first."""

from __future__ import annotations

import threading

import pytest

from nuggetbench._threads import in_background
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


def _files(tmp_path):
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 1\nq1 0 d2 0\nq2 0 d3 2\n")
    run = tmp_path / "run.txt"
    run.write_text("q1 Q0 d2 1 3.0 t\nq1 Q0 d1 2 2.0 t\nq2 Q0 d3 1 1.0 t\n")
    return qrels, run


def test_a_run_read_in_the_background_gives_the_values_of_a_run_read_first(tmp_path):
    from nuggetbench.data import read_run

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
