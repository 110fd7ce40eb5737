"""JSON lines: the package's one line-numbered reader and its atomic writer.

Every JSONL file nuggetbench reads (BEIR queries, FreshStack queries, calibration labels, hub
records, cached chunks, the builder's stages) goes through :func:`iter_jsonl`, so a damaged line is
always reported with its file and line number.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from nuggetbench._atomic import atomic_write
from nuggetbench.errors import FormatError

__all__ = ["finite", "iter_jsonl", "json_text", "write_jsonl"]

#: What a ``null`` standing for an undefined number means (``json_text(..., note=True)``).
NULL_NOTE = (
    "{n} value{s} null: a number that is undefined (NaN) or infinite; JSON has no NaN or "
    "Infinity, so they are never written"
)


def finite(value: Any) -> tuple[Any, int]:
    """*value* with every NaN or infinite float (Python's or numpy's, in dicts, lists and
    tuples at any depth) replaced by ``None``, and how many were replaced. Other values are
    returned as they are (numpy scalars as Python numbers)."""
    count = 0

    def clean(v: Any) -> Any:
        nonlocal count
        if isinstance(v, float) or type(v).__module__ == "numpy" and hasattr(v, "dtype"):
            if getattr(v, "ndim", 0):
                return [clean(x) for x in v.tolist()]
            v = v.item() if hasattr(v, "item") else v
            if isinstance(v, float) and not math.isfinite(v):
                count += 1
                return None
            return v
        if isinstance(v, dict):
            return {k: clean(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [clean(x) for x in v]
        return v

    return clean(value), count


def json_text(value: Any, *, note: bool = False, **kwargs: Any) -> str:
    """``json.dumps(value, **kwargs)`` that never writes NaN or Infinity (not JSON): they become
    ``null`` (:func:`finite`). With *note* and a dict *value*, a ``null_values`` entry says how
    many there are and what they mean (callers that know the reason put it beside the value)."""
    cleaned, n = finite(value)
    if note and n and isinstance(cleaned, dict) and "null_values" not in cleaned:
        cleaned["null_values"] = NULL_NOTE.format(n=n, s=" is" if n == 1 else "s are")
    return json.dumps(cleaned, allow_nan=False, **kwargs)


def write_jsonl(path: str | Path, rows: Iterable[Any]) -> int:
    """Write *rows* as JSON lines (UTF-8, not ASCII-escaped) atomically; returns the count. A
    NaN or infinite number is written ``null`` (:func:`json_text`)."""
    n = 0
    with atomic_write(path) as fh:
        for row in rows:
            fh.write(json_text(row, ensure_ascii=False) + "\n")
            n += 1
    return n


def iter_jsonl(
    path: str | Path,
    *,
    hint: str = "",
    lines: Iterable[str] | None = None,
    encoding: str = "utf-8-sig",
) -> Iterator[tuple[int, Any]]:
    """``(line number, parsed value)`` for each line of a JSONL file (1-based; blank lines
    skipped; a UTF-8 byte-order mark at the start dropped).

    Args:
        path: the file (named in errors).
        hint: appended to the error message (what to do).
        lines: the file's lines when the caller has opened it already (a ``.gz``); default: the
            file is opened as UTF-8.
        encoding: the encoding when *lines* is not given.

    Raises:
        FormatError: a line is not valid JSON (file, line and the parser's message, then *hint*).
    """
    if lines is None:
        with open(path, "rb") as fh:
            yield from iter_jsonl(path, hint=hint, lines=_decoded(fh, path, encoding))
        return
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            yield lineno, json.loads(line)
        except json.JSONDecodeError as exc:
            message = f"not valid JSON ({exc.msg})" + (f"; {hint}" if hint else "")
            raise FormatError(path, lineno, message) from None
        except RecursionError:
            raise FormatError(path, lineno, "the JSON is nested too deeply") from None


def _decoded(raw_lines: Iterable[bytes], path: str | Path, encoding: str) -> Iterator[str]:
    """Decode each line strictly; a line that is not valid in *encoding* is a FormatError."""
    for lineno, raw in enumerate(raw_lines, start=1):
        if lineno == 1 and encoding.lower().replace("_", "-") == "utf-8-sig":
            raw = raw.removeprefix(b"\xef\xbb\xbf")
        try:
            yield raw.decode(
                "utf-8" if encoding.lower().replace("_", "-") == "utf-8-sig" else encoding
            )
        except UnicodeDecodeError as exc:
            raise FormatError(
                path,
                lineno,
                f"not valid {encoding} ({exc.reason} at byte {exc.start}); re-encode the file",
            ) from None
