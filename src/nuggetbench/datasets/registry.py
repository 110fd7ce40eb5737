"""The dataset registry: dataset ids (or id patterns) -> loader import paths, as strings.

Listing datasets imports no loader. Adding a dataset family is one line in :data:`REGISTRY`::

    Entry("fastbook", "nuggetbench.datasets.fastbook:load"),
    Entry("freshstack/*", "nuggetbench.datasets.freshstack:load", ids=("freshstack/langchain", ...)),

A loader is ``load(dataset_id, **options) -> Dataset``. Its module may also define
``fetch(dataset_id, *, show_progress=False) -> Path`` (download only) and
``info(dataset_id) -> dict`` (facts without loading); both are optional.
"""

from __future__ import annotations

import fnmatch
import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import DatasetError, UnknownNameError, suggest
from ._ids import (
    BEIR_NAMES,
    BIRCO_NAMES,
    CQADUPSTACK_FORUMS,
    FRESHSTACK_TOPICS,
    MIRACL_LANGUAGES,
    MMARCO_LANGUAGES,
    family_ids,
)
from .base import Dataset


@dataclass(frozen=True)
class Entry:
    """One registry line.

    Attributes:
        pattern: an id, or an ``fnmatch`` pattern (``freshstack/*``).
        loader: ``"module:function"`` building the dataset: ``function(dataset_id, **options)``.
        ids: the concrete ids the entry serves (listed by :func:`list_datasets`). When given,
            only these ids match; when empty, any id matching *pattern* goes to the loader.
        description: one line shown by ``list_datasets``/``dataset_info``.
    """

    pattern: str
    loader: str
    ids: tuple[str, ...] = ()
    description: str = ""

    def matches(self, dataset_id: str) -> bool:
        if self.ids:
            return dataset_id in self.ids
        return dataset_id == self.pattern or fnmatch.fnmatchcase(dataset_id, self.pattern)

    def listed_ids(self) -> tuple[str, ...]:
        return self.ids or (self.pattern,)


# One entry per line: adding a dataset family is a one-line change.
# fmt: off
REGISTRY: list[Entry] = [
    Entry(
        "beir/*",
        "nuggetbench.datasets.beir:load",
        ids=family_ids("beir", BEIR_NAMES) + family_ids("beir/cqadupstack", CQADUPSTACK_FORUMS),
        description="BEIR (Thakur et al., 2021), downloaded from the BEIR server and MD5-verified",
    ),
    Entry(
        "freshstack/*",
        "nuggetbench.datasets.freshstack:load",
        ids=family_ids("freshstack", FRESHSTACK_TOPICS),
        description="FreshStack Oct 2024 (Thakur et al., 2025): nugget-judged Stack Overflow questions over GitHub chunks",
    ),
    Entry(
        "fastbook",
        "nuggetbench.datasets.fastbook:load",
        description="fastbook-benchmark (Bakshi, 2024): 191 fastai-book questions, answer components judged by evidence spans over chunked chapter notebooks",
    ),
    Entry(
        "birco/*",
        "nuggetbench.datasets.birco:load",
        ids=family_ids("birco", BIRCO_NAMES),
        description="BIRCO (Wang et al., 2024): complex-objective tasks, each query ranks its own candidate pool; with task objectives",
    ),
    Entry("miracl/*", "nuggetbench.datasets.miracl:load", ids=family_ids("miracl", MIRACL_LANGUAGES), description="MIRACL (Zhang et al., 2023): 18 languages, dev split (test qrels hidden), Wikipedia passages from the Hugging Face hub"),
    Entry("mmarco/*", "nuggetbench.datasets.mmarco:load", ids=family_ids("mmarco", MMARCO_LANGUAGES), description="mMARCO (Bonifacio et al., 2021): MS MARCO passages and dev/small queries in 14 languages"),
    Entry("mmarco/*/*", "nuggetbench.datasets.mmarco:load", description="mMARCO cross-lingual: mmarco/<doc_lang>/<query_lang>, e.g. mmarco/english/german"),
]
# fmt: on


def register(entry: Entry, *, first: bool = False) -> None:
    """Add an entry at run time (plugins, tests); ``first`` gives it priority over built-ins."""
    if first:
        REGISTRY.insert(0, entry)
    else:
        REGISTRY.append(entry)


def list_datasets(pattern: str | None = None) -> list[str]:
    """All registered dataset ids (optionally those matching an ``fnmatch`` *pattern*), sorted.

    Imports no loader module.
    """
    ids = sorted({i for entry in REGISTRY for i in entry.listed_ids()})
    if pattern:
        ids = [i for i in ids if fnmatch.fnmatchcase(i, pattern)]
    return ids


def _entry(dataset_id: str) -> Entry | None:
    for entry in REGISTRY:
        if entry.matches(dataset_id):
            return entry
    return None


def _resolve(path: str) -> Callable[..., Any]:
    module, _, attr = path.partition(":")
    return getattr(importlib.import_module(module), attr)


def _module_function(entry: Entry, name: str) -> Callable[..., Any] | None:
    module = importlib.import_module(entry.loader.partition(":")[0])
    return getattr(module, name, None)


def _unknown(dataset_id: str) -> UnknownNameError:
    return UnknownNameError(
        f"unknown dataset {dataset_id!r}.{suggest(dataset_id, list_datasets())} "
        "Run `nuggetbench datasets` (or nuggetbench.datasets.list_datasets()) for the list; "
        "a local BEIR-format folder can be given by its path"
    )


def _looks_like_path(value: str) -> bool:
    return value.startswith((".", "/", "~")) or Path(value).expanduser().is_dir()


def load_dataset(id_or_path: str | Path, **options: Any) -> Dataset:
    """Load a dataset by registry id, or a local BEIR-format folder by its path.

    A registered id wins over a relative folder of the same name; write ``./beir/scifact`` to
    mean the folder.

    Args:
        id_or_path: ``beir/scifact``, ``beir/cqadupstack/android``..., or a folder holding
            ``corpus.jsonl``, ``queries.jsonl`` and ``qrels/<split>.tsv``.
        **options: passed to the loader (e.g. ``split="dev"``; for a folder: ``split``,
            ``remove_self_hits``).

    Returns:
        A :class:`Dataset`.

    Raises:
        UnknownNameError: neither a registered id nor an existing folder (the nearest id is named).
        DatasetError / DownloadError / InputError: from the loader.
    """
    if isinstance(id_or_path, Path):
        return _load_folder(id_or_path, options)
    entry = _entry(id_or_path)
    if entry is not None:
        loader = _resolve(entry.loader)
        _check_options(id_or_path, loader, options)
        return loader(id_or_path, **options)
    if _looks_like_path(id_or_path):
        return _load_folder(Path(id_or_path).expanduser(), options)
    raise _unknown(id_or_path)


def _check_options(dataset_id: str, loader: Callable[..., Any], options: dict) -> None:
    import inspect

    params = inspect.signature(loader).parameters
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return
    valid = [n for n, p in params.items() if p.kind is p.KEYWORD_ONLY]
    unknown = sorted(set(options) - set(valid))
    if unknown:
        raise UnknownNameError(
            f"unknown option(s) {', '.join(unknown)} for {dataset_id}."
            f"{suggest(unknown[0], valid)} Valid: {', '.join(valid) or 'none'}"
        )


def _load_folder(folder: Path, options: dict) -> Dataset:
    from .beir import load_folder

    if not folder.is_dir():
        raise DatasetError(
            f"{folder} is not a folder; give a registered dataset id or a BEIR-format folder"
        )
    if _is_freshstack_folder(folder):  # e.g. written by `nuggetbench build`
        from .freshstack import load_folder as load_freshstack

        unknown = sorted(set(options) - {"query_field"})
        if unknown:
            raise UnknownNameError(
                f"unknown option(s) {', '.join(unknown)} for a FreshStack-format folder; "
                "valid: query_field"
            )
        return load_freshstack(folder, query_field=options.get("query_field") or "question")
    allowed = {"split", "remove_self_hits"}
    unknown = sorted(set(options) - allowed)
    if unknown:
        raise UnknownNameError(
            f"unknown option(s) {', '.join(unknown)} for a local folder; "
            f"valid: {', '.join(sorted(allowed))}"
        )
    return load_folder(
        folder,
        split=options.get("split") or "test",
        remove_self_hits=bool(options.get("remove_self_hits", False)),
    )


def dataset_info(dataset_id: str) -> dict:
    """Facts about a dataset without loading it (loader, description, and the loader's ``info``).

    Raises:
        UnknownNameError: not a registered id (the nearest is named).
    """
    entry = _entry(dataset_id)
    if entry is None:
        raise _unknown(dataset_id)
    out: dict[str, Any] = {
        "id": dataset_id,
        "loader": entry.loader,
        "description": entry.description,
    }
    info = _module_function(entry, "info")
    if info is not None:
        out.update(info(dataset_id))
    return out


def fetch(dataset_id: str, *, show_progress: bool = False) -> Path | None:
    """Download *dataset_id* (when its loader can) without loading it; returns its folder.

    Returns ``None`` when the loader has nothing to download.

    Raises:
        UnknownNameError: not a registered id.
        DownloadError, ChecksumError, UnsafeArchiveError: from the download.
    """
    entry = _entry(dataset_id)
    if entry is None:
        raise _unknown(dataset_id)
    fetcher = _module_function(entry, "fetch")
    if fetcher is None:
        return None
    return fetcher(dataset_id, show_progress=show_progress)


def _is_freshstack_folder(folder: Path) -> bool:
    """A folder without ``qrels/`` whose ``queries.jsonl`` rows carry ``nuggets`` (FreshStack layout)."""
    import json

    queries = folder / "queries.jsonl"
    if (
        (folder / "qrels").is_dir()
        or not queries.is_file()
        or not (folder / "corpus.jsonl").is_file()
    ):
        return False
    with open(queries, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                try:
                    row = json.loads(line)
                except json.JSONDecodeError:
                    return False
                return isinstance(row, dict) and "nuggets" in row
    return False
