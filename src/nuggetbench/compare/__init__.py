"""Comparing systems: paired tests, bootstrap confidence intervals, multiple-testing corrections.

``compare(results, baseline=..., test="t"|"wilcoxon"|"randomization", correction=...)`` returns a
:class:`ComparisonReport` that renders as a terminal table, Markdown, LaTeX, CSV or JSON.
"""

from nuggetbench.compare.core import baseline_at, compare
from nuggetbench.compare.corrections import CORRECTIONS, adjust_pvalues
from nuggetbench.compare.reporting import (
    CELLS,
    FORMATS,
    ComparisonReport,
    Difference,
    Estimate,
    parse_cells,
)
from nuggetbench.compare.stats import (
    TESTS,
    TestResult,
    birco_bootstrap,
    birco_summary,
    bootstrap_means,
    cohens_d,
    paired_t,
    paired_test,
    percentile_interval,
    randomization,
    wilcoxon,
)
from nuggetbench.compare.summaries import Summary, profile_summaries
from nuggetbench.compare.verify import check_settings, check_stored

__all__ = [
    "compare",
    "baseline_at",
    "check_settings",
    "check_stored",
    "Summary",
    "profile_summaries",
    "ComparisonReport",
    "Estimate",
    "Difference",
    "FORMATS",
    "CELLS",
    "parse_cells",
    "TESTS",
    "CORRECTIONS",
    "adjust_pvalues",
    "TestResult",
    "paired_t",
    "wilcoxon",
    "randomization",
    "paired_test",
    "bootstrap_means",
    "birco_bootstrap",
    "birco_summary",
    "percentile_interval",
    "cohens_d",
]
