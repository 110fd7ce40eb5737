"""One exception tree for nuggetbench.

Every message says what went wrong, where (file, line, value) and what to do.
"""

from __future__ import annotations

from pathlib import Path


class NuggetbenchError(Exception):
    """Base class of every error nuggetbench raises on purpose."""


class InputError(NuggetbenchError, ValueError):
    """Bad user input: a malformed file, an unknown name, inconsistent values."""


class FormatError(InputError):
    """A file does not follow its format.

    Args:
        path: the file (or ``"<string>"``).
        line: 1-based line number, or ``None`` when the fault is not on one line.
        message: what is wrong, with the offending value, and what to do.
    """

    def __init__(self, path: str | Path | None, line: int | None, message: str):
        self.path = str(path) if path is not None else None
        self.line = line
        self.message = message
        where = ""
        if self.path is not None:
            where = self.path + (f", line {line}" if line is not None else "") + ": "
        elif line is not None:
            where = f"line {line}: "
        super().__init__(where + message)


class DuplicateError(InputError):
    """The same key appears twice where it must be unique (e.g. a (query, doc) pair in a run).

    Args:
        message: what repeats, where, and what to do.
        key: the repeated key (e.g. ``(query_id, doc_id)``), for a reader that names the line.
    """

    def __init__(self, message: str, *, key: object = None):
        super().__init__(message)
        self.key = key


class SpecError(InputError):
    """A specification string (retriever spec, chunker spec, measure) cannot be parsed."""


class UnknownNameError(SpecError, KeyError):
    """An unknown measure, dataset, retriever, profile or option; the message suggests the nearest."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class DatasetError(NuggetbenchError):
    """A dataset cannot be found, downloaded, verified or loaded."""


class DownloadError(DatasetError):
    """A download failed or is forbidden (offline); the message names the folder to fill."""


class ChecksumError(DownloadError):
    """A downloaded file does not match its published checksum; it was not kept."""


class UnsafeArchiveError(DatasetError):
    """An archive member would be written outside the target folder."""


class IdMismatchError(InputError):
    """Queries of a run and of the qrels do not overlap (or differ only by type/whitespace)."""


class ModelError(NuggetbenchError):
    """A model cannot be found or loaded, or is inconsistent with a cache."""


class CacheError(NuggetbenchError):
    """A cached artefact is inconsistent with what is being asked for."""


class LLMError(NuggetbenchError):
    """An LLM endpoint cannot be reached, refuses the request, or keeps answering badly."""


class BudgetError(LLMError):
    """A build would exceed the call or cost budget of its plan (answers so far are cached)."""


class StageFailedError(LLMError):
    """A build stage got unusable LLM answers: it was not recorded as done and the unusable answers
    were not cached, so running the build again re-sends exactly the failed requests."""


class OutputError(NuggetbenchError):
    """Results were computed but could not be written (a full disk, a read-only folder); the
    message names what could not be saved and where."""


class EvaluationWarning(UserWarning):
    """A finding about the judgments and run that may make scores misleading (judged queries
    missing from the run, ids that never match...): ``nb.evaluate`` issues one per warning
    finding with :func:`warnings.warn`, as ``nuggetbench evaluate`` prints them."""


def suggest(name: str, choices: list[str] | tuple[str, ...] | set[str]) -> str:
    """Return `` Did you mean 'X'?`` for the closest of *choices* to *name*, or ``""``."""
    import difflib

    close = difflib.get_close_matches(name, list(choices), n=1, cutoff=0.5)
    if not close:
        lowered = {c.lower(): c for c in choices}
        close = difflib.get_close_matches(name.lower(), list(lowered), n=1, cutoff=0.5)
        close = [lowered[c] for c in close]
    return f" Did you mean {close[0]!r}?" if close else ""
