"""docs/contributing.md, proved: a measure family, a dataset family and a retriever, each added as
a module plus one registry line (the modules are tests/example_*.py), used together end to end."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest
from click.testing import CliRunner

from nuggetbench.cli import cli
from nuggetbench.data import Qrels, Run
from nuggetbench.datasets import registry
from nuggetbench.datasets.registry import Entry, dataset_info, load_dataset
from nuggetbench.errors import SpecError, UnknownNameError
from nuggetbench.measures import get_family, parse_measure
from nuggetbench.measures import registry as measure_registry
from nuggetbench.measures import score as evaluate
from nuggetbench.retrieval import parse_retriever, retriever_params
from nuggetbench.retrieval import spec as retrieval_spec
from nuggetbench.retrieval.spec import register_retriever


@pytest.fixture
def plugins(monkeypatch, tmp_path):
    """The three registry lines, undone after the test."""
    monkeypatch.setattr(measure_registry, "FAMILY_MODULES", measure_registry.FAMILY_MODULES)
    monkeypatch.setattr(registry, "REGISTRY", list(registry.REGISTRY))
    monkeypatch.setattr(retrieval_spec, "RETRIEVERS", retrieval_spec.RETRIEVERS.copy())
    # 1. a measure family: one provider module
    measure_registry.FAMILY_MODULES.append("example_rbp")
    # 2. a dataset family: one registry entry
    registry.register(Entry("tsvtest/*", "example_family:FAMILY", ids=("tsvtest/small",)))
    # 3. a retriever: one prefix
    register_retriever("overlap", "example_overlap:TermOverlap")
    folder = tmp_path / "small"
    folder.mkdir()
    (folder / "docs.tsv").write_text(
        "d1\tred apple pie\nd2\tgreen apple\nd3\tblue sky\nd4\tRed sky\n"
    )
    (folder / "queries.tsv").write_text("q1\tred apple\nq2\tblue sky\nq3\tnothing here\n")
    (folder / "qrels.tsv").write_text("q1\td1\t2\nq1\td2\t1\nq2\td3\t1\nq2\td4\t0\n")
    monkeypatch.setenv("EXAMPLE_TSV_ROOT", str(tmp_path))
    monkeypatch.setenv("NUGGETBENCH_HOME", str(tmp_path / "home"))
    yield
    measure_registry.FAMILY_MODULES.remove("example_rbp")
    measure_registry.FAMILIES.pop("SimpleRBP", None)
    measure_registry.FAMILIES.loaded.discard("example_rbp")
    sys.modules.pop("example_rbp", None)  # a later import registers the family again


def _rbp(grades_in_rank_order, p):
    return (1 - p) * sum(p**i for i, g in enumerate(grades_in_rank_order) if g >= 1)


def test_measure_family_rbp_matches_the_formula(plugins):
    fam = get_family("SimpleRBP")
    assert str(parse_measure("SimpleRBP(p=0.5)@3")) == "SimpleRBP(p=0.5)@3"
    assert fam.params["p"].description  # declared once, printed by `nuggetbench measures`
    with pytest.raises(SpecError, match="p=1.5"):
        parse_measure("SimpleRBP(p=1.5)")
    rng = np.random.default_rng(7)
    for _ in range(50):
        n = int(rng.integers(1, 12))
        grades = rng.integers(-1, 3, size=n).tolist()
        scores = rng.permutation(n).astype(float)  # distinct: no tie question
        run = Run(["q"] * n, [f"d{i}" for i in range(n)], scores)
        qrels = Qrels.from_dict({"q": {f"d{i}": g for i, g in enumerate(grades)}})
        ranked = [grades[int(d[1:])] for d in run.doc_ids("q")]
        for p, k in ((0.8, None), (0.5, 3)):
            m = f"SimpleRBP(p={p})" + (f"@{k}" if k else "")
            got = evaluate(qrels, run, [m]).means[m]
            assert got == pytest.approx(_rbp(ranked[:k] if k else ranked, p), abs=1e-12)


def test_dataset_family_declares_its_conventions(plugins):
    ds = load_dataset("tsvtest/small")
    assert ds.default_measures == ["P@1", "SimpleRBP(p=0.5)"] and ds.default_profile == "trec_eval"
    assert set(ds.queries) == {"q1", "q2"}  # q3 has no judgment
    assert ds.qrels["q2"] == {"d3": 1}  # min_grade=1 dropped the grade-0 judgment
    assert load_dataset("tsvtest/small", min_grade="0").qrels["q2"] == {"d3": 1, "d4": 0}
    assert "min_grade" in dataset_info("tsvtest/small")["options"]
    with pytest.raises(UnknownNameError, match="min_grade"):
        load_dataset("tsvtest/small", min_grad=2)


def test_retriever_declares_its_options(plugins):
    r = parse_retriever("overlap:lowercase=false")
    assert r.name == "overlap:lowercase=False" and r.options.lowercase is False
    assert set(retriever_params(type(r))) == {"lowercase", "min_terms"}
    with pytest.raises(SpecError, match="min_terms"):
        parse_retriever("overlap:min_terms=0")
    run = (
        parse_retriever("overlap")
        .index(load_dataset("tsvtest/small").corpus)
        .search(load_dataset("tsvtest/small").queries, 2)
    )
    assert run.doc_ids("q1") == ["d1", "d4"]  # 2 shared terms, then 1 (ties: doc id descending)


def test_all_three_together_from_the_command_line(plugins, tmp_path):
    out = tmp_path / "out"
    result = CliRunner().invoke(
        cli,
        [
            "run",
            "tsvtest/small",
            "-r",
            "overlap",
            "-O",
            "min_grade=1",
            "--format",
            "json",
            "-o",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    means = json.loads(result.stdout)["results"]["overlap"]
    # q1 "red apple": d1 (2 shared terms), then d4 and d2 tie at 1: d4 first (doc id descending)
    # q2 "blue sky": d3 (2), then d4 (1, judged 0 and dropped by min_grade=1)
    assert means["P@1"] == pytest.approx(1.0)
    rbp_q1 = _rbp([2, 0, 1], 0.5)  # d1 relevant, d4 unjudged, d2 relevant
    rbp_q2 = _rbp([1, 0], 0.5)
    assert means["SimpleRBP(p=0.5)"] == pytest.approx((rbp_q1 + rbp_q2) / 2)
    assert (out / "runs" / "overlap.trec").is_file()
    listed = CliRunner().invoke(cli, ["retrievers"])
    assert listed.exit_code == 0 and "overlap" in listed.output
