"""Handing freed heap memory back to the system between the stages of a large evaluation.

numpy frees a large temporary array, but glibc's allocator keeps the pages when the array lay in
its heap (after a large block has been freed, glibc raises its threshold for giving blocks their
own mapping, so later arrays of that size land in the heap). The resident size then keeps the
high-water mark of every stage: reading 1M run lines and evaluating them grew the process by
about 120 MB of free heap pages. :func:`trim_heap` returns them (glibc's ``malloc_trim``, a few
milliseconds); elsewhere it does nothing.

pyarrow allocates from its own pool (mimalloc by default), which keeps freed pages for reuse
beyond ``release_unused()``. The console command asks for pyarrow's system pool instead
(:func:`prefer_system_allocator`, applied when the fast paths first load pyarrow): the C
library's ``malloc``, whose free pages :func:`trim_heap` returns with numpy's. Evaluating 1M
run lines then peaked at 251-259 MB instead of 278-282 MB, 10M lines at 1.10-1.17 GB instead of
1.22-1.43 GB, in the same time. A library caller's process keeps pyarrow's default: its pool
is the process's choice, not nuggetbench's.
"""

from __future__ import annotations

import os
import sys

__all__ = ["trim_heap", "prefer_system_allocator", "system_allocator_preferred"]

_trim = None
_looked = False
_system_allocator = False


def prefer_system_allocator() -> None:
    """Have pyarrow allocate through the C library's ``malloc`` in this process (its
    ``system_memory_pool``), from the moment the fast paths load pyarrow
    (:func:`nuggetbench.data._pyarrow.load`), unless ``ARROW_DEFAULT_MEMORY_POOL`` names a pool.
    The console command calls it; see the module doc."""
    global _system_allocator
    _system_allocator = True


def system_allocator_preferred() -> bool:
    """Whether :func:`prefer_system_allocator` was called and ``ARROW_DEFAULT_MEMORY_POOL`` is
    not set."""
    return _system_allocator and not os.environ.get("ARROW_DEFAULT_MEMORY_POOL")


def trim_heap() -> None:
    """Return the C heap's free pages to the system (glibc only; otherwise nothing)."""
    global _trim, _looked
    if not _looked:
        _looked = True
        if sys.platform.startswith("linux"):
            import ctypes  # here: the console's --help imports this module

            try:
                _trim = ctypes.CDLL(None).malloc_trim
            except (AttributeError, OSError):  # musl, or no symbol table
                _trim = None
    if _trim is not None:
        _trim(0)
