"""The console script's entry point: ``nuggetbench --help`` answered without importing click.

Importing click alone takes 60-80 ms (``click.core`` imports ``inspect`` and ``typing``), more
than the 50 ms a bare ``--help`` may take. The top-level help is therefore rendered ahead of
time by click itself, once for every width click can choose (:func:`help_width`), and kept in
``_help.txt`` beside this module (records ``width NUL text NUL``: read without the json module,
as the terminal's width is read without shutil, 10 ms less); ``nuggetbench --help`` / ``-h``
prints the stored text.
Every other command line goes to :func:`nuggetbench.cli.main`, which imports click.

When the command line is the process's own (``argv`` not given), the process then leaves through
:func:`leave`: the exit handlers run and the output is flushed, but the interpreter is not torn
down. Tearing it down took 0.10-0.16 s after an evaluation of 1M run lines (pyarrow's and
numpy's module teardown, every remaining object freed one by one), 5% of the whole command.

``tests/test_help_fast_path.py`` checks that the stored texts equal what click renders now and
that the output of the fast path equals the slow path's at several terminal widths; after a
change to the top-level help, regenerate the file with ``python -m nuggetbench._entry
--write-help``.
"""

from __future__ import annotations

import os
import sys

from ._memory import prefer_system_allocator

HELP_FILE = os.path.join(os.path.dirname(__file__), "_help.txt")
HELP_FLAGS = (["--help"], ["-h"])
MIN_WIDTH, MAX_CONTENT_WIDTH = 50, 100
"""click's ``HelpFormatter`` bounds: width ``max(min(columns, max_content_width) - 2, 50)``,
with the group's ``max_content_width`` (``nuggetbench.cli.cli``)."""


def terminal_columns() -> int:
    """``shutil.get_terminal_size().columns`` without importing shutil: the ``COLUMNS``
    variable when it is a positive integer, else the size of the terminal on stdout, else 80."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
        columns = columns or 80
    return columns


def help_width() -> int:
    """The width click's ``HelpFormatter`` picks for this terminal (50-98 characters): the
    ``COLUMNS`` variable, else the terminal's size, else 80 (:func:`terminal_columns`)."""
    return max(min(terminal_columns(), MAX_CONTENT_WIDTH) - 2, MIN_WIDTH)


def read_help_file(path: str) -> dict[str, str]:
    """``{str(width): text}`` from a file :func:`write_help` wrote.

    Raises:
        OSError: the file cannot be read; ValueError: it is not such a file.
    """
    with open(path, encoding="utf-8") as fh:
        fields = fh.read().split("\0")
    if len(fields) % 2 != 1 or fields[-1] != "":
        raise ValueError(f"{path}: not a stored help file")
    return dict(zip(fields[:-1:2], fields[1:-1:2]))


def stored_help(width: int) -> str | None:
    """The stored top-level help for *width*, or ``None`` (no file, or no text for it)."""
    try:
        return read_help_file(HELP_FILE).get(str(width))
    except (OSError, ValueError):
        return None


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``nuggetbench`` console script and of ``python -m nuggetbench``."""
    args = sys.argv[1:] if argv is None else list(argv)
    if args in HELP_FLAGS and not os.environ.get("_NUGGETBENCH_COMPLETE"):
        text = stored_help(help_width())
        if text is not None:
            sys.stdout.write(text + "\n")
            sys.stdout.flush()
            return
    from .cli import main as cli_main  # lazy: click, for everything but a bare --help

    if argv is not None:  # called from Python: return, as a function does
        cli_main(argv)
        return
    prefer_system_allocator()  # the process is the command's: pyarrow through malloc (_memory)
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


def help_texts() -> dict[str, str]:
    """``{str(width): the top-level help}`` rendered by click for every width its formatter can
    choose (:data:`MIN_WIDTH` to ``MAX_CONTENT_WIDTH - 2``), as ``nuggetbench --help`` prints it."""
    import click

    from .cli import cli  # lazy: click, only to render the stored texts

    texts = {}
    for width in range(MIN_WIDTH, MAX_CONTENT_WIDTH - 1):
        ctx = click.Context(
            cli, info_name="nuggetbench", terminal_width=width, **cli.context_settings
        )
        texts[str(width)] = cli.get_help(ctx)
    return texts


def write_help(path: str = HELP_FILE) -> None:
    """Render the top-level help for every width (:func:`help_texts`) into *path*, atomically:
    ``width NUL text NUL`` for each width (:func:`read_help_file`)."""
    texts = help_texts()
    if any("\0" in text for text in texts.values()):  # pragma: no cover - click never writes NUL
        raise ValueError("the help text holds a NUL character")
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write("".join(f"{width}\0{texts[width]}\0" for width in sorted(texts, key=int)))
    os.replace(tmp, path)


if __name__ == "__main__":  # pragma: no cover - maintenance: python -m nuggetbench._entry
    if sys.argv[1:] == ["--write-help"]:
        write_help()
    else:
        main()
