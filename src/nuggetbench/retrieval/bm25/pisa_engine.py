"""pyterrier-pisa's compiled PISA, as ``bm25:backend=pisa`` uses it
(:mod:`nuggetbench.retrieval.bm25.pisa` describes the backend): loading its extension module
from its file, its names (query algorithms, compressions, stemmers, stop lists), and the two
builds, run in a child process: the inverted index of a corpus, then its block-max scores and
compressed index for BM25(k1, b).
"""

from __future__ import annotations

import contextlib
import functools
import importlib.metadata
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from nuggetbench._runtime import usable_cpus
from nuggetbench.data import Corpus
from nuggetbench.errors import InputError, ModelError
from nuggetbench.retrieval.models.loading import progress_bar
from nuggetbench.retrieval.options import PISA_ALGORITHMS as ALGORITHMS
from nuggetbench.retrieval.options import PISA_ENCODINGS as ENCODINGS
from nuggetbench.retrieval.options import PISA_STOPWORDS
from nuggetbench.text.bm25s_private import private_api

__all__ = [
    "ALGORITHMS",
    "ENCODINGS",
    "EXTRA",
    "STEMMERS",
    "PisaSettings",
    "index_into",
    "index_key",
    "pisa_available",
    "pisa_version",
    "pisathon",
    "score_into",
    "stop_list",
]

EXTRA = "pip install 'nuggetbench[pisa]'"
"""What to install for ``backend=pisa``."""

STEMMERS = {"english": "porter2", "porter2": "porter2", "krovetz": "krovetz", "none": ""}
"""Our ``stemmer`` values -> PISA's (``""``: no stemming); ``english`` is Porter2."""

CACHE_FORMAT = 1
BATCH_DOCS = 100_000
"""Documents per forward-index batch (pyterrier-pisa's ``batch_size``)."""
WRITE_DOCS = 2000
"""Documents per write to the indexing child (one progress-bar step)."""
_SO_GLOB = "_pisathon*"

CHILD = r"""
import importlib.util, sys
so, mode, folder = sys.argv[1], sys.argv[2], sys.argv[3]
spec = importlib.util.spec_from_file_location("pyterrier_pisa._pisathon", so)
P = importlib.util.module_from_spec(spec)
spec.loader.exec_module(P)
if mode == "index":
    P.index("/dev/stdin", folder, sys.argv[4], int(sys.argv[5]), int(sys.argv[6]))
else:
    P.prepare_index(P.RetrievalContext(), folder, sys.argv[4], "bm25", sys.argv[5],
                    bm25_k1=float(sys.argv[6]), bm25_b=float(sys.argv[7]))
"""
"""The child process of a build: ``index`` reads documents from its standard input into an
inverted index; ``prepare`` writes the block-max scores and the compressed index."""


@dataclass(frozen=True)
class PisaSettings:
    """What a PISA index is built and searched with (validated by the ``bm25`` retriever).

    Attributes:
        k1, b: BM25's parameters (PISA's formula, module docstring).
        stemmer: a key of :data:`STEMMERS`.
        stopwords: a bm25s stop list name, ``terrier``, ``lucene`` or ``none`` (query side).
        algorithm: one of :data:`ALGORITHMS`.
        encoding: one of :data:`ENCODINGS`.
        threads: indexing and search threads (0: every CPU).
    """

    k1: float
    b: float
    stemmer: str = "english"
    stopwords: str = "en"
    algorithm: str = "block_max_wand"
    encoding: str = "block_simdbp"
    threads: int = 0

    @property
    def n_threads(self) -> int:
        """``threads``, or every CPU this process may use when 0."""
        return self.threads or usable_cpus()


def pisa_available() -> bool:
    """Whether pyterrier-pisa is installed (imports nothing)."""
    return importlib.util.find_spec("pyterrier_pisa") is not None


def pisa_version() -> str | None:
    """The installed pyterrier-pisa's version (``None`` when absent)."""
    try:
        return importlib.metadata.version("pyterrier-pisa")
    except importlib.metadata.PackageNotFoundError:
        return None


def _package_folder() -> Path:
    spec = importlib.util.find_spec("pyterrier_pisa")
    if spec is None or not spec.submodule_search_locations:
        raise ModelError(f"bm25: backend=pisa needs pyterrier-pisa: {EXTRA}")
    return Path(next(iter(spec.submodule_search_locations)))


@functools.lru_cache(maxsize=1)
def _extension_file() -> Path:
    found = sorted(_package_folder().glob(_SO_GLOB + ".so")) or sorted(
        _package_folder().glob(_SO_GLOB + ".pyd")
    )
    if not found:
        raise ModelError(f"no _pisathon extension in {_package_folder()}; reinstall: {EXTRA}")
    return found[0]


def _load_file(name: str, path: Path) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ModelError(f"cannot load {path}; reinstall pyterrier-pisa: {EXTRA}")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except (ImportError, OSError) as exc:
        raise ModelError(f"cannot load PISA from {path} ({exc}); {EXTRA}") from exc
    return module


@functools.lru_cache(maxsize=1)
def pisathon() -> Any:
    """pyterrier-pisa's compiled PISA module, loaded from its file (module docstring).

    Raises:
        ModelError: pyterrier-pisa is missing or its extension cannot be loaded.
    """
    if not pisa_available():
        raise ModelError(f"bm25: backend=pisa needs pyterrier-pisa: {EXTRA}")
    return _load_file("pyterrier_pisa._pisathon", _extension_file())


@functools.cache
def stop_list(name: str) -> tuple[str, ...]:
    """The words of a stop list: pyterrier-pisa's ``terrier`` / ``lucene``, bm25s' lists
    (``en``, ``de``...), or none."""
    if name == "none":
        return ()
    if name in PISA_STOPWORDS:
        module = _load_file("pyterrier_pisa.stopwords", _package_folder() / "stopwords.py")
        return tuple(module._STOPWORDS[name])
    return tuple(private_api().infer_stopwords(name))


def index_key(stemmer: str) -> dict[str, Any]:
    return {
        "pisa_format": CACHE_FORMAT,
        "pyterrier_pisa": pisa_version(),
        "stemmer": STEMMERS[stemmer] or "none",
        "tokenizer": "pisa EnglishTokenizer, lower-cased",
        "text": "title + ' ' + text",
    }


def _run_child(
    args: list[str], log_path: Path, *, lines: Any = None, bar: Any = None, meanwhile: Any = None
) -> int:
    """Run :data:`CHILD` with *args* (its output to *log_path*); with *lines* (an iterator of
    ``(count, str)`` batches), feed them to its standard input, then call *meanwhile* (if any)
    while the child finishes. Returns the exit status."""
    command = [sys.executable, "-c", CHILD, str(_extension_file()), *args]
    with open(log_path, "wb") as out:
        proc = subprocess.Popen(
            command,
            stdin=subprocess.PIPE if lines is not None else subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        try:
            if lines is not None:
                try:
                    for count, text in lines:
                        proc.stdin.write(text.encode("utf-8", "replace"))
                        if bar is not None:
                            bar.update(count)
                except BrokenPipeError:
                    pass  # the child died: its status and log say why
                finally:
                    with contextlib.suppress(BrokenPipeError):
                        proc.stdin.close()
            if meanwhile is not None:
                meanwhile()
            return proc.wait()
        except BaseException:
            proc.kill()
            proc.wait()
            raise


def doc_id_ranks(doc_ids: list[str]) -> np.ndarray:
    """The rank of each of *doc_ids* in ascending string order (int32 (n,)): the tie-break of
    the cut at k compares these integers instead of the strings."""
    order = np.argsort(np.array(doc_ids, dtype=object), kind="stable")
    ranks = np.empty(len(doc_ids), dtype=np.int32)
    ranks[order] = np.arange(len(doc_ids), dtype=np.int32)
    return ranks


def _document_lines(corpus: Corpus, doc_ids: list[str]):
    """``(count, text)`` batches of PISA ``plaintext`` lines (``<ordinal> <full text>``),
    appending each document's id to *doc_ids*."""
    batch: list[str] = []
    for doc in corpus.iter_documents():
        text = doc.full_text
        if "\n" in text or "\r" in text:
            text = text.replace("\n", " ").replace("\r", " ")
        batch.append(f"{len(doc_ids)} {text}\n")
        doc_ids.append(doc.doc_id)
        if len(batch) >= WRITE_DOCS:
            yield len(batch), "".join(batch)
            batch = []
    if batch:
        yield len(batch), "".join(batch)


def _failure(what: str, log_path: Path, status: int) -> ModelError:
    try:
        tail = log_path.read_text(encoding="utf-8", errors="replace")[-1500:]
    except OSError:
        tail = ""
    return ModelError(f"PISA failed while {what} (exit status {status}); its output ends:\n{tail}")


def index_into(folder: Path, corpus: Corpus, stemmer: str, threads: int, show: bool) -> dict:
    """Build PISA's inverted index of *corpus* in the new *folder*; returns the counts."""
    folder.mkdir(parents=True, exist_ok=True)
    doc_ids: list[str] = []
    # the bar's total only when shown: a JsonlCorpus reads its whole file for its length
    bar = progress_bar(show, len(corpus) if show else 0, "pisa index")
    log_path = folder / "pisa-index.log"
    args = ["index", str(folder), STEMMERS[stemmer], str(BATCH_DOCS), str(threads)]
    try:
        lines = _document_lines(corpus, doc_ids)
        ranks = []  # computed while PISA inverts the index

        def rank_ids() -> None:
            ranks.append(doc_id_ranks(doc_ids))

        status = _run_child(args, log_path, lines=lines, bar=bar, meanwhile=rank_ids)
    finally:
        if bar is not None:
            bar.close()
    if not doc_ids:
        raise InputError(f"cannot index an empty corpus ({corpus.name or corpus!r})")
    terms = folder / "fwd.terms"
    if status != 0 and terms.exists() and terms.stat().st_size == 0:
        raise InputError(
            f"cannot index the corpus{' ' + repr(corpus.name) if corpus.name else ''}: none of "
            f"its {len(doc_ids)} documents has an indexable term (PISA's tokenizer keeps ASCII "
            "letters and digits); check the corpus's text fields"
        )
    if status != 0:
        raise _failure("indexing", log_path, status)
    with open(folder / "doc_ids.json", "w", encoding="utf-8") as fh:
        json.dump(doc_ids, fh, ensure_ascii=False)
    np.save(folder / "doc_ranks.npy", ranks[0])
    pisa = pisathon()
    n_terms, n_docs = int(pisa.num_terms(str(folder))), int(pisa.num_docs(str(folder)))
    for name in ("fwd", "fwd.documents", "fwd.terms", "fwd.urls", "pisa-index.log"):
        (folder / name).unlink(missing_ok=True)  # the forward index: not searched
    if n_docs != len(doc_ids):
        raise ModelError(f"PISA indexed {n_docs} of {len(doc_ids)} documents; {EXTRA}")
    return {"n_docs": n_docs, "n_terms": n_terms, "pyterrier_pisa": pisa_version()}


SEARCHED = ("fwd.termlex", "fwd.doclex", "doc_ids.json", "doc_ranks.npy")
BUILT_FROM = ("inv.docs", "inv.freqs", "inv.sizes")


def _link(source: Path, target: Path) -> None:
    try:
        os.link(source, target)
    except OSError:  # another file system, or no hard links: a copy
        shutil.copyfile(source, target)


def score_into(folder: Path, base: Path, settings: PisaSettings) -> dict[str, Any]:
    """The block-max scores and compressed index of *base* for BM25(k1, b), in *folder*."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in (*SEARCHED, *BUILT_FROM):
        _link(base / name, folder / name)
    log_path = folder / "pisa-prepare.log"
    args = ["prepare", str(folder), settings.encoding, STEMMERS[settings.stemmer]]
    status = _run_child([*args, repr(settings.k1), repr(settings.b)], log_path)
    if status != 0:
        raise _failure("scoring and compressing the index", log_path, status)
    for name in (*BUILT_FROM, "pisa-prepare.log"):
        (folder / name).unlink(missing_ok=True)
    files = sorted(p.name for p in folder.iterdir() if p.name.startswith("bm25."))
    if len(files) != 2:
        raise ModelError(f"PISA wrote {files} in {folder}, not a block-max file and an index")
    return {"files": files}
