"""Options every command takes, before or after its name: ``-v`` and ``--no-progress``.

Kept apart from ``_common`` so that ``nuggetbench --help`` imports nothing but click.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator

import click

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
    or redirected, a bar's ``\\r`` redraws would fill a log with lines, so every command asks
    here, once, and prints only its final summary there."""
    ctx = click.get_current_context(silent=True)
    if ctx and (ctx.find_root().obj or {}).get("no_progress"):
        return False
    from rich.console import Console  # lazy: keeps `nuggetbench --help` light

    return Console(stderr=True).is_terminal


@contextlib.contextmanager
def count_bar(desc: str, unit: str) -> Iterator[Callable[[int], None]]:
    """A progress bar on stderr counting settled items (rate and elapsed time; no total is
    known in advance); hidden by ``--no-progress`` and when stderr is not a terminal
    (:func:`progress_wanted`). Yields its ``update(n)``."""
    from tqdm.auto import tqdm  # lazy: keeps `nuggetbench --help` light

    with tqdm(desc=desc, unit=unit, disable=not progress_wanted(), file=sys.stderr) as bar:
        yield bar.update


def hidden_alias(name: str, dest: str, **kwargs):
    """A hidden option *name* kept for an older spelling; the command merges *dest* itself."""
    return click.option(name, dest, hidden=True, **kwargs)
