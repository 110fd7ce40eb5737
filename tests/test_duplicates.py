"""Duplicate (query, doc) pairs: ``duplicates="first"`` (rank files' default) or ``"error"``
(TREC and JSON runs' default), in the readers, ``load_run`` and ``nuggetbench evaluate``."""

from __future__ import annotations

import json
import logging

import pytest
from click.testing import CliRunner

from nuggetbench.cli import cli
from nuggetbench.data import Qrels, Run
from nuggetbench.data import read_run as load_run
from nuggetbench.data import read_trec_run as read_run
from nuggetbench.data.formats.rankfile import read_rank_file
from nuggetbench.errors import DuplicateError, InputError
from nuggetbench.measures import score as evaluate


def test_run_first_occurrence_wins_and_warns(caplog):
    with caplog.at_level(logging.WARNING, logger="nuggetbench.data.run"):
        run = Run(
            ["q", "q", "p", "q", "q"],
            ["a", "b", "a", "a", "c"],
            [1.0, 3.0, 1.0, 9.0, 2.0],
            duplicates="first",
            source="x.run",
        )
    assert run.to_dict() == {"p": {"a": 1.0}, "q": {"b": 3.0, "c": 2.0, "a": 1.0}}  # 9.0 dropped
    [record] = caplog.records
    message = record.getMessage()
    assert "x.run" in message and "'q'" in message and "'a'" in message
    assert "positions 1, 3" in message  # 1-based positions among query q's entries
    # the kept entries keep their input positions (for input-order ties)
    assert sorted(run.input_order.tolist()) == [0, 1, 2, 4]
    with pytest.raises(DuplicateError, match=r"'q'.*'a'"):
        Run(["q", "q"], ["a", "a"], [1.0, 2.0])
    with pytest.raises(InputError, match="duplicates must be one of"):
        Run(["q"], ["a"], [1.0], duplicates="last")


def test_no_duplicates_no_change():
    plain = Run(["q", "q"], ["a", "b"], [1.0, 2.0])
    first = Run(["q", "q"], ["a", "b"], [1.0, 2.0], duplicates="first")
    assert plain == first and first.input_order.tolist() == [1, 0]


def _files(tmp_path):
    trec = tmp_path / "dup.run"
    trec.write_text("q1 Q0 d1 1 3.0 t\nq1 Q0 d2 2 2.0 t\nq1 Q0 d1 3 1.0 t\n")
    ranks = tmp_path / "dup.json"
    ranks.write_text(json.dumps({"q1": ["d3", "d1", "d3", "d2"]}))
    qrels = tmp_path / "qrels"
    qrels.write_text("q1 0 d1 1\nq1 0 d2 0\nq1 0 d3 1\n")
    return trec, ranks, qrels


def test_readers_defaults_and_option(tmp_path):
    trec, ranks, _ = _files(tmp_path)
    with pytest.raises(DuplicateError, match=r"dup\.run.*'q1'.*'d1'"):
        read_run(trec)
    with pytest.raises(DuplicateError):
        load_run(trec)
    assert load_run(trec, duplicates="first")["q1"] == [("d1", 3.0), ("d2", 2.0)]
    # a rank file keeps the first occurrence by default; the documents below move up one place
    assert load_run(ranks).doc_ids("q1") == ["d3", "d1", "d2"]
    assert read_rank_file(ranks).doc_ids("q1") == ["d3", "d1", "d2"]
    with pytest.raises(DuplicateError):
        load_run(ranks, duplicates="error")
    with pytest.raises(InputError, match="duplicates must be one of"):
        load_run(ranks, duplicates="keep")


def test_rank_file_scored_as_birco_where_the_repeat_is_below_the_cutoff(tmp_path):
    """BIRCO's rank2metric.py scores a list as written: recall from the set of the top k, the
    reciprocal rank from the first relevant document. With the repeat below the cutoff, first
    occurrence wins gives the same values; inside the cutoff the repeat takes a slot in BIRCO's
    top k (R@3 below: BIRCO 1/3 from {d5, d3}, ours 2/3 from [d5, d3, d1])."""
    qrels = Qrels(
        ["q1"] * 4, ["d1", "d2", "d3", "d4"], [1, 0, 2, 0]
    )  # relevant: d1, d3 (BIRCO: >= 1)
    path = tmp_path / "ranks.json"
    path.write_text(json.dumps({"q1": ["d5", "d3", "d2", "d4", "d1", "d2"]}))
    res = evaluate(qrels, load_run(path), ["R@2", "R@5", "RRmax@10"], profile="birco")
    # BIRCO: R@2 = |{d5, d3} & {d1, d3}| / 2 = 50; R@5 = |{d5,d3,d2,d4,d1} & rel| / 2 = 100;
    # MRR@10 (its ``reciprocal_rank``: first document of the top grade, d3 at rank 2) = 50
    assert res.means == {"R@2": 50.0, "R@5": 100.0, "RRmax@10": 50.0}
    path.write_text(json.dumps({"q1": ["d5", "d3", "d3", "d1"]}))
    ours = evaluate(qrels, load_run(path), ["R@3"], profile="birco").means["R@3"]
    assert ours == pytest.approx(100.0)  # BIRCO's own value would be 50 (d3 counted once)


def test_evaluate_command_duplicates_option(tmp_path):
    trec, ranks, qrels = _files(tmp_path)
    runner = CliRunner()
    refused = runner.invoke(cli, ["evaluate", str(qrels), str(trec), "P@2"])
    assert isinstance(refused.exception, DuplicateError)
    assert "--duplicates first" in str(refused.exception)
    ok = runner.invoke(
        cli,
        ["evaluate", str(qrels), str(trec), "P@2", "--duplicates", "first", "--format", "json"],
    )
    assert ok.exit_code == 0, ok.output
    assert json.loads(ok.stdout)["P@2"] == 0.5  # d1 (first line, score 3) then d2
    rank_default = runner.invoke(
        cli, ["evaluate", str(qrels), str(ranks), "P@2", "--format", "json"]
    )
    assert rank_default.exit_code == 0 and json.loads(rank_default.stdout)["P@2"] == 1.0
    rank_error = runner.invoke(cli, ["evaluate", str(qrels), str(ranks), "--duplicates", "error"])
    assert isinstance(rank_error.exception, DuplicateError)
