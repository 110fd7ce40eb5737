"""Jupyter notebooks read as a sequence of rendered cells with character offsets.

A notebook is read with ``nbformat`` into :class:`Notebook`: its markdown and code cells (raw
cells and empty cells are left out), each rendered as text, and the notebook's *rendered text*,
the cells joined by a blank line. Every cell knows its offset in that text, so a chunk can record
the character span it came from, and a span that no chunk contains can be told apart from a span
that is not in the notebook at all.

Conventions (those of the fastbook-benchmark author, Vishal Bakshi, 2024):

* a code cell renders as ``"```python\\n{source}\\n```\\nOutput:\\n{text outputs}"``, where the
  text outputs are stream text and the ``text/plain`` value of execute results and display data
  (this is the form in which the benchmark's evidence spans quote code, e.g.
  ``"```python\\n1+1\\n```\\nOutput:\\n2"``);
* a cell's *section header* is the first line starting with ``#`` of the latest markdown cell
  (this one included) that has such a line;
* reading stops at the first markdown cell containing ``stop_at`` (default ``"## Questionnaire"``:
  the text before it is the chapter), and cells whose section header contains one of
  ``skip_sections`` (default ``Questionnaire`` and ``Further Research``) are left out.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from nuggetbench.errors import FormatError

#: Cells are joined by this separator in the rendered notebook text.
CELL_SEPARATOR = "\n\n"
DEFAULT_STOP_AT = "## Questionnaire"
DEFAULT_SKIP_SECTIONS = ("Questionnaire", "Further Research")

_HEADER_LINE = re.compile(r"^#[^\n]*", re.MULTILINE)


@dataclass(frozen=True)
class Cell:
    """One rendered cell.

    Attributes:
        index: 0-based position of the cell in the notebook file (raw and empty cells count).
        cell_type: ``"markdown"`` or ``"code"``.
        source: the cell's source text.
        outputs: the text outputs of a code cell, concatenated (``""`` for markdown).
        header: the section header the cell is under (``""`` before the first header).
        section: index of the markdown cell that set ``header`` (``-1`` before the first).
        start: offset of the rendered cell in :attr:`Notebook.text`.
    """

    index: int
    cell_type: str
    source: str
    outputs: str
    header: str
    section: int
    start: int

    def render(self, *, outputs: bool = True) -> str:
        """The cell as text: markdown as is; code as a fenced block, ``Output:`` and outputs."""
        if self.cell_type == "code":
            return render_code(self.source, self.outputs if outputs else "")
        return self.source

    @property
    def end(self) -> int:
        """End offset (exclusive) of the rendered cell in :attr:`Notebook.text`."""
        return self.start + len(self.render())


@dataclass(frozen=True)
class Notebook:
    """A notebook's rendered cells.

    Attributes:
        name: the file name without ``.ipynb`` (``04_mnist_basics``); chunk ids start with it.
        path: the file it was read from (``None`` when built from a string).
        cells: markdown and code cells in order (raw and empty cells left out).
        text: the rendered cells joined by :data:`CELL_SEPARATOR`.
        fingerprint: SHA-256 (16 hex chars) of the file's bytes and the reading options.
    """

    name: str
    path: str | None
    cells: tuple[Cell, ...]
    text: str
    fingerprint: str


def render_code(source: str, outputs: str) -> str:
    """Render a code cell: ``"```python\\n{source}\\n```\\nOutput:\\n{outputs}"``."""
    return f"```python\n{source}\n```\nOutput:\n{outputs}"


def _output_text(outputs) -> str:
    parts: list[str] = []
    for out in outputs or ():
        kind = out.get("output_type")
        if kind == "stream":
            text = out.get("text", "")
        elif kind in ("execute_result", "display_data"):
            text = (out.get("data") or {}).get("text/plain", "")
        else:  # errors and unknown kinds carry no book text
            continue
        if isinstance(text, list):
            text = "".join(text)
        if not text:
            continue
        if parts and not parts[-1].endswith("\n"):
            parts.append("\n")
        parts.append(text)
    return "".join(parts)


def first_header(source: str) -> str | None:
    """The first line of *source* starting with ``#`` (stripped), or ``None``."""
    match = _HEADER_LINE.search(source)
    return match.group(0).strip() if match else None


def read_notebook(
    path: str | Path,
    *,
    stop_at: str | None = DEFAULT_STOP_AT,
    skip_sections: tuple[str, ...] = DEFAULT_SKIP_SECTIONS,
) -> Notebook:
    """Read a ``.ipynb`` file into a :class:`Notebook`.

    Args:
        path: the notebook file.
        stop_at: reading stops at the first markdown cell whose source contains this string
            (``None``: read every cell).
        skip_sections: cells whose section header contains one of these strings are left out.

    Raises:
        FormatError: the file is not a notebook nbformat can read (the file is named).
    """
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise FormatError(path, None, f"cannot read the notebook: {exc.strerror or exc}") from exc
    return parse_notebook(
        raw,
        name=path.name.removesuffix(".ipynb"),
        path=str(path),
        stop_at=stop_at,
        skip_sections=skip_sections,
    )


def parse_notebook(
    raw: bytes | str,
    *,
    name: str,
    path: str | None = None,
    stop_at: str | None = DEFAULT_STOP_AT,
    skip_sections: tuple[str, ...] = DEFAULT_SKIP_SECTIONS,
) -> Notebook:
    """Parse notebook JSON (bytes or text) into a :class:`Notebook`; see :func:`read_notebook`."""
    import nbformat

    data = raw.encode("utf-8") if isinstance(raw, str) else raw
    where = path or name
    try:
        nb = nbformat.reads(data.decode("utf-8"), as_version=4)
        raw_cells = list(nb.cells)
    except (
        Exception
    ) as exc:  # nbformat raises many types (NotJSONError, KeyError, ValidationError...)
        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise FormatError(
            where,
            None,
            f"cannot be parsed as a Jupyter notebook ({type(exc).__name__}: "
            f"{message[:200]}); check that the file is a complete .ipynb",
        ) from exc
    h = hashlib.sha256(data)
    h.update(f"\x1f{stop_at!r}\x1f{skip_sections!r}".encode())
    cells: list[Cell] = []
    pieces: list[str] = []
    offset = 0
    header, section = "", -1
    for index, cell in enumerate(raw_cells):
        kind = cell.get("cell_type")
        source = cell.get("source", "")
        if isinstance(source, list):
            source = "".join(source)
        if kind == "markdown":
            if stop_at is not None and stop_at in source:
                break
            found = first_header(source)
            if found is not None:
                header, section = found, index
        if kind not in ("markdown", "code"):
            continue
        if any(s in header for s in skip_sections):
            continue
        outputs = _output_text(cell.get("outputs")) if kind == "code" else ""
        if not source.strip() and not outputs.strip():
            continue
        if pieces:
            offset += len(CELL_SEPARATOR)
        item = Cell(index, kind, source, outputs, header, section, offset)
        rendered = item.render()
        cells.append(item)
        pieces.append(rendered)
        offset += len(rendered)
    return Notebook(
        name=name,
        path=path,
        cells=tuple(cells),
        text=CELL_SEPARATOR.join(pieces),
        fingerprint=h.hexdigest()[:16],
    )


__all__ = [
    "Cell",
    "Notebook",
    "read_notebook",
    "parse_notebook",
    "render_code",
    "first_header",
    "CELL_SEPARATOR",
    "DEFAULT_STOP_AT",
    "DEFAULT_SKIP_SECTIONS",
]
