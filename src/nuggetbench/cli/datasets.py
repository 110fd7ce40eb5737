"""``nuggetbench datasets list|info|fetch``."""

from __future__ import annotations

import json

import click

from nuggetbench.cli._common import console, dataset_option, echo_json, parse_options
from nuggetbench.cli._globals import progress_wanted
from nuggetbench.datasets import (
    dataset_info,
    dataset_patterns,
    ensure_local,
    list_datasets,
    load_dataset,
    local_folder,
)


@click.group("datasets", context_settings={"help_option_names": ["-h", "--help"]})
def datasets_group():
    """List, describe and download datasets."""


@datasets_group.command("list")
@click.option(
    "--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True
)
@click.option("--local", is_flag=True, help="Only the datasets already on disk.")
def list_command(fmt, local):
    """List dataset ids and where each is on disk (NUGGETBENCH_DATA or the home), if it is.

    The lines under the table are families that take any id of a pattern, such as
    irds:<id> for every dataset of ir_datasets' catalogue (https://ir-datasets.com/).
    With --format json: ``{"datasets": {ID: FOLDER or null}, "patterns": {PATTERN:
    DESCRIPTION}}``, the facts the table shows (the patterns only where they apply).
    """
    from rich.table import Table

    ids = list_datasets()
    where = {did: local_folder(did) for did in ids}
    if local:
        ids = [did for did in ids if where[did] is not None]
    patterns = [(p, d) for p, d in dataset_patterns() if not local or _pattern_local(p, ids)]
    if fmt == "json":
        echo_json(
            {
                "datasets": {did: str(where[did]) if where[did] else None for did in ids},
                "patterns": dict(patterns),
            }
        )
        return
    table = Table(title="datasets", title_justify="left")
    table.add_column("id", no_wrap=True)
    table.add_column("local folder (else downloaded on first use)", overflow="fold")
    for did in ids:
        table.add_row(did, str(where[did]) if where[did] else "-")
    console().print(table)
    for pattern, description in patterns:
        console().print(f"also ({pattern}): {description}", markup=False)


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
