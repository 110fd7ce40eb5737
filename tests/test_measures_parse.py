"""Measure strings, the family registry and profiles."""

from __future__ import annotations

import ast
import logging
import sys
from pathlib import Path

import numpy as np
import pytest

from nuggetbench.errors import SpecError, UnknownNameError
from nuggetbench.evaluation import evaluate_dataset
from nuggetbench.measures import (
    Measure,
    MeasureFamily,
    Profile,
    all_family_names,
    get_family,
    get_profile,
    parse_measure,
    parse_measures,
    register,
    register_profile,
)
from nuggetbench.measures import measure as measure_module
from nuggetbench.measures import registry as registry_module
from nuggetbench.measures.measure import parse_spelling

CANONICAL = [
    "nDCG@10",
    "nDCG",
    "AP",
    "AP@100",
    "RR",
    "RR@10",
    "P@5",
    "R@100",
    "Success@10",
    "Rprec",
    "Bpref",
    "NumRet",
    "NumRel",
    "NumRelRet",
    "Judged@10",
    "P(rel=2)@5",
    "nDCG(judged_only=True)@10",
    "AP(rel=2,judged_only=True)@20",
    "AP(judged_only=True,rel=2)",
    "NumRelRet(rel=3)",
    "Bpref(rel=2)",
]


@pytest.mark.parametrize("text", CANONICAL)
def test_canonical_strings_round_trip(text):
    assert str(parse_measure(text)) == text


def test_round_trip_of_other_helpers_families_when_registered():
    text = "alpha_nDCG(alpha=0.5)@20"
    if "alpha_nDCG" not in all_family_names():
        pytest.skip("alpha_nDCG is not registered in this checkout")
    assert str(parse_measure(text)) == text


def test_printing_without_registry():
    assert str(Measure("alpha_nDCG", 20, (("alpha", 0.5),))) == "alpha_nDCG(alpha=0.5)@20"
    assert str(Measure("P", 5, (("rel", 2),))) == "P(rel=2)@5"
    assert str(Measure("X", None, (("mode", "max"), ("flag", False)))) == "X(mode=max,flag=False)"


def test_parsed_fields_and_operators():
    m = parse_measure("P(rel=2)@5")
    assert m == Measure("P", 5, (("rel", 2),))
    assert m.param("rel") == 2 and m.param("judged_only") is False
    assert parse_measure("nDCG@10") == Measure("nDCG") @ 10
    assert parse_measure("P(rel=2)@5") == Measure("P")(rel=2) @ 5
    assert parse_measure(" nDCG @ 10 ") == Measure("nDCG", 10)
    # parameter order is kept, so these are different values printing differently
    a, b = parse_measure("AP(rel=2,judged_only=True)"), parse_measure("AP(judged_only=True,rel=2)")
    assert a != b and a.param("rel") == b.param("rel") == 2


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("map", "AP"),
        ("MAP@100", "AP@100"),
        ("recip_rank", "RR"),
        ("MRR@10", "RR@10"),
        ("ndcg_cut_10", "nDCG@10"),
        ("ndcg_cut.20", "nDCG@20"),
        ("P_5", "P@5"),
        ("P.30", "P@30"),
        ("recall_100", "R@100"),
        ("recall.1000", "R@1000"),
        ("success_5", "Success@5"),
        ("map_cut_100", "AP@100"),
        ("ndcg", "nDCG"),
        ("bpref", "Bpref"),
        ("num_rel_ret", "NumRelRet"),
        ("ndcg@10", "nDCG@10"),
        ("Recall@20", "R@20"),
        ("p(rel=2)@5", "P(rel=2)@5"),
    ],
)
def test_aliases_and_trec_eval_names(text, canonical):
    assert str(parse_measure(text)) == canonical


def test_unknown_family_suggests_the_nearest():
    with pytest.raises(UnknownNameError) as info:
        parse_measure("nDGC@10")
    assert "'nDCG'" in str(info.value)
    with pytest.raises(UnknownNameError) as info:
        get_family("Bperf")
    assert "Bpref" in str(info.value)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("P", "needs a cutoff"),
        ("R", "needs a cutoff"),
        ("Rprec@5", "takes no cutoff"),
        ("NumRet@10", "takes no cutoff"),
        ("nDCG@1.5", "positive integer"),
        ("nDCG@0", "positive integer"),
        ("nDCG@-3", "positive integer"),
        ("nDCG@ten", "positive integer"),
        ("nDCG@", "positive integer"),
        ("P(foo=1)@5", "'foo'"),
        ("P(rel=x)@5", "'rel'"),
        ("P(rel=1.5)@5", "'rel'"),
        ("nDCG(judged_only=1)@10", "'judged_only'"),
        ("nDCG(rel=2)@10", "'rel'"),
        ("P(rel=2,rel=3)@5", "twice"),
        ("P(rel)@5", "name=value"),
        ("P()@5", "empty"),
        ("P@5@6", "parse"),
        ("ndcg_cut_10@5", "twice"),
    ],
)
def test_spec_errors_name_the_part(text, fragment):
    with pytest.raises(SpecError) as info:
        parse_measure(text)
    assert fragment in str(info.value)


def test_parse_measures_list_and_string():
    assert [str(m) for m in parse_measures("nDCG@10 AP, P(rel=2,judged_only=True)@5")] == [
        "nDCG@10",
        "AP",
        "P(rel=2,judged_only=True)@5",
    ]
    assert [str(m) for m in parse_measures(["RR", Measure("P", 5)])] == ["RR", "P@5"]
    with pytest.raises(SpecError):
        parse_measures([])
    with pytest.raises(SpecError):
        parse_measure(Measure("P"))  # Measure values are validated too


def test_registry_lists_trec_families():
    names = all_family_names()
    for name in [
        "nDCG",
        "AP",
        "RR",
        "P",
        "R",
        "Success",
        "Rprec",
        "Bpref",
        "NumRet",
        "NumRel",
        "NumRelRet",
        "Judged",
    ]:
        assert name in names
    assert get_family("map") is get_family("AP")


class _Constant(MeasureFamily):
    name = "TestConstant"
    params = {"value": 0.25, "mode": "plain"}  # noqa: RUF012
    cutoff = "forbidden"

    def compute(self, ctx, measure):
        return np.full(len(ctx.query_ids), measure.param("value"))


def test_register_a_family_and_failing_module(caplog):
    fam = register(_Constant())
    try:
        assert str(parse_measure("TestConstant(value=2)")) == "TestConstant(value=2.0)"
        assert parse_measure("TestConstant(mode='two words')").param("mode") == "two words"
        assert (
            str(parse_measure("TestConstant(mode='two words')")) == "TestConstant(mode='two words')"
        )
        with pytest.raises(ValueError):
            register(type("Clash", (_Constant,), {"name": "Clash2", "aliases": ("map",)})())
        registry_module.FAMILY_MODULES.append("nuggetbench.measures._no_such_module_for_tests")
        with caplog.at_level(logging.WARNING):
            assert get_family("TestConstant") is fam  # other modules still usable
            with pytest.raises(UnknownNameError) as info:
                get_family("NoSuchFamilyAtAll")
        assert "_no_such_module_for_tests" in str(info.value)
    finally:
        registry_module._FAMILIES.pop("TestConstant", None)
        name = "nuggetbench.measures._no_such_module_for_tests"
        if name in registry_module.FAMILY_MODULES:
            registry_module.FAMILY_MODULES.remove(name)
        registry_module._FAILED.pop(name, None)
        registry_module._LOADED.discard(name)


def test_profiles():
    assert get_profile().name == "trec_eval -c"
    assert get_profile(None).average_over == "qrels"
    assert get_profile("trec_eval").average_over == "run_and_qrels"
    with pytest.raises(UnknownNameError) as info:
        get_profile("trec_eval -C")
    assert "trec_eval -c" in str(info.value)
    with pytest.raises(ValueError):
        Profile("bad", average_over="everything")
    with pytest.raises(ValueError):
        Profile("bad", tie_break="random")
    with pytest.raises(ValueError):
        register_profile(Profile("trec_eval", description="an impostor"))
    p = Profile("custom-x", select_queries=lambda qrels, run: ["a"])
    assert get_profile(p) is p


# --- other tools' names, translated once where they enter -------------------------------------
def test_the_grammar_reads_one_spelling():
    """``measure.py`` reads ir_measures' spelling alone and imports no other tool's table; the
    public reader translates ranx's and trec_eval's names before asking it."""
    tree = ast.parse(Path(measure_module.__file__).read_text(encoding="utf-8"))
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    elsewhere = ("nuggetbench.measures.trec", "nuggetbench.measures.peers")
    assert not [m for m in imported if m.startswith(elsewhere) or m.endswith(".spellings")]
    for text, canonical in [
        ("ndcg_cut_10", "nDCG@10"),
        ("P.5", "P@5"),
        ("P_5(rel=2)", "P(rel=2)@5"),
        ("hit_rate@10", "Success@10"),
        ("rbp.95", "RBP(p=0.95,gain=grade,depth=0)"),
    ]:
        with pytest.raises(UnknownNameError):
            parse_spelling(text)
        assert str(parse_measure(text)) == canonical
    assert parse_spelling("ndcg@10") == parse_measure("nDCG@10")  # a family's alias is its own


def _calls(func, *args):
    """``[(caller module, caller function, callee module, callee function)]`` of the calls
    among nuggetbench's measures modules while ``func(*args)`` runs."""

    def short(code):
        path = code.co_filename.replace("\\", "/")
        if "/nuggetbench/measures/" not in path:
            return None
        return path.rsplit("/nuggetbench/measures/", 1)[1]

    calls = []

    def profile(frame, event, arg):
        if event != "call" or short(frame.f_code) is None:
            return
        back = frame.f_back
        caller = short(back.f_code) if back is not None else None
        if caller is not None:
            calls.append((caller, back.f_code.co_name, short(frame.f_code), frame.f_code.co_name))

    sys.setprofile(profile)
    try:
        func(*args)
    finally:
        sys.setprofile(None)
    return calls


@pytest.mark.parametrize(
    ("items", "grammar_reads"),
    [
        # map is trec_eval's printed name (its table); rbp.95 ranx's; the rest the grammar's
        (["map", "P.5", "ndcg_cut.10", "nDCG@10", "rbp.95", "P_5(rel=2)", "hit_rate@10"], 4),
        (["all_trec", "P.5,7,3", "relstring.20", "nDCG@10"], 1),  # trec_eval's lists: Measures
    ],
)
def test_measure_names_are_translated_once_where_they_enter(tmp_path, items, grammar_reads):
    """``evaluate_dataset`` translates its measure list once: the grammar reads each name of
    ours once, ``is_trec_spec`` never tries the grammar, and ``measure.py`` never calls into
    trec_eval's or ranx's names (before: five parses of each name, and back again)."""
    qrels, run = tmp_path / "qrels", tmp_path / "run"
    qrels.write_text("q1 0 a 1\nq1 0 b 0\nq2 0 c 2\n")
    run.write_text("q1 Q0 a 1 2.0 r\nq1 Q0 b 2 1.0 r\nq2 Q0 c 1 1.0 r\n")
    calls = _calls(evaluate_dataset, qrels, run, items, "trec_eval")
    names = ("trec/", "peers/", "spellings.py")  # the tables of other tools' names, the edge
    assert not [c for c in calls if c[0] == "measure.py" and c[2].startswith(names)]
    assert not [
        c for c in calls if c[1] == "is_trec_spec" and c[2] in ("measure.py", "spellings.py")
    ]
    assert sum(c[3] == "parse_spelling" for c in calls) == grammar_reads
