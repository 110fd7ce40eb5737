"""pyarrow for the fast paths, without pandas.

pyarrow imports pandas (0.2-0.8 s here) the first time it converts between numpy and arrow
(``pa.array``, ``Array.to_numpy``, a numpy argument to a kernel), to recognise pandas objects.
The fast readers, look-ups and checks hand it numpy arrays only, so they convert through this
module instead: :func:`from_numpy` wraps a numpy array's memory in an arrow buffer,
:func:`strings` builds a string array from Python ``str`` values, :func:`to_numpy` views an
arrow array's buffer as numpy (strings through ``to_pylist``). None of them imports pandas and
none changes anything outside the arrays it is given: no import hook, no process-wide switch
(a thread that imports pandas meanwhile is never refused). pyarrow's own conversions
(``to_pandas``, ``from_pandas``) are untouched.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["load", "compute", "from_numpy", "strings", "to_numpy", "is_arrow"]


def is_arrow(values: Any) -> bool:
    """Whether *values* is a pyarrow array (told without importing pyarrow)."""
    return type(values).__module__.startswith("pyarrow")


_NUMERIC = {
    "int8": np.int8,
    "int16": np.int16,
    "int32": np.int32,
    "int64": np.int64,
    "uint8": np.uint8,
    "uint16": np.uint16,
    "uint32": np.uint32,
    "uint64": np.uint64,
    "float": np.float32,
    "double": np.float64,
}


def to_numpy(array: Any) -> np.ndarray:
    """The values of the pyarrow array (or chunked array) *array*, without nulls, as numpy.

    Numbers come as a read-only view of the arrow buffer (dtype of the arrow type), booleans as
    bool (n,), strings and binaries as object (n,) of ``str``/``bytes``; a dictionary array as
    its decoded values.

    Raises:
        ValueError: the array holds nulls, or its type is none of these.
    """
    pa, _ = load()
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    if array.null_count:
        raise ValueError("to_numpy: the array holds nulls (fill them first)")
    n, offset, kind = len(array), array.offset, array.type
    if pa.types.is_dictionary(kind):
        return to_numpy(array.dictionary)[to_numpy(array.indices)]
    dtype = _NUMERIC.get(str(kind))
    if dtype is not None:
        if not n:
            return np.zeros(0, dtype=dtype)
        return np.frombuffer(
            array.buffers()[1], dtype=dtype, count=n, offset=offset * np.dtype(dtype).itemsize
        )
    if pa.types.is_boolean(kind):
        if not n:
            return np.zeros(0, dtype=bool)
        bits = np.frombuffer(array.buffers()[1], dtype=np.uint8)
        return np.unpackbits(bits, count=offset + n, bitorder="little")[offset:].view(bool)
    if pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_binary(kind):
        out = np.empty(n, dtype=object)
        out[:] = array.to_pylist()
        return out
    raise ValueError(f"to_numpy: no conversion for arrow type {kind}")


def from_numpy(values: np.ndarray) -> Any:
    """*values* (numbers or bool (n,); object (n,) of ``str``) as a pyarrow array: numbers share
    the numpy memory (the array keeps *values* alive), booleans are packed to bits, ``str``
    values go through :func:`strings`.

    Raises:
        TypeError, UnicodeEncodeError: as :func:`strings`, for an object array.
        ValueError: a dtype with no arrow counterpart here.
    """
    pa, _ = load()
    values = np.asarray(values)
    if values.dtype == object or values.dtype.kind == "U":
        return strings(values)
    if values.dtype == bool:
        bits = np.packbits(values, bitorder="little")
        return pa.Array.from_buffers(pa.bool_(), len(values), [None, pa.py_buffer(bits)])
    if values.dtype.kind in "iuf":
        values = np.ascontiguousarray(values, dtype=values.dtype.newbyteorder("="))
        kind = pa.from_numpy_dtype(values.dtype)
        return pa.Array.from_buffers(kind, len(values), [None, pa.py_buffer(values)])
    raise ValueError(f"from_numpy: no conversion for dtype {values.dtype}")


def strings(values: Any) -> Any:
    """A pyarrow string array of *values* (a sequence or object array of ``str``), built from
    one UTF-8 buffer and its offsets.

    Raises:
        TypeError: a value is not a ``str``.
        UnicodeEncodeError: a value holds a lone surrogate (not UTF-8).
    """
    pa, _ = load()
    items = values.tolist() if isinstance(values, np.ndarray) else list(values)
    joined = "".join(items)  # TypeError for a value that is not a str
    if joined.isascii():
        data = joined.encode("ascii")
        lengths = np.fromiter(map(len, items), dtype=np.int64, count=len(items))
    else:
        encoded = [item.encode("utf-8") for item in items]
        data = b"".join(encoded)
        lengths = np.fromiter(map(len, encoded), dtype=np.int64, count=len(items))
    offsets = np.zeros(len(items) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    if len(data) < 2**31:
        kind, offsets = pa.string(), offsets.astype(np.int32)
    else:
        kind = pa.large_string()
    return pa.Array.from_buffers(
        kind, len(items), [None, pa.py_buffer(offsets), pa.py_buffer(data)]
    )


class _Compute:
    """``pyarrow.compute`` for the fast paths without importing it.

    Importing ``pyarrow.compute`` builds a Python wrapper for each of its ~300 kernels (50-90 ms
    here, 2-4% of a whole evaluation of 1M run lines). The kernels themselves live in the
    compiled ``pyarrow._compute``: a function called with arrays only (``pc.take(a, i)``,
    ``pc.dictionary_encode(a)``) goes straight to ``call_function`` with its default options, as
    the wrapper does; a call with keyword options (``pc.ascii_trim(a, characters=" ")``), and
    any name not in :data:`_PLAIN`, imports ``pyarrow.compute`` and calls its function.
    """

    def cast(self, values: Any, target_type: Any) -> Any:
        """``pyarrow.compute.cast(values, target_type)`` (a safe cast: binary to string checks
        UTF-8 and raises ``ArrowInvalid``)."""
        from pyarrow._compute import CastOptions, call_function

        return call_function("cast", _arrays([values]), CastOptions.safe(target_type))

    def ascii_trim(self, values: Any, characters: str) -> Any:
        """``pyarrow.compute.ascii_trim(values, characters=characters)``."""
        from pyarrow._compute import TrimOptions, call_function

        return call_function("ascii_trim", _arrays([values]), TrimOptions(characters))

    def index_in(self, values: Any, value_set: Any) -> Any:
        """``pyarrow.compute.index_in(values, value_set=value_set)`` (nulls where absent)."""
        from pyarrow._compute import SetLookupOptions, call_function

        return call_function("index_in", _arrays([values]), SetLookupOptions(*_arrays([value_set])))

    def is_in(self, values: Any, value_set: Any) -> Any:
        """``pyarrow.compute.is_in(values, value_set=value_set)``."""
        from pyarrow._compute import SetLookupOptions, call_function

        return call_function("is_in", _arrays([values]), SetLookupOptions(*_arrays([value_set])))

    def fill_null(self, values: Any, fill_value: Any) -> Any:
        """``values.fill_null(fill_value)``: nulls replaced by *fill_value* (*values* numeric)."""
        import pyarrow as pa
        from pyarrow._compute import call_function

        numbers = np.array([fill_value], dtype=_NUMERIC[str(values.type)])  # no pa.scalar: pandas
        scalar = pa.Array.from_buffers(values.type, 1, [None, pa.py_buffer(numbers)])[0]
        return call_function("coalesce", [values, scalar])

    def __getattr__(self, name: str) -> Any:
        kernel = _PLAIN.get(name)
        if kernel is None:
            import pyarrow.compute as pc

            return getattr(pc, name)
        import pyarrow as pa
        from pyarrow._compute import call_function

        data = (pa.Array, pa.ChunkedArray, pa.Scalar, np.ndarray, str)  # see _arrays

        def call(*args: Any, **kwargs: Any) -> Any:
            if kwargs or not all(isinstance(a, data) for a in args):  # options: the wrapper
                import pyarrow.compute as pc

                return getattr(pc, name)(*_arrays(args), **kwargs)
            return call_function(kernel, _arrays(args))

        call.__name__ = name
        setattr(self, name, call)  # found once
        return call


_PLAIN = {
    name: name
    for name in (
        "all",
        "any",
        "ascii_lower",
        "ascii_upper",
        "binary_join_element_wise",
        "binary_length",
        "dictionary_encode",
        "equal",
        "filter",
        "greater",
        "if_else",
        "invert",
        "less",
        "max",
        "min",
        "not_equal",
        "string_is_ascii",
        "sum",
        "take",
        "unique",
        "utf8_length",
    )
}
_PLAIN["or_"] = "or"
_PLAIN["and_"] = "and"

compute = _Compute()
"""The stand-in for ``pyarrow.compute`` that :func:`load` returns."""


def _arrays(args: Any) -> list[Any]:
    """*args* with each numpy array made a pyarrow array by :func:`from_numpy` and each ``str`` a
    string scalar (a kernel given either converts it through ``pa.array``/``pa.scalar``, which
    import pandas)."""
    return [
        from_numpy(a) if isinstance(a, np.ndarray) else strings([a])[0] if isinstance(a, str) else a
        for a in args
    ]


def load() -> tuple[Any, Any]:
    """``(pyarrow, compute)``: *compute* answers as ``pyarrow.compute`` does (:class:`_Compute`;
    array methods such as ``Array.take`` import ``pyarrow.compute``: call
    ``compute.take(array, indices)`` instead).

    Raises:
        ImportError: pyarrow is not installed.
    """
    import pyarrow as pa
    import pyarrow._compute  # noqa: F401 - the kernels (ImportError here when pyarrow is broken)

    return pa, compute
