"""Retrieval: protocols (:mod:`.base`), spec strings (:mod:`.spec`) and retrievers.

Importing this package imports no retrieval library; ``parse_retriever("bm25")`` imports bm25s
when the retriever is used.
"""

from .base import DocFilter, Index, Reranker, Retriever
from .spec import list_retrievers, parse_retriever, register_retriever

__all__ = [
    "DocFilter",
    "Index",
    "Reranker",
    "Retriever",
    "list_retrievers",
    "parse_retriever",
    "register_retriever",
]
