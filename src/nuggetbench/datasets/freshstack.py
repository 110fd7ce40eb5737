"""FreshStack (Thakur et al., 2025), October 2024 release: ``freshstack/<topic>``.

Five topics: ``langchain``, ``yolo``, ``laravel``, ``angular``, ``godot``. Each is a set of Stack
Overflow questions whose answers were split into *nuggets*, every nugget judged against the
retrieved chunks of the topic's GitHub repositories (the corpus).

Layout on disk (``$NUGGETBENCH_DATA`` folders are searched first, then ``$NUGGETBENCH_HOME``)::

    freshstack/<topic>/queries.jsonl   one query row per line, fields as on the hub:
                                       query_id, query_title, query_text, answer_text,
                                       nuggets: [{_id, text, relevant_corpus_ids,
                                                  non_relevant_corpus_ids}]
    freshstack/<topic>/corpus.jsonl    one chunk per line: _id, title, text

When a topic is absent it is fetched from the Hugging Face hub with ``datasets`` at a pinned
revision (``freshstack/queries-oct-2024``, config = topic, split ``test``;
``freshstack/corpus-oct-2024``, config = topic, split ``train``) and written in that layout.

Evaluation policy (FreshStack's): query text ``query_title + " " + query_text``; document qrels
derived from the nuggets (relevance = the number of nuggets a chunk supports); default measures
``alpha_nDCG@10 Coverage@20 R@50`` under the ``freshstack`` profile (score desc, doc id asc as
pyndeval orders; every query with nuggets averaged, a query missing from the run scoring 0).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from nuggetbench import home as _home
from nuggetbench._atomic import atomic_write
from nuggetbench.data import JsonlCorpus
from nuggetbench.data.formats.diversity import load_nugget_qrels_file
from nuggetbench.data.formats.freshstack import read_freshstack_queries
from nuggetbench.datasets import hub
from nuggetbench.datasets._ids import FRESHSTACK_TOPICS as TOPICS
from nuggetbench.datasets.dataset import Dataset
from nuggetbench.datasets.family import DOWNLOAD, SHOW_PROGRESS, ModuleFamily, Target
from nuggetbench.errors import (
    DatasetError,
    DownloadError,
    FormatError,
    UnknownNameError,
    suggest,
)
from nuggetbench.jsonl import iter_jsonl
from nuggetbench.spec import Param, params_table

log = logging.getLogger(__name__)

QUERIES_REPO = "freshstack/queries-oct-2024"
CORPUS_REPO = "freshstack/corpus-oct-2024"
#: Pinned hub revisions (dataset commits of the Oct 2024 release). Not verifiable offline: they
#: are the commits that published reproductions pin; a wrong one fails loudly at download time.
QUERIES_REVISION = "023ac3a14caf9d6ebb13d01adcfb8fa05e5a9630"
CORPUS_REVISION = "069f66dc323e163b48b10d08408d282733d4393b"
DEFAULT_MEASURES = ("alpha_nDCG@10", "Coverage@20", "R@50")
DEFAULT_PROFILE = "freshstack"
QUERY_FIELDS = ("question", "answer", "nuggets")
CITATION = (
    "Thakur et al., FreshStack: Building Realistic Benchmarks for Evaluating Retrieval on "
    "Technical Documents, 2025 (arXiv:2504.13128)"
)


def dataset_ids() -> list[str]:
    """The five ``freshstack/<topic>`` ids."""
    return [f"freshstack/{t}" for t in TOPICS]


def _topic(dataset_id: str) -> str:
    if dataset_id not in dataset_ids():
        raise UnknownNameError(
            f"unknown FreshStack dataset {dataset_id!r}.{suggest(dataset_id, dataset_ids())} "
            f"Known: {', '.join(dataset_ids())}"
        )
    return dataset_id.split("/", 1)[1]


def find(dataset_id: str) -> Path | None:
    """The folder holding ``queries.jsonl`` and ``corpus.jsonl`` of *dataset_id*, or ``None``."""
    folder = _home.find_dataset_dir(f"freshstack/{_topic(dataset_id)}", marker="queries.jsonl")
    if folder is not None and (folder / "corpus.jsonl").exists():
        return folder
    return None


def _install_folder(dataset_id: str) -> Path:
    return _home.home() / "freshstack" / _topic(dataset_id)


def fetch(dataset_id: str, *, show_progress: bool = False) -> Path:
    """Make sure the topic is on disk, downloading it from the hub when needed; return its folder.

    Raises:
        DownloadError: the topic is absent and downloads are off (``NUGGETBENCH_OFFLINE=1``), or
            the hub cannot be reached; the message names the folder and files to fill.
    """
    topic = _topic(dataset_id)
    found = find(dataset_id)
    if found is not None:
        return found
    target = _install_folder(dataset_id)
    how = (
        f"fill {target} with queries.jsonl (rows of {QUERIES_REPO}, config {topic!r}, split 'test') "
        f"and corpus.jsonl (rows of {CORPUS_REPO}, config {topic!r}, split 'train'), or point "
        f"NUGGETBENCH_DATA at a folder holding freshstack/{topic}/"
    )
    if _home.offline():
        raise DownloadError(
            f"{dataset_id} is not on disk and downloads are off (NUGGETBENCH_OFFLINE=1): {how}"
        )
    why = hub.hub_unreachable()
    if why is not None:
        raise DownloadError(
            f"{dataset_id} is not on disk and the Hugging Face hub cannot be reached ({why}): {how}"
        )
    try:
        import datasets as hf_datasets
    except ImportError as exc:  # pragma: no cover - depends on the installation
        raise DownloadError(
            f"downloading {dataset_id} needs the 'datasets' package "
            f"(pip install 'nuggetbench[hub]'); or {how}"
        ) from exc
    try:
        queries = hf_datasets.load_dataset(
            QUERIES_REPO, topic, split="test", revision=QUERIES_REVISION
        )
        corpus = hf_datasets.load_dataset(
            CORPUS_REPO, topic, split="train", revision=CORPUS_REVISION
        )
    except Exception as exc:  # network, authentication, missing revision...
        raise DownloadError(
            f"could not download {dataset_id} from the hub ({type(exc).__name__}: {exc}); {how}"
        ) from exc
    _write_rows(queries, target / "queries.jsonl", show_progress=show_progress, what="queries")
    _write_rows(
        corpus,
        target / "corpus.jsonl",
        show_progress=show_progress,
        what="corpus",
        keep=("_id", "title", "text"),
    )
    log.info("installed %s in %s", dataset_id, target)
    return target


def _write_rows(
    rows, path: Path, *, show_progress: bool, what: str, keep: tuple[str, ...] | None = None
) -> None:
    from tqdm.auto import tqdm

    with atomic_write(path) as fh:
        for row in tqdm(rows, disable=not show_progress, desc=what):
            if keep is not None:
                row = {k: row.get(k, "") for k in keep}
            if "_id" in row:
                row["_id"] = str(row["_id"])
            fh.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")


def query_texts(queries, nuggets, field: str) -> dict[str, str]:
    """The text each query is retrieved with, for a query *field*.

    Args:
        queries: :class:`~nuggetbench.data.Queries` read from a FreshStack file.
        nuggets: the matching :class:`~nuggetbench.data.NuggetQrels`.
        field: ``"question"`` (``query_title + " " + query_text``, the default),
            ``"answer"`` (the answer text: the paper's oracle setting) or ``"nuggets"`` (the
            query's nugget texts joined by newlines: the paper's nugget oracle).

    Raises:
        UnknownNameError: another field.
    """
    if field not in QUERY_FIELDS:
        raise UnknownNameError(
            f"unknown query field {field!r}.{suggest(field, QUERY_FIELDS)} "
            f"Valid: {', '.join(QUERY_FIELDS)}"
        )
    if field == "question":
        return {q: queries[q] for q in queries}
    if field == "answer":
        return {q: str(queries.meta(q).get("answer_text") or "") for q in queries}
    return {q: "\n".join(n.text for n in nuggets.nuggets_of(q)) for q in queries}


def load_folder(
    path: str | Path, *, dataset_id: str | None = None, query_field: str = "question"
) -> Dataset:
    """Load a FreshStack-format folder (``queries.jsonl`` + ``corpus.jsonl``).

    Queries are restricted to those with at least one nugget (the ones FreshStack averages over).

    Raises:
        DatasetError: a file is missing.
        FormatError / DuplicateError: malformed queries file (file and line named).
        UnknownNameError: an unknown *query_field*.
    """
    folder = Path(path)
    for name in ("queries.jsonl", "corpus.jsonl"):
        if not (folder / name).exists():
            raise DatasetError(f"{folder} is not a FreshStack folder: {name} is missing")
    label = dataset_id or str(folder)
    queries, nuggets = read_freshstack_queries(folder / "queries.jsonl", name=label)
    queries = queries.subset(nuggets.query_ids)
    if query_field != "question":
        queries = queries.with_texts(query_texts(queries, nuggets, query_field))
    qrels = nuggets.document_qrels(mode="count", name=label)
    corpus = JsonlCorpus(folder / "corpus.jsonl", name=label)
    return Dataset(
        id=label,
        corpus=corpus,
        queries=queries,
        qrels=qrels,
        split="test",
        default_measures=list(DEFAULT_MEASURES),
        default_profile=DEFAULT_PROFILE,
        metadata={
            "source": str(folder),
            "format": "freshstack",
            "query_field": query_field,
            "n_nuggets": nuggets.n_nuggets,
        },
    )


def load(
    dataset_id: str,
    *,
    query_field: str = "question",
    download: bool = True,
    show_progress: bool = False,
) -> Dataset:
    """Load ``freshstack/<topic>``.

    Args:
        dataset_id: one of :func:`dataset_ids`.
        query_field: ``"question"`` (default), ``"answer"`` or ``"nuggets"``; see :func:`query_texts`.
        download: fetch the topic from the hub when it is not on disk.
        show_progress: progress bars while writing a download.

    Raises:
        UnknownNameError: not a FreshStack id, or an unknown query field.
        DatasetError: absent and *download* is false.
        DownloadError: see :func:`fetch`.
    """
    topic = _topic(dataset_id)
    if query_field not in QUERY_FIELDS:
        raise UnknownNameError(
            f"unknown query field {query_field!r}.{suggest(query_field, QUERY_FIELDS)} "
            f"Valid: {', '.join(QUERY_FIELDS)}"
        )
    folder = find(dataset_id)
    if folder is None:
        if not download:
            raise DatasetError(
                f"{dataset_id} is not on disk (searched "
                f"{', '.join(str(p / 'freshstack' / topic) for p in _home.search_path())}); "
                "call fetch() or load with download=True"
            )
        folder = fetch(dataset_id, show_progress=show_progress)
    dataset = load_folder(folder, dataset_id=dataset_id, query_field=query_field)
    dataset.metadata.update(
        {
            "queries_repo": f"{QUERIES_REPO}@{QUERIES_REVISION}",
            "corpus_repo": f"{CORPUS_REPO}@{CORPUS_REVISION}",
            "topic": topic,
        }
    )
    return dataset


def _counts(folder: Path) -> dict[str, int]:
    """Documents and queries of a local FreshStack folder (non-empty lines; no parsing)."""
    out = {}
    for what, name in (("documents", "corpus.jsonl"), ("queries", "queries.jsonl")):
        path = folder / name
        if path.is_file():
            with open(path, "rb") as fh:
                out[what] = sum(1 for line in fh if line.strip())
    return out


def info(dataset_id: str) -> dict:
    """Facts about a FreshStack id without loading it (counts when it is local)."""
    topic = _topic(dataset_id)
    folder = find(dataset_id)
    return {
        "id": dataset_id,
        "family": "freshstack",
        "topic": topic,
        "queries": f"{QUERIES_REPO} (config {topic}, split test) @ {QUERIES_REVISION}",
        "corpus": f"{CORPUS_REPO} (config {topic}, split train) @ {CORPUS_REVISION}",
        "folder": str(folder) if folder else None,
        "counts": _counts(folder) if folder else None,
        "install_folder": str(_install_folder(dataset_id)),
        "default_measures": list(DEFAULT_MEASURES),
        "default_profile": DEFAULT_PROFILE,
        "query_fields": list(QUERY_FIELDS),
        "citation": CITATION,
    }


# --- the family -----------------------------------------------------------------------------------
class FreshStackFamily(ModuleFamily):
    """``freshstack/<topic>``, FreshStack-format folders (as ``nuggetbench build`` writes them)
    and FreshStack queries files given as judgments."""

    name = "freshstack"
    pattern = "freshstack/*"
    description = (
        "FreshStack Oct 2024 (Thakur et al., 2025): nugget-judged Stack Overflow questions "
        "over GitHub chunks"
    )
    default_measures = DEFAULT_MEASURES
    default_profile = DEFAULT_PROFILE
    options = params_table(
        Param(
            "query_field",
            str,
            "question",
            "retrieve with the question, or (oracles) the answer or the nuggets",
        ),
        DOWNLOAD,
        SHOW_PROGRESS,
    )
    folder_options = params_table(options["query_field"])

    def claims_file(self, path: Path, sniffed: str | None) -> bool:
        return sniffed == "freshstack"

    def load_file(self, path: Path) -> Target:
        return Target(
            load_nugget_qrels_file(path),
            default_measures=DEFAULT_MEASURES,
            default_profile=DEFAULT_PROFILE,
            family=self,
        )

    def claims_folder(self, folder: Path) -> bool:
        """A folder without ``qrels/`` whose ``queries.jsonl`` rows carry ``nuggets``."""
        queries = folder / "queries.jsonl"
        if (folder / "qrels").is_dir() or not queries.is_file():
            return False
        if not (folder / "corpus.jsonl").is_file():
            return False
        try:  # the first row, as every JSONL reader reads it (a byte-order mark dropped)
            for _, row in iter_jsonl(queries):
                return isinstance(row, dict) and "nuggets" in row
        except FormatError:
            return False
        return False

    def load_folder(self, folder: Path, **options: Any) -> Dataset:
        return load_folder(folder, query_field=options.get("query_field") or "question")


FAMILY = FreshStackFamily()
