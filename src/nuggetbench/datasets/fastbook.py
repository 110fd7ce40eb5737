"""fastbook-benchmark (Vishal Bakshi, 2024): 191 questions about 7 chapters of the fastai book.

Source: github.com/vishalbakshi/fastbook-benchmark. Each question's gold answer is split into
*answer components*; each component lists ``context`` passages of its chapter that support it.
Here every component is a span-judged :class:`~nuggetbench.data.Nugget` (its contexts are its
evidence spans; the ``explicit_context`` / ``extraneous_answer`` flags, strings ``"true"`` /
``"false"`` in the file, become booleans in ``metadata``, with the chapter). Query ids are
``<chapter>_<question_number>`` (``4_27``); nugget ids ``<query id>.<component number>``
(``4_27.1``).

The corpus is the chapter notebooks (``notebooks/NN_name.ipynb``, the text before
``## Questionnaire``) cut by a chunker (default ``paragraphs:group=3,headers=true``); nugget qrels
come from the benchmark's rule (a passage supports a component when it contains one of its
contexts after ``ftfy.fix_text``), and the chunking ceiling is kept in ``metadata``. Retrieval is
restricted to the question's chapter by default, as in the author's experiments
(``restrict_to_chapter``, a per-query ``doc_filter``).

Layout: ``fastbook/fastbook-benchmark.json`` and ``fastbook/notebooks/*.ipynb`` in a
``NUGGETBENCH_DATA`` folder or the home; downloaded on first use from the repository's raw files.
The data may not be redistributed: nothing of it ships with nuggetbench.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from nuggetbench import home as _home
from nuggetbench.corpus.cache import chunk_notebooks
from nuggetbench.corpus.notebook import read_notebook
from nuggetbench.corpus.spans import judge_spans
from nuggetbench.corpus.spec import parse_chunker
from nuggetbench.data import Corpus, Nugget, Qrels, Queries
from nuggetbench.datasets.dataset import Dataset
from nuggetbench.datasets.download import download_file
from nuggetbench.datasets.family import DOWNLOAD, SHOW_PROGRESS, JudgedCorpus, ModuleFamily
from nuggetbench.errors import DatasetError, DownloadError, FormatError, InputError
from nuggetbench.spec import Param, params_table

log = logging.getLogger(__name__)

DATASET_ID = "fastbook"
RAW_BASE = "https://raw.githubusercontent.com/vishalbakshi/fastbook-benchmark/main"
BENCHMARK_FILE = "fastbook-benchmark.json"
NOTEBOOKS = {
    1: "01_intro.ipynb",
    2: "02_production.ipynb",
    4: "04_mnist_basics.ipynb",
    8: "08_collab.ipynb",
    9: "09_tabular.ipynb",
    10: "10_nlp.ipynb",
    13: "13_convolutions.ipynb",
}
DEFAULT_CHUNKER = "paragraphs:group=3,headers=true"
DEFAULT_MEASURES = ("AC_MRR@10", "AC_Recall@10", "Coverage@5")
DEFAULT_PROFILE = "fastbook"
CITATION = (
    "Vishal Bakshi, fastbook-benchmark: a retrieval benchmark of the fastai book's end-of-"
    "chapter questions, github.com/vishalbakshi/fastbook-benchmark, 2024"
)

_NOTEBOOK_NAME = re.compile(r"^(\d+)_.+\.ipynb$")


# --- files ----------------------------------------------------------------------------------
def find() -> Path | None:
    """The ``fastbook`` folder on the search path (``NUGGETBENCH_DATA``, then home), or ``None``."""
    return _home.find_dataset_dir("fastbook", marker=BENCHMARK_FILE)


def fetch(dataset_id: str = DATASET_ID, *, show_progress: bool = False) -> Path:
    """Make sure the benchmark file and notebooks are on disk; return the ``fastbook`` folder.

    The notebooks are downloaded first and the benchmark file last, so a folder holding the
    benchmark file is complete.

    Raises:
        DownloadError: absent and downloads are off (``NUGGETBENCH_OFFLINE=1``) or failed; the
            message names the folder to fill and the files it needs.
    """

    found = find()
    if found is not None:
        return found
    folder = _home.home() / "fastbook"
    files = [f"notebooks/{n}" for n in NOTEBOOKS.values()] + [BENCHMARK_FILE]
    if _home.offline():
        raise DownloadError(
            f"fastbook-benchmark is not on disk and downloads are off (NUGGETBENCH_OFFLINE=1). Fill "
            f"the folder {folder} with {BENCHMARK_FILE} ({RAW_BASE}/{BENCHMARK_FILE}) and "
            f"notebooks/NN_name.ipynb ({RAW_BASE}/data/<name>: {', '.join(NOTEBOOKS.values())}), or "
            f"point NUGGETBENCH_DATA at a folder holding fastbook/; searched: "
            f"{', '.join(str(p / 'fastbook') for p in _home.search_path())}"
        )
    for rel in files:
        dest = folder / rel
        if dest.exists() and rel != BENCHMARK_FILE:
            continue
        url = (
            f"{RAW_BASE}/{BENCHMARK_FILE}"
            if rel == BENCHMARK_FILE
            else f"{RAW_BASE}/data/{dest.name}"
        )
        try:
            download_file(url, dest, show_progress=show_progress, what=f"fastbook {dest.name}")
        except DownloadError as exc:
            raise type(exc)(
                f"{exc}. Alternatively fill the folder {folder} by hand "
                f"({BENCHMARK_FILE} and notebooks/)"
            ) from exc
    return folder


def notebook_paths(folder: str | Path) -> dict[int, Path]:
    """``{chapter: notebooks/NN_name.ipynb}`` found in a ``fastbook`` folder."""
    out: dict[int, Path] = {}
    for p in sorted((Path(folder) / "notebooks").glob("*.ipynb")):
        m = _NOTEBOOK_NAME.match(p.name)
        if m:
            out[int(m.group(1))] = p
    return out


# --- the benchmark file ---------------------------------------------------------------------
def _flag(value: Any, path: Path, where: str, field: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise FormatError(
        path, None, f'{where}: field {field!r} must be "true" or "false", got {value!r}'
    )


def read_benchmark(path: str | Path) -> tuple[Queries, list[Nugget]]:
    """Read ``fastbook-benchmark.json`` into queries and span-judged nuggets.

    Returns:
        ``(queries, nuggets)``: queries ``<chapter>_<number> -> question_text`` (metadata:
        ``chapter``, ``question_number``, ``gold_standard_answer``); one nugget per answer
        component (``text``: the component; ``spans``: its contexts; ``metadata``: ``chapter``,
        ``explicit_context`` and ``extraneous_answer`` as booleans, ``scoring_type``).

    Raises:
        FormatError: the file is not JSON, or a question lacks a field or has one of the wrong
            type; the message names the question (position, chapter and number) and the field.
    """
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise FormatError(path, exc.lineno, f"not valid JSON ({exc.msg})") from None
    questions = data.get("questions") if isinstance(data, dict) else None
    if not isinstance(questions, list):
        raise FormatError(path, None, 'expected an object {"questions": [...]} at the top level')
    texts: dict[str, str] = {}
    meta: dict[str, dict] = {}
    nuggets: list[Nugget] = []
    for pos, q in enumerate(questions, start=1):
        qid, numbers, components, where = _question(q, pos, path, texts)
        texts[qid] = q["question_text"]
        meta[qid] = {
            "chapter": numbers["chapter"],
            "question_number": numbers["question_number"],
            "gold_standard_answer": q.get("gold_standard_answer", ""),
        }
        for i, comp in enumerate(components, start=1):
            nuggets.append(_component(comp, i, qid, numbers["chapter"], path, where))
    return Queries(texts, metadata=meta, name=DATASET_ID), nuggets


def _question(
    q: Any, pos: int, path: Path, seen: Mapping[str, str]
) -> tuple[str, dict[str, int], list[Any], str]:
    """``(query id, {chapter, question_number}, answer components, where)`` of the question at
    position *pos*, checked (see :func:`read_benchmark`)."""
    where = f"question #{pos}"
    if not isinstance(q, dict):
        raise FormatError(path, None, f"{where}: expected an object, got {type(q).__name__}")
    numbers = {}
    for key in ("chapter", "question_number"):
        value = q.get(key)
        if isinstance(value, str) and value.strip().isdigit():
            value = int(value)
        if not isinstance(value, int) or isinstance(value, bool):
            raise FormatError(
                path, None, f"{where}: field {key!r} must be an integer, got {value!r}"
            )
        numbers[key] = value
    qid = f"{numbers['chapter']}_{numbers['question_number']}"
    where = f"question #{pos} (id {qid})"
    if qid in seen:
        raise FormatError(
            path,
            None,
            f"{where}: chapter {numbers['chapter']} question "
            f"{numbers['question_number']} occurs twice",
        )
    text = q.get("question_text")
    if not isinstance(text, str) or not text.strip():
        raise FormatError(path, None, f"{where}: field 'question_text' must be a non-empty string")
    components = q.get("answer_context")
    if not isinstance(components, list):
        raise FormatError(
            path, None, f"{where}: field 'answer_context' must be a list of components"
        )
    return qid, numbers, components, where


def _component(comp: Any, i: int, qid: str, chapter: int, path: Path, where: str) -> Nugget:
    """The nugget ``<qid>.<i>`` of answer component *comp* (checked; see :func:`read_benchmark`)."""
    field = f"answer_context[{i - 1}]"
    if not isinstance(comp, dict):
        raise FormatError(path, None, f"{where}: field {field!r} must be an object")
    spans = comp.get("context", [])
    if not isinstance(spans, list) or not all(isinstance(s, str) for s in spans):
        raise FormatError(path, None, f"{where}: field '{field}.context' must be a list of strings")
    answer = comp.get("answer_component", "")
    if isinstance(answer, list) and all(isinstance(a, str) for a in answer):
        answer = "\n".join(answer)  # a few components are lists of sentences
    if not isinstance(answer, str):
        raise FormatError(
            path,
            None,
            f"{where}: field '{field}.answer_component' must be a "
            f"string or a list of strings, got {type(answer).__name__}",
        )
    flags = {
        name: _flag(comp.get(name, default), path, where, f"{field}.{name}")
        for name, default in (("explicit_context", "true"), ("extraneous_answer", "false"))
    }
    metadata = {"chapter": chapter, **flags, "scoring_type": comp.get("scoring_type", "simple")}
    return Nugget(f"{qid}.{i}", qid, answer, tuple(spans), metadata)


# --- judging --------------------------------------------------------------------------------
def _chapter_of_doc(doc_id: str, metadata: Mapping) -> int | None:
    meta = (
        metadata.get("metadata", metadata)
        if isinstance(metadata.get("metadata"), Mapping)
        else metadata
    )
    if isinstance(meta.get("chapter"), int):
        return meta["chapter"]
    name = str(meta.get("notebook") or doc_id.split("/", 1)[0])
    m = re.match(r"^(\d+)_", name)
    return int(m.group(1)) if m else None


def chapter_filter(corpus: Corpus, queries: Queries) -> dict[str, frozenset[str]]:
    """``{query_id: doc ids of the query's chapter}`` (chapters read from passage metadata or ids).

    Raises:
        InputError: no passage can be assigned to a chapter (a corpus not made from the notebooks).
    """
    by_chapter: dict[int, set[str]] = {}
    for doc in corpus.iter_documents():
        ch = _chapter_of_doc(doc.doc_id, doc.metadata)
        if ch is not None:
            by_chapter.setdefault(ch, set()).add(doc.doc_id)
    if not by_chapter:
        raise InputError(
            "restrict_to_chapter: no passage names its chapter (metadata 'notebook' or "
            "'chapter', or an id starting with 'NN_'); chunk the notebooks with "
            "`nuggetbench chunk`, or turn the restriction off"
        )
    frozen = {ch: frozenset(ids) for ch, ids in by_chapter.items()}
    return {qid: frozen.get(queries.meta(qid)["chapter"], frozenset()) for qid in queries}


def nugget_qrels(
    corpus: Corpus, *, folder: str | Path | None = None, restrict_to_chapter: bool = True
) -> tuple[Qrels, Any]:
    """Judge the benchmark's components against *corpus* (e.g. a BEIR corpus file of passages).

    For ``nuggetbench evaluate fastbook RUN --corpus CORPUS.jsonl``: the run's doc ids must be
    the corpus's.

    Args:
        corpus: the passages (``JsonlCorpus``/``InMemoryCorpus``).
        folder: the ``fastbook`` folder (default: found on the search path, or downloaded).
        restrict_to_chapter: judge each question only against passages of its chapter (needs
            chapters in passage metadata or ids; ignored with a warning when there are none).

    Returns:
        ``(qrels, ceiling)``: document qrels (binary; relevance 1 = supports a component) whose
        ``nuggets`` attribute holds the :class:`~nuggetbench.data.NuggetQrels`, and the
        :class:`~nuggetbench.corpus.spans.ChunkingCeiling`.
    """
    folder = Path(folder) if folder is not None else fetch()
    queries, nuggets = read_benchmark(folder / BENCHMARK_FILE)
    doc_filter = None
    if restrict_to_chapter:
        try:
            doc_filter = chapter_filter(corpus, queries)
        except InputError as exc:
            log.warning(
                "%s; judging every question against every passage (a passage of another chapter "
                "that holds an evidence span counts as relevant too)",
                exc,
            )
    sources = [read_notebook(p).text for p in notebook_paths(folder).values()] or None
    judged = judge_spans(
        nuggets, corpus, source_texts=sources, doc_filter=doc_filter, name=DATASET_ID
    )
    return to_document_qrels(judged.qrels), judged.ceiling


def to_document_qrels(nuggets_qrels) -> Qrels:
    """Binary document qrels from nugget qrels, the nuggets attached (``qrels.nuggets``)."""
    return nuggets_qrels.document_qrels(mode="binary", name=DATASET_ID)


# --- the dataset ----------------------------------------------------------------------------
def load(
    dataset_id: str = DATASET_ID,
    *,
    chunker: str = DEFAULT_CHUNKER,
    restrict_to_chapter: bool = True,
    download: bool = True,
    show_progress: bool = False,
) -> Dataset:
    """Load ``fastbook``: chunked chapter notebooks, the 191 questions, span-judged nugget qrels.

    Args:
        dataset_id: ``"fastbook"``.
        chunker: a chunker spec (``paragraphs:group=3,headers=true``, ``paragraphs``,
            ``tokens:size=256,overlap=32``, ``cells``...); see :mod:`nuggetbench.corpus`.
        restrict_to_chapter: each question retrieves only among its chapter's passages
            (``Dataset.doc_filter``), as in the author's experiments.
        download: download the files when absent (unless ``NUGGETBENCH_OFFLINE=1``).
        show_progress: progress bars for the download.

    Returns:
        a :class:`Dataset` with ``default_measures`` ``AC_MRR@10 AC_Recall@10 Coverage@5``,
        profile ``fastbook``, and ``metadata["chunking_ceiling"]`` (counts and best values).

    Raises:
        SpecError: the chunker spec cannot be parsed.
        FormatError: the benchmark file is malformed (question and field named) or a notebook
            cannot be parsed (file named).
        DatasetError: a chapter's notebook is missing; DownloadError: see :func:`fetch`.
    """
    spec = parse_chunker(chunker)  # a bad spec fails before any download
    folder = find()
    if folder is None:
        if not download:
            raise DatasetError(
                "fastbook is not on disk (searched "
                f"{', '.join(str(p / 'fastbook') for p in _home.search_path())}); "
                "call fetch() or load with download=True"
            )
        folder = fetch(show_progress=show_progress)
    queries, nuggets = read_benchmark(folder / BENCHMARK_FILE)
    paths = notebook_paths(folder)
    wanted = sorted({queries.meta(q)["chapter"] for q in queries})
    absent = [ch for ch in wanted if ch not in paths]
    if absent:
        raise DatasetError(
            f"{folder / 'notebooks'}: no notebook for chapter(s) {absent}; expected "
            f"files named NN_name.ipynb (e.g. {', '.join(NOTEBOOKS.get(c, f'{c:02d}_x.ipynb') for c in absent)})"
        )
    chapter_paths = [paths[ch] for ch in wanted]
    corpus = chunk_notebooks(chapter_paths, spec, name=f"{DATASET_ID}:{spec.spec}")
    doc_filter: dict[str, Collection[str]] | None = None
    if restrict_to_chapter:
        doc_filter = chapter_filter(corpus, queries)
    sources = [read_notebook(p).text for p in chapter_paths]
    judged = judge_spans(
        nuggets, corpus, source_texts=sources, doc_filter=doc_filter, name=DATASET_ID
    )
    ceiling = judged.ceiling
    log.info("fastbook with %s: %d passages; %s", spec.spec, len(corpus), ceiling)
    return Dataset(
        id=DATASET_ID,
        corpus=corpus,
        queries=queries,
        qrels=to_document_qrels(judged.qrels),
        split=None,
        default_measures=list(DEFAULT_MEASURES),
        default_profile=DEFAULT_PROFILE,
        doc_filter=doc_filter,
        metadata={
            "source": str(folder),
            "chunker": spec.spec,
            "restrict_to_chapter": restrict_to_chapter,
            "chunking_ceiling": ceiling.as_dict(),
            "chunking_ceiling_text": str(ceiling),
            "url": f"{RAW_BASE}/{BENCHMARK_FILE}",
            "citation": CITATION,
        },
        notes=[str(ceiling)],
    )


def info(dataset_id: str = DATASET_ID) -> dict:
    """Facts about ``fastbook`` without loading it (counts when it is local)."""
    folder = find()
    counts = None
    if folder is not None and (folder / BENCHMARK_FILE).is_file():
        queries, nuggets = read_benchmark(folder / BENCHMARK_FILE)
        counts = {
            "questions": len(queries),
            "answer components": len(nuggets),
            "notebooks": len(notebook_paths(folder)),
        }
    return {
        "id": DATASET_ID,
        "family": "fastbook",
        "url": f"{RAW_BASE}/{BENCHMARK_FILE}",
        "notebooks": [f"{RAW_BASE}/data/{n}" for n in NOTEBOOKS.values()],
        "folder": str(folder) if folder else None,
        "counts": counts,
        "install_folder": str(_home.home() / "fastbook"),
        "default_measures": list(DEFAULT_MEASURES),
        "default_profile": DEFAULT_PROFILE,
        "options": {"chunker": DEFAULT_CHUNKER, "restrict_to_chapter": True},
        "citation": CITATION,
    }


__all__ = [
    "load",
    "fetch",
    "find",
    "info",
    "read_benchmark",
    "nugget_qrels",
    "chapter_filter",
    "notebook_paths",
    "DEFAULT_CHUNKER",
    "DEFAULT_MEASURES",
]


# --- the family -----------------------------------------------------------------------------------
class FastbookFamily(ModuleFamily):
    """``fastbook``: answer components judged by evidence spans, so any chunking of the chapter
    notebooks can be judged (:meth:`judge_corpus`)."""

    name = "fastbook"
    pattern = "fastbook"
    description = (
        "fastbook-benchmark (Bakshi, 2024): 191 fastai-book questions, answer components judged "
        "by evidence spans over chunked chapter notebooks"
    )
    default_measures = DEFAULT_MEASURES
    default_profile = DEFAULT_PROFILE
    options = params_table(
        Param("chunker", str, DEFAULT_CHUNKER, "how the chapter notebooks are cut into passages"),
        Param(
            "restrict_to_chapter", bool, True, "each question searches its own chapter's passages"
        ),
        DOWNLOAD,
        SHOW_PROGRESS,
    )

    def find(self, dataset_id: str) -> Path | None:
        return find()

    def judge_corpus(self, dataset_id: str, corpus: Corpus) -> JudgedCorpus:
        """Judge *corpus*'s passages against the evidence spans (each question within its
        chapter); the chunking ceiling is the note."""
        qrels, ceiling = nugget_qrels(corpus, restrict_to_chapter=True)
        return JudgedCorpus(qrels, (str(ceiling),))


FAMILY = FastbookFamily()
