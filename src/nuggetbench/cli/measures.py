"""``nuggetbench measures``: the measure families, their parameters, and the profiles."""

from __future__ import annotations

import click
from rich.table import Table

from nuggetbench.cli._common import console
from nuggetbench.measures import PROFILES, all_family_names, get_family


@click.command("measures", context_settings={"help_option_names": ["-h", "--help"]})
def measures_command():
    """List measure families (cutoff rule, declared parameters, description) and profiles."""
    table = Table(title="measures", title_justify="left")
    families = [get_family(name) for name in all_family_names()]
    # a parameter's "name=default:" never splits: the column is at least that wide
    widest = max(
        (len(p.describe().split(": ")[0]) + 1 for f in families for p in f.params.values()),
        default=10,
    )
    for column in ("family (cutoff)", "parameters (default: meaning)", "description"):
        table.add_column(column, overflow="fold", min_width=widest if "param" in column else None)
    for name in all_family_names():
        fam = get_family(name)
        params = "\n".join(p.describe() for p in fam.params.values())
        aliases = f" ({', '.join(fam.aliases)})" if fam.aliases else ""
        table.add_row(f"{name}{aliases}\n@k {fam.cutoff}", params, fam.description)
    console().print(table)
    ptable = Table(title="profiles (--profile NAME)", title_justify="left")
    ptable.add_column("name")
    ptable.add_column("description", overflow="fold")
    for name, prof in PROFILES.items():
        ptable.add_row(name, prof.description)
    console().print(ptable)
