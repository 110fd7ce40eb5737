"""Turn notebooks into passages, and judge evidence spans against any passage corpus.

* :func:`parse_chunker` builds a chunker from a spec string (``paragraphs:group=3,headers=true``,
  ``tokens:size=256,overlap=32,tokenizer=whitespace``, ``cells``);
* :func:`read_notebook` reads a ``.ipynb`` with ``nbformat`` into rendered cells;
* :func:`chunk_notebooks` chunks notebooks into an :class:`~nuggetbench.data.InMemoryCorpus`,
  cached under ``<home>/cache/chunks/``;
* :func:`judge_spans` turns span-judged nuggets into nugget qrels for a corpus, with the
  :class:`ChunkingCeiling` the chunking imposes.
"""

from nuggetbench.corpus.cache import chunk_notebooks
from nuggetbench.corpus.chunkers import (
    CHUNKERS,
    CellChunker,
    Chunker,
    ParagraphChunker,
    TokenChunker,
)
from nuggetbench.corpus.notebook import Cell, Notebook, parse_notebook, read_notebook
from nuggetbench.corpus.spans import ChunkingCeiling, MissingSpan, SpanJudgments, judge_spans
from nuggetbench.corpus.spec import parse_chunker

__all__ = [
    "parse_chunker",
    "read_notebook",
    "parse_notebook",
    "chunk_notebooks",
    "judge_spans",
    "Chunker",
    "ParagraphChunker",
    "TokenChunker",
    "CellChunker",
    "CHUNKERS",
    "Cell",
    "Notebook",
    "ChunkingCeiling",
    "SpanJudgments",
    "MissingSpan",
]
