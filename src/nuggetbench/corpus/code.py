"""Split one repository file into chunks of at most a token budget, as byte spans.

* **Code** (a tree-sitter grammar from ``tree_sitter_language_pack`` exists for the extension): the
  syntax tree is split top-down: a node that fits the budget is one piece, a node that does not is
  replaced by its children's pieces, and a leaf that does not fit is split by lines (then by
  tokens). Consecutive pieces are then packed greedily while the packed span fits, so a chunk is a
  run of whole top-level nodes (imports, functions, classes) whenever they fit: the recipe of
  FreshStack's chunker (after repo2vec), re-implemented here.
* **Prose** (markdown, reStructuredText, text, and code whose parse fails): paragraphs (blank-line
  separated, :func:`nuggetbench.corpus.chunkers.split_paragraphs`) packed greedily; a paragraph
  over the budget is split by lines, then by tokens.
* **Notebooks**: rendered with :func:`nuggetbench.corpus.parse_notebook` (markdown as is, code
  fenced with its text outputs) and packed cell by cell; spans are bytes of the rendered text.

Tokens are counted by a named tokenizer: ``regex`` (default; ``\\w+`` runs and single punctuation
characters, a close stand-in for a BPE count on code), ``whitespace``, ``tiktoken:<encoding>`` or
``hf:<local folder>`` (:mod:`nuggetbench.text.tokenizers`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from nuggetbench.corpus.chunkers import split_paragraphs
from nuggetbench.corpus.notebook import parse_notebook
from nuggetbench.errors import SpecError
from nuggetbench.text.tokenizers import TokenCounter, count_tokens, make_counter

log = logging.getLogger(__name__)

#: Extension -> tree-sitter language name (``tree_sitter_language_pack.get_parser``).
CODE_LANGUAGES: dict[str, str] = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".tsx": "tsx",
    ".java": "java",
    ".go": "go",
    ".rs": "rust",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".hpp": "cpp",
    ".hh": "cpp",
    ".cs": "csharp",
    ".rb": "ruby",
    ".php": "php",
    ".gd": "gdscript",
    ".kt": "kotlin",
    ".kts": "kotlin",
    ".swift": "swift",
    ".scala": "scala",
    ".sh": "bash",
    ".bash": "bash",
    ".lua": "lua",
    ".r": "r",
    ".jl": "julia",
    ".sql": "sql",
    ".html": "html",
    ".htm": "html",
    ".css": "css",
    ".scss": "scss",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".toml": "toml",
    ".vue": "vue",
    ".dart": "dart",
    ".ex": "elixir",
    ".exs": "elixir",
    ".hs": "haskell",
    ".ml": "ocaml",
    ".zig": "zig",
    ".pyx": "cython",
}
PROSE_EXTENSIONS = {".md", ".markdown", ".mdx", ".rst", ".txt", ".adoc", ".org", ".tex", ""}
NOTEBOOK_EXTENSIONS = {".ipynb"}


@dataclass(frozen=True)
class Span:
    """A chunk of a file: byte span ``[start, end)``, its token count and how it was cut."""

    start: int
    end: int
    tokens: int
    kind: str


def _pack(
    spans: list[tuple[int, int]], counter: TokenCounter, budget: int
) -> list[tuple[int, int]]:
    """Join consecutive spans (and the gaps between them) while the joined span fits *budget*."""
    out: list[tuple[int, int]] = []
    for s, e in spans:
        if out and counter.count(out[-1][0], e) <= budget:
            out[-1] = (out[-1][0], e)
        else:
            out.append((s, e))
    return out


def _lines(data: bytes, start: int, end: int) -> list[tuple[int, int]]:
    out, s = [], start
    while s < end:
        nl = data.find(b"\n", s, end)
        e = end if nl < 0 else nl + 1
        out.append((s, e))
        s = e
    return out


def _fit(
    spans: list[tuple[int, int]], data: bytes, counter: TokenCounter, budget: int
) -> list[tuple[int, int]]:
    """Make every span fit: split an oversized one by lines, then by tokens; then pack."""
    pieces: list[tuple[int, int]] = []
    for s, e in spans:
        if counter.count(s, e) <= budget:
            pieces.append((s, e))
            continue
        for ls, le in _lines(data, s, e):
            if counter.count(ls, le) <= budget:
                pieces.append((ls, le))
            else:
                pieces.extend(counter.cut(ls, le, budget))
    return _pack(pieces, counter, budget)


def _split_node(node, data: bytes, counter: TokenCounter, budget: int) -> list[tuple[int, int]]:
    s, e = node.start_byte, node.end_byte
    if counter.count(s, e) <= budget:
        return [(s, e)]
    if node.child_count == 0:
        return _fit([(s, e)], data, counter, budget)
    pieces: list[tuple[int, int]] = []
    for child in node.children:
        if child.end_byte > child.start_byte:
            pieces.extend(_split_node(child, data, counter, budget))
    return _pack(pieces, counter, budget)


_PARSERS: dict[str, object] = {}


def get_code_parser(language: str):
    """A cached tree-sitter parser for *language*, or ``None`` when no grammar is available."""
    if language not in _PARSERS:
        try:
            from tree_sitter_language_pack import get_parser

            _PARSERS[language] = get_parser(language)
        except (ImportError, LookupError, ValueError) as exc:
            log.info("no tree-sitter grammar for %s (%s); chunking as prose", language, exc)
            _PARSERS[language] = None
    return _PARSERS[language]


def chunk_code(data: bytes, language: str, counter: TokenCounter, budget: int) -> list[Span] | None:
    """Syntax-aware chunks of a code file, or ``None`` when it has no grammar or does not parse."""
    parser = get_code_parser(language)
    if parser is None:
        return None
    tree = parser.parse(data)
    root = tree.root_node
    if root.child_count == 0 or root.children[0].type == "ERROR":
        return None
    spans = []
    for child in root.children:
        if child.end_byte > child.start_byte:
            spans.extend(_split_node(child, data, counter, budget))
    spans = _pack(spans, counter, budget)
    return [Span(s, e, counter.count(s, e), f"code:{language}") for s, e in spans]


def chunk_prose(text: str, data: bytes, counter: TokenCounter, budget: int) -> list[Span]:
    """Paragraph-packed chunks of a text file (see the module docstring)."""

    if len(data) != len(text):
        widths = [len(ch.encode("utf-8")) for ch in text]
        to_byte = np.concatenate([[0], np.cumsum(np.asarray(widths, dtype=np.int64))])
    else:
        to_byte = None
    paras = []
    for s, e, _ in split_paragraphs(text):
        if to_byte is not None:
            s, e = int(to_byte[s]), int(to_byte[e])
        paras.append((s, e))
    spans = _fit(paras, data, counter, budget)
    return [Span(s, e, counter.count(s, e), "prose") for s, e in spans]


def render_notebook(data: bytes, name: str) -> tuple[str, list[tuple[int, int]]]:
    """The rendered text of a notebook and each cell's character span in it.

    Raises:
        FormatError: not a notebook.
    """

    nb = parse_notebook(data, name=name, stop_at=None, skip_sections=())
    return nb.text, [(c.start, c.end) for c in nb.cells]


def chunk_notebook(
    text: str, cells: list[tuple[int, int]], counter: TokenCounter, budget: int
) -> list[Span]:
    """Cell-packed chunks of a rendered notebook (byte spans of the rendered text)."""
    data = text.encode("utf-8")
    if len(data) != len(text):
        widths = [len(ch.encode("utf-8")) for ch in text]
        to_byte = np.concatenate([[0], np.cumsum(np.asarray(widths, dtype=np.int64))])
        cells = [(int(to_byte[s]), int(to_byte[e])) for s, e in cells]
    spans = _fit(cells, data, counter, budget)
    return [Span(s, e, counter.count(s, e), "notebook") for s, e in spans]


def check_budget(budget: int) -> int:
    """Validate a token budget (an integer >= 16); raises ``SpecError`` otherwise."""
    if not isinstance(budget, int) or isinstance(budget, bool) or budget < 16:
        raise SpecError(f"[corpus] max_tokens must be an integer >= 16, got {budget!r}")
    return budget


__all__ = [
    "CODE_LANGUAGES",
    "PROSE_EXTENSIONS",
    "NOTEBOOK_EXTENSIONS",
    "TokenCounter",
    "make_counter",
    "count_tokens",
    "Span",
    "chunk_code",
    "chunk_prose",
    "chunk_notebook",
    "render_notebook",
    "get_code_parser",
    "check_budget",
]
