"""Negative relevance levels are refused with the reason (issue 29, case 21): ``-l -1`` scored
P@5 0.24 where trec_eval 10.0 gives 0.36, since trec_eval counts documents missing from the
qrels (level -1) as relevant in P@k but not in num_rel_ret."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from nuggetbench.cli import cli
from nuggetbench.errors import InputError, NuggetbenchError
from nuggetbench.measures.profiles import trec_eval_profile


@pytest.fixture()
def files(tmp_path):
    qrels = tmp_path / "q.txt"
    qrels.write_text("q1 0 d1 1\nq1 0 d2 0\n")
    run = tmp_path / "r.trec"
    run.write_text("q1 Q0 d1 1 3 t\nq1 Q0 x 2 2 t\nq1 Q0 d2 3 1 t\n")
    return str(qrels), str(run)


@pytest.mark.parametrize(
    "extra", [["-l", "-1"], ["--profile", "trec_eval -l -2"], ["-m", "P(rel=-1)@5"]]
)
def test_a_negative_level_is_refused_naming_the_value(files, extra):
    args = ["evaluate", *files, *extra, "--format", "trec_eval"]
    args += ["-m", "P.5"] if "-m" not in extra else []
    result = CliRunner().invoke(cli, args)
    assert result.exit_code != 0
    text = result.output + (str(result.exception) if result.exception else "")
    assert "-1" in text or "-2" in text
    assert "0.4000" not in result.stdout and "Traceback" not in result.output
    if isinstance(result.exception, NuggetbenchError):
        assert "-l 0" in str(result.exception)  # what to do instead


def test_level_zero_still_counts_every_judged_document(files):
    result = CliRunner().invoke(cli, ["evaluate", *files, "-m", "P.5", "-l", "0"])
    assert result.exit_code == 0, result.output
    assert "0.4000" in result.stdout  # d1 and d2 (grade 0) of 5


def test_the_library_refuses_it_too():
    with pytest.raises(InputError, match="-l must be 0 or more, got -1"):
        trec_eval_profile(rel_level=-1)
