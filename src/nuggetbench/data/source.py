"""Reading an input file once, as bytes: pipes, FIFOs, gzip, byte-order marks, ids as bytes.

Every reader of runs and judgments takes its bytes from :func:`read_source`, so that

- a path is opened **once** and read from a stream: ``<(cat run)`` (``/dev/fd/63``), a named FIFO
  or stdin can be sniffed and parsed without a second open (a second open of a pipe sees only
  what the first left, or blocks forever on a FIFO);
- gzip is recognised by its magic bytes (or a ``.gz`` suffix) and a truncated or bogus gzip file
  is a :class:`~nuggetbench.errors.FormatError` naming the file, never ``EOFError`` (which click
  reports as "Aborted!") or ``BadGzipFile``;
- a UTF-8 byte-order mark at the start is dropped (it would otherwise glue itself to the first id);
- the file's size is bounded (:data:`MAX_BYTES`, overridable by ``NUGGETBENCH_MAX_INPUT_BYTES``), so
  a decompression bomb cannot exhaust memory.

Ids are bytes to trec_eval. :func:`decode_id_text` decodes UTF-8 and maps each byte ``0xXX`` that is
not valid UTF-8 to the private-use code point ``U+10FFXX`` (``b"caf\\xe9"`` -> ``"caf\\U0010ffe9"``,
``b"caf\\xe8"`` -> ``"caf\\U0010ffe8"``): two different byte strings never decode to the same
``str``, the result is valid Unicode (pandas, JSON and the console handle it, which lone surrogates
would break), and :func:`encode_id_text` gives the original bytes back when a file is written. The
128 code points ``U+10FF80..U+10FFFF`` are reserved for this: an input holding one of them as valid
UTF-8 is refused (:func:`decode_id_text` raises), so the mapping stays one-to-one.
"""

from __future__ import annotations

import codecs
import gzip
import os
import re
import stat
import zlib
from decimal import Decimal, InvalidOperation
from pathlib import Path

from nuggetbench.errors import FormatError, InputError

__all__ = [
    "BOM",
    "ERRORS",
    "check_reserved",
    "MAX_BYTES",
    "SPACES",
    "split_fields",
    "parse_grade",
    "decode_id_text",
    "encode_id_text",
    "read_source",
    "short",
    "strip_bom",
]

BOM = b"\xef\xbb\xbf"
GZIP_MAGIC = b"\x1f\x8b"
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
#: field separators of TREC-style lines, as C's isspace in trec_eval's sscanf (lines end at "\n")
SPACES = " \t\r\x0b\x0c"
_FIELDS = re.compile(f"[{SPACES}]+")
#: the largest input (after decompression) a reader accepts: 16 GiB unless the environment says
MAX_BYTES = 16 << 30


def _max_bytes() -> int:
    value = os.environ.get("NUGGETBENCH_MAX_INPUT_BYTES")
    if not value:
        return MAX_BYTES
    try:
        return max(int(value), 1)
    except ValueError:
        raise InputError(
            f"NUGGETBENCH_MAX_INPUT_BYTES must be a number of bytes, got {short(value)}"
        ) from None


def short(value: object, limit: int = 60) -> str:
    """``repr`` of *value* cut to at most *limit* characters (never builds a huge string).

    Strings and bytes are sliced before ``repr`` is taken, so quoting a 2 GB id costs nothing. A
    string holding bytes that were not valid UTF-8 (see :func:`decode_id_text`) is shown as the
    bytes it was read from (``b'caf\\xe9'``).
    """
    if isinstance(value, str) and any(ch >= _FIRST_ESCAPE for ch in value[:limit]):
        return repr(encode_id_text(value[:limit])) + (
            f"... ({len(value)} long)" if len(value) > limit else ""
        )
    if isinstance(value, (str, bytes, bytearray)) and len(value) > limit:
        return repr(value[:limit]) + f"... ({len(value)} long)"
    if isinstance(value, (list, tuple, set, frozenset, dict)) and len(value) > 8:
        return f"<{type(value).__name__} of {len(value)} items>"
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def split_fields(line: str) -> list[str]:
    """The whitespace-separated fields of one line, split as trec_eval does (ASCII white space
    only: an id may hold any other character, ``\\x1c`` or a no-break space included)."""
    line = line.strip(SPACES)
    return _FIELDS.split(line) if line else []


def strip_bom(data: bytes) -> bytes:
    """*data* without a leading UTF-8 byte-order mark."""
    return data[len(BOM) :] if data.startswith(BOM) else data


_RESERVED = re.compile(b"\xf4\x8f[\xbe\xbf][\x80-\xbf]")  # UTF-8 of U+10FF80..U+10FFFF
_ESCAPE_BASE = 0x10FF00
_FIRST_ESCAPE = chr(_ESCAPE_BASE + 0x80)
ERRORS = "nuggetbench-bytes"


def _escape_bytes(exc: UnicodeError) -> tuple[str, int]:
    if not isinstance(exc, UnicodeDecodeError):
        raise exc
    bad = exc.object[exc.start : exc.end]
    return "".join(chr(_ESCAPE_BASE + b) for b in bad), exc.end


codecs.register_error(ERRORS, _escape_bytes)


def decode_id_text(data: bytes, *, path: str | Path | None = None) -> str:
    """Decode file bytes as UTF-8; a byte ``0xXX`` that is not valid UTF-8 becomes ``U+10FFXX``.

    Raises:
        FormatError: *data* holds one of the reserved code points ``U+10FF80..U+10FFFF`` as valid
            UTF-8 (it could not be told apart from an undecodable byte; the line is named).
    """
    check_reserved(data, path)
    return data.decode("utf-8", errors=ERRORS)


def check_reserved(data: bytes, path: str | Path | None = None) -> None:
    """Raise :class:`FormatError` when *data* holds a reserved code point (see
    :func:`decode_id_text`) as valid UTF-8; a file without one passes (one regex scan)."""
    # b"\xf4" alone is a memchr (fast); the two-byte search is slow on large files
    found = _RESERVED.search(data) if b"\xf4" in data and b"\xf4\x8f" in data else None
    if found is not None:
        line = data.count(b"\n", 0, found.start()) + 1
        raise FormatError(
            path,
            line,
            f"holds the code point U+{ord(found.group().decode()):X}, which nuggetbench reserves for "
            "bytes that are not valid UTF-8; re-encode the file",
        )


def _unescape(match: re.Match) -> bytes:
    return bytes([ord(match.group().decode()) - _ESCAPE_BASE])


def encode_id_text(text: str) -> bytes:
    """The inverse of :func:`decode_id_text`: the original bytes of a decoded id or file."""
    data = text.encode("utf-8")
    return _RESERVED.sub(_unescape, data) if b"\xf4\x8f" in data else data


def _read_limited(fh, path: Path, limit: int, size: int = 0) -> bytes:
    """Read *fh* to its end, at most *limit* bytes; *size* (a regular file's size) lets a file be
    read in one call, without joining chunks (a copy of the whole content)."""
    chunks: list[bytes] = []
    total = 0
    first = size + 1 if size > 0 else 1 << 24
    while True:
        chunk = fh.read(min(first if not chunks else 1 << 24, limit + 1 - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
        if total > limit:
            raise FormatError(
                path,
                None,
                f"the input is larger than {limit} bytes (after decompression); set "
                "NUGGETBENCH_MAX_INPUT_BYTES to read larger files",
            )
    return b"".join(chunks)


def _gunzip(raw: bytes, path: Path, limit: int) -> bytes:
    import io

    try:
        with gzip.GzipFile(fileobj=io.BytesIO(raw), mode="rb") as fh:
            return _read_limited(fh, path, limit)
    except EOFError:
        raise FormatError(
            path,
            None,
            "the gzip file is truncated (it ends before its compressed stream does); "
            "download or write it again",
        ) from None
    except (gzip.BadGzipFile, zlib.error, OSError) as exc:
        raise FormatError(
            path,
            None,
            f"not a valid gzip file ({exc}); decompress it or give it a name without '.gz'",
        ) from None


def read_source(path: str | Path, *, what: str = "input") -> bytes:
    """All bytes of *path*, read once from a stream; gzip decompressed, a UTF-8 BOM dropped.

    Args:
        path: a regular file, ``.gz`` file, FIFO or ``/dev/fd/N`` pipe.
        what: the file's role, for the "does not exist" message (``"run"``, ``"qrels"``...).

    Returns:
        The content (decompressed when it starts with the gzip magic bytes or the name ends in
        ``.gz``), without a leading UTF-8 byte-order mark.

    Raises:
        InputError: the path does not exist or is a folder.
        FormatError: a truncated or bogus gzip file, or an input over the size bound (the file is
            named, with what to do).
    """
    path = Path(path)
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise InputError(f"{what} file {path} does not exist") from None
    except OSError as exc:
        raise InputError(f"{what} file {path} cannot be read: {exc.strerror}") from None
    if stat.S_ISDIR(mode):
        raise InputError(f"{what} file {path} is a folder; give the file inside it")
    limit = _max_bytes()
    with open(path, "rb") as fh:
        raw = _read_limited(
            fh, path, limit, os.fstat(fh.fileno()).st_size if stat.S_ISREG(mode) else 0
        )
    if raw.startswith(GZIP_MAGIC) or (path.suffix == ".gz" and raw):
        raw = _gunzip(raw, path, limit)
    return strip_bom(raw)


def parse_grade(text: str) -> int | None:
    """The exact integer a grade string spells (``"3"``, ``"-1"``, ``"1.0"``, ``"2e1"``), or ``None``.

    ``None`` when it is not a finite integral number; the value may lie outside the 64-bit range
    (the caller checks). Underscores (which :func:`int` accepts) are refused.
    """
    text = text.strip()
    if not text or "_" in text:
        return None
    try:
        return int(text)
    except ValueError:
        pass
    try:
        value = Decimal(text)
    except InvalidOperation:
        return None
    if not value.is_finite():
        return None
    if value.adjusted() > 40:  # far outside int64; never expand 1e999999999
        return INT64_MAX + 1 if value > 0 else INT64_MIN - 1
    if value != value.to_integral_value():
        return None
    return int(value)
