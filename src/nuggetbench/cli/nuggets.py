"""``nuggetbench nuggets``: nuggets for a dataset's queries from its relevant documents."""

from __future__ import annotations

import click

from nuggetbench.cli._common import (
    dataset_option,
    echo_json,
    info,
    parse_options,
    query_options,
    query_subset_of,
    warn,
)
from nuggetbench.cli._globals import llm_meter
from nuggetbench.cli.judge import CLIENT_KEYS, fail_if_strict, llm_options, strict_option
from nuggetbench.judging import judging_client, nuggets_for_dataset


@click.command("nuggets", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("dataset")
@click.option(
    "-o",
    "--out",
    "out",
    type=click.Path(dir_okay=False),
    required=True,
    help="Nuggets file to write (nuggetizer JSONL: qid, query, nuggets [text, importance]).",
)
@click.option(
    "--rel-level",
    type=click.IntRange(min=0),
    default=None,
    help="Grade a document needs to be used (default: the dataset profile's).",
)
@click.option("--max-nuggets", type=click.IntRange(min=1), default=30, show_default=True)
@click.option(
    "--window",
    type=click.IntRange(min=1),
    default=10,
    show_default=True,
    help="Documents per creation request and nuggets per importance request.",
)
@click.option(
    "--max-docs",
    type=click.IntRange(min=1),
    default=None,
    help="Relevant documents used per query (default all).",
)
@dataset_option
@query_options
@llm_options
@click.option(
    "--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True
)
@strict_option("the file is still written, without those queries")
def nuggets_command(dataset, out, dataset_options, fmt, **kw):
    """Create nuggets for the queries of DATASET from their relevant documents (AutoNuggetizer's
    creation in windows of 10 documents, at most 30 nuggets, then vital/okay), for
    `nuggetbench answers`.

    \b
    Example:
      nuggetbench nuggets beir/scifact --model gpt-4o -o scifact.nuggets.jsonl
    """
    queries = query_subset_of(kw)  # a bad subset fails before any request
    client = judging_client(**{k: kw.pop(k) for k in CLIENT_KEYS})
    try:
        with llm_meter("nuggets", "windows", client.ledger) as progress:
            res = nuggets_for_dataset(
                dataset,
                client,
                out,
                options=parse_options(dataset_options),
                queries=queries,
                progress=progress,
                **kw,
            )
    finally:
        client.close()
    for q, why in res.failed.items():
        warn(f"query {q}: no nuggets ({why}); it is not in the file, so `answers` cannot score it")
    if fmt == "json":
        echo_json(res.to_dict())
    else:
        d = res.to_dict()
        info(
            f"{d['queries']} queries, {d['nuggets']} nuggets ({d['vital']} vital); requests: "
            f"{d['creation_windows']} creation + {d['importance_windows']} importance windows, "
            f"{d['requests_sent']} sent now; wrote {out}"
        )
    fail_if_strict(
        len(res.failed), "queries' answers", kept=f"those queries have no nuggets in {out}"
    )
