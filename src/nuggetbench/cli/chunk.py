"""``nuggetbench chunk NOTEBOOKS... --chunker SPEC -o corpus.jsonl``."""

from __future__ import annotations

import click

from nuggetbench.cli._common import info
from nuggetbench.corpus import chunk_notebooks, parse_chunker
from nuggetbench.data import write_corpus_jsonl


@click.command("chunk", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("notebooks", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option(
    "-c",
    "--chunker",
    "spec",
    default="paragraphs:group=3,headers=true",
    show_default=True,
    help="Chunker spec: paragraphs[:group=N,headers=BOOL,code=BOOL,outputs=BOOL], "
    "tokens:size=N[,overlap=M,tokenizer=whitespace|tiktoken:ENC|hf:PATH], "
    "cells[:headers=BOOL,outputs=BOOL].",
)
@click.option(
    "-o",
    "--output",
    required=True,
    type=click.Path(dir_okay=False),
    help="The BEIR corpus file to write (JSONL: _id, title, text, metadata).",
)
@click.option(
    "--stop-at",
    default="## Questionnaire",
    show_default=True,
    help="Stop reading a notebook at the first markdown cell containing this text "
    "(empty: read every cell).",
)
@click.option("--no-cache", is_flag=True, help="Do not read or write the chunk cache.")
def chunk_command(notebooks, spec, output, stop_at, no_cache):
    """Cut NOTEBOOKS (.ipynb) into passages and write them as a BEIR corpus.

    \b
    Examples:
      nuggetbench chunk nbs/*.ipynb -o corpus.jsonl
      nuggetbench chunk nbs/*.ipynb -c tokens:size=256,overlap=32 -o corpus.jsonl
    """

    chunker = parse_chunker(spec)
    corpus = chunk_notebooks(notebooks, chunker, stop_at=stop_at or None, cache=not no_cache)
    write_corpus_jsonl(corpus.iter_documents(), output)
    per_notebook: dict[str, int] = {}
    for doc in corpus.iter_documents():
        per_notebook[doc.metadata["notebook"]] = per_notebook.get(doc.metadata["notebook"], 0) + 1
    counts = ", ".join(f"{name} {n}" for name, n in per_notebook.items())
    info(
        f"{len(corpus)} passages ({chunker.spec}) from {len(notebooks)} notebook(s) -> {output}"
        + (f" [{counts}]" if counts else "")
    )
