"""Every measure trec_eval prints, and its text output line for line.

* trec_eval 9.0.8's own test outputs (``../shared/data/trec_eval``, skipped when absent):
  ``nuggetbench evaluate ... --format trec_eval`` with the same flags writes the same text; the
  test counts the lines matched out of the lines.
* pytrec_eval (``RelevanceEvaluator(qrels, pytrec_eval.supported_measures)``) on hundreds of
  random queries (graded, zero, negative and odd grades, ties, unjudged documents, queries
  missing on either side), at 1e-9, for every measure it supports, at ``-l 1`` / ``-l 2`` and
  with ``-J``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from nuggetbench.cli import cli
from nuggetbench.data import Qrels, Run
from nuggetbench.errors import SpecError
from nuggetbench.evaluation import evaluate_dataset, trec_eval_options, trec_eval_text
from nuggetbench.measures import score as evaluate
from nuggetbench.measures.trec.names import is_trec_spec, trec_selection

pytrec_eval = pytest.importorskip("pytrec_eval")

# (reference output, qrels, run, measures, flags) as in ../shared/data/README.md
CASES = {
    "out.test": ("qrels.test", "results.test", [], {}),
    "out.test.a": ("qrels.test", "results.test", ["all_trec"], {}),
    "out.test.aq": ("qrels.test", "results.test", ["all_trec"], {"q": True}),
    "out.test.aqc": ("qrels.test", "results.trunc", ["all_trec"], {"q": True, "complete": True}),
    "out.test.aqcM": (
        "qrels.test",
        "results.trunc",
        ["all_trec"],
        {"q": True, "complete": True, "max_docs": 100},
    ),
    "out.test.aql": (
        "qrels.rel_level",
        "results.test",
        ["all_trec", "relstring.20"],
        {"q": True, "rel_level": 2},
    ),
    "out.test.meas_params": (
        "qrels.test",
        "results.test",
        [
            "iprec_at_recall..10,.20,.25,.75,.50",
            "P.5,7,3",
            "recall.20,2000",
            "Rprec_mult.5.0,0.2,0.35",
            "utility.2,-1,0,0",
            "11pt_avg..25,.5,.75",
            "ndcg.1=3,2=9,4=4.5",
            "ndcg_cut.10,20,23.4",
            "success.2,5,20",
        ],
        {"q": True},
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_trec_eval_output_line_for_line(shared_data: Path, name: str) -> None:
    folder = shared_data / "trec_eval"
    if not folder.is_dir():
        pytest.skip("../shared/data/trec_eval is absent")
    qrels, run, measures, flags = CASES[name]
    flags = dict(flags)
    per_query = flags.pop("q", False)
    measures = measures or ["official"]
    profile = trec_eval_options(None, drop_in=True, **flags)
    ev = evaluate_dataset(
        str(folder / qrels), str(folder / run), measures, profile, trailing="ignore"
    )
    ours = trec_eval_text(ev, measures, per_query=per_query).splitlines()
    # this folder's outputs predate trec_eval 10.0's per-query lines for a judged query missing
    # from the run under -c (out.test.aqc of ../shared/data/trec_eval10 has them)
    missing = set(ev.results.missing_queries)
    ours = [line for line in ours if line.split("\t")[1] not in missing]
    theirs = (folder / name).read_text().splitlines()
    matched = sum(a == b for a, b in zip(ours, theirs))
    print(f"{name}: {matched} of {len(theirs)} lines matched ({len(ours)} written)")
    assert len(ours) == len(theirs)
    assert matched == len(theirs), [(a, b) for a, b in zip(ours, theirs) if a != b][:5]


@pytest.mark.parametrize("qrels", ["qrels.graded.txt", "qrels.infap_negative.txt"])
@pytest.mark.parametrize("level", [1, 2])
def test_trec_eval_tiny_graded_outputs(shared_data: Path, qrels: str, level: int) -> None:
    """``tiny_irmeasures``: graded and negative (infAP's pooled-unjudged) grades at -l1 / -l2."""
    folder = shared_data / "trec_eval" / "tiny_irmeasures"
    if not folder.is_dir():
        pytest.skip("../shared/data/trec_eval/tiny_irmeasures is absent")
    profile = trec_eval_options(None, rel_level=level, drop_in=True)
    ev = evaluate_dataset(str(folder / qrels), str(folder / "run.txt"), ["all_trec"], profile)
    ours = trec_eval_text(ev, ["all_trec"], per_query=True).splitlines()
    theirs = (folder / f"out.{qrels}.l{level}.all_trec.q.txt").read_text().splitlines()
    matched = sum(a == b for a, b in zip(ours, theirs))
    print(f"{qrels} -l{level}: {matched} of {len(theirs)} lines matched")
    assert len(ours) == len(theirs) and matched == len(theirs)


def test_trec_eval_judgment_groups_output(shared_data: Path) -> None:
    """``trec_eval -q -R qrels_jg -m qrels_jg qrels.123 results.test`` (out.test.qrels_jg)."""
    folder = shared_data / "trec_eval"
    if not folder.is_dir():
        pytest.skip("../shared/data/trec_eval is absent")
    args = ["evaluate", str(folder / "qrels.123"), str(folder / "results.test"), "-R", "qrels_jg"]
    result = CliRunner().invoke(cli, [*args, "-m", "qrels_jg", "-q", "--format", "trec_eval"])
    assert result.exit_code == 0, result.output
    ours = result.stdout.splitlines()
    theirs = (folder / "out.test.qrels_jg").read_text().splitlines()
    matched = sum(a == b for a, b in zip(ours, theirs))
    print(f"out.test.qrels_jg: {matched} of {len(theirs)} lines matched")
    assert len(ours) == len(theirs) and matched == len(theirs)


def test_judgment_groups_average_each_query_over_its_groups(tmp_path: Path) -> None:
    from nuggetbench.data.formats.qrels_jg import read_qrels_jg
    from nuggetbench.errors import FormatError
    from nuggetbench.measures.trec.judgment_groups import evaluate_judgment_groups

    path = tmp_path / "qrels_jg.txt"
    path.write_text("1 A a 1\n1 A b 0\n1 B b 1\n2 A a 1\n")
    groups = read_qrels_jg(path)
    assert list(groups) == ["A", "B"]
    run = Run.from_dict({"1": {"a": 2.0, "b": 1.0}, "2": {"b": 1.0}})
    res = evaluate_judgment_groups(groups, run, ["map_avgjg", "P_avgjg.1"])
    # query 1: AP 1 (group A) and 0.5 (group B); query 2: group A only, AP 0
    assert res.values("map_avgjg") == {"1": 0.75, "2": 0.0}
    assert res.values("P_avgjg_1") == {"1": 0.5, "2": 0.0}
    path.write_text("1 A a one\n")
    with pytest.raises(FormatError, match="line 1"):
        read_qrels_jg(path)


def test_cli_writes_trec_eval_text(shared_data: Path) -> None:
    folder = shared_data / "trec_eval10"  # 10.0: lines for the judged query missing from the run
    if not folder.is_dir():
        pytest.skip("../shared/data/trec_eval10 is absent")
    args = ["evaluate", str(folder / "qrels.test"), str(folder / "results.trunc")]
    args += ["-m", "all_trec", "-q", "-c", "-M", "100", "--ignore-trailing"]
    result = CliRunner().invoke(cli, [*args, "--format", "trec_eval"])
    assert result.exit_code == 0, result.output
    assert result.stdout == (folder / "out.test.aqcM").read_text()


@pytest.mark.parametrize(
    "name",
    ["P", "recall", "success", "ndcg_cut", "map_cut", "relative_P", "unj", "iprec_at_recall",
     "Rprec_mult"],
)  # fmt: skip
def test_a_list_named_alone_is_trec_evals_list(shared_data: Path, name: str) -> None:
    """``-m success`` (or ``P``, ``recall``...) alone is trec_eval's list of cutoffs or points,
    printed as trec_eval 10.0 prints it (its ``out.test.a`` lines of that measure), though the
    grammar reads ``Success`` alone as one measure."""
    folder = shared_data / "trec_eval10"
    if not folder.is_dir():
        pytest.skip("../shared/data/trec_eval10 is absent")
    args = ["evaluate", str(folder / "qrels.test"), str(folder / "results.test"), "-m", name]
    result = CliRunner().invoke(cli, [*args, "--format", "trec_eval"])
    assert result.exit_code == 0, result.output
    expected = [
        line
        for line in (folder / "out.test.a").read_text().splitlines()
        if line.split()[0].rpartition("_")[0] == name
    ]
    assert expected and result.stdout.splitlines() == expected
    table = CliRunner().invoke(cli, [*args, "--format", "json"])
    assert table.exit_code == 0, table.output
    keys = list(json.loads(table.stdout))  # the means, keyed as trec_eval prints them
    assert name not in keys
    assert [k for k in keys if k.rpartition("_")[0] == name] == [ln.split()[0] for ln in expected]


# --- randomised agreement with pytrec_eval ----------------------------------------------------
def _random_case(rng: np.random.Generator, n_queries: int, negative: bool, grades=None):
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    if grades is None:
        grades = [-2, -1, 0, 0, 0, 1, 1, 2, 3, 4, 7, 12] if negative else [0, 0, 0, 1, 1, 2, 3]
    for i in range(n_queries):
        qid = f"q{i:04d}"
        pool = [f"d{j}" for j in range(int(rng.integers(1, 40)))]
        kind = rng.random()
        if kind > 0.05:  # a judged query (5%: run only)
            judged = rng.choice(pool, size=int(rng.integers(1, len(pool) + 1)), replace=False)
            qrels[qid] = {d: int(rng.choice(grades)) for d in judged}
        if kind < 0.93:  # a query in the run (7%: judged only, missing from the run)
            n = int(rng.integers(1, len(pool) + 1))
            docs = rng.choice(pool + [f"u{j}" for j in range(5)], size=n, replace=False)
            scores = rng.integers(0, 6, size=n).astype(float)  # heavy ties
            run[qid] = {str(d): float(s) for d, s in zip(docs, scores)}
    return qrels, run


def _values(results, key: str) -> dict[str, float]:
    return dict(zip(results.query_ids, results.per_query[key].tolist()))


@pytest.mark.parametrize(
    ("seed", "rel", "judged_only", "unjudged_run"),
    [
        (1, 1, False, False),
        (2, 1, False, False),
        (3, 2, False, False),
        (4, 1, True, False),
        (5, 2, True, False),
        (6, 1, False, True),  # no retrieved document is judged, in any query
        # (judged_only with no judged document retrieved: pytrec_eval 0.5 segfaults)
    ],
)
def test_every_pytrec_eval_measure_at_1e9(
    seed: int, rel: int, judged_only: bool, unjudged_run: bool
) -> None:
    rng = np.random.default_rng(seed)
    qrels, run = _random_case(rng, 120, negative=seed % 2 == 1)
    if unjudged_run:  # every per-query sum over retrieved relevant documents is empty
        run = {q: {f"x{d}": s for d, s in docs.items()} for q, docs in run.items()}
    evaluator = pytrec_eval.RelevanceEvaluator(
        qrels,
        pytrec_eval.supported_measures,
        relevance_level=rel,
        judged_docs_only_flag=judged_only,
    )
    theirs = evaluator.evaluate(run)
    profile = trec_eval_options(None, rel_level=rel, judged_only=judged_only, drop_in=True)
    # pytrec_eval embeds trec_eval 9.0.x's interpolation (k = floor(r R + 0.9)): legacy=true
    legacy = [f"IPrec(recall={r / 10},legacy=true)" for r in range(11)]
    legacy += ["IPrecAvg(legacy=true)"]
    results = evaluate(
        Qrels.from_dict(qrels), Run.from_dict(run), ["all_trec", *legacy], profile=profile
    )
    renamed = {f"iprec_at_recall_{r / 10:.2f}": legacy[r] for r in range(11)}
    renamed["11pt_avg"] = legacy[-1]
    keys = set(next(iter(theirs.values())))
    compared = 0
    for key in sorted(keys - {"runid", "relstring"}):
        ours = _values(results, renamed.get(key, key))
        assert set(ours) == set(theirs), key
        for qid, value in ours.items():
            expected = theirs[qid][key]
            if key.startswith("gm_"):
                value = math.log(max(value, 1e-5))
            if math.isnan(expected):
                assert math.isnan(value), (key, qid)
            else:
                assert value == pytest.approx(expected, abs=1e-9, rel=0), (
                    key,
                    qid,
                    value,
                    expected,
                )
            compared += 1
    print(f"seed {seed}: {len(theirs)} queries x {len(keys) - 2} measures, {compared} values")
    assert compared > 50 * len(theirs)


# --- names -------------------------------------------------------------------------------------
def test_trec_names_expand_in_trec_eval_order() -> None:
    keys = [e.key for e in trec_selection(["P.5,7,3", "map", "iprec_at_recall..5,.1"])]
    assert keys == ["map", "iprec_at_recall_0.10", "iprec_at_recall_0.50", "P_3", "P_5", "P_7"]
    # trec_eval's specs merged in its order, then ours as given
    keys = [e.key for e in trec_selection(["nDCG@10", "P.5,7,3", "official", "P.2", "runid"])]
    assert keys[:3] == ["runid", "num_q", "num_ret"] and keys[-2:] == ["P_2", "nDCG@10"]
    assert [e.key for e in trec_selection(["official"])][:3] == ["runid", "num_q", "num_ret"]
    assert is_trec_spec("all_trec") and is_trec_spec("P.5,7") and is_trec_spec("recall")
    assert not is_trec_spec("P.5") and not is_trec_spec("nDCG@10") and not is_trec_spec("map")
    # alone, a single cutoff keeps its meaning (and key) as our measure; beside a trec_eval
    # list it is read as trec_eval reads it
    qrels, run = Qrels.from_dict({"q": {"a": 1}}), Run.from_dict({"q": {"a": 1.0}})
    assert evaluate(qrels, run, ["P.5"]).measures == ["P.5"]
    assert evaluate(qrels, run, "official P.5,7").measures[-2:] == ["P_5", "P_7"]
    results = evaluate(qrels, run, ["P.5", "P.5,7"])
    assert results.measures == ["P_5", "P_7"]
    with pytest.raises(SpecError, match="utility takes 4"):
        trec_selection(["utility.1,2"])
    with pytest.raises(SpecError, match="takes no parameters"):
        trec_selection(["map.3"])


# --- nDCG gains ---------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", [11, 12, 13, 14])
def test_exp_log2_matches_ir_measures(seed: int) -> None:
    """``nDCG(dcg=exp-log2)@k`` against ir_measures' ``nDCG(dcg='exp-log2')@k`` (gdeval, which
    prints 5 decimals): graded, zero and negative grades, ties, unjudged documents, missing
    queries."""
    ir_measures = pytest.importorskip("ir_measures")
    import shutil

    if shutil.which("perl") is None:
        pytest.skip("ir_measures' exp-log2 nDCG (gdeval) needs perl")
    rng = np.random.default_rng(seed)
    # gdeval refuses grades above 4
    qrels, run = _random_case(rng, 150, negative=True, grades=[-2, -1, 0, 0, 1, 1, 2, 3, 4])
    qrels = {str(int(q[1:]) + 1): v for q, v in qrels.items()}  # gdeval wants numeric ids
    run = {str(int(q[1:]) + 1): v for q, v in run.items()}
    both = sorted(set(qrels) & set(run))
    ir_qrels = [ir_measures.Qrel(q, d, g) for q, docs in qrels.items() for d, g in docs.items()]
    ir_run = [ir_measures.ScoredDoc(q, d, s) for q, docs in run.items() for d, s in docs.items()]
    compared = 0
    for k in (5, 10, 20):
        theirs = {
            m.query_id: m.value
            for m in ir_measures.iter_calc([ir_measures.nDCG(dcg="exp-log2") @ k], ir_qrels, ir_run)
        }
        results = evaluate(
            Qrels.from_dict(qrels),
            Run.from_dict(run),
            [f"nDCG(dcg=exp-log2)@{k}"],
            profile="trec_eval",
        )
        ours = _values(results, f"nDCG(dcg=exp-log2)@{k}")
        for qid in both:
            assert ours[qid] == pytest.approx(theirs[qid], abs=5e-6 + 1e-12), (k, qid)
            compared += 1
    print(f"seed {seed}: {compared} exp-log2 values agree with ir_measures within 5e-6")
    assert compared > 200


def test_gain_map_as_trec_eval() -> None:
    qrels = Qrels.from_dict({"q": {"a": 1, "b": 2, "c": 4, "d": 0, "e": -1}})
    run = Run.from_dict({"q": {"a": 5.0, "b": 4.0, "x": 3.0, "c": 2.0, "d": 1.0, "e": 0.5}})
    got = evaluate(qrels, run, ["nDCG(gains='1=3,2=9,4=4.5,0=1')", "nDCG(gains='1=1')"]).means
    disc = 1 / np.log2(np.arange(2, 8))
    dcg = 3 * disc[0] + 9 * disc[1] + 4.5 * disc[3] + 1 * disc[4]
    idcg = 9 * disc[0] + 4.5 * disc[1] + 3 * disc[2] + 1 * disc[3]
    assert got["nDCG(gains='1=3,2=9,4=4.5,0=1')"] == pytest.approx(dcg / idcg, abs=1e-12)
    linear = evaluate(qrels, run, ["nDCG"]).means["nDCG"]
    assert got["nDCG(gains='1=1')"] == pytest.approx(linear, abs=1e-12)
    with pytest.raises(SpecError, match="level=gain"):
        evaluate(qrels, run, ["nDCG(gains='1:3')"])


# --- trec_eval's command-line flags -------------------------------------------------------------
def test_trec_eval_profiles_from_flags() -> None:
    from nuggetbench.errors import InputError, UnknownNameError
    from nuggetbench.measures import get_profile

    prof = get_profile("trec_eval -c -J -M 2 -l 2")
    assert prof.name == "trec_eval -c -J -M 2 -l 2" and prof.average_over == "qrels"
    assert prof.options["measure_defaults"] == {"rel": 2, "judged_only": True}
    # evaluate: the flags add to the default 'trec_eval -c' (-c itself changes nothing)
    assert trec_eval_options(None, rel_level=2).name == "trec_eval -c -l 2"
    assert trec_eval_options(None, complete=True, max_docs=5).name == "trec_eval -c -M 5"
    assert trec_eval_options(None) is None  # no flag: the dataset's default
    # the drop-in (nuggetbench trec_eval): trec_eval's own defaults, no -c unless given
    assert trec_eval_options(None, rel_level=2, drop_in=True).name == "trec_eval -l 2"
    assert trec_eval_options(None, drop_in=True).name == "trec_eval"
    assert trec_eval_options("trec_eval -J", rel_level=2).name == "trec_eval -J -l 2"
    assert trec_eval_options("birco") == "birco"  # no flag: the profile as given
    with pytest.raises(InputError, match="cannot be combined"):
        trec_eval_options("birco", complete=True)
    with pytest.raises(UnknownNameError, match="-M N"):
        get_profile("trec_eval -x")
    qrels = Qrels.from_dict({"q": {"a": 1, "b": 2, "c": 0}, "r": {"a": 1}})
    run = Run.from_dict({"q": {"a": 3.0, "b": 2.0, "c": 1.0, "u": 0.5}})
    # -M 2 keeps a and b; -l 2 makes only b relevant; -c averages over q and r
    res = evaluate(qrels, run, ["num_ret", "P.1", "set_recall"], profile=prof)
    assert res.values("num_ret") == {"q": 2.0, "r": 0.0}
    assert res.values("P.1") == {"q": 0.0, "r": 0.0}
    assert res.values("set_recall") == {"q": 1.0, "r": 0.0}
    assert res.means["set_recall"] == 0.5


def test_cli_trec_eval_json_and_flags(tmp_path: Path) -> None:
    import json

    qrels = tmp_path / "qrels.txt"
    qrels.write_text("1 0 a 1\n1 0 b 2\n2 0 a 1\n")
    run = tmp_path / "run.txt"
    run.write_text("1 Q0 a 1 3.0 tag\n1 Q0 b 2 2.0 tag\n1 Q0 x 3 1.0 tag\n")
    out = CliRunner().invoke(
        cli, ["evaluate", str(qrels), str(run), "-m", "all_trec", "--format", "json"]
    )
    assert out.exit_code == 0, out.output
    means = json.loads(out.stdout)
    assert means["P_5"] == pytest.approx(0.2) and means["num_q"] == 2  # default: trec_eval -c
    # the drop-in takes trec_eval's own defaults: without -c, query 2 (not in the run) is out
    flags = ["-m", "P.1,2", "-m", "runid", "-l", "2"]
    out = CliRunner().invoke(cli, ["trec_eval", "-q", *flags, str(qrels), str(run)])
    assert out.exit_code == 0, out.output
    assert out.stdout.splitlines() == [
        "P_1                   \t1\t0.0000",
        "P_2                   \t1\t0.5000",
        "runid                 \tall\ttag",
        "P_1                   \tall\t0.0000",
        "P_2                   \tall\t0.5000",
    ]
    assert "averaged over 1 query in both the run and the qrels" in out.stderr
    # evaluate: one averaging whatever it prints (-c by default): query 2 scores 0
    args = ["evaluate", str(qrels), str(run), *flags]
    out = CliRunner().invoke(cli, [*args, "-q", "--format", "trec_eval"])
    assert out.exit_code == 0, out.output
    assert out.stdout.splitlines() == [
        "P_1                   \t1\t0.0000",
        "P_2                   \t1\t0.5000",
        "P_1                   \t2\t0.0000",
        "P_2                   \t2\t0.0000",
        "runid                 \tall\ttag",
        "P_1                   \tall\t0.0000",
        "P_2                   \tall\t0.2500",
    ]
    as_json = CliRunner().invoke(cli, [*args, "--format", "json"])
    assert json.loads(as_json.stdout)["P_2"] == pytest.approx(0.25)
    assert "1 missing from the run scored 0" in json.loads(as_json.stdout)["averaged"]["text"]
    out = CliRunner().invoke(
        cli, ["evaluate", str(qrels), str(run), "P.2", "--format", "trec_eval"]
    )
    assert out.exit_code == 0 and out.stdout == "P_2                   \tall\t0.5000\n"
    out = CliRunner().invoke(
        cli,
        [
            "evaluate",
            str(qrels),
            str(run),
            "P.2",
            "--format",
            "trec_eval",
            "--profile",
            "trec_eval",
        ],
    )  # trec_eval's own averaging, asked for by name
    assert out.exit_code == 0 and out.stdout == "P_2                   \tall\t1.0000\n"
    bad = CliRunner().invoke(cli, [*args, "--profile", "birco", "--format", "trec_eval"])
    assert bad.exit_code != 0 and "cannot be combined" in str(bad.exception)


def test_relstring_characters() -> None:
    from nuggetbench.measures import EvalContext
    from nuggetbench.measures.trec.names import relstrings

    qrels = Qrels.from_dict({"q": {"a": 12, "b": 3, "c": -1, "d": 0}})
    run = Run.from_dict({"q": {"a": 6.0, "b": 5.0, "c": 4.0, "x": 3.0, "d": 2.0}})
    assert relstrings(EvalContext(qrels, run, "trec_eval"), 10) == {"q": ">3.-0"}
    assert relstrings(EvalContext(qrels, run, "trec_eval"), 2) == {"q": ">3"}
    assert relstrings(EvalContext(qrels, run, "trec_eval -J"), 10) == {"q": ">30"}
