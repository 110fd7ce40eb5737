"""Handing freed heap memory back to the system between the stages of a large evaluation.

numpy frees a large temporary array, but glibc's allocator keeps the pages when the array lay in
its heap (after a large block has been freed, glibc raises its threshold for giving blocks their
own mapping, so later arrays of that size land in the heap). The resident size then keeps the
high-water mark of every stage: reading 1M run lines and evaluating them grew the process by
about 120 MB of free heap pages. :func:`trim_heap` returns them (glibc's ``malloc_trim``, a few
milliseconds); elsewhere it does nothing.
"""

from __future__ import annotations

import ctypes
import sys

__all__ = ["trim_heap"]

_trim = None
_looked = False


def trim_heap() -> None:
    """Return the C heap's free pages to the system (glibc only; otherwise nothing)."""
    global _trim, _looked
    if not _looked:
        _looked = True
        if sys.platform.startswith("linux"):
            try:
                _trim = ctypes.CDLL(None).malloc_trim
            except (AttributeError, OSError):  # musl, or no symbol table
                _trim = None
    if _trim is not None:
        _trim(0)
