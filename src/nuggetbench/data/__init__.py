"""Core values: :class:`Corpus`, :class:`Queries`, :class:`Qrels`, :class:`Run`, and their I/O."""

from .beir import (
    read_beir_folder,
    read_beir_qrels,
    read_json_qrels,
    read_json_run,
    read_queries_jsonl,
    write_beir_qrels,
    write_corpus_jsonl,
    write_json_qrels,
    write_json_run,
    write_queries_jsonl,
)
from .corpus import Corpus, Document, InMemoryCorpus, JsonlCorpus, Queries
from .io import load_qrels, load_run
from .nuggets import Nugget, NuggetQrels
from .qrels import Qrels
from .ranking import rank_order
from .run import Run
from .trec import read_qrels, read_run, write_qrels, write_run

__all__ = [
    "Corpus",
    "Document",
    "Nugget",
    "NuggetQrels",
    "InMemoryCorpus",
    "JsonlCorpus",
    "Queries",
    "Qrels",
    "Run",
    "rank_order",
    "read_run",
    "write_run",
    "read_qrels",
    "write_qrels",
    "read_beir_folder",
    "read_beir_qrels",
    "read_queries_jsonl",
    "read_json_run",
    "write_json_run",
    "read_json_qrels",
    "write_json_qrels",
    "write_corpus_jsonl",
    "write_queries_jsonl",
    "write_beir_qrels",
    "load_run",
    "load_qrels",
]
