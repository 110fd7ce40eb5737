"""``nuggetbench datasets list|info|fetch``."""

from __future__ import annotations

import click

from nuggetbench.cli._common import console, echo_json
from nuggetbench.datasets import (
    dataset_info,
    dataset_patterns,
    ensure_local,
    list_datasets,
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
    """
    from rich.table import Table

    ids = list_datasets()
    if fmt == "json" and not local:
        echo_json(ids)  # a plain list of ids, as before
        return
    where = {did: local_folder(did) for did in ids}
    if local:
        ids = [did for did in ids if where[did] is not None]
    if fmt == "json":
        echo_json({did: str(where[did]) for did in ids})
        return
    table = Table(title="datasets", title_justify="left")
    table.add_column("id", no_wrap=True)
    table.add_column("local folder (else downloaded on first use)", overflow="fold")
    for did in ids:
        table.add_row(did, str(where[did]) if where[did] else "-")
    console().print(table)
    for pattern, description in dataset_patterns():
        console().print(f"also ({pattern}): {description}", markup=False)


@datasets_group.command("info")
@click.argument("dataset")
@click.option(
    "--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True
)
def info_command(dataset, fmt):
    """Describe DATASET: source, split, counts when local, policies, default measures."""
    from rich.table import Table

    facts = dataset_info(dataset)
    if fmt == "json":
        echo_json(facts)
        return
    table = Table(title=dataset, title_justify="left", show_header=False)
    table.add_column("fact", style="bold", no_wrap=True)
    table.add_column("value", overflow="fold")
    for key, value in facts.items():
        table.add_row(key, _text(value))
    console().print(table)


def _text(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, dict):
        return "\n".join(f"{k}: {_text(v)}" for k, v in value.items()) or "-"
    if isinstance(value, (list, tuple)):
        return ", ".join(map(str, value)) or "-"
    return str(value)


@datasets_group.command("fetch")
@click.argument("dataset", nargs=-1, required=True)
def fetch_command(dataset):
    """Download DATASET(s) into $NUGGETBENCH_HOME (verified, atomic); print each local path.

    A dataset that cannot be fetched (offline, unreachable, no download and no local copy) is an
    error naming the folder to fill (exit status 2).
    """

    for did in dataset:
        path = ensure_local(did)
        click.echo(f"{did}: {path}")
