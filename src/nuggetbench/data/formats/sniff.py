"""Format sniffing: read a run or qrels file whatever its format, reading the path once.

The file's bytes are read once (:func:`.source.read_source`: pipes and FIFOs work, gzip and a
byte-order mark are handled) and the format is decided from them, never by opening the path again.
"""

from __future__ import annotations

from pathlib import Path

from nuggetbench.data.formats.beir import read_beir_qrels, read_json_qrels, read_json_run
from nuggetbench.data.formats.rankfile import (
    _PICKLE_SUFFIXES,
    looks_like_rank_file,
    read_rank_file,
)
from nuggetbench.data.formats.trec import read_run_owned, read_trec_qrels
from nuggetbench.data.qrels import Qrels
from nuggetbench.data.run import DUPLICATE_POLICIES, Run
from nuggetbench.data.source import read_source
from nuggetbench.errors import FormatError, InputError


def _first_data_line(data: bytes) -> bytes:
    for line in data[: 1 << 20].splitlines():
        if line.strip() and not line.startswith(b"#"):
            return line
    return b""


def read_run(
    path: str | Path,
    *,
    name: str | None = None,
    keep_rank: bool = False,
    trailing: str = "error",
    duplicates: str | None = None,
) -> Run:
    """Read a run from a TREC run file (``.gz`` too), a JSON file (``{qid: {doc: score}}``) or a
    rank file (``{qid: [doc, ...]}`` best first, as a restricted pickle or JSON; see
    :mod:`.rankfile`).

    The path is read once, so ``<(cat run)``, a named FIFO or ``/dev/stdin`` work.
    *keep_rank* keeps a TREC file's rank column as ``run.input_ranks`` (JSON runs have none).
    *duplicates* is what a (query, doc) pair listed twice does: ``"error"`` or ``"first"`` (the
    first occurrence wins, with a warning); ``None`` (default): each format's own default, i.e.
    ``"first"`` for rank files (BIRCO's published ones repeat documents) and ``"error"`` for TREC
    and JSON runs (trec_eval refuses them).

    Raises:
        InputError: the file does not exist, or *duplicates* is not ``None``/``"error"``/``"first"``;
            FormatError / DuplicateError: as the format's reader (file and line named).
    """
    if duplicates not in (None, *DUPLICATE_POLICIES):
        raise InputError(
            f"duplicates must be one of {', '.join(DUPLICATE_POLICIES)} (or None for the "
            f"format's default), got {duplicates!r}"
        )
    path = Path(path)
    data = read_source(path, what="run")
    first = _first_data_line(data).lstrip()
    if looks_like_rank_file(path, data):
        try:
            return read_rank_file(path, name=name, duplicates=duplicates or "first", content=data)
        except FormatError:
            # a TREC run whose first query id starts with byte 0x80 (pickle's PROTO opcode)
            if path.suffix.lower() in {*_PICKLE_SUFFIXES, ".json"} or len(first.split()) != 6:
                raise
    if path.suffix == ".json" or first.startswith(b"{"):
        return read_json_run(path, name=name, duplicates=duplicates or "error", content=data)
    box = [data]  # the reader drops the bytes once parsed (a run file's size off the peak)
    del data
    return read_run_owned(
        path,
        box,
        name=name,
        keep_rank=keep_rank,
        trailing=trailing,
        duplicates=duplicates or "error",
    )


def read_document_qrels(path: str | Path, *, name: str | None = None) -> Qrels:
    """Read qrels from a TREC qrels file, a BEIR TSV (header row) or a JSON file (path read once)."""
    path = Path(path)
    data = read_source(path, what="qrels")
    first = _first_data_line(data)
    if path.suffix == ".json" or first.lstrip().startswith(b"{"):
        return read_json_qrels(path, name=name, content=data)
    if path.suffix == ".tsv" or (
        b"\t" in first and len(first.split(b"\t")) == 3 and len(first.split()) != 4
    ):  # a BEIR row has 3 tab-separated fields; a TREC qrels line 4 fields
        return read_beir_qrels(path, name=name, content=data)
    return read_trec_qrels(path, name=name, content=data)
