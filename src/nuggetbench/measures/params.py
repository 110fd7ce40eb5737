"""The measure parameters shared by several families, each declared once.

A family lists the ones it takes (``params = params_table(REL, JUDGED_ONLY)``); ``nuggetbench
measures`` prints their descriptions. :func:`param_for` turns a plain default given by a
plug-in family (``{"rel": 1}``) into the shared declaration, or into a new one of the default's
type.
"""

from __future__ import annotations

from typing import Any

from nuggetbench.spec import REQUIRED, Param, params_table

__all__ = [
    "ALPHA",
    "BETA",
    "DROP_EXTRANEOUS",
    "DROP_IMPLICIT",
    "JUDGED_ONLY",
    "LEGACY",
    "REL",
    "SHARED",
    "param_for",
    "params_table",
]

REL = Param("rel", int, 1, "minimum grade that counts as relevant (trec_eval -l)", minimum=0)
JUDGED_ONLY = Param(
    "judged_only", bool, False, "drop unjudged documents from the ranking first (trec_eval -J)"
)
ALPHA = Param(
    "alpha", float, 0.5, "gain lost by a nugget each time it was seen before (ndeval -alpha)"
)
BETA = Param("beta", float, 0.5, "NRBP's patience: chance of reading on (ndeval -beta)")
DROP_EXTRANEOUS = Param(
    "drop_extraneous", bool, False, "ignore nuggets flagged extraneous (fastbook)"
)
DROP_IMPLICIT = Param("drop_implicit", bool, False, "ignore nuggets flagged implicit (fastbook)")

#: Every shared parameter by name.
LEGACY = Param(
    "legacy",
    bool,
    False,
    "k = floor(r R + 0.9) as trec_eval <= 9.0.8 and pytrec_eval, not 10.0's round(r R)",
)
"""IPrec's interpolation (``trec_eval-9.0.8`` profiles default it to true)."""

SHARED: dict[str, Param] = params_table(
    REL, JUDGED_ONLY, ALPHA, BETA, DROP_EXTRANEOUS, DROP_IMPLICIT, LEGACY
)


def param_for(name: str, default: Any) -> Param:
    """The declaration of a parameter given only by its *default*.

    The shared declaration when *name* is shared and the default agrees with it; otherwise a
    :class:`~nuggetbench.spec.Param` typed by the default (``None`` or :data:`REQUIRED`: any type).
    """
    shared = SHARED.get(name)
    if shared is not None and shared.default == default and type(shared.default) is type(default):
        return shared
    if default is None or default is REQUIRED:
        kind: type = object
    else:
        kind = type(default) if type(default) in (bool, int, float, str) else object
    description = shared.description if shared is not None else ""
    return Param(name, kind, default, description)
