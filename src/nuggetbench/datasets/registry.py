"""The dataset registry: id patterns -> dataset families, as import strings.

Listing datasets imports no family. Adding a dataset family is a module defining a
:class:`~.family.DatasetFamily` subclass and its instance ``FAMILY``, plus one line in
:data:`REGISTRY`::

    Entry("fastbook", "nuggetbench.datasets.fastbook:FAMILY"),
    Entry("freshstack/*", "nuggetbench.datasets.freshstack:FAMILY", ids=("freshstack/langchain", ...)),

An entry may also name a bare loader function (``"module:load"``, ``load(dataset_id,
**options) -> Dataset``): it is adapted into a family whose options are the loader's keyword-only
parameters and whose ``fetch`` / ``info`` are the module's functions of those names, if any.
Local folders are claimed by the first family whose :meth:`~.family.DatasetFamily.claims_folder`
says so (FreshStack layout, then BEIR layout); a judgments *file* (``nuggetbench evaluate FILE
RUN``) by the first family whose :meth:`~.family.DatasetFamily.claims_file` does, else it is read
as document or diversity qrels (:func:`load_target`).
"""

from __future__ import annotations

import fnmatch
import importlib
import inspect
import os
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nuggetbench import home as _home
from nuggetbench.data import read_document_qrels
from nuggetbench.data.formats.diversity import load_nugget_qrels_file, sniff_nugget_qrels
from nuggetbench.data.source import read_source
from nuggetbench.data.subset import QuerySubset, query_subset
from nuggetbench.datasets._ids import (
    BEIR_NAMES,
    BIRCO_NAMES,
    CQADUPSTACK_FORUMS,
    FRESHSTACK_TOPICS,
    MIRACL_LANGUAGES,
    MMARCO_LANGUAGES,
    family_ids,
)
from nuggetbench.datasets.dataset import Dataset
from nuggetbench.datasets.family import DatasetFamily, JudgedCorpus, Target
from nuggetbench.errors import DatasetError, DownloadError, InputError, UnknownNameError, suggest
from nuggetbench.plugins import resolve
from nuggetbench.spec import REQUIRED, Param, parse_literal

__all__ = [
    "REGISTRY",
    "Entry",
    "dataset_groups",
    "dataset_info",
    "dataset_patterns",
    "family_of",
    "local_folder",
    "fetch",
    "is_dataset_id",
    "judge_corpus",
    "list_datasets",
    "load_dataset",
    "load_target",
    "register",
]


@dataclass(frozen=True)
class Entry:
    """One registry line.

    Attributes:
        pattern: an id, or an ``fnmatch`` pattern (``freshstack/*``).
        family: ``"module:FAMILY"`` (a :class:`~.family.DatasetFamily` instance) or
            ``"module:load"`` (a loader function, adapted).
        ids: the concrete ids the entry serves (listed by :func:`list_datasets`). When given,
            only these ids match (and, for ``mmarco/*``, the family's own rule); when empty, any
            id matching *pattern*.
        description: one line shown by ``list_datasets``/``dataset_info``.
    """

    pattern: str
    family: str
    ids: tuple[str, ...] = ()
    description: str = ""

    @property
    def loader(self) -> str:
        """The import string (older name of :attr:`family`)."""
        return self.family

    def matches(self, dataset_id: str) -> bool:
        if self.ids:
            return dataset_id in self.ids
        return dataset_id == self.pattern or fnmatch.fnmatchcase(dataset_id, self.pattern)

    def listed_ids(self) -> tuple[str, ...]:
        return self.ids or (self.pattern,)


# One entry per line: adding a dataset family is a one-line change. Each line repeats its family's
# declaration (pattern, ids, description: the class is the one source) so that listing imports no
# family; tests/test_plugin_declarations.py holds every line equal to its family.
# fmt: off
REGISTRY: list[Entry] = [
    Entry("beir/*", "nuggetbench.datasets.beir:FAMILY", ids=family_ids("beir", BEIR_NAMES) + family_ids("beir/cqadupstack", CQADUPSTACK_FORUMS), description="BEIR (Thakur et al., 2021), downloaded from the BEIR server and MD5-verified"),
    Entry("freshstack/*", "nuggetbench.datasets.freshstack:FAMILY", ids=family_ids("freshstack", FRESHSTACK_TOPICS), description="FreshStack Oct 2024 (Thakur et al., 2025): nugget-judged Stack Overflow questions over GitHub chunks"),
    Entry("fastbook", "nuggetbench.datasets.fastbook:FAMILY", description="fastbook-benchmark (Bakshi, 2024): 191 fastai-book questions, answer components judged by evidence spans over chunked chapter notebooks"),
    Entry("birco/*", "nuggetbench.datasets.birco:FAMILY", ids=family_ids("birco", BIRCO_NAMES), description="BIRCO (Wang et al., 2024): complex-objective tasks, each query ranks its own candidate pool; with task objectives"),
    Entry("miracl/*", "nuggetbench.datasets.miracl:FAMILY", ids=family_ids("miracl", MIRACL_LANGUAGES), description="MIRACL (Zhang et al., 2023): 18 languages, dev split (test qrels hidden), Wikipedia passages from the Hugging Face hub"),
    Entry("mmarco/*", "nuggetbench.datasets.mmarco:FAMILY", ids=family_ids("mmarco", MMARCO_LANGUAGES), description="mMARCO (Bonifacio et al., 2021): MS MARCO passages and dev/small queries in 14 languages"),
    Entry("mmarco/*/*", "nuggetbench.datasets.mmarco:FAMILY", description="mMARCO cross-lingual: mmarco/<doc_lang>/<query_lang>, e.g. mmarco/english/german"),
    Entry("irds:*", "nuggetbench.datasets.irds:FAMILY", description="ir_datasets (MacAvaney et al., 2021): irds:<id> for any id of its catalogue, https://ir-datasets.com/ (e.g. irds:msmarco-passage/trec-dl-2019/judged); needs the irds extra"),
]
# fmt: on

#: Families asked, in order, whether they claim a local folder or a judgments file.
LOCAL_FAMILIES: list[str] = [
    "nuggetbench.datasets.freshstack:FAMILY",
    "nuggetbench.datasets.beir:FAMILY",
]

_FAMILIES: dict[str, DatasetFamily] = {}


class LoaderFamily(DatasetFamily):
    """A family adapted from a bare loader function and its module's ``fetch``/``info``."""

    def __init__(self, entry: Entry, loader: Callable[..., Any]):
        self.entry = entry
        self.loader = loader
        self.module = importlib.import_module(entry.family.partition(":")[0])
        params = inspect.signature(loader).parameters
        self.open_options = any(p.kind is p.VAR_KEYWORD for p in params.values())
        options = {}
        for name, p in params.items():
            if p.kind is p.KEYWORD_ONLY:
                default = REQUIRED if p.default is p.empty else p.default
                kind = type(default) if type(default) in (bool, int, float, str) else object
                options[name] = Param(name, kind, default)
        self.options = options  # type: ignore[misc]

    def matches(self, dataset_id: str) -> bool:
        return self.entry.matches(dataset_id)

    def check_options(self, dataset_id: str, options: dict) -> dict:
        if self.open_options:
            return dict(options)
        return super().check_options(dataset_id, options)

    def load(self, dataset_id: str, **options: Any) -> Dataset:
        return self.loader(dataset_id, **options)

    def fetch(self, dataset_id: str, *, show_progress: bool = False) -> Path | None:
        fn = getattr(self.module, "fetch", None)
        return fn(dataset_id, show_progress=show_progress) if fn is not None else None

    def info(self, dataset_id: str) -> dict:
        fn = getattr(self.module, "info", None)
        return fn(dataset_id) if fn is not None else {}


def _family(target: str, entry: Entry | None = None) -> DatasetFamily:
    found = _FAMILIES.get(target)
    if found is None:
        obj = resolve(target)
        if not isinstance(obj, DatasetFamily):
            if not callable(obj) or entry is None:
                raise DatasetError(f"{target} is neither a DatasetFamily nor a loader function")
            obj = LoaderFamily(entry, obj)
        found = _FAMILIES[target] = obj
    return found


def register(entry: Entry, *, first: bool = False) -> None:
    """Add an entry at run time (plugins, tests); ``first`` gives it priority over built-ins."""
    if first:
        REGISTRY.insert(0, entry)
    else:
        REGISTRY.append(entry)


def list_datasets(pattern: str | None = None) -> list[str]:
    """All registered dataset ids (optionally those matching an ``fnmatch`` *pattern*), sorted.

    Entries that accept a whole pattern of ids (``mmarco/*/*``) are not ids; see
    :func:`dataset_patterns`. Imports no family module.
    """
    ids = sorted({i for entry in REGISTRY for i in entry.listed_ids() if not _is_pattern(i)})
    if pattern:
        ids = [i for i in ids if fnmatch.fnmatchcase(i, pattern)]
    return ids


def _is_pattern(text: str) -> bool:
    return any(ch in text for ch in "*?[")


def dataset_patterns() -> list[tuple[str, str]]:
    """``(pattern, description)`` of the entries that take any id of a pattern (cross-lingual
    mMARCO's ``mmarco/<doc_lang>/<query_lang>``), for listings. Imports nothing."""
    return [(e.pattern, e.description) for e in REGISTRY if not e.ids and _is_pattern(e.pattern)]


def dataset_groups() -> list[tuple[str, str, list[str]]]:
    """``(family name, description, ids)`` per registry entry that lists ids, in registry order
    (the ids sorted), for listings grouped by family. Imports nothing."""
    groups: dict[str, tuple[str, str, list[str]]] = {}
    for entry in REGISTRY:
        ids = [i for i in entry.listed_ids() if not _is_pattern(i)]
        if not ids:
            continue
        name = entry.pattern.split("/", 1)[0].rstrip("*:")
        found = groups.setdefault(entry.family, (name, entry.description, []))
        found[2].extend(i for i in ids if i not in found[2])
    return [(name, text, sorted(ids)) for name, text, ids in groups.values()]


def local_folder(dataset_id: str) -> Path | None:
    """Where *dataset_id* is on disk (``NUGGETBENCH_DATA`` or the home), or ``None`` when it
    would have to be downloaded (or its family keeps it in another cache, as the hub datasets).

    Raises:
        UnknownNameError: not a registered id.
    """
    try:
        found = family_of(dataset_id).find(dataset_id)
    except (DatasetError, InputError):  # an id the family cannot place on disk
        return None
    return Path(found) if found else None


def _entry(dataset_id: str) -> Entry | None:
    for entry in REGISTRY:
        if entry.matches(dataset_id):
            return entry
    return None


def is_dataset_id(text: str) -> bool:
    """Whether *text* is a registered dataset id (imports nothing)."""
    return _entry(text) is not None


def family_of(dataset_id: str) -> DatasetFamily:
    """The family serving *dataset_id*.

    Raises:
        UnknownNameError: not a registered id (the nearest is named).
    """
    entry = _entry(dataset_id)
    if entry is None:
        raise _unknown(dataset_id)
    return _family(entry.family, entry)


def _unknown(dataset_id: str) -> UnknownNameError:
    if Path(dataset_id).suffix:  # nope.qrels, run.trec: a file name, not an id
        return UnknownNameError(
            f"{dataset_id} does not exist: no such file or folder (and no registered dataset "
            f"has that id).{suggest(dataset_id, list_datasets())} Check the path, or give a "
            "registered dataset id (`nuggetbench datasets list`)"
        )
    return UnknownNameError(
        f"unknown dataset {dataset_id!r}.{suggest(dataset_id, list_datasets())} "
        "Run `nuggetbench datasets list` (or nuggetbench.list_datasets()) for the list; "
        "a local BEIR-format folder can be given by its path, and any ir_datasets id as "
        "irds:<id> (https://ir-datasets.com/)"
    )


def _looks_like_path(value: str) -> bool:
    return value.startswith((".", "/", "~")) or Path(value).expanduser().is_dir()


def load_dataset(
    id_or_path: str | Path,
    *,
    queries: QuerySubset | str | Path | Sequence[str] | None = None,
    **options: Any,
) -> Dataset:
    """Load a dataset by registry id, or a local folder by its path.

    A registered id wins over a relative folder of the same name; write ``./beir/scifact`` to
    mean the folder.

    Args:
        id_or_path: ``beir/scifact``, ``beir/cqadupstack/android``..., or a folder in BEIR
            layout (``corpus.jsonl``, ``queries.jsonl``, ``qrels/<split>.tsv``) or FreshStack
            layout (``corpus.jsonl`` and a ``queries.jsonl`` with nuggets).
        queries: keep only some queries (and their judgments): a
            :class:`~nuggetbench.data.subset.QuerySubset` (``QuerySubset(first=10)``,
            ``QuerySubset(sample=50, seed=1)``), a list of query ids, comma-separated ids, or a
            file of ids (one per line); ``None``: every query of the split. The dataset records
            the subset (``Dataset.query_subset``).
        **options: the family's loader options (``split="dev"``, ``max_docs=1000`` for
            mMARCO...; text values such as ``"1000"`` are typed by the family's declarations).

    Returns:
        A :class:`Dataset`.

    Raises:
        UnknownNameError: neither a registered id nor an existing folder (the nearest id is
            named), or an option the family does not take.
        InputError: query ids that are not the dataset's (named), more queries asked for than
            it has, or an unreadable file of ids (before the dataset is loaded).
        DatasetError / DownloadError / InputError: from the loader.
    """
    subset = query_subset(queries)  # a bad subset fails before any loading
    return _load_dataset(id_or_path, options).subset(subset)


def _load_dataset(id_or_path: str | Path, options: dict[str, Any]) -> Dataset:
    if isinstance(id_or_path, Path):
        return _load_folder(id_or_path, options)
    entry = _entry(id_or_path)
    if entry is not None:
        family = _family(entry.family, entry)
        checked = family.check_options(id_or_path, options)
        return _with_options(family.load(id_or_path, **checked), checked)
    if _looks_like_path(id_or_path):
        return _load_folder(Path(id_or_path).expanduser(), options)
    raise _unknown(id_or_path)


def _load_folder(folder: Path, options: dict) -> Dataset:
    _check_folder(folder)
    families = [_family(t) for t in LOCAL_FAMILIES]
    family = next((f for f in families if f.claims_folder(folder)), families[-1])
    allowed = getattr(family, "folder_options", {})
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise UnknownNameError(
            f"unknown option(s) {', '.join(unknown)} for a local {family.name} folder; "
            f"valid: {', '.join(sorted(allowed))}"
        )
    checked = {}
    for k, v in options.items():  # text values (-O remove_self_hits=false) are read first
        text = v if isinstance(v, str) else None
        value = parse_literal(text, none=True) if text is not None else v
        checked[k] = (
            None
            if value is None
            else allowed[k].coerce(value, where=f"folder {folder}", noun="option", text=text)
        )
    return _with_options(family.load_folder(folder, **checked), checked)


def _with_options(dataset: Dataset, options: dict) -> Dataset:
    """*dataset* recording the loader *options* it was loaded with (``None`` values left out)."""
    dataset.options = {k: v for k, v in options.items() if v is not None}
    return dataset


def _file_target(path: Path) -> Target:
    """A judgments file: claimed by a family, else nugget-level or document qrels."""
    sniffed = sniff_nugget_qrels(path)
    for target in LOCAL_FAMILIES:
        family = _family(target)
        if family.claims_file(path, sniffed):
            return family.load_file(path)
    if sniffed:
        return Target(load_nugget_qrels_file(path))
    return Target(read_document_qrels(path))


def load_target(
    source: str | Path | Dataset,
    *,
    queries: QuerySubset | str | Path | Sequence[str] | None = None,
    **options: Any,
) -> Target:
    """What a run is scored against: a dataset (id, folder or :class:`Dataset`) or a judgments
    file, with the conventions that come with it.

    A file is claimed by a family (a FreshStack queries file gets FreshStack's measures and
    profile), else read as nugget-level diversity qrels (ndeval format) or as document qrels
    (TREC, BEIR tsv, JSON).

    Args:
        source: a dataset id, a folder, a :class:`Dataset`, or a judgments file.
        queries: keep only some queries, as :func:`load_dataset` (of a judgments file: its
            judged queries, in the file's order).
        **options: loader options (for an id or folder).

    Raises:
        UnknownNameError, DatasetError, FormatError: from the loaders and readers.
        InputError: a query subset that does not fit (ids named).
    """
    subset = query_subset(queries)
    return _load_target(source, options).subset(subset, what=str(source))


def _load_target(source: str | Path | Dataset, options: dict[str, Any]) -> Target:
    if isinstance(source, Dataset):
        return _dataset_target(source, None)
    path = Path(source)
    if path.exists() and not path.is_dir() and not path.is_file():
        # a pipe or FIFO (``<(cat qrels)``): read once into a regular file, then as below
        with tempfile.TemporaryDirectory(prefix="nuggetbench-") as tmp:
            spooled = Path(tmp) / path.name
            spooled.write_bytes(read_source(path, what="judgments"))
            return _file_target(spooled)
    if path.is_file():
        return _file_target(path)
    text = str(source)
    dataset = load_dataset(path if path.is_dir() and not is_dataset_id(text) else text, **options)
    family = family_of(text) if is_dataset_id(text) else None
    return _dataset_target(dataset, family)


def _dataset_target(dataset: Dataset, family: DatasetFamily | None) -> Target:
    if family is None and is_dataset_id(dataset.id):
        family = family_of(dataset.id)
    return Target(
        dataset.qrels,
        default_measures=tuple(dataset.default_measures),
        default_profile=dataset.default_profile,
        family=family,
        dataset=dataset,
        notes=list(dataset.notes) + _subset_note(dataset.query_subset),
    )


def _subset_note(record: dict | None) -> list[str]:
    """``["queries: <how the subset was chosen>"]`` for a query subset's record, else ``[]``."""
    return [f"queries: {record.get('how')}"] if record else []


def judge_corpus(dataset_id: str, corpus: Any) -> JudgedCorpus:
    """Judgments of a passage corpus by *dataset_id*'s family (span-judged families).

    Raises:
        UnknownNameError: not a registered id.
        InputError: the family's judgments do not depend on a corpus.
    """
    return family_of(dataset_id).judge_corpus(dataset_id, corpus)


def dataset_info(dataset_id: str) -> dict:
    """Facts about a dataset without loading it: its family's name, description, loader
    options, where its files are and their size, and the family's own ``info``.

    Returns:
        A dict with at least ``id``, ``family`` (the family's name, ``beir``), ``loader`` (the
        registry's import string, for plugin authors), ``description``, ``options``
        (``{name: {"default": value or None, "description": text}}``; ``None``: the dataset's
        own default, which the description names; ``"required"`` when one must be given) and
        ``files`` (``{"path", "files", "bytes"}`` when on disk, else ``None``), plus the
        family's facts (``counts``, ``default_split``, ``url``...).

    A local dataset folder (a path) is described by the family that claims it (its folder
    options and files).

    Raises:
        UnknownNameError: not a registered id (the nearest is named) nor a path.
        DatasetError: a path that is not a folder (missing, a file, unreadable).
    """
    entry = _entry(dataset_id)
    if entry is None and _looks_like_path(dataset_id):
        return _folder_info(Path(dataset_id).expanduser())
    if entry is None:
        raise _unknown(dataset_id)
    family = _family(entry.family, entry)
    out: dict[str, Any] = {
        "id": dataset_id,
        "family": family.name or entry.pattern.split("/", 1)[0],
        "loader": entry.family,
        "description": entry.description,
        "options": {name: _option_fact(p) for name, p in family.options.items()},
    }
    out.update(family.info(dataset_id))
    out["files"] = _files_fact(local_folder(dataset_id))
    return out


def _folder_info(folder: Path) -> dict:
    """:func:`dataset_info` of a local folder: the family that claims it, its folder options and
    files (the family's loader says what a file is missing when it is loaded)."""
    _check_folder(folder)
    families = [_family(t) for t in LOCAL_FAMILIES]
    family = next((f for f in families if f.claims_folder(folder)), families[-1])
    allowed = getattr(family, "folder_options", {})
    return {
        "id": str(folder),
        "family": family.name,
        "loader": f"a local {family.name} folder",
        "description": f"a local folder in {family.name} layout",
        "options": {name: _option_fact(p) for name, p in allowed.items()},
        "files": _files_fact(folder),
    }


def _check_folder(folder: Path) -> None:
    """Raise ``DatasetError`` naming why *folder* is no dataset folder: missing, a file, or
    unreadable."""
    if not folder.exists():
        raise DatasetError(
            f"{folder} does not exist: no such file or folder; check the path, or give a "
            "registered dataset id (`nuggetbench datasets list`)"
        )
    if not folder.is_dir():
        raise DatasetError(
            f"{folder} is a file, not a dataset folder; give a judgments file where judgments "
            "are read (evaluate, compare), else a registered dataset id or a BEIR-format folder"
        )
    try:
        with os.scandir(folder) as entries:  # closed: an open iterator is a ResourceWarning
            next(entries, None)
    except PermissionError:
        raise DatasetError(
            f"{folder}: permission denied (this user may not read the folder); check its "
            "permissions"
        ) from None


def _option_fact(param: Param) -> dict[str, Any]:
    default = param.default
    if param.required:
        default = "required"
    elif default is not None and not isinstance(default, (bool, int, float, str)):
        default = str(default)
    return {"default": default, "description": param.description}


def _files_fact(path: Path | None) -> dict[str, Any] | None:
    """``{"path", "files", "bytes"}`` of a dataset's folder (every file under it) or file."""
    if path is None or not path.exists():
        return None
    files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
    return {"path": str(path), "files": len(files), "bytes": sum(p.stat().st_size for p in files)}


def fetch(dataset_id: str, *, show_progress: bool = False) -> Path | None:
    """Download *dataset_id* (when its family can) without loading it; returns its folder.

    Returns ``None`` when the family has nothing to download.

    Raises:
        UnknownNameError: not a registered id.
        DownloadError, ChecksumError, UnsafeArchiveError: from the download.
    """
    return family_of(dataset_id).fetch(dataset_id, show_progress=show_progress)


def ensure_local(dataset_id: str, *, show_progress: bool = False) -> Path:
    """Make sure *dataset_id* is on disk: :func:`fetch` it, or find the local copy of a family
    that has nothing to download; returns its local path (what ``datasets fetch`` prints).

    Raises:
        UnknownNameError: not a registered id.
        DownloadError: the family cannot download it and it is not on disk (the message says
            where nuggetbench looks), or the download failed (offline, unreachable...).
        ChecksumError, UnsafeArchiveError: from the download.
    """
    family = family_of(dataset_id)
    path = family.fetch(dataset_id, show_progress=show_progress) or family.find(dataset_id)
    if path is None:
        searched = ", ".join(str(p) for p in _home.search_path())
        raise DownloadError(
            f"{dataset_id} could not be fetched: nuggetbench has no download for it and it is not "
            f"on disk (searched under {searched}). Put its files in a folder on NUGGETBENCH_DATA "
            f"(`nuggetbench datasets info {dataset_id}` describes them)"
        )
    return Path(path)
