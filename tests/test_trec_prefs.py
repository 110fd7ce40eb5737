"""trec_eval's preference measures (``-R prefs`` / ``-R qrels_prefs``, ``-m all_prefs``).

No second implementation of these measures exists to compare with (pytrec_eval and ir_measures
implement none of them), so they are checked three ways besides trec_eval 10.0's own outputs
(``test_trec_eval10_quicktest.py``):

* small cases worked out by hand from the C definitions (``form_prefs_counts.c``,
  ``m_prefs_*.c``);
* randomised queries against a brute-force reference written here from the definitions
  (preference sets closed by repeated joining, each preference classified by where its two
  documents were ranked), for every measure but the two ``Rnonrel`` ones;
* a randomised metamorphic check: one sub-group written twice is read as a preference matrix
  instead of equivalence classes, which must not change any measure but the ``Rnonrel`` ones
  (their recount differs between the two forms in trec_eval itself).
"""

from __future__ import annotations

import os
import random
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from nuggetbench.cli import cli
from nuggetbench.data import Run
from nuggetbench.data.formats.prefs import PrefJudgment, read_prefs, read_qrels_prefs
from nuggetbench.errors import FormatError, InputError
from nuggetbench.evaluation import evaluate_dataset
from nuggetbench.measures.trec.prefs import PREFS_MEASURES, prefs_values, query_prefs

RNONREL = ("prefs_avgjg_Rnonrel", "prefs_avgjg_Rnonrel_ret")


def _values(lines: list[tuple[str, str, str, float]], ranking: dict[str, float], depth=None):
    judgments = [PrefJudgment(*line) for line in lines]
    return prefs_values(query_prefs("q", judgments, list(ranking.items()), depth))


# --- hand-derived cases ---------------------------------------------------------------------
def test_one_subgroup_equivalence_classes_by_hand() -> None:
    """a:2 > b:1 > c:0; the run ranks b, a, then an unjudged d; c is not retrieved.
    a>b fails among retrieved; a>c and b>c are implied fulfilled."""
    got = _values(
        [("g", "s", "a", 2), ("g", "s", "b", 1), ("g", "s", "c", 0)], {"b": 3, "a": 2, "d": 1}
    )
    assert got["prefs_num_prefs_poss"] == 3 and got["prefs_num_prefs_ful"] == 2
    assert got["prefs_num_prefs_ful_ret"] == 0
    assert got["prefs_simp"] == pytest.approx(2 / 3) and got["prefs_simp_ret"] == 0.0
    assert got["prefs_simp_imp"] == pytest.approx(2 / 3)
    assert got["prefs_pair"] == pytest.approx(2 / 3) and got["prefs_pair_ret"] == 0.0
    assert got["prefs_avgjg"] == pytest.approx(2 / 3) and got["prefs_avgjg_ret"] == 0.0
    # R = 2 relevant (a, b) >= N = 1: 2 + 2 * (2 - 1) fulfilled of 3 + 2 * (2 - 1) possible
    assert got["prefs_avgjg_Rnonrel"] == pytest.approx(4 / 5)
    # retrieved: R = 2, N = 0: 0 + 2 * 2 fulfilled of 1 + 2 * 2 possible
    assert got["prefs_avgjg_Rnonrel_ret"] == pytest.approx(4 / 5)


def test_subgroups_are_closed_under_transitivity_by_hand() -> None:
    """s1: a > b, s2: b > c, so a > c too. The run ranks c, a, b: only a > b is fulfilled."""
    lines = [("g", "s1", "a", 2), ("g", "s1", "b", 1), ("g", "s2", "b", 2), ("g", "s2", "c", 1)]
    got = _values(lines, {"c": 3, "a": 2, "b": 1})
    assert got["prefs_num_prefs_poss"] == 3  # 2 without the transitive a > c
    assert got["prefs_num_prefs_ful_ret"] == 1
    assert got["prefs_simp"] == pytest.approx(1 / 3) and got["prefs_pair"] == pytest.approx(1 / 3)
    # every document relevant (R = 3, N = 0): 1 + 3 * 3 fulfilled of 3 + 3 * 3
    assert got["prefs_avgjg_Rnonrel"] == pytest.approx(10 / 12)


def test_pair_averages_over_groups_that_disagree_by_hand() -> None:
    """Two users: g1 prefers a to b, g2 b to a; the run ranks a first. The pair is half
    fulfilled; each group counts fully in avgjg (1 and 0)."""
    lines = [("g1", "s", "a", 1), ("g1", "s", "b", 0), ("g2", "s", "b", 1), ("g2", "s", "a", 0)]
    got = _values(lines, {"a": 2, "b": 1})
    assert got["prefs_pair"] == 0.5 and got["prefs_simp"] == 0.5 and got["prefs_avgjg"] == 0.5
    assert got["prefs_num_prefs_poss"] == 2 and got["prefs_num_prefs_ful"] == 1


def test_ties_are_broken_by_doc_id_ascending_and_depth_cuts() -> None:
    """form_prefs_counts.c orders equal scores by doc id ascending (not trec_eval's usual
    descending): with a > b and both scored 1, a comes first."""
    lines = [("g", "s", "b", 2), ("g", "s", "a", 1)]
    assert _values(lines, {"a": 1.0, "b": 1.0})["prefs_simp"] == 0.0
    assert _values(lines, {"a": 1.0, "b": 1.0}, depth=1)["prefs_simp_imp"] == 0.0
    assert (
        _values([("g", "s", "a", 2), ("g", "s", "b", 1)], {"a": 1.0, "b": 1.0})["prefs_simp"] == 1.0
    )


def test_rnonrel_recount_keeps_the_top_ranked_nonrelevant_documents_by_hand() -> None:
    """R = 1 relevant (a) < N = 2 non-relevant (x, y): recalculate() of m_prefs_avgjg_Rnonrel.c
    keeps the first R non-relevant internal ranks (x, ranked first) and pairs every class, the
    non-relevant one included, with them: a-x, x-x, y-x, none ranked before x: 0 of 3."""
    got = _values(
        [("g", "s", "a", 1), ("g", "s", "x", 0), ("g", "s", "y", 0)], {"x": 3, "a": 2, "y": 1}
    )
    assert got["prefs_avgjg_Rnonrel"] == 0.0
    # ranked a, x, y: x is kept and a before x counts: 1 of 3 (x-x and y-x still fail)
    got = _values(
        [("g", "s", "a", 1), ("g", "s", "x", 0), ("g", "s", "y", 0)], {"a": 3, "x": 2, "y": 1}
    )
    assert got["prefs_avgjg_Rnonrel"] == pytest.approx(1 / 3)


def test_inconsistent_preferences_are_errors() -> None:
    with pytest.raises(InputError, match="two different levels in one sub-group"):
        _values([("g", "s", "a", 2), ("g", "s", "a", 1), ("g", "s", "b", 0)], {"a": 1})
    conflict = [("g", "s1", "a", 2), ("g", "s1", "b", 1), ("g", "s2", "b", 2), ("g", "s2", "a", 1)]
    with pytest.raises(InputError, match="conflict"):
        _values(conflict, {"a": 1})
    zero = [("g", "s1", "a", 0), ("g", "s1", "b", 1), ("g", "s2", "a", 2), ("g", "s2", "c", 1)]
    with pytest.raises(InputError, match="'a' is non-relevant"):
        _values(zero, {"a": 1})


# --- readers and the command line ---------------------------------------------------------
def test_readers_skip_comments_and_name_bad_lines(tmp_path: Path) -> None:
    prefs = tmp_path / "prefs.txt"
    prefs.write_text("# users\nq2 u1 s1 a 2.5\nq1 u1 s1 b 0\n\nq2 u1 s1 c 1\n")
    got = read_prefs(prefs)
    assert list(got) == ["q1", "q2"]
    assert got["q2"] == [PrefJudgment("u1", "s1", "a", 2.5), PrefJudgment("u1", "s1", "c", 1.0)]
    prefs.write_text("q1 u1 s1 a\n")
    with pytest.raises(FormatError, match=r"prefs.txt, line 1: expected 'query_id judgment_group"):
        read_prefs(prefs)
    prefs.write_text("q1 u1 a high\n")
    with pytest.raises(FormatError, match=r"line 1: rel_level must be a finite number, got 'high'"):
        read_qrels_prefs(prefs)
    prefs.write_text("q1 0 a 1\n")
    assert read_qrels_prefs(prefs) == {"q1": [PrefJudgment("0", "0", "a", 1.0)]}


def test_cli_prefs_measures_need_preference_judgments(tmp_path: Path) -> None:
    qrels, run = tmp_path / "qrels", tmp_path / "run"
    qrels.write_text("1 0 a 1\n1 0 b 0\n2 0 c 1\n")
    run.write_text("1 Q0 b 1 2.0 t\n1 Q0 a 2 1.0 t\n")
    base = ["evaluate", str(qrels), str(run), "--format", "trec_eval"]
    result = CliRunner().invoke(cli, [*base, "-m", "all_prefs"])
    assert isinstance(result.exception, InputError)
    assert "-R prefs or -R qrels_prefs" in str(result.exception)
    result = CliRunner().invoke(cli, [*base, "-m", "map", "-R", "qrels_prefs"])
    assert isinstance(result.exception, InputError) and "not map" in str(result.exception)
    result = CliRunner().invoke(cli, [*base, "-m", "prefs_simp", "-q", "-R", "qrels_prefs"])
    assert result.exit_code == 0, result.output
    assert (
        result.stdout == "prefs_simp            \t1\t0.0000\nprefs_simp            \tall\t0.0000\n"
    )
    # -Z standardises them too (counts printed with 4 decimals, as trec_eval -Z)
    zscores = tmp_path / "z"
    zscores.write_text("1 prefs_simp 0.5 0.25\n1 prefs_num_prefs_poss 0 2\n")
    asked = [
        "-m",
        "prefs_simp",
        "-m",
        "prefs_num_prefs_poss",
        "-R",
        "qrels_prefs",
        "-Z",
        str(zscores),
    ]
    result = CliRunner().invoke(cli, [*base, *asked])
    assert result.exit_code == 0, result.output
    assert (
        result.stdout
        == "Zprefs_num_prefs_poss  \tall\t0.5000\nZprefs_simp            \tall\t-2.0000\n"
    )
    # -c: query 2, judged but not in the run, is scored on an empty ranking (0 of 0 possible)
    result = CliRunner().invoke(cli, [*base, "-m", "all_prefs", "-c", "-R", "qrels_prefs"])
    assert result.exit_code == 0, result.output
    assert "num_q                 \tall\t2\n" in result.stdout
    assert "prefs_num_prefs_poss  \tall\t1\n" in result.stdout


# --- randomised: a brute-force reference, and equivalence classes vs matrix ------------------
def _random_query(rng: random.Random) -> tuple[list[tuple[str, str, str, float]], dict]:
    """Consistent preferences: each group ranks its documents by a hidden utility (0 = non-
    relevant), each sub-group shows some of them; ties in the run's scores."""
    docs = [f"d{i}" for i in range(rng.randint(2, 9))]
    lines = []
    for g in range(rng.randint(1, 3)):
        utility = {d: rng.choice([0, 0, 1, 2, 3]) for d in docs}
        for s in range(rng.choice([1, 1, 2, 3])):
            for d in rng.sample(docs, rng.randint(1, len(docs))):
                lines.append((f"u{g}", f"s{s}", d, utility[d] * 1.5))
    pool = docs + [f"x{i}" for i in range(rng.randint(0, 4))]
    ranking = {d: float(rng.randint(0, 5)) for d in rng.sample(pool, rng.randint(0, len(pool)))}
    return lines, ranking


def _closure(prefs: set) -> set:
    while True:
        more = {(a, d) for a, b in prefs for c, d in prefs if b == c} - prefs
        if not more:
            return prefs
        prefs |= more


def _reference(lines, ranking) -> dict[str, float]:
    order = sorted(ranking.items(), key=lambda e: (-e[1], e[0]))
    pos = {d: i for i, (d, _) in enumerate(order)}
    groups: dict[str, set] = {}
    for g in sorted({line[0] for line in lines}):
        prefs = set()
        for s in {line[1] for line in lines if line[0] == g}:
            sub = [(d, level) for gg, ss, d, level in lines if (gg, ss) == (g, s)]
            prefs |= {(a, b) for a, la in sub for b, lb in sub if la > lb}
        groups[g] = _closure(prefs)
    per_group, pair_counts = [], {}
    for prefs in groups.values():
        n = dict.fromkeys(("ful_ret", "poss_ret", "ful_imp", "poss_imp", "none"), 0)
        for a, b in prefs:
            pair_counts[(a, b)] = pair_counts.get((a, b), 0) + 1
            if a in pos and b in pos:
                n["poss_ret"] += 1
                n["ful_ret"] += pos[a] < pos[b]
            elif a in pos or b in pos:
                n["poss_imp"] += 1
                n["ful_imp"] += a in pos
            else:
                n["none"] += 1
        per_group.append(n)

    def total(*keys):
        return sum(n[k] for n in per_group for k in keys)

    def avgjg(ful_keys, poss_keys):
        ratios = [
            sum(n[k] for k in ful_keys) / sum(n[k] for k in poss_keys)
            for n in per_group
            if sum(n[k] for k in poss_keys)
        ]
        return sum(ratios) / len(per_group)

    shares = {"ret": [], "imp": [], "none": []}
    for x, y in {tuple(sorted(p)) for p in pair_counts}:
        if x in pos and y in pos:
            first, second = (x, y) if pos[x] < pos[y] else (y, x)
            kind = "ret"
        elif x in pos or y in pos:
            first, second = (x, y) if x in pos else (y, x)
            kind = "imp"
        else:
            first, second, kind = x, y, "none"
        fwd, back = pair_counts.get((first, second), 0), pair_counts.get((second, first), 0)
        shares[kind].append(fwd / (fwd + back) if kind != "none" else 0.0)

    def mean(*kinds):
        values = [v for k in kinds for v in shares[k]]
        return sum(values) / len(values) if values else 0.0

    def ratio(a, b):
        return a / b if b else 0.0

    ful, ful_ret = total("ful_ret", "ful_imp"), total("ful_ret")
    poss_ret, poss_imp = total("poss_ret"), total("poss_ret", "poss_imp")
    poss = total("poss_ret", "poss_imp", "none")
    return {
        "prefs_num_prefs_poss": poss,
        "prefs_num_prefs_ful": ful,
        "prefs_num_prefs_ful_ret": ful_ret,
        "prefs_simp": ratio(ful, poss),
        "prefs_pair": mean("ret", "imp", "none"),
        "prefs_avgjg": avgjg(("ful_ret", "ful_imp"), ("poss_ret", "poss_imp", "none")),
        "prefs_simp_ret": ratio(ful_ret, poss_ret),
        "prefs_pair_ret": mean("ret"),
        "prefs_avgjg_ret": avgjg(("ful_ret",), ("poss_ret",)),
        "prefs_simp_imp": ratio(ful, poss_imp),
        "prefs_pair_imp": mean("ret", "imp"),
        "prefs_avgjg_imp": avgjg(("ful_ret", "ful_imp"), ("poss_ret", "poss_imp")),
    }


@pytest.mark.parametrize("seed", range(4))
def test_random_queries_match_a_brute_force_reference(tmp_path: Path, seed: int) -> None:
    """Through the file reader and ``evaluate_dataset``, 60 random queries per seed."""
    rng = random.Random(seed)
    cases = {f"q{i:02d}": _random_query(rng) for i in range(60)}
    prefs, entries = tmp_path / "prefs.txt", {}
    prefs.write_text(
        "".join(
            f"{q} {g} {s} {d} {level}\n"
            for q, (lines, _) in cases.items()
            for g, s, d, level in lines
        )
    )
    for q, (_, ranking) in cases.items():
        entries[q] = ranking or {"unjudged": 1.0}  # a query needs an entry to be in the run
    ev = evaluate_dataset(
        prefs, Run.from_dict(entries), ["all_prefs"], "trec_eval", preferences="prefs"
    )
    assert ev.results.query_ids == sorted(cases)
    for i, q in enumerate(ev.results.query_ids):
        lines, ranking = cases[q]
        expected = _reference(lines, ranking)
        for m, value in expected.items():
            assert ev.results.per_query[m][i] == pytest.approx(value, abs=1e-12), (
                q,
                m,
                lines,
                ranking,
            )


@pytest.mark.parametrize("seed", range(3))
def test_one_subgroup_as_classes_or_as_a_matrix_agree(seed: int) -> None:
    rng = random.Random(100 + seed)
    for _ in range(80):
        lines, ranking = _random_query(rng)
        single = [line for line in lines if line[1] == "s0"]
        doubled = single + [(g, "s_copy", d, level) for g, _, d, level in single]
        a, b = _values(single, ranking), _values(doubled, ranking)
        assert {m: a[m] for m in PREFS_MEASURES if m not in RNONREL} == pytest.approx(
            {m: b[m] for m in PREFS_MEASURES if m not in RNONREL}, abs=1e-12
        )


# --- randomised: trec_eval 10.0 itself, when a built binary is given ----------------------------
TREC_EVAL = os.environ.get("NUGGETBENCH_TREC_EVAL")


@pytest.mark.skipif(not TREC_EVAL, reason="set NUGGETBENCH_TREC_EVAL to a trec_eval 10.0 binary")
@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("flags", [[], ["-c"], ["-M", "3"]], ids=["plain", "c", "M3"])
def test_random_prefs_print_what_trec_eval_prints(tmp_path: Path, seed: int, flags) -> None:
    """The whole text of ``trec_eval -q -m all_prefs -R prefs`` (and of ``-R qrels_prefs`` on
    the first group of each query written as qrels), on 40 random queries per seed. (Without
    -c, trec_eval 10.0 stops with "result qid ... not found" when a judged query is missing from
    the run; here it skips it, as 9.0.8 did, so only the -c case leaves one out.)"""
    rng = random.Random(1000 + seed)
    cases = {f"q{i:02d}": _random_query(rng) for i in range(40)}
    prefs, qrels, run = tmp_path / "prefs.txt", tmp_path / "qrels.txt", tmp_path / "run.txt"
    rows = [(q, *line) for q, (lines, _) in cases.items() for line in lines]
    prefs.write_text("".join(f"{q} {g} {s} {d} {level}\n" for q, g, s, d, level in rows))
    first = {(q, d): level for q, g, s, d, level in rows if g == "u0" and s == "s0"}
    qrels.write_text("".join(f"{q} 0 {d} {int(level)}\n" for (q, d), level in first.items()))
    lines = [
        f"{q} Q0 {d} 0 {score} run\n"
        for q, (_, ranking) in cases.items()
        for d, score in (ranking or {"unjudged": 1.0}).items()
        if q != "q00" or "-c" not in flags  # -c: a judged query missing from the run
    ]
    run.write_text("".join(lines))
    for kind, judgments in (("prefs", prefs), ("qrels_prefs", qrels)):
        args = ["-q", *flags, "-m", "all_prefs", "-R", kind, str(judgments), str(run)]
        theirs = subprocess.run([TREC_EVAL, *args], capture_output=True, text=True, check=True)
        ours = CliRunner().invoke(cli, ["evaluate", *args, "--format", "trec_eval"])
        assert ours.exit_code == 0, ours.output
        assert ours.stdout == theirs.stdout
