"""One averaging per command line (issue 38, item 1): the output format never changes a number.

``evaluate`` averages over every judged query (``trec_eval -c``) unless ``--profile`` says
otherwise, in every format, ``--format trec_eval`` included; trec_eval's own default (no ``-c``)
is had by name (``--profile trec_eval``) or from the drop-in ``nuggetbench trec_eval``. Every
output says which queries it averaged. The numbers are checked against pytrec_eval, which scores
each query of the run; its ``-c`` mean is their sum over the judged queries.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from click.testing import CliRunner

from nuggetbench.cli import cli

FORMATS = ["table", "json", "jsonl", "csv", "tsv", "markdown", "latex", "trec_eval"]


@pytest.fixture
def files(tmp_path):
    """Graded qrels of 6 queries; a run that lacks 2 of them and holds one unjudged query."""
    rng = np.random.default_rng(5)
    qrels, run = {}, {}
    for i in range(6):
        q = f"q{i}"
        qrels[q] = {f"d{j}": int(rng.integers(0, 3)) for j in rng.choice(30, 12, replace=False)}
        if i < 4:
            docs = rng.choice(30, 20, replace=False)
            run[q] = {f"d{j}": float(s) for j, s in zip(docs, rng.normal(size=20))}
    run["x9"] = {"d1": 1.0}
    qpath, rpath = tmp_path / "qrels.txt", tmp_path / "run.trec"
    qpath.write_text(
        "".join(f"{q} 0 {d} {g}\n" for q, docs in qrels.items() for d, g in docs.items())
    )
    lines = []
    for q, docs in run.items():
        ranked = sorted(docs.items(), key=lambda x: (-x[1], x[0]))
        lines += [f"{q} Q0 {d} {r + 1} {s} t\n" for r, (d, s) in enumerate(ranked)]
    rpath.write_text("".join(lines))
    return qpath, rpath, qrels, run


def _numbers(fmt: str, stdout: str) -> list[float]:
    """The value(s) of AP printed in *fmt*."""
    if fmt == "json":
        return [json.loads(stdout)["AP"]]
    if fmt == "jsonl":
        return [json.loads(line)["value"] for line in stdout.splitlines()]
    if fmt == "csv":
        return [float(line.split(",")[-1]) for line in stdout.splitlines()[1:] if line]
    if fmt == "tsv":  # trec_eval -q lines: measure, query, value
        return [float(line.split("\t")[-1]) for line in stdout.splitlines() if line]
    if fmt == "trec_eval":
        return [float(stdout.split("\t")[-1])]
    return [float(x) for x in re.findall(r"\b0\.\d{4}\b", stdout)]


@pytest.mark.parametrize("profile", [None, "trec_eval"])
def test_every_format_prints_one_number(files, profile):
    """Each format of one command line prints the same mean (to the format's decimals), and it
    is pytrec_eval's: the sum over the run's judged queries divided by the judged queries
    (-c, the default) or by the queries in both (``--profile trec_eval``)."""
    pytrec_eval = pytest.importorskip("pytrec_eval")
    qpath, rpath, qrels, run = files
    per = pytrec_eval.RelevanceEvaluator(qrels, {"map"}).evaluate(run)
    judged_in_run = [q for q in qrels if q in run]
    total = sum(per[q]["map"] for q in judged_in_run)
    expected = total / (len(qrels) if profile is None else len(judged_in_run))
    extra = [] if profile is None else ["--profile", profile]
    said = (
        "averaged over 6 queries of the qrels; 2 missing from the run scored 0"
        if profile is None
        else "averaged over 4 queries in both the run and the qrels; 2 missing from the run left out"
    ) + "; 1 run queries without judgments ignored"
    for fmt in FORMATS:
        out = CliRunner(env={"COLUMNS": "200"}).invoke(
            cli, ["evaluate", str(qpath), str(rpath), "-m", "AP", "--format", fmt, *extra]
        )
        assert out.exit_code == 0, (fmt, out.output)
        values = _numbers(fmt, out.stdout)
        assert values, (fmt, out.stdout)
        digits = 4 if fmt in ("table", "markdown", "latex", "trec_eval") else 12
        assert all(v == pytest.approx(expected, abs=10**-digits) for v in values), (fmt, values)
        where = out.stdout if fmt in ("table", "markdown", "latex", "json") else out.stderr
        assert said in " ".join(where.split()), (fmt, where)


def test_the_drop_in_takes_trec_eval_defaults(files):
    """``nuggetbench trec_eval`` averages as trec_eval: without -c over the queries in both,
    with -c over every judged query; evaluate's trec_eval text equals the drop-in's -c text."""
    pytrec_eval = pytest.importorskip("pytrec_eval")
    qpath, rpath, qrels, run = files
    per = pytrec_eval.RelevanceEvaluator(qrels, {"map"}).evaluate(run)
    total = sum(per[q]["map"] for q in qrels if q in run)
    plain = CliRunner().invoke(cli, ["trec_eval", "-m", "map", str(qpath), str(rpath)])
    complete = CliRunner().invoke(cli, ["trec_eval", "-c", "-m", "map", str(qpath), str(rpath)])
    evaluate = CliRunner().invoke(
        cli, ["evaluate", str(qpath), str(rpath), "-m", "map", "--format", "trec_eval"]
    )
    assert plain.stdout == f"map                   \tall\t{total / 4:.4f}\n"
    assert complete.stdout == f"map                   \tall\t{total / 6:.4f}\n"
    assert evaluate.stdout == complete.stdout
    assert "averaged over 4 queries in both the run and the qrels" in plain.stderr


def test_issue_example_on_trec_eval_results_trunc(shared_data):
    """trec_eval 10.0's results.trunc (query 302 judged, absent): 0.1016 in every format of
    evaluate's line, 0.1523 where trec_eval's own averaging is asked for."""
    folder = shared_data / "trec_eval10"
    if not folder.is_dir():
        pytest.skip("../shared/data/trec_eval10 is absent")
    base = [str(folder / "qrels.test"), str(folder / "results.trunc"), "-m", "map"]
    for fmt in ("table", "json", "trec_eval", "markdown"):
        out = CliRunner().invoke(cli, ["evaluate", *base, "--ignore-trailing", "--format", fmt])
        assert out.exit_code == 0, out.output
        assert [round(v, 4) for v in _numbers(fmt, out.stdout.replace("map", "AP"))] == [0.1016]
    own = CliRunner().invoke(
        cli, ["evaluate", *base, "--ignore-trailing", "--profile", "trec_eval", "--format", "json"]
    )
    assert round(json.loads(own.stdout)["map"], 4) == 0.1523
    drop_in = CliRunner().invoke(cli, ["trec_eval", *base[2:], *base[:2]])
    assert drop_in.stdout == "map                   \tall\t0.1523\n"
