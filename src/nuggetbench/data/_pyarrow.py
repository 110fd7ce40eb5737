"""pyarrow for the fast paths, without the pandas import that pyarrow's first conversion triggers.

pyarrow probes for pandas (``import pandas``, 0.2-0.8 s here) on its first ``pa.array`` or
``to_numpy`` call, to recognise pandas objects. The fast readers, look-ups and checks hand it
numpy arrays only, so :func:`load` runs that probe once with ``pandas`` made unimportable: pyarrow
then records "no pandas" for its array-likeness tests. Explicit conversions (``Table.to_pandas``,
``Table.from_pandas``, ``pa.array(series)``) still work: pyarrow imports pandas when a conversion
needs it (``tests/test_fast_paths.py`` checks this). When pandas is already imported, nothing is
blocked.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

import numpy as np

from .._memory import system_allocator_preferred

__all__ = ["load"]

_probed = False
_probe_lock = threading.Lock()


class _NoPandas:
    """A meta path finder that refuses pandas (only during the probe)."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name == "pandas" or name.startswith("pandas."):
            raise ImportError("pandas is not needed by nuggetbench's pyarrow fast paths")
        return None


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

        return call_function("cast", [values], CastOptions.safe(target_type))

    def ascii_trim(self, values: Any, characters: str) -> Any:
        """``pyarrow.compute.ascii_trim(values, characters=characters)``."""
        from pyarrow._compute import TrimOptions, call_function

        return call_function("ascii_trim", [values], TrimOptions(characters))

    def index_in(self, values: Any, value_set: Any) -> Any:
        """``pyarrow.compute.index_in(values, value_set=value_set)`` (nulls where absent)."""
        from pyarrow._compute import SetLookupOptions, call_function

        return call_function("index_in", [values], SetLookupOptions(value_set))

    def is_in(self, values: Any, value_set: Any) -> Any:
        """``pyarrow.compute.is_in(values, value_set=value_set)``."""
        from pyarrow._compute import SetLookupOptions, call_function

        return call_function("is_in", [values], SetLookupOptions(value_set))

    def fill_null(self, values: Any, fill_value: Any) -> Any:
        """``values.fill_null(fill_value)``: nulls replaced by *fill_value* (of the array's type)."""
        import pyarrow as pa
        from pyarrow._compute import call_function

        return call_function("coalesce", [values, pa.scalar(fill_value, type=values.type)])

    def __getattr__(self, name: str) -> Any:
        kernel = _PLAIN.get(name)
        if kernel is None:
            import pyarrow.compute as pc

            return getattr(pc, name)
        import pyarrow as pa
        from pyarrow._compute import call_function

        data = (pa.Array, pa.ChunkedArray, pa.Scalar, np.ndarray)

        def call(*args: Any, **kwargs: Any) -> Any:
            if kwargs or not all(isinstance(a, data) for a in args):  # options: the wrapper
                import pyarrow.compute as pc

                return getattr(pc, name)(*args, **kwargs)
            return call_function(kernel, list(args))

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


def load() -> tuple[Any, Any]:
    """``(pyarrow, compute)``, after pyarrow's pandas probe (see the module doc): *compute*
    answers as ``pyarrow.compute`` does (:class:`_Compute`; array methods such as
    ``Array.take`` import ``pyarrow.compute``: call ``compute.take(array, indices)`` instead).
    In the console command's process pyarrow's default pool becomes its system pool the first
    time (:func:`nuggetbench._memory.prefer_system_allocator`).

    Raises:
        ImportError: pyarrow is not installed.
    """
    global _probed
    import pyarrow as pa
    import pyarrow._compute  # noqa: F401 - the kernels (ImportError here when pyarrow is broken)

    if not _probed:
        with _probe_lock:  # two readers may start at once (evaluate reads qrels and run so)
            if not _probed:
                if "pandas" not in sys.modules:
                    blocker = _NoPandas()
                    sys.meta_path.insert(0, blocker)
                    try:
                        pa.array(np.zeros(1, dtype=np.int64)).to_numpy()
                    except ImportError:  # pragma: no cover - a pyarrow that raises instead
                        pass
                    finally:
                        sys.meta_path.remove(blocker)
                if system_allocator_preferred():  # the console command's process: see _memory
                    pa.set_memory_pool(pa.system_memory_pool())
                _probed = True  # only now may another thread convert
    return pa, compute
