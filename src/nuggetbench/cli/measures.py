"""``nuggetbench measures``: list measure families and profiles."""

from __future__ import annotations

import click

from ._common import console


@click.command("measures", context_settings={"help_option_names": ["-h", "--help"]})
def measures_command():
    """List measure families (with parameters) and semantics profiles."""
    from rich.table import Table

    from ..measures import profiles, registry

    table = Table(title="measures", title_justify="left")
    table.add_column("family")
    table.add_column("cutoff")
    table.add_column("parameters (defaults)")
    table.add_column("description", overflow="fold")
    for name in registry.all_family_names():
        fam = registry.get_family(name)
        params = ", ".join(f"{k}={v}" for k, v in fam.params.items())
        doc = (fam.__doc__ or "").strip().splitlines()[0] if fam.__doc__ else ""
        table.add_row(
            name + (f" ({', '.join(fam.aliases)})" if fam.aliases else ""), fam.cutoff, params, doc
        )
    console().print(table)
    ptable = Table(title="profiles (--profile NAME)", title_justify="left")
    ptable.add_column("name")
    ptable.add_column("description", overflow="fold")
    for name, prof in profiles.PROFILES.items():
        ptable.add_row(name, getattr(prof, "description", ""))
    console().print(ptable)
