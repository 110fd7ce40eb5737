"""mMARCO (Bonifacio et al., 2021): MS MARCO passage ranking translated into 14 languages.

Ids: ``mmarco/<doc_lang>`` (queries in the same language) or ``mmarco/<doc_lang>/<query_lang>``
(cross-lingual, e.g. ``mmarco/english/german``: German queries over the English passages). Languages
are the hub's names: arabic chinese dutch english french german hindi indonesian italian japanese
portuguese russian spanish vietnamese (ISO codes such as ``de`` are accepted too).

Splits: ``dev`` (default) is MS MARCO's dev/small (6,980 queries, ``qrels.dev.small.tsv``);
``dev-full`` the full dev set (``qrels.dev.tsv``). Passage and query ids, and therefore the qrels,
are the same in every language. Default measures: ``RR@10`` (MS MARCO's MRR@10), ``R@1000``,
``nDCG@10``.

Sources, first found wins, per part (corpus in ``<doc_lang>``, queries in ``<query_lang>``,
qrels anywhere): a BEIR-layout folder ``mmarco/<lang>/`` (``corpus.jsonl``, ``queries.jsonl``,
``qrels/<split>.tsv``) in ``NUGGETBENCH_DATA`` or the home; hub-shaped files in such a folder
(the repository's ``<lang>_collection.tsv``, ``<lang>_queries.dev.small.tsv`` and
``qrels.dev.small.tsv`` anywhere below it, or ``collection`` / ``queries`` records in parquet,
JSON or ``save_to_disk`` form, fields ``id``/``doc_id`` and ``text``); the hub repository
``unicamp-dl/mmarco`` (``data/google/...``, pinned revision, see :mod:`.hub`). What comes from
hub files is written once into ``$NUGGETBENCH_HOME/mmarco/<lang>/`` in BEIR layout.

Subsets: ``max_docs=N`` keeps the first N passages (collection order) and, with
``keep_judged=True`` (the default), every judged passage as well. A smaller corpus has fewer
distractors, so **the task becomes easier** and scores are not comparable with full-corpus
results; without ``keep_judged`` judged passages go missing and the task becomes harder. Either
way the dataset's ``metadata["subset"]`` says so and a warning is logged.
"""

from __future__ import annotations

import fnmatch
import logging
from collections.abc import Iterator
from pathlib import Path

from nuggetbench import home as _home
from nuggetbench.data import Document, Queries, read_beir_qrels, read_trec_qrels
from nuggetbench.data.formats.jsonl_index import IndexedJsonlCorpus, write_jsonl_corpus
from nuggetbench.datasets import hub
from nuggetbench.datasets._ids import MMARCO_LANGUAGES as LANGUAGES
from nuggetbench.datasets._materialize import (
    assemble,
    documents_from_pairs,
    documents_from_records,
    has_split,
    queries_from_records,
    read_subset_info,
    write_split,
    write_subset,
)
from nuggetbench.datasets.dataset import Dataset
from nuggetbench.datasets.family import DOWNLOAD, REVISION, SHOW_PROGRESS, ModuleFamily
from nuggetbench.errors import DatasetError, UnknownNameError, suggest
from nuggetbench.spec import Param, params_table

log = logging.getLogger(__name__)

CODES = {
    "arabic": "ar",
    "chinese": "zh",
    "dutch": "nl",
    "english": "en",
    "french": "fr",
    "german": "de",
    "hindi": "hi",
    "indonesian": "id",
    "italian": "it",
    "japanese": "ja",
    "portuguese": "pt",
    "russian": "ru",
    "spanish": "es",
    "vietnamese": "vi",
}
REPO = "unicamp-dl/mmarco"
SPLITS = {
    "dev": ("queries.dev.small.tsv", "qrels.dev.small.tsv"),
    "dev-full": ("queries.dev.tsv", "qrels.dev.tsv"),
}
FULL_SIZE = 8_841_823
DEFAULT_MEASURES = ("RR@10", "R@1000", "nDCG@10")
CITATION = (
    "Bonifacio et al., mMARCO: A Multilingual Version of the MS MARCO Passage Ranking "
    "Dataset, arXiv:2108.13897"
)


def dataset_ids() -> list[str]:
    """The 14 monolingual ids (cross-lingual ``mmarco/<doc>/<query>`` ids are accepted too)."""
    return [f"mmarco/{lang}" for lang in LANGUAGES]


def _language(value: str, dataset_id: str) -> str:
    key = value.lower()
    by_code = {code: name for name, code in CODES.items()}
    if key in LANGUAGES:
        return key
    if key in by_code:
        return by_code[key]
    raise UnknownNameError(
        f"unknown mMARCO language {value!r} in {dataset_id!r}.{suggest(key, LANGUAGES)} "
        f"Languages: {', '.join(LANGUAGES)}"
    )


def _parse(dataset_id: str) -> tuple[str, str]:
    parts = dataset_id.split("/")
    if parts[0] != "mmarco" or len(parts) not in (2, 3):
        raise UnknownNameError(
            f"unknown mMARCO id {dataset_id!r}: write mmarco/<doc_lang> or "
            "mmarco/<doc_lang>/<query_lang>, e.g. mmarco/english/german"
        )
    doc_lang = _language(parts[1], dataset_id)
    return doc_lang, _language(parts[2], dataset_id) if len(parts) == 3 else doc_lang


def _split(split: str) -> str:
    if split not in SPLITS:
        raise DatasetError(
            f"mMARCO has no split {split!r}; use 'dev' (dev/small, default) or 'dev-full'"
        )
    return split


def _folders(lang: str) -> list[Path]:
    return [r / "mmarco" / lang for r in _home.search_path() if (r / "mmarco" / lang).is_dir()]


def _roots() -> list[Path]:
    return [r / "mmarco" for r in _home.search_path() if (r / "mmarco").is_dir()]


def _first(folders: list[Path], pattern: str) -> Path | None:
    for folder in folders:
        hits = sorted(folder.rglob(pattern))
        if hits:
            return hits[0]
    return None


def _hint(lang: str, split: str) -> str:
    queries, qrels = SPLITS[split]
    return (
        f"either the BEIR layout (corpus.jsonl, queries.jsonl, qrels/{split}.tsv) or the hub "
        f"files {lang}_collection.tsv, {lang}_{queries} and {qrels} of {REPO}"
    )


# --- the three parts ---------------------------------------------------------------------------
def _may_download(download: bool, dataset_id: str, target: Path, hint: str) -> None:
    if not download:
        raise DatasetError(
            f"{dataset_id} is not on disk (searched {', '.join(map(str, _roots())) or 'no mmarco folder'}) "
            f"and download=False; fill {target} with {hint}"
        )
    hub.ensure_reachable(dataset_id, target, hint=hint)


def _download(
    lang: str, split: str, repo_path: str, dataset_id: str, revision: str | None, download: bool
) -> Path:
    """Fetch one file of :data:`REPO` into ``<home>/mmarco/<lang>`` (refused when not *download*
    or offline) and return its local path."""
    target = _home.home() / "mmarco" / lang
    _may_download(download, dataset_id, target, _hint(lang, split))
    snap = hub.download_files(
        REPO, [repo_path], revision=revision, what=dataset_id, fill_folder=target
    )
    raw = _first([snap], repo_path.rsplit("/", 1)[-1])
    assert raw is not None
    return raw


def _qrels_path(
    doc_lang: str,
    query_lang: str,
    split: str,
    dataset_id: str,
    revision: str | None,
    download: bool,
) -> Path:
    for lang in dict.fromkeys((query_lang, doc_lang)):
        found = _home.find_dataset_dir(f"mmarco/{lang}", marker=f"qrels/{split}.tsv")
        if found:
            return found / "qrels" / f"{split}.tsv"
    name = SPLITS[split][1]
    raw = _first(_roots(), name)
    if raw is None:
        raw = _download(query_lang, split, f"data/{name}", dataset_id, revision, download)
    return raw


def _queries_folder(
    query_lang: str,
    split: str,
    qrels_file: Path,
    dataset_id: str,
    revision: str | None,
    download: bool,
) -> Path:
    ready = _home.find_dataset_dir(f"mmarco/{query_lang}", marker=f"qrels/{split}.tsv")
    if has_split(ready, split):
        assert ready is not None
        return ready
    name = f"{query_lang}_{SPLITS[split][0]}"
    folders = _folders(query_lang)
    raw = _first(folders, name)
    records = next((f for f in (hub.find_record_files(d, "queries") for d in folders) if f), [])
    if raw is not None:
        queries = Queries(dict(hub.read_tsv_pairs(raw)))
    elif records and split == "dev":
        queries = queries_from_records(records)
    else:
        path = f"data/google/queries/dev/{name}"
        raw = _download(query_lang, split, path, dataset_id, revision, download)
        queries = Queries(dict(hub.read_tsv_pairs(raw)))
    qrels = read_trec_qrels(qrels_file, name=dataset_id)
    target = _home.home() / "mmarco" / query_lang
    write_split(target, split, queries.subset(qrels.query_ids), qrels)
    return target


def _collection(
    doc_lang: str, dataset_id: str, revision: str | None, download: bool
) -> tuple[Iterator[Document], int | None, str]:
    """A stream of the passages, from the best source on disk (or the hub), and its size if known."""
    found = _home.find_dataset_dir(f"mmarco/{doc_lang}", marker="corpus.jsonl")
    if found:
        corpus = IndexedJsonlCorpus(found / "corpus.jsonl")
        return corpus.iter_documents(), len(corpus), str(found / "corpus.jsonl")
    folders = _folders(doc_lang)
    name = f"{doc_lang}_collection.tsv"
    raw = _first(folders, name)
    records = next((f for f in (hub.find_record_files(d, "collection") for d in folders) if f), [])
    if raw is None and records:
        return documents_from_records(records), hub.count_records(records), str(records[0])
    if raw is None:
        path = f"data/google/collections/{name}"
        raw = _download(doc_lang, "dev", path, dataset_id, revision, download)
    return documents_from_pairs(hub.read_tsv_pairs(raw)), None, str(raw)


def _full_corpus(
    doc_lang: str, dataset_id: str, revision: str | None, show_progress: bool, download: bool
) -> Path:
    found = _home.find_dataset_dir(f"mmarco/{doc_lang}", marker="corpus.jsonl")
    if found:
        return found / "corpus.jsonl"
    stream, total, origin = _collection(doc_lang, dataset_id, revision, download)
    path = _home.home() / "mmarco" / doc_lang / "corpus.jsonl"
    log.info("%s: streaming %s into %s", dataset_id, origin, path)
    write_jsonl_corpus(
        stream,
        path,
        show_progress=show_progress,
        total=total or FULL_SIZE,
        desc=f"mmarco/{doc_lang} corpus",
    )
    return path


def _subset_corpus(
    doc_lang: str,
    split: str,
    judged: set[str],
    max_docs: int,
    keep_judged: bool,
    dataset_id: str,
    revision: str | None,
    show_progress: bool,
    download: bool,
) -> tuple[Path, dict]:
    tag = f"{split}-max{max_docs}" + ("-judged" if keep_judged else "")
    path = _home.home() / "mmarco" / doc_lang / "subsets" / f"{tag}.jsonl"
    info = read_subset_info(path)
    if info is None:
        stream, _, origin = _collection(doc_lang, dataset_id, revision, download)
        info = write_subset(
            stream,
            path,
            judged=judged,
            max_docs=max_docs,
            keep_judged=keep_judged,
            source=origin,
            show_progress=show_progress,
            desc=f"{dataset_id} subset",
        )
    return path, {**info, "full_size": info.get("full_size") or FULL_SIZE}


def find(dataset_id: str) -> Path | None:
    """The folder of the document language of ``mmarco/<doc_lang>[/<query_lang>]`` on disk
    (``corpus.jsonl``, or the hub's ``<lang>_collection.tsv``), or ``None``: it would be
    downloaded. For listings; :func:`load` also needs the queries and qrels."""
    doc_lang, _ = _parse(dataset_id)
    found = _home.find_dataset_dir(f"mmarco/{doc_lang}", marker="corpus.jsonl")
    if found:
        return found
    raw = _first(_folders(doc_lang), f"{doc_lang}_collection.tsv")
    return next((f for f in _folders(doc_lang) if raw is not None and f in raw.parents), None)


def fetch(dataset_id: str, *, show_progress: bool = False) -> Path:
    """Make sure ``mmarco/<doc_lang>[/<query_lang>]`` (dev split, full corpus) is on disk.

    Returns:
        The document language's folder (``corpus.jsonl``).

    Raises:
        DownloadError: absent and offline (the folder to fill is named), or the hub failed.
    """
    ds = load(dataset_id, show_progress=show_progress)
    return Path(ds.metadata["corpus_file"]).parent


def load(
    dataset_id: str,
    *,
    split: str = "dev",
    max_docs: int | None = None,
    keep_judged: bool = True,
    revision: str | None = None,
    download: bool = True,
    show_progress: bool = False,
) -> Dataset:
    """Load ``mmarco/<doc_lang>[/<query_lang>]`` (see the module docstring).

    Args:
        dataset_id: e.g. ``mmarco/german`` or ``mmarco/english/german``.
        split: ``dev`` (dev/small, default) or ``dev-full``.
        max_docs: keep only the first *max_docs* passages (plus the judged ones when
            *keep_judged*): **a subset makes the task easier**; marked in ``metadata["subset"]``.
        keep_judged: with *max_docs*, also keep every judged passage (default true).
        revision: commit of ``unicamp-dl/mmarco`` (default: the pinned one).
        download: fetch what is missing (unless offline).
        show_progress: progress bars while streaming the collection.

    Returns:
        A :class:`Dataset` with ``metadata["language"]`` = the *document* language's ISO code
        (it selects the BM25 analyzer; queries and documents of a cross-lingual pair are analysed
        alike) and ``metadata["query_language"]``.

    Raises:
        UnknownNameError: unknown language. DatasetError: unknown split, bad *max_docs*, or data
        absent with *download* false. DownloadError: absent and offline, or the hub failed.
    """
    doc_lang, query_lang = _parse(dataset_id)
    split = _split(split)
    if max_docs is not None and (isinstance(max_docs, bool) or int(max_docs) < 1):
        raise DatasetError(f"max_docs must be a positive integer, got {max_docs!r}")
    qrels_file = _qrels_path(doc_lang, query_lang, split, dataset_id, revision, download)
    queries_folder = _queries_folder(query_lang, split, qrels_file, dataset_id, revision, download)
    meta = _metadata(doc_lang, query_lang, split, revision)
    if max_docs is None:
        corpus_path = _full_corpus(doc_lang, dataset_id, revision, show_progress, download)
    else:
        judged = set(
            read_beir_qrels(queries_folder / "qrels" / f"{split}.tsv").arrays()[2].tolist()
        )
        corpus_path, subset = _subset_corpus(
            doc_lang,
            split,
            judged,
            int(max_docs),
            keep_judged,
            dataset_id,
            revision,
            show_progress,
            download,
        )
        meta["subset"] = subset
        log.warning(
            "%s: the corpus is a subset of %d of %d passages (%s); scores are not comparable "
            "with full-corpus results",
            dataset_id,
            subset["n_docs"],
            subset["full_size"],
            subset["note"],
        )
    return assemble(
        dataset_id,
        corpus_path=corpus_path,
        queries_path=queries_folder / "queries.jsonl",
        qrels_path=queries_folder / "qrels" / f"{split}.tsv",
        split=split,
        default_measures=list(DEFAULT_MEASURES),
        metadata=meta,
    )


def _metadata(doc_lang: str, query_lang: str, split: str, revision: str | None) -> dict:
    """The dataset's metadata: languages, hub revision, split note, citation."""
    return {
        "language": CODES[doc_lang],
        "query_language": CODES[query_lang],
        "doc_language_name": doc_lang,
        "query_language_name": query_lang,
        "family": "mmarco",
        "hub": f"{REPO}@{hub.revision_for(REPO, revision)}",
        "split_note": "dev = MS MARCO dev/small (6,980 queries)"
        if split == "dev"
        else "dev-full = MS MARCO dev (all judged dev queries)",
        "citation": CITATION,
    }


def info(dataset_id: str) -> dict:
    """Facts about an mMARCO id without loading it."""
    doc_lang, query_lang = _parse(dataset_id)
    return {
        "id": dataset_id,
        "family": "mmarco",
        "doc_language": doc_lang,
        "query_language": query_lang,
        "splits": list(SPLITS),
        "default_split": "dev",
        "default_measures": list(DEFAULT_MEASURES),
        "hub": f"{REPO}@{hub.revision_for(REPO)}",
        "full_size": FULL_SIZE,
        "install_folder": str(_home.home() / "mmarco" / doc_lang),
        "citation": CITATION,
    }


# --- the family -----------------------------------------------------------------------------------
class MmarcoFamily(ModuleFamily):
    """``mmarco/<doc_lang>`` and cross-lingual ``mmarco/<doc_lang>/<query_lang>``."""

    name = "mmarco"
    pattern = "mmarco/*"
    description = (
        "mMARCO (Bonifacio et al., 2021): MS MARCO passages and dev/small queries in 14 languages"
    )
    more_patterns = {
        "mmarco/*/*": "mMARCO cross-lingual: mmarco/<doc_lang>/<query_lang>, e.g. "
        "mmarco/english/german"
    }
    default_measures = DEFAULT_MEASURES
    options = params_table(
        Param("split", str, "dev", "dev (dev/small) or dev-full"),
        Param("max_docs", int, None, "keep only the first N passages (an easier task)"),
        Param("keep_judged", bool, True, "with max_docs, also keep every judged passage"),
        REVISION,
        DOWNLOAD,
        SHOW_PROGRESS,
    )

    def matches(self, dataset_id: str) -> bool:
        return dataset_id in self.ids() or fnmatch.fnmatchcase(dataset_id, "mmarco/*/*")
        # (mmarco/* itself only for the listed languages: the ids above)


FAMILY = MmarcoFamily()
