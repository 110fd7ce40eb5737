"""``nuggetbench retrievers``: the retriever prefixes, wrappers and fusion, with their options."""

from __future__ import annotations

import click
from rich.table import Table

from nuggetbench.cli._common import console
from nuggetbench.plugins import lookup
from nuggetbench.retrieval import spec as retrieval_spec
from nuggetbench.retrieval.spec import (
    FUSE_PARAMS,
    list_retrievers,
    retriever_class,
    retriever_params,
)


@click.command("retrievers", context_settings={"help_option_names": ["-h", "--help"]})
def retrievers_command():
    """List retriever specs (prefix:option=value,...), wrappers, fuse(...) and their options.

    \b
    Examples:
      -r bm25:k1=0.9,b=0.4     -r dense:MODEL,batch_size=64     -r "bm25 >> rerank:MODEL@100"
      -r "fuse(bm25, dense:MODEL; method=rrf)"     -r "hyde(bm25; model=gpt-4o-mini)"
    """
    table = Table(title="retrievers (-r SPEC)", title_justify="left")
    for column in ("spec", "option=default: meaning", "description"):
        table.add_column(column, overflow="fold")
    # registries read at call time (plugins may register after this module was imported)
    for prefix in list_retrievers():
        cls = retriever_class(prefix)
        table.add_row(f"{prefix}:...", _options(retriever_params(cls)), _summary(cls))
    for name in sorted(retrieval_spec.WRAPPERS):
        cls = lookup(retrieval_spec.WRAPPERS, name, kind="retriever wrapper")
        table.add_row(f"{name}(RETRIEVER; ...)", _options(retriever_params(cls)), _summary(cls))
    table.add_row(
        "fuse(A, B, ...; ...)", _options(FUSE_PARAMS), "fuse the runs of several retrievers"
    )
    table.add_row("A >> B", "", "B re-ranks the top of A (a reranker, or a retriever's index)")
    table.add_row(
        "SPEC,name=LABEL",
        "name=: a label",
        "any spec: the system's name in tables, results and run files (e.g. "
        "bm25:preset=pyserini,name=pyserini; fuse(a, b; method=rrf, name=hybrid))",
    )
    console().print(table)


def _options(params) -> str:
    return "\n".join(p.describe() for p in params.values())


def _summary(cls) -> str:
    first = (cls.__doc__ or "").strip().splitlines()[:1]
    return first[0].replace("``", "") if first else ""
