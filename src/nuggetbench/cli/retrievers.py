"""``nuggetbench retrievers``: the retriever prefixes, wrappers and fusion, with their options."""

from __future__ import annotations

import re

import click

from nuggetbench.cli._common import console
from nuggetbench.cli._tables import entry_lines
from nuggetbench.errors import suggest
from nuggetbench.plugins import lookup
from nuggetbench.retrieval import spec as retrieval_spec
from nuggetbench.retrieval.spec import (
    FUSE_PARAMS,
    list_retrievers,
    retriever_class,
    retriever_params,
)
from nuggetbench.spec import format_literal


@click.command("retrievers", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("name", required=False)
def retrievers_command(name):
    """List retriever specs (prefix:option=value,... or, for the LLM rerankers,
    prefix(option=value, ...)), wrappers, fuse(...) and their options (every preset and allowed
    value); NAME keeps the entries whose name contains it.

    \b
    Examples:
      -r bm25:k1=0.9,b=0.4     -r dense:MODEL,batch_size=64     -r "bm25 >> rerank:MODEL@100"
      -r "fuse(bm25, dense:MODEL; method=rrf)"     -r "hyde(bm25; model=gpt-4o-mini)"
      -r bm25:preset=lucene-flat,name=pyserini   (name=LABEL: the system's name in tables)
      nuggetbench retrievers bm25
    """
    width = console().width
    entries = _entries()
    chosen = [e for e in entries if name is None or name.lower() in e[0].lower()]
    if not chosen:
        known = [e[0].split(":")[0].split("(")[0] for e in entries]
        raise click.UsageError(f"no retriever matches {name!r}.{suggest(name, known)}")
    lines: list[str] = [] if name else ["retrievers (-r SPEC):", ""]
    for head, description, params in chosen:
        lines += [*entry_lines(head, description, params, width), ""]
    click.echo("\n".join(lines).rstrip("\n"))


def _entries() -> list[tuple[str, str, list[tuple[str, str]]]]:
    """``(head, description, [(option=default, meaning)])`` of every prefix, wrapper, fusion,
    pipeline and label (registries read at call time: plugins may register late)."""
    out = []
    for prefix in list_retrievers():
        cls = retriever_class(prefix)
        summary = _summary(cls)
        out.append((_head(prefix, summary), summary, _presets(cls) + _options(cls)))
    for wrapper in sorted(retrieval_spec.WRAPPERS):
        cls = lookup(retrieval_spec.WRAPPERS, wrapper, kind="retriever wrapper")
        out.append((f"{wrapper}(RETRIEVER; OPTION=VALUE,...)", _summary(cls), _options(cls)))
    out.append(
        (
            "fuse(A, B, ...; OPTION=VALUE,...)",
            "fuse the runs of several retrievers",
            [_option(p) for p in FUSE_PARAMS.values()],
        )
    )
    out.append(("A >> B", "B re-ranks the top of A (a reranker, or a retriever's index)", []))
    out.append(
        (
            "SPEC:...,name=LABEL",
            "any spec takes name=: the system's name in tables, results and run files; written "
            "after the prefix's colon like any option (bm25:name=x, "
            "bm25:k1=0.9,b=0.4,name=tuned; fuse(a, b; method=rrf, name=hybrid))",
            [],
        )
    )
    return out


def _head(prefix: str, summary: str) -> str:
    """How a spec of *prefix* is written: ``prefix(OPTION=VALUE, ...)`` when its description
    writes it so (the LLM rerankers: ``llm_listwise(model=M, k=100)``), else
    ``prefix:OPTION=VALUE,...`` (both are accepted for every registered retriever)."""
    if re.search(rf"\b{re.escape(prefix)}\(", summary):
        return f"{prefix}(OPTION=VALUE, ...)"
    return f"{prefix}:OPTION=VALUE,..."


def _options(cls) -> list[tuple[str, str]]:
    return [_option(p) for p in retriever_params(cls).values()]


def _option(param) -> tuple[str, str]:
    head = param.describe().split(": ")[0]
    text = param.description
    if param.choices and "one of" not in text:
        text = f"{text} ({param.expected()})" if text else param.expected()
    return head, text


def _presets(cls) -> list[tuple[str, str]]:
    """``preset=`` with every preset, the options it sets and what it reproduces."""
    presets = getattr(cls, "PRESETS", None) or {}
    if not presets:
        return []
    notes = getattr(cls, "PRESET_NOTES", None) or {}
    listed = "; ".join(
        f"{name} ({', '.join(f'{k}={format_literal(v)}' for k, v in opts.items())}"
        + (f": {notes[name]}" if name in notes else "")
        + ")"
        for name, opts in presets.items()
    )
    return [("preset=", f"a named set of options (explicit options win): {listed}")]


def _summary(cls) -> str:
    """The class docstring's first paragraph (whole sentences, markup dropped)."""
    doc = (cls.__doc__ or "").strip().split("\n\n")[0]
    text = " ".join(doc.split()).replace("``", "")
    return re.sub(r"[;,]? see the module docstring", "", text)
