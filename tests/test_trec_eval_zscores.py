"""trec_eval ``-Z zscores_file``: every line as trec_eval 10.0 prints it.

Two kinds of checks:

* cases worked out by hand from the C source (``trec_eval.c``: each query's values converted
  by ``convert_zscores.c``, accumulated, then each measure's ``calc_avg`` and print function:
  ``m_num_rel.c`` replaces the summed z values of ``num_rel`` by the raw count under ``-c``,
  ``m_num_q.c`` prints the number of queries, ``meas_avg.c`` divides sums by the number of
  queries or takes exp of the mean log, ``meas_print_*.c`` prints ``%6.4f``); they always run;
* randomised whole outputs against the C program itself (``-q -m all_trec -Z`` under ``-c``,
  ``-l``, ``-J``, ``-M`` and none; ``-R qrels_prefs -m all_prefs -Z``): they run when
  ``NUGGETBENCH_TREC_EVAL`` names a trec_eval 10.0 binary (built from usnistgov/trec_eval
  f4253652 with ``make``) and skip otherwise.
"""

from __future__ import annotations

import math
import os
import random
import subprocess
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from nuggetbench.cli import cli
from nuggetbench.measures.trec.zscores import MISSING_ZSCORE, standardise

TREC_EVAL = os.environ.get("NUGGETBENCH_TREC_EVAL")
QRELS = "1 0 a 1\n1 0 b 2\n1 0 c 0\n2 0 d 1\n2 0 e 1\n3 0 f 2\n"
RUN = "1 Q0 a 0 3 t\n1 Q0 x 0 2 t\n2 Q0 d 0 5 t\n2 Q0 y 0 4 t\n2 Q0 z 0 1 t\n"  # 3 is missing


def _z_text(tmp_path: Path, zscores: str, *args: str, qrels=QRELS, run=RUN) -> str:
    for name, text in (("qrels", qrels), ("run", run), ("z", zscores)):
        (tmp_path / name).write_text(text)
    files = [str(tmp_path / "qrels"), str(tmp_path / "run")]
    # the drop-in: trec_eval's own defaults (no -c unless given), as the C program
    result = CliRunner().invoke(cli, ["trec_eval", *args, "-Z", str(tmp_path / "z"), *files])
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    return result.stdout


def _lines(text: str) -> dict[tuple[str, str], str]:
    return {(n, q): v for n, q, v in (line.split("\t") for line in text.splitlines())}


# --- by hand, from the C source ----------------------------------------------------------------
def test_num_rel_under_c_is_the_raw_count_whatever_z_says(tmp_path: Path) -> None:
    """The issue's example in small: under -c, Znum_rel's all line is the number of judgments
    with grade > 0 (5 here), not the sum of z values (0 with every query at its mean, or
    -3000000 with -l 2 moving every value off a zero stddev); the per-query lines are z values."""
    z = "1 num_rel 2 0\n2 num_rel 2 0\n3 num_rel 1 0\n"
    out = _lines(_z_text(tmp_path, z, "-c", "-q", "-m", "num_rel"))
    assert out[("Znum_rel               ", "all")] == "5.0000"
    assert [out[("Znum_rel               ", q)] for q in "123"] == ["0.0000"] * 3
    out = _lines(_z_text(tmp_path, z, "-c", "-l", "2", "-q", "-m", "num_rel"))
    assert out[("Znum_rel               ", "all")] == "5.0000"  # -l does not change it either
    assert out[("Znum_rel               ", "2")] == "-1000000.0000"  # 0 relevant, mean 2, sd 0
    # without -c the summary is the sum of the z values of the run's queries
    out = _lines(_z_text(tmp_path, z.replace(" 0\n", " 0.5\n"), "-q", "-m", "num_rel"))
    assert out[("Znum_rel               ", "all")] == "0.0000"
    out = _lines(_z_text(tmp_path, "1 num_rel 1 0.5\n2 num_rel 1 0.5\n", "-m", "num_rel"))
    assert out[("Znum_rel               ", "all")] == "4.0000"  # (2-1)/.5 + (2-1)/.5


def test_counts_are_sums_of_z_and_num_q_the_query_count(tmp_path: Path) -> None:
    """num_ret, num_rel_ret: the summary is the sum of the per-query z values (no division);
    num_q: the number of queries (3 under -c), never standardised; missing lines: -1000000."""
    z = "1 num_ret 1 0.5\n2 num_ret 1 1\n3 num_ret 0 0\n1 num_rel_ret 0 1\n"
    out = _lines(
        _z_text(tmp_path, z, "-c", "-q", "-m", "num_ret", "-m", "num_rel_ret", "-m", "num_q")
    )
    assert out[("Znum_ret               ", "1")] == "2.0000"  # (2 - 1) / .5
    assert out[("Znum_ret               ", "2")] == "2.0000"  # (3 - 1) / 1
    assert out[("Znum_ret               ", "3")] == "0.0000"  # missing from the run: 0 at mean 0
    assert out[("Znum_ret               ", "all")] == "4.0000"
    assert out[("Znum_rel_ret           ", "1")] == "1.0000"
    assert out[("Znum_rel_ret           ", "2")] == "-1000000.0000"  # no line in the file
    assert out[("Znum_rel_ret           ", "3")] == "-1000000.0000"
    assert out[("Znum_rel_ret           ", "all")] == "-1999999.0000"
    assert out[("Znum_q                 ", "all")] == "3.0000"


def test_gm_map_standardises_the_log_and_takes_exp_of_the_mean(tmp_path: Path) -> None:
    """gm_map's per-query value is log(max(AP, 1e-5)); z of that; the summary exp(mean z)."""
    z = "1 gm_map -1 2\n2 gm_map 0 1\n"
    out = _lines(_z_text(tmp_path, z, "-m", "gm_map", "-m", "map", "-q"))
    zmap = {q: float(out[("Zmap                   ", q)]) for q in "12"}  # no map line: -1e6
    assert zmap == {"1": MISSING_ZSCORE, "2": MISSING_ZSCORE}
    # AP 0.5 for query 1 (a found, b not) and query 2 (d found, e not); query 3 not in the run
    zs = [(math.log(0.5) + 1) / 2, (math.log(0.5) - 0) / 1]
    assert out[("Zgm_map                ", "all")] == f"{math.exp(sum(zs) / 2):6.4f}"


def test_overflowing_z_values_print_as_c_prints_infinities(tmp_path: Path) -> None:
    """A tiny stddev overflows z to +-inf: printf("%6.4f") gives '   inf' / '  -inf'; their sum
    is 0/0-like NaN, '  -nan' (the x86 default NaN has its sign bit set)."""
    z = "1 num_ret 0 1e-310\n2 num_ret 9 1e-310\n"
    out = _lines(_z_text(tmp_path, z, "-q", "-m", "num_ret"))
    assert out[("Znum_ret               ", "1")] == "   inf"
    assert out[("Znum_ret               ", "2")] == "  -inf"
    assert out[("Znum_ret               ", "all")] == "  -nan"
    out = _lines(_z_text(tmp_path, "1 map 1e308 1e-308\n2 map 0 1\n", "-m", "map"))
    assert out[("Zmap                   ", "all")] == "  -inf"


def test_sums_are_taken_in_query_order_as_c_adds() -> None:
    """1e16 + 1 rounds back to 1e16 in double: trec_eval's running sum gives 1, an exact or
    pairwise sum 2."""
    z = {q: {"num_ret": (0.0, 1.0)} for q in "abcd"}
    values = {"num_ret": np.array([1e16, 1.0, -1e16, 1.0])}
    _, means = standardise({"num_ret": "sum"}, values, list("abcd"), z)
    assert means["num_ret"] == 1.0 and math.fsum(values["num_ret"]) == 2.0


def test_trec_eval_9_under_c_adds_nothing_for_a_query_missing_from_the_run() -> None:
    """9.0.8 never evaluates a judged query missing from the run: under -c it adds 0 to a sum
    (its z value is never taken) and log(1e-5) to a geometric mean, then divides by all."""
    z = {"a": {"map": (0.0, 0.5), "gm_map": (0.0, 1.0)}, "b": {"map": (1.0, 1.0)}}
    values = {"map": np.array([0.5, 0.0]), "gm_map": np.array([1.0, 0.0])}
    aggregates = {"map": "mean", "gm_map": "gmean"}
    per_query, means = standardise(aggregates, values, ["a", "b"], z, unevaluated={"b"})
    assert means["map"] == pytest.approx(1.0 / 2)  # (0.5 - 0) / 0.5 + nothing, over 2
    assert means["gm_map"] == pytest.approx(math.exp((0.0 + math.log(1e-5)) / 2))
    _, plain = standardise(aggregates, values, ["a", "b"], z)
    assert plain["map"] == pytest.approx((1.0 + (0.0 - 1.0)) / 2)
    assert per_query["map"].tolist() == [1.0, -1.0]


# --- against trec_eval 10.0 ----------------------------------------------------------------------
def _random_judgments(rng: random.Random, complete: bool, tag: str) -> tuple[str, str]:
    qrels, run = [], []
    for i in range(12):
        pool = [f"D{j}" for j in range(rng.randint(1, 20))]
        qrels += [f"{i:03d} 0 {d} {rng.choice([0, 0, 1, 1, 2, 3])}\n" for d in pool]
        if not complete or i == 11 or rng.random() < 0.8:  # without -c 10.0 stops on a missing one
            docs = rng.sample(pool + [f"U{j}" for j in range(6)], rng.randint(1, len(pool) + 3))
            run += [f"{i:03d} Q0 {d} 0 {rng.randint(0, 8) / 2} {tag}\n" for d in docs]
    return "".join(qrels), "".join(run)


def _random_zscores(rng: random.Random, plain: str) -> str:
    """A z-score file for the per-query lines of *plain* (trec_eval's -q output): random means
    and stddevs; a stddev of 0 at the value (counts, whose printed value is exact) or off it; a
    tiny stddev that overflows; lines and queries left out. trec_eval's binary searches
    (``convert_zscores.c``) read one entry past the end when the name sought sorts after every
    name present, so the last query and each query's last measure (by strcmp) are kept."""
    rows = [line.split("\t") for line in plain.splitlines()]
    values = {(n.strip(), q): v for n, q, v in rows if q != "all" and n.strip() != "relstring"}
    queries = sorted({q for _, q in values})
    names = sorted({n for n, _ in values})
    dropped = {q for q in queries[:-1] if rng.random() < 0.15}
    lines = []
    for (name, qid), value in sorted(values.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        if qid in dropped or (name != names[-1] and rng.random() < 0.1):
            continue
        roll = rng.random()
        if roll < 0.1 and "num_" in name:
            lines.append(f"{qid} {name} {value} 0\n")
        elif roll < 0.15:
            lines.append(f"{qid} {name} {rng.uniform(-1, 1):.6f} 0\n")
        elif roll < 0.17:
            lines.append(f"{qid} {name} {rng.uniform(1, 5):.3f} 1e-310\n")
        else:
            lines.append(f"{qid} {name} {rng.uniform(-2, 2):.6g} {rng.uniform(0.01, 3):.6g}\n")
    rng.shuffle(lines)
    return "".join(lines)


def _both(tmp_path: Path, args: list[str]) -> tuple[str, str]:
    theirs = subprocess.run([TREC_EVAL, *args], capture_output=True, text=True, check=True)
    ours = CliRunner().invoke(cli, ["trec_eval", *args])  # the drop-in: trec_eval's defaults
    assert ours.exit_code == 0, ours.output
    return ours.stdout, theirs.stdout


@pytest.mark.skipif(not TREC_EVAL, reason="set NUGGETBENCH_TREC_EVAL to a trec_eval 10.0 binary")
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("flags", ["-c", "-c -l2", "-c -J", "-c -M5", "", "-J -l3 -M9"])
def test_random_zscores_print_what_trec_eval_prints(tmp_path: Path, seed: int, flags: str) -> None:
    """``-q -m all_trec -Z`` (counts, gm_map, num_q, every cut-off measure) on 12 random graded
    queries and a random z-score file: the whole text is trec_eval 10.0's."""
    rng = random.Random(seed * 31 + len(flags))
    qrels, run = _random_judgments(rng, "-c" in flags, f"r{seed}")
    (tmp_path / "qrels").write_text(qrels)
    (tmp_path / "run").write_text(run)
    files = [str(tmp_path / "qrels"), str(tmp_path / "run")]
    base = ["-q", *flags.split(), "-m", "all_trec"]
    plain = subprocess.run([TREC_EVAL, *base, *files], capture_output=True, text=True, check=True)
    (tmp_path / "z").write_text(_random_zscores(rng, plain.stdout))
    ours, theirs = _both(tmp_path, [*base, "-Z", str(tmp_path / "z"), *files])
    diff = [(a, b) for a, b in zip(ours.splitlines(), theirs.splitlines()) if a != b][:5]
    assert (len(ours.splitlines()), diff) == (len(theirs.splitlines()), [])
    assert ours == theirs


@pytest.mark.skipif(not TREC_EVAL, reason="set NUGGETBENCH_TREC_EVAL to a trec_eval 10.0 binary")
@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("flags", ["-c", ""])
def test_random_preference_zscores_print_what_trec_eval_prints(
    tmp_path: Path, seed: int, flags: str
) -> None:
    """``-R qrels_prefs -m all_prefs -Z``: the preference counts are sums of z values too."""
    rng = random.Random(700 + seed)
    qrels, run = _random_judgments(rng, "-c" in flags, "p")
    (tmp_path / "qrels").write_text(qrels)
    (tmp_path / "run").write_text(run)
    files = [str(tmp_path / "qrels"), str(tmp_path / "run")]
    base = ["-q", *flags.split(), "-R", "qrels_prefs", "-m", "all_prefs"]
    plain = subprocess.run([TREC_EVAL, *base, *files], capture_output=True, text=True, check=True)
    (tmp_path / "z").write_text(_random_zscores(rng, plain.stdout))
    ours, theirs = _both(tmp_path, [*base, "-Z", str(tmp_path / "z"), *files])
    assert ours == theirs


@pytest.mark.skipif(not TREC_EVAL, reason="set NUGGETBENCH_TREC_EVAL to a trec_eval 10.0 binary")
def test_the_issue_example_on_trec_evals_own_files(shared_data: Path) -> None:
    """``trec_eval -c -m num_rel -Z zscores_file qrels.test results.test`` (and with -l 2, and
    every count and summary measure) on trec_eval's own test files."""
    folder = shared_data / "trec_eval10"
    if not folder.is_dir():
        pytest.skip("../shared/data/trec_eval10 is absent")
    files = [str(folder / "zscores_file"), str(folder / "qrels.test"), str(folder / "results.test")]
    for flags in (["-c"], ["-c", "-l", "2"], ["-c", "-J"], ["-M", "20"], []):
        for m in (["num_rel"], ["all_trec"]):
            args = [*flags, "-q", *(w for x in m for w in ("-m", x)), "-Z", *files]
            ours, theirs = _both(folder, args)
            assert ours == theirs, (flags, m)
    ours, _ = _both(folder, ["-c", "-m", "num_rel", "-Z", *files])
    assert ours == "Znum_rel               \tall\t561.0000\n"


TREC_EVAL_9 = os.environ.get("NUGGETBENCH_TREC_EVAL_908")


@pytest.mark.skipif(not TREC_EVAL_9, reason="set NUGGETBENCH_TREC_EVAL_908 to a 9.0.8 binary")
@pytest.mark.parametrize("seed", range(3))
def test_random_zscores_under_c_print_what_trec_eval_9_prints(tmp_path: Path, seed: int) -> None:
    """``--profile trec_eval-9.0.8 -c -q -m all_trec -Z`` against trec_eval 9.0.8 (the v9.0.8
    tag built with ``make``): its judged queries missing from the run add nothing to a sum."""
    rng = random.Random(seed)
    qrels, run = _random_judgments(rng, True, "t")
    (tmp_path / "qrels").write_text(qrels)
    (tmp_path / "run").write_text(run)
    files = [str(tmp_path / "qrels"), str(tmp_path / "run")]
    base = ["-q", "-c", "-m", "all_trec"]
    plain = subprocess.run([TREC_EVAL_9, *base, *files], capture_output=True, text=True, check=True)
    (tmp_path / "z").write_text(_random_zscores(rng, plain.stdout))
    args = [*base, "-Z", str(tmp_path / "z"), *files]
    theirs = subprocess.run([TREC_EVAL_9, *args], capture_output=True, text=True, check=True)
    ours = CliRunner().invoke(
        cli, ["evaluate", *args, "--format", "trec_eval", "--profile", "trec_eval-9.0.8"]
    )
    assert ours.exit_code == 0, ours.output
    assert ours.stdout == theirs.stdout
