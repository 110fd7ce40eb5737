"""``docs/reproductions.md``: the shipped recipes as one markdown page, generated.

:func:`catalog_markdown` depends only on the recipes (never on this machine), so the page in the
repository can be checked against it (``tests/test_reproduce_shipped.py``); regenerate it with
``nuggetbench reproduce --list --format markdown > docs/reproductions.md``.
"""

from __future__ import annotations

from collections.abc import Sequence

from nuggetbench.reproduce.commands import commands_for
from nuggetbench.reproduce.recipe import Condition, Recipe

__all__ = ["catalog_markdown"]

HEAD = """# Reproductions

<!-- Generated from src/nuggetbench/recipes/*.toml by
     `nuggetbench reproduce --list --format markdown > docs/reproductions.md`;
     tests/test_reproduce_shipped.py fails when it is out of date. Do not edit by hand. -->

Each recipe below declares datasets, conditions (a retriever, or published run files), measures
and the values its source publishes. `nuggetbench reproduce NAME` runs it through the code of
`nuggetbench run` and `evaluate` and marks each value reproduced when it is within half a unit of
the last decimal the source prints (or the tolerance written beside it, always with a note);
`--dry-run` prints the equivalent commands. See the guide's section "Reproductions".
"""


def _md(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ").strip()


def _source(recipe: Recipe) -> list[str]:
    s = recipe.source
    where = ", ".join(p for p in (s.version, s.file, s.table) if p)
    lines = [
        f"- Source ({s.kind}): [{_md(s.name)}]({s.url})" + (f", {_md(where)}" if where else "")
    ]
    if s.citation:
        lines.append(f"- Citation: {_md(s.citation)}")
    tol = 0.5 * 10.0**-s.precision
    lines.append(f"- Printed precision: {s.precision} decimals (default tolerance {tol:g})")
    n = recipe.needs
    needs = [f"extras: {', '.join(n.extras)}"] if n.extras else []
    needs += ["a GPU"] * n.gpu + ["an LLM endpoint"] * n.llm
    needs += [f"download {n.download}"] if n.download else []
    needs += [f"run time {n.runtime}"] if n.runtime else []
    needs += [n.notes] if n.notes else []
    lines.append(f"- Needs: {_md('; '.join(needs)) or 'the base install'}")
    return lines


def _condition(recipe: Recipe, cond: Condition, notes: list[str]) -> list[str]:
    how = f"`{cond.retriever}`" if cond.retriever else f"{len(cond.runs)} published run file(s)"
    extra = [f"profile `{cond.profile}`"] if cond.profile else []
    extra += [f"statistic: {cond.statistic}"] if cond.statistic != "mean" else []
    extra += [f"depth {cond.depth}"] if cond.depth != 1000 else []
    lines = [
        f"### {cond.name}: {_md(cond.title)}",
        "",
        f"Ranking: {how}" + "".join(f"; {e}" for e in extra) + ".",
        "",
    ]
    rows = [e for e in recipe.expected if e.condition == cond.name]
    if not rows:
        return [*lines, "No expected values.", ""]
    lines += [
        "| dataset | " + " | ".join(_md(m) for m in cond.measures) + " |",
        "|---|" + "---:|" * len(cond.measures),
    ]
    for e in rows:
        cells = []
        for m in cond.measures:
            cell = f"{e.values[m]:.{recipe.source.precision}f}" if m in e.values else ""
            if m in e.notes:
                notes.append(f"{cond.name}, {e.dataset}, {m}: {e.notes[m]}")
                cell += f" [{len(notes)}]"
            cells.append(cell)
        lines.append(f"| {e.dataset} | " + " | ".join(cells) + " |")
    if cond.retriever:  # a run file's path depends on the machine: no command here
        command = commands_for(recipe, cond, recipe.dataset(rows[0].dataset))[0]
        lines += ["", f"Command (first dataset): `{command}`"]
    return [*lines, ""]


def catalog_markdown(recipes: Sequence[Recipe]) -> str:
    """The page: a heading, the list of recipes, then per recipe its description, source,
    needs and per condition the expected values (notes numbered below each recipe)."""
    out = [HEAD]
    out += [f"- [{r.name}](#{r.name}): {_md(r.title)} ({r.n_values()} values)" for r in recipes]
    out.append("")
    for r in recipes:
        out += [f"## {r.name}", "", f"**{_md(r.title)}.** {_md(r.description)}", ""]
        out += [*_source(r), ""]
        notes: list[str] = []
        for cond in r.conditions:
            out += _condition(r, cond, notes)
        if notes:
            out += ["Notes:", ""] + [f"{i}. {_md(n)}" for i, n in enumerate(notes, 1)] + [""]
    return "\n".join(out).rstrip() + "\n"
