"""Chunkers: a :class:`~nuggetbench.corpus.notebook.Notebook` in, passages (``Document`` s) out.

Three kinds, each built from a spec string by :func:`~nuggetbench.corpus.spec.parse_chunker`:

* ``paragraphs[:group=1,headers=true,code=true,outputs=true]``: markdown cells split into
  paragraphs on blank lines (``\\n\\s*\\n``); a paragraph that is only a header line is not a
  passage (it names the section); each code cell is one unit rendered as a fenced block plus
  ``Output:`` and its text outputs. ``group=N`` joins N consecutive units of the same section
  (``"\\n\\n"`` between them); ``headers=true`` prefixes each passage with its section header as
  ``"{header}\\n\\n{text}"``. This is the fastbook-benchmark author's recipe: on the seven
  benchmark chapters it gives 1967 one-paragraph and 713 three-paragraph passages.
* ``tokens:size=N[,overlap=M,tokenizer=whitespace]``: windows of N tokens of the notebook's
  rendered text, consecutive windows sharing M tokens; a passage is the exact source slice.
* ``cells[:headers=false,outputs=true]``: one passage per cell.

Every passage is a :class:`~nuggetbench.data.Document` whose id is
``"{notebook}/{tag}/{position:04d}"`` (``tag``: 8 hex chars of the chunker's canonical spec, so
ids are stable across runs and distinct across chunkings) and whose metadata records its source:
``notebook``, ``cells`` (first and last cell index in the file), ``char_span`` (``[start, end)``
in the notebook's rendered text), ``header`` and ``chunker`` (the canonical spec).
"""

from __future__ import annotations

import hashlib
import itertools
import re
from dataclasses import dataclass
from typing import Any, ClassVar

from nuggetbench.corpus.notebook import Cell, Notebook
from nuggetbench.data import Document
from nuggetbench.errors import SpecError
from nuggetbench.plugins import Registry
from nuggetbench.spec import REQUIRED, Param, params_table
from nuggetbench.text.tokenizers import check_tokenizer_name, load_tokenizer

#: Bump when chunk texts or ids change for the same spec (invalidates caches).
FORMAT_VERSION = 1

_PARAGRAPH_BREAK = re.compile(r"\n\s*\n")
_HEADER_ONLY = re.compile(r"#+ [^\n]*")


@dataclass(frozen=True)
class Piece:
    """A passage before it gets an id: text, section header, cell range and character span."""

    text: str
    header: str
    first_cell: int
    last_cell: int
    start: int
    end: int


def format_value(value: Any) -> str:
    """An option value as the spec grammar writes it (``true``/``false``; other values as is)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class Chunker:
    """Base class. Subclasses set :attr:`kind`, :attr:`options` and implement :meth:`pieces`."""

    kind: ClassVar[str] = ""
    options: ClassVar[dict[str, Param]] = {}
    description: ClassVar[str] = ""

    def __init__(self, **params: Any):
        unknown = set(params) - set(self.options)
        if unknown:
            raise SpecError(
                f"unknown option(s) {sorted(unknown)} for chunker {self.kind!r} "
                f"(options: {', '.join(self.options)})"
            )
        where = f"chunker {self.kind!r}"
        self.params = {}
        for key, opt in self.options.items():
            if key not in params:
                if opt.required:
                    raise SpecError(f"{where}: option {key!r} is required ({opt.description})")
                self.params[key] = opt.default
            else:
                self.params[key] = opt.coerce(params[key], where=where, noun="option")
        self.validate()

    def validate(self) -> None:
        """Check option combinations (raise :class:`SpecError`)."""

    @property
    def spec(self) -> str:
        """The canonical spec: the kind and every option, in declaration order."""
        if not self.options:
            return self.kind
        return self.kind + ":" + ",".join(f"{k}={format_value(v)}" for k, v in self.params.items())

    @property
    def tag(self) -> str:
        """8 hex chars of the canonical spec, used in passage ids."""
        return hashlib.sha256(self.spec.encode()).hexdigest()[:8]

    def fingerprint(self) -> str:
        """What the passages depend on besides the notebook: spec and format version."""
        return f"{self.spec}|v{FORMAT_VERSION}"

    def pieces(self, notebook: Notebook) -> list[Piece]:  # pragma: no cover - abstract
        raise NotImplementedError

    def chunk(self, notebook: Notebook) -> list[Document]:
        """Chunk one notebook into passages (see the module docstring for ids and metadata)."""
        docs = []
        for position, piece in enumerate(self.pieces(notebook)):
            meta = {
                "notebook": notebook.name,
                "cells": [piece.first_cell, piece.last_cell],
                "char_span": [piece.start, piece.end],
                "header": piece.header,
                "chunker": self.spec,
            }
            docs.append(
                Document(f"{notebook.name}/{self.tag}/{position:04d}", piece.text, "", meta)
            )
        return docs

    def __repr__(self) -> str:
        return f"<Chunker {self.spec}>"


def split_paragraphs(text: str) -> list[tuple[int, int, str]]:
    """Split on blank lines (``\\n\\s*\\n``): ``(start, end, stripped paragraph)``, empty ones dropped."""
    out = []
    pos = 0
    bounds = [(m.start(), m.end()) for m in _PARAGRAPH_BREAK.finditer(text)] + [
        (len(text), len(text))
    ]
    for brk_start, brk_end in bounds:
        segment = text[pos:brk_start]
        stripped = segment.strip()
        if stripped:
            lead = len(segment) - len(segment.lstrip())
            out.append((pos + lead, pos + lead + len(stripped), stripped))
        pos = brk_end
    return out


def is_header_only(paragraph: str) -> bool:
    """True when a paragraph is a single markdown header line (``## Title``)."""
    return _HEADER_ONLY.fullmatch(paragraph.strip()) is not None


def _with_header(header: str, text: str, headers: bool) -> str:
    return f"{header}\n\n{text}" if headers and header else text


class ParagraphChunker(Chunker):
    """Paragraphs (and code cells), optionally grouped N per section and prefixed by the header."""

    kind = "paragraphs"
    description = "paragraphs and code cells, grouped N per section (fastbook's chunking)"
    options = params_table(
        Param("group", int, 1, "paragraphs per passage, within one section", minimum=1),
        Param("headers", bool, True, "prefix each passage with its section header"),
        Param("code", bool, True, "include code cells (one unit each)"),
        Param("outputs", bool, True, "include the text outputs of code cells"),
    )

    def units(self, notebook: Notebook) -> list[tuple[Cell, int, int, str]]:
        """``(cell, start, end, text)`` per paragraph or code cell, in notebook order."""
        out = []
        for cell in notebook.cells:
            if cell.cell_type == "markdown":
                for s, e, par in split_paragraphs(cell.source):
                    if not is_header_only(par):
                        out.append((cell, cell.start + s, cell.start + e, par))
            elif self.params["code"]:
                out.append(
                    (cell, cell.start, cell.end, cell.render(outputs=self.params["outputs"]))
                )
        return out

    def pieces(self, notebook: Notebook) -> list[Piece]:
        group = self.params["group"]
        pieces = []
        for _, members in itertools.groupby(self.units(notebook), key=lambda u: u[0].section):
            members = list(members)
            for i in range(0, len(members), group):
                part = members[i : i + group]
                header = part[0][0].header
                text = "\n\n".join(u[3] for u in part)
                pieces.append(
                    Piece(
                        _with_header(header, text, self.params["headers"]),
                        header,
                        part[0][0].index,
                        part[-1][0].index,
                        part[0][1],
                        part[-1][2],
                    )
                )
        return pieces


class CellChunker(Chunker):
    """One passage per markdown or code cell (a cell that is only a header line is skipped)."""

    kind = "cells"
    description = "one passage per markdown or code cell"
    options = params_table(
        Param("headers", bool, False, "prefix each passage with its section header"),
        Param("outputs", bool, True, "include the text outputs of code cells"),
    )

    def pieces(self, notebook: Notebook) -> list[Piece]:
        pieces = []
        for cell in notebook.cells:
            if cell.cell_type == "markdown" and is_header_only(cell.source):
                continue
            text = cell.render(outputs=self.params["outputs"])
            if cell.cell_type == "markdown":
                text = text.strip()
            if cell.cell_type == "markdown" and text.startswith(cell.header):
                full = text  # the cell opens its own section: its header is already there
            else:
                full = _with_header(cell.header, text, self.params["headers"])
            pieces.append(Piece(full, cell.header, cell.index, cell.index, cell.start, cell.end))
        return pieces


class TokenChunker(Chunker):
    """Windows of ``size`` tokens over the notebook's rendered text, ``overlap`` tokens shared."""

    kind = "tokens"
    description = "windows of size tokens over the rendered notebook, overlap tokens shared"
    options = params_table(
        Param("size", int, REQUIRED, "tokens per passage", minimum=1),
        Param("overlap", int, 0, "tokens shared by consecutive passages (< size)", minimum=0),
        Param(
            "tokenizer",
            str,
            "whitespace",
            "whitespace, tiktoken:<encoding> or hf:<local tokenizer folder>",
        ),
    )

    def __init__(self, **params: Any):
        super().__init__(**params)
        self._tokenizer = None

    def validate(self) -> None:
        check_tokenizer_name(self.params["tokenizer"])
        if self.params["overlap"] >= self.params["size"]:
            raise SpecError(
                f"chunker {self.spec!r}: overlap={self.params['overlap']} must be smaller "
                f"than size={self.params['size']}"
            )

    @property
    def tokenizer(self):
        """The loaded :class:`~nuggetbench.text.tokenizers.Tokenizer` (loaded on first use)."""
        if self._tokenizer is None:
            self._tokenizer = load_tokenizer(self.params["tokenizer"])
        return self._tokenizer

    def fingerprint(self) -> str:
        return f"{super().fingerprint()}|{self.tokenizer.fingerprint}"

    def pieces(self, notebook: Notebook) -> list[Piece]:
        import bisect

        text = notebook.text
        offsets = self.tokenizer.offsets(text)
        n = len(offsets)
        size, step = self.params["size"], self.params["size"] - self.params["overlap"]
        starts = [c.start for c in notebook.cells]
        pieces = []
        for first in range(0, n, step):
            last = min(first + size, n) - 1
            s, e = int(offsets[first, 0]), int(offsets[last, 1])
            c0 = notebook.cells[max(bisect.bisect_right(starts, s) - 1, 0)]
            c1 = notebook.cells[max(bisect.bisect_right(starts, max(e - 1, s)) - 1, 0)]
            pieces.append(Piece(text[s:e], c0.header, c0.index, c1.index, s, e))
            if last == n - 1:
                break
        return pieces


#: The chunker registry: ``kind -> class`` (a plug-in adds ``CHUNKERS.register(kind, cls)``).
CHUNKERS = Registry(
    "chunker",
    {c.kind: c for c in (ParagraphChunker, TokenChunker, CellChunker)},
    hint="Chunkers: paragraphs[:group=N,headers=BOOL], tokens:size=N[,overlap=M], cells.",
)

__all__ = [
    "Chunker",
    "Piece",
    "ParagraphChunker",
    "TokenChunker",
    "CellChunker",
    "CHUNKERS",
    "split_paragraphs",
    "is_header_only",
    "FORMAT_VERSION",
]
