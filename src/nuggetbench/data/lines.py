"""The one reading layer of every line-oriented text format: lines, fields and numbers.

Every reader of a text format (TREC runs and qrels, ``-R prefs`` / ``qrels_prefs`` /
``qrels_jg``, ``-Z`` z-score files, ndeval qrels, BEIR qrels TSV, ``id<TAB>text`` TSV files,
and the local files of ir_datasets datasets) takes its lines and fields from here, so that each
reads the same bytes the same way:

* the file is read through :func:`.source.read_source` (whole: a path, ``.gz``, a pipe or FIFO,
  size-bounded) or :func:`stream_lines` (line by line, for collections too large to hold);
  a UTF-8 byte-order mark at the start is dropped;
* the bytes are decoded byte-exact (:func:`.source.decode_id_text`): a byte that is not valid
  UTF-8 (``0xXX``) becomes the private-use code point ``U+10FFXX``, so ids keep their bytes;
* lines end at ``"\\n"`` only (a ``"\\r"`` before it is white space, or dropped from a TSV
  line's end); never at the other line breaks ``str.splitlines`` knows (``\\x1c``, ``\\x85``,
  ``U+2028``), which may be inside an id;
* fields are separated by ASCII white space only (:data:`.source.SPACES`, C's ``isspace``,
  as trec_eval's ``sscanf``) or, in TSV, by tabs only: a no-break space (``U+00A0``), an
  ideographic space (``U+3000``) or a NUL byte is part of an id;
* a line whose first character is ``#`` is a comment (trec_eval 10.0), blank lines are skipped;
* errors are :class:`~nuggetbench.errors.FormatError` naming the file, the line and the value
  (:func:`layout_error`, :func:`parse_real`), one line each.
"""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path

from nuggetbench.data.source import (
    BOM,
    GZIP_MAGIC,
    SPACES,
    decode_id_text,
    read_source,
    short,
    split_fields,
    strip_bom,
)
from nuggetbench.errors import FormatError, InputError

#: bytes read at a time by :func:`stream_lines`
BLOCK = 1 << 20

__all__ = [
    "field_lines",
    "layout_error",
    "parse_real",
    "read_text",
    "stream_lines",
    "tab_lines",
    "text_lines",
]


def read_text(path: str | Path, *, what: str = "input", content: bytes | None = None) -> str:
    """All of *path* as text, read once and decoded byte-exact (BOM dropped).

    Args:
        path: the file (a ``.gz`` file, pipe or FIFO too; see :func:`.source.read_source`).
        what: its role, for the "does not exist" message (``"qrels"``, ``"z-score"``...).
        content: its bytes when the caller has read them already.

    Raises:
        InputError: the path does not exist or is a folder.
        FormatError: a bogus gzip file, an input over the size bound, or a code point reserved
            for undecodable bytes (file and line named).
    """
    data = read_source(path, what=what) if content is None else strip_bom(content)
    return decode_id_text(data, path=path)


def text_lines(text: str) -> Iterator[tuple[int, str]]:
    """``(line number, line)`` of *text* (1-based), split at ``"\\n"`` only."""
    return enumerate(text.split("\n"), start=1)


def stream_lines(path: str | Path, *, what: str = "input") -> Iterator[tuple[int, str]]:
    """``(line number, line)`` of *path* read in blocks of whole lines (never the whole file at
    once): gzip recognised by its magic bytes, a leading BOM dropped, each line decoded
    byte-exact, without its ``"\\n"`` (a ``"\\r"`` before it stays).

    Raises:
        InputError: the path does not exist or is a folder.
        FormatError: a truncated or bogus gzip file, or a reserved code point (file and line
            named).
    """
    path = Path(path)
    if not path.exists():
        raise InputError(f"{what} file {path} does not exist")
    if path.is_dir():
        raise InputError(f"{what} file {path} is a folder; give the file inside it")
    with open(path, "rb") as raw:
        head = raw.peek(2)[:2]  # a pipe cannot seek back
        gz = head == GZIP_MAGIC or (path.suffix == ".gz" and bool(head))
        fh = gzip.GzipFile(fileobj=raw, mode="rb") if gz else raw
        try:
            yield from _blocks_to_lines(fh, path)
        except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
            raise FormatError(
                path, None, f"not a complete gzip file ({exc or 'truncated'}); fetch it again"
            ) from None


def _blocks_to_lines(fh, path: Path) -> Iterator[tuple[int, str]]:
    """The numbered lines of binary stream *fh*, decoded a block of whole lines at a time (a
    ``"\\n"`` byte never lies inside a UTF-8 sequence, so a block cut there decodes as the
    whole file would)."""
    rest = b""
    while len(rest) < len(BOM):  # a pipe may give the mark in pieces
        block = fh.read(BLOCK)
        if not block:
            break
        rest += block
    rest, number = strip_bom(rest), 0
    while True:
        cut = rest.rfind(b"\n")
        if cut >= 0:
            lines = _decoded(rest[:cut], path, number).split("\n")
            yield from enumerate(lines, start=number + 1)
            number += len(lines)
            rest = rest[cut + 1 :]
        block = fh.read(BLOCK)
        if not block:
            break
        rest += block
    if rest:
        yield number + 1, _decoded(rest, path, number)


def _decoded(data: bytes, path: Path, before: int) -> str:
    """:func:`.source.decode_id_text` of lines that follow line *before* of *path*."""
    try:
        return decode_id_text(data, path=path)
    except FormatError as exc:
        raise FormatError(path, before + (exc.line or 1), exc.message) from None


def field_lines(
    lines: Iterable[tuple[int, str]], *, comments: bool = True
) -> Iterator[tuple[int, list[str]]]:
    """``(line number, fields)`` of each line holding a field, split at ASCII white space.

    Args:
        lines: from :func:`text_lines` or :func:`stream_lines`.
        comments: skip a line whose first character is ``#`` (trec_eval's comment).
    """
    for number, line in lines:
        fields = split_fields(line)
        if fields and not (comments and line.startswith("#")):
            yield number, fields


def tab_lines(lines: Iterable[tuple[int, str]]) -> Iterator[tuple[int, list[str]]]:
    """``(line number, fields)`` of each non-blank TSV line, split at tabs only (a ``"\\r"``
    ending the line dropped; a line of white space only is blank). Fields are not stripped."""
    for number, line in lines:
        if line.endswith("\r"):
            line = line[:-1]
        if line and (line[0] not in SPACES or line.strip(SPACES)):
            yield number, line.split("\t")


def layout_error(
    path: str | Path | None, number: int, layout: str, fields: list[str], *, sep: str = " "
) -> FormatError:
    """The error of a line with the wrong number of fields: the layout expected, the count
    found and the line (shortened)."""
    found = sep.join(fields)
    return FormatError(
        path,
        number,
        f"expected '{layout}', got {len(fields)} field{'s' * (len(fields) != 1)}: "
        f"{short(found, 120)}",
    )


def parse_real(text: str, path: str | Path | None, number: int | None, what: str) -> float:
    """The finite number *text* spells (``1``, ``-0.5``, ``.5``, ``1e3``).

    Raises:
        FormatError: it is not a number (``x``, ``1_0``) or not finite (``nan``, ``inf``,
            ``1e999``): file, line, *what* and the value named.
    """
    try:
        value = float(text) if "_" not in text else None
    except ValueError:
        value = None
    if value is None or value != value or value in (float("inf"), float("-inf")):
        raise FormatError(path, number, f"{what} must be a finite number, got {short(text)}")
    return value
