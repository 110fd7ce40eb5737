"""The runtime: the few ways nuggetbench uses the machine to go faster, in one place.

- **Threads** (:func:`in_background`, :func:`usable_cpus`, :func:`idle_cpus`): numpy's and
  pyarrow's kernels release the GIL, so two of them run on two cores at once (a run file read
  while the judgments load; two halves of a long id column factorised). Plain
  :mod:`threading` (the import of :mod:`concurrent.futures` costs more than these few calls
  need), daemon threads (a caller that fails first does not wait for them).
- **Processes** (:func:`process_map`): work that is Python code under the GIL (tokenizing a
  corpus for BM25) runs in worker processes: fresh interpreters (``sys.executable -c``) fed by
  pipes, so nothing of the caller's threads, locks or memory is copied (no ``fork``), no
  process-wide start method is set, and, unlike ``multiprocessing``'s ``spawn``, the caller's
  ``__main__`` script is not run again in each worker (a script needs no
  ``if __name__ == "__main__":`` guard).
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

import contextlib
import os
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

__all__ = [
    "alongside",
    "idle_cpus",
    "in_background",
    "process_map",
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


_BOOT = (
    "import pickle, sys\n"
    "sys.path[:] = pickle.load(sys.stdin.buffer)\n"
    "from nuggetbench._runtime import _serve\n"
    "_serve()\n"
)


def process_map(
    target: str, args: tuple, items: Iterable[Any], workers: int, *, ahead: int = 2
) -> Iterator[Any]:
    """``fn(item)`` for each of *items*, in order, computed in *workers* worker processes, where
    ``fn = factory(*args)`` is made once per worker from *target* (``"module:factory"``, a
    module-level function; *args*, the items and the results are pickled). Item *i* goes to
    worker ``i % workers``; at most ``ahead * workers`` items are in flight, so the items held
    at once are bounded. The workers end with the generator (exhausted, closed or failed).

    Raises:
        ChildProcessError: a worker died (its last standard-error lines are in the message).
        RuntimeError: ``fn`` raised in a worker (its traceback is in the message).
    """
    import queue
    import subprocess
    import tempfile

    procs: list[Any] = []
    feeds: list[queue.Queue] = []
    finished = False
    try:
        for _ in range(workers):
            err = tempfile.TemporaryFile()  # noqa: SIM115 - closed with its worker, below
            proc = subprocess.Popen(
                [sys.executable, "-c", _BOOT],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err,
            )
            proc.err = err  # type: ignore[attr-defined]
            procs.append(proc)
            feed: queue.Queue = queue.Queue()
            feed.put(list(sys.path))
            feed.put((target, args))
            feeds.append(feed)
            threading.Thread(target=_feed, args=(proc.stdin, feed), daemon=True).start()
        sent = received = 0
        for item in items:
            feeds[sent % workers].put(item)
            sent += 1
            if sent - received >= ahead * workers:
                yield _receive(procs[received % workers])
                received += 1
        while received < sent:
            yield _receive(procs[received % workers])
            received += 1
        finished = True
    finally:
        for feed in feeds:
            feed.put(None)
        for proc in procs:
            if not finished:  # a worker may be blocked writing a result nobody will read
                proc.kill()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            proc.stdout.close()
            proc.err.close()


def _feed(pipe: Any, feed: Any) -> None:
    """A feeder thread: pickles what *feed* gives into a worker's standard input (``None``:
    closes it); ends quietly when the worker is gone."""
    import pickle

    try:
        while True:
            item = feed.get()
            if item is None:
                break
            pickle.dump(item, pipe, protocol=pickle.HIGHEST_PROTOCOL)
            pipe.flush()
    except (BrokenPipeError, OSError):
        pass
    finally:
        with contextlib.suppress(OSError):
            pipe.close()


def _receive(proc: Any) -> Any:
    import pickle

    try:
        ok, value = pickle.load(proc.stdout)
    except (EOFError, pickle.UnpicklingError) as exc:
        proc.wait()
        proc.err.seek(0)
        tail = proc.err.read().decode("utf-8", "replace").strip().splitlines()[-5:]
        raise ChildProcessError(
            f"a worker process ended (exit status {proc.returncode}, {type(exc).__name__}): "
            + (" | ".join(tail) or "no error output")
        ) from None
    if not ok:
        raise RuntimeError(f"in a worker process: {value}")
    return value


def _serve() -> None:
    """A worker process's loop (see :func:`process_map`): the factory's call, then one result
    per item until the input closes. The results go to the original standard output; anything
    else written there (a library's print) goes to standard error instead."""
    import importlib
    import pickle
    import traceback

    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    inp = sys.stdin.buffer
    target, args = pickle.load(inp)
    module, _, name = target.partition(":")
    fn = getattr(importlib.import_module(module), name)(*args)
    while True:
        try:
            item = pickle.load(inp)
        except EOFError:
            break
        try:
            result = (True, fn(item))
        except Exception:
            result = (False, traceback.format_exc())
        pickle.dump(result, out, protocol=pickle.HIGHEST_PROTOCOL)
        out.flush()


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
