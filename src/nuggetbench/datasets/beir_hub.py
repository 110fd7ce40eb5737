"""BEIR from its Hugging Face mirrors: ``BeIR/<name>`` (corpus, queries) and ``BeIR/<name>-qrels``.

An alternative source for ``beir/<name>`` when the BEIR server is unreachable:
``load_dataset("beir/scifact", source="hub")``. The mirrors hold ``corpus.jsonl.gz`` and
``queries.jsonl.gz`` (BEIR's own lines: ``_id``, ``title``, ``text``) and ``<split>.tsv`` qrels
(``query-id``, ``corpus-id``, ``score``), i.e. the same data as the official zips. The revision
defaults to ``main`` (no commit is pinned for the 14 mirrored datasets; pass ``revision=`` and
``qrels_revision=`` to pin one). CQADupStack is not mirrored per forum: use the BEIR server.

Sources, first found wins: the BEIR-layout folder ``beir/<name>/`` (``NUGGETBENCH_DATA``, then
the home: exactly what the server source uses); hub-shaped files in such a folder
(``corpus.jsonl.gz`` / ``corpus.parquet`` / ``corpus/``, ``queries.jsonl.gz`` /
``queries.parquet`` / ``queries/``, and ``<split>.tsv`` or ``qrels/<split>.tsv``); the hub.
Hub data is written once into ``$NUGGETBENCH_HOME/beir/<name>/`` in BEIR layout, with a
``source.json`` saying where it came from.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from nuggetbench import home as _home
from nuggetbench._atomic import atomic_write
from nuggetbench.data import read_beir_qrels
from nuggetbench.data.formats.jsonl_index import write_jsonl_corpus
from nuggetbench.datasets import hub
from nuggetbench.datasets._ids import BEIR_NAMES
from nuggetbench.datasets._materialize import (
    assemble,
    documents_from_records,
    queries_from_records,
    write_split,
)
from nuggetbench.datasets.dataset import Dataset
from nuggetbench.errors import DatasetError

log = logging.getLogger(__name__)

#: Every BEIR dataset but CQADupStack (not mirrored per forum), in BEIR's order.
MIRRORED = tuple(n for n in BEIR_NAMES if n != "cqadupstack")


def repos(name: str) -> tuple[str, str]:
    """``(corpus/queries repository, qrels repository)`` of a BEIR dataset name."""
    return f"BeIR/{name}", f"BeIR/{name}-qrels"


def _qrels_files(folder: Path, split: str) -> Path | None:
    for candidate in (folder / "qrels" / f"{split}.tsv", folder / f"{split}.tsv"):
        if candidate.is_file():
            return candidate
    return None


def _hub_shaped(folder: Path, split: str) -> tuple[list[Path], list[Path], Path | None]:
    return (
        hub.find_record_files(folder, "corpus"),
        hub.find_record_files(folder, "queries"),
        _qrels_files(folder, split),
    )


def fetch_from_hub(
    name: str,
    *,
    split: str,
    revision: str | None = None,
    qrels_revision: str | None = None,
    show_progress: bool = False,
    download: bool = True,
) -> Path:
    """Write ``beir/<name>`` (one split's qrels) into the home in BEIR layout from hub files.

    Returns:
        ``$NUGGETBENCH_HOME/beir/<name>``.

    Raises:
        DatasetError: not mirrored, or files absent with *download* false.
        DownloadError: absent and offline (the folder to fill is named), or the hub failed.
    """
    if name not in MIRRORED:
        raise DatasetError(
            f"beir/{name} has no per-dataset hub mirror; use the BEIR server (source='server')"
        )
    dataset_id = f"beir/{name}"
    target = _home.home() / "beir" / name
    corpus_files, query_files, qrels_file = _local_hub_files(name, split)
    corpus_repo, qrels_repo = repos(name)
    hint = (
        f"corpus.jsonl.gz and queries.jsonl.gz from {corpus_repo} and {split}.tsv from "
        f"{qrels_repo} (or the BEIR layout)"
    )
    if not (corpus_files and query_files and qrels_file):
        if not download:
            raise DatasetError(
                f"{dataset_id}: hub files absent and download=False; fill {target} with {hint}"
            )
        hub.ensure_reachable(dataset_id, target, hint=hint)
    fetch = {"what": dataset_id, "fill_folder": target, "hint": hint}
    if not (corpus_files and query_files):
        snap = hub.download_files(corpus_repo, ["corpus*", "queries*"], revision=revision, **fetch)
        corpus_files, query_files = _hub_shaped(snap, split)[:2]
    if qrels_file is None:
        snap = hub.download_files(qrels_repo, [f"{split}.tsv"], revision=qrels_revision, **fetch)
        qrels_file = _qrels_files(snap, split)
    if not (corpus_files and query_files and qrels_file):
        raise DatasetError(f"{dataset_id}: the hub files lack the corpus, queries or {split} qrels")
    qrels = read_beir_qrels(qrels_file, name=dataset_id)
    queries = queries_from_records(query_files)
    write_split(target, split, queries, qrels)
    if not (target / "corpus.jsonl").exists():
        write_jsonl_corpus(
            documents_from_records(corpus_files),
            target / "corpus.jsonl",
            show_progress=show_progress,
            total=hub.count_records(corpus_files),
            desc=f"{dataset_id} corpus",
        )
    with atomic_write(target / "source.json") as fh:
        json.dump(
            {
                "source": "hub",
                "corpus": f"{corpus_repo}@{hub.revision_for(corpus_repo, revision)}",
                "qrels": f"{qrels_repo}@{hub.revision_for(qrels_repo, qrels_revision)}",
                "files": [str(p) for p in (*corpus_files, *query_files, qrels_file)],
            },
            fh,
            indent=1,
        )
    return target


def _local_hub_files(name: str, split: str) -> tuple[list[Path], list[Path], Path | None]:
    """``(corpus files, query files, qrels file)`` already in the dataset folders
    (``NUGGETBENCH_DATA`` then the home), each the first found; empty or ``None`` when absent."""
    corpus_files: list[Path] = []
    query_files: list[Path] = []
    qrels_file: Path | None = None
    for root in _home.search_path():
        folder = root / "beir" / name
        if folder.is_dir():
            c, q, r = _hub_shaped(folder, split)
            corpus_files, query_files, qrels_file = (
                corpus_files or c,
                query_files or q,
                qrels_file or r,
            )
    return corpus_files, query_files, qrels_file


def load(
    dataset_id: str,
    *,
    split: str = "test",
    revision: str | None = None,
    qrels_revision: str | None = None,
    download: bool = True,
    show_progress: bool = False,
) -> Dataset:
    """``beir/<name>`` from the hub mirrors (see the module docstring).

    The BEIR loader calls this for ``source="hub"`` and then applies its own per-dataset
    policies (self hits, default split); called directly, *split* defaults to ``test``.

    Raises:
        DatasetError, DownloadError: see :func:`fetch_from_hub`.
    """
    name = dataset_id.split("/", 1)[1]
    folder = _home.find_dataset_dir(dataset_id, marker=f"qrels/{split}.tsv")
    if (
        folder is None
        or not (folder / "corpus.jsonl").exists()
        or not (folder / "queries.jsonl").exists()
    ):
        folder = fetch_from_hub(
            name,
            split=split,
            revision=revision,
            qrels_revision=qrels_revision,
            show_progress=show_progress,
            download=download,
        )
    corpus_repo, qrels_repo = repos(name)
    return assemble(
        dataset_id,
        corpus_path=folder / "corpus.jsonl",
        queries_path=folder / "queries.jsonl",
        qrels_path=folder / "qrels" / f"{split}.tsv",
        split=split,
        default_measures=["nDCG@10", "R@100", "RR@10", "AP"],
        metadata={
            "source": str(folder),
            "family": "beir",
            "origin": "hub",
            "hub": {
                "corpus": f"{corpus_repo}@{hub.revision_for(corpus_repo, revision)}",
                "qrels": f"{qrels_repo}@{hub.revision_for(qrels_repo, qrels_revision)}",
            },
        },
    )
