"""``nuggetbench datasets list|info|fetch``."""

from __future__ import annotations

import click

from ..datasets import dataset_info, ensure_local, list_datasets
from ._common import console, echo_json


@click.group("datasets", context_settings={"help_option_names": ["-h", "--help"]})
def datasets_group():
    """List, describe and download datasets."""


@datasets_group.command("list")
@click.option(
    "--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True
)
def list_command(fmt):
    """List dataset ids (and whether each is available locally)."""
    from rich.table import Table

    ids = list_datasets()
    if fmt == "json":
        echo_json(ids)
        return
    table = Table(title="datasets", title_justify="left")
    table.add_column("id")
    for did in ids:
        table.add_row(did)
    console().print(table)


@datasets_group.command("info")
@click.argument("dataset")
def info_command(dataset):
    """Describe DATASET: source, split, counts when local, policies, default measures."""

    echo_json(dataset_info(dataset))


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
