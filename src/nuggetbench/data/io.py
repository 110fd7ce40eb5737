"""Format sniffing: read a run or qrels file whatever its format."""

from __future__ import annotations

from pathlib import Path

from ..errors import InputError
from .beir import read_beir_qrels, read_json_qrels, read_json_run
from .qrels import Qrels
from .rankfile import is_rank_file, read_rank_file
from .run import DUPLICATE_POLICIES, Run
from .trec import read_qrels, read_run


def _first_data_line(path: Path) -> str:
    import gzip

    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as fh:  # type: ignore[operator]
        for line in fh:
            if line.strip() and not line.startswith("#"):
                return line
    return ""


def load_run(
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

    *keep_rank* keeps a TREC file's rank column as ``run.input_ranks`` (JSON runs have none).
    *duplicates* is what a (query, doc) pair listed twice does: ``"error"`` or ``"first"`` (the
    first occurrence wins, with a warning); ``None`` (default): each format's own default, i.e.
    ``"first"`` for rank files (BIRCO's published ones repeat documents) and ``"error"`` for TREC
    and JSON runs (trec_eval refuses them).

    Raises:
        InputError: the file does not exist, or *duplicates* is not ``None``/``"error"``/``"first"``.
    """
    path = Path(path)
    if not path.exists():
        raise InputError(f"run file {path} does not exist")

    if duplicates not in (None, *DUPLICATE_POLICIES):
        raise InputError(
            f"duplicates must be one of {', '.join(DUPLICATE_POLICIES)} (or None for the "
            f"format's default), got {duplicates!r}"
        )
    if is_rank_file(path):
        return read_rank_file(path, name=name, duplicates=duplicates or "first")
    first = _first_data_line(path).lstrip()
    if path.suffix == ".json" or first.startswith("{"):
        return read_json_run(path, name=name, duplicates=duplicates or "error")
    return read_run(
        path, name=name, keep_rank=keep_rank, trailing=trailing, duplicates=duplicates or "error"
    )


def load_qrels(path: str | Path, *, name: str | None = None) -> Qrels:
    """Read qrels from a TREC qrels file, a BEIR TSV (header row) or a JSON file."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"qrels file {path} does not exist")
    first = _first_data_line(path)
    if path.suffix == ".json" or first.lstrip().startswith("{"):
        return read_json_qrels(path, name=name)
    if path.suffix == ".tsv" or "\t" in first and len(first.rstrip("\r\n").split("\t")) == 3:
        return read_beir_qrels(path, name=name)
    return read_qrels(path, name=name)
