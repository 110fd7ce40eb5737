"""Measure values and the measure grammar: ir_measures' spelling, read one way.

A :class:`Measure` is a frozen value ``(family, cutoff, params)``. ``str(measure)`` prints the
ir_measures spelling: the family name, then the parameters in parentheses in the order they were
given, then ``@cutoff`` (``nDCG@10``, ``P(rel=2)@5``, ``alpha_nDCG(alpha=0.5)@20``, ``Rprec``).
:func:`parse_spelling` reads that spelling back, so ``str(parse_spelling(s)) == s`` for every
canonical string. It also accepts a family's aliases (``map``, ``MRR``...), a case-insensitive
family name when it is unambiguous (ir_measures' ``BPref``, ``RPrec``; ``α_nDCG`` is
``alpha_nDCG``) and, for a family with an ``at_param``, ir_measures' ``IPrec@0.1`` (``@`` sets
``recall``); those print back canonically.

It reads no other tool's names: ranx's (``hit_rate@10``) and trec_eval's (``ndcg_cut.10``,
``P_5``, ``all_trec``) are translated into this spelling before it is asked, where they enter
(:func:`nuggetbench.measures.spellings.parse_measure`, the public reader, and
:func:`nuggetbench.measures.compute.measure_pairs` for lists); this module imports neither table.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from nuggetbench.errors import SpecError
from nuggetbench.measures.registry import find_family, get_family
from nuggetbench.spec import (
    format_literal,
    parse_literal,
    split_call_spec,
    split_options,
    split_top,
)

__all__ = ["Measure", "check_measure", "parse_spelling", "format_value"]

_INT_RE = re.compile(r"^[+-]?\d+$")
#: ir_measures prints a dict parameter in braces (``nDCG(gains={1:3,2:9})``): read as one string.
_BRACED = re.compile(r"=\s*(\{[^{}'\"]*\})")


@dataclass(frozen=True)
class Measure:
    """One measure: a family, an optional cutoff and named parameters.

    Attributes:
        family: canonical family name (``"nDCG"``, ``"AP"``, ``"P"``...), see
            :func:`nuggetbench.measures.registry.all_family_names`.
        cutoff: rank cutoff ``k`` (a positive int) or ``None``.
        params: ``((name, value), ...)`` in the order given; values are ints, floats, bools or
            strings. Parameters left out take the family's default (see :meth:`param`).

    ``Measure("nDCG") @ 10`` and ``Measure("P")(rel=2) @ 5`` build values the ir_measures way.
    """

    family: str
    cutoff: int | None = None
    params: tuple[tuple[str, Any], ...] = ()

    def param(self, name: str) -> Any:
        """The value of parameter *name*: as given, else the family's default.

        Raises:
            SpecError: *name* is not a parameter of the family.
        """
        for key, value in self.params:
            if key == name:
                return value
        family = get_family(self.family)
        if name not in family.params:
            raise SpecError(
                f"measure {self}: family {self.family!r} has no parameter {name!r} "
                f"(it takes: {', '.join(family.params) or 'none'})"
            )
        return family.params[name].default

    def __str__(self) -> str:
        text = self.family
        if self.params:
            text += "(" + ",".join(f"{k}={format_value(v)}" for k, v in self.params) + ")"
        if self.cutoff is not None:
            text += f"@{self.cutoff}"
        return text

    def __matmul__(self, cutoff: int) -> Measure:
        return replace(self, cutoff=cutoff)

    def __call__(self, **params: Any) -> Measure:
        merged = dict(self.params)
        merged.update(params)
        return replace(self, params=tuple(merged.items()))


def format_value(value: Any) -> str:
    """Print a parameter value the way :func:`parse_spelling` reads it back."""
    return format_literal(value, true="True", false="False")


def _parse_value(text: str, where: str) -> Any:
    if not text.strip():
        raise SpecError(f"{where}: empty parameter value")
    return parse_literal(text)


def _split_top_level(text: str, separators: str) -> list[str]:
    """Split *text* on *separators* outside parentheses and quotes."""
    return split_top(text, tuple(separators), where="measure")


def _parse_cutoff(text: str, where: str) -> int:
    if not _INT_RE.match(text):
        raise SpecError(f"{where}: the cutoff after '@' must be a positive integer, got {text!r}")
    value = int(text)
    if value <= 0:
        raise SpecError(f"{where}: the cutoff after '@' must be a positive integer, got {value}")
    return value


def _family_name(name: str) -> str:
    """The canonical name of the family called *name* (or an alias; case-insensitive when
    unambiguous).

    Raises:
        UnknownNameError: no such family (the nearest names suggested).
    """
    family = find_family(name)
    return family.name if family is not None else get_family(name).name


def _at_params(family: Any, value: Any, params: Iterable[tuple[str, Any]]) -> tuple:
    """*params* with ``family.at_param = value`` first and the family's ``at_implies`` (the
    parameters ir_measures' ``@`` spelling implies) where not given."""
    given = tuple(params)
    names = {k for k, _ in given}
    implied = tuple((k, v) for k, v in family.at_implies if k not in names)
    return ((family.at_param, value), *given, *implied)


def check_measure(measure: Measure, where: str | None = None) -> Measure:
    """Validate *measure* against its family (names, parameter types, cutoff rule).

    Returns the measure with canonical family name and coerced parameter values.

    Raises:
        UnknownNameError: unknown family (nearest name suggested).
        SpecError: unknown or ill-typed parameter, missing required parameter, missing required
            cutoff, cutoff where the family takes none, non-positive cutoff.
    """
    where = where or f"measure {str(measure)!r}"
    family = get_family(measure.family)
    params = []
    seen = set()
    given = measure.params
    if family.at_param is not None and measure.cutoff is not None:  # IPrec@0.1: recall=0.1
        given = _at_params(family, measure.cutoff, given)
        measure = replace(measure, cutoff=None)
    for key, value in given:
        if key in seen:
            raise SpecError(f"{where}: parameter {key!r} given twice")
        seen.add(key)
        if key not in family.params:
            allowed = ", ".join(family.params) or "none"
            raise SpecError(
                f"{where}: {family.name} has no parameter {key!r} (it takes: {allowed})"
            )
        params.append((key, family.params[key].coerce(value, where=where)))
    for key, param in family.params.items():
        if param.required and key not in seen:
            raise SpecError(
                f"{where}: {family.name} needs the parameter {key!r}, e.g. {family.name}({key}=...)"
            )
    cutoff = measure.cutoff
    if cutoff is not None and (
        isinstance(cutoff, bool) or not isinstance(cutoff, int) or cutoff <= 0
    ):
        raise SpecError(f"{where}: the cutoff must be a positive integer, got {cutoff!r}")
    if family.cutoff == "required" and cutoff is None:
        raise SpecError(f"{where}: {family.name} needs a cutoff, e.g. {family.name}@10")
    if family.cutoff == "forbidden" and cutoff is not None:
        raise SpecError(
            f"{where}: {family.name} takes no cutoff; write {family.name} without '@{cutoff}'"
        )
    return Measure(family.name, cutoff, tuple(params))


def parse_spelling(text: str, where: str | None = None) -> Measure:
    """Parse one measure in ir_measures' spelling (``"nDCG@10"``, ``"P(rel=2)@5"``, ``"AP"``).

    This is the grammar alone: a family's name or alias, its parameters, its cutoff. Other
    tools' names are translated before it is asked: call
    :func:`~nuggetbench.measures.spellings.parse_measure`, the reader of every spelling.

    Args:
        text: the measure in ir_measures spelling (or a family's alias).
        where: how error messages name the measure (default ``measure 'TEXT'``); the reader
            that translated *text* from another spelling names the text it was given.

    Returns:
        The :class:`Measure`; ``str()`` of it gives back a canonical *text* unchanged.

    Raises:
        UnknownNameError: the family is unknown (the nearest valid name is suggested).
        SpecError: malformed text, unknown/ill-typed parameter, missing or forbidden cutoff,
            non-integer cutoff (the message names the part at fault).
    """
    where = where or f"measure {text.strip()!r}"
    text = text.replace("\u03b1", "alpha")  # ir_measures' α_nDCG, α_DCG
    text = _BRACED.sub(lambda m: "=" + repr(m.group(1)), text)  # gains={1:3,2:9}: one value
    parts = split_call_spec(text, where=where)
    if parts is None:
        raise SpecError(
            f"{where}: cannot parse; write Family(param=value,...)@cutoff, e.g. 'nDCG@10' or 'P(rel=2)@5'"
        )
    name, params_text, cutoff_text = parts
    if cutoff_text is not None and cutoff_text == "":
        raise SpecError(f"{where}: '@' must be followed by a positive integer cutoff")
    family_name = _family_name(name)
    at_param = get_family(family_name).at_param
    params = []
    if params_text is not None:
        if not params_text.strip():
            raise SpecError(f"{where}: empty parentheses; drop them or write (name=value)")
        params = [
            (k, _parse_value(v, where)) for k, v in split_options(params_text, where=where).items()
        ]
    if at_param is not None and cutoff_text is not None:  # IPrec@0.1: recall=0.1
        params = list(_at_params(get_family(family_name), _parse_value(cutoff_text, where), params))
        cutoff_text = None
    cutoff = _parse_cutoff(cutoff_text, where) if cutoff_text is not None else None
    return check_measure(Measure(family_name, cutoff, tuple(params)), where)
