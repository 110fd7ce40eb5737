"""The dataset-family protocol: what a benchmark declares, so that nothing above it names it.

A family (BEIR, FreshStack, fastbook, BIRCO, MIRACL, mMARCO) is one object, a subclass of
:class:`DatasetFamily`, registered by one line in :data:`nuggetbench.datasets.registry.REGISTRY`.
It declares:

* **ids**: the concrete ids it serves (:meth:`ids`, listed without loading) and the id pattern;
* **where and how**: :meth:`find` (a local copy), :meth:`fetch` (download, verified),
  :meth:`info` (facts without loading), :meth:`load` (a :class:`~.base.Dataset`);
* **conventions**: :attr:`default_measures`, :attr:`default_profile`, and the loader
  :attr:`options` it accepts (``-O KEY=VALUE``), each a :class:`~nuggetbench.spec.Param`;
* **hooks** the evaluation calls without knowing the benchmark:
  :meth:`judge_corpus` (span-judged nuggets -> qrels for a passage corpus, fastbook),
  :meth:`summaries` (extra tables: a profile's declared bootstrap, BIRCO),
  :meth:`claims_file` / :meth:`load_file` (a judgments file in the family's own format,
  FreshStack's queries file) and :meth:`claims_folder` / :meth:`load_folder` (a local folder in
  the family's layout).

Every method has a default, so a family overrides only what it has.
"""

from __future__ import annotations

import fnmatch
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from nuggetbench.compare import Summary, profile_summaries
from nuggetbench.data import Corpus, Qrels, Run
from nuggetbench.data.subset import QuerySubset
from nuggetbench.datasets.dataset import restrict_qrels
from nuggetbench.errors import InputError, UnknownNameError, suggest
from nuggetbench.spec import Param, parse_literal

if TYPE_CHECKING:  # pragma: no cover
    from nuggetbench.datasets.dataset import Dataset
    from nuggetbench.measures.results import Results

__all__ = [
    "DOWNLOAD",
    "ModuleFamily",
    "REVISION",
    "SHOW_PROGRESS",
    "DatasetFamily",
    "JudgedCorpus",
    "Summary",
    "Target",
]

#: Loader options most families share, declared once.
DOWNLOAD = Param("download", bool, True, "download when absent (unless NUGGETBENCH_OFFLINE=1)")
SHOW_PROGRESS = Param("show_progress", bool, False, "progress bars for downloads")
REVISION = Param("revision", str, None, "hub revision (default: the pinned one)")


@dataclass(frozen=True)
class JudgedCorpus:
    """Qrels made for one passage corpus by :meth:`DatasetFamily.judge_corpus`.

    Attributes:
        qrels: the judgments (document and nugget level) of the corpus's passages.
        notes: lines to show with the results (a chunking ceiling).
    """

    qrels: Qrels
    notes: tuple[str, ...] = ()


@dataclass
class Target:
    """What a run is scored against: judgments plus the conventions that come with them.

    Attributes:
        qrels: the judgments.
        default_measures: measure strings used when none are named.
        default_profile: profile used when none is named.
        family: the dataset family, when the judgments come from one.
        dataset: the loaded dataset, when there is one.
        notes: lines to show with the results.
        subset_record: the query subset kept of a judgments file (a dataset's is
            ``dataset.query_subset``); ``None`` for every query.
    """

    qrels: Qrels
    default_measures: tuple[str, ...] = ("nDCG@10", "R@100", "RR@10", "AP")
    default_profile: str | None = None
    family: DatasetFamily | None = None
    dataset: Dataset | None = None
    notes: list[str] = field(default_factory=list)
    subset_record: dict[str, Any] | None = None

    @property
    def corpus(self) -> Corpus | None:
        return self.dataset.corpus if self.dataset is not None else None

    @property
    def metadata(self) -> dict | None:
        return self.dataset.metadata if self.dataset is not None else None

    @property
    def doc_filter(self):
        return self.dataset.doc_filter if self.dataset is not None else None

    @property
    def query_order(self) -> list[str] | None:
        """The dataset's query order (a bootstrap over queries depends on it), else ``None``."""
        return list(self.dataset.queries) if self.dataset is not None else None

    @property
    def query_subset(self) -> dict[str, Any] | None:
        """The record of the query subset kept (``QuerySubset.record``), ``None`` for all."""
        if self.dataset is not None:
            return self.dataset.query_subset
        return self.subset_record

    def subset(self, subset: QuerySubset | None, *, what: str | None = None) -> Target:
        """The target restricted to the queries *subset* chooses: a dataset's queries (in its
        order; :meth:`~nuggetbench.datasets.Dataset.subset`), else the judged queries of a
        judgments file (in the file's order), with a note saying which (``queries: the first
        10 of 300 queries``). ``None`` returns the target itself.

        Raises:
            InputError: ids that are not queries here (named), or more queries than there are.
        """
        if subset is None:
            return self
        notes = [n for n in self.notes if not n.startswith("queries: ")]  # the new subset's
        out = self._subset(subset, notes, what)
        notes.append(f"queries: {(out.query_subset or {}).get('how')}")
        return out

    def _subset(self, subset: QuerySubset, notes: list[str], what: str | None) -> Target:
        if self.dataset is not None:
            ds = self.dataset.subset(subset)
            return Target(
                ds.qrels, self.default_measures, self.default_profile, self.family, ds, notes
            )
        available = [str(q) for q in self.qrels.query_ids]
        chosen = subset.select(available, what=what or "the judgments")
        record = subset.record(chosen, (self.subset_record or {}).get("of") or len(available))
        qrels = restrict_qrels(self.qrels, chosen)
        return Target(
            qrels, self.default_measures, self.default_profile, self.family, None, notes, record
        )

    def restrict_run(self, run: Run) -> Run:
        """*run* restricted to the queries of :attr:`query_subset` (unchanged without one)."""
        ids = (self.query_subset or {}).get("ids")
        return run if ids is None else run.filter_queries(ids)


class DatasetFamily:
    """Base class of dataset families (see the module docstring).

    Class attributes:
        name: the family's name (``beir``), the first part of its ids.
        pattern: the ``fnmatch`` pattern of its ids (``beir/*``).
        description: one line for listings.
        default_measures: measure strings (ir_measures spelling).
        default_profile: the evaluation profile's name.
        options: the loader options it accepts, ``{name: Param}``.
    """

    name: ClassVar[str] = ""
    pattern: ClassVar[str] = ""
    description: ClassVar[str] = ""
    more_patterns: ClassVar[dict[str, str]] = {}
    """Other id patterns the family serves, each with its one-line description (mMARCO's
    cross-lingual ``mmarco/*/*``); :meth:`matches` accepts them."""
    default_measures: ClassVar[tuple[str, ...]] = ("nDCG@10", "R@100", "RR@10", "AP")
    default_profile: ClassVar[str] = "trec_eval -c"
    options: ClassVar[dict[str, Param]] = {}

    # --- ids and files ---------------------------------------------------------------------------
    def ids(self) -> tuple[str, ...]:
        """The concrete ids served (empty: any id matching :attr:`pattern`)."""
        return ()

    def matches(self, dataset_id: str) -> bool:
        """Whether *dataset_id* belongs to this family."""
        listed = self.ids()
        if listed:
            return dataset_id in listed
        if dataset_id == self.pattern or fnmatch.fnmatchcase(dataset_id, self.pattern):
            return True
        return any(fnmatch.fnmatchcase(dataset_id, p) for p in self.more_patterns)

    def find(self, dataset_id: str) -> Path | None:
        """The local folder of *dataset_id*, or ``None`` when it has to be fetched."""
        return None

    def fetch(self, dataset_id: str, *, show_progress: bool = False) -> Path | None:
        """Download *dataset_id* (verified) and return its folder; ``None``: nothing to download."""
        return None

    def info(self, dataset_id: str) -> dict[str, Any]:
        """Facts about *dataset_id* without loading it."""
        return {}

    def load(self, dataset_id: str, **options: Any) -> Dataset:
        """Load *dataset_id* with checked *options* (see :meth:`check_options`)."""
        raise NotImplementedError

    # --- options ---------------------------------------------------------------------------------
    def check_options(self, dataset_id: str, options: Mapping[str, Any]) -> dict[str, Any]:
        """*options* checked against :attr:`options`: unknown names are an error naming the
        nearest, and text values (``-O max_docs=1000``) are read and typed.

        Raises:
            UnknownNameError: an option the family does not take.
            SpecError: a value of the wrong type.
        """
        valid = list(self.options)
        out: dict[str, Any] = {}
        for key, value in options.items():
            param = self.options.get(key)
            if param is None:
                raise UnknownNameError(
                    f"unknown option(s) {key} for {dataset_id}.{suggest(key, valid)} "
                    f"Valid: {', '.join(valid) or 'none'}"
                )
            where = f"dataset {dataset_id}"
            text = value if isinstance(value, str) else None
            if text is not None:
                value = parse_literal(text, none=True)
            out[key] = (
                None
                if value is None
                else param.coerce(value, where=where, noun="option", text=text)
            )
        return out

    # --- hooks -----------------------------------------------------------------------------------
    def judge_corpus(self, dataset_id: str, corpus: Corpus) -> JudgedCorpus:
        """Judgments of *corpus*'s passages (span-judged families override this).

        Raises:
            InputError: the family's judgments do not depend on a corpus.
        """
        raise InputError(
            f"--corpus applies to span-judged datasets, whose judgments are made for a passage "
            f"corpus; {dataset_id!r} ({self.name}) has fixed judgments"
        )

    def summaries(self, results: Results, order: Sequence[str] | None) -> list[Summary]:
        """Extra tables for *results*: by default the bootstrap that the profile declares
        (``Profile.options["bootstrap"]``, BIRCO's), over the queries in *order*."""
        return profile_summaries(results, order)

    def claims_file(self, path: Path, sniffed: str | None) -> bool:
        """Whether *path* is a judgments file in this family's own format; *sniffed* is what
        :func:`nuggetbench.data.formats.diversity.sniff_nugget_qrels` made of it (read once)."""
        return False

    def load_file(self, path: Path) -> Target:
        """The :class:`Target` of a file this family claims."""
        raise NotImplementedError

    def claims_folder(self, folder: Path) -> bool:
        """Whether *folder* is a local dataset in this family's layout."""
        return False

    def load_folder(self, folder: Path, **options: Any) -> Dataset:
        """Load a local folder this family claims."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<DatasetFamily {self.name} {self.pattern}>"


class ModuleFamily(DatasetFamily):
    """A family whose :meth:`ids`, :meth:`find`, :meth:`fetch`, :meth:`info` and :meth:`load` are
    the module-level functions ``dataset_ids``, ``find``, ``fetch``, ``info`` and ``load`` of the
    module that defines the subclass (each optional but ``load``): the built-in families are
    modules of functions plus a small class declaring their conventions and hooks."""

    def _function(self, name: str):
        return getattr(sys.modules[type(self).__module__], name, None)

    def ids(self) -> tuple[str, ...]:
        fn = self._function("dataset_ids")
        return tuple(fn()) if fn is not None else ()

    def find(self, dataset_id: str) -> Path | None:
        fn = self._function("find")
        return fn(dataset_id) if fn is not None else None

    def fetch(self, dataset_id: str, *, show_progress: bool = False) -> Path | None:
        fn = self._function("fetch")
        return fn(dataset_id, show_progress=show_progress) if fn is not None else None

    def info(self, dataset_id: str) -> dict[str, Any]:
        fn = self._function("info")
        return fn(dataset_id) if fn is not None else {}

    def load(self, dataset_id: str, **options: Any) -> Dataset:
        return self._function("load")(dataset_id, **options)
