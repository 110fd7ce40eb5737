"""Property-based tests of every reader and writer (issue 13, "Beyond the list").

For each format: a file generated from random entries (ids with any non-whitespace bytes, invalid
UTF-8 included; BOMs; LF or CRLF; runs of spaces and tabs; blank and comment lines; gzip) reads
back as exactly those entries; our writer followed by our reader is the identity; and random or
damaged bytes either parse or raise a :class:`~nuggetbench.errors.NuggetbenchError` naming the
file, never another exception.

Examples per test: ``EXAMPLES`` (the report quotes the counts from
``pytest --hypothesis-show-statistics``). Runs are deterministic (``derandomize``) and keep no
example database.
"""

from __future__ import annotations

import gzip
import json
import pickle
import tempfile
from pathlib import Path

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, event, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from nuggetbench.data import JsonlCorpus, Qrels, Queries, Run, write_qrels, write_run  # noqa: E402
from nuggetbench.data import read_document_qrels as load_qrels  # noqa: E402
from nuggetbench.data import read_run as load_run  # noqa: E402
from nuggetbench.data import read_trec_qrels as read_qrels  # noqa: E402
from nuggetbench.data import read_trec_run as read_run  # noqa: E402
from nuggetbench.data.formats.beir import (  # noqa: E402
    read_beir_qrels,
    read_json_qrels,
    read_json_run,
    read_queries_jsonl,
    write_beir_qrels,
    write_json_qrels,
    write_json_run,
    write_queries_jsonl,
)
from nuggetbench.data.formats.diversity import read_ndeval_qrels  # noqa: E402
from nuggetbench.data.formats.freshstack import (  # noqa: E402
    read_freshstack_queries,
    write_freshstack_queries,
)
from nuggetbench.data.formats.rankfile import read_rank_file  # noqa: E402
from nuggetbench.data.formats.safepickle import load_builtin  # noqa: E402
from nuggetbench.data.source import decode_id_text  # noqa: E402
from nuggetbench.errors import FormatError, NuggetbenchError  # noqa: E402

EXAMPLES = 150
FUZZ_EXAMPLES = 200
PROPS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
FUZZ = settings(PROPS, max_examples=FUZZ_EXAMPLES)

# -- strategies --------------------------------------------------------------------------------------

_WS = b" \t\r\n\x0b\x0c"
#: id bytes: anything but ASCII white space and NUL (trec_eval's sscanf splits on isspace)
_ID_BYTE = st.one_of(
    st.integers(1, 255).filter(lambda b: bytes([b]) not in _WS),
    st.sampled_from([0x1C, 0x85, 0xA0, 0xE9]),  # white space to Python, not to trec_eval
)
id_bytes = st.lists(_ID_BYTE, min_size=1, max_size=6).map(bytes).filter(lambda b: b[:1] != b"#")
#: readable ids for the JSON and JSONL formats (any Unicode but surrogates and white space)
id_text = st.text(
    st.characters(blacklist_categories=("Cs", "Zs", "Zl", "Zp", "Cc")), min_size=1, max_size=6
)
scores = st.one_of(
    st.sampled_from([0.0, 1.0, -1.0, 0.5, 2.0]),  # ties
    st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False),
    st.integers(-1000, 1000).map(float),
)
grades = st.one_of(st.integers(-3, 4), st.sampled_from([2**31, 2**53 + 1, 2**63 - 1, -(2**63)]))
separators = st.sampled_from([b" ", b"\t", b"  ", b" \t ", b"\t\t"])
line_end = st.sampled_from([b"\n", b"\r\n"])


def _score_text(draw, value: float) -> bytes:
    style = draw(st.sampled_from(["repr", "fixed", "exp"]))
    if style == "repr":
        return repr(value).encode()
    if style == "fixed":
        text = f"{value:.6f}"
        return text.encode()
    return f"{value:e}".encode()


@st.composite
def entries(draw, value_strategy, *, min_size=0, max_size=25):
    """Unique (query, doc) pairs of byte ids with a value."""
    pairs = draw(
        st.lists(
            st.tuples(id_bytes, id_bytes, value_strategy),
            min_size=min_size,
            max_size=max_size,
            unique_by=lambda t: (t[0], t[1]),
        )
    )
    return pairs


@st.composite
def trec_file(draw, kind: str):
    """``(file bytes, expected {qid: {doc: value}})`` for a TREC run or qrels file."""
    pairs = draw(entries(scores if kind == "run" else grades))
    sep = draw(separators)
    end = draw(line_end)
    lines: list[bytes] = []
    expected: dict[str, dict[str, float | int]] = {}
    for rank, (q, d, v) in enumerate(pairs, start=1):
        if kind == "run":
            value_text = _score_text(draw, v)
            value = float(value_text)
            fields = [q, b"Q0", d, str(rank).encode(), value_text, b"tag"]
        else:
            value = v
            fields = [q, b"0", d, str(v).encode()]
        lead = draw(st.sampled_from([b"", b" ", b"\t"]))
        trail = draw(st.sampled_from([b"", b" ", b"\t"]))
        lines.append(lead + sep.join(fields) + trail + end)
        if draw(st.integers(0, 9)) == 0:
            lines.append(draw(st.sampled_from([b"\n", b"   \n", b"# a comment\n", b"\r\n"])))
        expected.setdefault(decode_id_text(q), {})[decode_id_text(d)] = value
    data = b"".join(lines)
    if draw(st.booleans()):
        data = b"\xef\xbb\xbf" + data
    return data, expected


def _write(folder: Path, name: str, data: bytes, *, gz: bool = False) -> Path:
    path = folder / (name + (".gz" if gz else ""))
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


def _assert_ours(exc: BaseException, path: Path) -> None:
    assert isinstance(exc, NuggetbenchError), f"{type(exc).__name__}: {exc}"
    assert str(path) in str(exc) or path.name in str(exc), str(exc)


def _parses_or_our_error(reader, path: Path) -> None:
    name = getattr(reader, "__name__", "reader")
    try:
        reader(path)
    except Exception as exc:  # noqa: BLE001 - the property is about which class escapes
        _assert_ours(exc, path)
        event(f"{name}: {type(exc).__name__}")
    else:
        event(f"{name}: parsed")


# -- TREC runs and qrels ------------------------------------------------------------------------------


@PROPS
@given(trec_file("run"), st.booleans())
def test_trec_run_reads_what_was_written(case, gz):
    data, expected = case
    with tempfile.TemporaryDirectory() as tmp:
        path = _write(Path(tmp), "run.txt", data, gz=gz)
        for reader in (read_run, load_run):
            assert reader(path).to_dict() == expected


@PROPS
@given(trec_file("qrels"), st.booleans())
def test_trec_qrels_reads_what_was_written(case, gz):
    data, expected = case
    with tempfile.TemporaryDirectory() as tmp:
        path = _write(Path(tmp), "qrels.txt", data, gz=gz)
        assert read_qrels(path).to_dict() == expected
        if not data.lstrip(b"\xef\xbb\xbf").lstrip().startswith(b"{"):
            assert load_qrels(path).to_dict() == expected


@PROPS
@given(entries(scores, min_size=1), st.sampled_from(["run.txt", "run.txt.gz"]))
def test_trec_run_write_then_read_is_identity(pairs, name):
    run = Run(
        [decode_id_text(q) for q, _, _ in pairs],
        [decode_id_text(d) for _, d, _ in pairs],
        [s for _, _, s in pairs],
    )
    with tempfile.TemporaryDirectory() as tmp:
        back = read_run(write_run(run, Path(tmp) / name))
    assert back.to_dict() == run.to_dict()
    assert [back[q] for q in back] == [run[q] for q in run]  # the same ranking, ties included


@PROPS
@given(entries(grades, min_size=1))
def test_trec_and_beir_qrels_write_then_read_is_identity(pairs):
    qrels = Qrels(
        [decode_id_text(q) for q, _, _ in pairs],
        [decode_id_text(d) for _, d, _ in pairs],
        [g for _, _, g in pairs],
    )
    with tempfile.TemporaryDirectory() as tmp:
        assert read_qrels(write_qrels(qrels, Path(tmp) / "q.txt")).to_dict() == qrels.to_dict()
        beir = write_beir_qrels(qrels, Path(tmp) / "q.tsv")
        assert read_beir_qrels(beir).to_dict() == qrels.to_dict()
        assert load_qrels(beir).to_dict() == qrels.to_dict()


@FUZZ
@given(st.binary(max_size=300), st.booleans())
def test_trec_readers_on_random_bytes(data, gz):
    with tempfile.TemporaryDirectory() as tmp:
        path = _write(Path(tmp), "any.txt", data, gz=gz)
        for reader in (read_run, read_qrels, load_run, load_qrels, read_ndeval_qrels):
            _parses_or_our_error(reader, path)


@FUZZ
@given(trec_file("run"), st.data())
def test_trec_readers_on_damaged_files(case, data):
    raw, _ = case
    gz = data.draw(st.booleans())
    blob = gzip.compress(raw) if gz else raw
    cut = data.draw(st.integers(0, max(len(blob), 0)))
    junk = data.draw(st.binary(max_size=8))
    damaged = blob[:cut] + junk + blob[cut + data.draw(st.integers(0, 4)) :]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / ("run.gz" if gz else "run.txt")
        path.write_bytes(damaged)
        for reader in (read_run, read_qrels, load_run, load_qrels):
            _parses_or_our_error(reader, path)


# -- JSON runs and qrels ------------------------------------------------------------------------------

json_run = st.dictionaries(
    id_text, st.dictionaries(id_text, st.floats(allow_nan=False, allow_infinity=False), max_size=6)
)


@PROPS
@given(json_run, st.booleans())
def test_json_run_write_then_read_is_identity(obj, bom):
    run = Run.from_dict(obj)
    with tempfile.TemporaryDirectory() as tmp:
        path = write_json_run(run, Path(tmp) / "run.json")
        if bom:
            path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
        assert read_json_run(path).to_dict() == run.to_dict()
        assert load_run(path).to_dict() == run.to_dict()


@PROPS
@given(st.dictionaries(id_text, st.dictionaries(id_text, grades, max_size=6)))
def test_json_qrels_write_then_read_is_identity(obj):
    qrels = Qrels.from_dict(obj)
    with tempfile.TemporaryDirectory() as tmp:
        path = write_json_qrels(qrels, Path(tmp) / "qrels.json")
        assert read_json_qrels(path).to_dict() == qrels.to_dict()
        assert load_qrels(path).to_dict() == qrels.to_dict()


json_values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.floats(),
        st.text(max_size=5),
    ),
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.text(max_size=4), children, max_size=4)
    ),
    max_leaves=12,
)


@FUZZ
@given(st.one_of(json_values.map(lambda v: json.dumps(v).encode()), st.binary(max_size=200)))
def test_json_readers_on_any_json_or_bytes(data):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "x.json"
        path.write_bytes(data)
        for reader in (read_json_run, read_json_qrels, load_run, load_qrels, read_rank_file):
            _parses_or_our_error(reader, path)


# -- rank files (JSON and restricted pickles) ------------------------------------------------------------

rank_lists = st.dictionaries(id_text, st.lists(id_text, max_size=6, unique=True), max_size=6)


@PROPS
@given(rank_lists, st.sampled_from(["json", 0, 2, 4, 5]))
def test_rank_file_reads_what_was_written(obj, fmt):
    with tempfile.TemporaryDirectory() as tmp:
        if fmt == "json":
            path = Path(tmp) / "ranks.json"
            path.write_text(json.dumps(obj))
        else:
            path = Path(tmp) / "ranks.pickle"
            path.write_bytes(pickle.dumps(obj, protocol=fmt))
        run = read_rank_file(path)
    assert {q: run.doc_ids(q) for q in run} == {q: docs for q, docs in obj.items() if docs}


pickled_values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.floats(allow_nan=False),
        st.text(max_size=5),
        st.binary(max_size=5),
        st.complex_numbers(allow_nan=False),
    ),
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.tuples(children, children),
        st.sets(st.one_of(st.integers(), st.text(max_size=3)), max_size=3),
        st.frozensets(st.integers(), max_size=3),
        st.dictionaries(st.one_of(st.text(max_size=3), st.integers()), children, max_size=4),
    ),
    max_leaves=12,
)


@PROPS
@given(pickled_values, st.sampled_from([0, 1, 2, 3, 4, 5]))
def test_safe_unpickler_rebuilds_plain_values(value, protocol):
    assert load_builtin(pickle.dumps(value, protocol=protocol)) == value


@FUZZ
@given(
    st.one_of(
        st.binary(max_size=200),
        st.tuples(pickled_values, st.sampled_from([0, 2, 4]), st.data()).map(
            lambda t: _damage(pickle.dumps(t[0], protocol=t[1]), t[2])
        ),
    )
)
def test_rank_reader_on_random_or_damaged_pickles(data):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "ranks.pickle"
        path.write_bytes(data)
        _parses_or_our_error(read_rank_file, path)
        _parses_or_our_error(load_run, path)


def _damage(blob: bytes, data) -> bytes:
    cut = data.draw(st.integers(0, len(blob)))
    return (
        blob[:cut] + data.draw(st.binary(max_size=6)) + blob[cut + data.draw(st.integers(0, 3)) :]
    )


# -- BEIR queries and corpus, ndeval qrels, FreshStack queries -------------------------------------------


@PROPS
@given(st.dictionaries(id_text, st.text(max_size=20), max_size=8), st.booleans())
def test_queries_jsonl_write_then_read_is_identity(texts, bom):
    with tempfile.TemporaryDirectory() as tmp:
        path = write_queries_jsonl(Queries(texts), Path(tmp) / "queries.jsonl")
        if bom:
            path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
        assert dict(read_queries_jsonl(path)) == texts


@FUZZ
@given(st.binary(max_size=300))
def test_jsonl_readers_on_random_bytes(data):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "x.jsonl"
        path.write_bytes(data)
        _parses_or_our_error(read_queries_jsonl, path)
        _parses_or_our_error(read_freshstack_queries, path)
        _parses_or_our_error(lambda p: list(JsonlCorpus(p).iter_documents()), path)


@st.composite
def ndeval_file(draw):
    rows = draw(
        st.lists(
            st.tuples(id_bytes, st.integers(1, 12), id_bytes, st.integers(0, 3)),
            max_size=20,
            unique_by=lambda t: (t[0], t[1], t[2]),
        )
    )
    end = draw(line_end)
    sep = draw(separators)
    data = b"".join(sep.join([t, str(s).encode(), d, str(g).encode()]) + end for t, s, d, g in rows)
    expected = {
        (decode_id_text(t), f"{decode_id_text(t)}:{s}", decode_id_text(d), g) for t, s, d, g in rows
    }
    return (b"\xef\xbb\xbf" if draw(st.booleans()) else b"") + data, expected


@PROPS
@given(ndeval_file())
def test_ndeval_qrels_reads_what_was_written(case):
    data, expected = case
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "qrels.ndeval.txt"
        path.write_bytes(data)
        nq = read_ndeval_qrels(path)
    q, n, d, s = nq.arrays()
    assert set(zip(q.tolist(), n.tolist(), d.tolist(), s.tolist())) == expected


@st.composite
def freshstack_rows(draw):
    """FreshStack rows as on the hub: ids, title, text, nuggets with relevant/non-relevant ids."""
    qids = draw(st.lists(id_text, min_size=1, max_size=4, unique=True))
    docs = st.lists(id_text, max_size=4, unique=True)
    rows = []
    for qi, qid in enumerate(qids):
        nuggets = []
        for k in range(draw(st.integers(0, 3))):
            rel = draw(docs)
            non = [x for x in draw(docs) if x not in rel]
            nuggets.append(
                {
                    "_id": f"{qi}_{k}",
                    "text": draw(st.text(max_size=10)),
                    "relevant_corpus_ids": rel,
                    "non_relevant_corpus_ids": non,
                }
            )
        rows.append(
            {
                "query_id": qid,
                "query_title": draw(st.text(max_size=8)),
                "query_text": draw(st.text(max_size=15)),
                "answer_text": draw(st.text(max_size=8)),
                "nuggets": nuggets,
            }
        )
    return rows


def _nugget_view(nuggets):
    return (
        [(x.nugget_id, x.query_id, x.text) for x in nuggets.iter_nuggets()],
        sorted(zip(*(c.tolist() for c in nuggets.arrays()))),
    )


@PROPS
@given(freshstack_rows(), st.booleans())
def test_freshstack_queries_read_write_read_is_identity(rows, bom):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "queries.jsonl"
        text = "".join(json.dumps(r, ensure_ascii=bool(bom)) + "\n" for r in rows)
        path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + text.encode())
        queries, nuggets = read_freshstack_queries(path)
        assert dict(queries) == {
            r["query_id"]: f"{r['query_title']} {r['query_text']}" for r in rows
        }
        again = write_freshstack_queries(queries, nuggets, Path(tmp) / "again.jsonl")
        q2, n2 = read_freshstack_queries(again)
    assert dict(q2) == dict(queries)
    assert _nugget_view(n2) == _nugget_view(nuggets)


@pytest.mark.parametrize("head", [b"\x80\x01", b"\x80 ", b"\x80\x04"])
def test_a_trec_run_starting_with_byte_0x80_is_not_taken_for_a_pickle(tmp_path, head):
    """Pickle's PROTO opcode is byte 0x80; a TREC run whose first query id starts with that byte
    (found by the property test above) is still read as a TREC run, and a real pickle named
    ``.pkl`` that is broken still fails as a pickle."""
    path = tmp_path / "run.txt"
    path.write_bytes(head + b" Q0 d1 1 0.5 tag\n")
    run = load_run(path)
    assert [d for docs in run.to_dict().values() for d in docs] == ["d1"]
    broken = tmp_path / "run.pkl"
    broken.write_bytes(head + b" Q0 d1 1 0.5 tag\n")
    with pytest.raises(FormatError):
        load_run(broken)
