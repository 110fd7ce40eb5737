"""The speed paths under the measures layer give exactly the results of the plain ones.

* ``data.ranking.rank_order`` / ``rank_codes`` (tie groups only, per-query blocks) against a plain
  ``np.lexsort`` over (query, -score, doc id).
* ``read_run``'s pyarrow path against the pandas / line-by-line reader.
* ``Run.doc_codes()`` and the code-based fingerprint.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from nuggetbench.data import Run
from nuggetbench.data import read_trec_run as read_run
from nuggetbench.data.formats import trec_arrow as arrow_trec
from nuggetbench.data.ranking import rank_order
from nuggetbench.errors import DuplicateError, FormatError


def _reference_order(q, s, d, tie_break):
    codes, _ = pd.factorize(np.asarray(d, dtype=object), sort=True)
    key = -codes if tie_break == "docid_desc" else codes
    return np.lexsort((key, -np.asarray(s, dtype=float), q))


@pytest.mark.parametrize("layout", ["random", "ranked", "blocks_unordered", "blocks_shuffled"])
def test_rank_order_matches_plain_lexsort(layout):
    rng = np.random.default_rng(
        ["random", "ranked", "blocks_unordered", "blocks_shuffled"].index(layout)
    )
    for _ in range(400):
        n = int(rng.integers(0, 50))
        q = rng.integers(0, 5, n)
        if rng.random() < 0.6:
            s = rng.choice([0.0, -0.0, 1.0, 2.5, -1.0, np.inf, -np.inf], n)
        else:
            s = rng.random(n)
        d = np.array(
            [f"d{x}" for x in rng.integers(0, 30, n)], dtype=object
        )  # repeats allowed here
        if layout != "random":
            o = np.lexsort((-s, q))
            q, s, d = q[o], s[o], d[o]
        if layout in ("blocks_unordered", "blocks_shuffled"):
            q = rng.permutation(5)[q]
        if layout == "blocks_shuffled" and n:
            first = {x: i for i, x in reversed(list(enumerate(q.tolist())))}
            o = np.lexsort((rng.random(n), [first[x] for x in q.tolist()]))
            q, s, d = q[o], s[o], d[o]
        for tie_break in ("docid_desc", "docid_asc"):
            assert np.array_equal(
                rank_order(q, s, d, tie_break=tie_break), _reference_order(q, s, d, tie_break)
            )


def test_rank_order_fixed_depth_blocks_match_plain_lexsort():
    """Every query has the same number of entries (a fixed retrieval depth), in contiguous
    blocks in any query order, scores unsorted: the unpadded per-block sort."""
    rng = np.random.default_rng(7)
    for _ in range(300):
        k, depth = int(rng.integers(1, 8)), int(rng.integers(2, 12))
        q = np.repeat(rng.permutation(k), depth)
        s = rng.choice([0.0, -0.0, 1.0, 2.5, -1.0, np.inf], k * depth)
        if rng.random() < 0.5:
            s = np.round(rng.random(k * depth), 1)
        d = np.array([f"d{x}" for x in rng.integers(0, 40, k * depth)], dtype=object)
        for tie_break in ("docid_desc", "docid_asc"):
            assert np.array_equal(
                rank_order(q, s, d, tie_break=tie_break), _reference_order(q, s, d, tie_break)
            )


def _write_run(path, rng, n_queries=300, depth=120, sep=" ", shuffle=True, comment=False):
    lines = ["# a comment line\n"] if comment else []
    qids = [str(q) for q in rng.permutation(n_queries) + 1]  # numeric order != string order
    for qid in qids:
        docs = rng.choice(5000, depth, replace=False)
        scores = np.round(rng.random(depth) * 3, 1)  # many ties
        order = rng.permutation(depth) if shuffle else np.argsort(-scores, kind="stable")
        for rank, i in enumerate(order, start=1):
            lines.append(
                sep.join([qid, "Q0", f"doc-{docs[i]}", str(rank), repr(float(scores[i])), "tagA"])
                + "\n"
            )
    path.write_text("".join(lines))
    return path


def _read_both(path, monkeypatch, **kwargs):
    calls = []
    original = arrow_trec.read_columns

    def spy(*args, **kw):
        out = original(*args, **kw)
        calls.append(out is not None)
        return out

    monkeypatch.setattr(arrow_trec, "read_columns", spy)
    monkeypatch.setattr(arrow_trec, "MIN_BYTES", 0)
    fast = read_run(path, **kwargs)
    monkeypatch.setattr(arrow_trec, "MIN_BYTES", 1 << 62)
    slow = read_run(path, **kwargs)
    return fast, slow, calls[0]


@pytest.mark.parametrize(
    ("sep", "shuffle", "comment"), [(" ", True, False), ("\t", False, True), (" ", False, False)]
)
def test_arrow_reader_equals_regular_reader(tmp_path, monkeypatch, sep, shuffle, comment):
    pytest.importorskip("pyarrow")
    rng = np.random.default_rng(3)
    path = _write_run(tmp_path / "run.txt", rng, sep=sep, shuffle=shuffle, comment=comment)
    fast, slow, took_fast_path = _read_both(path, monkeypatch, keep_rank=True)
    assert took_fast_path
    assert fast == slow and fast.name == slow.name == "tagA"
    assert fast.input_sorted == slow.input_sorted == (not shuffle)
    assert np.array_equal(fast.input_ranks, slow.input_ranks)
    assert fast.fingerprint() == slow.fingerprint()
    assert fast["1"] == slow["1"]
    uniques, codes = fast.doc_codes()
    assert np.array_equal(uniques[codes], fast.arrays()[2])


@pytest.mark.parametrize(
    "text",
    [
        "1 Q0 d1 1 2.0 t\n1  Q0 d2 2 1.0 t\n",  # a double space
        " 1 Q0 d1 1 2.0 t\n1 Q0 d2 2 1.0 t\n",  # a leading space
        "1\tQ0\td1\t1\t  2.0\tt\n1\tQ0\td2\t2\t1.0\tt\n",  # tabs and spaces (trec_eval's test files)
        "1 Q0 d1 1 2.0 t\n1\tQ0\td2\t2\t1.0\tt\n",  # mixed separators
        "1 Q0 d1 1 2.0 t \n1 Q0 d2 2 1.0 t\n",  # a trailing space
    ],
)
def test_irregular_files_decline_the_fast_path(tmp_path, monkeypatch, text):
    pytest.importorskip("pyarrow")
    path = tmp_path / "run.txt"
    path.write_text(text)
    fast, slow, took_fast_path = _read_both(path, monkeypatch)
    assert not took_fast_path
    assert fast == slow and fast.doc_ids("1") == ["d1", "d2"]


def test_fast_path_errors(tmp_path, monkeypatch):
    pytest.importorskip("pyarrow")
    monkeypatch.setattr(arrow_trec, "MIN_BYTES", 0)
    path = tmp_path / "dup.txt"
    path.write_text("1 Q0 d1 1 2.0 t\n2 Q0 d1 1 2.0 t\n1 Q0 d1 2 1.0 t\n")
    with pytest.raises(DuplicateError) as info:
        read_run(path)
    assert "'1'" in str(info.value) and "'d1'" in str(info.value)
    path.write_text("1 Q0 d1 1 2.0 t\n1 Q0 d2 2 inf t\n")
    with pytest.raises(FormatError) as info:
        read_run(path)
    assert "line 2" in str(info.value)
    path.write_text("1 Q0 d1 1 2.0 t\n1 Q0 d2 2 x t\n")
    with pytest.raises(FormatError):
        read_run(path)


def test_doc_codes_and_fingerprint_follow_derived_runs():
    run = Run.from_dict({"a": {"x": 1.0, "y": 2.0, "z": 0.5}, "b": {"y": 1.0, "w": 1.0}})
    other = Run(["b", "a", "b", "a", "a"], ["w", "z", "y", "y", "x"], [1.0, 0.5, 1.0, 2.0, 1.0])
    assert run == other and run.fingerprint() == other.fingerprint()
    assert (
        run.fingerprint()
        != Run.from_dict(
            {"a": {"x": 1.0, "y": 2.0, "z": 0.6}, "b": {"y": 1.0, "w": 1.0}}
        ).fingerprint()
    )
    assert (
        run.fingerprint()
        != Run.from_dict(
            {"a": {"x": 1.0, "y": 2.0, "q": 0.5}, "b": {"y": 1.0, "w": 1.0}}
        ).fingerprint()
    )
    for derived in (
        run.truncate(1),
        run.filter_queries(["b"]),
        run.filter_entries(np.array([1, 0, 1, 1, 0], bool)),
        run.with_name("renamed"),
    ):
        uniques, codes = derived.doc_codes()
        assert np.array_equal(uniques[codes], derived.arrays()[2])
        rebuilt = Run.from_dict(derived.to_dict())
        assert derived.fingerprint() == rebuilt.fingerprint()
    assert run.doc_ids("a") == ["y", "x", "z"] and run.doc_ids("b") == ["y", "w"]


@pytest.mark.parametrize("seed", range(3))
def test_arrow_qrels_reader_equals_regular_reader(tmp_path, monkeypatch, seed):
    """read_qrels' pyarrow path gives the regular reader's qrels, errors included, on random
    near-qrels files (tabs, comments, blank lines, odd spacing, bad grades, duplicates,
    non-ASCII and invalid UTF-8 ids); irregular files decline it."""
    pytest.importorskip("pyarrow")
    from nuggetbench.data import read_trec_qrels as read_qrels

    rng = np.random.default_rng(seed)
    took = []
    original = arrow_trec.read_columns

    def spy(*args, **kw):
        out = original(*args, **kw)
        took.append(out is not None)
        return out

    monkeypatch.setattr(arrow_trec, "read_columns", spy)
    grades = ["0", "1", "2", "-1", "1.0", "2e1", "x", "9223372036854775807", "3"]
    for case in range(80):
        sep = "\t" if rng.random() < 0.3 else " "
        messy = 0.1 if rng.random() < 0.4 else 0.0  # irregular lines in some files only
        lines = ["# judged\n"] if rng.random() < 0.2 else []
        for _ in range(int(rng.integers(1, 60))):
            doc = str(rng.choice(["d1", "d2", "dé", "D-3", "d4", "d5", "d6"]))
            if rng.random() < messy:
                doc = "d\udcff"  # an invalid UTF-8 byte
            fields = [f"{rng.integers(1, 12)}", "0", doc, str(rng.choice(grades[:6]))]
            if rng.random() < messy:
                fields[3] = str(rng.choice(grades[6:]))
            line = sep.join(fields)
            if rng.random() < messy:
                line = str(rng.choice([" ", "  ", "\t "])) + line
            if rng.random() < messy:
                line += str(rng.choice([" ", " extra", ""]))
            lines.append(line + "\n")
            if rng.random() < messy:
                lines.append("\n")
        path = tmp_path / f"q{case}.txt"
        path.write_bytes("".join(lines).encode("utf-8", errors="surrogateescape"))
        results = []
        for min_bytes in (0, 1 << 62):
            monkeypatch.setattr(arrow_trec, "MIN_BYTES", min_bytes)
            try:
                qrels = read_qrels(path)
                results.append([a.tolist() for a in qrels.arrays()])
            except (FormatError, DuplicateError) as exc:
                results.append(f"{type(exc).__name__}: {exc}")
        assert results[0] == results[1], path.read_bytes()
    assert sum(took) > 20 and not all(took)  # both paths were exercised
