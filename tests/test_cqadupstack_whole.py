"""``beir/cqadupstack`` as a whole: the mean of its 12 forums' scores (BEIR/MTEB), with the
per-forum table, on a synthetic 12-forum folder."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
from click.testing import CliRunner

from nuggetbench.cli import cli
from nuggetbench.data import Run
from nuggetbench.data import read_trec_run as read_run
from nuggetbench.datasets import load_dataset
from nuggetbench.datasets._ids import CQADUPSTACK_FORUMS
from nuggetbench.errors import InputError
from nuggetbench.evaluation import evaluate_dataset
from nuggetbench.measures import score as evaluate
from test_datasets_beir import write_beir

MEASURES = ["nDCG@10", "R@100", "RR@10", "P@2"]


@pytest.fixture
def forums(tmp_path, monkeypatch):
    """12 forum folders whose query and doc ids collide across forums (as the real ones may),
    and a whole run with ``<forum>/<id>`` ids; forums differ in size so that the mean of
    forums differs from the mean over all queries."""
    rng = random.Random(12)
    lines = []
    for f_index, forum in enumerate(CQADUPSTACK_FORUMS):
        n_q = 1 + f_index % 4
        corpus = {f"d{i}": ("", f"text {forum} {i}") for i in range(6)}
        queries = {f"q{i}": f"question {i}" for i in range(n_q)}
        qrels = [(f"q{i}", f"d{rng.randrange(6)}", rng.choice((1, 2))) for i in range(n_q)]
        write_beir(
            tmp_path / "beir" / "cqadupstack" / forum,
            corpus=corpus,
            queries=queries,
            qrels=qrels,
        )
        for i in range(n_q):
            for rank, d in enumerate(rng.sample(range(6), 4), start=1):
                lines.append(f"{forum}/q{i} Q0 {forum}/d{d} {rank} {10 - rank} sys\n")
    run_path = tmp_path / "whole.run"
    run_path.write_text("".join(lines))
    monkeypatch.setenv("NUGGETBENCH_DATA", str(tmp_path))
    return run_path


def _forum_means(run_path, profile="trec_eval -c"):
    """Each forum scored on its own (its own ids), the way BEIR/MTEB do it."""
    whole = read_run(run_path)
    out = {}
    for forum in CQADUPSTACK_FORUMS:
        ds = load_dataset(f"beir/cqadupstack/{forum}")
        q, d, s = [], [], []
        for qid, ranking in whole.items():
            if qid.startswith(forum + "/"):
                for doc, score in ranking:
                    q.append(qid.split("/", 1)[1])
                    d.append(doc.split("/", 1)[1])
                    s.append(score)
        out[forum] = evaluate(ds.qrels, Run(q, d, s), MEASURES, profile=profile).means
    return out


def test_whole_loads_with_forum_prefixed_ids(forums):
    ds = load_dataset("beir/cqadupstack")
    assert ds.metadata["mean_of_groups"] == "/" and len(ds.metadata["groups"]) == 12
    assert "android/q0" in ds.queries and ds.corpus["gis/d3"].doc_id == "gis/d3"
    assert len(ds.corpus) == 12 * 6 and "android/d0" in list(ds.corpus)
    assert len(ds.qrels) == sum(1 + i % 4 for i in range(12))


@pytest.mark.parametrize("profile", ["trec_eval -c", "beir"])
def test_mean_of_forums_equals_each_forum_scored_alone(forums, profile):
    expected = _forum_means(forums, profile)
    ev = evaluate_dataset("beir/cqadupstack", forums, MEASURES, profile)
    for m in MEASURES:
        mean = float(np.mean([expected[f][m] for f in expected]))
        if profile == "beir":  # BEIR's means are rounded to 5 decimals: each forum's and this
            mean = round(mean, 5)
        assert ev.results.means[m] == pytest.approx(mean, abs=1e-12)
    # the unweighted mean of forums is not the mean over all queries (forums differ in size)
    assert any(
        abs(ev.results.means[m] - float(ev.results.per_query[m].mean())) > 1e-6 for m in MEASURES
    )
    table = ev.summaries[0]
    assert list(table.rows)[:12] == sorted(CQADUPSTACK_FORUMS)
    assert table.rows["gis"] == pytest.approx(expected["gis"])
    assert table.rows["mean of 12"] == ev.results.means


def test_evaluate_command_prints_the_per_forum_table(forums):
    runner = CliRunner()
    out = runner.invoke(cli, ["evaluate", "beir/cqadupstack", str(forums), *MEASURES])
    assert out.exit_code == 0, out.output
    for forum in CQADUPSTACK_FORUMS:
        assert forum in out.output
    assert "mean of 12" in out.output
    js = runner.invoke(
        cli, ["evaluate", "beir/cqadupstack", str(forums), *MEASURES, "--format", "json"]
    )
    expected = _forum_means(forums)
    got = json.loads(js.stdout)
    for m in MEASURES:
        assert got[m] == pytest.approx(np.mean([expected[f][m] for f in expected]))


def test_a_run_missing_a_forum_or_without_prefixes_is_refused(forums, tmp_path):
    lines = [x for x in forums.read_text().splitlines(True) if not x.startswith("webmasters/")]
    partial = tmp_path / "partial.run"
    partial.write_text("".join(lines))
    with pytest.raises(InputError, match="webmasters"):
        evaluate_dataset("beir/cqadupstack", partial, MEASURES)
    bare = tmp_path / "bare.run"
    bare.write_text("q0 Q0 d1 1 1.0 sys\n")
    with pytest.raises(InputError, match="<group>/<id>"):
        evaluate_dataset("beir/cqadupstack", bare, MEASURES)
