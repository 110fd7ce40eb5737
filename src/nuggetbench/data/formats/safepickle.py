"""A restricted unpickler for data pickles (BIRCO datasets and rank files).

Plain :func:`pickle.load` runs whatever callable a pickle names, so loading an untrusted pickle can
execute arbitrary code. :func:`safe_load` never calls :func:`pickle.load`: it uses a
:class:`pickle.Unpickler` whose ``find_class`` admits only

- builtin containers and scalars: ``dict``, ``list``, ``tuple``, ``set``, ``frozenset``, ``str``,
  ``bytes``, ``int``, ``float``, ``bool``, ``complex`` (and ``None``, which needs no global). These
  names resolve to *rebuilders*, never to the types themselves: a rebuilder only copies a value the
  pickle already holds (``set([..])``, ``bytes()``, ``complex(1.0, 2.0)``) and refuses anything that
  would allocate from a number (``bytes(200000000)``, ``str``/``list`` of a huge ``bytes``), so a
  68-byte pickle cannot ask for gigabytes;
- ``_codecs.encode`` with the ``latin1``/``latin-1`` codec only (how protocol 0-2 pickles spell
  ``bytes``);
- numpy *scalars* (``numpy.str_``, ``numpy.int64``, ``numpy.float32``...), which numpy pickles as
  ``numpy.core.multiarray.scalar(numpy.dtype(code, ...), raw_bytes)`` (numpy >= 2 writes
  ``numpy._core.multiarray.scalar``). The dtype is admitted only for plain numeric, boolean,
  string, bytes and datetime codes, and a scalar is built only from such a dtype (no object or
  structured dtypes, so no pointer is ever read from the file's bytes).

Every other global (a class, ``os.system``, ``builtins.eval``, ``numpy`` arrays...) is refused with
:class:`~nuggetbench.errors.FormatError` naming the file and the global, before anything is
called. Persistent ids are refused too.

:func:`to_builtin` converts the result to plain Python values with a bounded depth (a
self-referential or deeply nested pickle is a clear error, not ``RecursionError``) and, through
:func:`load_builtin`, a bounded number of values (shared references cannot expand a small file
into a huge structure). Error messages quote at most a short prefix of any value.

The BIRCO pickles (``test_set.pickle`` and the published rank files) reference exactly
``numpy.core.multiarray.scalar`` and ``numpy.dtype`` (query ids stored as ``numpy.str_``), checked
with :mod:`pickletools`.
"""

from __future__ import annotations

import _compat_pickle
import io
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from nuggetbench.data.source import read_source, short
from nuggetbench.errors import FormatError, InputError

__all__ = [
    "safe_load",
    "safe_loads",
    "load_builtin",
    "load_builtin_file",
    "to_builtin",
    "ALLOWED_GLOBALS",
    "MAX_DEPTH",
]

#: containers nested deeper than this are refused (BIRCO's deepest is 3)
MAX_DEPTH = 64

# dtype kinds whose scalars are plain values: bool, signed/unsigned int, float, complex,
# bytes, unicode, datetime, timedelta. Excluded: 'O' (object) and 'V' (void/structured).
_SAFE_KINDS = frozenset("biufcSUMm")


def _numpy_scalar_builder() -> Callable[..., Any]:
    try:  # numpy >= 2
        from numpy._core.multiarray import scalar  # type: ignore[attr-defined]
    except ImportError:  # pragma: no cover - numpy 1.x
        from numpy.core.multiarray import scalar  # type: ignore[no-redef]
    return scalar


def _safe_dtype(*args: Any) -> np.dtype:
    """``numpy.dtype(code, align, copy)`` restricted to plain scalar type codes."""
    if not args or not isinstance(args[0], str):
        raise pickle.UnpicklingError(
            f"numpy.dtype called with {short(args)}; only a type code string is allowed"
        )
    dtype = np.dtype(args[0])
    if (
        dtype.kind not in _SAFE_KINDS
        or dtype.fields is not None
        or dtype.subdtype is not None
        or dtype.hasobject
    ):
        raise pickle.UnpicklingError(f"numpy dtype {short(args[0])} is not a plain scalar type")
    return np.dtype(*args)


def _safe_scalar(dtype: Any, data: Any = None) -> Any:
    """``numpy.core.multiarray.scalar(dtype, bytes)`` for plain (non-object) dtypes only."""
    if not isinstance(dtype, np.dtype):
        raise pickle.UnpicklingError(f"numpy scalar needs a dtype, got {type(dtype).__name__}")
    # The dtype's state (BUILD) is set after _safe_dtype ran, so check it again here.
    if (
        dtype.kind not in _SAFE_KINDS
        or dtype.fields is not None
        or dtype.subdtype is not None
        or dtype.hasobject
    ):
        raise pickle.UnpicklingError(f"numpy scalar of dtype {dtype!r} is not allowed")
    if not isinstance(data, bytes) or len(data) != dtype.itemsize:
        raise pickle.UnpicklingError(
            f"numpy scalar of dtype {dtype!r} needs {dtype.itemsize} bytes of data"
        )
    return _numpy_scalar_builder()(dtype, data)


def _latin1_encode(text: Any, encoding: str = "utf-8", errors: str = "strict") -> bytes:
    """``_codecs.encode`` limited to latin-1 (protocol 0-2 pickles spell bytes this way)."""
    if not isinstance(text, str) or encoding.lower().replace("_", "-") not in {"latin1", "latin-1"}:
        raise pickle.UnpicklingError(
            f"_codecs.encode with encoding {short(encoding)} is not allowed"
        )
    return text.encode("latin-1", errors)


_SEQUENCES = (list, tuple)


def _refuse(name: str, args: tuple) -> Any:
    kinds = ", ".join(type(a).__name__ for a in args[:4])
    raise pickle.UnpicklingError(
        f"builtins.{name} called with ({kinds}); the restricted unpickler only rebuilds values "
        "the pickle holds (nothing is allocated from a number)"
    )


def _rebuild_container(kind: type) -> Callable[..., Any]:
    """``list``/``tuple``/``set``/``frozenset`` of a list or tuple the pickle holds, or empty."""

    def rebuild(*args: Any) -> Any:
        if not args:
            return kind()
        if len(args) == 1 and isinstance(args[0], _SEQUENCES + (set, frozenset)):
            return kind(args[0])
        return _refuse(kind.__name__, args)

    rebuild.__name__ = kind.__name__
    return rebuild


def _rebuild_dict(*args: Any) -> dict:
    if not args:
        return {}
    if len(args) == 1 and isinstance(args[0], dict):
        return dict(args[0])
    pairs = len(args) == 1 and isinstance(args[0], _SEQUENCES)
    if pairs and all(isinstance(p, _SEQUENCES) and len(p) == 2 for p in args[0]):
        return dict(args[0])
    return _refuse("dict", args)


def _rebuild_str(*args: Any) -> str:
    if not args:
        return ""
    if len(args) == 1 and isinstance(args[0], str):
        return args[0]
    return _refuse("str", args)


def _rebuild_bytes(*args: Any) -> bytes:
    if not args:
        return b""
    if len(args) == 1 and isinstance(args[0], bytes):
        return args[0]
    values = len(args) == 1 and isinstance(args[0], _SEQUENCES)  # byte values it holds
    if values and all(isinstance(b, int) and not isinstance(b, bool) for b in args[0]):
        try:
            return bytes(args[0])
        except ValueError:
            pass
    return _refuse("bytes", args)


def _rebuild_number(kind: type) -> Callable[..., Any]:
    """``int``/``float``/``bool``/``complex`` of numbers, or of a short decimal string."""

    def rebuild(*args: Any) -> Any:
        if not args:
            return kind()
        numbers = all(isinstance(a, (int, float, complex)) for a in args)
        text = len(args) <= 2 and isinstance(args[0], str) and len(args[0]) <= 100
        if (numbers and len(args) <= 2) or text:
            try:
                return kind(*args)
            except (TypeError, ValueError, OverflowError):
                pass
        return _refuse(kind.__name__, args)

    rebuild.__name__ = kind.__name__
    return rebuild


#: ``(module, name) -> object`` that the restricted unpickler hands out; nothing else resolves.
ALLOWED_GLOBALS: dict[tuple[str, str], Any] = {
    **{("builtins", t.__name__): _rebuild_container(t) for t in (list, tuple, set, frozenset)},
    **{("builtins", t.__name__): _rebuild_number(t) for t in (int, float, bool, complex)},
    ("builtins", "dict"): _rebuild_dict,
    ("builtins", "str"): _rebuild_str,
    ("builtins", "bytes"): _rebuild_bytes,
    ("_codecs", "encode"): _latin1_encode,
    ("numpy", "dtype"): _safe_dtype,
    ("numpy.core.multiarray", "scalar"): _safe_scalar,
    ("numpy._core.multiarray", "scalar"): _safe_scalar,
}


class _RestrictedUnpickler(pickle.Unpickler):
    def __init__(self, file: Any, *, source: str):
        super().__init__(file, fix_imports=True, encoding="latin1")
        self._source = source

    def find_class(self, module: str, name: str) -> Any:
        # Python 2 names (__builtin__.set...) as pickle's fix_imports maps them for protocol < 3
        if (module, name) in _compat_pickle.NAME_MAPPING:
            module, name = _compat_pickle.NAME_MAPPING[(module, name)]
        elif module in _compat_pickle.IMPORT_MAPPING:
            module = _compat_pickle.IMPORT_MAPPING[module]
        try:
            return ALLOWED_GLOBALS[(module, name)]
        except KeyError:
            raise FormatError(
                self._source,
                None,
                f"pickle refers to {module[:80]}.{name[:80]}, which the restricted unpickler does not allow "
                "(only builtin containers/scalars and numpy scalars are loaded; nothing was executed). "
                "Convert the file to JSON or to a pickle of plain dicts, lists and strings.",
            ) from None

    def persistent_load(self, pid: Any) -> Any:
        raise FormatError(self._source, None, "pickle uses persistent ids, which are not allowed")


def safe_loads(data: bytes, *, source: str = "<bytes>") -> Any:
    """Unpickle *data* with the restricted unpickler (see the module docstring).

    Args:
        data: the pickle's bytes.
        source: the name used in error messages.

    Returns:
        The unpickled object: builtin containers/scalars and numpy scalars only.

    Raises:
        FormatError: the pickle names a disallowed global (the global is named), uses persistent
            ids, or is malformed/truncated.
    """
    try:
        return _RestrictedUnpickler(io.BytesIO(data), source=source).load()
    except FormatError:
        raise
    except (
        pickle.UnpicklingError,
        EOFError,
        ValueError,
        TypeError,
        IndexError,
        KeyError,
        AttributeError,
        OverflowError,
        MemoryError,
        UnicodeDecodeError,
    ) as exc:
        raise FormatError(
            source, None, f"not a valid data pickle ({type(exc).__name__}: {_short_text(exc)})"
        ) from None


def _short_text(exc: BaseException, limit: int = 200) -> str:
    text = str(exc)
    return text if len(text) <= limit else text[:limit] + "..."


def safe_load(path: str | Path) -> Any:
    """Read a pickle file with the restricted unpickler; never calls plain :func:`pickle.load`.

    Args:
        path: the pickle file (read once, size-bounded: see :func:`.source.read_source`).

    Returns:
        The unpickled object (builtin containers/scalars and numpy scalars only).

    Raises:
        FormatError: the file names a disallowed global (named in the message, nothing executed),
            or is not a valid pickle.
        InputError: the file does not exist.
    """
    path = Path(path)
    if not path.exists():
        raise InputError(f"pickle file {path} does not exist")
    return safe_loads(read_source(path, what="pickle"), source=str(path))


def load_builtin(data: bytes, *, source: str = "<bytes>") -> Any:
    """:func:`safe_loads` then :func:`to_builtin`, bounded: at most ``MAX_DEPTH`` levels and at
    most ``2 * len(data) + 1000`` values (every value a pickle holds costs at least one byte, so
    only shared references could exceed it: a small file cannot expand into a huge structure).

    Raises:
        FormatError: as :func:`safe_loads`, or the bounds are exceeded (source named).
    """
    return to_builtin(
        safe_loads(data, source=source), source=source, max_items=2 * len(data) + 1000
    )


def load_builtin_file(path: str | Path) -> Any:
    """:func:`load_builtin` of a pickle file (read once, size-bounded).

    Raises:
        InputError: the file does not exist. FormatError: as :func:`load_builtin`.
    """
    path = Path(path)
    if not path.exists():
        raise InputError(f"pickle file {path} does not exist")
    return load_builtin(read_source(path, what="pickle"), source=str(path))


def to_builtin(
    value: Any,
    *,
    source: str | None = None,
    max_depth: int = MAX_DEPTH,
    max_items: int | None = None,
) -> Any:
    """Recursively turn numpy scalars into Python scalars (``numpy.str_`` -> ``str``...).

    Dicts, lists, tuples, sets and frozensets are rebuilt with converted members; other values
    are returned unchanged. A value met twice is converted once (shared references stay shared).

    Args:
        value: an unpickled value.
        source: the file, for errors.
        max_depth: containers nested deeper are refused (a self-referential value never ends).
        max_items: at most this many values are visited (``None``: no bound).

    Raises:
        FormatError: nesting deeper than *max_depth* (or a value containing itself), or more than
            *max_items* values.
    """
    memo: dict[int, tuple[Any, int]] = {}  # id -> (converted, values in its subtree)
    active: set[int] = set()
    seen = [0]

    def charge(n: int) -> None:
        seen[0] += n
        if max_items is not None and seen[0] > max_items:
            raise FormatError(
                source,
                None,
                f"the pickle expands to more than {max_items} values (shared references); "
                "write each value out, or convert the file to JSON",
            )

    def convert(v: Any, depth: int) -> Any:
        if isinstance(v, np.generic):
            charge(1)
            return v.item()
        if not isinstance(v, (dict, list, tuple, set, frozenset)):
            charge(1)
            return v
        key = id(v)
        if key in memo:  # shared: converted once, counted every time it is used
            out, size = memo[key]
            charge(size)
            return out
        if key in active or depth >= max_depth:
            raise FormatError(
                source,
                None,
                f"the pickle nests containers deeper than {max_depth} levels or a container "
                "contains itself; a data file holds plain nested dicts and lists",
            )
        active.add(key)
        before = seen[0]
        charge(1)
        if isinstance(v, dict):
            out = {convert(k, depth + 1): convert(x, depth + 1) for k, x in v.items()}
        elif isinstance(v, list):
            out = [convert(x, depth + 1) for x in v]
        elif isinstance(v, tuple):
            out = tuple(convert(x, depth + 1) for x in v)
        else:
            out = type(v)(convert(x, depth + 1) for x in v)
        active.discard(key)
        memo[key] = (out, seen[0] - before)
        return out

    return convert(value, 0)
