"""Options every command takes, before or after its name: ``-v`` and ``--no-progress``; how
progress is shown (:func:`progress_style`).

Kept apart from ``_common`` so that ``nuggetbench --help`` imports nothing but click.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator

import click

from nuggetbench import progress
from nuggetbench.llm.secrets import SecretFilter


def configure_logging(verbose: int) -> None:
    """Log level from the ``-v`` count (0 warnings, 1 info, 2+ debug), on stderr; every handler
    masks credentials (:class:`~nuggetbench.llm.secrets.SecretFilter`), so no logger's line,
    ours or a library's (``httpx``'s request lines carry the URL), shows a key or password."""
    import logging

    level = logging.WARNING if verbose == 0 else logging.INFO if verbose == 1 else logging.DEBUG
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger().setLevel(level)
    for handler in logging.getLogger().handlers:  # some libraries set their own loggers to DEBUG
        handler.setLevel(level)
    loggers = [logging.getLogger()]
    for name in ("huggingface_hub", "datasets"):  # they print through their own handler: once
        logging.getLogger(name).propagate = False
        loggers.append(logging.getLogger(name))
    for logger in loggers:
        for handler in logger.handlers:
            if not any(isinstance(f, SecretFilter) for f in handler.filters):
                handler.addFilter(SecretFilter())


def _verbose_callback(ctx: click.Context, param: click.Parameter, value: int) -> None:
    if value:
        root = ctx.find_root().ensure_object(dict)
        root["verbose"] = max(root.get("verbose", 0), value)
        configure_logging(root["verbose"])


def _no_progress_callback(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value:
        ctx.find_root().ensure_object(dict)["no_progress"] = True


def global_params() -> list[click.Option]:
    """``-v/--verbose`` and ``--no-progress``, taken before or after any subcommand (the group
    adds them to every command it loads; they set the root context's ``obj``)."""
    return [
        click.Option(
            ["-v", "--verbose"],
            count=True,
            expose_value=False,
            callback=_verbose_callback,
            help="More log output (-v info, -vv debug); before or after the command.",
        ),
        click.Option(
            ["--no-progress"],
            is_flag=True,
            expose_value=False,
            callback=_no_progress_callback,
            help="Hide progress bars; before or after the command.",
        ),
    ]


def progress_wanted() -> bool:
    """Whether progress bars are on: no ``--no-progress`` anywhere on the command line, and
    stderr is a terminal (rich's test: ``TTY_COMPATIBLE``/``FORCE_COLOR`` are honoured). Piped
    or redirected, a bar's ``\\r`` redraws would fill a log with lines: the commands that show
    progress there too ask :func:`progress_shown` instead (lines every few seconds)."""
    return progress_style() == "bar"


#: Seconds between two progress lines when stderr is not a terminal (default 10).
ENV_PROGRESS_SECONDS = "NUGGETBENCH_PROGRESS_SECONDS"


def progress_style() -> str:
    """How this command shows progress (:mod:`nuggetbench.progress`): ``off`` under
    ``--no-progress``, ``bar`` when stderr is a terminal, else ``log``: a line every
    ``NUGGETBENCH_PROGRESS_SECONDS`` (default 10) seconds on stderr, through the logger
    ``nuggetbench.progress`` at INFO level (shown without ``-v``; credentials masked). Sets
    the style of the meters the library makes (``show_progress=True``)."""
    import os

    ctx = click.get_current_context(silent=True)
    if ctx and (ctx.find_root().obj or {}).get("no_progress"):
        chosen = "off"
    else:
        from rich.console import Console  # lazy: keeps `nuggetbench --help` light

        chosen = "bar" if Console(stderr=True).is_terminal else "log"
    raw = os.environ.get(ENV_PROGRESS_SECONDS, "")
    try:
        seconds = float(raw) if raw.strip() else 10.0
        progress.configure(chosen, seconds)
    except ValueError:
        raise click.UsageError(
            f"{ENV_PROGRESS_SECONDS}={raw!r}: give the seconds between two progress lines, a "
            "number > 0 (default 10)"
        ) from None
    if chosen == "log":
        _progress_handler()
    if ctx is not None:
        root = ctx.find_root()
        if not root.meta.get(_RESTORE):  # the process's defaults again when the command ends
            root.meta[_RESTORE] = True
            root.call_on_close(_restore_progress)
    return chosen


_RESTORE = "nuggetbench.progress_restore"


def _restore_progress() -> None:
    """Back to the library's defaults (style ``bar``, no handler of ours): a command run
    in-process (tests, ``cli.main`` from Python) leaves nothing behind."""
    import logging

    progress.configure("bar", 10.0)
    logger = logging.getLogger("nuggetbench.progress")
    for handler in [h for h in logger.handlers if getattr(h, "_nuggetbench", False)]:
        logger.removeHandler(handler)
    logger.setLevel(logging.NOTSET)
    logger.propagate = True


def progress_shown() -> bool:
    """Whether this command shows progress at all (:func:`progress_style` is not ``off``)."""
    return progress_style() != "off"


def _progress_handler() -> None:
    """A stderr handler (credentials masked) for the ``nuggetbench.progress`` logger at INFO, so
    its lines show without ``-v``; the records do not reach the root handlers (no line twice)."""
    import logging

    logger = logging.getLogger("nuggetbench.progress")
    logger.setLevel(logging.INFO)
    logger.propagate = False
    if not any(getattr(h, "_nuggetbench", False) for h in logger.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        handler.addFilter(SecretFilter())
        handler._nuggetbench = True  # type: ignore[attr-defined]
        logger.addHandler(handler)


@contextlib.contextmanager
def llm_meter(desc: str, unit: str, ledger=None) -> Iterator[Callable[[int], None]]:
    """A :class:`~nuggetbench.progress.Meter` for the paid commands (``judge``, ``answers``,
    ``nuggets``): its total comes from the work (:func:`~nuggetbench.progress.expect`), and
    *ledger*'s :meth:`~nuggetbench.llm.cache.UsageLedger.brief` (requests sent, cached and
    failed, the running cost) follows the counts. A bar on a terminal, lines every few seconds
    otherwise, nothing under ``--no-progress`` (:func:`progress_style`). Yields the meter."""
    style = progress_style()
    stats = ledger.brief if ledger is not None else None
    with progress.Meter(desc, None, unit, show=style != "off", style=style, stats=stats) as meter:
        yield meter


def hidden_alias(name: str, dest: str, **kwargs):
    """A hidden option *name* kept for an older spelling; the command merges *dest* itself."""
    return click.option(name, dest, hidden=True, **kwargs)
