"""Evaluation profiles: named semantics that differ between tools.

A :class:`Profile` fixes what tools disagree on: which queries are averaged, the order of tied
scores, a scale for the reported values, and optional hooks that choose the queries or transform
the qrels and run before evaluation (for tool-specific conventions such as self-hit removal).
``evaluate()`` only reads these fields, so a new convention is a new profile, not a new branch in
``evaluate()``.

Registered here:

* ``"trec_eval -c"`` (the default): every judged query counts; a judged query missing from the run
  is scored on an empty ranking (0 on every measure but ``NumRel``), as ``trec_eval -c``.
* ``"trec_eval"``: only queries present in both the run and the qrels, as plain ``trec_eval``
  (and ``pytrec_eval``).

Other modules register more (``ndeval``, ``freshstack``, ``birco``, ``fastbook``); modules named
in :data:`PROFILE_MODULES` (and the measure modules of the family registry) are imported before a
lookup fails.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import UnknownNameError, suggest

if TYPE_CHECKING:  # pragma: no cover
    from ..data.qrels import Qrels
    from ..data.run import Run

logger = logging.getLogger(__name__)

__all__ = [
    "Profile",
    "register_profile",
    "get_profile",
    "PROFILES",
    "DEFAULT_PROFILE",
    "PROFILE_MODULES",
    "AVERAGE_OVER",
]

#: ``"qrels"``: every judged query counts (missing from the run = empty ranking);
#: ``"run_and_qrels"``: only queries in both.
AVERAGE_OVER = ("qrels", "run_and_qrels")
DEFAULT_PROFILE = "trec_eval -c"
#: Modules that register profiles, imported when a profile name is not found (append yours).
PROFILE_MODULES: list[str] = []


@dataclass(frozen=True)
class Profile:
    """A named set of evaluation conventions.

    Attributes:
        name: the profile's name (``"trec_eval -c"``).
        description: one line for listings and provenance.
        average_over: ``"qrels"`` or ``"run_and_qrels"`` (see :data:`AVERAGE_OVER`); ignored when
            *select_queries* is given.
        tie_break: order of tied scores inside a query: ``"docid_desc"`` (trec_eval) or
            ``"docid_asc"`` (pyndeval, FreshStack).
        scale: factor applied to per-query values of scalable families (e.g. 100 for percent).
        select_queries: optional ``f(qrels, run) -> iterable of query ids``: the evaluated
            queries (a query absent from the run is scored on an empty ranking; one absent from
            the qrels has no relevant documents).
        transform: optional ``f(qrels, run) -> (qrels, run)`` applied before anything else
            (e.g. removing self-hits, restricting to a candidate pool).
        options: free-form settings that families of this profile may read
            (``ctx.profile.options``).
    """

    name: str
    description: str = ""
    average_over: str = "qrels"
    tie_break: str = "docid_desc"
    scale: float = 1.0
    select_queries: Callable[[Qrels, Run], Iterable[str]] | None = field(
        default=None, compare=False
    )
    transform: Callable[[Qrels, Run], tuple[Qrels, Run]] | None = field(default=None, compare=False)
    options: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def __post_init__(self) -> None:
        if self.average_over not in AVERAGE_OVER:
            raise ValueError(
                f"profile {self.name!r}: average_over must be one of {AVERAGE_OVER}, got {self.average_over!r}"
            )
        if self.tie_break not in ("docid_desc", "docid_asc"):
            raise ValueError(
                f"profile {self.name!r}: tie_break must be 'docid_desc' or 'docid_asc', got {self.tie_break!r}"
            )
        if not (isinstance(self.scale, (int, float)) and self.scale > 0):
            raise ValueError(
                f"profile {self.name!r}: scale must be a positive number, got {self.scale!r}"
            )

    def __str__(self) -> str:
        return self.name


#: Registered profiles by name.
PROFILES: dict[str, Profile] = {}


def register_profile(profile: Profile, *, replace: bool = False) -> Profile:
    """Register *profile* under its name; returns it.

    Raises:
        ValueError: a different profile already has that name and *replace* is false.
    """
    old = PROFILES.get(profile.name)
    if old is not None and old is not profile and not replace:
        raise ValueError(
            f"profile {profile.name!r} is already registered (pass replace=True to override)"
        )
    PROFILES[profile.name] = profile
    return profile


def _import_profile_modules() -> None:
    from .registry import _load

    _load()
    for module in list(PROFILE_MODULES):
        try:
            importlib.import_module(module)
        except Exception as exc:
            logger.warning(
                "profile module %s failed to import: %s: %s", module, type(exc).__name__, exc
            )


def get_profile(profile: str | Profile | None = None) -> Profile:
    """The profile named *profile* (``None``: the default, ``"trec_eval -c"``).

    A :class:`Profile` value is returned as is.

    Raises:
        UnknownNameError: no such profile; the nearest name is suggested.
    """
    if isinstance(profile, Profile):
        return profile
    name = DEFAULT_PROFILE if profile is None else profile
    if name not in PROFILES:
        _import_profile_modules()
    if name not in PROFILES and name.split()[:1] == ["ndeval"]:
        return _ndeval_command_line(name)
    if name not in PROFILES:
        raise UnknownNameError(
            f"unknown evaluation profile {name!r}.{suggest(name, list(PROFILES))} "
            f"Known profiles: {', '.join(sorted(PROFILES))}"
        )
    return PROFILES[name]


def _ndeval_command_line(name: str) -> Profile:
    """``ndeval [-c] [-traditional] [-M N]`` spelled as on ndeval's command line, in any order."""
    from .diversity import ndeval_profile

    words = name.split()[1:]
    options: dict = {}
    i = 0
    while i < len(words):
        word = words[i]
        if word == "-c":
            options["complete"] = True
        elif word == "-traditional":
            options["traditional"] = True
        elif word == "-M" and i + 1 < len(words) and words[i + 1].isdigit():
            options["depth"] = int(words[i + 1])
            i += 1
        else:
            raise UnknownNameError(
                f"unknown ndeval option {word!r} in profile {name!r}: the profile takes -c, "
                "-traditional and -M N (-alpha and -beta are measure parameters: "
                "alpha_nDCG(alpha=0.8)@20, NRBP(alpha=0.8,beta=0.7))"
            )
        i += 1
    return ndeval_profile(**options)


register_profile(
    Profile(
        name="trec_eval -c",
        description="every judged query counts; a judged query missing from the run scores 0 "
        "(trec_eval -c); ties by doc id descending",
        average_over="qrels",
    )
)
register_profile(
    Profile(
        name="trec_eval",
        description="only queries in both the run and the qrels (trec_eval's and pytrec_eval's "
        "default); ties by doc id descending",
        average_over="run_and_qrels",
    )
)
