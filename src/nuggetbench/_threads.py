"""Work handed to a second thread: numpy's and pyarrow's kernels release the GIL, so two of them
run on two cores at once (reading a run file while the judgments load; factorising two halves
of a long id column).

Plain :mod:`threading` (no :mod:`concurrent.futures`: its import costs more than the few calls
here need), daemon threads (a caller that fails first does not wait for them).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["idle_cpus", "in_background", "usable_cpus"]

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
