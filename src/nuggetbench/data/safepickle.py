"""A restricted unpickler for data pickles (BIRCO datasets and rank files).

Plain :func:`pickle.load` runs whatever callable a pickle names, so loading an untrusted pickle can
execute arbitrary code. :func:`safe_load` never calls :func:`pickle.load`: it uses a
:class:`pickle.Unpickler` whose ``find_class`` admits only

- builtin containers and scalars: ``dict``, ``list``, ``tuple``, ``set``, ``frozenset``, ``str``,
  ``bytes``, ``int``, ``float``, ``bool``, ``complex`` (and ``None``, which needs no global);
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

from ..errors import FormatError, InputError

__all__ = ["safe_load", "safe_loads", "to_builtin", "ALLOWED_GLOBALS"]

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
            f"numpy.dtype called with {args!r}; only a type code string is allowed"
        )
    dtype = np.dtype(args[0])
    if (
        dtype.kind not in _SAFE_KINDS
        or dtype.fields is not None
        or dtype.subdtype is not None
        or dtype.hasobject
    ):
        raise pickle.UnpicklingError(f"numpy dtype {args[0]!r} is not a plain scalar type")
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
        raise pickle.UnpicklingError(f"_codecs.encode with encoding {encoding!r} is not allowed")
    return text.encode("latin-1", errors)


#: ``(module, name) -> object`` that the restricted unpickler hands out; nothing else resolves.
ALLOWED_GLOBALS: dict[tuple[str, str], Any] = {
    **{
        ("builtins", t.__name__): t
        for t in (dict, list, tuple, set, frozenset, str, bytes, int, float, bool, complex)
    },
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
                f"pickle refers to {module}.{name}, which the restricted unpickler does not allow "
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
            source, None, f"not a valid data pickle ({type(exc).__name__}: {exc})"
        ) from None


def safe_load(path: str | Path) -> Any:
    """Read a pickle file with the restricted unpickler; never calls plain :func:`pickle.load`.

    Args:
        path: the pickle file.

    Returns:
        The unpickled object (builtin containers/scalars and numpy scalars only).

    Raises:
        FormatError: the file names a disallowed global (named in the message, nothing executed),
            or is not a valid pickle.
        InputError: the file does not exist.
    """
    path = Path(path)
    if not path.is_file():
        raise InputError(f"pickle file {path} does not exist")
    return safe_loads(path.read_bytes(), source=str(path))


def to_builtin(value: Any) -> Any:
    """Recursively turn numpy scalars into Python scalars (``numpy.str_`` -> ``str``...).

    Dicts, lists, tuples, sets and frozensets are rebuilt with converted members; other values
    are returned unchanged.
    """
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, dict):
        return {to_builtin(k): to_builtin(v) for k, v in value.items()}
    if isinstance(value, list):
        return [to_builtin(v) for v in value]
    if isinstance(value, tuple):
        return tuple(to_builtin(v) for v in value)
    if isinstance(value, (set, frozenset)):
        return type(value)(to_builtin(v) for v in value)
    return value
