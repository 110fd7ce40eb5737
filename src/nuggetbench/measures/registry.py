"""The registry of measure families.

A family (``nDCG``, ``AP``, ``alpha_nDCG``...) is an instance of a :class:`MeasureFamily` subclass
that declares its name, aliases, allowed parameters with their defaults, its cutoff rule and how
to compute per-query values from an :class:`~nuggetbench.measures.context.EvalContext`. Families
live in the modules named in :data:`FAMILY_MODULES`, imported the first time a family is looked
up (so ``import nuggetbench`` stays cheap). Adding a family = a module that calls
:func:`register` at import time + one line appended to :data:`FAMILY_MODULES`.
"""

from __future__ import annotations

import importlib
import logging
from typing import TYPE_CHECKING, Any, ClassVar

from ..errors import UnknownNameError, suggest

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from .base import Measure
    from .context import EvalContext

logger = logging.getLogger(__name__)

__all__ = [
    "REQUIRED",
    "MeasureFamily",
    "register",
    "get_family",
    "find_family",
    "all_family_names",
    "FAMILY_MODULES",
]

#: Modules that register families, imported on the first lookup (append yours).
FAMILY_MODULES: list[str] = [
    "nuggetbench.measures.trec",
    "nuggetbench.measures.nuggets",
    "nuggetbench.measures.diversity",
    "nuggetbench.measures.birco",
]

_FAMILIES: dict[str, MeasureFamily] = {}
_ALIASES: dict[str, str] = {}
_LOADED: set[str] = set()
_FAILED: dict[str, str] = {}


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


#: Default value marking a parameter that must be given (``Family(name=...)``).
REQUIRED: Any = _Required()


class MeasureFamily:
    """Base class of measure families.

    Class attributes:
        name: canonical name, as printed (``"nDCG"``).
        aliases: other accepted names (``("ndcg",)``); they parse to *name*.
        params: allowed named parameters and their defaults (``{"rel": 1}``); parsing converts
            values to the default's type (int, float, bool, str); :data:`REQUIRED` marks a
            parameter without default.
        cutoff: ``"required"``, ``"optional"`` or ``"forbidden"``.
        aggregate: ``"mean"`` (default) or ``"sum"`` (counts, as trec_eval's ``all`` line).
        scalable: whether a profile's ``scale`` applies (False for counts).
        description: one line for listings.

    Subclasses implement :meth:`compute`.
    """

    name: ClassVar[str] = ""
    aliases: ClassVar[tuple[str, ...]] = ()
    params: ClassVar[dict[str, Any]] = {}
    cutoff: ClassVar[str] = "optional"
    aggregate: ClassVar[str] = "mean"
    scalable: ClassVar[bool] = True
    description: ClassVar[str] = ""

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
    if family.aggregate not in ("mean", "sum"):
        raise ValueError(
            f"family {family.name}: aggregate must be 'mean' or 'sum', got {family.aggregate!r}"
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
    _FAMILIES[family.name] = family
    for alias in family.aliases:
        _ALIASES[alias] = family.name
    return family


def _load() -> None:
    for module in list(FAMILY_MODULES):
        if module in _LOADED:
            continue
        _LOADED.add(module)
        try:
            importlib.import_module(module)
        except Exception as exc:  # a broken optional module must not hide the others
            _FAILED[module] = f"{type(exc).__name__}: {exc}"
            logger.warning("measure module %s failed to import: %s", module, _FAILED[module])


def find_family(name: str) -> MeasureFamily | None:
    """The family called *name* (or one of its aliases; else a unique case-insensitive match)."""
    _load()
    if name in _FAMILIES:
        return _FAMILIES[name]
    if name in _ALIASES:
        return _FAMILIES[_ALIASES[name]]
    lowered = name.lower()
    matches = {f for f in _FAMILIES if f.lower() == lowered}
    matches |= {target for alias, target in _ALIASES.items() if alias.lower() == lowered}
    if len(matches) == 1:
        return _FAMILIES[matches.pop()]
    return None


def get_family(name: str) -> MeasureFamily:
    """The family called *name* (or an alias).

    Raises:
        UnknownNameError: no such family; the message suggests the nearest name.
    """
    family = find_family(name)
    if family is not None:
        return family
    hint = suggest(name, [*_FAMILIES, *_ALIASES])
    broken = ""
    if _FAILED:
        broken = (
            " (some measure modules failed to import: "
            + "; ".join(f"{m}: {e}" for m, e in _FAILED.items())
            + ")"
        )
    raise UnknownNameError(
        f"unknown measure {name!r}.{hint} Known families: {', '.join(sorted(_FAMILIES))}{broken}"
    )


def all_family_names() -> list[str]:
    """Canonical names of every registered family, sorted."""
    _load()
    return sorted(_FAMILIES)
