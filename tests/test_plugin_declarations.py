"""Each plug-in is declared once, on its class or module, and the registries are tested against
those declarations: a dataset family's pattern, ids and description are its class's (the
registry line only repeats them so that listing datasets imports no family), and the measure
registry's provider modules are exactly the modules that register families."""

from __future__ import annotations

import importlib
import pkgutil
import sys
from pathlib import Path

import nuggetbench.measures
from nuggetbench.datasets import registry
from nuggetbench.measures.registry import FAMILY_MODULES


def _family(entry):
    module, _, attr = entry.family.partition(":")
    return getattr(importlib.import_module(module), attr)


def test_dataset_registry_lines_are_their_families_declarations():
    by_family: dict[str, list] = {}
    for entry in registry.REGISTRY:
        by_family.setdefault(entry.family, []).append(entry)
    for target, entries in by_family.items():
        family = _family(entries[0])
        first, more = entries[0], entries[1:]
        assert (first.pattern, first.description) == (family.pattern, family.description), target
        assert first.ids == tuple(family.ids()), target
        assert {e.pattern: e.description for e in more} == family.more_patterns, target
        assert all(not e.ids for e in more), target


def test_measure_family_modules_are_the_modules_that_register():
    package = Path(nuggetbench.measures.__file__).parent
    registering = []
    for info in pkgutil.walk_packages([str(package)], "nuggetbench.measures."):
        path = Path(sys.modules["nuggetbench.measures"].__file__).parent.joinpath(
            *info.name.split(".")[2:]
        )
        source = path.with_suffix(".py") if not info.ispkg else path / "__init__.py"
        if "\nregister(" in source.read_text() or "\n    register(" in source.read_text():
            registering.append(info.name)
    assert sorted(registering) == sorted(FAMILY_MODULES)
