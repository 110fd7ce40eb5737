"""Hostile bytes fed to every text reader (issue 35, items 2 and 8).

Every line-oriented reader takes its lines and fields from one layer (``data/lines.py``): a
byte-order mark dropped, ids byte-exact (an invalid UTF-8 byte ``0xXX`` read as ``U+10FFXX``),
lines ending at ``"\\n"`` only, fields split at ASCII white space only (tabs only in TSV), errors
naming the file, the line and the value. Here each reader gets the same judgments written
plainly and then with one fault at a time:

* inputs that must read as the plain file (with the hostile id where there is one): a BOM,
  CRLF and mixed CRLF/LF line ends, a last line without its newline, tabs / vertical tabs /
  form feeds as separators, and inside an id a Latin-1 byte, a NUL, a no-break space (U+00A0)
  and an ideographic space (U+3000);
* inputs that must be one clear error naming the file and line (and the value): NaN, inf and
  1e400 where a number belongs, a truncated last line, a reserved code point, a truncated gzip
  file; an empty file is an empty value or such an error.

Through the command line (``nuggetbench.cli.main``) the same files give the plain file's output,
or exit 2 with one ``error:`` line and no traceback.
"""

from __future__ import annotations

import gzip
import importlib.util
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from nuggetbench.cli import main
from nuggetbench.data.formats.beir import read_beir_qrels, read_json_qrels, read_queries_jsonl
from nuggetbench.data.formats.diversity import read_ndeval_qrels
from nuggetbench.data.formats.prefs import read_prefs, read_qrels_prefs
from nuggetbench.data.formats.qrels_jg import read_qrels_jg
from nuggetbench.data.formats.sniff import read_document_qrels, read_run
from nuggetbench.data.formats.trec import read_trec_qrels, read_trec_run
from nuggetbench.data.formats.zscores import read_zscores
from nuggetbench.datasets.hub import read_tsv_pairs
from nuggetbench.errors import FormatError, InputError

# (query, doc, number): "cafe" is the id every hostile byte goes into, as a query and a doc
ROWS = [("cafe", "d1", 2), ("cafe", "cafe", 1), ("q2", "d3", 0), ("q2", "d1", 1)]
HOSTILE_IDS = {
    "latin1": ("caf\xe9".encode("latin-1"), "caf\U0010ffe9"),
    "nul": (b"caf\x00e", "caf\x00e"),
    "nbsp": ("caf\u00a0e".encode(), "caf\u00a0e"),
    "ideographic": ("caf\u3000e".encode(), "caf\u3000e"),
}


def _pairs_of_run(run) -> set[tuple[str, str]]:
    qids, starts, docs, _ = run.arrays()
    return {(q, d) for i, q in enumerate(qids) for d in docs[starts[i] : starts[i + 1]]}


def _pairs_of_groups(groups) -> set[tuple[str, str]]:
    return {pair for qrels in groups.values() for pair in _pairs_of_run(qrels)}


def _pairs_of_table(table) -> set[tuple[str, str]]:
    return {(q, getattr(x, "doc", x)) for q, xs in table.items() for x in xs}


def _pairs_of_nuggets(nq) -> set[tuple[str, str]]:
    q, _, d, _ = nq.arrays()
    return set(zip(q.tolist(), d.tolist()))


@dataclass(frozen=True)
class Reader:
    """One reader: how a line is written, how the file is read to (query, doc) pairs, whether
    it splits at tabs only, and whether it has a number column."""

    name: str
    line: Callable[[str, str, int], str]
    read: Callable[[Path], set[tuple[str, str]]]
    tsv: bool = False
    number: bool = True
    header: str = ""
    suffix: str = ".txt"


READERS = [
    Reader("trec run", lambda q, d, n: f"{q} Q0 {d} 1 {n} tag\n", lambda p: _pairs_of_run(read_trec_run(p))),
    Reader("run (sniffed)", lambda q, d, n: f"{q} Q0 {d} 1 {n} tag\n", lambda p: _pairs_of_run(read_run(p))),
    Reader("trec qrels", lambda q, d, n: f"{q} 0 {d} {n}\n", lambda p: _pairs_of_run(read_trec_qrels(p))),
    Reader("qrels (sniffed)", lambda q, d, n: f"{q} 0 {d} {n}\n", lambda p: _pairs_of_run(read_document_qrels(p))),
    Reader("qrels_jg", lambda q, d, n: f"{q} g1 {d} {n}\n", lambda p: _pairs_of_groups(read_qrels_jg(p))),
    Reader("prefs", lambda q, d, n: f"{q} g1 s1 {d} {n}\n", lambda p: _pairs_of_table(read_prefs(p))),
    Reader("qrels_prefs", lambda q, d, n: f"{q} g1 {d} {n}\n", lambda p: _pairs_of_table(read_qrels_prefs(p))),
    Reader("z-scores", lambda q, d, n: f"{q} {d} {n} 0.5\n", lambda p: _pairs_of_table(read_zscores(p))),
    Reader("ndeval qrels", lambda q, d, n: f"{q} s{n} {d} 1\n", lambda p: _pairs_of_nuggets(read_ndeval_qrels(p)), number=False),
    Reader("BEIR qrels TSV", lambda q, d, n: f"{q}\t{d}\t{n}\n", lambda p: _pairs_of_run(read_beir_qrels(p)), tsv=True, header="query-id\tcorpus-id\tscore\n", suffix=".tsv"),
    Reader("id<TAB>text TSV", lambda q, d, n: f"{q}\t{d} is {n}\n", lambda p: {(k, t.split(" ")[0]) for k, t in read_tsv_pairs(p)}, tsv=True, number=False, suffix=".tsv"),
]  # fmt: skip
IDS = [r.name for r in READERS]


def _plain(reader: Reader, rows=ROWS) -> bytes:
    return (reader.header + "".join(reader.line(*row) for row in rows)).encode()


def _expected(name: str | None, reader: Reader) -> set[tuple[str, str]]:
    new = HOSTILE_IDS[name][1] if name in HOSTILE_IDS else "cafe"
    return {tuple(new if x == "cafe" else x for x in (q, d)) for q, d, _ in ROWS}


def _with_ends(data: bytes, ends: list[bytes]) -> bytes:
    lines = data.split(b"\n")[:-1]
    return b"".join(line + ends[i % len(ends)] for i, line in enumerate(lines))


TRANSFORMS: dict[str, Callable[[bytes, Reader], bytes | None]] = {
    "bom": lambda data, r: b"\xef\xbb\xbf" + data,
    "crlf": lambda data, r: data.replace(b"\n", b"\r\n"),
    "mixed line ends": lambda data, r: _with_ends(data, [b"\r\n", b"\n"]),
    "no final newline": lambda data, r: data[:-1],
    "blank and comment lines": lambda data, r: (
        None if r.tsv else b"\n# a comment\n" + data.replace(b"\n", b"\n\n  \n", 1)
    ),
    "tabs": lambda data, r: None if r.tsv else data.replace(b" ", b"\t"),
    "vertical tab and form feed": lambda data, r: (
        None if r.tsv else data.replace(b" ", b"\x0b", 1).replace(b" ", b" \x0c ")
    ),
    **{
        name: lambda data, r, raw=raw: data.replace(b"cafe", raw)
        for name, (raw, _) in HOSTILE_IDS.items()
    },
}


@pytest.mark.parametrize("transform", list(TRANSFORMS))
@pytest.mark.parametrize("reader", READERS, ids=IDS)
def test_hostile_bytes_read_as_the_plain_file(tmp_path: Path, reader: Reader, transform) -> None:
    data = TRANSFORMS[transform](_plain(reader), reader)
    if data is None:
        pytest.skip("no such separator in a TSV file")
    plain, hostile = tmp_path / f"plain{reader.suffix}", tmp_path / f"hostile{reader.suffix}"
    plain.write_bytes(_plain(reader))
    hostile.write_bytes(data)
    assert reader.read(plain) == _expected(None, reader)
    assert reader.read(hostile) == _expected(transform, reader)


def _cut(data: bytes, reader: Reader) -> bytes:
    """*data* ending in the middle of its last line: its last field and newline cut off."""
    return data[:-1].rsplit(b"\t" if reader.tsv else b" ", 1)[0]


@pytest.mark.parametrize("transform", ["bom", "latin1", "nbsp"])
@pytest.mark.parametrize("reader", [READERS[0], READERS[2]], ids=["trec run", "trec qrels"])
def test_large_files_take_the_fast_path_and_read_the_same(tmp_path, reader, transform) -> None:
    """TREC files over 1 MiB are parsed by pyarrow (``trec_arrow``), not line by line: the
    same ids as the line reader, hostile bytes included."""
    rows = ROWS + [(f"q{i % 40}", f"doc{i}", i % 3) for i in range(80_000)]
    data = TRANSFORMS[transform](_plain(reader, rows), reader)
    assert len(data) > 1 << 20  # trec_arrow.MIN_BYTES
    path = tmp_path / "large.txt"
    path.write_bytes(data)
    got = reader.read(path)
    new = HOSTILE_IDS[transform][1] if transform in HOSTILE_IDS else "cafe"
    assert got == {tuple(new if x == "cafe" else x for x in (q, d)) for q, d, _ in rows}


def _gzip_cut(data: bytes) -> bytes:
    packed = gzip.compress(data * 50)
    return packed[: len(packed) // 2]


ERRORS: dict[str, tuple[Callable[[Reader], bytes], int | None, str]] = {
    # (the file, the line named, a piece of the value named)
    "nan": (lambda r: _plain(r, [*ROWS[:2], ("q2", "d3", "nan")]), 3, "nan"),
    "inf": (lambda r: _plain(r, [*ROWS[:2], ("q2", "d3", "-inf")]), 3, "inf"),
    "huge": (lambda r: _plain(r, [*ROWS[:2], ("q2", "d3", "1e400")]), 3, "1e400"),
    "truncated last line": (lambda r: _cut(_plain(r, ROWS[:3]), r), 3, ""),
    "reserved code point": (lambda r: _plain(r).replace(b"d3", "d\U0010ff81".encode()), 3, "U+10FF81"),
    "truncated gzip": (lambda r: _gzip_cut(_plain(r)), None, "gzip"),
}  # fmt: skip


@pytest.mark.parametrize("fault", list(ERRORS))
@pytest.mark.parametrize("reader", READERS, ids=IDS)
def test_faults_are_one_line_naming_file_line_and_value(
    tmp_path: Path, reader: Reader, fault
) -> None:
    make, line, value = ERRORS[fault]
    if fault in ("nan", "inf", "huge") and not reader.number:
        pytest.skip("this format has no number column")
    data = make(reader)
    if reader.header and fault not in ("truncated gzip",):
        line = line + 1
    if fault == "truncated last line" and reader.name == "id<TAB>text TSV":
        data = _plain(reader)[:-1] + b"\nq9\n"  # an id without its text
        line = len(ROWS) + 1
    path = tmp_path / f"bad{reader.suffix}"
    path.write_bytes(data)
    with pytest.raises(InputError) as info:
        reader.read(path)
    message = str(info.value)
    assert "\n" not in message and str(path) in message
    if line is not None:
        assert isinstance(info.value, FormatError) and info.value.line == line, message
        assert f"line {line}" in message
    assert value in message


@pytest.mark.parametrize("reader", READERS, ids=IDS)
def test_an_empty_or_bom_only_file_is_empty_or_one_clear_error(tmp_path: Path, reader) -> None:
    for data in (b"", b"\xef\xbb\xbf", b"\n\r\n  \n"):
        path = tmp_path / f"empty{reader.suffix}"
        path.write_bytes(data)
        try:
            assert reader.read(path) == set()
        except FormatError as exc:
            assert "\n" not in str(exc) and str(path) in str(exc) and "empty" in str(exc)


# --- the same files through the command line ------------------------------------------------------
RUN = "".join(f"{q} Q0 {d} 1 {n} tag\n" for q, d, n in ROWS)
QRELS = "".join(f"{q} 0 {d} {n}\n" for q, d, n in ROWS)


@dataclass(frozen=True)
class Command:
    """A reader through the command line: its file's lines, and the command with ``{F}`` for
    that file, ``{Q}`` for plain qrels and ``{R}`` for a run."""

    line: Callable[[str, str, object], str]
    words: list[str]
    header: str = ""
    suffix: str = ".txt"
    number: bool = True

    def text(self, extra: str = "") -> str:
        return self.header + "".join(self.line(*row) for row in ROWS) + extra


TREC = ["--format", "trec_eval", "-q"]
CLI = {
    "trec run": Command(READERS[0].line, ["evaluate", "{Q}", "{F}", "-m", "P@2", "-m", "AP"]),
    "trec qrels": Command(READERS[2].line, ["evaluate", "{F}", "{R}", "-m", "P@2", "-m", "AP"]),
    "qrels_jg": Command(READERS[4].line, ["evaluate", "-R", "qrels_jg", "{F}", "{R}", *TREC]),
    "prefs": Command(READERS[5].line, ["evaluate", "-R", "prefs", "{F}", "{R}", "-m", "all_prefs", *TREC]),
    "qrels_prefs": Command(READERS[6].line, ["evaluate", "-R", "qrels_prefs", "{F}", "{R}", "-m", "all_prefs", *TREC]),
    "z-scores": Command(
        lambda q, d, n: f"{q} map {n} 0.5\n{q} num_ret {n} 1\n",
        ["evaluate", "{Q}", "{R}", "-m", "map", "-m", "num_ret", "-Z", "{F}", *TREC],
    ),
    "ndeval qrels": Command(
        READERS[8].line, ["evaluate", "{F}", "{R}", "-m", "alpha-nDCG@10"], suffix=".ndeval",
        number=False,
    ),
    "BEIR qrels TSV": Command(
        READERS[9].line, ["evaluate", "{F}", "{R}", "-m", "P@2"], READERS[9].header, ".tsv"
    ),
}  # fmt: skip


def _cli(capsys, args: list[str]) -> tuple[int, str, str]:
    capsys.readouterr()
    try:
        main(args)
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def _command(folder: Path, name: str, transform: str | None, extra: str = "") -> list[str]:
    """The reader's command on files written through *transform* (its file, the qrels and the
    run alike, so that a hostile id is the same id in each)."""
    command = CLI[name]
    folder.mkdir(exist_ok=True)
    paths = {}
    for key, body in (("F", command.text(extra)), ("Q", QRELS), ("R", RUN)):
        data = body.encode()
        if transform is not None:
            tsv = key == "F" and command.suffix == ".tsv"
            data = TRANSFORMS[transform](data, Reader(name, str, str, tsv=tsv))
        paths["{" + key + "}"] = folder / (f"judged{command.suffix}" if key == "F" else key)
        paths["{" + key + "}"].write_bytes(data)
    return [str(paths[w]) if w in paths else w for w in command.words]


@pytest.mark.parametrize("transform", ["bom", "crlf", "latin1", "nul", "nbsp", "ideographic"])
@pytest.mark.parametrize("name", list(CLI))
def test_cli_prints_the_plain_files_output(tmp_path: Path, capsys, name: str, transform) -> None:
    code, plain, err = _cli(capsys, _command(tmp_path / "plain", name, None))
    assert code == 0, err
    code, out, err = _cli(capsys, _command(tmp_path / "hostile", name, transform))
    assert code == 0 and "Traceback" not in err, err
    new = HOSTILE_IDS[transform][1] if transform in HOSTILE_IDS else "cafe"
    assert out == plain.replace("cafe", new)  # the query id "cafe" is printed with -q


@pytest.mark.parametrize("fault", ["nan", "truncated last line", "reserved code point"])
@pytest.mark.parametrize("name", list(CLI))
def test_cli_faults_are_one_error_line(tmp_path: Path, capsys, name: str, fault) -> None:
    command = CLI[name]
    if fault == "nan" and not command.number:
        pytest.skip("this format has no number column")
    last = command.line("q\U0010ff81" if fault == "reserved code point" else "q2", "d9", 7)
    last = last.splitlines()[0]
    if fault == "nan":
        last = re.sub(r"(?<=\s)7(?=\s|$)", "nan", last)
    elif fault == "truncated last line":
        last = last.rsplit("\t" if command.suffix == ".tsv" else " ", 1)[0]
    args = _command(tmp_path, name, None, extra=last + "\n")
    number = command.text(last + "\n").count("\n")
    code, _, err = _cli(capsys, args)
    assert code == 2 and "Traceback" not in err, err
    assert err.count("\n") == 1 and err.startswith("error: "), err
    assert f"judged{command.suffix}, line {number}" in err, err
    assert ("nan" if fault == "nan" else "U+10FF81" if fault[0] == "r" else "") in err


# --- JSON files: a BOM dropped, ids byte-exact where the format holds bytes ------------------------
def test_json_readers_drop_a_bom_and_keep_bytes(tmp_path: Path) -> None:
    path = tmp_path / "qrels.json"
    path.write_bytes(b'\xef\xbb\xbf{"caf\xe9": {"d1": 1}}')
    assert _pairs_of_run(read_json_qrels(path)) == {("caf\U0010ffe9", "d1")}
    path = tmp_path / "queries.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"_id": "q1", "text": "a"}\r\n{"_id": "q2", "text": "b"}\n')
    assert sorted(read_queries_jsonl(path)) == ["q1", "q2"]
    path.write_bytes(b'{"_id": "q1", "text": "a"}\n{"_id": "caf\xe9", "text": "b"}\n')
    with pytest.raises(FormatError, match=r"queries.jsonl, line 2: not valid utf-8"):
        read_queries_jsonl(path)
    # hub records (JSON lines or a JSON array): a BOM dropped, a Latin-1 byte one clear error
    from nuggetbench.datasets.hub import iter_records

    lines, array = tmp_path / "records.jsonl", tmp_path / "records.json"
    lines.write_bytes(b'\xef\xbb\xbf{"_id": "a"}\r\n{"_id": "b"}\n')
    array.write_bytes(b'\xef\xbb\xbf[{"_id": "c"}]')
    assert [r["_id"] for r in iter_records([lines, array])] == ["a", "b", "c"]
    lines.write_bytes(b'{"_id": "a"}\n{"_id": "caf\xe9"}\n')
    with pytest.raises(FormatError, match=r"records.jsonl: not valid UTF-8"):
        list(iter_records([lines]))


# --- the local files of a dataset registered in ir_datasets ------------------------------------------
needs_irds = pytest.mark.skipif(
    importlib.util.find_spec("ir_datasets") is None, reason="ir_datasets is not installed"
)


def _register(tmp_path: Path, monkeypatch, docs: bytes, queries: bytes, qrels: bytes) -> str:
    monkeypatch.setenv("IR_DATASETS_HOME", str(tmp_path / "irds_home"))
    import ir_datasets

    folder = tmp_path / uuid.uuid4().hex[:8]
    folder.mkdir()
    for name, data in (("docs.tsv", docs), ("queries.tsv", queries), ("qrels", qrels)):
        (folder / name).write_bytes(data)
    name = f"nbtest-hostile-{folder.name}"
    ds = ir_datasets.create_dataset(
        docs_tsv=str(folder / "docs.tsv"),
        queries_tsv=str(folder / "queries.tsv"),
        qrels_trec=str(folder / "qrels"),
    )
    ir_datasets.registry.register(name, ds)
    return f"irds:{name}"


IRDS_DOCS = b"d1\tthe cat sat\ncafe\ta cafe\nd3\tdogs bark\n"
IRDS_QUERIES = b"cafe\tcat\nq2\tdogs\n"


@needs_irds
@pytest.mark.parametrize(
    "transform", ["bom", "crlf", "mixed line ends", "no final newline", "nul", "nbsp", "latin1"]
)
def test_irds_local_files_read_as_every_reader_reads(tmp_path, monkeypatch, transform) -> None:
    """Queries and judgments of local files go through the reading layer; documents through
    ir_datasets, a BOM dropped from the first id; a Latin-1 byte in a document file, which
    ir_datasets cannot decode, is an error naming the dataset, file, line and byte."""
    from nuggetbench import load_dataset

    def hostile(data: bytes, tsv: bool) -> bytes:
        return TRANSFORMS[transform](data, Reader("x", str, str, tsv=tsv))

    dataset = _register(
        tmp_path,
        monkeypatch,
        hostile(IRDS_DOCS, True),
        hostile(IRDS_QUERIES, True),
        hostile(QRELS.encode(), False),
    )
    ds = load_dataset(dataset)
    new = HOSTILE_IDS[transform][1] if transform in HOSTILE_IDS else "cafe"
    assert sorted(ds.queries) == sorted([new, "q2"])
    assert _pairs_of_run(ds.qrels) == _expected(transform, READERS[2])
    if transform == "latin1":
        with pytest.raises(FormatError) as info:
            list(ds.corpus)
        message = str(info.value)
        assert "docs.tsv, line 2: byte 0xe9" in message and dataset in message
        assert "\n" not in message
        return
    assert sorted(ds.corpus) == sorted(["d1", new, "d3"])
    assert ds.corpus["d1"].text == "the cat sat" and ds.corpus[new].text == f"a {new}"


@needs_irds
def test_irds_document_line_without_text_is_one_error_line(tmp_path, monkeypatch, capsys) -> None:
    """The issue's example: a document line without its text column was ir_datasets'
    ``RuntimeError: expected 2 fields, got 1`` (a traceback naming no file)."""
    dataset = _register(
        tmp_path, monkeypatch, b"d1\tthe cat sat\ncafe\nd3\tdogs\n", IRDS_QUERIES, QRELS.encode()
    )
    code, _, err = _cli(capsys, ["run", dataset, "-r", "bm25", "-o", str(tmp_path / "out")])
    assert code == 2 and "Traceback" not in err, err
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, err
    assert "docs.tsv, line 2: expected 'doc_id<TAB>text', got 1 field: 'cafe'" in lines[0]
    assert dataset in lines[0]


# --- the layer itself --------------------------------------------------------------------------------
@pytest.mark.parametrize("block", [1, 2, 3, 5, 64])
def test_streamed_lines_equal_the_whole_file_read_at_once(tmp_path, monkeypatch, block) -> None:
    """``stream_lines`` decodes blocks of whole lines: any block size gives the lines (and line
    numbers) of ``read_text``, multi-byte characters, invalid bytes, a BOM and gzip included."""
    from nuggetbench.data import lines as layer

    monkeypatch.setattr(layer, "BLOCK", block)
    data = b"\xef\xbb\xbfq\xc3\xa9 0\r\n\ncaf\xe9\t\xe3\x80\x80x\n\x00\x1c\xc2\x85 end"
    for name, raw in (("plain.txt", data), ("packed.gz", gzip.compress(data))):
        path = tmp_path / name
        path.write_bytes(raw)
        assert list(layer.stream_lines(path)) == list(layer.text_lines(layer.read_text(path)))
