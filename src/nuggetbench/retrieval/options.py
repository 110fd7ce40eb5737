"""The options of every built-in retriever, as frozen dataclasses declared once.

A retriever class names its options class in ``OPTIONS``; the spec parser
(:func:`nuggetbench.retrieval.spec.parse_retriever`) reads the declarations (type, default,
allowed values, bounds, one-line description) from it, ``nuggetbench retrievers`` prints them, and
the retriever keeps the validated value in ``self.options`` (readable as ``options["name"]``).
Options shared by the model-backed retrievers are written once, as the ``_device()``,
``_batch_size()``... field makers below.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from nuggetbench.llm.settings import MAX_REPLY_CHARS
from nuggetbench.spec import Options, option

__all__ = [
    "BM25Options",
    "ColBERTOptions",
    "CrossEncoderOptions",
    "DenseOptions",
    "METHODS",
    "PISA_ALGORITHMS",
    "PISA_ENCODINGS",
    "PISA_STOPWORDS",
    "PROMPT_PRESETS",
    "HyDEOptions",
    "LLMEndpointOptions",
    "LLM_TRANSPORT",
    "LLM_UNNAMED",
    "LLMListwiseOptions",
    "LLMPointwiseOptions",
    "SubQOptions",
    "STOPWORDS",
    "SparseOptions",
]

METHODS = ("lucene", "robertson", "atire", "bm25l", "bm25+")
# fmt: off
STOPWORDS = (  # the names bm25s.tokenize accepts, and "none"
    "en", "english", "en_plus", "english_plus", "de", "german", "nl", "dutch", "fr", "french",
    "es", "spanish", "pt", "portuguese", "it", "italian", "ru", "russian", "sv", "swedish",
    "no", "norwegian", "zh", "chinese", "tr", "turkish", "ko", "korean", "da", "danish", "none",
)
PISA_STOPWORDS = ("terrier", "lucene")  # pyterrier-pisa's own lists (backend=pisa only)
PISA_ALGORITHMS = (  # PISA's query algorithms; the last two are conjunctive
    "block_max_wand", "block_max_maxscore", "maxscore", "wand", "ranked_or",
    "block_max_ranked_and", "ranked_and",
)
PISA_ENCODINGS = (  # PISA's posting-list compressions
    "block_simdbp", "block_optpfor", "block_varintg8iu", "block_streamvbyte", "block_maskedvbyte",
    "block_interpolative", "block_qmx", "block_varintgb", "block_simple8b", "block_simple16",
    "ef", "single", "pefuniform", "pefopt",
)
# fmt: on

PROMPT_PRESETS: dict[str, tuple[str, str]] = {
    "none": ("", ""),
    "e5": ("query: ", "passage: "),
    "bge": ("Represent this sentence for searching relevant passages: ", ""),
    "instruct": ("Instruct: {objective}\nQuery: ", ""),
}
"""``preset -> (query prompt, document prompt)`` of :class:`DenseOptions`."""


@dataclass(frozen=True, kw_only=True)
class BM25Options(Options):
    """Options of ``bm25`` (:class:`~nuggetbench.retrieval.bm25.retriever.BM25`)."""

    WHERE = "bm25"

    k1: float = option(1.5, "term-frequency saturation", minimum=0)
    b: float = option(0.75, "document-length normalisation", minimum=0, maximum=1)
    method: str = option("lucene", "bm25s scoring variant (Kamphuis et al. 2020)", choices=METHODS)
    delta: float = option(0.5, "the delta of bm25l and bm25+ (ignored by the others)")
    stemmer: str = option(
        "english",
        "PyStemmer algorithm (english, porter, french...) or none; backend=pisa: english "
        "(PISA's Porter2), krovetz or none",
    )
    stopwords: str = option(
        "en",
        "bm25s stop-word list or none; backend=pisa also terrier or lucene (pyterrier-pisa's)",
        choices=(*STOPWORDS, *PISA_STOPWORDS),
    )
    cache: bool = option(True, "read and write the index in the artifact store")
    backend: str = option(
        "auto",
        "auto|numpy|numba: the search of bm25s' scores (numba: a compiled top-k kernel; auto "
        "uses it when numba is installed and queries x documents >= 2e8); lucene: Lucene through "
        "Pyserini (the lucene extra); pisa: PISA through pyterrier-pisa (the pisa extra)",
        choices=("auto", "numpy", "numba", "lucene", "pisa"),
    )
    threads: int = option(
        0,
        "indexing worker processes and search threads, or Lucene's or PISA's indexing and search "
        "threads (0: every usable CPU); the index and the run do not depend on it",
        minimum=0,
    )
    fields: str = option(
        "flat",
        "backend=lucene layout: flat (title + text in one field) or multifield (title and text "
        "fields, searched with equal weights), Pyserini's BEIR indexes",
        choices=("flat", "multifield"),
    )
    algorithm: str = option(
        "block_max_wand",
        "backend=pisa query algorithm: block_max_wand, block_max_maxscore, maxscore, wand, "
        "ranked_or (the same top k), or the conjunctive ranked_and, block_max_ranked_and",
        choices=PISA_ALGORITHMS,
    )
    encoding: str = option(
        "block_simdbp",
        "backend=pisa posting-list compression (speed and size only, same scores)",
        choices=PISA_ENCODINGS,
    )
    analyzer: str = option(
        "auto",
        "tokenizer: auto (bm25s, or the dataset's language), bm25s, or an analyzer name (de, ja, cjk...)",
    )
    shard_docs: int = option(
        0,
        "documents per index shard, built in bounded memory with global statistics (same run); "
        "0: chosen from the corpus and the memory (see memory)",
        minimum=0,
    )
    memory: str | None = option(
        None,
        "peak memory budget (4G, 800M, bytes if bare): the single index if its estimated peak "
        "fits, else shards sized to fit (same run); unset: 2G, or half the available memory if "
        "less, so a large corpus is sharded; not with shard_docs or backend=lucene",
    )


# --- fields shared by the model-backed retrievers ----------------------------------------------
def _batch_size(what: str = "texts") -> Any:
    return option(32, f"{what} per forward pass (halved on out-of-memory)", minimum=1)


def _max_length() -> Any:
    return option(None, "maximum tokens per text (default: the model's)")


def _device() -> Any:
    return option("auto", "auto (CUDA, then MPS, then CPU), cpu, cuda, cuda:1, mps")


def _fp16() -> Any:
    return option(None, "half precision (default: on for CUDA)")


def _with_title() -> Any:
    return option(True, "encode title + ' ' + text (BEIR's convention) rather than the text alone")


def _block(default: int, what: str) -> Any:
    return option(
        default, f"{what} per block of exact search (memory ~ the block product)", minimum=1
    )


def _chunk(default: int) -> Any:
    return option(default, "documents per encode call (bounds memory on large corpora)", minimum=1)


def _cache() -> Any:
    return option(True, "read and write the corpus encodings in the artifact store")


def _revision() -> Any:
    return option(None, "hub revision (branch, tag or commit)")


def _trust_remote_code() -> Any:
    return option(False, "allow model code from the hub")


def _depth() -> Any:
    return option(100, "candidates re-scored per query when used as a reranker", minimum=1)


@dataclass(frozen=True, kw_only=True)
class DenseOptions(Options):
    """Options of ``dense:MODEL`` (:class:`~nuggetbench.retrieval.dense.retriever.DenseRetriever`)."""

    WHERE = "dense"

    prompts: str = option("auto", "prompt preset", choices=("auto", *PROMPT_PRESETS))
    query_prompt: str | None = option(None, "literal query prefix, overriding the preset")
    document_prompt: str | None = option(None, "literal document prefix, overriding the preset")
    objective: str | None = option(None, "default task objective (instruction) for queries")
    batch_size: int = _batch_size()
    max_length: int | None = _max_length()
    normalize: bool | None = option(
        None, "L2-normalise embeddings (default: when the model's similarity is cosine)"
    )
    device: str = _device()
    fp16: bool | None = _fp16()
    with_title: bool = _with_title()
    faiss: str = option("", "empty: exact numpy search; else a faiss factory string (Flat, HNSW32)")
    index: str = option(
        "exact",
        "exact: numpy search in blocks; flat|ivf|hnsw: a faiss index (flat is exact)",
        choices=("exact", "flat", "ivf", "hnsw"),
    )
    nlist: int = option(0, "ivf: inverted lists (0: about 4 x sqrt(documents))", minimum=0)
    nprobe: int = option(16, "ivf: lists searched per query", minimum=1)
    hnsw_m: int = option(32, "hnsw: neighbours per node", minimum=2)
    ef_search: int = option(128, "hnsw: search breadth (efSearch)", minimum=1)
    query_block: int = _block(1024, "queries")
    doc_block: int = _block(16384, "documents")
    chunk: int = _chunk(8192)
    shard_docs: int = option(
        0,
        "0: encode in one pass; N: encode in resumable shards of N documents (same vectors)",
        minimum=0,
    )
    cache: bool = _cache()
    revision: str | None = _revision()
    trust_remote_code: bool = _trust_remote_code()


@dataclass(frozen=True, kw_only=True)
class SparseOptions(Options):
    """Options of ``sparse:MODEL`` (:class:`~nuggetbench.retrieval.learned.sparse.SparseRetriever`)."""

    WHERE = "sparse"

    idf: bool = option(False, "weight query terms by the corpus idf (inference-free SPLADE)")
    batch_size: int = _batch_size()
    max_length: int | None = _max_length()
    device: str = _device()
    fp16: bool | None = _fp16()
    with_title: bool = _with_title()
    query_block: int = _block(256, "queries")
    doc_block: int = _block(16384, "documents")
    chunk: int = _chunk(4096)
    cache: bool = _cache()
    revision: str | None = _revision()
    trust_remote_code: bool = _trust_remote_code()


@dataclass(frozen=True, kw_only=True)
class ColBERTOptions(Options):
    """Options of ``colbert:MODEL[@depth]`` (:class:`~nuggetbench.retrieval.learned.colbert.ColBERTRetriever`)."""

    WHERE = "colbert"

    depth: int = _depth()
    batch_size: int = _batch_size()
    device: str = _device()
    fp16: bool | None = _fp16()
    with_title: bool = _with_title()
    query_block: int = _block(16, "queries")
    doc_block: int = _block(1024, "documents")
    chunk: int = _chunk(2048)
    cache: bool = _cache()
    revision: str | None = _revision()
    trust_remote_code: bool = _trust_remote_code()


@dataclass(frozen=True, kw_only=True)
class CrossEncoderOptions(Options):
    """Options of ``rerank:MODEL[@depth]`` (:class:`~nuggetbench.retrieval.rerankers.cross_encoder.CrossEncoderReranker`)."""

    WHERE = "rerank"

    depth: int = _depth()
    batch_size: int = _batch_size("pairs")
    max_length: int | None = option(None, "maximum tokens of a (query, document) pair")
    device: str = _device()
    fp16: bool | None = _fp16()
    with_title: bool = _with_title()
    group: int = option(4096, "pairs scored per predict call (bounds memory)", minimum=1)
    revision: str | None = _revision()
    trust_remote_code: bool = _trust_remote_code()


def _llm_model() -> Any:
    return option("", "chat model (default: NUGGETBENCH_LLM_MODEL)")


def _temperature() -> Any:
    return option(0.0, "sampling temperature (0: reproducible rewrites)", minimum=0)


@dataclass(frozen=True, kw_only=True)
class LLMEndpointOptions(Options):
    """Where and how every LLM step calls its model, declared once: the options ``llm_listwise``,
    ``llm_pointwise``, ``hyde`` and ``subq`` all accept, with the same names, types, defaults and
    meanings as ``--base-url``, ``--no-api-key``, ``--timeout``... of ``judge`` and the plan's
    ``[llm]`` (:class:`~nuggetbench.llm.settings.LLMSettings`). Those in :data:`LLM_TRANSPORT`
    do not change what is asked: they are left out of the steps' identities (run-cache keys)."""

    model: str = _llm_model()
    base_url: str = option("", "OpenAI-compatible endpoint (default: NUGGETBENCH_LLM_BASE_URL)")
    api_key_env: str = option(
        "OPENAI_API_KEY",
        "environment variable holding the API key (NUGGETBENCH_LLM_API_KEY is tried first)",
    )
    no_api_key: bool = option(False, "the endpoint needs no key (a local vLLM or Ollama server)")
    timeout: float = option(
        120.0, "seconds one request may take, from connecting to its last byte", minimum=0.1
    )
    max_retries: int = option(
        6, "retries of a request that timed out or failed (backoff 1 s, doubling)", minimum=0
    )
    concurrency: int = option(4, "requests in flight at once", minimum=1)
    cache: bool = option(
        True,
        "serve LLM answers cached before; false: send every request again (the new answers "
        "replace the cached ones) and never serve this system's run from the run cache",
    )
    price_in: float | None = option(None, "USD per million prompt tokens (for the cost)")
    price_out: float | None = option(None, "USD per million answer tokens (for the cost)")
    max_reply_chars: int = option(
        MAX_REPLY_CHARS,
        "longest reply kept, in characters (a longer one is cut and not used)",
        minimum=1,
    )


#: The options of :class:`LLMEndpointOptions` that say where and how fast to call, not what is
#: asked: left out of the LLM steps' identities (their run-cache keys) and parameters.
LLM_TRANSPORT = (
    "base_url",
    "api_key_env",
    "no_api_key",
    "timeout",
    "max_retries",
    "concurrency",
    "cache",
    "price_in",
    "price_out",
    "max_reply_chars",
)
#: The options left out of the LLM steps' names (``llm_listwise(model=M,k=20)``): the endpoint's
#: address, its key's variable and the bounds of one request.
LLM_UNNAMED = ("base_url", "api_key_env", "timeout", "max_retries", "max_reply_chars")


@dataclass(frozen=True, kw_only=True)
class HyDEOptions(LLMEndpointOptions):
    """Options of ``hyde(RETRIEVER; ...)`` (:class:`~nuggetbench.retrieval.rerankers.querygen.HyDE`)."""

    WHERE = "hyde"

    temperature: float = _temperature()
    max_words: int = option(300, "longest closed-book answer, in words", minimum=1)


@dataclass(frozen=True, kw_only=True)
class SubQOptions(LLMEndpointOptions):
    """Options of ``subq(RETRIEVER; ...)`` (:class:`~nuggetbench.retrieval.rerankers.querygen.SubQ`)."""

    WHERE = "subq"

    temperature: float = _temperature()
    max_subquestions: int = option(5, "most sub-questions asked for", minimum=1)


@dataclass(frozen=True, kw_only=True)
class _LLMRerankOptions(LLMEndpointOptions):
    """Options shared by ``llm_listwise`` and ``llm_pointwise``."""

    k: int = option(100, "candidates reranked per query (the top k of the first stage)", minimum=1)
    passage_tokens: int = option(
        300, "tokens of each passage shown to the model (the rest is cut)", minimum=1
    )
    tokenizer: str = option(
        "whitespace", "counts passage tokens: whitespace, tiktoken:<encoding> or hf:<folder>"
    )
    with_title: bool = _with_title()
    temperature: float = option(0.0, "sampling temperature (0: reproducible answers)", minimum=0)
    max_tokens: int = option(
        256, "longest answer, in tokens (reasoning models need more)", minimum=1
    )


@dataclass(frozen=True, kw_only=True)
class LLMListwiseOptions(_LLMRerankOptions):
    """Options of ``llm_listwise(...)`` (:class:`~nuggetbench.retrieval.rerankers.llm.LLMListwise`)."""

    WHERE = "llm_listwise"

    window: int = option(20, "passages per window (RankGPT's w)", minimum=1)
    step: int = option(10, "how far the window moves up each time (rank_llm's stride)", minimum=1)
    max_repairs: int = option(
        1, "re-asks of an answer that is not a full permutation of the window", minimum=0
    )


@dataclass(frozen=True, kw_only=True)
class LLMPointwiseOptions(_LLMRerankOptions):
    """Options of ``llm_pointwise(...)`` (:class:`~nuggetbench.retrieval.rerankers.llm.LLMPointwise`)."""

    WHERE = "llm_pointwise"

    scale: str = option("0-3", "grade scale LOW-HIGH the model answers on")
    logprobs: bool = option(
        True, "ask for log-probabilities and score by the expected grade when they are returned"
    )
    max_repairs: int = option(1, "re-asks of an answer that holds no grade on the scale", minimum=0)
