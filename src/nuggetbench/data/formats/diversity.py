"""Nugget-level judgment files: ndeval/TREC diversity qrels and FreshStack queries files.

Two formats hold ``(query_id, nugget_id, doc_id) -> support`` judgments:

* **ndeval / TREC Web diversity qrels**: whitespace-separated lines ``topic subtopic docno
  judgment`` (the format of ``qrels.web.*.ndeval.txt``). Each ``(topic, subtopic)`` becomes a
  :class:`~nuggetbench.data.nugget_qrels.Nugget` with id ``"<topic>:<subtopic>"`` declared under its
  topic (the id is a unique key; the query is never inferred from it).
* **FreshStack queries files** (``queries.jsonl``): one JSON object per line with ``query_id``,
  ``query_title``, ``query_text``, ``answer_text`` and ``nuggets: [{_id, text,
  relevant_corpus_ids, non_relevant_corpus_ids}]`` (the rows of the Hugging Face dataset
  ``freshstack/queries-oct-2024``). Relevant documents get support 1, non-relevant ones 0.

:func:`load_nugget_qrels_file` sniffs the format and returns document-level :class:`Qrels`
(FreshStack's derivation: relevance = number of nuggets a document supports) carrying the nugget
judgments in ``qrels.nuggets``.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from nuggetbench.data.formats.freshstack import (
    freshstack_rows_to_nuggets,
    read_freshstack_queries,
    write_freshstack_queries,
)
from nuggetbench.data.lines import field_lines, read_text, stream_lines, text_lines
from nuggetbench.data.nugget_qrels import Nugget, NuggetQrels
from nuggetbench.data.qrels import Qrels
from nuggetbench.data.source import INT64_MAX, INT64_MIN, SPACES, parse_grade, short, split_fields
from nuggetbench.errors import DuplicateError, FormatError, InputError

log = logging.getLogger(__name__)

__all__ = [
    "read_ndeval_qrels",
    "read_freshstack_queries",
    "freshstack_rows_to_nuggets",
    "write_freshstack_queries",
    "load_nugget_qrels_file",
    "sniff_nugget_qrels",
]


def _subtopic_key(value: str) -> tuple[int, int | str]:
    """Sort subtopics numerically when they are integers (ndeval's order), else as strings."""
    try:
        return (0, int(value))
    except ValueError:
        return (1, value)


def read_ndeval_qrels(path: str | Path, *, name: str | None = None) -> NuggetQrels:
    """Read ndeval / TREC diversity qrels (``topic subtopic docno judgment`` per line).

    Lines starting with ``#`` and blank lines are skipped. Each ``(topic, subtopic)`` pair becomes a
    nugget ``"<topic>:<subtopic>"`` of query ``topic`` (metadata ``{"subtopic": subtopic}``); the
    nuggets of a topic are declared in subtopic order (numeric when the ids are integers, as
    ndeval indexes them), which fixes the order in which the diversity measures add up gains.
    Judgments keep their grade: ndeval itself clamps grades above 1 to 1 and rejects negative ones;
    the diversity measures count a nugget as supported when ``support >= rel`` (default 1), so
    grades above 1 behave as in ndeval and negative grades as judged-not-supported.

    Args:
        path: the qrels file.
        name: label (default: the file name).

    Returns:
        :class:`NuggetQrels` with every topic's subtopics declared.

    Raises:
        FormatError: a line does not have 4 columns or its judgment is not an integer
            (file, line and text named).
        DuplicateError: a document is judged twice for the same subtopic with different values
            (both line numbers named). Identical repeated lines are kept once.
    """
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: no such file")
    seen: dict[tuple[str, str, str], tuple[int, int]] = {}
    subtopics: dict[str, set[str]] = {}
    # one pass over the lines of a file read once (ids keep their bytes)
    for lineno, parts in field_lines(text_lines(read_text(path, what="qrels"))):
        if len(parts) != 4:
            raise FormatError(
                path,
                lineno,
                "expected 4 whitespace-separated columns "
                f"(topic subtopic docno judgment), found {len(parts)}: "
                f"{short(' '.join(parts), 120)}",
            )
        topic, sub, doc, grade_text = parts
        grade = parse_grade(grade_text)
        if grade is None or not INT64_MIN <= grade <= INT64_MAX:
            raise FormatError(
                path,
                lineno,
                f"judgment must be an integer in the 64-bit range, got {short(grade_text)}",
            )
        key = (topic, sub, doc)
        prev = seen.get(key)
        if prev is not None:
            if prev[0] != grade:
                raise DuplicateError(
                    f"{path}, line {lineno}: document {doc!r} is judged twice for subtopic {sub!r} of "
                    f"topic {topic!r} with different values ({prev[0]} at line {prev[1]}, {grade} here); "
                    "keep one judgment per (topic, subtopic, document)"
                )
            continue
        seen[key] = (grade, lineno)
        subtopics.setdefault(topic, set()).add(sub)
    nuggets = [
        Nugget(f"{t}:{s}", t, "", metadata={"subtopic": s})
        for t, subs in subtopics.items()
        for s in sorted(subs, key=_subtopic_key)
    ]
    q = [k[0] for k in seen]
    n = [f"{k[0]}:{k[1]}" for k in seen]
    d = [k[2] for k in seen]
    s = [v[0] for v in seen.values()]
    return NuggetQrels(nuggets, q, n, d, s, name=name or path.name, source=str(path))


def sniff_nugget_qrels(path: str | Path, *, max_lines: int = 200_000) -> str | None:
    """Tell whether a file holds nugget-level judgments, and in which format.

    Returns:
        ``"freshstack"`` when the first data line is a JSON object with ``nuggets`` or
        ``query_id`` (a FreshStack queries file; a JSON qrels file ``{qid: {doc: rel}}`` is not);
        ``"ndeval"`` for 4-column lines when the file name says so (``ndeval``, ``divers``,
        ``subtopic``) or when some (topic, document) pair occurs with two different values in the
        second column (one line per subtopic: ordinary TREC qrels judge a pair once);
        ``None`` otherwise (ordinary qrels, or diversity qrels that cannot be told apart from
        them: read those with :func:`read_ndeval_qrels` or ``load_nugget_qrels_file(path,
        fmt="ndeval")``).
    """
    path = Path(path)
    if _plain_document_qrels(path, max_lines):
        return None
    with contextlib.closing(stream_lines(path, what="qrels")) as lines:
        return _sniff_lines(path, lines, max_lines)


def _sniff_lines(path: Path, lines: Iterator[tuple[int, str]], max_lines: int) -> str | None:
    """:func:`sniff_nugget_qrels` of the numbered lines of a file that is not plain qrels."""
    seen: dict[tuple[str, str], str] = {}
    for count, line in lines:
        if not line.strip(SPACES) or line.startswith("#"):
            continue
        if not seen and line.lstrip(SPACES).startswith("{"):
            try:
                obj = json.loads(line)
            except json.JSONDecodeError:
                return None
            return (
                "freshstack"
                if isinstance(obj, dict) and ("nuggets" in obj or "query_id" in obj)
                else None
            )
        parts = split_fields(line)
        if len(parts) != 4:
            return None
        if not seen and any(hint in path.name.lower() for hint in ("ndeval", "divers", "subtopic")):
            return "ndeval"
        key = (parts[0], parts[2])
        other = seen.setdefault(key, parts[1])
        if other != parts[1]:
            return "ndeval"
        if count > max_lines:
            break
    return None


def _plain_document_qrels(path: Path, max_lines: int) -> bool:
    """The common case of :func:`sniff_nugget_qrels` in a few C-level scans: ``True`` when its
    first ``max_lines + 1`` lines are ASCII without ``\\x1c``-``\\x1f`` (so ``str.split`` and
    ``bytes.split`` cut the same fields), none is a comment, the first data line does not open a
    JSON object, and the second of every four whitespace-separated fields holds one value.

    Then the line-by-line sniff answers ``None``: it answers ``"ndeval"`` only on a (topic,
    document) pair with two second-column values among a prefix of 4-field lines, whose fields
    line up with every fourth field of the whole text, which here hold one value. ``False``
    means "ask it" (it decides every other case)."""
    if any(hint in path.name.lower() for hint in ("ndeval", "divers", "subtopic")):
        return False
    head = _head_lines(path, max_lines + 1)
    if not head.isascii() or head.lstrip().startswith(b"{"):
        return False
    if head.startswith(b"#") or b"\n#" in head:
        return False
    if any(bytes([c]) in head for c in range(0x1C, 0x20)):
        return False
    return _one_value_every_fourth_field(head)


def _head_lines(path: Path, n: int) -> bytes:
    """``b"".join(itertools.islice(open(path, "rb"), n))``, read in blocks (no object per line)."""
    chunks, found = [], 0
    with open(path, "rb") as fh:
        while found < n:
            chunk = fh.read(1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
            found += chunk.count(b"\n")
    data = b"".join(chunks)
    if found < n or n <= 0:
        return data if n > 0 else b""
    return data[: int(np.flatnonzero(np.frombuffer(data, np.uint8) == 10)[n - 1]) + 1]


_BYTES_SPACE = b" \t\n\r\x0b\x0c"
"""What ``bytes.split()`` splits at."""


def _one_value_every_fourth_field(text: bytes) -> bool:
    """``len(set(text.split()[1::4])) <= 1``, without a ``bytes`` object per field: the fields
    are the runs of bytes outside :data:`_BYTES_SPACE`, found and compared with numpy."""
    data = np.frombuffer(text, np.uint8)
    space = np.zeros(256, dtype=bool)
    space[list(_BYTES_SPACE)] = True
    inside = ~space[data]
    edge = np.diff(inside.astype(np.int8), prepend=np.int8(0), append=np.int8(0))
    starts, ends = np.flatnonzero(edge == 1)[1::4], np.flatnonzero(edge == -1)[1::4]
    if len(starts) <= 1:
        return True
    width = ends - starts
    if (width != width[0]).any():
        return False
    if width[0] > 64:  # pragma: no cover - a long second field: compare as bytes objects
        return len(set(text.split()[1::4])) <= 1
    first = data[starts[0] : ends[0]]
    return bool((data[starts[:, None] + np.arange(width[0])] == first).all())


def load_nugget_qrels_file(
    path: str | Path, *, name: str | None = None, mode: str = "count", fmt: str | None = None
) -> Qrels:
    """Read a nugget-judgment file (ndeval diversity qrels or a FreshStack queries file).

    Args:
        path: the file.
        fmt: ``"freshstack"`` or ``"ndeval"``; ``None`` sniffs it with :func:`sniff_nugget_qrels`
            (a file it cannot place is read as ndeval qrels).
        name: label (default: the file name).
        mode: how document relevance is derived, see :meth:`NuggetQrels.document_qrels`
            (``"count"``: the number of nuggets a document supports, FreshStack's rule).

    Returns:
        Document-level :class:`Qrels` whose ``nuggets`` attribute holds the nugget judgments;
        ``metadata`` records ``source`` and ``format``. For a FreshStack file, the queries (with
        answer text and nugget ids) are in ``metadata["queries"]``.

    Raises:
        InputError: the file does not exist; FormatError / DuplicateError as the readers.
    """
    path = Path(path)
    if not path.exists():
        raise InputError(f"qrels file {path} does not exist")
    if fmt is None:
        fmt = sniff_nugget_qrels(path) or "ndeval"
    if fmt not in ("freshstack", "ndeval"):
        raise InputError(f"unknown nugget qrels format {fmt!r}; use 'freshstack' or 'ndeval'")
    label = name or path.name
    meta: dict[str, Any] = {"source": str(path), "format": fmt}
    if fmt == "freshstack":
        queries, nuggets = read_freshstack_queries(path, name=label)
        meta["queries"] = queries
    else:
        nuggets = read_ndeval_qrels(path, name=label)
    qrels = nuggets.document_qrels(mode=mode, name=label)
    qrels.metadata.update(meta)
    return qrels
