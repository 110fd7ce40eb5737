"""The TREC run writer by columns with pyarrow (used by :func:`nuggetbench.data.formats.trec.write_run`).

A run file line is ``query_id Q0 doc_id rank score tag``. The Python writer builds one f-string
per line and calls ``repr`` once per score; this module builds the same bytes column-wise:

- ids are checked once per *distinct* id (empty, white space, NUL, a query id starting with ``#``,
  and the reserved code points ``U+10FF80..U+10FFFF`` that stand for bytes that were not valid
  UTF-8); when any is found, :func:`run_chunks` returns ``None`` and the caller uses the Python
  writer, which names the first bad id in file order, or restores the original bytes;
- scores are written as :func:`nuggetbench.data.formats.trec.format_score` writes them: a whole number
  below 1e15 in magnitude as an integer, anything else as Python's ``repr`` (the shortest string
  that reads back to the same double). pyarrow's float-to-string cast produces the same shortest
  digits; it differs from ``repr`` only in when it switches to exponent notation. So its text is
  used only for finite values in ``[1e-4, 1e16)`` whose text has no exponent (there ``repr`` is
  positional too, and a positional rendering of the same digits is unique); every other value
  goes through ``repr``. Every text is read back and compared with its double before it is used:
  a mismatch would be a wrong number, and raises (never seen; it guards a future pyarrow).

Lines are built ``chunk`` entries at a time, so memory stays bounded for large runs.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from nuggetbench.data import arrow

#: Runs with fewer entries are written by the Python writer (pyarrow is not worth importing).
MIN_ENTRIES = 20_000
#: Entries per block of lines built at once.
CHUNK = 1 << 20

_BAD_ID = r"^$|[ \t\r\n\x0b\x0c\x00]|[\x{10FF80}-\x{10FFFF}]"


def _any_bad(ids, *, query: bool) -> bool:
    """Whether any of *ids* (a pyarrow string array) cannot be written by this module."""
    _, pc = arrow.load()

    if not len(ids):
        return False
    bad = pc.match_substring_regex(ids, _BAD_ID)
    if query:
        bad = pc.or_(bad, pc.starts_with(ids, "#"))
    return bool(pc.any(bad).as_py())


def score_texts(scores: np.ndarray):
    """The text of each score, as :func:`~nuggetbench.data.formats.trec.format_score` writes it.

    Args:
        scores: float64, shape (n,), no NaN.

    Returns:
        A pyarrow string array of length n.

    Raises:
        AssertionError: a text does not read back to its score (a wrong number; never expected).
    """
    pa, pc = arrow.load()

    s = np.ascontiguousarray(scores, dtype=np.float64)
    finite = np.isfinite(s)
    size = np.abs(np.where(finite, s, 0.0))
    whole = finite & (size < 1e15) & (s == np.trunc(np.where(finite, s, 0.0)))
    texts = pc.cast(arrow.from_numpy(s), pa.string())
    if whole.any():
        ints = pc.cast(arrow.from_numpy(np.where(whole, s, 0.0).astype(np.int64)), pa.string())
        texts = pc.if_else(arrow.from_numpy(whole), ints, texts)
    plain = finite & (size >= 1e-4) & (size < 1e16)
    exponent = arrow.to_numpy(pc.match_substring(texts, "e"))
    slow = ~whole & (~plain | exponent)
    if slow.any():
        where = np.flatnonzero(slow)
        texts = pc.replace_with_mask(
            texts, arrow.from_numpy(slow), arrow.strings([repr(x) for x in s[where].tolist()])
        )
    back = arrow.to_numpy(pc.cast(texts, pa.float64()))
    if not np.array_equal(back, s):
        bad = int(np.flatnonzero(back != s)[0])
        raise AssertionError(
            f"score {s[bad]!r} would be written as {texts[bad].as_py()!r}, which reads back as "
            f"{back[bad]!r}; please report this"
        )
    return texts


def run_chunks(
    query_ids: np.ndarray,
    starts: np.ndarray,
    doc_uniques: np.ndarray,
    doc_codes: np.ndarray,
    scores: np.ndarray,
    tag: str,
    *,
    chunk: int = CHUNK,
) -> Iterator[memoryview] | None:
    """The UTF-8 bytes of a TREC run file, in blocks of *chunk* lines; ``None`` when an id or the
    tag needs the Python writer (see the module docstring).

    Args:
        query_ids: object (q,), sorted query ids; ``starts`` int (q+1,): query *i*'s entries at
            ``starts[i]:starts[i+1]``.
        doc_uniques: object (u,), distinct doc ids (may hold ids no entry uses);
            ``doc_codes`` int (n,) into them, in ranked order.
        scores: float64 (n,), in ranked order.
        tag: the last column (no white space).
    """
    pa, pc = arrow.load()  # lazy: pyarrow, without its pandas probe

    n = len(scores)
    starts = np.asarray(starts, dtype=np.int64)
    counts = np.diff(starts)
    codes = np.asarray(doc_codes, dtype=np.int64)
    qa = arrow.strings(np.asarray(query_ids, dtype=object))
    da = arrow.strings(np.asarray(doc_uniques, dtype=object))
    present = np.zeros(len(da), dtype=bool)
    present[codes] = True
    tag_array = arrow.strings([tag])
    if (
        _any_bad(qa, query=True)
        or _any_bad(pc.filter(da, arrow.from_numpy(present)), query=False)
        or _any_bad(tag_array, query=False)
    ):
        return None
    qcodes = np.repeat(np.arange(len(qa), dtype=np.int64), counts)
    ranks = np.arange(n, dtype=np.int64) - np.repeat(starts[:-1], counts) + 1

    def blocks() -> Iterator[memoryview]:
        for a in range(0, n, chunk):
            b = min(n, a + chunk)
            lines = pc.binary_join_element_wise(
                pc.take(qa, qcodes[a:b]),
                "Q0",
                pc.take(da, codes[a:b]),
                pc.cast(arrow.from_numpy(ranks[a:b]), pa.string()),
                score_texts(scores[a:b]),
                tag + "\n",
                " ",
            )
            offsets = np.frombuffer(lines.buffers()[1], dtype=np.int32)
            first, last = int(offsets[lines.offset]), int(offsets[lines.offset + len(lines)])
            yield memoryview(lines.buffers()[2])[first:last]

    return blocks()
