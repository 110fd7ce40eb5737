"""The console script's entry point.

Every command line goes to :func:`nuggetbench.cli.main` (click). When the command line is the
process's own (``argv`` not given), the process is the command's: pyarrow is asked for the
system allocator (:func:`nuggetbench._runtime.prefer_system_allocator`), and the process leaves
through :func:`leave`: the exit handlers run and the output is flushed, but the interpreter is
not torn down. Tearing it down took 0.10-0.16 s after an evaluation of 1M run lines (pyarrow's
and numpy's module teardown, every remaining object freed one by one), 5% of the whole command.
"""

from __future__ import annotations

import os
import sys

from nuggetbench._runtime import prefer_system_allocator
from nuggetbench.cli import main as cli_main


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``nuggetbench`` console script and of ``python -m nuggetbench``."""
    if argv is not None:  # called from Python: return, as a function does
        cli_main(argv)
        return
    prefer_system_allocator()  # the process is the command's (see nuggetbench._runtime)
    try:
        cli_main(None)
    except SystemExit as exc:
        leave(exc.code)
    else:
        leave(0)


def leave(code: object = 0) -> None:
    """End the process with *code* (as ``sys.exit`` takes it) without tearing the interpreter
    down: the :mod:`atexit` handlers run (Ray's shutdown, temporary folders' clean-up, logging's
    flush), stdout and stderr are flushed, then ``os._exit``. Files are closed by the code that
    writes them (outputs are written atomically), so nothing buffered is lost.

    When a thread that is not a daemon is still running, Python's own exit (which waits for it)
    is used instead: ``sys.exit(code)``.

    Raises:
        SystemExit: only in that case.
    """
    import atexit
    import threading

    main_thread = threading.main_thread()
    if any(t is not main_thread and not t.daemon and t.is_alive() for t in threading.enumerate()):
        sys.exit(code)
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:  # sys.exit("message"): printed, status 1
        sys.stderr.write(f"{code}\n")
        status = 1
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):  # a closed pipe (``| head``): Python's exit says 120
            status = status or 120
    os._exit(status & 0xFF)  # as Python's own exit: the low 8 bits (-1 -> 255, 256 -> 0)


if __name__ == "__main__":  # pragma: no cover
    main()
