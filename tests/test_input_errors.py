"""Errors that name the real problem, and ``nb.evaluate`` warning where the CLI warns (issue 30,
items 5-7). Synthetic files: always run."""

from __future__ import annotations

import logging
import warnings

import pytest
from click.testing import CliRunner

import nuggetbench as nb
from nuggetbench.cli.evaluate import evaluate_command
from nuggetbench.data import read_trec_qrels, read_trec_run
from nuggetbench.errors import EvaluationWarning, FormatError
from nuggetbench.evaluation import evaluate_dataset


@pytest.fixture
def files(tmp_path):
    (tmp_path / "qrels.txt").write_text("q1 0 d1 1\nq1 0 d2 0\nq2 0 d3 1\n")
    (tmp_path / "run.trec").write_text("q1 Q0 d1 1 2.0 sys\nq1 Q0 d2 2 1.0 sys\n")
    return tmp_path


def _error(args) -> str:
    res = CliRunner().invoke(evaluate_command, [str(a) for a in args])
    assert res.exit_code != 0
    return str(res.exception)


def test_missing_qrels_path_says_it_does_not_exist(files, monkeypatch):
    monkeypatch.chdir(files)
    for missing in ("nope.qrels", "./nope.qrels", str(files / "sub" / "nope.qrels")):
        message = _error([missing, files / "run.trec"])
        assert "does not exist" in message and "not a folder" not in message, message


def test_swapped_qrels_and_run_are_recognised(files):
    message = _error([files / "run.trec", files / "qrels.txt"])
    assert "run line" in message and "wrong order" in message
    assert "--ignore-trailing" not in message
    with pytest.raises(FormatError, match="judgments line.*wrong order"):
        read_trec_run(files / "qrels.txt")


def test_extra_qrels_fields_do_not_point_at_a_run_option(tmp_path):
    (tmp_path / "q.txt").write_text("q1 0 d1 1 extra\n")
    with pytest.raises(FormatError) as err:
        read_trec_qrels(tmp_path / "q.txt")
    assert "--ignore-trailing" not in str(err.value) and "wrong order" not in str(err.value)


def test_extra_run_fields_still_point_at_ignore_trailing(tmp_path):
    (tmp_path / "r.trec").write_text("q1 Q0 d1 1 2.0 sys and more\n")
    with pytest.raises(FormatError, match="--ignore-trailing"):
        read_trec_run(tmp_path / "r.trec")


def test_nb_evaluate_warns_a_judged_query_missing_from_the_run():
    with pytest.warns(EvaluationWarning, match="1 judged queries are missing"):
        res = nb.evaluate({"q1": {"d1": 1}, "q2": {"d2": 1}}, {"q1": {"d1": 1.0}}, "nDCG@10")
    assert res.means["nDCG@10"] == pytest.approx(0.5)


def test_nb_evaluate_warns_what_the_cli_prints(files, caplog):
    """One source: every warning finding of ``evaluate_dataset`` (what the CLI prints) is
    warned by ``nb.evaluate``, once (the checks' own log lines are not repeated)."""
    (files / "odd.trec").write_text("q1 Q0 D1 1 1.0 s\nq1 Q0 D2 2 2.0 s\nq9 Q0 d3 1 1.0 s\n")
    cli = evaluate_dataset(str(files / "qrels.txt"), files / "odd.trec", ["AP"])
    printed = [f.message for f in cli.findings if f.is_warning]
    assert len(printed) >= 2  # missing queries, unsorted, ids never judged...
    checks_log = caplog.at_level(logging.WARNING, logger="nuggetbench.data.checks")
    with checks_log, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        nb.evaluate(str(files / "qrels.txt"), str(files / "odd.trec"), "AP")
    warned = [str(w.message) for w in caught if issubclass(w.category, EvaluationWarning)]
    assert warned == printed
    assert not [r for r in caplog.records if r.name == "nuggetbench.data.checks"]


def test_nb_evaluate_is_quiet_on_clean_input(files):
    with warnings.catch_warnings():
        warnings.simplefilter("error", EvaluationWarning)
        nb.evaluate({"q1": {"d1": 1}}, {"q1": {"d1": 1.0, "d2": 0.5}}, "AP")


def test_nb_evaluate_checks_false_neither_checks_nor_warns():
    with warnings.catch_warnings():
        warnings.simplefilter("error", EvaluationWarning)
        res = nb.evaluate(
            {"q1": {"d1": 1}, "q2": {"d2": 1}}, {"q1": {"d1": 1.0}}, "AP", checks=False
        )
    assert res.means["AP"] == pytest.approx(0.5)
