"""The registry of measure families.

A family (``nDCG``, ``AP``, ``alpha_nDCG``...) is an instance of a :class:`MeasureFamily` subclass
that declares its name, aliases, allowed parameters with their defaults, its cutoff rule and how
to compute per-query values from an :class:`~nuggetbench.measures.context.EvalContext`. Families
live in the modules named in :data:`FAMILY_MODULES`, imported the first time a family is looked
up (so ``import nuggetbench`` stays cheap). Adding a family = a module that calls
:func:`register` at import time + one line appended to :data:`FAMILY_MODULES`.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, ClassVar

from nuggetbench.measures.params import param_for
from nuggetbench.plugins import Registry
from nuggetbench.spec import REQUIRED, Param

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from nuggetbench.measures.context import EvalContext
    from nuggetbench.measures.measure import Measure

logger = logging.getLogger(__name__)

__all__ = [
    "REQUIRED",
    "MeasureFamily",
    "register",
    "get_family",
    "find_family",
    "all_family_names",
    "FAMILY_MODULES",
    "FAMILIES",
]

#: Modules that register families, imported on the first lookup (append yours);
#: ``tests/test_plugin_declarations.py`` holds it equal to the package's registering modules.
FAMILY_MODULES: list[str] = [
    "nuggetbench.measures.trec.adhoc",
    "nuggetbench.measures.coverage",
    "nuggetbench.measures.diversity.families",
    "nuggetbench.measures.birco",
    "nuggetbench.measures.beir_custom",
    "nuggetbench.measures.trec.ranked",
    "nuggetbench.measures.trec.sets",
    "nuggetbench.measures.trec.graded",
    "nuggetbench.measures.peers.cwl",
    "nuggetbench.measures.peers.gdeval",
    "nuggetbench.measures.peers.irm",
    "nuggetbench.measures.peers.ranx",
]

#: How a family's per-query values become its one number (see :class:`MeasureFamily`).
AGGREGATES = ("mean", "sum", "gmean")
#: trec_eval's MIN_GEO_MEAN: the floor of a value before its logarithm in a geometric mean.
MIN_GEO_MEAN = 0.00001

#: The family registry (a :class:`nuggetbench.spec.Registry` whose providers are
#: :data:`FAMILY_MODULES`).
FAMILIES = Registry(
    "measure",
    providers=FAMILY_MODULES,
    hint="Run `nuggetbench measures` for the families and their parameters.",
    nearest=3,
)
_FAMILIES: dict[str, Any] = FAMILIES
_ALIASES: dict[str, str] = FAMILIES.aliases
_LOADED: set[str] = FAMILIES.loaded
_FAILED: dict[str, str] = FAMILIES.failed


class MeasureFamily:
    """Base class of measure families.

    Class attributes:
        name: canonical name, as printed (``"nDCG"``).
        aliases: other accepted names (``("ndcg",)``); they parse to *name*.
        params: allowed named parameters, ``{name: Param}`` (see :mod:`nuggetbench.measures.params`
            for the shared ones: ``rel``, ``judged_only``, ``alpha``...). A plain default
            (``{"rel": 1}``) is accepted too and becomes a :class:`~nuggetbench.spec.Param` of the
            default's type at registration; :data:`REQUIRED` marks a parameter without default.
        cutoff: ``"required"``, ``"optional"`` or ``"forbidden"``.
        aggregate: ``"mean"`` (default), ``"sum"`` (counts, as trec_eval's ``all`` line) or
            ``"gmean"`` (trec_eval's ``gm_*``: ``exp(mean(log(max(v, 1e-5))))``, meas_avg.c).
        scalable: whether a profile's ``scale`` applies (False for counts).
        description: one line for listings.
        source: the tool or paper whose numbers the family reproduces, for listings
            (``"ir_measures 0.4.3, provider cwl_eval 1.0.12"``); empty when *description* says it.
        at_param: the parameter that ``@x`` sets instead of a cutoff (ir_measures' ``AT_PARAM``:
            ``IPrec@0.1`` is ``IPrec(recall=0.1)``); ``None``: ``@k`` is the cutoff.
        at_implies: ``((name, value), ...)`` that the ``@x`` spelling also sets unless given:
            ir_measures' semantics where they differ from the family's defaults (``IPrec@0.1``
            is pytrec_eval's, ``legacy=True``).

    Subclasses implement :meth:`compute`.
    """

    name: ClassVar[str] = ""
    aliases: ClassVar[tuple[str, ...]] = ()
    params: ClassVar[dict[str, Param]] = {}
    cutoff: ClassVar[str] = "optional"
    aggregate: ClassVar[str] = "mean"
    scalable: ClassVar[bool] = True
    description: ClassVar[str] = ""
    source: ClassVar[str] = ""
    at_param: ClassVar[str | None] = None
    at_implies: ClassVar[tuple[tuple[str, Any], ...]] = ()

    def compute(self, ctx: EvalContext, measure: Measure) -> np.ndarray:
        """Per-query values, float64 of shape ``(len(ctx.query_ids),)``, aligned with them."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<MeasureFamily {self.name}>"


def register(family: MeasureFamily) -> MeasureFamily:
    """Register a family instance (replacing one of the same name); returns it.

    Raises:
        ValueError: the family has no name, a bad cutoff rule or aggregate, or an alias already
            taken by another family.
    """
    if not family.name:
        raise ValueError(f"{family!r} has no name")
    if family.cutoff not in ("required", "optional", "forbidden"):
        raise ValueError(
            f"family {family.name}: cutoff must be required/optional/forbidden, got {family.cutoff!r}"
        )
    if family.aggregate not in AGGREGATES:
        raise ValueError(
            f"family {family.name}: aggregate must be one of {AGGREGATES}, got {family.aggregate!r}"
        )
    for alias in family.aliases:
        owner = _ALIASES.get(alias)
        if (owner is not None and owner != family.name) or (
            alias in _FAMILIES and alias != family.name
        ):
            raise ValueError(
                f"family {family.name}: alias {alias!r} already names {owner or alias!r}"
            )
    if family.name in _ALIASES and _ALIASES[family.name] != family.name:
        raise ValueError(
            f"family name {family.name!r} is already an alias of {_ALIASES[family.name]!r}"
        )
    family.params = {
        name: value if isinstance(value, Param) else param_for(name, value)
        for name, value in family.params.items()
    }
    if family.at_param is not None and family.at_param not in family.params:
        raise ValueError(f"family {family.name}: at_param {family.at_param!r} is not a parameter")
    FAMILIES.register(family.name, family, aliases=family.aliases)
    return family


def find_family(name: str) -> MeasureFamily | None:
    """The family called *name* (or one of its aliases; else a unique case-insensitive match)."""
    return FAMILIES.find(name, casefold=True)


def get_family(name: str) -> MeasureFamily:
    """The family called *name* (or an alias).

    Raises:
        UnknownNameError: no such family; the message suggests the nearest name.
    """
    return FAMILIES.lookup(name, casefold=True)


def all_family_names() -> list[str]:
    """Canonical names of every registered family, sorted."""
    return FAMILIES.names()
