"""BIRCO (Wang et al., 2024): ``birco/<name>`` for ``doris-mae``, ``arguana``, ``clinical-trial``,
``wtb`` and ``relic``.

BIRCO ("Benchmark of Information Retrieval tasks with Complex Objectives", arXiv:2402.14151) ships
each split as a pickle ``{'query': {qid: text}, 'corpus': {cid: text}, 'qrel': {qid: {cid: grade}}}``
where a query's qrel *is* its candidate pool: every document to rank is judged, grade 0 included.
The loader therefore sets ``Dataset.doc_filter = {qid: pool}`` (retrievers rank only the pool) and
``Dataset.objective`` to the task's objective (BIRCO's "+O" instruction).

Files are looked up as ``birco/<name>/<split>_set.pickle`` (``test_set.pickle``, ``dev_set.pickle``)
in the ``NUGGETBENCH_DATA`` folders, then ``NUGGETBENCH_HOME``. They are read with the restricted
unpickler of :mod:`nuggetbench.data.formats.safepickle` (builtin containers and numpy scalars only; plain
``pickle.load`` is never called). When the file is absent and downloads are allowed, the test split
is read from the Hugging Face mirror ``mteb/BIRCO-<Name>-Test`` through ``datasets`` (pinned
revisions from MTEB's task metadata; this path needs the network and is not exercised by the
offline tests).

The objective texts below are quoted from the BIRCO repository's README (MIT licence), which
reproduces Appendix B1-B5 of the paper. The data itself is CC BY-NC 4.0 and is not shipped.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from nuggetbench import home as _home
from nuggetbench.data import InMemoryCorpus, Qrels, Queries
from nuggetbench.data.formats.safepickle import load_builtin_file
from nuggetbench.datasets import hub
from nuggetbench.datasets._ids import BIRCO_NAMES as NAMES
from nuggetbench.datasets.dataset import Dataset
from nuggetbench.datasets.family import DOWNLOAD, REVISION, ModuleFamily
from nuggetbench.errors import DownloadError, FormatError, UnknownNameError, suggest
from nuggetbench.spec import Param, params_table

log = logging.getLogger(__name__)

SPLITS = ("test", "dev")
DEFAULT_MEASURES = (
    "nDCG@10",
    "RRmax@10",
    "R@5",
    "R@10",
    "R@20",
    "R@100",
    "AP",
)  # RRmax = BIRCO MRR
CITATION = (
    "Xiaoyue Wang, Jianyou Wang, Weili Cao, Kaicheng Wang, Ramamohan Paturi, Leon Bergen. "
    "BIRCO: A Benchmark of Information Retrieval Tasks with Complex Objectives. "
    "arXiv:2402.14151, 2024. https://github.com/BIRCO-benchmark/BIRCO"
)

#: Hugging Face mirrors of the test splits and the revisions MTEB pins (``None``: MTEB's pin for
#: DORIS-MAE is not a valid commit hash, so that mirror is read unpinned).
HF_MIRRORS: dict[str, tuple[str, str | None]] = {
    "doris-mae": ("mteb/BIRCO-DorisMae-Test", None),
    "arguana": ("mteb/BIRCO-ArguAna-Test", "0229bee36500c92028874b55b5a1d08e5ee37bb9"),
    "clinical-trial": ("mteb/BIRCO-ClinicalTrial-Test", "ef7b3a7f08dd2f0f7bdf0cf23391f8a1a26ad477"),
    "wtb": ("mteb/BIRCO-WTB-Test", "ea824f8065fa62e2e770a8a201c20b03abf87540"),
    "relic": ("mteb/BIRCO-Relic-Test", "3d593fde907860102a282b4a6ea7fb1e1f1f83dd"),
}

#: Task objectives, quoted from the BIRCO README (MIT licence; paper Appendix B1-B5).
OBJECTIVES: dict[str, str] = {
    "doris-mae": (
        "The query consists of users’ needs, leading to several research questions that span a "
        "paragraph. Each candidate passage is an abstract from a scientific paper. The objective of "
        "this information retrieval task is to identify the abstract that most effectively meets "
        "the user's needs in the query."
    ),
    "arguana": (
        "This information retrieval (IR) task has a debate format where a topic is given, and two "
        "directly opposing sides of arguments about this topic are formed.  A query is an argument "
        "that takes one side of this topic, focuses on a particular point about this topic, and "
        "takes a stance (i.e., opinion, position, view, perspective) about this particular point. "
        "A passage is an argument that takes the opposing side of the same topic, focuses on the "
        "same particular point about the same topic, and takes a directly opposing stance that "
        "directly (i.e., no implying or inferring) refutes and attacks the query’s stance regarding "
        "this particular point. Both query and passage might have citations in them but these "
        "citations should not be considered in the scope of this task. The overall goal of this "
        "specific information retrieval IR task is to identify the central topic of the debate, to "
        "articulate the query’s stance, and to find the passage that takes the opposing stance."
    ),
    "wtb": (
        "The query has this format: a user is trying to remember the name of a specific book. The "
        "user only remembers some details about the book, such as places, events, and some "
        "characters’ names. Some of the details are described using informal language. The passage "
        "is a book description or summary of a specific book. The passage typically describes the "
        "overall storyline of the book and contains some details about the book. The objective of "
        "this information retrieval IR task is for you to find the passage that has details or "
        "components that holistically best match, explicitly or implicitly, the details or "
        "components raised in the query. In other words, you need to find the book description "
        "(i.e., the passage) that is most likely the book the user is looking for in the query."
    ),
    "relic": (
        "The query is a piece of literary analysis written by a scholar. In the query (i.e., the "
        "excerpt from a literary analysis), one or more quotations from a classic English novel is "
        "used as evidence to support the claims made by the literary analysis. Quotations are "
        "identified by quotation marks. Now, one quotation is being intentionally masked from the "
        "literary analysis (i.e., the query), and replaced by the symbol [masked sentence(s)]. An "
        "important claim is made in the preceding context and another important point is made in "
        "the subsequent context surrounding the [masked sentence(s)]. The objective of this "
        "information retrieval task is to find the most suitable passage that can be used to "
        "directly support at least one claim made in the query (i.e., the claim that is made in the "
        "preceding or the claim subsequent context surrounding the [masked sentence(s)]) and is "
        "very natural to be plugged into the [masked sentence(s)] part of the query. Obviously the "
        "most suitable passage should NOT REPEAT or be contained in any part of the query. It does "
        "not make sense to repeat the same or very similar things twice in literary analysis."
    ),
    "clinical-trial": (
        "The motivation of the Information Retrieval task is that clinical trials are experiments "
        "conducted in the development of new medical treatments, drugs or devices, and recruiting "
        "candidates for a trial is often a time-consuming and resource-intensive effort. A query is "
        "a patient case report (either in the form of electronic patient records or ad-hoc "
        "queries). A passage is a clinical trial. This Information Retrieval task is to improve "
        "patient recruitment for clinical trials. The overall goal of this specific information "
        "retrieval IR task is to match eligible patients (the query) to clinical trials (the "
        "passage) for recruitment."
    ),
}


def dataset_ids() -> list[str]:
    """Every ``birco/<name>`` id."""
    return [f"birco/{n}" for n in NAMES]


def _name(dataset_id: str) -> str:
    name = dataset_id.split("/", 1)[1] if dataset_id.startswith("birco/") else dataset_id
    if name not in NAMES:
        raise UnknownNameError(
            f"unknown BIRCO dataset {dataset_id!r}.{suggest(dataset_id, dataset_ids())} "
            f"Known: {', '.join(dataset_ids())}"
        )
    return name


def find(dataset_id: str, split: str = "test") -> Path | None:
    """The existing ``<split>_set.pickle`` of *dataset_id* on the search path, or ``None``."""
    name = _name(dataset_id)
    folder = _home.find_dataset_dir(f"birco/{name}", marker=f"{split}_set.pickle")
    return folder / f"{split}_set.pickle" if folder else None


def load(
    dataset_id: str,
    *,
    split: str = "test",
    objective: str | None = None,
    download: bool = True,
    revision: str | None = None,
) -> Dataset:
    """Load ``birco/<name>``: corpus, queries, graded qrels, per-query pools and the objective.

    Args:
        dataset_id: ``birco/doris-mae``, ``birco/arguana``, ``birco/clinical-trial``,
            ``birco/wtb`` or ``birco/relic``.
        split: ``test`` (default) or ``dev`` (a local ``dev_set.pickle`` only).
        objective: replace the task objective (default: BIRCO's, see :data:`OBJECTIVES`).
        download: read the Hugging Face mirror when no local file exists (test split, online only).
        revision: Hugging Face revision overriding the pinned one.

    Returns:
        A :class:`Dataset` whose ``qrels`` hold every pooled document (grade 0 included),
        ``doc_filter`` maps each query to its pool, ``objective`` is the task objective and
        ``default_profile`` is ``"birco"``.

    Raises:
        UnknownNameError: not a BIRCO id or split.
        DownloadError: the file is absent and downloads are off (the folder to fill is named) or
            the mirror cannot be read.
        FormatError: the pickle is not BIRCO's ``{'query', 'corpus', 'qrel'}`` dict, or names a
            disallowed global (nothing is executed).
    """
    name = _name(dataset_id)
    if split not in SPLITS:
        raise UnknownNameError(
            f"unknown split {split!r} for {dataset_id}; choose one of {', '.join(SPLITS)}."
            + suggest(split, SPLITS)
        )
    path = find(dataset_id, split)
    if path is not None:
        raw, source = _read_pickle(path), str(path)
    else:
        why = _why_not_downloadable(split, download)
        if why is not None:
            raise DownloadError(_missing(dataset_id, split, why))
        repo, pinned = HF_MIRRORS[name]
        raw, source = (
            _read_hf(repo, revision or pinned),
            f"hf://{repo}@{revision or pinned or 'main'}",
        )
    return build_dataset(
        raw,
        dataset_id=f"birco/{name}",
        split=split,
        source=source,
        objective=objective if objective is not None else OBJECTIVES[name],
    )


def _why_not_downloadable(split: str, download: bool) -> str | None:
    """Why the hub mirror cannot be read now (offline, no network, not the test split), or ``None``."""
    if _home.offline():
        return "downloads are off (NUGGETBENCH_OFFLINE=1)"
    if split != "test":
        return "only the test split has a Hugging Face mirror"
    if not download:
        return "download=False"
    unreachable = hub.hub_unreachable()
    if unreachable is not None:
        return f"the Hugging Face hub cannot be reached ({unreachable})"
    return None


def _missing(dataset_id: str, split: str, why: str) -> str:
    """The one message of an absent split: why, the file and the folder to fill, what was searched."""
    name = _name(dataset_id)
    wanted = _home.home() / "birco" / name / f"{split}_set.pickle"
    searched = ", ".join(str(p / "birco" / name) for p in _home.search_path())
    return (
        f"{dataset_id} ({split}) is not on disk and {why}. Put BIRCO's {split}_set.pickle "
        f"(from https://github.com/BIRCO-benchmark/BIRCO, datasets/{name}/) at {wanted}, or "
        f"point NUGGETBENCH_DATA at a folder holding birco/{name}/; searched: {searched}"
    )


def fetch(dataset_id: str, *, show_progress: bool = False) -> Path:
    """The folder of the local test split, or read the hub mirror once (``datasets`` caches it)
    and return that cache folder.

    Raises:
        DownloadError: absent, and offline or the hub unreachable (fails at once; the message
            names the file and the folder to fill), or the mirror cannot be read.
    """
    local = find(dataset_id)
    if local is not None:
        return local.parent
    why = _why_not_downloadable("test", True)
    if why is not None:
        raise DownloadError(_missing(dataset_id, "test", why))
    repo, pinned = HF_MIRRORS[_name(dataset_id)]
    _read_hf(repo, pinned)
    import datasets as hf  # present: _read_hf needed it

    return Path(hf.config.HF_DATASETS_CACHE)


def _read_pickle(path: Path) -> dict:

    raw = load_builtin_file(path)
    if not isinstance(raw, dict) or not {"query", "corpus", "qrel"} <= set(raw):
        keys = sorted(map(str, raw)) if isinstance(raw, dict) else type(raw).__name__
        raise FormatError(
            path, None, f"a BIRCO split is a dict with keys 'query', 'corpus', 'qrel'; found {keys}"
        )
    return raw


def build_dataset(
    raw: dict, *, dataset_id: str, split: str, source: str, objective: str | None
) -> Dataset:
    """Build a :class:`Dataset` from BIRCO's ``{'query', 'corpus', 'qrel'}`` dict.

    Every (query, document) pair of ``qrel`` is kept (grade 0 too) and the documents of a query's
    qrel become its pool in ``doc_filter``. Queries are those of ``qrel``.

    Raises:
        FormatError: a value has the wrong type, a grade is not an integer, or a pooled document
            is missing from the corpus (the ids are named).
    """

    queries, corpus, qrel = raw["query"], raw["corpus"], raw["qrel"]
    for key, value in (("query", queries), ("corpus", corpus), ("qrel", qrel)):
        if not isinstance(value, dict):
            raise FormatError(source, None, f"'{key}' must be a dict, found {type(value).__name__}")
    q_col, d_col, g_col, pools = _judgments(queries, corpus, qrel, source)
    qrels = Qrels(q_col, d_col, g_col, name=dataset_id, metadata={"source": source}, source=source)
    query_texts = Queries({q: str(queries[q]) for q in pools}, name=dataset_id)
    docs = InMemoryCorpus.from_dict(
        {str(k): str(v) for k, v in corpus.items()}, name=dataset_id, source=source
    )
    sizes = [len(p) for p in pools.values()]
    log.info(
        "%s (%s): %d queries, %d documents, pools of %d-%d",
        dataset_id,
        split,
        len(pools),
        len(docs),
        min(sizes, default=0),
        max(sizes, default=0),
    )
    return Dataset(
        id=dataset_id,
        corpus=docs,
        queries=query_texts,
        qrels=qrels,
        split=split,
        default_measures=list(DEFAULT_MEASURES),
        default_profile="birco",
        doc_filter=pools,
        remove_self_hits=False,
        objective=objective,
        metadata={
            "source": source,
            "format": "birco-pickle",
            "license": "CC BY-NC 4.0 (data)",
            "citation": CITATION,
            "pool_sizes": (min(sizes, default=0), max(sizes, default=0)),
        },
    )


def _judgments(
    queries: dict, corpus: dict, qrel: dict, source: str
) -> tuple[list[str], list[str], list[int], dict[str, frozenset[str]]]:
    """The qrels columns (query, doc, grade) of BIRCO's ``qrel`` dict and each query's pool,
    checked against its ``query`` and ``corpus`` dicts."""
    q_col: list[str] = []
    d_col: list[str] = []
    g_col: list[int] = []
    pools: dict[str, frozenset[str]] = {}
    for qid, judged in qrel.items():
        qid = str(qid)
        if not isinstance(judged, dict):
            raise FormatError(
                source, None, f"qrel of query {qid!r} must be a dict {{doc_id: grade}}"
            )
        if qid not in queries:
            raise FormatError(source, None, f"query {qid!r} has judgments but no text in 'query'")
        for did, grade in judged.items():
            did = str(did)
            if did not in corpus:
                raise FormatError(
                    source, None, f"query {qid!r} pools document {did!r}, which is not in 'corpus'"
                )
            if (
                isinstance(grade, bool)
                or not isinstance(grade, (int, float))
                or grade != int(grade)
            ):
                raise FormatError(
                    source,
                    None,
                    f"grade of query {qid!r}, document {did!r} is {grade!r}; expected an integer",
                )
            q_col.append(qid)
            d_col.append(did)
            g_col.append(int(grade))
        pools[qid] = frozenset(str(d) for d in judged)
    return q_col, d_col, g_col, pools


def _read_hf(repo: str, revision: str | None) -> dict:
    """Read a mirror in MTEB's retrieval layout (configs ``corpus``, ``queries``, ``qrels``/``default``
    and optionally ``top_ranked``) into BIRCO's dict. Needs the network; not exercised offline."""
    try:
        import datasets as hf
    except ImportError as exc:  # pragma: no cover - optional dependency
        raise DownloadError(
            "reading the BIRCO mirror needs the 'datasets' package: pip install 'nuggetbench[hub]'"
        ) from exc
    try:
        configs = set(hf.get_dataset_config_names(repo, revision=revision))

        def rows(config: str) -> list[dict[str, Any]]:
            parts = hf.load_dataset(repo, config, revision=revision)
            return [row for split in parts.values() for row in split]

        corpus = {
            str(r["_id"]): (f"{r['title']} {r['text']}" if r.get("title") else r["text"])
            for r in rows("corpus")
        }
        queries = {str(r["_id"]): r["text"] for r in rows("queries")}
        qrel: dict[str, dict[str, int]] = {}
        for r in rows("qrels" if "qrels" in configs else "default"):
            qrel.setdefault(str(r["query-id"]), {})[str(r["corpus-id"])] = int(r["score"])
        if "top_ranked" in configs:  # candidate pools: unjudged candidates count as grade 0
            for r in rows("top_ranked"):
                pool = qrel.setdefault(str(r["query-id"]), {})
                for did in r["corpus-ids"]:
                    pool.setdefault(str(did), 0)
    except DownloadError:
        raise
    except Exception as exc:  # network, layout or auth problems, reported with the repo named
        raise DownloadError(
            f"cannot read the BIRCO mirror {repo} (revision {revision or 'main'}): {exc}"
        ) from exc
    return {"query": queries, "corpus": corpus, "qrel": qrel}


def _counts(path: Path) -> dict[str, int]:
    """Queries, documents and judgments of a local BIRCO split (read safely; small files)."""
    raw = _read_pickle(path)
    return {
        "queries": len(raw["query"]),
        "documents": len(raw["corpus"]),
        "judgments": sum(len(v) for v in raw["qrel"].values()),
    }


def info(dataset_id: str) -> dict:
    """Facts without loading: splits, objective, mirror, the local file and its counts if any."""
    name = _name(dataset_id)
    local = find(dataset_id)
    repo, revision = HF_MIRRORS[name]
    return {
        "splits": list(SPLITS),
        "objective": OBJECTIVES[name],
        "hf_mirror": repo,
        "hf_revision": revision,
        "local_file": str(local) if local else None,
        "counts": _counts(local) if local else None,
        "default_profile": "birco",
        "default_measures": list(DEFAULT_MEASURES),
        "citation": CITATION,
    }


__all__ = [
    "NAMES",
    "OBJECTIVES",
    "HF_MIRRORS",
    "dataset_ids",
    "find",
    "load",
    "build_dataset",
    "info",
]


# --- the family -----------------------------------------------------------------------------------
class BircoFamily(ModuleFamily):
    """``birco/<name>``: complex objectives, each query ranking its own candidate pool. The
    ``birco`` profile declares rank2metric.py's bootstrap, which :meth:`summaries` prints."""

    name = "birco"
    pattern = "birco/*"
    description = (
        "BIRCO (Wang et al., 2024): complex-objective tasks, each query ranks its own candidate "
        "pool; with task objectives"
    )
    default_measures = DEFAULT_MEASURES
    default_profile = "birco"
    options = params_table(
        Param("split", str, "test", "test, or dev (a local dev_set.pickle only)"),
        Param("objective", str, None, "replace the task objective (default: BIRCO's)"),
        DOWNLOAD,
        REVISION,
    )


FAMILY = BircoFamily()
