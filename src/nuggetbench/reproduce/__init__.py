"""Reproductions: published tables declared as recipes, rerun here, each value checked.

A recipe (:mod:`.recipe`, a TOML file; the shipped ones in ``nuggetbench/recipes/``) names the
source of its expected values, the datasets, the conditions (a retriever spec, or published run
files fetched like a dataset), the measures and the values. :func:`reproduce` runs it through the
code behind ``nuggetbench run`` and ``evaluate`` (:func:`~nuggetbench.experiment.run_experiment`,
:func:`~nuggetbench.evaluation.evaluate_dataset`, their caches and output folders) and returns a
:class:`Reproduction`: each value reproduced, not reproduced, or skipped with the exact reason
(no data offline, a missing extra, no GPU, no endpoint). ``nuggetbench reproduce`` is the command.

    >>> from nuggetbench.reproduce import find_recipe, reproduce
    >>> rep = reproduce(find_recipe("fastbook-bm25"))          # doctest: +SKIP
    >>> rep.summary_line()                                     # doctest: +SKIP
    '2 of 2 values reproduced, 0 skipped'
"""

from nuggetbench.reproduce.catalog import find_recipe, recipe_names, recipes_folder, shipped_recipes
from nuggetbench.reproduce.docs import catalog_markdown
from nuggetbench.reproduce.needs import Readiness, readiness
from nuggetbench.reproduce.outcome import (
    NOT_REPRODUCED,
    REPRODUCED,
    SKIPPED,
    Reproduction,
    ValueCheck,
    merge_counts,
)
from nuggetbench.reproduce.page import render_reproductions_page, write_reproductions_page
from nuggetbench.reproduce.parse import parse_recipe, read_recipe
from nuggetbench.reproduce.recipe import (
    Condition,
    DatasetRef,
    Expected,
    Needs,
    Recipe,
    RunFile,
    Source,
)
from nuggetbench.reproduce.render import (
    listing_csv,
    listing_records,
    listing_text,
    results_csv,
    results_markdown,
    results_records,
    results_table,
)
from nuggetbench.reproduce.runner import matches, reproduce, select

__all__ = [
    "NOT_REPRODUCED",
    "REPRODUCED",
    "SKIPPED",
    "Condition",
    "DatasetRef",
    "Expected",
    "Needs",
    "Readiness",
    "Recipe",
    "Reproduction",
    "RunFile",
    "Source",
    "ValueCheck",
    "catalog_markdown",
    "find_recipe",
    "listing_csv",
    "listing_records",
    "listing_text",
    "matches",
    "merge_counts",
    "parse_recipe",
    "read_recipe",
    "readiness",
    "recipe_names",
    "recipes_folder",
    "render_reproductions_page",
    "reproduce",
    "results_csv",
    "results_markdown",
    "results_records",
    "results_table",
    "select",
    "shipped_recipes",
    "write_reproductions_page",
]
