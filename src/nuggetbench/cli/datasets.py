"""``nuggetbench datasets list|info|fetch``."""

from __future__ import annotations

import fnmatch
import json
import re
from typing import Any

import click

from nuggetbench.cli._common import console, dataset_option, echo_json, parse_options
from nuggetbench.cli._globals import progress_wanted
from nuggetbench.datasets import (
    catalog,
    dataset_groups,
    dataset_info,
    dataset_patterns,
    ensure_local,
    load_dataset,
    local_folder,
)
from nuggetbench.errors import InputError


@click.group("datasets", context_settings={"help_option_names": ["-h", "--help"]})
def datasets_group():
    """List, describe and download datasets."""


@datasets_group.command("list")
@click.argument("words", nargs=-1)
@click.option(
    "--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True
)
@click.option("--local", is_flag=True, help="Only the datasets already on disk.")
@click.option(
    "--paths", is_flag=True, help="Print only 'ID<tab>FOLDER' per dataset on disk (no table)."
)
def list_command(words, fmt, local, paths):
    """List the datasets (or those matching WORDS): what each is, its splits (the default
    first), the queries and documents of its default split, the download size (declared by
    each dataset's official source, so shown before any download) and whether it is on disk
    (NUGGETBENCH_DATA or the home), grouped by family. The folders of those on disk follow
    the table, each on a line of its own.

    WORDS filter: a dataset is listed when one of them matches its id's start (beir), a part
    of it (covid matches beir/trec-covid), a word of its description (medical), or is an id
    pattern it fits (miracl/*).
    The lines under the table are families that take any id of a pattern, such as irds:<id>
    for every dataset of ir_datasets' catalogue (https://ir-datasets.com/).
    With --format json: ``{"datasets": {ID: FOLDER or null}, "facts": {ID: {...}},
    "patterns": {PATTERN: DESCRIPTION}}``, the facts the table shows.
    """
    groups = _listed_groups(words, local)
    ids = [did for _, _, members in groups for did, _ in members]
    patterns = [(p, d) for p, d in dataset_patterns() if _pattern_wanted(p, d, ids, words, local)]
    if words and not ids and not patterns:
        raise InputError(
            f"no dataset matches {' '.join(words)!r}"
            + (" among those on disk" if local else "")
            + "; `nuggetbench datasets list` lists them all"
        )
    where = {did: folder for _, _, members in groups for did, folder in members}
    if paths:
        for did in (d for d in ids if where[d] is not None):
            click.echo(f"{did}\t{where[did]}")
    elif fmt == "json":
        echo_json(_list_json(ids, where, patterns))
    else:
        _print_listing(groups, patterns)


def _listed_groups(words, local: bool) -> list[tuple[str, str, list[tuple[str, Any]]]]:
    """``(family, description, [(id, local folder or None)])`` of the datasets *words* match."""
    out = []
    for name, text, members in dataset_groups():
        chosen = [did for did in members if _matches(did, text, words)]
        found = [(did, local_folder(did)) for did in chosen]
        found = [(did, folder) for did, folder in found if folder is not None or not local]
        if found:
            out.append((name, text, found))
    return out


def _words(text: str) -> set[str]:
    return {w for w in re.split(r"[^0-9a-z]+", text.lower()) if w}


def _matches(did: str, description: str, words) -> bool:
    """Whether one of *words* (or none given) matches *did*: an ``fnmatch`` pattern of it, its
    start, the start of one of its parts, or a word of its description (family's or own)."""
    if not words:
        return True
    facts = catalog.facts(did)
    said = _words(description + " " + (facts.about if facts else ""))
    parts = re.split(r"[/:_-]+", did.lower())
    for word in (w.lower() for w in words):
        if any(ch in word for ch in "*?["):
            if fnmatch.fnmatchcase(did.lower(), word):
                return True
        elif did.lower().startswith(word) or any(p.startswith(word) for p in parts) or word in said:
            return True
    return False


def _pattern_wanted(pattern: str, description: str, ids, words, local: bool) -> bool:
    """An id pattern's line is shown when the listing is not filtered, or its words match;
    under --local, when ids of its family are on disk."""
    if local and not _pattern_local(pattern, ids):
        return False
    return _matches(pattern, description, words)


def _list_json(ids, where, patterns) -> dict:
    out = {
        "datasets": {did: str(where[did]) if where[did] else None for did in ids},
        "facts": {did: _facts_json(did) for did in ids},
        "patterns": dict(patterns),
    }
    return out


def _facts_json(did: str) -> dict | None:
    facts = catalog.facts(did)
    if facts is None:
        return None
    return {
        "about": facts.about,
        "splits": list(facts.splits),
        "queries": facts.queries,
        "documents": facts.documents,
        "judgments": facts.judgments,
        "download_bytes": facts.download,
    }


def _print_listing(groups, patterns) -> None:
    """Per family: its description (words wrapped, never cut), then a table of its ids (the
    'about' column only when the console is wide enough), then the folders on disk."""
    from rich.table import Table

    out = console()
    wide = out.width >= 120
    for name, text, members in groups:
        out.print(f"{name}: {text}", markup=False, highlight=False)
        table = Table(box=None, pad_edge=False, padding=(0, 2, 0, 0), show_edge=False)
        table.add_column("id", no_wrap=True)
        if wide:
            table.add_column("about", overflow="fold", ratio=1)
        for head in ("splits", "queries", "docs", "download", "local"):
            table.add_column(head, no_wrap=True, justify="left" if head == "splits" else "right")
        for did, folder in members:
            f = catalog.facts(did)
            cells = [
                ",".join(f.splits) if f and f.splits else "-",
                _count(f.queries if f else None),
                _count(f.documents if f else None, short=True),
                _size(f.download) if f and f.download else "-",
                "yes" if folder is not None else "-",
            ]
            table.add_row(did, *([f.about if f else "-"] if wide else []), *cells)
        out.print(table)
        out.print()
    for pattern, description in patterns:
        out.print(f"also ({pattern}): {description}", markup=False, highlight=False)
    on_disk = [(did, folder) for _, _, members in groups for did, folder in members if folder]
    if on_disk:
        out.print("on disk:", highlight=False)
    pad = max((len(did) for did, _ in on_disk), default=0)
    for did, folder in on_disk:  # each path whole: on the id's line when it fits, else its own
        line = f"  {did:<{pad}}  {folder}"
        lines = [line] if len(line) <= out.width else [f"  {did}", f"    {folder}"]
        for text in lines:
            out.print(text, markup=False, highlight=False, soft_wrap=True)
    out.print(
        "queries and docs: of the default split (the first); download: the first use's, "
        "declared by the dataset's source"
        + ("; what each id is: a wider console or --format json" if not wide else ""),
        highlight=False,
    )


def _count(n: int | None, *, short: bool = False) -> str:
    """``6,980``; with *short* a count of 100,000 or more as ``8.84M`` / ``523K``."""
    if n is None:
        return "-"
    if short and n >= 100_000:
        value, unit = (n / 1e6, "M") if n >= 1_000_000 else (n / 1e3, "K")
        return f"{value:.3g}{unit}"
    return f"{n:,}"


def _pattern_local(pattern: str, local_ids: list[str]) -> bool:
    """Whether ids of *pattern* (``mmarco/*/*``) can be on disk: a local id shares its family
    prefix (``mmarco/``), whose files the pattern's ids read."""
    prefix = pattern.split("*", 1)[0]
    return any(did.startswith(prefix) for did in local_ids)


@datasets_group.command("info")
@click.argument("dataset")
@click.option(
    "--fingerprint",
    is_flag=True,
    help="Also load the dataset (with the -O options) and print its fingerprint, the one "
    "`evaluate` and `report` record (a pass over its files).",
)
@dataset_option
@click.option(
    "--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True
)
def info_command(dataset, fingerprint, dataset_options, fmt):
    """Describe DATASET: family, split, where its files are and their size, counts when local,
    source, measures, policies and loader options (--fingerprint: its fingerprint too)."""
    from rich.table import Table
    from rich.text import Text

    facts = dataset_info(dataset)
    if fingerprint:
        loaded = load_dataset(dataset, **parse_options(dataset_options))
        facts["fingerprint"] = {"value": loaded.fingerprint(), "split": loaded.split}
    if fmt == "json":
        echo_json(facts)
        return
    table = Table(title=dataset, title_justify="left", show_header=False)
    table.add_column("fact", style="bold", no_wrap=True)
    table.add_column("value", overflow="fold")
    for key, value in readable_facts(facts):
        table.add_row(key, Text(value))  # Text: no markup ("[MASK]" in an objective stays)
    console().print(table)


def _text(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, dict):
        return "\n".join(f"{k}: {_text(v)}" for k, v in value.items()) or "-"
    if isinstance(value, (list, tuple)):
        return ", ".join(map(str, value)) or "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def _size(n: int) -> str:
    for unit in ("bytes", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1000
    return ""  # unreachable


#: Facts folded into the rows of :func:`readable_facts` (or of no use to a reader).
_FOLDED = frozenset(
    {
        *("id", "loader", "description", "family", "name", "forum", "options", "files"),
        *("folder", "local_file", "install_folder", "default_split", "splits", "counts"),
        *("url", "md5", "default_measures", "default_profile", "remove_self_hits"),
        *("self_hit_policy", "loadable", "citation", "fingerprint"),
    }
)


def readable_facts(f: dict) -> list[tuple[str, str]]:
    """The rows of ``datasets info``: human words, no import strings, no ``split=None``."""
    rows = [("dataset", f"{f['id']}: {f.get('description') or '-'}"), ("family", f["family"])]
    options = f.get("options") or {}
    split = f.get("default_split") or (options.get("split") or {}).get("default")
    others = [s for s in f.get("splits") or () if s != split]
    if split or others:
        also = f"; also {', '.join(others)}" if others else ""
        rows.append(
            ("split", f"{split or 'the loader chooses'} (the default{also}; -O split=NAME)")
        )
    rows.append(("files", _files_text(f)))
    if f.get("counts"):
        rows.append(("counts", _text(f["counts"])))
    fp = f.get("fingerprint")
    rows.append(
        (
            "fingerprint",
            f"{fp['value']} (split {fp['split'] or '-'})"
            if fp
            else "not computed: add --fingerprint (loads the dataset)",
        )
    )
    if f.get("url"):
        rows.append(("source", f["url"] + (f" (MD5 {f['md5']})" if f.get("md5") else "")))
    if f.get("default_measures"):
        profile = f" (profile {f['default_profile']})" if f.get("default_profile") else ""
        rows.append(("measures", ", ".join(f["default_measures"]) + profile))
    if f.get("self_hit_policy"):
        rows.append(("self hits", f["self_hit_policy"]))
    if f.get("mean_of_groups") is False:
        f = {k: v for k, v in f.items() if k != "mean_of_groups"}
    for key, value in f.items():
        if key not in _FOLDED and value is not None:
            rows.append((key.replace("_", " "), _text(value)))
    if f.get("options"):
        rows.append(
            ("options (-O)", "\n".join(_option_text(k, v) for k, v in f["options"].items()))
        )
    if f.get("citation"):
        rows.append(("citation", f["citation"]))
    return rows


def _files_text(f: dict) -> str:
    files = f.get("files")
    if files:
        n = files["files"]
        return f"{files['path']} ({n} file{'s' if n != 1 else ''}, {_size(files['bytes'])})"
    where = f.get("install_folder")
    return "not on disk" + (f"; downloaded on first use into {where}" if where else "")


def _option_text(name: str, fact) -> str:
    if not isinstance(fact, dict):  # a family that lists its defaults only
        return f"{name} (default {_literal(fact)})"
    default, text = fact.get("default"), fact.get("description") or ""
    head = name if default is None else f"{name} (default {_literal(default)})"
    return f"{head}: {text}" if text else head


def _literal(value) -> str:
    return json.dumps(value) if isinstance(value, bool) else str(value)


@datasets_group.command("fetch")
@click.argument("dataset", nargs=-1, required=True)
def fetch_command(dataset):
    """Download DATASET(s) into $NUGGETBENCH_HOME (verified, atomic); print each local path.

    A dataset that cannot be fetched (offline, unreachable, no download and no local copy) is an
    error naming the folder to fill (exit status 2).
    """

    for did in dataset:
        path = ensure_local(did, show_progress=progress_wanted())
        click.echo(f"{did}: {path}")
