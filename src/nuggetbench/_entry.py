"""The console script's entry point: ``nuggetbench --help`` answered without importing click.

Importing click alone takes 60-80 ms (``click.core`` imports ``inspect`` and ``typing``), more
than the 50 ms a bare ``--help`` may take. The top-level help is therefore rendered ahead of
time by click itself, once for every width click can choose (:func:`help_width`), and kept in
``_help.json`` beside this module; ``nuggetbench --help`` / ``-h`` prints the stored text.
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

HELP_FILE = os.path.join(os.path.dirname(__file__), "_help.json")
HELP_FLAGS = (["--help"], ["-h"])
MIN_WIDTH, MAX_CONTENT_WIDTH = 50, 100
"""click's ``HelpFormatter`` bounds: width ``max(min(columns, max_content_width) - 2, 50)``,
with the group's ``max_content_width`` (``nuggetbench.cli.cli``)."""


def help_width() -> int:
    """The width click's ``HelpFormatter`` picks for this terminal (50-98 characters): the
    ``COLUMNS`` variable, else the terminal's size, else 80 (``shutil.get_terminal_size``)."""
    import shutil

    columns = shutil.get_terminal_size().columns
    return max(min(columns, MAX_CONTENT_WIDTH) - 2, MIN_WIDTH)


def stored_help(width: int) -> str | None:
    """The stored top-level help for *width*, or ``None`` (no file, or no text for it)."""
    import json

    try:
        with open(HELP_FILE, encoding="utf-8") as fh:
            texts = json.load(fh)
    except (OSError, ValueError):
        return None
    text = texts.get(str(width))
    return text if isinstance(text, str) else None


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
    os._exit(status & 0xFF if status >= 0 else 1)


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
    """Render the top-level help for every width (:func:`help_texts`) into
    *path*, atomically."""
    import json

    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(help_texts(), fh, indent=0, sort_keys=True)
        fh.write("\n")
    os.replace(tmp, path)


if __name__ == "__main__":  # pragma: no cover - maintenance: python -m nuggetbench._entry
    if sys.argv[1:] == ["--write-help"]:
        write_help()
    else:
        main()
