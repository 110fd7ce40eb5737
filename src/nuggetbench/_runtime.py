"""The runtime: the few ways nuggetbench uses the machine to go faster, in one place.

- **Threads** (:func:`in_background`, :func:`usable_cpus`, :func:`idle_cpus`): numpy's and
  pyarrow's kernels release the GIL, so two of them run on two cores at once (a run file read
  while the judgments load; two halves of a long id column factorised). Plain
  :mod:`threading` (the import of :mod:`concurrent.futures` costs more than these few calls
  need), daemon threads (a caller that fails first does not wait for them).
- **Heap trimming** (:func:`trim_heap`): numpy frees a large temporary, but glibc keeps the
  pages when it lay in its heap (after a large block is freed glibc raises its mmap
  threshold), so the resident size keeps every stage's high-water mark (reading and
  evaluating 1M run lines: about 120 MB of free heap pages). ``malloc_trim`` returns them.
- **The allocator of the console process** (:func:`prefer_system_allocator`): pyarrow's
  default pool (mimalloc) keeps freed pages beyond ``release_unused()``; the console command
  (and only it: a library caller's process keeps its own choice) asks pyarrow for its system
  pool through pyarrow's documented ``ARROW_DEFAULT_MEMORY_POOL`` variable, before pyarrow is
  imported, unless the variable is set already. Evaluating 1M run lines peaked at 251-259 MB
  instead of 278-282 MB.

Library code calls these functions and nothing else of the kind: no import hook, no signal
handler, no allocator switch from library code.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = [
    "alongside",
    "idle_cpus",
    "in_background",
    "usable_cpus",
    "trim_heap",
    "prefer_system_allocator",
]

T = TypeVar("T")

_working = 1
"""Threads doing nuggetbench's work now: the caller's, plus each :func:`in_background` thread
while it runs, less each caller while it waits for one (see :func:`idle_cpus`)."""
_working_lock = threading.Lock()


def _count(change: int) -> None:
    global _working
    with _working_lock:
        _working += change


def idle_cpus() -> int:
    """Usable CPUs that none of nuggetbench's threads is working on (:func:`usable_cpus` less the
    threads counted in :data:`_working`; other threads of the process are not known): whether
    splitting a step in two would take a core from nothing else."""
    return max(0, usable_cpus() - _working)


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask where the platform has one), at
    least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def in_background(fn: Callable[..., T], *args: Any, **kwargs: Any) -> Callable[[], T]:
    """Start ``fn(*args, **kwargs)`` in a daemon thread; return a function that waits for it and
    returns its value or raises its exception (with its traceback).

    A caller that fails before asking does not wait: the thread ends with its work (or with
    the process)."""
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["value"] = fn(*args, **kwargs)
        except BaseException as exc:  # handed to the caller
            box["error"] = exc
        finally:
            _count(-1)

    thread = threading.Thread(
        target=work, name=f"nuggetbench-{getattr(fn, '__name__', 'work')}", daemon=True
    )
    _count(+1)
    try:
        thread.start()
    except BaseException:
        _count(-1)
        raise

    def result() -> T:
        if thread.is_alive():
            _count(-1)  # the caller waits: its core is free meanwhile
            try:
                thread.join()
            finally:
                _count(+1)
        if "error" in box:
            raise box.pop("error")
        return box.pop("value")

    return result


U = TypeVar("U")


def alongside(
    foreground: Callable[[], U],
    background: Callable[..., T],
    *args: Any,
    thread: bool = True,
    **kwargs: Any,
) -> tuple[U, T]:
    """``(foreground(), background(*args, **kwargs))``, the two at once when *thread* is true:
    *background* in a daemon thread (:func:`in_background`, named after it), *foreground* in
    the caller's. An error of *foreground* is raised first (without waiting for the thread),
    then *background*'s. Otherwise *foreground* runs first, then *background*. The C heap is
    trimmed after each (:func:`trim_heap`): one stage's freed temporaries go back before the
    next. The caller decides *thread* (its sizes, :func:`usable_cpus`).
    """
    waiter = in_background(background, *args, **kwargs) if thread else None
    done = foreground()
    trim_heap()
    value = waiter() if waiter is not None else background(*args, **kwargs)
    trim_heap()
    return done, value


_trim = None
_looked = False


def prefer_system_allocator() -> None:
    """In the console command's process: have pyarrow allocate through the C library's
    ``malloc`` (``ARROW_DEFAULT_MEMORY_POOL=system``, read by pyarrow when it first allocates),
    unless the variable names a pool already. Called by the console entry only; see the module
    doc."""
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")


def trim_heap() -> None:
    """Return the C heap's free pages to the system (glibc's ``malloc_trim``; elsewhere
    nothing)."""
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
