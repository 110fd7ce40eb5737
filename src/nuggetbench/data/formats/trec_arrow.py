"""Fast path for large TREC files: pyarrow's multi-threaded CSV reader, when it is installed.

Only regular files take this path: columns separated by single spaces, or by single tabs with no
space anywhere (the usual output of retrievers and of :func:`~nuggetbench.data.formats.trec.write_run`).
Anything else (mixed whitespace, wrong column counts, bad numbers, invalid UTF-8) returns
``None`` and the caller falls back to the careful pandas/line-by-line reader, which produces the
error messages. Id columns come back factorised (ids of at most 8 bytes as integer keys sorted
by numpy, :func:`.lookup.short_keys`; others dictionary encoded in C++), so no Python string is
created per line except for the distinct ids; the distinct doc ids also come as a pyarrow array,
for the look-ups (:func:`.lookup.share_strings`).
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

from nuggetbench._runtime import in_background, trim_heap, usable_cpus
from nuggetbench.data import arrow, lookup

logger = logging.getLogger(__name__)

MIN_BYTES = 1 << 20  # below this the regular reader is as fast

BLOCK_SIZE = 1 << 24
"""Bytes of the file pyarrow parses at a time (in parallel blocks)."""

BACKGROUND_MIN = 1 << 21
"""From this many lines :func:`read_columns` may factorise the ids in a thread (on 1M lines the
thread cost more than it saved: the run is then read beside the judgments already)."""


def _delimiter(data: bytes) -> str | None:
    """``" "`` or ``"\\t"`` judging by the first line; ``None`` when whitespace is mixed."""
    first = data[: data.find(b"\n")] if b"\n" in data else data
    if b"\t" in first:
        return "\t" if b" " not in data else None
    return None if b"\t" in data else " "


def lone_carriage_return(data: bytes) -> bool:
    """Whether *data* holds a carriage return that does not end a line (one ``memchr`` when it
    holds none)."""
    return b"\r" in data and data.count(b"\r") != data.count(b"\r\n")


def _grouped_codes(column: object) -> tuple[np.ndarray, np.ndarray] | None:
    """``dictionary_encode`` of *column* (uniques in order of first appearance, int64 codes) from
    its runs of equal adjacent values: only the first value of each run is hashed. ``None`` when
    the runs are short (the column is not grouped)."""
    pa, pc = arrow.load()

    n = len(column)  # type: ignore[arg-type]
    if n < 2:
        return None
    change = pc.not_equal(column.slice(1), column.slice(0, n - 1))  # type: ignore[attr-defined]
    heads = np.flatnonzero(np.concatenate([[True], arrow.to_numpy(change).astype(bool)]))
    if len(heads) * 4 > n:
        return None
    encoded = pc.dictionary_encode(pc.take(column, heads))  # type: ignore[attr-defined]
    uniques = arrow.to_numpy(encoded.dictionary).astype(object, copy=False)
    head_codes = arrow.to_numpy(encoded.indices).astype(np.int64)
    return uniques, np.repeat(head_codes, np.diff(np.append(heads, n)))


def _factorize(column: Any, *, by_keys: bool = True) -> tuple[Any, np.ndarray]:
    """``(distinct values as a pyarrow array, int64 codes)`` of a pyarrow string *column*: short
    ids by their integer keys (:func:`.lookup.short_keys`; the distinct ids then come sorted),
    others (and every value unless *by_keys*) by pyarrow's hash table (in order of first
    appearance; faster for a few distinct values)."""
    pa, pc = arrow.load()
    keys = lookup.short_keys(column) if by_keys else None
    if keys is not None:
        first, codes = lookup.factorize_keys(keys)
        distinct = lookup.strings_of_keys(keys[first])
        return (pc.take(column, first) if distinct is None else distinct), codes
    encoded = pc.dictionary_encode(column)
    return encoded.dictionary, arrow.to_numpy(encoded.indices).astype(np.int64)


def _id_codes(holder: list[Any]) -> tuple[Any, np.ndarray, Any]:
    """``(distinct ids, int64 codes, distinct ids)`` of the pyarrow string column (chunked or
    not) in the one-item list *holder*, which it empties (the chunks are freed once combined);
    the distinct ids stay a pyarrow array (no ``str`` object per distinct id)."""
    column = holder.pop()
    if not isinstance(column, arrow.load()[0].Array):
        column = column.combine_chunks()
    dictionary, codes = _factorize(column)
    return dictionary, codes, dictionary


def read_columns(
    data: bytes | list[bytes],
    n_columns: int,
    wanted: dict[int, str],
    *,
    background_ids: bool = False,
) -> dict[int, object] | None:
    """Parse whitespace-separated *data* (no comment lines) with pyarrow.

    Args:
        data: file content, or a one-item list holding it: once the file is known to parse
            (the point after which ``None`` is no longer returned), the item is removed, so
            the bytes are freed while the columns are converted (the file's size less at the
            peak) unless the caller keeps another reference.
        n_columns: columns every line must have.
        wanted: ``{column index: kind}`` with kind ``"ids"`` (factorised strings),
            ``"grouped_ids"`` (ids in runs of equal values), ``"labels"`` (strings with a few
            distinct values), ``"float"`` or ``"int"``.

    Returns:
        ``{column: value}``: for ``"grouped_ids"`` and ``"labels"`` a tuple ``(uniques object
        array, codes int64 array)``, for ``"ids"`` ``(uniques, codes, uniques)`` with the uniques
        a pyarrow string array (no ``str`` object per distinct id: the data model converts
        them when asked, :func:`.lookup.as_objects`), otherwise a numpy array; ``None`` when
        pyarrow is missing or the file is not regular. With *background_ids* (and two usable
        CPUs) each ``"ids"`` value is instead a function that waits for that tuple: the ids
        are factorised in a thread while the caller works on the other columns (a run's
        score order, :func:`.ranking.score_order`); it raises what the factorisation raised.
    """
    box = data if isinstance(data, list) else None
    data = box[0] if box is not None else data
    if len(data) < MIN_BYTES:
        return None
    try:
        pa, pc = arrow.load()
        import pyarrow.csv as pcsv
    except ImportError:
        return None
    delimiter = _delimiter(data)
    if delimiter is None:
        return None
    if lone_carriage_return(data):
        return None  # pyarrow ends a row there, the line reader does not
    names = [f"c{i}" for i in range(n_columns)]
    try:
        table = _parse(pa, pcsv, data, delimiter, names, wanted)
        if table is None:
            return None
        if box is not None:
            box.clear()
        del data
        # the parser's blocks are free now: hand them back before the ids are factorised (the
        # run reader's peak on 1M lines: 245-249 MB before, 214-222 MB after)
        pa.default_memory_pool().release_unused()
        holder, table = [table], None  # _convert drops each column as it goes
        out = _convert(holder, names, wanted, background_ids=background_ids)
        # hand the parser's freed blocks back to the system: numpy's and Python's allocations
        # that follow cannot reuse memory kept by pyarrow's pool (a lower peak RSS)
        pa.default_memory_pool().release_unused()
        trim_heap()
        return out
    except (pa.ArrowException, ValueError, OverflowError) as exc:
        if box is not None and not box:
            raise  # past the point of no return: the bytes are gone
        logger.debug("pyarrow fast path declined: %s", exc)
        return None


_TYPES = ("ids", "grouped_ids", "labels", "float", "int")


def _parse(pa: Any, pcsv: Any, data: bytes, delimiter: str, names: list[str], wanted: dict) -> Any:
    """The pyarrow table of the *wanted* columns of *data*, or ``None`` when a column has a
    null or an empty text field (the careful reader explains those).

    Raises:
        pyarrow.ArrowException, ValueError, OverflowError: as ``pyarrow.csv.read_csv`` (a row
            with another number of fields, a bad number).
    """
    types = dict(zip(_TYPES, (pa.string(), pa.string(), pa.string(), pa.float64(), pa.int64())))
    _, pc = arrow.load()
    table = pcsv.read_csv(
        pa.py_buffer(data),
        read_options=pcsv.ReadOptions(column_names=names, block_size=BLOCK_SIZE),
        parse_options=pcsv.ParseOptions(
            delimiter=delimiter,
            quote_char=False,
            double_quote=False,
            escape_char=False,
            newlines_in_values=False,
            ignore_empty_lines=True,
        ),
        convert_options=pcsv.ConvertOptions(
            column_types={names[i]: types[kind] for i, kind in wanted.items()},
            include_columns=[names[i] for i in sorted(wanted)],
            strings_can_be_null=False,
            quoted_strings_can_be_null=False,
            null_values=[],
        ),
    )
    # Every line has exactly n_columns - 1 delimiters (no double, leading or trailing one):
    # pyarrow refuses a row with another number of fields ("Expected 6 columns, got 7"), and
    # rows are lines because a carriage return not ending a line (where pyarrow would also end a
    # row) was refused before. No count over the whole file (0.3 s at 10M lines).
    for i, kind in wanted.items():
        column = table.column(names[i])
        if column.null_count:
            return None
        is_text = kind in ("ids", "grouped_ids", "labels") and len(column)
        if is_text and pc.min(pc.binary_length(column)).as_py() == 0:
            return None  # an empty field: let the careful reader explain
    return table


def _convert(
    holder: list[Any], names: list[str], wanted: dict[int, str], *, background_ids: bool
) -> dict[int, object]:
    """The columns of :func:`read_columns`'s value from the table in the one-item list
    *holder* (emptied), numbers first and ids last, each column dropped from the table once
    converted (its memory shrinks while the ids' codes are built); with *background_ids* (long
    files, two CPUs) the ids are factorised in threads."""
    table = holder.pop()
    out: dict[int, object] = {}
    if background_ids and table.num_rows >= BACKGROUND_MIN and usable_cpus() >= 2:
        for i in [i for i in sorted(wanted) if wanted[i] == "ids"]:
            out[i] = in_background(_id_codes, [table.column(names[i])])
            table = table.drop_columns([names[i]])
    for i in sorted(wanted, key=lambda i: wanted[i] in ("ids", "grouped_ids", "labels")):
        if i in out:
            continue
        kind = wanted[i]
        column = table.column(names[i]).combine_chunks()
        table = table.drop_columns([names[i]])
        if kind == "ids":
            holder, column = [column], None
            out[i] = _id_codes(holder)
        elif kind in ("grouped_ids", "labels"):
            out[i] = _grouped_codes(column) if kind == "grouped_ids" else None
            if out[i] is None:
                dictionary, codes = _factorize(column, by_keys=kind != "labels")
                uniques = arrow.to_numpy(dictionary)
                out[i] = (uniques.astype(object, copy=False), codes)
        else:
            out[i] = arrow.to_numpy(column)
        column = None
    return out
