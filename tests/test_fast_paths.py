"""The fast (vectorised, by-column, pyarrow) paths give exactly what the per-item Python rules give."""

from __future__ import annotations

import numpy as np
import pytest

from nuggetbench.data import checks
from nuggetbench.data.lookup import index_in, is_in

ALPHABET = list(" \t\n\r\x0b\x0c\x1c\x1f\x85\u00a0+-.0123456789aAbZqQdİß\u0660\u0661é")


def _random_ids(rng: np.random.Generator, n: int) -> np.ndarray:
    pieces = []
    for _ in range(n):
        size = int(rng.integers(0, 8))
        pieces.append("".join(rng.choice(ALPHABET, size)))
    # ids written as numbers in several ways
    numbers = [
        f"{s}{'0' * int(z)}{int(v)}{t}"
        for s, z, v, t in zip(
            rng.choice(["", "+", "-"], n // 2),
            rng.integers(0, 3, n // 2),
            rng.integers(0, 200, n // 2),
            rng.choice(["", ".", ".0", ".00", ".5", " "], n // 2),
        )
    ]
    return np.array(pieces + numbers, dtype=object)


@pytest.mark.parametrize("seed", range(4))
def test_normal_forms_and_spaced_match_python(seed, monkeypatch):
    from nuggetbench.data.checks import ids as checks

    monkeypatch.setattr(checks, "_VECTOR_MIN", 1)
    rng = np.random.default_rng(seed)
    ids = _random_ids(rng, 3000)
    got = checks._normal_forms(ids)
    assert got.tolist() == [checks._normal_form(x) for x in ids]
    assert sorted(checks._spaced(ids)) == sorted(x for x in ids if x != x.strip())


@pytest.mark.parametrize("seed", range(4))
def test_doc_format_pairs_match_python(seed, monkeypatch):
    from nuggetbench.data.checks import ids as checks

    monkeypatch.setattr(checks, "_VECTOR_MIN", 1)
    rng = np.random.default_rng(seed)
    pool = np.unique(_random_ids(rng, 2000))
    judged = np.unique(rng.choice(pool, 600))
    retrieved = np.unique(rng.choice(pool, 900))
    got = checks._doc_format_pairs(judged, retrieved)
    want = checks._format_pairs(judged.tolist(), retrieved.tolist())
    # the partner chosen for a normal form shared by several retrieved ids is arbitrary
    assert [x for x, _ in got] == [x for x, _ in want]
    for x, y in got:
        assert checks._normal_form(x) == checks._normal_form(y) and x != y
        assert y in set(retrieved.tolist()) and x not in set(retrieved.tolist())


@pytest.mark.parametrize("arrow_min", [1, 10**9])
def test_index_in_and_is_in_both_paths(arrow_min, monkeypatch):
    from nuggetbench.data import lookup as _lookup

    monkeypatch.setattr(_lookup, "ARROW_MIN", arrow_min)
    rng = np.random.default_rng(5)
    uniques = np.array([f"d{i}" for i in rng.permutation(500)], dtype=object)
    values = np.array([f"d{i}" for i in rng.integers(0, 800, 2000)], dtype=object)
    pos = index_in(values, uniques)
    lookup = {d: i for i, d in enumerate(uniques.tolist())}
    assert pos.tolist() == [lookup.get(v, -1) for v in values.tolist()]
    for size in (1, 7, 60, 240):  # fewer values than uniques: the table is built on the values
        few = np.array([f"d{i}" for i in rng.integers(0, 800, size)], dtype=object)
        assert index_in(few, uniques).tolist() == [lookup.get(v, -1) for v in few.tolist()]
    keys = rng.integers(0, 10_000, 5000)
    key_set = rng.integers(0, 10_000, 700)
    assert is_in(keys, key_set).tolist() == np.isin(keys, key_set).tolist()
    assert is_in(values, uniques).tolist() == (pos >= 0).tolist()


@pytest.mark.parametrize("seed", range(3))
def test_judged_hits_match_brute_force(seed):
    from nuggetbench.data import Qrels, Run
    from nuggetbench.data.checks import coverage as checks

    rng = np.random.default_rng(seed)
    for _ in range(20):
        run_dict = {
            f"q{i}": {
                f"d{j}": float(rng.integers(0, 5))
                for j in rng.choice(50, rng.integers(0, 20), replace=False)
            }
            for i in range(rng.integers(1, 15))
        }
        qrels_dict = {
            f"q{i}": {
                f"d{j}": int(rng.integers(0, 3))
                for j in rng.choice(60, rng.integers(1, 10), replace=False)
            }
            for i in range(rng.integers(1, 15))
        }
        run_dict = {q: d for q, d in run_dict.items() if d}
        if not run_dict:
            continue
        got = checks._judged_hits(Qrels.from_dict(qrels_dict), Run.from_dict(run_dict))
        shared = set(run_dict) & set(qrels_dict)
        hits = {(q, d) for q in shared for d in run_dict[q] if d in qrels_dict[q]}
        retrieved = {d for docs in run_dict.values() for d in docs}
        judged = {d for docs in qrels_dict.values() for d in docs}
        assert got == {
            "queries": len(shared),
            "queries_with_judged": len({q for q, _ in hits}),
            "entries": sum(len(run_dict[q]) for q in shared),
            "judged_entries": len(hits),
            "retrieved_ids": len(retrieved),
            "retrieved_ids_in_qrels": len(retrieved & judged),
        }


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("padded", [2, 0])
@pytest.mark.parametrize("fixed", [False, True])
@pytest.mark.parametrize("groups", [True, False])
@pytest.mark.parametrize("block", [1 << 18, 7, 1])
def test_rank_disagreements_match_per_query_loop(seed, padded, fixed, groups, block, monkeypatch):
    """Whole, or in blocks of whole queries (a block shorter than one query included)."""
    from nuggetbench.data import Run
    from nuggetbench.data.checks import ranking as checks

    monkeypatch.setattr(checks, "_PADDED_FACTOR", padded)
    monkeypatch.setattr(checks, "_BY_SCORE_GROUPS", groups)
    monkeypatch.setattr(checks, "RANK_CHECK_BLOCK", block)
    rng = np.random.default_rng(seed)
    for _ in range(20):
        run = Run.from_dict(
            {
                f"q{i}": {
                    f"d{j}": float(rng.integers(0, 4))
                    for j in rng.choice(30, rng.integers(1, 12), replace=False)
                }
                for i in range(rng.integers(1, 12))
            }
        )
        qids, starts, _, scores = run.arrays()
        ranks = rng.integers(1, 6, run.n_entries) * int(rng.choice([1, -1, 2**40, 2**60]))
        if fixed:  # every query retrieves the same number of documents: no padding
            depth = int(rng.integers(2, 9))
            run = Run.from_dict(
                {
                    f"q{i}": {f"d{j}": float(rng.integers(0, 4)) for j in range(depth)}
                    for i in range(rng.integers(1, 12))
                }
            )
            qids, starts, _, scores = run.arrays()
            ranks = rng.integers(1, 6, run.n_entries)
        if rng.random() < 0.3:  # ranks that follow the order
            ranks = np.concatenate([np.arange(1, c + 1) for c in np.diff(starts)])
        want = []
        for i, q in enumerate(qids):
            r = ranks[starts[i] : starts[i + 1]]
            by_rank = scores[starts[i] : starts[i + 1]][np.argsort(r, kind="stable")]
            if len(r) > 1 and np.any(np.diff(by_rank) > 0):
                want.append(q)
        assert checks._rank_disagreements(run, ranks) == want


@pytest.mark.parametrize("seed", range(4))
def test_grouped_codes_equal_dictionary_encode(seed):
    pa = pytest.importorskip("pyarrow")
    pc = pytest.importorskip("pyarrow.compute")
    from nuggetbench.data.formats import trec_arrow as _arrow_trec

    rng = np.random.default_rng(seed)
    names = [f"q{i}" for i in rng.permutation(40)]
    # mostly grouped, with some queries coming back later (not contiguous)
    lengths = rng.integers(1, 30, 60)
    values = np.repeat(rng.choice(names, 60), lengths).tolist()
    column = pa.chunked_array([values[:100], values[100:]]).combine_chunks()
    got = _arrow_trec._grouped_codes(column)
    assert got is not None
    encoded = pc.dictionary_encode(column)
    assert got[0].tolist() == encoded.dictionary.to_pylist()
    assert got[1].tolist() == encoded.indices.to_pylist()
    shuffled = pa.array(rng.permutation(values).tolist())
    assert _arrow_trec._grouped_codes(shuffled) is None  # not grouped: the caller hashes all


def test_arrow_run_reader_reads_what_the_line_reader_reads(tmp_path, monkeypatch):
    """The pyarrow path (query ids by adjacent rows) and the regular reader give the same Run."""
    pytest.importorskip("pyarrow")
    from nuggetbench.data import read_trec_run as read_run
    from nuggetbench.data.formats import trec_arrow as _arrow_trec

    rng = np.random.default_rng(3)
    lines = []
    for q in rng.permutation(30):
        for d in rng.choice(200, int(rng.integers(1, 20)), replace=False):
            lines.append(f"q{q} Q0 d{d} 1 {rng.integers(0, 5) / 2} tag\n")
    path = tmp_path / "run.txt"
    path.write_text("".join(lines))
    monkeypatch.setattr(_arrow_trec, "MIN_BYTES", 10**12)
    regular = read_run(path, keep_rank=True)
    monkeypatch.setattr(_arrow_trec, "MIN_BYTES", 1)
    calls = []
    original = _arrow_trec.read_columns
    monkeypatch.setattr(
        _arrow_trec, "read_columns", lambda *a, **k: calls.append(original(*a, **k)) or calls[-1]
    )
    fast = read_run(path, keep_rank=True)
    assert calls and calls[0] is not None  # the pyarrow path read it
    assert fast == regular
    assert fast.input_ranks.tolist() == regular.input_ranks.tolist()


@pytest.mark.parametrize("seed", range(3))
def test_write_run_by_columns_equals_line_by_line(seed, tmp_path):
    from nuggetbench.data import Run, write_run
    from nuggetbench.data.formats.trec import format_score

    rng = np.random.default_rng(seed)
    pool = np.array([0.0, -0.0, 1.0, -3.0, 2.5, 1e15, 1e16, 123456789.0, 1 / 3, -7.25])
    run = Run.from_dict(
        {
            f"q{i}": {
                f"d{j}": float(rng.choice(pool)) if rng.random() < 0.5 else float(rng.normal())
                for j in rng.choice(100, rng.integers(1, 25), replace=False)
            }
            for i in range(rng.integers(1, 20))
        },
        name="my run",
    )
    qids, starts, docids, scores = run.arrays()
    want = "".join(
        f"{q} Q0 {d} {rank} {format_score(s)} my_run\n"
        for i, q in enumerate(qids.tolist())
        for rank, (d, s) in enumerate(
            zip(
                docids[starts[i] : starts[i + 1]].tolist(),
                scores[starts[i] : starts[i + 1]].tolist(),
            ),
            start=1,
        )
    )
    assert write_run(run, tmp_path / "run.trec").read_text() == want


def test_write_run_names_the_first_bad_id(tmp_path):
    from nuggetbench.data import Run, write_run
    from nuggetbench.errors import InputError

    run = Run.from_dict({"q1": {"ok": 2.0, "a b": 1.0}, "q2": {"": 1.0}})
    with pytest.raises(InputError, match="'a b'"):
        write_run(run, tmp_path / "run.trec")
    assert not (tmp_path / "run.trec").exists()


def test_score_texts_equal_format_score():
    from nuggetbench.data.formats.trec import _score_texts, format_score

    rng = np.random.default_rng(0)
    special = [0.0, -0.0, np.nan, np.inf, -np.inf, 1e15, 1e16, -1e15 + 1, 3.0, 1e-300, 5e-324]
    scores = np.concatenate(
        [
            rng.normal(size=20_000) * 10.0 ** rng.integers(-20, 20, 20_000),
            rng.integers(-(10**6), 10**6, 1000).astype(float),
            special,
        ]
    )
    assert _score_texts(scores) == [format_score(x) for x in scores.tolist()]
    assert _score_texts(np.zeros(0)) == []


@pytest.mark.parametrize("seed", range(4))
def test_qrels_sniff_fast_path_answers_as_the_line_loop(seed, tmp_path, monkeypatch):
    """sniff_nugget_qrels with its vectorised common case equals the line-by-line sniff alone,
    on random near-qrels files (blank and comment lines, wrong field counts, JSON, carriage
    returns, odd whitespace, non-ASCII, a second column that varies, short max_lines)."""
    from nuggetbench.data.formats import diversity as diversity_io

    rng = np.random.default_rng(seed)
    pieces = [" ", "\t", "  ", "\x0b", "\x1c", "\r\n", "é", "#", "{", "\n"]
    fast_hits = 0
    for case in range(150):
        lines = []
        for _ in range(int(rng.integers(0, 9))):
            fields = [
                f"q{rng.integers(0, 3)}",
                str(rng.choice(["0", "0", "0", "1", "Q0"])) if rng.random() < 0.5 else "0",
                f"d{rng.integers(0, 4)}",
                str(rng.integers(0, 3)),
            ][: 4 if rng.random() < 0.85 else int(rng.integers(0, 6))]
            line = " ".join(fields)
            if rng.random() < 0.1:
                line = str(rng.choice(pieces)) + line
            if rng.random() < 0.1:
                line = line + str(rng.choice(pieces)) + "x"
            lines.append(line)
        text = "\n".join(lines) + ("\n" if rng.random() < 0.7 else "")
        name = "diversity.qrels" if rng.random() < 0.05 else f"c{case}.txt"
        path = tmp_path / name
        path.write_bytes(text.encode("utf-8"))
        max_lines = int(rng.integers(0, 10))
        got = diversity_io.sniff_nugget_qrels(path, max_lines=max_lines)
        fast_hits += diversity_io._plain_document_qrels(path, max_lines)
        with monkeypatch.context() as m:
            m.setattr(diversity_io, "_plain_document_qrels", lambda *a: False)
            want = diversity_io.sniff_nugget_qrels(path, max_lines=max_lines)
        assert got == want, text
    assert fast_hits > 10  # the fast path was taken often enough to be tested
    # the sniff splits lines and fields as the readers do (data/lines.py): a no-break space or
    # \x1c is inside a field, a lone CR separates fields and never ends a line
    for name, text, expected in [
        ("fs.jsonl", '{"query_id": "q1", "nuggets": []}\n', "freshstack"),
        ("bom.jsonl", '\ufeff{"query_id": "q1", "nuggets": []}\n', "freshstack"),
        ("nbsp.txt", "q0\u00a00 d1 1\nq0 1 d1 1\n", None),
        ("nbsp2.txt", "q\u00a00 0 d1 1\nq\u00a00 1 d1 1\n", "ndeval"),
        ("fs.txt", "q0\x1c0 d1 1\nq0 1 d1 1\n", None),
        ("fs2.txt", "q\x1c0 0 d1 1\nq\x1c0 1 d1 1\n", "ndeval"),
        ("cr.txt", "q0 0 d1 1\rq0 1 d1 1\n", None),
        ("crlf.txt", "q0 0 d1 1\r\nq0 1 d1 1\r\n", "ndeval"),
    ]:
        path = tmp_path / name
        path.write_bytes(text.encode("utf-8"))
        with monkeypatch.context() as m:
            m.setattr(diversity_io, "_plain_document_qrels", lambda *a: False)
            want = diversity_io.sniff_nugget_qrels(path)
        assert want == expected, name
        assert diversity_io.sniff_nugget_qrels(path) == want


@pytest.mark.parametrize("seed", range(4))
def test_qrels_arrow_sort_equals_lexsort(seed, monkeypatch):
    """Qrels order judgments by (query, doc id as string) through pyarrow's stable sort; the
    result (kept duplicates included) equals the numpy lexsort over sorted factor codes."""
    from nuggetbench.data import Qrels
    from nuggetbench.data import lookup as _lookup
    from nuggetbench.data import qrels as qrels_module
    from nuggetbench.errors import DuplicateError

    monkeypatch.setattr(_lookup, "ARROW_MIN", 1)
    rng = np.random.default_rng(seed)
    alphabet = ["a", "B", "é", "z", "0", "\U0010ff81", "ß", " ", "中"]
    for _ in range(60):
        n = int(rng.integers(1, 80))
        q = np.array([f"q{x}" for x in rng.integers(0, 6, n)], dtype=object)
        d = np.array(
            ["".join(rng.choice(alphabet, int(rng.integers(1, 4)))) for _ in range(n)],
            dtype=object,
        )
        r = rng.integers(-1, 3, n)
        for on_duplicate in ("last", "error"):
            got = want = None
            try:
                got = Qrels(q, d, r, on_duplicate=on_duplicate).arrays()
            except DuplicateError as exc:
                got = str(exc)
            with monkeypatch.context() as m:
                m.setattr(qrels_module, "order_by_code_and_id", lambda *a: None)
                try:
                    want = Qrels(q, d, r, on_duplicate=on_duplicate).arrays()
                except DuplicateError as exc:
                    want = str(exc)
            if isinstance(want, str):
                assert got == want
            else:
                for a, b in zip(got, want):
                    assert a.tolist() == b.tolist()
    assert (
        _lookup.order_by_code_and_id(np.array([0, 0]), np.array(["\ud800", "a"], dtype=object))
        is None
    )


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("filtered", [False, True])
def test_id_format_check_over_shared_codes_matches_python(seed, filtered, monkeypatch):
    """check_id_formats over the run's codes (Run.codes_of, shared with the join) finds the same
    doc id pairs as the set rule over every judged and retrieved id, also after filtering (the
    run's uniques then hold ids it no longer retrieves)."""
    from nuggetbench.data import Qrels, Run
    from nuggetbench.data.checks import ids as checks

    monkeypatch.setattr(checks, "_VECTOR_MIN", 1)
    rng = np.random.default_rng(seed)
    pool = np.unique(_random_ids(rng, 1500))
    pool = pool[[x == x.strip() and x != "" for x in pool.tolist()]]
    queries = [f"q{i}" for i in range(12)]
    run = Run(
        rng.choice(queries, 900),
        rng.choice(pool, 900),
        rng.integers(0, 50, 900).astype(float),
        duplicates="first",
    )
    if filtered:
        run = run.filter_entries(rng.random(run.n_entries) < 0.5)
    qrels = Qrels(
        rng.choice(queries, 500),
        rng.choice(pool, 500),
        rng.integers(0, 3, 500),
        on_duplicate="last",
    )
    retrieved = set(run.arrays()[2].tolist())
    judged = set(qrels.arrays()[2].tolist())
    want = checks._format_pairs(judged, retrieved)
    found = [f for f in checks.check_id_formats(qrels, run) if f.kind == "doc_id_format"]
    assert (found[0].counts["pairs"] if found else 0) == len(want)
    missing = checks._missing_judged_docs(qrels, run)
    assert sorted(missing.tolist()) == sorted(judged - retrieved)
    codes = run.codes_of(qrels.arrays()[2])
    assert run.codes_of(qrels.arrays()[2]) is codes  # one look-up, shared
    uniques = run.doc_codes()[0].tolist()
    assert [uniques[c] if c >= 0 else None for c in codes.tolist()] == [
        d if d in set(uniques) else None for d in qrels.arrays()[2].tolist()
    ]


@pytest.mark.parametrize("seed", range(4))
def test_qrels_from_codes_equals_constructor(seed):
    """Qrels built from factorised columns (the arrow reader's) equal the constructor's, kept
    order, duplicates and the duplicate error included."""
    from nuggetbench.data import Qrels
    from nuggetbench.errors import DuplicateError

    rng = np.random.default_rng(seed)
    alphabet = ["a", "B", "é", "z", "0", "ß", "中", "Z1", "a0"]
    for _ in range(80):
        n = int(rng.integers(1, 90))
        q = np.array([f"q{x}" for x in rng.integers(0, 12, n)], dtype=object)
        d = np.array(
            ["".join(rng.choice(alphabet, int(rng.integers(1, 3)))) for _ in range(n)],
            dtype=object,
        )
        r = rng.integers(-1, 3, n) if rng.random() < 0.5 else np.ones(n, dtype=np.int64)
        # uniques in a shuffled order, as a hash table would give them
        qu = np.array(sorted(set(q.tolist()), key=lambda _: rng.random()), dtype=object)
        du = np.array(sorted(set(d.tolist()), key=lambda _: rng.random()), dtype=object)
        qc = np.array([qu.tolist().index(x) for x in q.tolist()])
        dc = np.array([du.tolist().index(x) for x in d.tolist()])
        try:
            want = Qrels(q, d, r, source="f").arrays()
        except DuplicateError as exc:
            want = str(exc)
        try:
            got = Qrels._from_codes(qu, qc, du, dc, r, source="f").arrays()
        except DuplicateError as exc:
            got = str(exc)
        if isinstance(want, str):
            assert got == want
        else:
            for a, b in zip(got, want):
                assert a.tolist() == b.tolist()


def test_arrow_qrels_reader_reads_what_the_line_reader_reads(tmp_path, monkeypatch):
    """A large regular qrels file read by the pyarrow path equals the pandas/line reader's, and
    a bad grade names the same line."""
    pytest.importorskip("pyarrow")
    from nuggetbench.data import read_trec_qrels as read_qrels
    from nuggetbench.data.formats import trec
    from nuggetbench.data.formats import trec_arrow as _arrow_trec
    from nuggetbench.errors import FormatError

    monkeypatch.setattr(_arrow_trec, "MIN_BYTES", 1)
    rng = np.random.default_rng(3)
    lines = [
        f"{rng.integers(0, 40)} 0 D{rng.integers(0, 300)} {rng.choice(['0', '1', '2', '-1', '1.0', '2e0'])}"
        for _ in range(3000)
    ]
    seen, unique_lines = set(), []
    for line in lines:  # one judgment per (query, doc)
        key = (line.split()[0], line.split()[2])
        if key not in seen:
            seen.add(key)
            unique_lines.append(line)
    path = tmp_path / "qrels.txt"
    path.write_text("\n".join(unique_lines) + "\n")
    got = read_qrels(path)
    with monkeypatch.context() as m:
        m.setattr(trec, "_read_qrels_arrow", lambda *a, **k: None)
        want = read_qrels(path)
    assert got == want and got.name == want.name and got.metadata == want.metadata
    bad = tmp_path / "bad.txt"
    bad.write_text("\n".join(unique_lines[:50] + ["1 0 Dx 1.5"] + unique_lines[50:]) + "\n")
    messages = []
    for reader in ("arrow", "careful"):
        with monkeypatch.context() as m:
            if reader == "careful":
                m.setattr(trec, "_read_qrels_arrow", lambda *a, **k: None)
            with pytest.raises(FormatError) as info:
                read_qrels(bad)
            messages.append(str(info.value))
    assert messages[0] == messages[1] and "line 51" in messages[0]


def test_evaluate_path_imports_no_pandas_and_pandas_still_converts(tmp_path):
    """The pyarrow fast paths (large files) of `nuggetbench evaluate` import neither pandas nor
    scipy nor ``pyarrow.compute`` (its kernels are called directly); pyarrow's conversions to and from pandas still work afterwards."""
    pytest.importorskip("pyarrow")
    pytest.importorskip("pandas")
    import subprocess
    import sys
    from pathlib import Path

    rng = np.random.default_rng(0)
    run_lines = [
        f"q{q} Q0 d{d} {r} {s:.3f} tag"
        for q in range(300)
        for r, (d, s) in enumerate(
            zip(rng.choice(5000, 60, replace=False), np.sort(rng.random(60))[::-1])
        )
    ]
    (tmp_path / "run.txt").write_text("\n".join(run_lines) + "\n")
    qrels = {
        (f"q{q}", f"d{d}"): int(g)
        for q, d, g in zip(
            rng.integers(0, 300, 4000), rng.integers(0, 5000, 4000), rng.integers(0, 3, 4000)
        )
    }
    (tmp_path / "qrels.txt").write_text("".join(f"{q} 0 {d} {g}\n" for (q, d), g in qrels.items()))
    script = f"""
import sys
from nuggetbench.data import lookup as _lookup
from nuggetbench.data.formats import trec_arrow as _arrow_trec
_arrow_trec.MIN_BYTES = 1
_lookup.ARROW_MIN = 1
from nuggetbench.cli import main
sys.argv = ["nuggetbench", "evaluate", {str(tmp_path / "qrels.txt")!r}, {str(tmp_path / "run.txt")!r},
            "-m", "nDCG@10", "-m", "AP", "--format", "json"]
try:
    main()
except SystemExit as exc:
    assert not exc.code, exc.code
assert "pyarrow" in sys.modules
assert "pandas" not in sys.modules and "scipy" not in sys.modules, "imported"
assert "pyarrow.compute" not in sys.modules, "pyarrow.compute imported (50-90 ms)"
import pandas as pd, pyarrow as pa
assert pa.table({{"a": [1, 2]}}).to_pandas().shape == (2, 1)
assert pa.Table.from_pandas(pd.DataFrame({{"a": [1.5]}})).num_rows == 1
assert pa.array(pd.Series(["x", None])).null_count == 1
assert pa.array(pd.Categorical(["a", "b", "a"])).type.index_type == pa.int8()
"""
    src = Path(__file__).resolve().parents[1] / "src"
    env = {k: v for k, v in __import__("os").environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(src)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert '"nDCG@10"' in done.stdout


@pytest.mark.parametrize("source", ["file", "pipe"])
def test_arrow_run_reader_names_duplicate_lines_after_dropping_the_bytes(
    source, tmp_path, monkeypatch
):
    """The fast run reader drops the file's bytes before ranking; a duplicate pair is still named
    with both lines (a regular file is read again; a pipe's bytes are kept), as the careful
    reader names it."""
    import os

    from nuggetbench.data.formats import trec
    from nuggetbench.data.formats import trec_arrow as _arrow_trec
    from nuggetbench.data.formats.sniff import read_run as load_run
    from nuggetbench.errors import DuplicateError

    monkeypatch.setattr(_arrow_trec, "MIN_BYTES", 1)
    lines = [f"q{q} Q0 d{d} {d + 1} {100 - d}.5 tag" for q in range(30) for d in range(40)]
    lines.insert(700, "q3 Q0 d7 99 1.25 tag")  # q3/d7 first at line 128
    path = tmp_path / "run.txt"
    path.write_text("\n".join(lines) + "\n")
    messages = []
    for reader in ("arrow", "careful"):
        with monkeypatch.context() as m:
            if reader == "careful":
                m.setattr(trec, "_read_run_arrow", lambda *a, **k: None)
            if source == "file":
                target = path
            else:
                read_end, write_end = os.pipe()
                os.write(write_end, path.read_bytes())
                os.close(write_end)
                target = f"/dev/fd/{read_end}"
            with pytest.raises(DuplicateError) as info:
                load_run(target)
            messages.append(str(info.value).replace(str(target), "RUN"))
    assert messages[0] == messages[1]
    assert "line 701 (first at line 128)" in messages[0]


@pytest.mark.parametrize("seed", range(6))
def test_one_case_lower_forms_proves_distinct_normal_forms(seed, monkeypatch):
    """When the cheap test says no two ids can share a normal form, none do; and it does say so
    for the usual shapes of ids (one case, canonical numbers)."""
    from nuggetbench.data.checks import ids as checks

    monkeypatch.setattr(checks, "_VECTOR_MIN", 1)
    rng = np.random.default_rng(seed)
    for _ in range(40):
        pool = ["D0245237", "d17", "DOC-9", "doc-9", "0", "-0", "12", "-7", "a.b", "Q1", "q1"]
        pool += ["007", "+3", "1.0", " x", "é", "A", "a", "-00", "5."]
        pool += _random_ids(rng, 30).tolist()
        a = np.unique(rng.choice(pool, int(rng.integers(1, 12))))
        b = np.unique(rng.choice(pool, int(rng.integers(1, 12))))
        if checks._one_case_lower_forms(checks._arrow_ascii(a), checks._arrow_ascii(b)):
            union = set(a.tolist()) | set(b.tolist())
            assert len({checks._normal_form(x) for x in union}) == len(union)
    assert checks._one_case_lower_forms(
        checks._arrow_ascii(np.array(["D0245237", "DOC-9", "-0", "12"], dtype=object)),
        checks._arrow_ascii(np.array(["D17", "Q1", "0"], dtype=object)),
    )
    for other in ("d17", "007", "+3", "1.0", " D1", "É1", "1.", "-00"):
        assert not checks._one_case_lower_forms(
            checks._arrow_ascii(np.array(["D0245237", "12"], dtype=object)),
            checks._arrow_ascii(np.array(["D17", other], dtype=object)),
        ), other
    assert checks._one_case_lower_forms(None, checks._arrow_ascii(np.array(["d1"]))) is False


def test_id_format_check_finds_case_pairs_across_sides(monkeypatch):
    """Each side of one case, but not the same case: the pairs are still found."""
    from nuggetbench.data import Qrels, Run
    from nuggetbench.data.checks import ids as checks

    monkeypatch.setattr(checks, "_VECTOR_MIN", 1)
    run = Run(["q1"] * 3, ["D1", "D2", "D3"], [3.0, 2.0, 1.0])
    qrels = Qrels(["q1"] * 3, ["d1", "d2", "D3"], [1, 0, 1])
    found = [f for f in checks.check_id_formats(qrels, run) if f.kind == "doc_id_format"]
    assert found and found[0].counts["pairs"] == 2
    qrels = Qrels(["q1"] * 3, ["D1", "D7", "D8"], [1, 0, 1])
    assert [f for f in checks.check_id_formats(qrels, run) if f.kind == "doc_id_format"] == []


def test_shared_strings_are_the_conversion_of_the_array():
    """share_strings: arrow_strings answers with the shared array for that array only, the array
    becomes read-only, and the entry goes with the array."""
    pa = pytest.importorskip("pyarrow")
    import gc

    from nuggetbench.data import lookup as _lookup

    ids = np.array(["b", "a", "c"], dtype=object)
    strings = pa.array(ids.tolist(), type=pa.string())
    _lookup.share_strings(ids, strings)
    assert _lookup.arrow_strings(ids) is strings
    assert not ids.flags.writeable
    with pytest.raises(ValueError):
        ids[0] = "z"
    copy = ids.copy()
    assert _lookup.arrow_strings(copy) is not strings
    assert _lookup.arrow_strings(copy).equals(strings)
    key = id(ids)
    del ids
    gc.collect()
    assert key not in _lookup._SHARED


def test_fast_readers_share_the_id_columns_they_parsed(tmp_path, monkeypatch):
    """The pyarrow readers hand their doc id columns to the look-ups: equal to converting the
    run's doc uniques and the qrels' doc id column, and the look-ups give the same answers."""
    pa = pytest.importorskip("pyarrow")
    from nuggetbench.data import lookup as _lookup
    from nuggetbench.data import read_trec_qrels as read_qrels
    from nuggetbench.data import read_trec_run as read_run
    from nuggetbench.data.formats import trec_arrow as _arrow_trec

    rng = np.random.default_rng(4)
    run_lines = [
        f"q{q} Q0 d{d} 1 {rng.integers(0, 9)} tag\n"
        for q in range(20)
        for d in rng.choice(300, 15, replace=False)
    ]
    qrels_lines = [
        f"q{q} 0 d{d} {rng.integers(0, 3)}\n" for q in range(25) for d in rng.choice(400, 12, False)
    ]
    (tmp_path / "run.txt").write_text("".join(run_lines))
    (tmp_path / "qrels.txt").write_text("".join(qrels_lines))
    monkeypatch.setattr(_arrow_trec, "MIN_BYTES", 1)
    run = read_run(tmp_path / "run.txt")
    qrels = read_qrels(tmp_path / "qrels.txt")
    uniques = run.doc_codes()[0]
    column = qrels.arrays()[2]
    for values in (uniques, column):
        shared = _lookup.arrow_strings(values)
        assert shared is _lookup._SHARED[id(values)][1]
        assert shared.equals(pa.array(values.tolist(), type=pa.string()))
    lookup = {d: i for i, d in enumerate(uniques.tolist())}
    assert run.codes_of(column).tolist() == [lookup.get(d, -1) for d in column.tolist()]
    monkeypatch.setattr(_arrow_trec, "MIN_BYTES", 10**12)
    assert read_qrels(tmp_path / "qrels.txt") == qrels


@pytest.mark.parametrize("seed", range(3))
def test_qrels_from_codes_sorts_as_the_constructor(seed, monkeypatch):
    """Qrels._from_codes (by a (query rank, doc id) sort in pyarrow, with or without the doc
    strings, or by doc ranks without pyarrow) equals the constructor, repeated pairs included."""
    pa = pytest.importorskip("pyarrow")
    from nuggetbench.data import Qrels
    from nuggetbench.data import lookup as _lookup

    rng = np.random.default_rng(seed)
    qu = np.array([f"q{i}" for i in rng.permutation(9)] + ["Q", "q10", "é"], dtype=object)
    du = np.array(
        [f"d{i}" for i in rng.permutation(60)] + ["D", "d", "", "é", "e\u0301"], dtype=object
    )
    qc = rng.integers(0, len(qu), 400)
    dc = rng.integers(0, len(du), 400)
    grades = rng.integers(0, 3, len(du) * len(qu)).reshape(len(qu), len(du))[qc, dc]
    want = Qrels(qu[qc], du[dc], grades, on_duplicate="last")
    strings = pa.array(du.tolist(), type=pa.string())
    for arrow_min in (1, 10**9):
        monkeypatch.setattr(_lookup, "ARROW_MIN", arrow_min)
        for doc_strings in (None, strings):
            got = Qrels._from_codes(qu, qc, du.copy(), dc, grades, doc_strings=doc_strings)
            assert got == want


@pytest.mark.parametrize("seed", range(4))
def test_short_keys_order_and_equality_are_the_ids(seed):
    """short_keys: equal keys for equal ids, key order = str order; None for long ids or NUL."""
    pa = pytest.importorskip("pyarrow")
    from nuggetbench.data import lookup as _lookup

    rng = np.random.default_rng(seed)
    alphabet = list("aAzZ09-_ .é\u00ff\u4e00") + ["\U0001f600"]
    ids = ["".join(rng.choice(alphabet, int(rng.integers(0, 5)))) for _ in range(400)]
    ids = [i for i in ids if len(i.encode()) <= 8] + ["", "a", "ab", "abcdefgh", "b"]
    arr = pa.array(ids, type=pa.string())
    for strings in (arr, arr.slice(3, 200)):  # an offset into the buffers too
        values = strings.to_pylist()
        keys = _lookup.short_keys(strings)
        assert keys is not None and keys.dtype == np.uint64
        pairs = rng.integers(0, len(values), (2000, 2))
        for i, j in pairs.tolist():
            assert (keys[i] == keys[j]) == (values[i] == values[j])
            assert (keys[i] < keys[j]) == (values[i] < values[j])
        first, codes = _lookup.factorize_keys(keys)
        distinct = [values[f] for f in first.tolist()]
        assert distinct == sorted(set(values))
        assert [distinct[c] for c in codes.tolist()] == values
    assert _lookup.short_keys(pa.array(["abcdefghi", "a"])) is None
    assert _lookup.short_keys(pa.array(["a\x00", "a"])) is None
    assert _lookup.short_keys(pa.array(["a", None])) is None
    assert len(_lookup.short_keys(pa.array([], type=pa.string()))) == 0


def test_index_in_by_short_keys_equals_the_hash_join():
    pa = pytest.importorskip("pyarrow")
    from nuggetbench.data import lookup as _lookup

    rng = np.random.default_rng(9)
    uniques = np.array([f"D{i}" for i in rng.permutation(3000)], dtype=object)
    values = np.array([f"D{i}" for i in rng.integers(0, 4000, 5000)], dtype=object)
    want = _lookup.index_in(values, uniques)
    _lookup.share_strings(uniques, pa.array(uniques.tolist(), type=pa.string()))
    _lookup.share_strings(values, pa.array(values.tolist(), type=pa.string()))
    assert _lookup._shared_keys(values) is not None
    assert _lookup.index_in(values, uniques).tolist() == want.tolist()


@pytest.mark.parametrize("seed", range(4))
def test_sniff_helpers_equal_their_python_spelling(seed, tmp_path):
    """_head_lines is islice over the file's lines; _one_value_every_fourth_field is the set of
    bytes.split()[1::4] (white space of every kind, long and empty texts)."""
    import itertools

    from nuggetbench.data.formats import diversity as diversity_io

    rng = np.random.default_rng(seed)
    pieces = [b" ", b"\t", b"  ", b"\x0b", b"\x0c", b"\r", b"\n", b"\r\n", b"0", b"1", b"a", b"Q0"]
    for case in range(200):
        text = b"".join(rng.choice(pieces, int(rng.integers(0, 40))).tolist())
        if rng.random() < 0.3:
            text = b"".join(f"q{i} 0 d{i} 1\n".encode() for i in range(int(rng.integers(0, 9))))
        want = len(set(text.split()[1::4])) <= 1
        assert diversity_io._one_value_every_fourth_field(text) == want, text
        path = tmp_path / f"t{case}"
        path.write_bytes(text)
        n = int(rng.integers(0, 12))
        with open(path, "rb") as fh:
            assert diversity_io._head_lines(path, n) == b"".join(itertools.islice(fh, n))


def test_strings_of_keys_rebuild_the_ids():
    pa = pytest.importorskip("pyarrow")
    from nuggetbench.data import lookup as _lookup

    ids = ["", "a", "12", "é", "abcdefgh", "\U0001f600x", "a b", "\x7f"]
    keys = _lookup.short_keys(pa.array(ids, type=pa.string()))
    assert _lookup.strings_of_keys(keys).to_pylist() == ids
    bad = np.array([0x61FF000000000000], dtype=np.uint64)  # not UTF-8
    assert _lookup.strings_of_keys(bad) is None


@pytest.mark.parametrize("split_min", [64, 1 << 22])
@pytest.mark.parametrize("sort_max", [1, 1 << 21])
def test_factorize_keys_by_sorting_or_hashing(sort_max, split_min, monkeypatch):
    """Sorted, hashed, and split by value into two threads: the same distinct keys, in order,
    and the same codes (few or many distinct keys, one key, a pivot that is the smallest)."""
    pytest.importorskip("pyarrow")
    from nuggetbench.data import lookup as _lookup

    monkeypatch.setattr(_lookup, "SORT_MAX", sort_max)
    monkeypatch.setattr(_lookup, "SPLIT_MIN", split_min)
    monkeypatch.setattr(_lookup, "usable_cpus", lambda: 2)
    rng = np.random.default_rng(2)
    cases = [
        rng.integers(0, 50, 3000).astype(np.uint64) * np.uint64(2**57),
        rng.integers(0, 2**64, 5000, dtype=np.uint64),
        np.full(500, 7, dtype=np.uint64),
        np.concatenate([np.zeros(4000, np.uint64), np.arange(1, 30, dtype=np.uint64)]),
    ]
    for keys in cases:
        first, codes = _lookup.factorize_keys(keys)
        assert first.dtype == codes.dtype == np.int64
        assert keys[first].tolist() == sorted(set(keys.tolist()))
        assert np.array_equal(keys[first][codes], keys)


@pytest.mark.parametrize("seed", range(3))
def test_short_keys_equal_the_big_endian_bytes(seed):
    """short_keys reads each id's bytes in place (the last ids from a padded copy of the tail):
    the key is the zero-padded UTF-8 bytes as a big-endian number, whatever the lengths near the
    end of the data and the array's offset."""
    pa = pytest.importorskip("pyarrow")
    from nuggetbench.data import lookup as _lookup

    rng = np.random.default_rng(seed)
    alphabet = list("ab0é") + ["\u4e2d", "\U0001f600"]
    for _ in range(300):
        longest = int(rng.choice([1, 2, 3, 8]))
        ids = []
        for _ in range(int(rng.integers(1, 30))):
            text = "".join(rng.choice(alphabet, int(rng.integers(0, longest + 1))))
            while len(text.encode()) > 8:
                text = text[:-1]
            ids.append(text)
        strings = pa.array(ids, type=pa.string())
        start = int(rng.integers(0, len(ids)))
        strings = strings.slice(start, int(rng.integers(1, len(ids) - start + 1)))
        want = [int.from_bytes(t.encode().ljust(8, b"\0"), "big") for t in strings.to_pylist()]
        keys = _lookup.short_keys(strings)
        assert keys is not None and keys.dtype == np.uint64
        assert keys.tolist() == want


def test_writing_a_run_imports_no_pandas(tmp_path):
    """The columnar TREC writer (`write_run`, the run cache) goes through pyarrow without its
    pandas probe (0.5 s here): a run built from codes, as BM25's search builds it, is written
    without importing pandas (the bytes are checked against the line writer in
    tests/test_trec_write_columns.py)."""
    pytest.importorskip("pyarrow")
    pytest.importorskip("pandas")
    import subprocess
    import sys
    from pathlib import Path

    script = f"""
import sys
import numpy as np
from nuggetbench.data import Run, write_run
from nuggetbench.data.formats import trec_write as _trec_write
_trec_write.MIN_ENTRIES = 1
rng = np.random.default_rng(1)
queries = np.array([f"q{{i}}" for i in range(40)], dtype=object)
docs = np.array([f"d{{i}}" for i in range(500)], dtype=object)
run = Run._from_codes(queries, np.repeat(np.arange(40), 50), docs,
                      np.tile(np.arange(50), 40), rng.random(2000))
assert "pandas" not in sys.modules, "pandas imported before writing"
write_run(run, {str(tmp_path / "out.trec")!r})
assert "pyarrow" in sys.modules, "the columnar writer was not used"
assert "pandas" not in sys.modules, "pandas imported"
assert len(open({str(tmp_path / "out.trec")!r}).read().splitlines()) == 2000
"""
    src = Path(__file__).resolve().parents[1] / "src"
    env = {k: v for k, v in __import__("os").environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(src)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.mark.parametrize("seed", range(4))
def test_judged_overlap_prefix_is_a_lower_bound_and_changes_no_finding(seed, monkeypatch):
    """_judged_hits over a prefix of the run's queries counts at most the whole; the check gives
    the same findings with or without the prefix pass (runs with many, some or no hits)."""
    from nuggetbench.data import Qrels, Run
    from nuggetbench.data.checks import coverage as checks

    rng = np.random.default_rng(seed)
    for share in (0.0, 0.02, 0.08, 0.15, 0.6, 1.0):
        queries = [f"q{i}" for i in range(300)]
        hit_queries = set(rng.choice(queries, int(share * len(queries)), replace=False).tolist())
        run_q, run_d, qrels_q, qrels_d = [], [], [], []
        for q in queries:
            docs = rng.choice(5000, 8, replace=False)
            run_q += [q] * 8
            run_d += [f"d{d}" for d in docs]
            judged = [f"d{docs[0]}"] if q in hit_queries else []
            judged += [f"d{d}" for d in rng.choice(5000, 3) + 5000]  # never retrieved
            qrels_q += [q] * len(judged)
            qrels_d += judged
        run = Run(run_q, run_d, rng.random(len(run_q)))
        qrels = Qrels(qrels_q, qrels_d, rng.integers(0, 3, len(qrels_q)), on_duplicate="last")
        whole = checks._judged_hits(qrels, run)
        for rows in (0, 1, 150, 300):
            part = checks._judged_hits(qrels, run, rows=rows)
            assert part["queries_with_judged"] <= whole["queries_with_judged"]
            assert part["judged_entries"] <= whole["judged_entries"]
            assert {k: v for k, v in part.items() if "judged" not in k or k == "retrieved_ids"} == {
                k: v for k, v in whole.items() if "judged" not in k or k == "retrieved_ids"
            }
        assert checks._judged_hits(qrels, run, rows=300) == whole
        with_prefix = checks.check_judged_overlap(qrels, run)
        with monkeypatch.context() as m:
            m.setattr(checks, "_PREFIX_MIN", 10**9)
            assert checks.check_judged_overlap(qrels, run) == with_prefix
        assert bool(with_prefix) == (whole["queries_with_judged"] < 0.1 * whole["queries"])


def test_fast_reader_drops_the_bytes_once_they_parse(tmp_path, monkeypatch):
    """read_columns empties a box once the file is known to parse, and leaves it whole when it
    declines (the careful reader then needs the bytes)."""
    from nuggetbench.data.formats import trec_arrow as _arrow_trec

    monkeypatch.setattr(_arrow_trec, "MIN_BYTES", 1)
    good = b"".join(f"q{q} Q0 d{d} 1 {d}.5 t\n".encode() for q in range(5) for d in range(9))
    box = [good]
    cols = _arrow_trec.read_columns(box, 6, {0: "grouped_ids", 2: "ids", 4: "float"})
    assert cols is not None and box == []
    assert cols[4].tolist() == [d + 0.5 for _ in range(5) for d in range(9)]
    bad = good.replace(b"q3 Q0 d4 1", b"q3 Q0  d4 1")  # a double space: declined
    box = [bad]
    assert _arrow_trec.read_columns(box, 6, {0: "grouped_ids", 2: "ids", 4: "float"}) is None
    assert box == [bad]
    assert _arrow_trec.read_columns(good, 6, {2: "ids"}) is not None  # plain bytes still work


@pytest.mark.parametrize("comment", [False, True])
def test_fast_run_reader_names_the_line_of_a_non_finite_score(tmp_path, monkeypatch, comment):
    """The bytes are dropped after parsing: the error reads the file again for the line."""
    from nuggetbench.data import read_trec_run as read_run
    from nuggetbench.data.formats import trec_arrow as _arrow_trec
    from nuggetbench.errors import FormatError

    monkeypatch.setattr(_arrow_trec, "MIN_BYTES", 1)
    calls = []
    original = _arrow_trec.read_columns
    monkeypatch.setattr(
        _arrow_trec, "read_columns", lambda *a, **k: calls.append(original(*a, **k)) or calls[-1]
    )
    lines = [f"q{q} Q0 d{d} {d + 1} {50 - d}.5 t\n" for q in range(4) for d in range(10)]
    lines[23] = "q2 Q0 d3 4 inf t\n"
    if comment:
        lines.insert(5, "# a comment line\n")
    path = tmp_path / "run.txt"
    path.write_text("".join(lines))
    with pytest.raises(FormatError, match="not finite") as info:
        read_run(path)
    assert calls and calls[0] is not None  # the fast path parsed it
    assert str(info.value) == f"{path}, line {24 + comment}: score is not finite: inf"


def test_trim_heap_returns_free_pages_on_glibc():
    import platform

    from nuggetbench import _runtime as _memory

    _memory.trim_heap()
    _memory.trim_heap()
    if platform.system() == "Linux" and platform.libc_ver()[0] == "glibc":
        assert _memory._trim is not None


def test_fast_run_reader_names_the_line_of_a_non_finite_score_in_a_pipe(tmp_path, monkeypatch):
    """A pipe cannot be read again: the error takes the line from the bytes the reader kept."""
    import os

    from nuggetbench.data import read_trec_run as read_run
    from nuggetbench.data.formats import trec_arrow as _arrow_trec
    from nuggetbench.errors import FormatError

    monkeypatch.setattr(_arrow_trec, "MIN_BYTES", 1)
    lines = [f"q{q} Q0 d{d} {d + 1} {50 - d}.5 t\n" for q in range(4) for d in range(10)]
    lines[31] = "q3 Q0 d1 2 -inf t\n"
    read_end, write_end = os.pipe()
    os.write(write_end, "".join(lines).encode())
    os.close(write_end)
    target = f"/dev/fd/{read_end}"
    try:
        with pytest.raises(FormatError) as info:
            read_run(target)
    finally:
        os.close(read_end)
    assert str(info.value) == f"{target}, line 32: score is not finite: -inf"


@pytest.mark.parametrize("seed", range(3))
def test_factorised_qrels_behave_as_column_qrels(seed, tmp_path, monkeypatch):
    """Qrels read by the fast reader keep the doc id column factorised (``doc_codes``); every
    public operation, the trap checks and the measures give what the same judgments built from
    columns give (ids differing only by case or zeros, documents never retrieved, judged ids
    shared by queries, a query filter)."""
    pytest.importorskip("pyarrow")
    from nuggetbench.data import Qrels, Run
    from nuggetbench.data import read_trec_qrels as read_qrels
    from nuggetbench.data import read_trec_run as read_run
    from nuggetbench.data.formats import trec_arrow as _arrow_trec
    from nuggetbench.measures import score as evaluate

    monkeypatch.setattr(_arrow_trec, "MIN_BYTES", 1)
    rng = np.random.default_rng(seed)
    docs = [f"d{i}" for i in range(60)] + ["D7", "d007", "x1"]
    pairs = {}
    for _ in range(400):
        pairs[(f"q{rng.integers(0, 25)}", str(rng.choice(docs)))] = int(rng.integers(-1, 4))
    qpath = tmp_path / "qrels.txt"
    qpath.write_text("".join(f"{q} 0 {d} {g}\n" for (q, d), g in pairs.items()))
    rpath = tmp_path / "run.txt"
    rpath.write_text(
        "".join(
            f"q{q} Q0 {d} 1 {float(rng.integers(0, 9))} t\n"
            for q in range(28)
            for d in rng.choice(docs[:50] + ["d007"], 12, replace=False)
        )
    )
    fast = read_qrels(qpath)
    assert fast.doc_codes() is not None
    q, d, g = zip(*[(q, d, g) for (q, d), g in pairs.items()])
    plain = Qrels(list(q), list(d), list(g), name="qrels.txt")
    assert plain.doc_codes() is None
    uniques, codes = fast.doc_codes()
    assert fast.n_judgments == plain.n_judgments
    run = read_run(rpath)
    for label in ("checks", "measures"):
        if label == "checks":
            got = [(f.code, f.message) for f in checks.check_findings(fast, run)]
            want = [(f.code, f.message) for f in checks.check_findings(plain, run)]
        else:
            measures = ["nDCG@10", "AP", "R@5", "P@5", "RR", "bpref", "infAP", "num_rel_ret"]
            got = evaluate(fast, run, measures).to_dict()
            want = evaluate(plain, Run(*_columns(run), name="t"), measures).to_dict()
        assert got == want
    assert uniques[codes].tolist() == fast.arrays()[2].tolist()
    for a, b in zip(fast.arrays(), plain.arrays()):
        assert a.tolist() == b.tolist()
    assert fast == plain and fast.fingerprint() == plain.fingerprint()
    assert fast.to_dict() == plain.to_dict() and fast["q3"] == plain["q3"]
    wanted = [f"q{i}" for i in range(0, 25, 3)]
    kept = read_qrels(qpath).filter_queries(wanted)
    assert kept.doc_codes() is not None
    assert kept == plain.filter_queries(wanted)
    got = [(f.code, f.message) for f in checks.check_findings(kept, run)]
    want = [(f.code, f.message) for f in checks.check_findings(plain.filter_queries(wanted), run)]
    assert got == want


def _columns(run):
    qids, starts, docids, scores = run.arrays()
    return np.repeat(qids, np.diff(starts)), docids, scores


def test_compute_stand_in_answers_as_pyarrow_compute():
    """``_pyarrow.compute`` (kernels called without importing ``pyarrow.compute``) gives what
    ``pyarrow.compute`` gives, options and fallbacks included."""
    pa = pytest.importorskip("pyarrow")
    import pyarrow.compute as real

    from nuggetbench.data.arrow import compute as pc

    ids = pa.array(["b", " a", "B", "b", "a1 ", "é"])
    mask = pa.array([True, False, True, False, True, True])
    nums = pa.array([3, None, 1])
    pairs = [
        (pc.take(ids, np.array([2, 0])), real.take(ids, pa.array([2, 0]))),
        (pc.dictionary_encode(ids), real.dictionary_encode(ids)),
        (pc.filter(ids, mask), real.filter(ids, mask)),
        (pc.ascii_trim(ids, characters=" "), real.ascii_trim(ids, characters=" ")),
        (pc.ascii_lower(ids), real.ascii_lower(ids)),
        (pc.string_is_ascii(ids), real.string_is_ascii(ids)),
        (
            pc.index_in(ids, value_set=pa.array(["b", "é"])),
            real.index_in(ids, value_set=pa.array(["b", "é"])),
        ),
        (pc.is_in(ids, value_set=pa.array(["a1 "])), real.is_in(ids, value_set=pa.array(["a1 "]))),
        (pc.fill_null(nums, -1), nums.fill_null(-1)),
        (pc.min(nums), real.min(nums)),
        (pc.all(mask), real.all(mask)),
        (pc.or_(mask, pc.invert(mask)), real.or_(mask, real.invert(mask))),
        (pc.not_equal(ids, ids), real.not_equal(ids, ids)),
        (
            pc.cast(pa.array([b"x", b"yz"]), pa.string()),
            real.cast(pa.array([b"x", b"yz"]), pa.string()),
        ),
        # a positional option (not an array) goes through pyarrow.compute's wrapper
        (pc.match_substring_regex(ids, "^[ab]"), real.match_substring_regex(ids, "^[ab]")),
    ]
    for got, want in pairs:
        assert got.equals(want)
    with pytest.raises(pa.ArrowInvalid):  # a safe cast checks UTF-8
        pc.cast(pa.array([b"\xff"]), pa.string())


@pytest.mark.parametrize(
    "line",
    [
        b"q1 Q0 d9 3 0.5",  # a field short
        b"q1 Q0 d9 3 0.5 t x",  # a field more
        b"q1  Q0 d9 3 0.5 t",  # a double delimiter
        b" q1 Q0 d9 3 0.5 t",  # a leading one
        b"q1 Q0 d9 3 0.5 t ",  # a trailing one
        b"q1 Q0 d9 3 0.5 t\rq1 Q0 d8 4 0.25 t",  # a carriage return inside a line
        b"q1 Q0  3 0.5 t",  # an empty id field
    ],
)
def test_arrow_reader_declines_irregular_lines(line):
    """Any line that is not exactly six single-space-separated fields makes the pyarrow reader
    decline (the careful reader then explains or reads it as trec_eval does)."""
    pytest.importorskip("pyarrow")
    from nuggetbench.data.formats import trec_arrow as _arrow_trec

    good = b"".join(b"q%d Q0 d%d 1 %d.5 t\n" % (i % 7, i, i) for i in range(200))
    wanted = {0: "grouped_ids", 2: "ids", 4: "float"}
    assert _arrow_trec.read_columns([good * 400], 6, wanted) is not None
    data = good * 200 + line + b"\n" + good * 200
    assert len(data) >= _arrow_trec.MIN_BYTES
    assert _arrow_trec.read_columns([data], 6, wanted) is None


def test_fast_reader_ids_stay_in_pyarrow_through_an_evaluation(tmp_path, monkeypatch):
    """The fast readers keep the distinct doc ids as a pyarrow array: reading, the trap checks
    and the measures build no ``str`` per id; asking for them (``doc_codes``, ``arrays``)
    converts once, to the ids the careful reader reads."""
    pa = pytest.importorskip("pyarrow")
    from nuggetbench.data import read_trec_qrels as read_qrels
    from nuggetbench.data import read_trec_run as read_run
    from nuggetbench.data.formats import trec
    from nuggetbench.data.formats import trec_arrow as _arrow_trec
    from nuggetbench.evaluation import evaluate_dataset

    monkeypatch.setattr(_arrow_trec, "MIN_BYTES", 1)
    rng = np.random.default_rng(11)
    docs = [f"d{i}" for i in range(300)] + ["D7", "d007", "x", "é1"]
    run_lines = [
        f"q{q} Q0 {d} {r + 1} {float(rng.integers(0, 20))} t"
        for q in range(40)
        for r, d in enumerate(rng.choice(docs, 30, replace=False))
    ]
    (tmp_path / "run.txt").write_text("\n".join(run_lines) + "\n")
    judged = {
        (f"q{rng.integers(0, 45)}", str(rng.choice(docs))): int(rng.integers(0, 3))
        for _ in range(500)
    }
    (tmp_path / "qrels.txt").write_text("".join(f"{q} 0 {d} {g}\n" for (q, d), g in judged.items()))
    ev = evaluate_dataset(tmp_path / "qrels.txt", tmp_path / "run.txt", ["nDCG@10", "AP", "P@5"])
    assert isinstance(ev.run._doc_uniques, pa.Array)
    assert isinstance(ev.target.qrels._doc_uniques, pa.Array)
    with monkeypatch.context() as m:
        m.setattr(trec, "_read_run_arrow", lambda *a, **k: None)
        m.setattr(trec, "_read_qrels_arrow", lambda *a, **k: None)
        careful = evaluate_dataset(
            tmp_path / "qrels.txt", tmp_path / "run.txt", ["nDCG@10", "AP", "P@5"]
        )
    assert ev.results.to_dict()["per_query"] == careful.results.to_dict()["per_query"]
    assert [f.message for f in ev.findings] == [f.message for f in careful.findings]
    run = read_run(tmp_path / "run.txt", keep_rank=True)
    uniques, codes = run.doc_codes()
    assert uniques.dtype == object and all(isinstance(x, str) for x in uniques.tolist())
    assert uniques[codes].tolist() == careful.run.arrays()[2].tolist()
    assert read_qrels(tmp_path / "qrels.txt") == careful.target.qrels


@pytest.mark.parametrize("seed", range(3))
def test_index_in_takes_pyarrow_ids(seed):
    """``index_in`` with either side a pyarrow string array answers as with object arrays
    (short ids by integer keys, long or non-ASCII ones by pyarrow's hash look-up)."""
    pa = pytest.importorskip("pyarrow")
    from nuggetbench.data.lookup import index_in

    rng = np.random.default_rng(seed)
    pool = [f"d{i}" for i in range(50)] + ["a-much-longer-id-1", "é", "中文", "d1 ", ""]
    uniques = np.array(
        sorted(set(rng.choice(pool, 30).tolist()), key=lambda _: rng.random()), dtype=object
    )
    values = np.array(rng.choice(pool, 200).tolist(), dtype=object)
    want = index_in(values, uniques)
    assert (want >= 0).any() and (want < 0).any()
    for v in (values, pa.array(values.tolist())):
        for u in (uniques, pa.array(uniques.tolist())):
            assert index_in(v, u).tolist() == want.tolist()


def test_duplicate_warning_names_the_document_from_pyarrow_ids(tmp_path, monkeypatch, caplog):
    """``duplicates='first'`` on the fast reader's pyarrow ids warns with the document id as
    text, as the careful reader does."""
    pytest.importorskip("pyarrow")
    from nuggetbench.data import read_trec_run as read_run
    from nuggetbench.data.formats import trec
    from nuggetbench.data.formats import trec_arrow as _arrow_trec

    monkeypatch.setattr(_arrow_trec, "MIN_BYTES", 1)
    lines = [f"q{q} Q0 d{d} {d + 1} {100 - d}.5 t" for q in range(20) for d in range(30)]
    lines.insert(40, "q1 Q0 d3 99 1.25 t")
    path = tmp_path / "run.txt"
    path.write_text("\n".join(lines) + "\n")
    messages = []
    for reader in ("arrow", "careful"):
        caplog.clear()
        with monkeypatch.context() as m:
            if reader == "careful":
                m.setattr(trec, "_read_run_arrow", lambda *a, **k: None)
            read_run(path, duplicates="first")
        messages.append(
            [r.getMessage() for r in caplog.records if "lists document" in r.getMessage()]
        )
    assert messages[0] == messages[1] and "'d3'" in messages[0][0]


@pytest.mark.parametrize("ending", [b"\r\n", b"\n"])
def test_crlf_and_lone_cr_files_read_as_the_careful_reader_reads_them(
    ending, tmp_path, monkeypatch
):
    """Run and qrels files with CRLF line ends take the fast path and equal the careful reader's;
    a carriage return inside a line is left to the careful reader (the fast path declines it
    once, in ``read_columns``)."""
    pytest.importorskip("pyarrow")
    from nuggetbench.data import read_trec_qrels as read_qrels
    from nuggetbench.data import read_trec_run as read_run
    from nuggetbench.data.formats import trec
    from nuggetbench.data.formats import trec_arrow as _arrow_trec

    monkeypatch.setattr(_arrow_trec, "MIN_BYTES", 1)
    run = b"".join(b"q%d Q0 d%d 1 %d.5 t" % (i % 9, i, i % 13) + ending for i in range(400))
    qrels = b"".join(b"q%d 0 d%d %d" % (i % 9, i, i % 3) + ending for i in range(0, 400, 3))
    lone = run.replace(b"d7 1", b"d7\r1", 1)
    calls = []
    original = _arrow_trec.read_columns
    monkeypatch.setattr(
        _arrow_trec, "read_columns", lambda *a, **k: calls.append(1) or original(*a, **k)
    )
    for name, data, reader in (
        ("run.txt", run, read_run),
        ("qrels.txt", qrels, read_qrels),
        ("lone.txt", lone, read_run),
    ):
        path = tmp_path / name
        path.write_bytes(data)
        calls.clear()
        try:
            fast = reader(path)
        except Exception as exc:  # the careful reader's error, compared below
            fast = repr(exc)
        assert calls == [1]
        with monkeypatch.context() as m:
            m.setattr(trec, "_read_run_arrow", lambda *a, **k: None)
            m.setattr(trec, "_read_qrels_arrow", lambda *a, **k: None)
            try:
                careful = reader(path)
            except Exception as exc:
                careful = repr(exc)
        assert fast == careful


def test_search_in_order_or_not_equals_searchsorted():
    """_lookup._search: values searched as given, sorted first, or (already in order) as given;
    always numpy's searchsorted clipped to the last position."""
    from nuggetbench.data.lookup import _search

    rng = np.random.default_rng(0)
    for trial in range(120):
        ordered = np.unique(rng.integers(0, 10**6, int(rng.integers(1, 20000))).astype(np.uint64))
        values = rng.integers(0, 10**6, int(rng.integers(0, 30000))).astype(np.uint64)
        if trial % 2:
            values = np.sort(values)
        want = np.minimum(np.searchsorted(ordered, values), len(ordered) - 1)
        assert np.array_equal(_search(ordered, values), want)


@pytest.mark.parametrize("seed", range(6))
def test_duplicate_check_by_blocks_equals_a_set(seed):
    """The fixed-depth shortcut of the (query, doc) repeat check answers as a set of pairs; a
    run it cannot decide (queries split into blocks, uneven depths) goes to the full check, which
    names the same pair as the run's constructor."""
    from nuggetbench.data import Run
    from nuggetbench.data.columns import _distinct_in_blocks
    from nuggetbench.errors import DuplicateError

    rng = np.random.default_rng(seed)
    for _ in range(40):
        n_q, depth = int(rng.integers(1, 6)), int(rng.integers(1, 7))
        q = np.repeat(rng.permutation(n_q), depth)
        d = np.concatenate([rng.choice(20, depth, replace=False) for _ in range(n_q)])
        if rng.random() < 0.4:  # a repeated document in one query
            i = int(rng.integers(0, len(d)))
            j = (i // depth) * depth + int(rng.integers(0, depth))
            d[j] = d[i]
        if rng.random() < 0.2:  # a query split into two blocks
            q = np.concatenate([q, q[:depth]])
            d = np.concatenate([d, rng.choice(np.arange(20, 40), depth, replace=False)])
        distinct = len(set(zip(q.tolist(), d.tolist()))) == len(q)
        assert not _distinct_in_blocks(q, d) or distinct
        if len(q) >= 2 and len(q) == n_q * depth and depth >= 2:
            assert _distinct_in_blocks(q, d) == distinct
        qids = np.array([f"q{x}" for x in q], dtype=object)
        dids = np.array([f"d{x}" for x in d], dtype=object)
        if distinct:
            Run(qids, dids, rng.random(len(q)))
        else:
            with pytest.raises(DuplicateError, match="more than once"):
                Run(qids, dids, rng.random(len(q)))
