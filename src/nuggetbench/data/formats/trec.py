"""TREC run files (6 columns) and qrels files (4 columns).

Run lines: ``query_id Q0 doc_id rank score tag`` (whitespace separated; the rank column is
ignored, as trec_eval does). Qrels lines: ``query_id iteration doc_id relevance``. Lines whose first
character is ``#`` are comments (trec_eval's own test files use them). A ``.gz`` suffix is read
transparently.
"""

from __future__ import annotations

import gzip
import io
import math
import re
from pathlib import Path

import numpy as np

from nuggetbench._atomic import atomic_write
from nuggetbench.data.columns import sorted_query_codes
from nuggetbench.data.formats import trec_arrow as _arrow_trec
from nuggetbench.data.formats import trec_write as _trec_write
from nuggetbench.data.lines import field_lines, text_lines
from nuggetbench.data.qrels import Qrels
from nuggetbench.data.ranking import score_order
from nuggetbench.data.run import Run
from nuggetbench.data.source import (
    ERRORS,
    INT64_MAX,
    INT64_MIN,
    SPACES,
    check_reserved,
    decode_id_text,
    encode_id_text,
    parse_grade,
    read_source,
    short,
)
from nuggetbench.errors import DuplicateError, FormatError, InputError

_COMMENT = re.compile(rb"^#[^\n]*(\n|$)", re.MULTILINE)
_BFIELDS = re.compile(f"[{SPACES}]+".encode())


def _irregular(data: bytes, *, carriage_returns: bool = True) -> bool:
    """Whether *data* holds bytes the C parsers treat differently from the line reader (vertical
    tab, form feed, a carriage return not ending a line, NUL): only the careful reader reads it.
    ``carriage_returns=False`` leaves the last test to the caller
    (:func:`.trec_arrow.read_columns` makes it itself: a CRLF file is then counted once)."""
    return (
        b"\x0b" in data
        or b"\x0c" in data
        or b"\x00" in data
        or (carriage_returns and _arrow_trec.lone_carriage_return(data))
    )


def _strip_comments(data: bytes) -> bytes:
    if b"#" not in data:  # one memchr; the common case
        return data
    if data.startswith(b"#") or b"\n#" in data:
        return _COMMENT.sub(b"", data)
    return data


def _fast_columns(data: bytes, ncols: int):
    """Split whitespace-separated columns with pandas' C parser; ``None`` when anything looks off."""
    import pandas as pd

    if not data.strip():
        return [np.array([], dtype=object) for _ in range(ncols)]
    if _irregular(data):
        return None
    import warnings

    try:
        # one spare column catches lines with too many fields; empty strings mark missing ones
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", pd.errors.ParserWarning)
            frame = pd.read_csv(
                io.BytesIO(data),
                sep=r"\s+",
                header=None,
                names=list(range(ncols + 1)),
                dtype=object,
                engine="c",
                keep_default_na=False,
                encoding_errors=ERRORS,
                na_values=[],
                quoting=3,
                skip_blank_lines=True,
                index_col=False,
            )
    except Exception:
        return None
    if (frame[ncols] != "").any() or (frame[list(range(ncols))] == "").to_numpy().any():
        return None
    return [frame[i].to_numpy(dtype=object) for i in range(ncols)]


def _slow_lines(data: bytes, path: str, ncols: int, what: str, *, trailing: str = "error"):
    """Line-by-line parse that names the file, line and fault.

    ``trailing="ignore"`` accepts extra fields after the last column (trec_eval ignores the rest
    of a run line after the tag: its own ``results.trunc`` test file has such lines)."""
    cols: list[list[str]] = [[] for _ in range(ncols)]
    for lineno, parts in field_lines(text_lines(decode_id_text(data, path=path))):
        if len(parts) != ncols and not (trailing == "ignore" and len(parts) > ncols):
            raise FormatError(
                path,
                lineno,
                f"expected {ncols} whitespace-separated columns in a {what} line, found "
                f"{len(parts)}: {short(' '.join(parts), 120)}" + _columns_hint(parts, ncols, what),
            )
        for c, part in zip(cols, parts):
            c.append(part)
    return [np.array(c, dtype=object) for c in cols]


def _columns_hint(parts: list[str], ncols: int, what: str) -> str:
    """What a line with the wrong number of fields likely is: the other kind of file (the
    judgments and run given in the wrong order), or trailing text after a run's tag."""
    swapped = "were the judgments and the run given in the wrong order? The judgments come first"
    if what == "qrels" and len(parts) == 6 and parts[1].upper() == "Q0":
        return f" (this is a run line: query Q0 doc rank score tag, not judgments; {swapped})"
    if what == "run" and len(parts) == 4 and parts[3].lstrip("-").isdigit():
        return f" (this looks like a judgments line: query iteration doc grade; {swapped})"
    if len(parts) <= ncols or what != "run":
        return " (doc ids may not contain spaces)" if len(parts) > ncols else ""
    return (
        " (doc ids may not contain spaces; if the extra fields are trailing text after the tag, "
        "which trec_eval ignores, read with trailing='ignore' / --ignore-trailing)"
    )


def _parse_scores(
    values: np.ndarray, path: str, data: bytes, column: int, what: str, kind: str
) -> np.ndarray:
    import pandas as pd

    nums = pd.to_numeric(pd.Series(values), errors="coerce").to_numpy(dtype=np.float64)
    bad = np.isnan(nums)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        lineno = _line_of_entry(data, i)
        raise FormatError(
            path,
            lineno,
            f"{kind} column {column} of a {what} line is not a number: {short(values[i])}",
        )
    return nums


def _line_of_entry(data: bytes, index: int) -> int:
    """1-based line number of the *index*-th data line (skipping blanks and comments)."""
    for count, (lineno, _) in enumerate(field_lines(text_lines(decode_id_text(data)))):
        if count == index:
            return lineno
    return 0


def read_trec_run(
    path: str | Path,
    *,
    name: str | None = None,
    keep_rank: bool = False,
    trailing: str = "error",
    duplicates: str = "error",
    content: bytes | None = None,
) -> Run:
    """Read a TREC run file (6 columns; ``.gz`` read transparently).

    Args:
        path: the run file.
        name: the run's label (default: the tag of the first line, else the file name).
        keep_rank: also keep the rank column as ``run.input_ranks`` (integers; ndeval's default
            order sorts by it). It never changes the ranking of the run.
        trailing: ``"error"`` (default: a line with more than 6 fields is an error, since it usually
            means a doc id with a space) or ``"ignore"`` (trec_eval's behaviour: fields after the
            tag are ignored).
        duplicates: a (query, doc) pair on two lines: ``"error"`` (default, as trec_eval) or
            ``"first"`` (the first line wins, with a warning; see :class:`Run`).
        content: the file's bytes when the caller has read them already (:func:`..sniff.read_run`
            reads a pipe once); default: *path* is read once (see :func:`.source.read_source`).

    Ids keep their bytes: invalid UTF-8 bytes are never merged (see :func:`.source.decode_id_text`).

    Returns:
        A :class:`Run`, ranked by trec_eval's rule (the rank column is ignored).

    Raises:
        FormatError: a line has the wrong number of columns, or a score is not a number, or
            (with *keep_rank*) a rank is not an integer (file, line number and line named).
        DuplicateError: a (query, doc) pair occurs twice with ``duplicates="error"`` (file and
            both line numbers named).
    """
    path = Path(path)
    box = [read_source(path, what="run") if content is None else content]
    return read_run_owned(
        path, box, name=name, keep_rank=keep_rank, trailing=trailing, duplicates=duplicates
    )


def read_run_owned(
    path: Path,
    box: list[bytes],
    *,
    name: str | None = None,
    keep_rank: bool = False,
    trailing: str = "error",
    duplicates: str = "error",
) -> Run:
    """:func:`read_trec_run` of the bytes in the one-item list *box*, which it empties: once the fast
    path has parsed the columns, the file's bytes are dropped before the run is ranked (a run
    file's size less at the peak), unless *path* is not a regular file (a pipe cannot be read
    again to name the lines of a duplicate pair)."""
    raw = box.pop()
    check_reserved(raw, path)
    try:
        # a regular file can be read again (to name the lines of an error): the fast reader may
        # then drop the bytes once they are parsed
        holder, raw = [raw], (b"" if path.is_file() else raw)
        columns = _read_run_arrow(path, holder, keep_rank=keep_rank, kept=raw)
        if columns is None:
            return _read_run_bytes(
                path,
                raw or holder.pop(),
                name=name,
                keep_rank=keep_rank,
                trailing=trailing,
                duplicates=duplicates,
            )
        return Run.from_codes(
            *columns[:5],
            name=name or columns[5],
            metadata={"source": str(path)},
            source=str(path),
            ranks=columns[6],
            duplicates=duplicates,
            doc_strings=columns[7],
            score_order=columns[8],
        )
    except DuplicateError as exc:
        if not isinstance(exc.key, tuple):
            raise
        if not raw:
            try:
                raw = read_source(path, what="run")
            except (InputError, FormatError, OSError):
                raise exc from None
        raise _duplicate_at(path, raw, exc, doc_column=2) from None


def _read_run_bytes(
    path: Path, raw: bytes, *, name: str | None, keep_rank: bool, trailing: str, duplicates: str
) -> Run:
    """The regular (pandas or line-by-line) reader of :func:`read_trec_run`."""
    data = _strip_comments(raw)
    if trailing not in ("error", "ignore"):
        raise InputError(f"trailing must be 'error' or 'ignore', got {trailing!r}")
    cols = _fast_columns(data, 6)
    if cols is None:
        cols = _slow_lines(raw, str(path), 6, "run", trailing=trailing)
    q, _, d, rank_col, s, tag = cols
    scores = _parse_scores(s, str(path), raw, 5, "run", "score")
    if not np.all(np.isfinite(scores)):
        i = int(np.flatnonzero(~np.isfinite(scores))[0])
        raise FormatError(path, _line_of_entry(raw, i), f"score is not finite: {short(s[i])}")
    ranks = None
    if keep_rank:
        ranks_f = _parse_scores(rank_col, str(path), raw, 4, "run", "rank")
        bad = ranks_f != np.round(ranks_f)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise FormatError(
                path, _line_of_entry(raw, i), f"rank must be an integer, got {short(rank_col[i])}"
            )
        ranks = ranks_f.astype(np.int64)
    label = name or (str(tag[0]) if len(tag) else path.name)
    return Run(
        q,
        d,
        scores,
        name=label,
        metadata={"source": str(path)},
        source=str(path),
        ranks=ranks,
        duplicates=duplicates,
    )


def _read_run_arrow(
    path: Path, box: list[bytes], *, keep_rank: bool, kept: bytes = b""
) -> tuple | None:
    """The pyarrow fast path of :func:`read_trec_run`: ``(query uniques (sorted), query codes, doc
    uniques, doc codes, scores, the first line's tag or the file name, ranks or None, doc
    uniques as a pyarrow array, the score order)`` for :meth:`Run.from_codes`, or ``None``:
    use the regular reader.

    *box* holds the file's bytes; once they parse, :func:`.trec_arrow.read_columns` empties it
    (a ``None`` leaves it as it was). *kept*: the same bytes when the caller keeps them (a pipe
    cannot be read again to name the line of an error); empty: the file is read again."""
    data = _strip_comments(box[0])
    if _irregular(data, carriage_returns=False):  # read_columns refuses a lone CR itself
        return None
    first = next((line for line in data[:8192].split(b"\n") if line.strip()), b"").split()
    label = decode_id_text(first[5]) if len(first) >= 6 else path.name
    wanted = {0: "grouped_ids", 2: "ids", 4: "float"}
    if keep_rank:
        wanted[3] = "int"
    stripped = [data] if data is not box[0] else None
    del data  # read_columns holds the only reference while it parses
    cols = _arrow_trec.read_columns(
        box if stripped is None else stripped, 6, wanted, background_ids=True
    )
    if cols is None:
        return None
    box.clear()
    (qu, qc), docs, scores = cols[0], cols[2], cols[4]
    if not np.all(np.isfinite(scores)):
        i = int(np.flatnonzero(~np.isfinite(scores))[0])
        raw = kept or read_source(path, what="run")
        raise FormatError(
            path, _line_of_entry(raw, i), f"score is not finite: {float(scores[i])!r}"
        )
    # the score order needs no doc id: computed while the doc ids are factorised in a thread
    qu, qc = sorted_query_codes(qu, qc)
    order = score_order(qc, scores)
    du, dc, doc_strings = docs() if callable(docs) else docs
    return qu, qc, du, dc, scores, label, cols.get(3), doc_strings, order


def read_trec_qrels(
    path: str | Path, *, name: str | None = None, content: bytes | None = None
) -> Qrels:
    """Read a TREC qrels file (``query_id iteration doc_id relevance``; ``.gz`` read transparently).

    Grades are parsed exactly as integers (``9223372036854775807`` and ``2**53 + 1`` keep their
    value; ``1.0`` and ``2e1`` are accepted as 1 and 20). *content* is the file's bytes when the
    caller has read them already. Ids keep their bytes (:func:`.source.decode_id_text`).

    Raises:
        FormatError: a line does not have 4 columns, or a relevance is not an integer or lies
            outside the 64-bit range (file, line number and value named).
        DuplicateError: a (query, doc) pair is judged twice with different grades (file and
            lines named).
    """
    path = Path(path)
    raw = read_source(path, what="qrels") if content is None else content
    check_reserved(raw, path)
    try:
        return _read_qrels_bytes(path, raw, name=name)
    except DuplicateError as exc:
        if not isinstance(exc.key, tuple):
            raise
        raise _duplicate_at(path, raw, exc, doc_column=2) from None


def _read_qrels_bytes(path: Path, raw: bytes, *, name: str | None) -> Qrels:
    data = _strip_comments(raw)
    fast = _read_qrels_arrow(path, raw, data, name=name)
    if fast is not None:
        return fast
    cols = _fast_columns(data, 4)
    if cols is None:
        cols = _slow_lines(raw, str(path), 4, "qrels")
    q, _, d, r = cols
    rels = parse_grades(r, path, raw)
    return Qrels(
        q,
        d,
        rels,
        name=name or path.name,
        metadata={"source": str(path)},
        source=str(path),
    )


def _read_qrels_arrow(path: Path, raw: bytes, data: bytes, *, name: str | None) -> Qrels | None:
    """The pyarrow fast path of :func:`read_trec_qrels` (the iteration column is only counted), or
    ``None``: use the regular reader (small or irregular files, see
    :func:`.trec_arrow.read_columns`). Columns stay factorised: each distinct grade string is
    parsed once and the entries are sorted by the ranks of the distinct ids."""
    if len(data) < _arrow_trec.MIN_BYTES or _irregular(data, carriage_returns=False):
        return None
    cols = _arrow_trec.read_columns(data, 4, {0: "grouped_ids", 2: "ids", 3: "labels"})
    if cols is None:
        return None
    (qu, qc), (du, dc, doc_strings), (ru, rc) = cols[0], cols[2], cols[3]
    grades = _parse_grade_uniques(ru, rc, path, raw)
    return Qrels.from_codes(
        qu,
        qc,
        du,
        dc,
        grades[rc],
        name=name or path.name,
        metadata={"source": str(path)},
        source=str(path),
        doc_strings=doc_strings,
    )


def _parse_grade_uniques(
    uniques: np.ndarray, codes: np.ndarray, path: str | Path, raw: bytes | None
) -> np.ndarray:
    """Each distinct grade string of a factorised column parsed exactly (int64 (u,)).

    Raises:
        FormatError: as :func:`parse_grades` (the first line holding the bad value named).
    """
    parsed = np.empty(len(uniques), dtype=np.int64)
    for j, text in enumerate(uniques.tolist()):
        grade = parse_grade(str(text))
        if grade is None or not INT64_MIN <= grade <= INT64_MAX:
            i = int(np.flatnonzero(codes == j)[0])
            line = _line_of_entry(raw, i) if raw is not None else None
            problem = (
                "is not an integer"
                if grade is None
                else f"lies outside the 64-bit range [{INT64_MIN}, {INT64_MAX}]"
            )
            raise FormatError(
                path, line, f"relevance {short(text)} {problem}; grades must be integers"
            )
        parsed[j] = grade
    return parsed


def parse_grades(values: np.ndarray, path: str | Path, raw: bytes | None) -> np.ndarray:
    """Grade strings -> int64, exactly (each distinct string is parsed once).

    Args:
        values: the relevance column (object array of ``str``), shape (n,).
        path: the file, for errors.
        raw: the file's bytes, to find the line of a bad value (``None``: no line).

    Raises:
        FormatError: a value is not an integer, or lies outside [-2**63, 2**63 - 1] (file, line
            and a short prefix of the value named).
    """
    import pandas as pd

    if not len(values):
        return np.zeros(0, dtype=np.int64)
    codes, uniques = pd.factorize(pd.Series(values, dtype=object), sort=False)
    return _parse_grade_uniques(np.asarray(uniques, dtype=object), codes, path, raw)[codes]


def _duplicate_at(path: Path, raw: bytes, exc: DuplicateError, *, doc_column: int) -> Exception:
    """*exc* re-raised with the file and the lines of the repeated (query, doc) pair."""
    query, doc = (encode_id_text(str(x)) for x in exc.key)
    lines = []
    for lineno, line in enumerate(raw.split(b"\n"), start=1):
        parts = _BFIELDS.split(line.strip(SPACES.encode()))
        if (
            len(parts) > doc_column
            and not line.startswith(b"#")
            and parts[0] == query
            and parts[doc_column] == doc
        ):
            lines.append(lineno)
            if len(lines) == 2:
                break
    if len(lines) < 2:
        return exc
    message = str(exc)
    if message.startswith(f"{path}: "):
        message = message[len(f"{path}: ") :]
    return DuplicateError(
        f"{path}, line {lines[1]} (first at line {lines[0]}): {message}", key=exc.key
    )


def _check_id(value: str, what: str) -> None:
    if not value or any(ch in SPACES or ch in "\n\x00" for ch in value):
        raise InputError(
            f"{what} {short(value)} is empty or contains whitespace; a TREC file cannot hold it"
        )
    if what == "query id" and value.startswith("#"):
        raise InputError(
            f"{what} {short(value)} starts with '#': its lines would be read back as comments"
        )


def format_score(score: float) -> str:
    """Scores are written with ``repr`` precision so that re-reading gives the same ranking."""
    if math.isfinite(score) and score == int(score) and abs(score) < 1e15:
        return str(int(score))
    return repr(float(score))


def _bad_id(value: str, what: str) -> bool:
    try:
        _check_id(value, what)
    except InputError:
        return True
    return False


def _score_texts(scores: np.ndarray) -> list[str]:
    """:func:`format_score` of each score, the integer test done once over the column."""
    scores = np.asarray(scores, dtype=np.float64)
    whole = np.isfinite(scores) & (np.abs(scores) < 1e15)
    whole[whole] = scores[whole] == np.trunc(scores[whole])
    out = [repr(x) for x in scores.tolist()]
    for i in np.flatnonzero(whole).tolist():
        out[i] = str(int(scores[i]))
    return out


def _run_lines(run: Run, tag: str) -> list[str]:
    """The lines of :func:`write_run`, built by columns; each distinct id is checked once.

    When an id is bad, the lines are built one by one so that the error names the first bad id
    in file order (as it always did).
    """
    qids, starts, docids, scores = run.arrays()
    counts = np.diff(starts)
    if hasattr(run, "doc_codes"):
        uniques, codes = run.doc_codes()
        present = np.zeros(len(uniques), dtype=bool)
        present[np.asarray(codes, dtype=np.int64)] = True
        distinct_docs = np.asarray(uniques, dtype=object)[present].tolist()
    else:
        distinct_docs = set(docids.tolist())
    if any(_bad_id(q, "query id") for q in qids.tolist()) or any(
        _bad_id(d, "doc id") for d in distinct_docs
    ):
        for i, q in enumerate(qids.tolist()):
            _check_id(q, "query id")
            for d in docids[int(starts[i]) : int(starts[i + 1])].tolist():
                _check_id(d, "doc id")
    ranks = (np.arange(len(scores), dtype=np.int64) - np.repeat(starts[:-1], counts) + 1).tolist()
    q_column = np.repeat(np.asarray(qids, dtype=object), counts).tolist()
    return [
        f"{q} Q0 {d} {r} {s} {tag}\n"
        for q, d, r, s in zip(q_column, docids.tolist(), ranks, _score_texts(scores))
    ]


def write_run(run: Run, path: str | Path, *, tag: str | None = None) -> Path:
    """Write *run* as a TREC run file, atomically (``.gz`` suffix: gzip-compressed).

    Ranks are written 1-based in trec_eval order.

    Raises:
        InputError: a query or doc id is empty or contains whitespace.
    """
    path = Path(path)
    tag = tag or run.name or "nuggetbench"
    tag = re.sub(r"\s+", "_", tag)
    blocks = _column_blocks(run, tag)
    if blocks is None:
        blocks = [encode_id_text("".join(_run_lines(run, tag)))]
    with atomic_write(path, "wb") as fh:
        if path.suffix == ".gz":
            with gzip.GzipFile(filename="", fileobj=fh, mode="wb") as gz:
                for block in blocks:
                    gz.write(block)
        else:
            for block in blocks:
                fh.write(block)
    return path


def _column_blocks(run: Run, tag: str):
    """The file's bytes from :mod:`._trec_write` (large runs whose ids and tag it can write),
    else ``None``."""
    if not isinstance(run, Run) or run.n_entries < _trec_write.MIN_ENTRIES:
        return None
    qids, starts = run.query_offsets()
    uniques, codes = run.doc_codes()
    return _trec_write.run_chunks(qids, starts, uniques, codes, run.score_column(), tag)


def write_qrels(qrels: Qrels, path: str | Path, marks: dict | None = None) -> Path:
    """Write *qrels* as a TREC qrels file, atomically; the second column (the "iteration", read
    and ignored by trec_eval and its peers) is ``0``, or ``marks[(query id, doc id)]``."""
    qids, starts, docids, rels = qrels.arrays()
    lines = []
    for i, q in enumerate(qids.tolist()):
        _check_id(q, "query id")
        a, b = int(starts[i]), int(starts[i + 1])
        for d, r in zip(docids[a:b].tolist(), rels[a:b].tolist()):
            _check_id(d, "doc id")
            lines.append(f"{q} {(marks or {}).get((q, d), '0')} {d} {r}\n")
    with atomic_write(path, "wb") as fh:
        fh.write(encode_id_text("".join(lines)))
    return Path(path)
