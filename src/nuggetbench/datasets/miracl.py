"""MIRACL (Zhang et al., TACL 2023): ``miracl/<lang>`` for 18 languages.

Languages: ar bn de en es fa fi fr hi id ja ko ru sw te th yo zh. Splits: ``dev`` (default) and
``train`` (none for the surprise languages de and yo). The test qrels (testA, testB) are hidden
by the organisers: MIRACL is scored on ``dev``.

Judgments: native speakers judged a pool per query; ``positive_passages`` are relevant (grade 1)
and ``negative_passages`` judged non-relevant (grade 0). Grade-0 judgments are kept (they count
as judged, e.g. for judged@k), and only grades > 0 count as relevant, so negatives never inflate
recall. Documents are indexed as ``title + " " + text`` (``Document.full_text``). Default
measures: ``nDCG@10`` and ``R@100`` (the MIRACL paper's).

Where the data comes from, first found wins:

1. a BEIR-layout folder ``miracl/<lang>/`` (``corpus.jsonl``, ``queries.jsonl``,
   ``qrels/<split>.tsv``) in a ``NUGGETBENCH_DATA`` folder or the home;
2. hub-shaped files in such a ``miracl/<lang>/`` folder: topics and qrels as records of
   ``miracl/miracl`` (``<split>.parquet`` / ``.jsonl`` / ``.json`` / a ``save_to_disk`` folder
   ``<split>/``, fields ``query_id``, ``query``, ``positive_passages``, ``negative_passages``) or
   the repository's raw files (``topics.miracl-v1.0-<lang>-<split>.tsv``,
   ``qrels.miracl-v1.0-<lang>-<split>.tsv``); the corpus as ``corpus.parquet`` /
   ``corpus-*.parquet`` / ``corpus/`` records (``docid``, ``title``, ``text``) or the raw
   ``docs-*.jsonl.gz`` shards of ``miracl/miracl-corpus``;
3. the hub (``miracl/miracl`` is gated: accept its terms and set ``HF_TOKEN``), at the pinned
   revisions of :mod:`.hub`.

Cases 2 and 3 are written once into ``$NUGGETBENCH_HOME/miracl/<lang>/`` in BEIR layout; the
corpus is streamed (the English one has about 33 million passages), with a progress bar, into
``corpus.jsonl`` and its memory-mapped index, never held in memory.
"""

from __future__ import annotations

import logging
from pathlib import Path

from nuggetbench import home as _home
from nuggetbench.data import Qrels, Queries, read_trec_qrels
from nuggetbench.data.formats.jsonl_index import write_jsonl_corpus
from nuggetbench.datasets import hub
from nuggetbench.datasets._ids import MIRACL_LANGUAGES as LANGUAGES
from nuggetbench.datasets._materialize import (
    assemble,
    documents_from_records,
    has_split,
    write_split,
)
from nuggetbench.datasets.dataset import Dataset
from nuggetbench.datasets.family import DOWNLOAD, REVISION, SHOW_PROGRESS, ModuleFamily
from nuggetbench.errors import DatasetError, UnknownNameError, suggest
from nuggetbench.spec import Param, params_table

log = logging.getLogger(__name__)

SURPRISE = frozenset({"de", "yo"})
HIDDEN_SPLITS = ("testA", "testB", "test", "testa", "testb", "test-a", "test-b")
TOPICS_REPO = "miracl/miracl"
CORPUS_REPO = "miracl/miracl-corpus"
DEFAULT_MEASURES = ("nDCG@10", "R@100")
CITATION = (
    "Zhang et al., MIRACL: A Multilingual Retrieval Dataset Covering 18 Diverse "
    "Languages, TACL 2023"
)


def dataset_ids() -> list[str]:
    """``miracl/<lang>`` for the 18 languages."""
    return [f"miracl/{lang}" for lang in LANGUAGES]


def _parse(dataset_id: str) -> str:
    if dataset_id not in dataset_ids():
        raise UnknownNameError(
            f"unknown MIRACL dataset {dataset_id!r}.{suggest(dataset_id, dataset_ids())} "
            f"Languages: {', '.join(LANGUAGES)}"
        )
    return dataset_id.split("/")[1]


def _check_split(lang: str, split: str) -> str:
    if split in HIDDEN_SPLITS:
        raise DatasetError(
            f"MIRACL's test qrels ({split}) are hidden by the organisers; evaluate on "
            "split='dev' (the default), as the MIRACL leaderboard does"
        )
    if split not in ("dev", "train"):
        raise DatasetError(f"miracl/{lang} has no split {split!r}; use 'dev' (default) or 'train'")
    if split == "train" and lang in SURPRISE:
        raise DatasetError(f"miracl/{lang} is a surprise language: it has no train split, only dev")
    return split


def _target(lang: str) -> Path:
    return _home.home() / "miracl" / lang


def _candidate_folders(lang: str) -> list[Path]:
    return [
        root / "miracl" / lang for root in _home.search_path() if (root / "miracl" / lang).is_dir()
    ]


def _fill_hint(lang: str, split: str) -> str:
    return (
        f"either the BEIR layout (corpus.jsonl, queries.jsonl, qrels/{split}.tsv) or the hub "
        f"files: topics.miracl-v1.0-{lang}-{split}.tsv and qrels.miracl-v1.0-{lang}-{split}.tsv "
        f"from {TOPICS_REPO} (or {split}.parquet records), and the docs-*.jsonl.gz shards of "
        f"{CORPUS_REPO}/miracl-corpus-v1.0-{lang}/ (or corpus.parquet)"
    )


# --- topics and qrels ------------------------------------------------------------------------
def _topics_from_raw(folder: Path, lang: str, split: str) -> tuple[Queries, Qrels] | None:
    topics = sorted(folder.rglob(f"topics.miracl-v1.0-{lang}-{split}.tsv"))
    qrels = sorted(folder.rglob(f"qrels.miracl-v1.0-{lang}-{split}.tsv"))
    if not topics or not qrels:
        return None
    queries = Queries(dict(hub.read_tsv_pairs(topics[0])))
    return queries, read_trec_qrels(qrels[0], name=f"miracl/{lang}")


def _topics_from_records(folder: Path, lang: str, split: str) -> tuple[Queries, Qrels] | None:
    paths = hub.find_record_files(folder, split, split=split)
    if not paths:
        return None
    texts: dict[str, str] = {}
    q: list[str] = []
    d: list[str] = []
    r: list[int] = []
    for rec in hub.iter_records(
        paths, columns=("query_id", "query", "positive_passages", "negative_passages")
    ):
        qid = str(rec["query_id"]).strip()
        texts[qid] = rec["query"]
        for grade, key in ((1, "positive_passages"), (0, "negative_passages")):
            for passage in rec.get(key) or ():
                q.append(qid)
                d.append(str(passage["docid"]).strip())
                r.append(grade)
    return Queries(texts), Qrels(q, d, r, name=f"miracl/{lang}", source=str(paths[0]))


def _find_topics(folders: list[Path], lang: str, split: str) -> tuple[Queries, Qrels, str] | None:
    for folder in folders:
        for reader in (_topics_from_records, _topics_from_raw):
            found = reader(folder, lang, split)
            if found is not None:
                return (*found, str(folder))
    return None


# --- corpus ------------------------------------------------------------------------------------
def _corpus_files(folder: Path) -> list[Path]:
    found = hub.find_record_files(folder, "corpus")
    if found:
        return found
    shards = [
        p
        for p in folder.rglob("docs-*")
        if p.is_file() and p.name.endswith((".jsonl", ".jsonl.gz"))
    ]
    return sorted(shards, key=hub.natural_key)


def _existing_corpus(lang: str) -> Path | None:
    folder = _home.find_dataset_dir(f"miracl/{lang}", marker="corpus.jsonl")
    return folder / "corpus.jsonl" if folder else None


def fetch(
    dataset_id: str,
    *,
    show_progress: bool = False,
    split: str = "dev",
    revision: str | None = None,
    corpus_revision: str | None = None,
) -> Path:
    """Make sure ``miracl/<lang>`` (the split's topics and qrels, and the corpus) is on disk.

    Returns:
        The folder holding ``queries.jsonl`` and ``qrels/<split>.tsv``.

    Raises:
        DownloadError: not on disk and offline (the folder to fill is named), or the hub failed.
        DatasetError: a hidden or missing split.
    """
    lang = _parse(dataset_id)
    _check_split(lang, split)
    ready = _home.find_dataset_dir(f"miracl/{lang}", marker=f"qrels/{split}.tsv")
    target = _target(lang)
    folders = _candidate_folders(lang)
    if not has_split(ready, split):
        found = _find_topics(folders, lang, split)
        if found is None:
            hub.ensure_reachable(dataset_id, target, hint=_fill_hint(lang, split))
            snap = hub.download_files(
                TOPICS_REPO,
                [f"miracl-v1.0-{lang}/*/*-{lang}-{split}.tsv"],
                revision=revision,
                what=dataset_id,
                fill_folder=target,
            )
            found = _find_topics([snap], lang, split)
            if found is None:
                raise DatasetError(f"{TOPICS_REPO} has no {split} topics/qrels for {lang}")
        queries, qrels, origin = found
        write_split(target, split, queries, qrels)
        log.info("%s: %s topics and qrels from %s written to %s", dataset_id, split, origin, target)
        ready = target
    if _existing_corpus(lang) is None:
        files = next((f for f in map(_corpus_files, folders) if f), [])
        if not files:
            hub.ensure_reachable(dataset_id, target, hint=_fill_hint(lang, split))
            snap = hub.download_files(
                CORPUS_REPO,
                [f"miracl-corpus-v1.0-{lang}/docs-*"],
                revision=corpus_revision,
                what=dataset_id,
                fill_folder=target,
            )
            files = _corpus_files(snap)
        log.info("%s: streaming %d corpus file(s) into %s", dataset_id, len(files), target)
        write_jsonl_corpus(
            documents_from_records(files),
            target / "corpus.jsonl",
            name=dataset_id,
            show_progress=show_progress,
            total=hub.count_records(files),
            desc=f"{dataset_id} corpus",
        )
    assert ready is not None
    return ready


def load(
    dataset_id: str,
    *,
    split: str = "dev",
    revision: str | None = None,
    corpus_revision: str | None = None,
    download: bool = True,
    show_progress: bool = False,
) -> Dataset:
    """Load ``miracl/<lang>`` (see the module docstring for sources and judgments).

    Args:
        dataset_id: ``miracl/<lang>``.
        split: ``dev`` (default) or ``train``; ``testA``/``testB`` are hidden (an error says so).
        revision: commit of ``miracl/miracl`` (default: the pinned one, see :mod:`.hub`).
        corpus_revision: commit of ``miracl/miracl-corpus``.
        download: fetch what is missing from the hub (unless offline).
        show_progress: progress bars for the corpus stream.

    Returns:
        A :class:`Dataset` with ``metadata["language"]`` = the language code (it selects the BM25
        analyzer), an :class:`~.jsonl_index.IndexedJsonlCorpus`, the split's judged queries and
        graded qrels (1 relevant, 0 judged non-relevant).

    Raises:
        UnknownNameError: not a MIRACL language (the nearest is suggested).
        DatasetError: hidden or missing split; data absent and *download* false.
        DownloadError: absent, offline or the hub failed (the folder to fill is named).
    """
    lang = _parse(dataset_id)
    split = _check_split(lang, split)
    ready = _home.find_dataset_dir(f"miracl/{lang}", marker=f"qrels/{split}.tsv")
    corpus = _existing_corpus(lang)
    if not (has_split(ready, split) and corpus is not None):
        if not download:
            raise DatasetError(
                f"{dataset_id} ({split}) is not on disk in BEIR layout (searched "
                f"{', '.join(str(p / 'miracl' / lang) for p in _home.search_path())}); "
                "load with download=True or fill " + str(_target(lang))
            )
        ready = fetch(
            dataset_id,
            show_progress=show_progress,
            split=split,
            revision=revision,
            corpus_revision=corpus_revision,
        )
        corpus = _existing_corpus(lang)
    assert ready is not None and corpus is not None
    return assemble(
        dataset_id,
        corpus_path=corpus,
        queries_path=ready / "queries.jsonl",
        qrels_path=ready / "qrels" / f"{split}.tsv",
        split=split,
        default_measures=list(DEFAULT_MEASURES),
        metadata={
            "language": lang,
            "family": "miracl",
            "source": str(ready),
            "hub": {
                "topics": f"{TOPICS_REPO}@{hub.revision_for(TOPICS_REPO, revision)}",
                "corpus": f"{CORPUS_REPO}@{hub.revision_for(CORPUS_REPO, corpus_revision)}",
            },
            "relevance": "grade 1 = positive passage (relevant), 0 = judged negative",
            "test_qrels": "hidden (testA/testB); evaluate on dev",
            "citation": CITATION,
        },
    )


def info(dataset_id: str) -> dict:
    """Facts about ``miracl/<lang>`` without loading it."""
    lang = _parse(dataset_id)
    folder = _home.find_dataset_dir(f"miracl/{lang}", marker="queries.jsonl")
    return {
        "id": dataset_id,
        "family": "miracl",
        "language": lang,
        "splits": ["dev"] + ([] if lang in SURPRISE else ["train"]),
        "default_split": "dev",
        "test_qrels": "hidden (testA/testB)",
        "default_measures": list(DEFAULT_MEASURES),
        "hub": {
            TOPICS_REPO: hub.revision_for(TOPICS_REPO),
            CORPUS_REPO: hub.revision_for(CORPUS_REPO),
        },
        "folder": str(folder) if folder else None,
        "install_folder": str(_target(lang)),
        "citation": CITATION,
    }


# --- the family -----------------------------------------------------------------------------------
class MiraclFamily(ModuleFamily):
    """``miracl/<lang>``: 18 languages, Wikipedia passages from the Hugging Face hub."""

    name = "miracl"
    pattern = "miracl/*"
    description = (
        "MIRACL (Zhang et al., 2023): 18 languages, dev split (test qrels hidden), Wikipedia "
        "passages from the Hugging Face hub"
    )
    default_measures = DEFAULT_MEASURES
    options = params_table(
        Param("split", str, "dev", "dev or train (testA/testB are hidden)"),
        REVISION,
        Param("corpus_revision", str, None, "commit of miracl/miracl-corpus"),
        DOWNLOAD,
        SHOW_PROGRESS,
    )


FAMILY = MiraclFamily()
