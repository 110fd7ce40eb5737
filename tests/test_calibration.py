"""Calibration by the FreshStack paper's equations (section 5.2.1, eq. 2-4) and its three-level
judgment summary (Table 5), on hand-computed cases."""

from __future__ import annotations

import json
import math

import pytest

from nuggetbench.builder.calibration import (
    NuggetLabel,
    SupportLabel,
    calibrate,
    judgment_levels,
    nugget_quality,
    read_labels,
)
from nuggetbench.builder.plan import parse_plan
from nuggetbench.errors import FormatError, InputError


def _labels():
    # q1: 5 nuggets; A (hallucinated) = {a, b}; B (minor/redundant) = {b, c}; C = 2
    # q2: 2 nuggets, none flagged; C = 0
    return [
        NuggetLabel("q1", "a", True, False),
        NuggetLabel("q1", "b", True, True),
        NuggetLabel("q1", "c", False, True),
        NuggetLabel("q1", "d", False, False),
        NuggetLabel("q1", "e", False, False),
        NuggetLabel("q2", "f", False, False),
        NuggetLabel("q2", "g", False, False),
    ]


def test_paper_equations_per_question_micro_and_macro():
    out = nugget_quality(_labels(), {"q1": 2, "q2": 0})
    assert out["formula"] == "freshstack"
    # eq. 2: (|N| - sum(B)) / |N| = (5 - 2) / 5; eq. 3: (5 - 2) / (5 - 2 + 2);
    # eq. 4: (|N| - sum(A)) / |N| = (5 - 2) / 5 (b counts in both A and B)
    assert out["per_query"]["q1"] == pytest.approx(
        {"precision": 3 / 5, "recall": 3 / 5, "groundedness": 3 / 5}
    )
    assert out["per_query"]["q2"] == pytest.approx(
        {"precision": 1.0, "recall": 1.0, "groundedness": 1.0}
    )
    # micro: pooled N = 7, sum(B) = 2, sum(A) = 2, C = 2
    assert out["micro"] == pytest.approx(
        {"precision": 5 / 7, "recall": 5 / 7, "groundedness": 5 / 7}
    )
    assert out["macro"] == pytest.approx({"precision": 0.8, "recall": 0.8, "groundedness": 0.8})


def test_strict_variant_also_removes_hallucinated_nuggets():
    out = nugget_quality(_labels(), {"q1": 2}, formula="strict")
    # H = {a, b} = 2, R = minor and not hallucinated = {c} = 1: good = 5 - 2 - 1 = 2
    assert out["per_query"]["q1"] == pytest.approx(
        {"precision": 2 / 5, "recall": 2 / 4, "groundedness": 3 / 5}
    )
    with pytest.raises(InputError, match="unknown calibration formula"):
        nugget_quality(_labels(), {}, formula="paper")


def test_recall_undefined_when_every_nugget_is_minor_and_none_missing():
    labels = [NuggetLabel("q", "a", False, True), NuggetLabel("r", "b", False, False)]
    out = nugget_quality(labels, {})
    assert math.isnan(out["per_query"]["q"]["recall"]) and out["per_query"]["q"]["precision"] == 0
    assert out["macro"]["recall"] == 1.0  # the undefined question is left out of the mean


def test_table_5_judgment_levels():
    support = [
        SupportLabel("q", "n", f"d{i}", lvl != "non_relevant", None, lvl)
        for i, lvl in enumerate(["relevant"] * 6 + ["partially_relevant"] * 3 + ["non_relevant"])
    ]
    levels = judgment_levels(support)
    assert levels["pairs"] == 10
    assert levels["relevant"] == 0.6 and levels["partially_relevant"] == 0.3
    assert levels["non_relevant"] == 0.1
    assert levels["counts"] == {"relevant": 6, "partially_relevant": 3, "non_relevant": 1}
    assert judgment_levels([SupportLabel("q", "n", "d", True)]) is None


def test_labels_file_with_three_levels_and_the_report(tmp_path):
    path = tmp_path / "labels.jsonl"
    rows = [
        {"type": "nugget", "query_id": "1", "nugget_id": "1_0", "hallucinated": False},
        {
            "type": "nugget",
            "query_id": "1",
            "nugget_id": "1_1",
            "hallucinated": True,
            "minor_or_redundant": True,
        },
        {"type": "missing", "query_id": "1", "missing": 1},
        {
            "type": "support",
            "query_id": "1",
            "nugget_id": "1_0",
            "doc_id": "d1",
            "relevance": "relevant",
            "judge": True,
        },
        {
            "type": "support",
            "query_id": "1",
            "nugget_id": "1_0",
            "doc_id": "d2",
            "relevance": "Partially relevant",
            "judge": True,
        },
        {
            "type": "support",
            "query_id": "1",
            "nugget_id": "1_1",
            "doc_id": "d3",
            "relevance": "non-relevant",
            "judge": True,
        },
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows))
    nug, missing, support = read_labels(path)
    assert [s.relevance for s in support] == ["relevant", "partially_relevant", "non_relevant"]
    assert [s.supported for s in support] == [True, True, False]  # partially relevant: supported
    out = calibrate(nug, missing, support)
    # N = 2, sum(A) = 1, sum(B) = 1, C = 1
    assert out["nuggets"]["micro"] == pytest.approx(
        {"precision": 1 / 2, "recall": 1 / 2, "groundedness": 1 / 2}
    )
    assert out["judgments"]["relevant"] == pytest.approx(1 / 3)
    assert out["judge"]["accuracy"] == pytest.approx(2 / 3)
    strict = calibrate(nug, missing, support, formula="strict")["nuggets"]["micro"]
    assert strict["precision"] == pytest.approx(1 / 2)  # 1_1 is both: removed once either way
    path.write_text(json.dumps({**rows[3], "relevance": "somewhat"}) + "\n")
    with pytest.raises(FormatError, match="line 1.*somewhat"):
        read_labels(path)
    path.write_text(json.dumps({k: v for k, v in rows[3].items() if k != "relevance"}) + "\n")
    with pytest.raises(FormatError, match="'supported' or 'relevance'"):
        read_labels(path)


def test_plan_names_the_formula(tmp_path, monkeypatch):
    monkeypatch.delenv("NUGGETBENCH_LLM_MODEL", raising=False)
    raw = {
        "output": "out",
        "questions": {"source": "Posts.xml"},
        "repos": [{"name": "r", "path": "repo"}],
        "llm": {"model": "gpt-x"},
        "calibration": {"labels": "labels.jsonl"},
    }
    assert parse_plan(raw, base=tmp_path).calibration_formula == "freshstack"
    strict = {**raw, "calibration": {"labels": "labels.jsonl", "formula": "strict"}}
    assert parse_plan(strict, base=tmp_path).calibration_formula == "strict"
    with pytest.raises(InputError, match=r"\[calibration\] formula 'paper'"):
        parse_plan({**raw, "calibration": {"formula": "paper"}}, base=tmp_path)
