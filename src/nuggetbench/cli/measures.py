"""``nuggetbench measures``: the measure families, their parameters, and the profiles."""

from __future__ import annotations

import click
from rich.table import Table

from ..measures import PROFILES, all_family_names, get_family
from ._common import console


@click.command("measures", context_settings={"help_option_names": ["-h", "--help"]})
def measures_command():
    """List measure families (cutoff rule, declared parameters, description) and profiles."""
    table = Table(title="measures", title_justify="left")
    for column in ("family", "cutoff", "parameters (default: meaning)", "description"):
        table.add_column(column, overflow="fold")
    for name in all_family_names():
        fam = get_family(name)
        params = "\n".join(p.describe() for p in fam.params.values())
        aliases = f" ({', '.join(fam.aliases)})" if fam.aliases else ""
        table.add_row(name + aliases, fam.cutoff, params, fam.description)
    console().print(table)
    ptable = Table(title="profiles (--profile NAME)", title_justify="left")
    ptable.add_column("name")
    ptable.add_column("description", overflow="fold")
    for name, prof in PROFILES.items():
        ptable.add_row(name, prof.description)
    console().print(ptable)
