"""trec_eval 10.0's ``make quicktest`` through the drop-in ``nuggetbench trec_eval`` and through
``nuggetbench evaluate --profile trec_eval --format trec_eval``.

The 15 commands of ``../shared/data/README.md`` must print exactly the reference file (skipped
when the shared data is absent): given to ``nuggetbench trec_eval`` as trec_eval takes them, and
to ``evaluate`` with ``--profile trec_eval`` (trec_eval's averaging asked for by name: evaluate's
own default is ``-c``, whatever it prints) and ``--ignore-trailing`` for ``results.trunc``, whose
lines carry a 7th field. Also: the ``trec_eval-9.0.8`` profile, the ``-Z`` z-score file, and the
errors around them.
"""

from __future__ import annotations

import os
import random
import shlex
import subprocess
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from nuggetbench.cli import cli
from nuggetbench.data.formats.zscores import read_zscores
from nuggetbench.errors import FormatError
from nuggetbench.measures import get_profile
from nuggetbench.measures.trec.zscores import MISSING_ZSCORE, standardise

# (reference output, trec_eval's arguments) as make quicktest runs them
QUICKTEST = [
    ("out.test", "qrels.test results.test"),
    ("out.test", "qrels.test.with-comments results.test"),
    ("out.comment.test", "qrels.comment.test results.comment.test"),
    ("out.test.a", "-m all_trec qrels.test results.test"),
    ("out.test.aq", "-m all_trec -q qrels.test results.test"),
    ("out.test.aqc", "-m all_trec -q -c qrels.test results.trunc"),
    ("out.test.aqcM", "-m all_trec -q -c -M100 qrels.test results.trunc"),
    ("out.test.aql", "-m all_trec -mrelstring.20 -q -l2 qrels.rel_level results.test"),
    ("out.test.prefs", "-m all_prefs -q -R prefs prefs.test prefs.results.test"),
    ("out.test.prefs", "-m all_prefs -q -R prefs prefs.comment.test prefs.results.test"),
    ("out.test.qrels_prefs", "-m all_prefs -q -R qrels_prefs qrels.test results.test"),
    ("out.test.qrels_jg", "-m qrels_jg -q -R qrels_jg qrels.123 results.test"),
    ("out.test.qrels_jg", "-m qrels_jg -q -R qrels_jg qrels.comments.123 results.test"),
    (
        "out.test.meas_params",
        "-q -miprec_at_recall..10,.20,.25,.75,.50 -m P.5,7,3 -m recall.20,2000 "
        "-m Rprec_mult.5.0,0.2,0.35 -mutility.2,-1,0,0 -m 11pt_avg..25,.5,.75 "
        "-mndcg.1=3,2=9,4=4.5 -mndcg_cut.10,20,23.4 -msuccess.2,5,20 qrels.test results.test",
    ),
    ("out.test.aqZ", "-q -m all_trec -Z zscores_file qrels.test results.test"),
]


@pytest.fixture
def folder(shared_data: Path) -> Path:
    path = shared_data / "trec_eval10"
    if not path.is_dir():
        pytest.skip("../shared/data/trec_eval10 is absent")
    return path


def _words(folder: Path, args: str) -> list[str]:
    """trec_eval's *args*, file names resolved in *folder*."""
    return [str(folder / w) if (folder / w).is_file() else w for w in shlex.split(args)]


def _evaluate(folder: Path, args: str, *extra: str):
    """``nuggetbench evaluate`` with trec_eval's *args* and trec_eval's averaging by name."""
    words = _words(folder, args)
    if "results.trunc" in args:
        words.append("--ignore-trailing")
    command = ["evaluate", *words, "--format", "trec_eval", "--profile", "trec_eval", *extra]
    return CliRunner().invoke(cli, command)


def _drop_in(folder: Path, args: str):
    """``nuggetbench trec_eval`` with trec_eval's *args*, as trec_eval takes them."""
    return CliRunner().invoke(cli, ["trec_eval", *_words(folder, args)])


@pytest.mark.parametrize("how", ["trec_eval", "evaluate --profile trec_eval"])
@pytest.mark.parametrize(("reference", "args"), QUICKTEST, ids=[a for _, a in QUICKTEST])
def test_quicktest_command_prints_the_reference_exactly(folder: Path, reference, args, how) -> None:
    result = _drop_in(folder, args) if how == "trec_eval" else _evaluate(folder, args)
    assert result.exit_code == 0, result.output
    expected = (folder / reference).read_text()
    ours, theirs = result.stdout.splitlines(), expected.splitlines()
    diff = [(i, a, b) for i, (a, b) in enumerate(zip(ours, theirs)) if a != b][:5]
    assert (len(ours), diff) == (len(theirs), [])
    assert result.stdout == expected  # byte for byte, final newline included


def test_trec_eval_9_profile_keeps_908s_conventions(folder: Path) -> None:
    """``--profile trec_eval-9.0.8``: no per-query lines for the judged query missing from the
    run under -c -q, ``all_trec`` without rbp/unj, and the interpolation k = floor(r R + 0.9)."""
    old = _evaluate(
        folder, "-m all_trec -q -c qrels.test results.trunc", "--profile", "trec_eval-9.0.8"
    )
    new = _evaluate(folder, "-m all_trec -q -c qrels.test results.trunc")
    assert old.exit_code == 0 and new.exit_code == 0, old.output + new.output
    old_q = {line.split("\t")[1] for line in old.stdout.splitlines()}
    new_q = {line.split("\t")[1] for line in new.stdout.splitlines()}
    assert new_q - old_q == {"302"}  # judged, absent from results.trunc
    assert not any(line.startswith(("rbp", "unj")) for line in old.stdout.splitlines())
    assert any(line.startswith("rbp ") for line in new.stdout.splitlines())
    prof = get_profile("trec_eval-9.0.8 -c -M 100")
    assert prof.options["measure_defaults"] == {"legacy": True}
    assert prof.options["trec_eval_version"] == "9.0.8" and prof.average_over == "qrels"
    legacy = _evaluate(
        folder, "-m iprec_at_recall qrels.test results.test", "--profile", "trec_eval-9.0.8"
    )
    asked = (
        "-m IPrec(recall=0.1,legacy=true) -m IPrec(recall=0.6,legacy=true) qrels.test results.test"
    )
    direct = _evaluate(folder, asked)
    assert legacy.exit_code == 0 and direct.exit_code == 0, legacy.output + direct.output
    by_name = {line.split()[0]: line.split()[2] for line in legacy.stdout.splitlines()}
    values = [line.split()[2] for line in direct.stdout.splitlines()]
    assert [by_name["iprec_at_recall_0.10"], by_name["iprec_at_recall_0.60"]] == values
    # the two interpolations differ on this run (so the profile's default matters)
    plain = _evaluate(folder, "-m iprec_at_recall qrels.test results.test")
    assert plain.stdout != legacy.stdout


def test_zscores_standardise_as_convert_zscores() -> None:
    """z = (v - mean) / stddev; missing line or stddev 0 with v != mean: -1000000; stddev 0
    with v == mean: 0; sums for counts; num_q stays the query count; gm_ on the log value."""
    table = {"a": {"map": (0.5, 0.25), "num_ret": (10.0, 0.0)}, "b": {"map": (0.0, 0.0)}}
    families = {"map": "mean", "num_ret": "sum", "num_q": "count", "gm_map": "gmean"}
    values = {
        "map": np.array([0.75, 0.0]),
        "num_ret": np.array([10.0, 3.0]),
        "num_q": np.ones(2),
        "gm_map": np.array([0.75, 0.0]),
    }
    z, means = standardise(families, values, ["a", "b"], table)
    assert z["map"].tolist() == [1.0, 0.0]
    assert z["num_ret"].tolist() == [0.0, MISSING_ZSCORE]
    assert means["map"] == 0.5 and means["num_ret"] == MISSING_ZSCORE and means["num_q"] == 2.0
    assert z["gm_map"].tolist() == [MISSING_ZSCORE] * 2 and means["gm_map"] == 0.0


def test_zscore_file_errors_name_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "z.txt"
    path.write_text("# reference runs\n301 map 0.2 0.1\n301 P_5 0.4\n")
    with pytest.raises(FormatError, match=r"z.txt, line 3: expected 'query_id measure_name"):
        read_zscores(path)
    path.write_text("301 map 0.2 x\n")
    with pytest.raises(FormatError, match=r"line 1: the stddev must be a finite number, got 'x'"):
        read_zscores(path)
    path.write_text("301 map 0.2 0.1\n")
    assert read_zscores(path) == {"301": {"map": (0.2, 0.1)}}


def test_zscores_need_the_trec_eval_format(tmp_path: Path) -> None:
    qrels, run, z = tmp_path / "q", tmp_path / "r", tmp_path / "z"
    qrels.write_text("1 0 a 1\n")
    run.write_text("1 Q0 a 1 2.0 t\n")
    z.write_text("1 map 0.5 0.5\n")
    result = CliRunner().invoke(cli, ["evaluate", str(qrels), str(run), "-Z", str(z)])
    assert result.exit_code == 2 and "--format trec_eval only" in result.output
    result = CliRunner().invoke(
        cli, ["evaluate", str(qrels), str(run), "-m", "map", "-Z", str(z), "--format", "trec_eval"]
    )
    assert result.exit_code == 0, result.output
    assert result.stdout == "Zmap                   \tall\t1.0000\n"


# --- corners found against trec_eval 10.0 built from source (usnistgov/trec_eval f4253652) -----
def _text(tmp_path: Path, qrels: str, run: str, *args: str) -> str:
    (tmp_path / "qrels").write_text(qrels)
    (tmp_path / "run").write_text(run)
    base = ["evaluate", str(tmp_path / "qrels"), str(tmp_path / "run"), "--format", "trec_eval"]
    result = CliRunner().invoke(cli, [*base, *args])
    assert result.exit_code == 0, result.output
    return result.stdout


def test_set_map_divides_once_as_trec_eval(tmp_path: Path) -> None:
    """3 relevant of 16 retrieved, 10 relevant: 9 / 160 = 0.05625 prints 0.0563 (the product
    (3/16)(3/10) is a hair below and would print 0.0562)."""
    qrels = "".join(f"1 0 r{i} 1\n" for i in range(10))
    run = "".join(f"1 Q0 {'r' if i < 3 else 'n'}{i} 0 {20 - i} t\n" for i in range(16))
    assert _text(tmp_path, qrels, run, "-m", "set_map") == "set_map               \tall\t0.0563\n"


def test_num_rel_all_line_under_c_counts_every_positive_judgment(tmp_path: Path) -> None:
    """-c: the all line of num_rel counts the judgments with grade > 0 of every judged query,
    whatever -l says (m_num_rel.c); the per-query lines follow -l."""
    out = _text(
        tmp_path,
        "1 0 a 1\n1 0 b 2\n2 0 c 1\n",
        "1 Q0 a 0 2 t\n",
        "-m",
        "num_rel",
        "-q",
        "-c",
        "-l",
        "2",
    )
    assert (
        out
        == "num_rel               \t1\t1\nnum_rel               \t2\t0\nnum_rel               \tall\t3\n"
    )


def test_judged_only_empty_rankings_print_trec_eval_nan(tmp_path: Path) -> None:
    """-J empties query 1's ranking (only an unjudged document): interpolated precision at
    recall 0 is 0/0, printed '  -nan' as C's printf does. Under -c, trec_eval 10.0 ranks one
    unjudged document for the missing query 2, so it is 0/0 there too (9.0.8: no line, 0 in the
    mean)."""
    qrels, run = "1 0 a 1\n2 0 b 1\n", "1 Q0 u 0 2 t\n"
    out = _text(tmp_path, qrels, run, "-m", "iprec_at_recall.0", "-q", "-c", "-J")
    nan = "iprec_at_recall_0.00  \t{}\t  -nan\n"
    assert out == nan.format(1) + nan.format(2) + nan.format("all")
    old = _text(
        tmp_path,
        qrels,
        run,
        "-m",
        "iprec_at_recall.0",
        "-q",
        "-c",
        "-J",
        "--profile",
        "trec_eval-9.0.8",
    )
    assert old == nan.format(1) + nan.format("all")  # NaN + 0 over 2 queries: still NaN


TREC_EVAL = os.environ.get("NUGGETBENCH_TREC_EVAL")


@pytest.mark.skipif(not TREC_EVAL, reason="set NUGGETBENCH_TREC_EVAL to a trec_eval 10.0 binary")
@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("flags", ["-c", "-c -M5", "-c -l2", "-c -J", "-J -l3 -M9"])
def test_random_all_trec_prints_what_trec_eval_prints(
    tmp_path: Path, seed: int, flags: str
) -> None:
    """``-q -m all_trec`` with trec_eval's flags on 30 random graded queries (ties, unjudged
    documents, with -c judged queries missing from the run): the whole text is trec_eval's."""
    rng = random.Random(seed)
    qrels, run = [], []
    for i in range(30):
        pool = [f"D{j}" for j in range(rng.randint(1, 30))]
        qrels += [
            f"{i:03d} 0 {d} {rng.choice([0, 0, 1, 1, 2, 3])}\n" for d in pool if rng.random() < 0.7
        ]
        if "-c" not in flags or rng.random() < 0.85:  # without -c, 10.0 stops on a missing query
            docs = rng.sample(pool + [f"U{j}" for j in range(10)], rng.randint(1, len(pool) + 5))
            run += [f"{i:03d} Q0 {d} 0 {rng.randint(0, 8) / 2} r{seed}\n" for d in docs]
    (tmp_path / "qrels").write_text("".join(qrels))
    (tmp_path / "run").write_text("".join(run))
    args = ["-q", *flags.split(), "-m", "all_trec", str(tmp_path / "qrels"), str(tmp_path / "run")]
    theirs = subprocess.run([TREC_EVAL, *args], capture_output=True, text=True, check=True)
    ours = CliRunner().invoke(cli, ["trec_eval", *args])  # the drop-in: trec_eval's defaults
    assert ours.exit_code == 0, ours.output
    assert ours.stdout == theirs.stdout


def test_trec_eval_text_of_an_unregistered_profile(tmp_path: Path) -> None:
    """A caller's own Profile (never registered) still prints: 10.0's conventions apply."""
    from nuggetbench.evaluation import evaluate_dataset, trec_eval_text
    from nuggetbench.measures import Profile

    (tmp_path / "q").write_text("1 0 a 1\n2 0 b 1\n")
    (tmp_path / "r").write_text("1 Q0 a 0 1 t\n")
    prof = Profile(name="my complete", average_over="qrels")
    ev = evaluate_dataset(tmp_path / "q", tmp_path / "r", ["num_rel", "relstring"], prof)
    text = trec_eval_text(ev, ["num_rel", "relstring"], per_query=True)
    assert text.splitlines()[2:4] == [
        "num_rel               \t2\t1",
        "relstring             \t2\t''",
    ]
