"""JSON lines: the package's one line-numbered reader and its atomic writer.

Every JSONL file nuggetbench reads (BEIR queries, FreshStack queries, calibration labels, hub
records, cached chunks, the builder's stages) goes through :func:`iter_jsonl`, so a damaged line is
always reported with its file and line number.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from nuggetbench._atomic import atomic_write
from nuggetbench.errors import FormatError

__all__ = ["iter_jsonl", "write_jsonl"]


def write_jsonl(path: str | Path, rows: Iterable[Any]) -> int:
    """Write *rows* as JSON lines (UTF-8, not ASCII-escaped) atomically; returns the count."""
    n = 0
    with atomic_write(path) as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
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
