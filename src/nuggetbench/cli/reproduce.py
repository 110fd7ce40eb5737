"""``nuggetbench reproduce``: run published tables' recipes and check every value (2CR style)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import click

from nuggetbench.cli._common import echo_json, info
from nuggetbench.cli._globals import progress_wanted
from nuggetbench.reproduce import (
    catalog_markdown,
    find_recipe,
    listing_csv,
    listing_records,
    listing_text,
    matches,
    reproduce,
    results_csv,
    results_markdown,
    results_table,
    shipped_recipes,
    write_reproductions_page,
)


def _models(ctx: click.Context, param: click.Parameter, value) -> dict[str, str]:
    out = {}
    for item in value or ():
        model, sep, folder = item.partition("=")
        if not sep or not model.strip() or not folder.strip():
            raise click.BadParameter(f"{item!r}: expected MODEL_ID=FOLDER", ctx=ctx, param=param)
        if not Path(folder).expanduser().is_dir():
            raise click.BadParameter(f"{folder!r} is not a folder", ctx=ctx, param=param)
        out[model.strip()] = str(Path(folder).expanduser().resolve())
    return out


#: Why ``reproduce`` takes no query subset (``--queries``, ``--first-queries``...).
NO_SUBSET = (
    "{opt}: reproduce runs every query of each dataset, because a recipe's expected values are "
    "means over the whole query set: a subset's mean would be checked against a number it "
    "cannot reproduce. To try a recipe on a few queries, print its commands with --dry-run "
    "and add {opt} to them (nothing is checked then)"
)


def _no_subset(ctx: click.Context, param: click.Parameter, value) -> None:
    if value is not None:
        raise click.UsageError(NO_SUBSET.format(opt=param.opts[0]), ctx=ctx)


def _refused_subsets(command):
    """``run``'s query-subset options, hidden here and refused with the reason
    (:data:`NO_SUBSET`) rather than click's "no such option"."""
    for name in ("--queries", "--first-queries", "--sample-queries", "--query-seed"):
        command = click.option(
            name, hidden=True, expose_value=False, default=None, callback=_no_subset
        )(command)
    return command


@click.command("reproduce", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("recipes", nargs=-1, metavar="[NAME|FILE]...")
@click.option(
    "--list",
    "listing",
    is_flag=True,
    help="List the shipped recipes (or the named "
    "ones): conditions, datasets, measures, needs, and whether each can run here.",
)
@click.option(
    "--condition",
    "conditions",
    multiple=True,
    metavar="C",
    help="Run only this condition (repeatable).",
)
@click.option(
    "--dataset",
    "datasets",
    multiple=True,
    metavar="D",
    help="Run only on this dataset, by id or label (repeatable).",
)
@click.option(
    "--all",
    "run_all",
    is_flag=True,
    help="Every condition of the named recipes; with no NAME, every shipped recipe.",
)
@click.option(
    "--dry-run",
    is_flag=True,
    help="Print the equivalent `nuggetbench run` / `evaluate` commands; run nothing.",
)
@click.option("--strict", is_flag=True, help="A skipped value fails too (exit 1).")
@click.option(
    "-o",
    "--output",
    "outdir",
    type=click.Path(file_okay=False),
    default=None,
    help="Write OUT/<recipe>/: a `run` output folder per dataset and reproduction.json.",
)
@click.option("--overwrite", is_flag=True, help="Replace what OUT/<recipe>/ already holds.")
@click.option(
    "--report",
    "report_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="Also write one self-contained HTML page of the results.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "markdown", "json", "csv"]),
    default="table",
    show_default=True,
    help="How to print the table (with --list: markdown is docs/reproductions.md).",
)
@click.option(
    "--model",
    "models",
    multiple=True,
    callback=_models,
    metavar="ID=FOLDER",
    help="Use a local copy of a model named in a recipe (repeatable), e.g. "
    "sentence-transformers/all-MiniLM-L6-v2=/path/to/weights.",
)
@click.option(
    "--ray",
    default=None,
    metavar="ADDRESS",
    envvar="NUGGETBENCH_RAY_ADDRESS",
    help="As `run --ray`: sharded indexes on a Ray cluster (auto, local or HOST:PORT).",
)
@click.option(
    "--no-cache", is_flag=True, help="Always retrieve, never serve a run from the run cache."
)
@_refused_subsets
def reproduce_command(recipes, listing, conditions, datasets, run_all, fmt, **opts):
    """Run the recipes NAME (shipped; see --list) or FILE (a recipe .toml of your own) through
    the code of `run` and `evaluate`, and print expected, obtained, difference and a mark per
    value; the last line is "n of m values reproduced, k skipped". Exit status: 0 when every
    value that ran reproduced, 1 when one did not (or, with --strict, one was skipped), 2 for a
    usage error. Every query of each dataset is run (the expected values are over all of them:
    no --queries/--first-queries/--sample-queries here; --dry-run prints the `run` commands,
    which take them).

    \b
    Examples:
      nuggetbench reproduce --list
      NUGGETBENCH_DATA=../shared/data nuggetbench reproduce beir-bm25-flat --dataset beir/scifact
      nuggetbench reproduce birco --dry-run
    """
    if not recipes and not (listing or run_all):
        raise click.UsageError("name a recipe (or a recipe file), or give --list or --all")
    loaded = [find_recipe(r) for r in recipes] if recipes else shipped_recipes()
    if listing:
        return _list(loaded, fmt)
    loaded = _selected(loaded, conditions, datasets)
    done = [
        reproduce(
            recipe,
            conditions=list(conditions) or None,
            datasets=list(datasets) or None,
            outdir=opts["outdir"],
            overwrite=opts["overwrite"],
            models=opts["models"],
            ray=opts["ray"],
            cache_runs=not opts["no_cache"],
            show_progress=progress_wanted() and fmt == "table",
            dry_run=opts["dry_run"],
            progress=lambda line: info(f"reproduce: {line}"),
        )
        for recipe in loaded
    ]
    _finish(done, fmt, opts)


def _selected(loaded, conditions, datasets):
    """With several recipes, those that declare the --condition / --dataset given (one recipe
    is checked by ``reproduce`` itself, which names what it declares)."""
    if len(loaded) < 2 or not (conditions or datasets):
        return loaded
    kept = [r for r in loaded if matches(r, list(conditions) or None, list(datasets) or None)]
    if not kept:
        raise click.UsageError(
            "no recipe has expected values for --condition "
            f"{', '.join(conditions) or 'any'} on --dataset {', '.join(datasets) or 'any'}"
        )
    return kept


def _width() -> int:
    return shutil.get_terminal_size((80, 24)).columns


def _list(recipes, fmt: str) -> None:
    if fmt == "markdown":
        click.echo(catalog_markdown(recipes), nl=False)
    elif fmt == "json":
        echo_json({"recipes": listing_records(recipes)})
    elif fmt == "csv":
        click.echo(listing_csv(recipes), nl=False)
    else:
        click.echo(listing_text(recipes, _width()), nl=False)


def _finish(done, fmt: str, opts: dict) -> None:
    """Print the results in *fmt*, the commands with --dry-run, write the page; exit 1 when a
    value was not reproduced (or skipped under --strict)."""
    if opts["dry_run"] and fmt == "table":
        for rep in done:
            click.echo(f"# {rep.recipe.name}: {rep.recipe.title}")
            for cond, lines in rep.commands.items():
                click.echo(f"# condition {cond}")
                click.echo("\n".join(lines))
            click.echo("")
    elif fmt == "json":
        echo_json({"reproductions": [rep.to_dict() for rep in done]})
    elif fmt == "csv":
        click.echo(results_csv(done), nl=False)
    elif fmt == "markdown":
        click.echo(results_markdown(done), nl=False)
    else:
        click.echo(results_table(done, _width()), nl=False)
    if opts["report_path"]:
        info(f"report written to {write_reproductions_page(done, opts['report_path'])}")
    if opts["outdir"] and not opts["dry_run"]:
        for rep in done:
            info(f"results saved in {Path(opts['outdir']) / rep.recipe.name}")
    if not all(rep.ok(strict=opts["strict"]) for rep in done):
        sys.exit(1)
