"""Reproduction recipes: TOML files declaring datasets, conditions and the published values.

A recipe is data, not code (``docs/guide.md``, "Reproductions"): a TOML file shipped in the
package (``nuggetbench/recipes/<name>.toml``) or given by path. :func:`read_recipe` parses and
validates one; every problem is one :class:`~nuggetbench.errors.FormatError` line naming the file,
the field and what to do. The schema (``schema = 1``):

* ``name``, ``title``, ``description``; ``[source]`` (``kind`` tool/paper/results, ``name``,
  ``version``, ``file``, ``table``, ``url``, ``precision``, ``citation``);
* ``[needs]`` (``extras``, ``gpu``, ``llm``, ``download``, ``runtime``, ``notes``);
* ``profile``, ``measures``; ``[[datasets]]`` (``id``, ``options``, ``label``);
* ``[[conditions]]`` (``name``, ``title``, ``retriever`` or ``[[conditions.runs]]`` published run
  files with ``url``, ``sha256``/``md5``, ``path``, ``format``; ``measures``, ``profile``,
  ``datasets``, ``needs``);
* ``[[expected]]`` (``condition``, ``dataset``, ``values``, ``notes``, ``tolerance``).

Fields added here (all optional): ``depth`` (documents retrieved per query, default 1000, as
``run -k``), ``statistic`` (``"mean"``, or the row of a summary table the dataset's profile prints
under the means, e.g. BIRCO's ``"bootstrap mean"``) and, per condition, ``with_objective``
(``run --with-objective``). They may be given at the top level or per condition.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "Condition",
    "DatasetRef",
    "Expected",
    "Needs",
    "Recipe",
    "RunFile",
    "Source",
]

DEFAULT_DEPTH = 1000
DEFAULT_PRECISION = 4


@dataclass(frozen=True)
class Source:
    """Where the expected values come from: a tool (its version and file), a paper (its table)
    or a published results file; ``precision`` is the decimals the source prints."""

    kind: str
    name: str
    url: str
    version: str = ""
    file: str = ""
    table: str = ""
    precision: int = DEFAULT_PRECISION
    citation: str = ""


@dataclass(frozen=True)
class Needs:
    """What a run needs: nuggetbench extras, a GPU, an LLM endpoint; the download size and a
    rough run time (texts, shown by ``reproduce --list``)."""

    extras: tuple[str, ...] = ()
    gpu: bool = False
    llm: bool = False
    download: str = ""
    runtime: str = ""
    notes: str = ""

    def merged(self, other: Needs | None) -> Needs:
        """These needs extended by a condition's (*other*): extras added, flags or-ed, texts of
        *other* where it gives them."""
        if other is None:
            return self
        return Needs(
            extras=tuple(dict.fromkeys([*self.extras, *other.extras])),
            gpu=self.gpu or other.gpu,
            llm=self.llm or other.llm,
            download=other.download or self.download,
            runtime=other.runtime or self.runtime,
            notes=other.notes or self.notes,
        )


@dataclass(frozen=True)
class DatasetRef:
    """A dataset of the recipe: its id (or folder), loader options (``-O``) and a short label."""

    id: str
    options: Mapping[str, Any] = field(default_factory=dict)
    label: str = ""


@dataclass(frozen=True)
class RunFile:
    """A published run or rank file: fetched like a dataset (``url`` and checksum), looked up
    first at ``path`` under ``NUGGETBENCH_DATA`` and the home."""

    dataset: str
    url: str
    path: str
    sha256: str = ""
    md5: str = ""
    format: str = "auto"


@dataclass(frozen=True)
class Condition:
    """One way of making the rankings: a retriever spec (or pipeline), or published run files
    (one per dataset). ``measures``, ``profile``, ``depth``, ``statistic`` are resolved (the
    recipe's where the condition gives none); ``datasets`` are the ids it runs on."""

    name: str
    title: str
    retriever: str | None
    runs: tuple[RunFile, ...]
    measures: tuple[str, ...]
    profile: str | None
    datasets: tuple[str, ...]
    needs: Needs
    depth: int = DEFAULT_DEPTH
    statistic: str = "mean"
    with_objective: bool = False

    def run_file(self, dataset: str) -> RunFile | None:
        """The published run file of *dataset*, or ``None``."""
        return next((r for r in self.runs if r.dataset == dataset), None)


@dataclass(frozen=True)
class Expected:
    """The published values of one (condition, dataset): ``{measure: value}``, with notes on
    departures and per-measure tolerances (each wider one carries a note)."""

    condition: str
    dataset: str
    values: Mapping[str, float]
    notes: Mapping[str, str] = field(default_factory=dict)
    tolerance: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Recipe:
    """A validated recipe (see the module docstring); ``path`` is the file it was read from and
    ``shipped`` whether it is one of the package's recipes."""

    name: str
    title: str
    description: str
    source: Source
    needs: Needs
    datasets: tuple[DatasetRef, ...]
    conditions: tuple[Condition, ...]
    expected: tuple[Expected, ...]
    profile: str | None = None
    measures: tuple[str, ...] = ()
    path: Path | None = None
    shipped: bool = False

    def dataset(self, dataset_id: str) -> DatasetRef:
        """The dataset declared with *dataset_id*."""
        return next(d for d in self.datasets if d.id == dataset_id)

    def condition(self, name: str) -> Condition:
        """The condition named *name*."""
        return next(c for c in self.conditions if c.name == name)

    def default_tolerance(self) -> float:
        """Half a unit in the last place the source prints: ``0.5 * 10**-precision``."""
        return 0.5 * 10.0**-self.source.precision

    def tolerance(self, expected: Expected, measure: str) -> float:
        """The absolute tolerance of one expected value (its override, else the default)."""
        return float(expected.tolerance.get(measure, self.default_tolerance()))

    def n_values(self) -> int:
        """How many expected values the recipe declares."""
        return sum(len(e.values) for e in self.expected)
