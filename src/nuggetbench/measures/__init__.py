"""Measures: values parsed from strings, a family registry, profiles and ``evaluate()``.

>>> from nuggetbench.measures import evaluate, parse_measure
>>> str(parse_measure("P(rel=2)@5"))
'P(rel=2)@5'
"""

from .base import Measure, parse_measure, parse_measures
from .context import UNJUDGED, EvalContext, Ranked
from .evaluate import evaluate, measure_keys, measure_pairs, plain_measures
from .groups import evaluate_groups
from .profiles import DEFAULT_PROFILE, PROFILES, Profile, get_profile, register_profile
from .registry import FAMILY_MODULES, MeasureFamily, all_family_names, get_family, register
from .results import Results, read_results

__all__ = [
    "Measure",
    "parse_measure",
    "parse_measures",
    "EvalContext",
    "Ranked",
    "UNJUDGED",
    "evaluate",
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
