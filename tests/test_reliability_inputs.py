"""Issue 13: odd or hostile inputs get the right number or a clear error (items 1-4, 7, 10, 11, 15).

Each test fails on the code before the issue's fixes (checked) and names the item it covers.
"""

from __future__ import annotations

import gzip
import os
import pickle
import subprocess
import sys
import threading
import tracemalloc

import numpy as np
import pytest
from click.testing import CliRunner

from nuggetbench.cli import cli
from nuggetbench.data import Qrels
from nuggetbench.data import read_document_qrels as load_qrels
from nuggetbench.data import read_run as load_run
from nuggetbench.data import read_trec_qrels as read_qrels
from nuggetbench.data import read_trec_run as read_run
from nuggetbench.data.formats import safepickle
from nuggetbench.data.formats.beir import read_beir_qrels, read_json_qrels, read_queries_jsonl
from nuggetbench.data.formats.rankfile import read_rank_file
from nuggetbench.data.formats.safepickle import safe_loads, to_builtin
from nuggetbench.errors import DuplicateError, FormatError, InputError
from nuggetbench.measures import score as evaluate


def _perfect_run(n_queries: int = 20, per_query: int = 60) -> tuple[str, str]:
    """A qrels and a run that retrieves exactly the judged documents in grade order (nDCG 1)."""
    qrels, run = [], []
    for q in range(n_queries):
        for i in range(per_query):
            grade = 3 if i < 5 else (1 if i < 20 else 0)
            qrels.append(f"q{q} 0 doc{q}_{i} {grade}\n")
            run.append(f"q{q} Q0 doc{q}_{i} {i + 1} {per_query - i} sys\n")
    return "".join(qrels), "".join(run)


# -- item 1: a run from a pipe or FIFO is read once ------------------------------------------------


def test_item1_run_from_a_pipe_is_read_once(tmp_path):
    qrels_text, run_text = _perfect_run()
    assert len(run_text) > 3 * 8192  # beyond what a first peek would swallow
    qrels = tmp_path / "qrels.txt"
    qrels.write_text(qrels_text)
    read_fd, write_fd = os.pipe()

    def feed():
        with os.fdopen(write_fd, "w") as fh:
            fh.write(run_text)

    feeder = threading.Thread(target=feed)
    feeder.start()
    try:
        run = load_run(f"/dev/fd/{read_fd}")
    finally:
        feeder.join()
        os.close(read_fd)
    assert run.n_entries == run_text.count("\n")
    result = evaluate(read_qrels(qrels), run, ["nDCG@10"])
    assert result.mean("nDCG@10") == pytest.approx(1.0)


def test_item1_qrels_from_a_pipe_is_read_once(tmp_path):
    from nuggetbench.evaluation import evaluate_dataset

    qrels_text, run_text = _perfect_run()
    run = tmp_path / "run.txt"
    run.write_text(run_text)
    read_fd, write_fd = os.pipe()

    def feed():
        with os.fdopen(write_fd, "w") as fh:
            fh.write(qrels_text)

    feeder = threading.Thread(target=feed)
    feeder.start()
    try:
        ev = evaluate_dataset(f"/dev/fd/{read_fd}", run, ["nDCG@10"])
    finally:
        feeder.join()
        os.close(read_fd)
    assert ev.results.mean("nDCG@10") == pytest.approx(1.0)
    assert len(ev.results.query_ids) == 20


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes need POSIX")
def test_item1_named_fifo_does_not_hang(tmp_path):
    qrels_text, run_text = _perfect_run(5, 30)
    (tmp_path / "qrels.txt").write_text(qrels_text)
    fifo = tmp_path / "run.fifo"
    os.mkfifo(fifo)
    code = (
        "import sys, json\nfrom nuggetbench.data import read_run as load_run\n"
        f"run = load_run({str(fifo)!r})\nprint(run.n_entries)\n"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=env
    )
    with open(fifo, "w") as fh:  # blocks until the reader opens it
        fh.write(run_text)
    try:
        out, _ = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail("reading a named FIFO hung (the path was opened twice)")
    assert int(out.strip()) == run_text.count("\n")


# -- item 2: ids are bytes ----------------------------------------------------------------------------


def test_item2_invalid_utf8_ids_never_merge(tmp_path):
    qrels = tmp_path / "qrels.txt"
    qrels.write_bytes(b"q1 0 caf\xe9 1\n")
    run = tmp_path / "run.txt"
    run.write_bytes(b"q1 Q0 caf\xe8 1 1.0 t\n")
    # trec_eval compares bytes: caf\xe8 is not caf\xe9, so P@1 = 0
    assert evaluate(read_qrels(qrels), read_run(run), ["P@1"]).mean("P@1") == 0.0
    same = tmp_path / "same.txt"
    same.write_bytes(b"q1 Q0 caf\xe9 1 1.0 t\n")
    assert evaluate(read_qrels(qrels), read_run(same), ["P@1"]).mean("P@1") == 1.0
    assert read_run(run).doc_ids("q1") != read_run(same).doc_ids("q1")


def test_item2_invalid_bytes_round_trip_through_the_writers(tmp_path):
    from nuggetbench.data import write_qrels, write_run

    src = tmp_path / "run.txt"
    src.write_bytes(b"q\xff Q0 caf\xe9 1 2.5 t\nq\xff Q0 caf\xe8 2 1.5 t\n")
    out = write_run(read_run(src), tmp_path / "out.txt")
    assert out.read_bytes().split(b"\n")[0].split()[:3] == [b"q\xff", b"Q0", b"caf\xe9"]
    qsrc = tmp_path / "q.txt"
    qsrc.write_bytes(b"q\xff 0 caf\xe9 2\n")
    qout = write_qrels(read_qrels(qsrc), tmp_path / "qout.txt")
    assert qout.read_bytes() == b"q\xff 0 caf\xe9 2\n"


def test_item2_reserved_code_points_are_refused(tmp_path):
    path = tmp_path / "run.txt"
    path.write_bytes(b"q1 Q0 caf" + chr(0x10FFE9).encode() + b" 1 1.0 t\n")
    with pytest.raises(FormatError, match=r"line 1.*U\+10FFE9"):
        read_run(path)


# -- item 3: byte-order marks -------------------------------------------------------------------------


def test_item3_bom_is_stripped_on_every_path(tmp_path):
    # a tab in one line sends the file to the careful (slow) parser
    text = "301\tQ0 d1 1 2.0 t\n301 Q0 d2 2 1.0 t\n302 Q0 d3 1 1.0 t\n"
    path = tmp_path / "run.txt"
    path.write_bytes(b"\xef\xbb\xbf" + text.encode())
    assert read_run(path).query_ids == ["301", "302"]
    assert load_run(path).query_ids == ["301", "302"]
    qpath = tmp_path / "qrels.txt"
    qpath.write_bytes(b"\xef\xbb\xbf301\t0 d1 1\n302 0 d3 1\n")
    assert read_qrels(qpath).query_ids == ["301", "302"]
    tsv = tmp_path / "test.tsv"
    tsv.write_bytes(b"\xef\xbb\xbf301\td1\t1\n")
    assert read_beir_qrels(tsv).query_ids == ["301"]
    js = tmp_path / "run.json"
    js.write_bytes(b'\xef\xbb\xbf{"301": {"d1": 1.0}}')
    assert load_run(js).query_ids == ["301"]


def test_item3_queries_jsonl_with_bom_loads(tmp_path):
    path = tmp_path / "queries.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"_id": "q1", "text": "hello"}\n{"_id": "q2", "text": "x"}\n')
    assert dict(read_queries_jsonl(path)) == {"q1": "hello", "q2": "x"}


# -- item 4: grades are exact integers ----------------------------------------------------------------


def test_item4_huge_and_exact_grades(tmp_path):
    big = 2**63 - 1
    path = tmp_path / "qrels.txt"
    path.write_text(f"q1 0 d1 {big}\nq1 0 d2 {2**53 + 1}\nq1 0 d3 -{2**63}\nq1 0 d4 2e1\n")
    qrels = read_qrels(path)
    assert qrels["q1"] == {"d1": big, "d2": 2**53 + 1, "d3": -(2**63), "d4": 20}
    run = tmp_path / "run.txt"
    run.write_text("q1 Q0 d1 1 3 t\nq1 Q0 d3 2 2 t\n")
    # the huge grade is relevant: P@1 = 1 (it wrapped to a negative number before)
    assert evaluate(qrels, read_run(run), ["P@1"]).mean("P@1") == 1.0


@pytest.mark.parametrize("value", ["9223372036854775808", "1e20", "-1e19", "1e999999999", "1.5"])
def test_item4_out_of_range_or_fractional_grades_are_clear_errors(tmp_path, value):
    path = tmp_path / "qrels.txt"
    path.write_text(f"q1 0 d1 1\nq1 0 d2 {value}\n")
    with pytest.raises(FormatError, match=r"line 2: relevance '"):
        read_qrels(path)
    tsv = tmp_path / "qrels.tsv"
    tsv.write_text(f"query-id\tcorpus-id\tscore\nq1\td2\t{value}\n")
    with pytest.raises(FormatError, match="line 2"):
        read_beir_qrels(tsv)
    js = tmp_path / "qrels.json"
    js.write_text(f'{{"q1": {{"d2": {value}}}}}')
    with pytest.raises(InputError, match="integer|finite"):
        read_json_qrels(js)


def test_item4_qrels_constructor_keeps_python_ints_exact():
    q = Qrels(["q1", "q1"], ["a", "b"], [2**53 + 1, 2**63 - 1])
    assert q["q1"] == {"a": 2**53 + 1, "b": 2**63 - 1}
    with pytest.raises(InputError, match="64-bit"):
        Qrels(["q1"], ["a"], [2**63])
    with pytest.raises(InputError, match="integer"):
        Qrels(["q1"], ["a"], np.array([np.inf]))


# -- item 7: JSON runs reject non-finite scores --------------------------------------------------------


@pytest.mark.parametrize("score", ["Infinity", "-Infinity", "NaN", "1e400"])
def test_item7_json_run_rejects_non_finite_scores(tmp_path, score):
    path = tmp_path / "run.json"
    path.write_text(f'{{"q1": {{"d1": {score}, "d2": 1.0}}}}')
    with pytest.raises(FormatError, match="not finite"):
        load_run(path)
    trec = tmp_path / "run.txt"
    trec.write_text(f"q1 Q0 d1 1 {score.replace('Infinity', 'inf')} t\n")
    with pytest.raises(FormatError):
        load_run(trec)


# -- item 10: the unpickler never allocates on a pickle's say-so ---------------------------------------


def _bomb(count: int) -> bytes:
    """A protocol-2 pickle of ``{'q': list(bytes(count))}`` built from opcodes (68-odd bytes)."""
    return (
        b"\x80\x02}X\x01\x00\x00\x00qc__builtin__\nlist\nc__builtin__\nbytes\nJ"
        + count.to_bytes(4, "little")
        + b"\x85R\x85Rs."
    )


def test_item10_pickle_bomb_is_refused_without_allocating(tmp_path):
    data = _bomb(200_000_000)
    assert len(data) < 80
    tracemalloc.start()
    try:
        with pytest.raises(FormatError, match="builtins.bytes called with"):
            safe_loads(data, source="bomb.pickle")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 50_000_000
    path = tmp_path / "BOMB.pickle"
    path.write_bytes(data)
    result = CliRunner().invoke(cli, ["evaluate", str(path), str(path)])
    assert result.exit_code != 0


def test_item10_plain_rebuilds_still_work():
    value = {
        "q": [np.str_("d1"), "d2"],
        "s": {1, 2},
        "f": frozenset({"a"}),
        "b": b"xy",
        "c": 1 + 2j,
    }
    for protocol in (0, 2, 4, 5):
        assert to_builtin(safe_loads(pickle.dumps(value, protocol=protocol))) == {
            "q": ["d1", "d2"],
            "s": {1, 2},
            "f": frozenset({"a"}),
            "b": b"xy",
            "c": 1 + 2j,
        }


def test_item10_self_reference_and_deep_nesting_are_clear_errors(tmp_path):
    loop: list = []
    loop.append(loop)
    with pytest.raises(FormatError, match="contains itself|deeper"):
        safepickle.load_builtin(pickle.dumps({"q": loop}))
    depth = 100_000  # built from opcodes: EMPTY_LIST x n, APPEND x (n - 1)
    deep = b"\x80\x02}X\x01\x00\x00\x00q" + b"]" * depth + b"a" * (depth - 1) + b"s."
    path = tmp_path / "deep.pickle"
    path.write_bytes(deep)
    with pytest.raises(FormatError, match="deeper"):
        read_rank_file(path)
    js = tmp_path / "deep.json"
    js.write_text('{"q": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(FormatError):
        read_rank_file(js)


def test_item10_shared_references_cannot_expand_a_small_file():
    docs = [f"d{i}" for i in range(2000)]
    data = pickle.dumps({f"q{i}": docs for i in range(2000)})  # 4M entries from ~40 KB
    with pytest.raises(FormatError, match="expands to more than"):
        safepickle.load_builtin(data, source="shared.pickle")


def test_item10_messages_quote_a_short_prefix(tmp_path):
    path = tmp_path / "big.pickle"
    path.write_bytes(pickle.dumps({"q" * 5_000_000: 3.5}, protocol=4))
    with pytest.raises(FormatError) as info:
        read_rank_file(path)
    assert len(str(info.value)) < 600
    path.write_bytes(pickle.dumps({"q": [b"x" * 5_000_000]}, protocol=4))
    with pytest.raises(FormatError) as info:
        read_rank_file(path)
    assert len(str(info.value)) < 600


# -- item 11: gzip faults are our error with the file name ---------------------------------------------


def test_item11_truncated_and_bogus_gzip(tmp_path):
    _, run_text = _perfect_run(3, 30)
    full = gzip.compress(run_text.encode())
    truncated = tmp_path / "run.gz"
    truncated.write_bytes(full[: len(full) // 2])
    with pytest.raises(FormatError, match=r"run\.gz.*truncated"):
        load_run(truncated)
    bogus = tmp_path / "plain.gz"
    bogus.write_text(run_text)
    with pytest.raises(FormatError, match=r"plain\.gz.*not a valid gzip"):
        read_run(bogus)
    qrels = tmp_path / "q.txt"
    qrels.write_text("q0 0 doc0_0 1\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.run(
        [sys.executable, "-m", "nuggetbench", "evaluate", str(qrels), str(truncated)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode not in (0, 130)
    assert "run.gz" in proc.stderr and "truncated" in proc.stderr
    assert "Aborted" not in proc.stderr and "Traceback" not in proc.stderr
    assert load_qrels(qrels).query_ids == ["q0"]


# -- item 15 (second half): a duplicate names the line -------------------------------------------------


def test_item15_duplicate_pair_names_the_lines(tmp_path):
    path = tmp_path / "run.txt"
    path.write_text("q1 Q0 d1 1 3 t\nq1 Q0 d2 2 2 t\n# comment\nq1 Q0 d1 3 1 t\n")
    with pytest.raises(DuplicateError, match=r"run\.txt, line 4 \(first at line 1\)") as info:
        read_run(path)
    assert info.value.key == ("q1", "d1")
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 1\nq1 0 d2 0\nq1 0 d1 2\n")
    with pytest.raises(DuplicateError, match=r"line 3 \(first at line 1\).*judged twice"):
        read_qrels(qrels)
