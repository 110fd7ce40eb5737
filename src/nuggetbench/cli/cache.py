"""``nuggetbench cache list|size|clear``: see and clear what the caches under the home hold."""

from __future__ import annotations

import time
from collections import defaultdict

import click
from rich.table import Table

from nuggetbench.cli._common import console, echo_json
from nuggetbench.store import (
    CACHE_KINDS,
    cache_entries,
    cache_kinds,
    cache_root,
    parse_age,
    remove_cache_entries,
    unknown_kinds,
)


def _kinds_text() -> str:
    """``bm25, lucene, runs, embeddings (dense, sparse, colbert), ...``: :data:`CACHE_KINDS`."""
    groups: dict[str, list[str]] = {}
    for kind in CACHE_KINDS:
        head, _, sub = kind.partition("/")
        groups.setdefault(head, []).extend([sub] if sub else [])
    return ", ".join(f"{k} ({', '.join(v)})" if v else k for k, v in groups.items())


KINDS_HELP = f"KINDS: {_kinds_text()} (default: all)."


def _checked(kinds) -> tuple[str, ...]:
    """*kinds* when each names a cache kind; else a usage error listing the kinds."""
    unknown = unknown_kinds(kinds)
    if unknown:
        words = ", ".join(repr(k) for k in unknown)
        raise click.UsageError(
            f"no cache kind {words}; the kinds are {', '.join(cache_kinds())} "
            "(a prefix such as 'embeddings' covers its kinds)"
        )
    return tuple(kinds)


@click.group("cache", context_settings={"help_option_names": ["-h", "--help"]})
def cache_group():
    """See and clear the caches under $NUGGETBENCH_HOME/cache (indexes, embeddings, runs,
    chunked corpora, LLM answers). Everything there is rebuilt on demand."""


def _older(entries, older_than):
    if not older_than:
        return entries
    limit = time.time() - parse_age(older_than)
    return [e for e in entries if e.modified < limit]


@cache_group.command(
    "list", help="List every cached artifact: kind, size, last modified, folder. " + KINDS_HELP
)
@click.argument("kinds", nargs=-1)
@click.option(
    "--older-than", default=None, metavar="AGE", help="Only entries unused for AGE (30d, 12h, 2w)."
)
@click.option(
    "--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True
)
def list_command(kinds, older_than, fmt):
    entries = _older(cache_entries(kinds=_checked(kinds)), older_than)
    if fmt == "json":
        echo_json(
            [
                {"kind": e.kind, "path": str(e.path), "bytes": e.bytes, "modified": e.modified}
                for e in entries
            ]
        )
        return
    table = Table(title=f"cache entries in {cache_root()}", title_justify="left")
    for name, justify in (
        ("kind", "left"),
        ("size", "right"),
        ("modified", "left"),
        ("entry", "left"),
    ):
        table.add_column(name, justify=justify, overflow="fold", no_wrap=name != "entry")
    for e in entries:
        table.add_row(e.kind, _size(e.bytes), _when(e.modified), e.path.name)
    console().print(table)


@cache_group.command("size", help="Total size per kind, and overall. " + KINDS_HELP)
@click.argument("kinds", nargs=-1)
@click.option(
    "--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True
)
def size_command(kinds, fmt):
    totals: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for e in cache_entries(kinds=_checked(kinds)):
        totals[e.kind][0] += 1
        totals[e.kind][1] += e.bytes
    if fmt == "json":
        echo_json({k: {"entries": n, "bytes": b} for k, (n, b) in totals.items()})
        return
    table = Table(title=f"cache size in {cache_root()}", title_justify="left")
    for name in ("kind", "entries", "size"):
        table.add_column(name, justify="left" if name == "kind" else "right")
    for kind, (n, b) in sorted(totals.items()):
        table.add_row(kind, str(n), _size(b))
    table.add_row(
        "total", str(sum(n for n, _ in totals.values())), _size(sum(b for _, b in totals.values()))
    )
    console().print(table)


@cache_group.command(
    "clear",
    help="Delete cached artifacts: all, those of KINDS, or those older than AGE. " + KINDS_HELP,
)
@click.argument("kinds", nargs=-1)
@click.option(
    "--older-than", default=None, metavar="AGE", help="Only entries unused for AGE (30d, 12h, 2w)."
)
@click.option("-y", "--yes", is_flag=True, help="Do not ask for confirmation.")
def clear_command(kinds, older_than, yes):
    entries = _older(cache_entries(kinds=_checked(kinds)), older_than)
    total = sum(e.bytes for e in entries)
    if not entries:
        what = f" of kind {', '.join(kinds)}" if kinds else ""
        age = f" unused for {older_than}" if older_than else ""
        click.echo(f"nothing to clear: no cache entries{what}{age} in {cache_root()}", err=True)
        return
    what = f"{len(entries)} cache entries ({_size(total)}) in {cache_root()}"
    if not yes:
        click.confirm(f"delete {what}?", abort=True, err=True)
    freed = remove_cache_entries(entries)
    click.echo(f"cleared {what}; {_size(freed)} freed", err=True)


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GB"


def _when(stamp: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(stamp))
