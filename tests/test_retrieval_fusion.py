"""Run fusion (retrieval.fusion): hand-computed RRF / CombSUM / CombMNZ, presets, specs."""

from __future__ import annotations

import math

import numpy as np
import pytest

from nuggetbench.data import InMemoryCorpus, Queries, Run
from nuggetbench.errors import InputError, SpecError, UnknownNameError
from nuggetbench.retrieval import parse_retriever
from nuggetbench.retrieval.compose.fusion import fuse
from nuggetbench.retrieval.compose.pipeline import Fusion

# run A, q1: d1 3.0, d2 2.0, d3 1.0 ; run B, q1: d3 0.9, d1 0.5 (given unsorted on purpose)
A = Run(["q1", "q1", "q1", "q2"], ["d3", "d1", "d2", "x"], [1.0, 3.0, 2.0, 7.0], name="A")
B = Run(["q1", "q1"], ["d1", "d3"], [0.5, 0.9], name="B")


def _scores(run: Run, q: str) -> dict[str, float]:
    return dict(run[q])


def test_rrf_hand_computed():
    fused = fuse([A, B])  # rrf, k=60
    s = _scores(fused, "q1")
    assert s["d1"] == pytest.approx(1 / 61 + 1 / 62)
    assert s["d2"] == pytest.approx(1 / 62)
    assert s["d3"] == pytest.approx(1 / 63 + 1 / 61)
    assert fused.doc_ids("q1") == ["d1", "d3", "d2"]
    assert fused["q2"] == [("x", pytest.approx(1 / 61))]  # a query present in one run only
    assert fused.metadata["fusion"]["method"] == "rrf" and fused.metadata["inputs"] == ["A", "B"]


def test_rrf_k_weights_and_depth():
    s = _scores(fuse([A, B], k=0, weights=[2, 1]), "q1")
    assert s == pytest.approx({"d1": 2 / 1 + 1 / 2, "d2": 2 / 2, "d3": 2 / 3 + 1 / 1})
    s = _scores(fuse([A, B], depth=1), "q1")
    assert s == pytest.approx({"d1": 1 / 61, "d3": 1 / 61})  # only each run's top document


def test_combsum_minmax_and_trec_tie_order():
    fused = fuse([A, B], method="sum", norm="minmax")
    # A normalised: d1 1, d2 0.5, d3 0 ; B: d3 1, d1 0
    assert _scores(fused, "q1") == pytest.approx({"d1": 1.0, "d2": 0.5, "d3": 1.0})
    assert fused.doc_ids("q1") == ["d3", "d1", "d2"]  # tie at 1.0 broken by doc id, descending
    assert _scores(fused, "q2") == pytest.approx({"x": 1.0})  # single score: min-max gives 1


def test_combsum_zscore_hand_computed():
    s = _scores(fuse([A, B], method="combsum", norm="zscore"), "q1")
    z = math.sqrt(1.5)  # A: mean 2, population std sqrt(2/3): (3-2)/sqrt(2/3) = sqrt(1.5)
    assert s == pytest.approx({"d1": z - 1.0, "d2": 0.0, "d3": -z + 1.0})  # B: mean 0.7, std 0.2


def test_combmnz_anz_max_min():
    assert _scores(fuse([A, B], method="combmnz", norm="minmax"), "q1") == pytest.approx(
        {"d1": 2.0, "d2": 0.5, "d3": 2.0}
    )
    assert _scores(fuse([A, B], method="anz", norm="minmax"), "q1") == pytest.approx(
        {"d1": 0.5, "d2": 0.5, "d3": 0.5}
    )
    assert _scores(fuse([A, B], method="max"), "q1") == pytest.approx(
        {"d1": 3.0, "d2": 2.0, "d3": 1.0}
    )
    assert _scores(fuse([A, B], method="min"), "q1") == pytest.approx(
        {"d1": 0.5, "d2": 2.0, "d3": 0.9}
    )


def test_freshstack_preset():
    many = Run(
        ["q"] * 150,
        [f"d{i:03d}" for i in range(150)],
        [float(150 - i) for i in range(150)],
        name="M",
    )
    other = Run(["q"] * 2, ["d149", "d000"], [1.0, 0.0], name="O")
    fused = fuse([many, other], preset="freshstack")
    assert fused.metadata["fusion"] == {
        "method": "sum",
        "depth": 100,
        "weights": [1.0, 1.0],
        "norm": "minmax",
    }
    s = _scores(fused, "q")
    assert len(s) == 101  # the top 100 of M plus d149 from O
    assert (
        s["d000"] == pytest.approx(1.0)
        and s["d149"] == pytest.approx(1.0)
        and s["d099"] == pytest.approx(0.0)
    )
    plain = _scores(fuse([many, other], method="sum", norm="minmax", depth=100), "q")
    assert set(plain) == set(s)  # the same documents; the preset's scores are rounded
    assert all(abs(plain[d] - s[d]) <= 0.0005 + 1e-7 for d in s) and s["d001"] == 0.99


def test_bad_arguments():
    with pytest.raises(InputError, match="norm does not apply"):
        fuse([A, B], norm="minmax")
    with pytest.raises(UnknownNameError, match="combmnz"):
        fuse([A, B], method="combmnx")
    with pytest.raises(UnknownNameError, match="zscore"):
        fuse([A, B], method="sum", norm="zscor")
    with pytest.raises(InputError, match="one weight per run"):
        fuse([A, B], weights=[1.0])
    with pytest.raises(InputError, match="depth"):
        fuse([A, B], depth=0)
    with pytest.raises(UnknownNameError, match="freshstack"):
        fuse([A, B], preset="freshstak")
    with pytest.raises(InputError):
        fuse([])


def _corpus():
    return InMemoryCorpus.from_dict(
        {
            "a": "cats and dogs",
            "b": "dogs bark loudly",
            "c": "cats purr softly",
            "d": "the river flows",
            "e": "cats cats cats",
        }
    )


def test_fusion_retriever_equals_fusing_the_runs():
    corpus = _corpus()
    queries = Queries({"q1": "cats", "q2": "dogs"})
    f = parse_retriever(
        "fuse(bm25, bm25:k1=0.9,b=0.4,cache=false; method=sum,norm=minmax,weights=0.3/0.7)"
    )
    assert isinstance(f, Fusion) and [r.name for r in f.retrievers] == ["bm25", "bm25:k1=0.9,b=0.4"]
    assert f.retrievers[1].cache is False
    assert f.name == "fuse(bm25, bm25:k1=0.9,b=0.4; method=sum,norm=minmax,weights=0.3/0.7)"
    run = f.index(corpus).search(queries, 3)
    r1 = parse_retriever("bm25").index(corpus).search(queries, 3)
    r2 = parse_retriever("bm25:k1=0.9,b=0.4").index(corpus).search(queries, 3)
    expect = fuse([r1, r2], method="sum", norm="minmax", weights=[0.3, 0.7]).truncate(3)
    for q in queries:
        assert run.doc_ids(q) == expect.doc_ids(q)
        assert [s for _, s in run[q]] == pytest.approx([s for _, s in expect[q]])
    again = parse_retriever(f.name)
    assert again.name == f.name


def test_fuse_spec_errors_and_nesting():
    with pytest.raises(SpecError, match="unknown fusion option"):
        parse_retriever("fuse(bm25, bm25; methd=rrf)")
    with pytest.raises(SpecError, match="needs retrievers"):
        parse_retriever("fuse(; method=rrf)")
    with pytest.raises(SpecError, match="unbalanced"):
        parse_retriever("fuse(bm25, bm25")
    with pytest.raises(UnknownNameError, match="rrf"):
        parse_retriever("fuse(bm25, bm25; method=rff)")
    nested = parse_retriever(
        "fuse(fuse(bm25, bm25:k1=1.2; method=rrf), bm25:b=0.5; preset=freshstack)"
    )
    assert isinstance(nested.retrievers[0], Fusion) and nested.params["preset"] == "freshstack"
    run = nested.index(_corpus()).search(Queries({"q": "cats"}), 2)
    assert len(run.doc_ids("q")) == 2


def test_importing_the_neural_modules_imports_no_model_library():
    import subprocess
    import sys

    code = (
        "import sys\n"
        "import nuggetbench.retrieval.dense.retriever, nuggetbench.retrieval.learned.sparse, nuggetbench.retrieval.learned.colbert\n"
        "import nuggetbench.retrieval.rerankers.cross_encoder, nuggetbench.retrieval.compose.fusion, nuggetbench.retrieval.compose.pipeline\n"
        "from nuggetbench.retrieval import parse_retriever\n"
        "parse_retriever('fuse(bm25, bm25:k1=0.9; method=rrf)')\n"
        "print(sorted(m for m in ('torch', 'sentence_transformers', 'transformers', 'faiss') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_freshstack_preset_equals_the_freshstack_package():
    """``preset=freshstack`` computes what ``freshstack.util.fusion`` computes (its min-max with
    ``+ 1e-8``, the sum, the 3-decimal rounding) on runs given sorted by score, as that
    function reads them: random runs of several retrievers, with documents in common, a
    constant-score query and a query only one run holds."""
    fs_util = pytest.importorskip("freshstack.util")
    rng = np.random.default_rng(7)
    docs = [f"d{i:03d}" for i in range(300)]
    dicts = []
    for r in range(3):
        per_query = {}
        for q in range(6):
            n = int(rng.integers(1, 180))
            chosen = rng.choice(docs, size=n, replace=False)
            scores = rng.normal(10 * r, 3, size=n) if q != 4 else np.full(n, 2.5)
            if q == 5 and r > 0:
                continue
            pairs = zip(chosen.tolist(), scores.tolist())  # trec_eval's order: score, doc id desc
            per_query[f"q{q}"] = dict(sorted(pairs, key=lambda x: (x[1], x[0]), reverse=True))
        dicts.append(per_query)
    dicts[0]["q4"] = {"d002": 1.0, "d001": 1.0}  # a tie, in trec_eval's order (doc id desc)
    expected = fs_util.fusion([dict(d) for d in dicts], depth=100)
    runs = [Run.from_dict(d) for d in dicts]
    fused = fuse(runs, preset="freshstack").to_dict()
    assert set(fused) == set(expected)
    for q, want in expected.items():
        assert fused[q] == pytest.approx(want, abs=0), q  # same documents, same scores
