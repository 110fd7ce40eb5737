"""Core values: :class:`Corpus`, :class:`Queries`, :class:`Qrels`, :class:`Run`, and their I/O."""

from nuggetbench.data.corpus import Corpus, Document, InMemoryCorpus, JsonlCorpus, Queries
from nuggetbench.data.formats.beir import (
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
from nuggetbench.data.formats.sniff import read_document_qrels, read_run
from nuggetbench.data.formats.trec import read_trec_qrels, read_trec_run, write_qrels, write_run
from nuggetbench.data.nugget_qrels import Nugget, NuggetQrels
from nuggetbench.data.qrels import Qrels
from nuggetbench.data.ranking import rank_order
from nuggetbench.data.run import Run

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
    "read_trec_run",
    "write_run",
    "read_trec_qrels",
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
    "read_run",
    "read_document_qrels",
]
