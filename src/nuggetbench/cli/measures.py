"""``nuggetbench measures``: the measure families, their parameters, and the profiles."""

from __future__ import annotations

import click

from nuggetbench.cli._common import console
from nuggetbench.cli._tables import entry_lines
from nuggetbench.errors import suggest
from nuggetbench.measures import PROFILES, all_family_names, get_family


@click.command("measures", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("name", required=False)
def measures_command(name):
    """List measure families in alphabetical order, any case (cutoff rule, parameters with
    their allowed values, description, the tool each reproduces), then the profiles. NAME keeps
    the families whose name starts with it or that have it as a name or alias, and the profiles
    whose name starts with it (any case). ranx's metric names (hit_rate@10, ndcg_burges@10,
    rbp.95) are read as these families: see docs/guide.md.

    \b
    Examples:
      nuggetbench measures            nuggetbench measures ndcg      nuggetbench measures trec
    """
    width = console().width
    lines: list[str] = []
    for family in sorted(all_family_names(), key=_order):
        fam = get_family(family)
        if not _matches(name, family, fam.aliases):
            continue
        aliases = f" (also {', '.join(fam.aliases)})" if fam.aliases else ""
        params = [(f"{p.describe().split(': ')[0]}", _meaning(p)) for p in fam.params.values()]
        at = f"@x sets {fam.at_param}" if fam.at_param else f"@k {fam.cutoff}"
        head = f"{family}{aliases}  [{at}]"
        text = f"{fam.description} (source: {fam.source})" if fam.source else fam.description
        lines += [*entry_lines(head, text, params, width), ""]
    profiles = [(n, p) for n, p in PROFILES.items() if _matches(name, n, ())]
    if profiles:
        lines += ["profiles (--profile NAME):", ""]
        for pname, prof in profiles:
            lines += [*entry_lines(f"  {pname}", prof.description, [], width, indent=4), ""]
    if not lines:
        known = [*all_family_names(), *PROFILES]
        raise click.UsageError(
            f"no measure family or profile matches {name!r}.{suggest(name, known)}"
        )
    click.echo("\n".join(lines).rstrip("\n"))


def _order(name: str) -> tuple[str, str]:
    """Alphabetical in any case (``alpha_nDCG`` among the a's, ``nDCG`` among the n's)."""
    return name.casefold(), name


def _matches(name: str | None, canonical: str, aliases: tuple[str, ...] | list[str]) -> bool:
    """*name* (any case) starts *canonical* or is it or one of its *aliases*: ``trec`` keeps
    ``TrecRBP`` and the ``trec_eval`` profiles, not ``G`` (alias ``trec_G``) nor ``StRecall``
    (alias ``strec``)."""
    if name is None:
        return True
    key = name.strip().casefold()
    return canonical.casefold().startswith(key) or key in (a.casefold() for a in aliases)


def _meaning(param) -> str:
    """A parameter's description with its allowed values (when it declares them)."""
    text = param.description
    if param.choices and "one of" not in text:
        text = f"{text} ({param.expected()})" if text else param.expected()
    return text
