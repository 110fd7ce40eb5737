"""Measures: values parsed from strings, a family registry, profiles and ``score()``.

>>> from nuggetbench.measures import score, parse_measure
>>> str(parse_measure("P(rel=2)@5"))
'P(rel=2)@5'
"""

from nuggetbench.measures.compute import measure_keys, measure_pairs, plain_measures, score
from nuggetbench.measures.context import UNJUDGED, EvalContext, Ranked
from nuggetbench.measures.groups import evaluate_groups
from nuggetbench.measures.measure import Measure
from nuggetbench.measures.profiles import (
    DEFAULT_PROFILE,
    PROFILES,
    Profile,
    get_profile,
    register_profile,
)
from nuggetbench.measures.registry import (
    FAMILY_MODULES,
    MeasureFamily,
    all_family_names,
    get_family,
    register,
)
from nuggetbench.measures.results import Results, read_results
from nuggetbench.measures.spellings import parse_measure, parse_measures

__all__ = [
    "Measure",
    "parse_measure",
    "parse_measures",
    "EvalContext",
    "Ranked",
    "UNJUDGED",
    "score",
    "evaluate_groups",
    "measure_keys",
    "measure_pairs",
    "plain_measures",
    "Profile",
    "PROFILES",
    "DEFAULT_PROFILE",
    "get_profile",
    "register_profile",
    "MeasureFamily",
    "FAMILY_MODULES",
    "register",
    "get_family",
    "all_family_names",
    "Results",
    "read_results",
]
