"""BEIR datasets (Thakur et al., NeurIPS 2021 Datasets and Benchmarks): ``beir/<name>``.

The 15 public datasets and the 12 CQADupStack sub-forums (``beir/cqadupstack/<forum>``). A
dataset is looked up as ``beir/<name>/`` in the ``NUGGETBENCH_DATA`` folders, then in
``NUGGETBENCH_HOME``; when absent it is downloaded from the BEIR server, verified against the
published MD5 and extracted safely into ``$NUGGETBENCH_HOME/beir/<name>/`` (the layout of the
official zip: ``corpus.jsonl``, ``queries.jsonl``, ``qrels/<split>.tsv``). Nothing is ever
written into a ``NUGGETBENCH_DATA`` folder.

``beir/cqadupstack`` as a whole is the 12 forums side by side, every query and document id
prefixed by its forum (``android/12345``): a run for the whole dataset must use those ids (the
forums' own ids collide, so no other mapping is safe). It is scored forum by forum and reported
as the unweighted mean of the 12 forums' means, the BEIR and MTEB convention, with the per-forum
table (``Dataset.metadata["mean_of_groups"] = "/"``, read by
:func:`nuggetbench.evaluation.evaluate_dataset`).

Self hits: BEIR's evaluation drops a retrieved document whose id equals the query id
(``ignore_identical_ids``). nuggetbench declares that policy per dataset instead: it is on for
``beir/arguana`` and ``beir/quora``, whose queries are corpus documents, and off elsewhere.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from nuggetbench import home as _home
from nuggetbench.data import Corpus, Document, Qrels, Queries, read_beir_folder
from nuggetbench.datasets._ids import BEIR_NAMES, CQADUPSTACK_FORUMS
from nuggetbench.datasets.beir_hub import load as load_from_hub
from nuggetbench.datasets.dataset import Dataset
from nuggetbench.datasets.download import download_file, file_md5, install_zip
from nuggetbench.datasets.family import DOWNLOAD, SHOW_PROGRESS, ModuleFamily
from nuggetbench.errors import DatasetError, DownloadError, UnknownNameError, suggest
from nuggetbench.spec import Param, params_table

log = logging.getLogger(__name__)

BASE_URL = "https://public.ukp.informatik.tu-darmstadt.de/thakur/BEIR/datasets"
"""Where ``<name>.zip`` is downloaded from (tests point it at a local server)."""


#: Published MD5 of each official zip (BEIR's README table).
MD5 = {
    "msmarco": "444067daf65d982533ea17ebd59501e4",
    "trec-covid": "ce62140cb23feb9becf6270d0d1fe6d1",
    "nfcorpus": "a89dba18a62ef92f7d323ec890a0d38d",
    "nq": "d4d3d2e48787a744b6f6e691ff534307",
    "hotpotqa": "f412724f78b0d91183a0e86805e16114",
    "fiqa": "17918ed23cd04fb15047f73e6c3bd9d9",
    "arguana": "8ad3e3c2a5867cdced806d6503f29b99",
    "webis-touche2020": "6e29ac6c57e2d227fb57501872cac45f",
    "cqadupstack": "4e41456d7df8ee7760a7f866133bda78",
    "quora": "18fb154900ba42a600f84b839c173167",
    "dbpedia-entity": "c2a39eb420a3164af735795df012ac2c",
    "scidocs": "38121350fc3a4d2f48850f6aff52e4a9",
    "fever": "88591ef8eb2913126d0c93ecbde6285f",
    "climate-fever": "8b66f0a9126c521bae2bde127b4dc99d",
    "scifact": "5f7d1de60b170fc8027bb7898e2efca1",
}

SELF_HIT_DATASETS = frozenset({"arguana", "quora"})
DEFAULT_MEASURES = ("nDCG@10", "R@100", "RR@10", "AP")
DEFAULT_SPLIT = {"msmarco": "dev"}


def dataset_ids() -> list[str]:
    """Every ``beir/...`` id: the 15 datasets and the 12 CQADupStack sub-forums."""
    return [f"beir/{n}" for n in BEIR_NAMES] + [f"beir/cqadupstack/{f}" for f in CQADUPSTACK_FORUMS]


def _parse(dataset_id: str) -> tuple[str, str | None]:
    """``beir/<name>[/<forum>]`` -> ``(name, forum)``; raises UnknownNameError with a suggestion."""
    if dataset_id not in dataset_ids():
        raise UnknownNameError(
            f"unknown BEIR dataset {dataset_id!r}.{suggest(dataset_id, dataset_ids())} "
            f"Known: {', '.join(dataset_ids())}"
        )
    parts = dataset_id.split("/")
    return parts[1], (parts[2] if len(parts) > 2 else None)


def _archive_url(name: str) -> str:
    return f"{BASE_URL.rstrip('/')}/{name}.zip"


def find(dataset_id: str) -> Path | None:
    """The existing folder of *dataset_id* on the search path (``NUGGETBENCH_DATA``, then home)."""
    _parse(dataset_id)
    return _home.find_dataset_dir(dataset_id, marker=_marker(dataset_id))


def _marker(dataset_id: str) -> str:
    # the aggregate cqadupstack folder holds one sub-folder per forum
    return "android/corpus.jsonl" if dataset_id == "beir/cqadupstack" else "corpus.jsonl"


def fetch(dataset_id: str, *, show_progress: bool = False) -> Path:
    """Make sure *dataset_id* is on disk (downloading it if needed); return its folder.

    Raises:
        DownloadError: the dataset is absent and downloads are forbidden
            (``NUGGETBENCH_OFFLINE=1``) or failed; the message names the folder to fill.
        ChecksumError: the downloaded zip does not match the published MD5 (nothing is kept).
        UnsafeArchiveError: a member of the zip would be written outside the target folder.
    """

    name, forum = _parse(dataset_id)
    found = find(dataset_id)
    if found is not None:
        return found
    root = _home.home() / "beir"
    wanted = root / name / forum if forum else root / name
    url = _archive_url(name)
    if _home.offline():
        raise DownloadError(
            f"{dataset_id} is not on disk and downloads are off (NUGGETBENCH_OFFLINE=1). Fill the "
            f"folder {wanted} (download {url}, MD5 {MD5[name]}, and unzip it into {root}), or point "
            f"NUGGETBENCH_DATA at a folder holding {dataset_id}/; searched: "
            f"{', '.join(str(p / dataset_id) for p in _home.search_path())}"
        )
    archive = root / f"{name}.zip"
    try:
        if not (archive.exists() and file_md5(archive) == MD5[name]):
            download_file(url, archive, md5=MD5[name], show_progress=show_progress, what=dataset_id)
        install_zip(
            archive,
            member_dir=name,
            destination=root / name,
            marker=_marker(f"beir/{name}"),
            show_progress=show_progress,
        )
    except DownloadError as exc:
        raise type(exc)(f"{exc}. Alternatively fill the folder {wanted} by hand") from exc
    finally:
        with contextlib.suppress(FileNotFoundError):
            archive.unlink()
    if not (wanted / "corpus.jsonl").exists() and dataset_id != "beir/cqadupstack":
        raise DatasetError(
            f"{url} was installed in {root / name}, but {wanted / 'corpus.jsonl'} is "
            "missing: the archive does not have the official BEIR layout"
        )
    return wanted


def load(
    dataset_id: str,
    *,
    split: str | None = None,
    remove_self_hits: bool | None = None,
    download: bool = True,
    show_progress: bool = False,
    source: str = "server",
) -> Dataset:
    """Load ``beir/<name>`` (or ``beir/cqadupstack/<forum>``).

    Args:
        dataset_id: a BEIR id (see :func:`dataset_ids`).
        split: the qrels split; default ``test`` (``dev`` for ``beir/msmarco``).
        remove_self_hits: override the dataset's self-hit policy (default: on for ArguAna and
            Quora only, as BEIR's evaluation).
        download: download the dataset when it is absent (unless ``NUGGETBENCH_OFFLINE=1``).
        show_progress: progress bars for the download and extraction.
        source: ``server`` (the official zip, default) or ``hub`` (the ``BeIR/<name>`` Hugging
            Face mirrors, see :mod:`.beir_hub`); an existing ``beir/<name>/`` folder serves both.

    Raises:
        UnknownNameError: not a BEIR id (the nearest is suggested).
        DatasetError: the folder is absent and *download* is false. ``beir/cqadupstack`` as a
            whole loads its 12 forums with ``<forum>/`` id prefixes (see the module docstring).
        DownloadError, ChecksumError, UnsafeArchiveError: see :func:`fetch`.
        InputError: the split has no ``qrels/<split>.tsv`` (the available splits are listed).
    """
    name, forum = _parse(dataset_id)
    if name == "cqadupstack" and forum is None:
        return _load_cqadupstack(
            split=split, remove_self_hits=remove_self_hits, download=download, source=source
        )
    if source not in ("server", "hub"):
        raise DatasetError(f"source must be 'server' or 'hub', got {source!r}")
    if source == "hub":
        policy = name in SELF_HIT_DATASETS if remove_self_hits is None else bool(remove_self_hits)
        dataset = load_from_hub(
            dataset_id,
            split=split or DEFAULT_SPLIT.get(name, "test"),
            download=download,
            show_progress=show_progress,
        )
        dataset.remove_self_hits = policy
        dataset.metadata["self_hit_policy"] = _self_hit_policy(name, policy)
        return dataset
    folder = find(dataset_id)
    if folder is None:
        if not download:
            raise DatasetError(
                f"{dataset_id} is not on disk (searched "
                f"{', '.join(str(p / dataset_id) for p in _home.search_path())}); "
                "call fetch() or load with download=True"
            )
        folder = fetch(dataset_id, show_progress=show_progress)
    split = split or DEFAULT_SPLIT.get(name, "test")
    policy = name in SELF_HIT_DATASETS if remove_self_hits is None else bool(remove_self_hits)
    dataset = load_folder(folder, split=split, dataset_id=dataset_id, remove_self_hits=policy)
    dataset.metadata.update(
        {
            "url": _archive_url(name),
            "md5": MD5[name],
            "self_hit_policy": _self_hit_policy(name, policy),
        }
    )
    return dataset


def _load_cqadupstack(
    *, split: str | None, remove_self_hits: bool | None, download: bool, source: str
) -> Dataset:
    """The 12 forums as one dataset with ``<forum>/<id>`` ids, scored as the mean of the forums."""
    parts = {
        f: load(
            f"beir/cqadupstack/{f}",
            split=split,
            remove_self_hits=remove_self_hits,
            download=download,
            source=source,
        )
        for f in CQADUPSTACK_FORUMS
    }
    first = next(iter(parts.values()))
    q, d, r = [], [], []
    texts: dict[str, str] = {}
    for f, ds in parts.items():
        qids, starts, docids, rels = ds.qrels.arrays()
        lengths = np.diff(starts)
        q += [f"{f}/{x}" for x in np.repeat(qids, lengths).tolist()]
        d += [f"{f}/{x}" for x in docids.tolist()]
        r += rels.tolist()
        texts |= {f"{f}/{qid}": ds.queries[qid] for qid in ds.queries}
    return Dataset(
        id="beir/cqadupstack",
        corpus=GroupedCorpus({f: ds.corpus for f, ds in parts.items()}),
        queries=Queries(texts, name="beir/cqadupstack"),
        qrels=Qrels(q, d, r, name="beir/cqadupstack"),
        split=first.split,
        default_measures=list(DEFAULT_MEASURES),
        remove_self_hits=first.remove_self_hits,
        metadata={
            "format": "beir",
            "mean_of_groups": "/",
            "groups": list(CQADUPSTACK_FORUMS),
            "self_hit_policy": first.metadata.get("self_hit_policy"),
        },
        notes=[
            "beir/cqadupstack: the mean of its 12 forums' scores (BEIR/MTEB); query and document "
            "ids are '<forum>/<id>'"
        ],
    )


class GroupedCorpus(Corpus):
    """Several corpora side by side under ``<group>/<doc id>`` ids (read lazily from each)."""

    def __init__(self, corpora: dict[str, Corpus], sep: str = "/"):
        self._corpora = dict(corpora)
        self._sep = sep
        self.name = "+".join(self._corpora)

    def __getitem__(self, doc_id: str) -> Document:
        group, _, inner = doc_id.partition(self._sep)
        if group not in self._corpora or not inner:
            raise KeyError(doc_id)
        doc = self._corpora[group][inner]
        return Document(doc_id, doc.text, doc.title, doc.metadata)

    def __iter__(self) -> Iterator[str]:
        for group, corpus in self._corpora.items():
            for doc_id in corpus:
                yield f"{group}{self._sep}{doc_id}"

    def __len__(self) -> int:
        return sum(len(c) for c in self._corpora.values())

    def fingerprint(self) -> str:
        h = hashlib.sha256()
        for group, corpus in self._corpora.items():
            h.update(f"{group}\x1f{corpus.fingerprint()}\x1e".encode())
        return h.hexdigest()[:16]


def load_folder(
    path: str | Path,
    *,
    split: str = "test",
    dataset_id: str | None = None,
    remove_self_hits: bool = False,
    text_field: str | None = None,
) -> Dataset:
    """Load any BEIR-format folder (``corpus.jsonl``, ``queries.jsonl``, ``qrels/<split>.tsv``).

    Queries are restricted to those judged in the split. Default measures are BEIR's
    (``nDCG@10 R@100 RR@10 AP``). *text_field* names the corpus field holding each document's
    text (default ``text``; ``-O text_field=body``).

    Raises:
        InputError: a file is missing (the available splits are listed) or malformed.
    """

    folder = Path(path)
    label = dataset_id or str(folder)
    corpus, queries, qrels = read_beir_folder(
        folder, split=split, name=label, text_field=text_field
    )
    return Dataset(
        id=label,
        corpus=corpus,
        queries=queries,
        qrels=qrels,
        split=split,
        default_measures=list(DEFAULT_MEASURES),
        remove_self_hits=remove_self_hits,
        metadata={"source": str(folder), "format": "beir"},
    )


def _self_hit_policy(name: str, policy: bool) -> str:
    if policy and name in SELF_HIT_DATASETS:
        return (
            "on: queries are corpus documents, so a document whose id equals the query id is "
            "dropped from runs (as BEIR's evaluation does)"
        )
    if policy:
        return "on (asked for): documents whose id equals the query id are dropped from runs"
    return "off: runs are scored as retrieved"


def info(dataset_id: str) -> dict:
    """Facts about a BEIR id without loading it: URL, MD5, split, folder, policies."""
    name, forum = _parse(dataset_id)
    folder = find(dataset_id)
    policy = name in SELF_HIT_DATASETS
    return {
        "id": dataset_id,
        "family": "beir",
        "name": name,
        "forum": forum,
        "default_split": DEFAULT_SPLIT.get(name, "test"),
        "url": _archive_url(name),
        "md5": MD5[name],
        "folder": str(folder) if folder else None,
        "install_folder": str(_home.home() / "beir" / name / (forum or "")).rstrip("/"),
        "remove_self_hits": policy,
        "self_hit_policy": _self_hit_policy(name, policy),
        "default_measures": list(DEFAULT_MEASURES),
        "default_profile": "trec_eval -c",
        "loadable": True,
        "mean_of_groups": name == "cqadupstack" and forum is None,
        "counts": _counts(folder) if folder and _marker(dataset_id) == "corpus.jsonl" else None,
        "citation": "Thakur et al., BEIR: A Heterogeneous Benchmark for Zero-shot Evaluation of "
        "Information Retrieval Models, NeurIPS 2021 Datasets and Benchmarks",
    }


def _counts(folder: Path) -> dict[str, int]:
    """Documents, queries and judgments (per qrels split) of a local BEIR folder, by counting
    lines (no parsing: a few seconds for MS MARCO's 8.8M passages)."""
    out = {
        "documents": _count_lines(folder / "corpus.jsonl"),
        "queries": _count_lines(folder / "queries.jsonl"),
    }
    for qrels in sorted((folder / "qrels").glob("*.tsv")):
        out[f"judgments ({qrels.stem})"] = max(_count_lines(qrels) - 1, 0)  # header line
    return out


def _count_lines(path: Path) -> int:
    """Non-empty lines of *path* (0 when absent)."""
    if not path.is_file():
        return 0
    with open(path, "rb") as fh:
        return sum(1 for line in fh if line.strip())


# --- the family -----------------------------------------------------------------------------------
class BeirFamily(ModuleFamily):
    """``beir/<name>`` and local BEIR-format folders (``corpus.jsonl``, ``queries.jsonl``,
    ``qrels/<split>.tsv``)."""

    name = "beir"
    pattern = "beir/*"
    description = "BEIR (Thakur et al., 2021), downloaded from the BEIR server and MD5-verified"
    default_measures = DEFAULT_MEASURES
    options = params_table(
        Param("split", str, None, "qrels split (default test; dev for beir/msmarco)"),
        Param(
            "remove_self_hits", bool, None, "override the self-hit policy (on for arguana, quora)"
        ),
        DOWNLOAD,
        SHOW_PROGRESS,
        Param("source", str, "server", "server (the official zip) or hub (the BeIR mirrors)"),
    )
    folder_options = params_table(
        Param("split", str, None, "qrels split (default test)"),
        Param("remove_self_hits", bool, False, "drop documents whose id equals the query id"),
        Param("text_field", str, None, "corpus field holding each document's text (default text)"),
    )

    def claims_folder(self, folder: Path) -> bool:
        return (folder / "corpus.jsonl").is_file() or (folder / "qrels").is_dir()

    def load_folder(self, folder: Path, **options: Any) -> Dataset:
        return load_folder(
            folder,
            split=options.get("split") or "test",
            remove_self_hits=bool(options.get("remove_self_hits") or False),
            text_field=options.get("text_field"),
        )


FAMILY = BeirFamily()
