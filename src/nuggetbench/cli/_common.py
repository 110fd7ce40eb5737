"""Small helpers shared by commands: consoles, argument loading, rendering."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import click

from nuggetbench.cli._formats import measure_digits
from nuggetbench.cli._tables import Grid, print_grid
from nuggetbench.data.subset import query_subset
from nuggetbench.errors import NuggetbenchError
from nuggetbench.jsonl import json_text
from nuggetbench.llm.secrets import mask_secrets
from nuggetbench.llm.settings import MAX_REPLY_CHARS
from nuggetbench.measures import get_profile, measure_keys
from nuggetbench.spec import split_top


def console(stderr: bool = False):
    from rich.console import Console

    return Console(stderr=stderr, highlight=False)


def warn(message: str) -> None:
    """Print a warning to stderr (yellow), credentials masked."""
    console(stderr=True).print(f"[yellow]warning:[/yellow] {mask_secrets(message)}", markup=True)


def info(message: str) -> None:
    """Print a line to stderr, credentials masked."""
    console(stderr=True).print(mask_secrets(message), markup=False)


def measure_words(values) -> tuple[str, ...]:
    """Each ``-m`` value split at spaces outside parentheses and quotes: ir_measures' command
    line idiom ``-m 'nDCG@10 P@5 AP'`` is three measures (``"nDCG(gains='1=3, 2=9')"`` one).

    Raises:
        NuggetbenchError: unbalanced parentheses.
    """
    out: list[str] = []
    for value in values or ():
        out += [w for w in split_top(value, (" ", "\t", "\n"), where="measure") if w.strip()]
    return tuple(out)


def _checked_measures(ctx: click.Context, param: click.Parameter, value):
    """Parse every ``-m`` as the command line is read: a typo fails before any data is loaded.
    A value holding several measures separated by spaces is split (:func:`measure_words`)."""
    try:
        words = measure_words(value)
        for m in words:
            measure_keys([m])  # trec_eval's names (all_trec, P.5,10) too
    except NuggetbenchError as exc:
        raise click.BadParameter(str(exc), ctx=ctx, param=param) from None
    return words


def _checked_profile(ctx: click.Context, param: click.Parameter, value):
    """Resolve ``--profile`` as the command line is read (before any data is loaded)."""
    if value is not None:
        try:
            get_profile(value)
        except NuggetbenchError as exc:
            raise click.BadParameter(str(exc), ctx=ctx, param=param) from None
    return value


def _measure_option(default: str):
    return click.option(
        "-m",
        "--measure",
        "measures",
        multiple=True,
        callback=_checked_measures,
        metavar="MEASURE",
        help=f"Measure, repeatable (default: {default}).",
    )


#: ``-m/--measure``, repeatable: the measures of ``evaluate`` and ``compare`` (a dataset or a
#: qrels file).
measure_option = _measure_option("the dataset's; nDCG@10 R@100 RR@10 AP for a qrels file")
#: ``run``'s ``-m``: ``run`` scores on a dataset's own judgments, never a qrels file.
run_measure_option = _measure_option("the dataset's, scored on its judgments")


#: The examples of ``-O`` in the help, each valid for the dataset it names
#: (``tests/test_query_subsets.py`` loads each through its family's option check).
OPTION_EXAMPLES = (
    ("beir/msmarco", "split=train"),
    ("fastbook", "chunker=paragraphs:group=1"),
    ("mmarco/german", "max_docs=100000"),
)

#: ``-O KEY=VALUE``, repeatable: dataset loader options (the dataset family declares and types
#: them); ``parse_options`` turns them into a dict.
dataset_option = click.option(
    "-O",
    "--dataset-option",
    "dataset_options",
    multiple=True,
    metavar="KEY=VALUE",
    help="Dataset loader option, repeatable; each dataset family has its own (`nuggetbench "
    "datasets info ID` lists them), e.g. "
    + ", ".join(f"-O {option} ({dataset})" for dataset, option in OPTION_EXAMPLES)
    + ".",
)


def query_options(command):
    """``--queries FILE|IDS``, ``--first-queries N``, ``--sample-queries N`` and
    ``--query-seed S``: keep only some queries of the dataset (every command that takes one);
    :func:`query_subset_of` reads them into a :class:`~nuggetbench.data.subset.QuerySubset`."""
    for opt in reversed(
        [
            click.option(
                "--queries",
                "subset_ids",
                default=None,
                metavar="FILE|IDS",
                help="Only these queries: a file of query ids (one per line) or ids separated "
                "by commas (1,3,5); the judgments are restricted to them, so the averages are "
                "over them. An id that is not the dataset's is an error naming it.",
            ),
            click.option(
                "--first-queries",
                "subset_first",
                type=click.IntRange(min=1),
                default=None,
                metavar="N",
                help="Only the first N queries, in the dataset's order (of --queries, if given).",
            ),
            click.option(
                "--sample-queries",
                "subset_sample",
                type=click.IntRange(min=1),
                default=None,
                metavar="N",
                help="Only a random sample of N queries (of --queries, if given), the same for "
                "the same --query-seed on any machine.",
            ),
            click.option(
                "--query-seed",
                "subset_seed",
                type=int,
                default=0,
                show_default=True,
                metavar="S",
                help="Seed of --sample-queries.",
            ),
        ]
    ):
        command = opt(command)
    return command


def query_subset_of(opts: dict):
    """Pop the :func:`query_options` from *opts* (a command's keyword arguments): the
    :class:`~nuggetbench.data.subset.QuerySubset` they ask for, else ``None``.

    Raises:
        click.UsageError: --first-queries with --sample-queries, or --query-seed without
            --sample-queries.
    """
    ids, first = opts.pop("subset_ids"), opts.pop("subset_first")
    sample, seed = opts.pop("subset_sample"), opts.pop("subset_seed")
    if first is not None and sample is not None:
        raise click.UsageError("--first-queries and --sample-queries exclude each other")
    if seed != 0 and sample is None:
        raise click.UsageError("--query-seed is the seed of --sample-queries; give both")
    return query_subset(ids, first=first, sample=sample, seed=seed)


def endpoint_options(*, plan: bool = False):
    """``--model``, ``--base-url`` and ``--no-api-key``: which model, where, and that the server
    needs no key. One meaning for ``judge``, ``nuggets``, ``answers`` and ``build``; with
    *plan* (``build``) the help says that they override the plan's ``[llm]`` values.

    Precedence: the flag, then (``build``) the plan's ``[llm]``, then ``NUGGETBENCH_LLM_MODEL`` /
    ``NUGGETBENCH_LLM_BASE_URL`` (else ``OPENAI_BASE_URL``, else the OpenAI API)."""
    over = "the plan's [llm] {key}, else " if plan else ""
    options = [
        click.option(
            "--model",
            default=None,
            metavar="NAME",
            help=f"LLM model (default: {over.format(key='model')}NUGGETBENCH_LLM_MODEL).",
        ),
        click.option(
            "--base-url",
            default=None,
            metavar="URL",
            help="OpenAI-compatible endpoint ending in /v1 (default: "
            f"{over.format(key='base_url')}NUGGETBENCH_LLM_BASE_URL, else OPENAI_BASE_URL, else "
            "the OpenAI API).",
        ),
        click.option(
            "--no-api-key",
            is_flag=True,
            help="The server needs no key (a local one): send none, even if one is set"
            + (" (as [llm] no_api_key = true)." if plan else "."),
        ),
    ]

    def decorate(command):
        for opt in reversed(options):
            command = opt(command)
        return command

    return decorate


def no_cache_option(what: str = "judgments"):
    """``--no-cache``: send every LLM request again instead of serving answers cached before
    (the new answers replace them); one meaning for ``judge``, ``answers``, ``nuggets`` and
    ``build`` (as ``cache=false`` in an ``llm_*`` retriever spec)."""
    return click.option(
        "--no-cache",
        is_flag=True,
        help="Send every LLM request again, serving no answer cached before (the new answers "
        f"replace the cached ones): fresh {what} from the endpoint as it is now.",
    )


def request_bounds(*, plan: bool = False):
    """``--timeout``, ``--max-retries`` and ``--max-reply-chars`` (one decorator): how long one
    request may take, how often a failed one is retried, how long a reply may be. One meaning
    for ``judge``, ``nuggets``, ``answers`` and ``build``; with *plan* (``build``) their default
    is ``None`` so that the plan's ``[llm] timeout`` / ``max_retries`` / ``max_reply_chars``
    apply when the flag is not given (else the library's defaults, 120 s, 6 and 1 MiB)."""
    over = "the plan's [llm] {key}, else " if plan else ""
    options = [
        click.option(
            "--timeout",
            type=click.FloatRange(min=0.1),
            default=None if plan else 120.0,
            show_default=not plan,
            metavar="SECONDS",
            help="Seconds one request may take, from connecting to the last byte of the answer"
            + (f" (default: {over.format(key='timeout')}120)." if plan else "."),
        ),
        click.option(
            "--max-retries",
            type=click.IntRange(min=0),
            default=None if plan else 6,
            show_default=not plan,
            help="Retries of a request that timed out or failed (backoff 1 s, doubling, at most "
            "60 s); after that the command stops sending requests"
            + (f" (default: {over.format(key='max_retries')}6)." if plan else "."),
        ),
        click.option(
            "--max-reply-chars",
            type=click.IntRange(min=1),
            default=None if plan else MAX_REPLY_CHARS,
            show_default=not plan,
            metavar="N",
            help="Longest reply kept, in characters (1 MiB of text by default; a grade or JSON "
            "answer is far shorter): a longer one is cut there, stored cut with its length "
            "noted, and counted as unusable"
            + (
                f" (default: {over.format(key='max_reply_chars')}{MAX_REPLY_CHARS})."
                if plan
                else "."
            ),
        ),
    ]

    def decorate(command):
        for opt in reversed(options):
            command = opt(command)
        return command

    return decorate


#: ``--average-over``: which queries a comparison averages (``compare``, ``answers``, ``run``).
average_over_option = click.option(
    "--average-over",
    "average_over",
    type=click.Choice(["qrels", "common"]),
    default="qrels",
    show_default=True,
    help="The queries averaged and tested: qrels (every judged query; one a system lacks is "
    "scored 0, and a significance resting on those is marked with a double dagger) or common "
    "(only the queries every system has). The footer and the JSON say how many each lacks.",
)


def stats_options(command):
    """``--test``, ``--correction``, ``--resamples``, ``--seed`` and ``--average-over``: the
    paired-comparison options of ``compare`` and ``answers`` (passed on to
    :func:`nuggetbench.compare.compare`)."""
    for opt in reversed(
        [
            click.option(
                "--test",
                type=click.Choice(["t", "wilcoxon", "randomization"]),
                default="t",
                show_default=True,
                help="Two-sided paired test.",
            ),
            click.option(
                "--correction",
                type=click.Choice(["holm", "bonferroni", "bh", "none"]),
                default=None,
                help="Multiple-testing correction over the comparisons of each measure "
                "[default: holm with more than two systems, else none].",
            ),
            click.option(
                "--resamples",
                "n_resamples",
                type=click.IntRange(min=1),
                default=10_000,
                show_default=True,
                help="Bootstrap resamples (and Monte Carlo sign flips of the randomization test).",
            ),
            click.option("--seed", type=int, default=0, show_default=True, help="Random seed."),
            average_over_option,
        ]
    ):
        command = opt(command)
    return command


def run_file_options(command):
    """``--ignore-trailing`` and ``--duplicates``: how run files are read (``evaluate`` and
    ``compare``; passed on to :func:`nuggetbench.data.read_run` as ``trailing`` and
    ``duplicates``)."""
    command = click.option(
        "--duplicates",
        type=click.Choice(["first", "error"]),
        default=None,
        help="A run listing a (query, doc) pair twice: 'first' keeps the first occurrence (with "
        "a warning), 'error' refuses the file. Default: 'first' for rank files, 'error' for TREC "
        "and JSON runs (as trec_eval).",
    )(command)
    return click.option(
        "--ignore-trailing",
        is_flag=True,
        help="Ignore fields after the 6th column of run lines, as trec_eval does (default: an "
        "error).",
    )(command)


def run_reading(opts: dict) -> dict[str, str | None]:
    """Pop ``--ignore-trailing`` and ``--duplicates`` from *opts*: ``read_run``'s keywords."""
    trailing = "ignore" if opts.pop("ignore_trailing") else "error"
    return {"trailing": trailing, "duplicates": opts.pop("duplicates")}


def dataset_options(command, *, qrels_file: bool = True):
    """``--profile``, ``--split`` and ``-O KEY=VALUE``: the options every command that scores
    against a dataset takes (the dataset family declares and types the ``-O`` options);
    *qrels_file*: the command also takes a qrels file (its default profile is named)."""
    command = dataset_option(command)
    command = click.option(
        "--split", default=None, help="Dataset split (same as -O split=; default: the dataset's)."
    )(command)
    default = "the dataset's; 'trec_eval -c' for a qrels file" if qrels_file else "the dataset's"
    return click.option(
        "--profile",
        default=None,
        callback=_checked_profile,
        metavar="NAME",
        help=f"Semantics profile: how the judgments are scored (default: {default}). "
        "See `nuggetbench measures`.",
    )(command)


def run_dataset_options(command):
    """``run``'s :func:`dataset_options`: a dataset (id or folder) only, never a qrels file."""
    return dataset_options(command, qrels_file=False)


def parse_options(items, **aliases) -> dict[str, str]:
    """``-O key=value`` pairs -> ``{key: "value"}`` (the dataset family types the values), plus
    the *aliases* that are not ``None`` (older flags such as ``--split``, ``--chunker``).

    Raises:
        click.BadParameter: an item without ``=``.
    """
    out: dict[str, str] = {}
    for item in items or ():
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(
                f"{item!r}: expected KEY=VALUE (e.g. split=dev)", param_hint="-O"
            )
        out[key.strip()] = value.strip()
    out.update({k: v for k, v in aliases.items() if v is not None})
    return out


def render_findings(findings) -> None:
    """Warnings in yellow, the rest as plain lines (stderr)."""
    for f in findings:
        (warn if f.is_warning else info)(f.message)


def render_summaries(summaries, measures: Sequence[str]) -> None:
    """Each extra table (a profile's bootstrap) under the means."""
    for s in summaries:
        render_means_table(s.title, s.rows, measures, digits=s.digits)


def fmt_value(value: float, digits: int | None = 4) -> str:
    """*value* as text: ``nan``, an integer without decimals, else *digits* decimals
    (``None``: full precision, as the machine formats keep it)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "nan"
    if float(value).is_integer() and abs(value) >= 1:
        return str(int(value))
    return repr(float(value)) if digits is None else f"{value:.{digits}f}"


def render_means_table(
    title: str,
    rows: Mapping[str, Mapping[str, float]],
    measures: Sequence[str],
    *,
    digits: int | None = None,
    extra_columns: Mapping[str, Mapping[str, str]] | None = None,
    first: str = "system",
) -> None:
    """Print a rich table: one row per system (or query: *first* heads the column), one column
    per measure, each column with fixed decimals (*digits*, else per measure: 0 for counts, 4).

    Nothing is hidden: a table wider than the console is turned (measures as rows) or split
    into several tables (:func:`nuggetbench.cli._tables.layout`); labels are never split."""
    extra_names: list[str] = []
    for cols in (extra_columns or {}).values():
        extra_names += [c for c in cols if c not in extra_names]
    places = {m: digits if digits is not None else measure_digits(m) for m in measures}
    cells = {
        name: [_fixed(means.get(m, float("nan")), places[m]) for m in measures]
        + [(extra_columns or {}).get(name, {}).get(c, "") for c in extra_names]
        for name, means in rows.items()
    }
    print_grid(console(), title, Grid(first, [*measures, *extra_names], cells))


def _fixed(value: float, digits: int) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "nan"
    return f"{value:.{digits}f}"


def markdown_table(
    rows: Mapping[str, Mapping[str, float]],
    measures: Sequence[str],
    *,
    digits: int = 4,
    first: str = "system",
) -> str:
    lines = ["| " + " | ".join([first, *measures]) + " |", "|" + "---|" * (len(measures) + 1)]
    for name, means in rows.items():
        lines.append(
            "| "
            + " | ".join([name, *(fmt_value(means.get(m, float("nan")), digits) for m in measures)])
            + " |"
        )
    return "\n".join(lines)


def echo_json(obj: Any) -> None:
    """Print *obj* as indented JSON; a NaN or infinite number is ``null``, and a dict gains a
    ``null_values`` entry saying so (JSON has no NaN: :func:`nuggetbench.jsonl.json_text`)."""
    click.echo(json_text(obj, note=True, indent=2, ensure_ascii=False, default=_json_default))


def _json_default(value: Any):
    import numpy as np

    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")
