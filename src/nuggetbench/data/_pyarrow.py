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
from typing import Any

__all__ = ["load"]

_probed = False


class _NoPandas:
    """A meta path finder that refuses pandas (only during the probe)."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name == "pandas" or name.startswith("pandas."):
            raise ImportError("pandas is not needed by nuggetbench's pyarrow fast paths")
        return None


def load() -> tuple[Any, Any]:
    """``(pyarrow, pyarrow.compute)``, after pyarrow's pandas probe (see the module doc).

    Raises:
        ImportError: pyarrow is not installed.
    """
    global _probed
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    if not _probed:
        _probed = True
        if "pandas" not in sys.modules:
            blocker = _NoPandas()
            sys.meta_path.insert(0, blocker)
            try:
                pa.array(np.zeros(1, dtype=np.int64)).to_numpy()
            except ImportError:  # pragma: no cover - a pyarrow that raises instead of recording
                pass
            finally:
                sys.meta_path.remove(blocker)
    return pa, pc
