"""Retrieval: protocols (:mod:`.base`), retrievers, composition (:mod:`.compose`), caching
wrappers (:mod:`.caching`) and spec strings (:mod:`.spec`).

Importing this package imports no retrieval library; ``parse_retriever("bm25")`` imports bm25s
when the retriever is used.
"""

from nuggetbench.retrieval.compose.caching import CachedRetriever, RunCache
from nuggetbench.retrieval.compose.fusion import fuse
from nuggetbench.retrieval.compose.pipeline import Composable, Fusion, IndexReranker, Pipeline
from nuggetbench.retrieval.options import (
    BM25Options,
    ColBERTOptions,
    CrossEncoderOptions,
    DenseOptions,
    HyDEOptions,
    SparseOptions,
    SubQOptions,
)
from nuggetbench.retrieval.protocols import (
    DocFilter,
    Index,
    Reranker,
    Retriever,
    check_k,
    rerank,
    search,
    uses_objective,
)
from nuggetbench.retrieval.spec import (
    RETRIEVERS,
    list_retrievers,
    parse_retriever,
    register_retriever,
    retriever_params,
)

__all__ = [
    "RETRIEVERS",
    "BM25Options",
    "CachedRetriever",
    "ColBERTOptions",
    "Composable",
    "CrossEncoderOptions",
    "DenseOptions",
    "DocFilter",
    "Fusion",
    "HyDEOptions",
    "Index",
    "IndexReranker",
    "Pipeline",
    "Reranker",
    "Retriever",
    "RunCache",
    "SparseOptions",
    "SubQOptions",
    "check_k",
    "fuse",
    "list_retrievers",
    "parse_retriever",
    "register_retriever",
    "rerank",
    "retriever_params",
    "search",
    "uses_objective",
]
