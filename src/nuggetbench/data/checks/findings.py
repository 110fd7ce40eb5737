"""What a trap check finds: :class:`Finding`, typed (callers render it; nothing parses its
text), and the one logger of the checks."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

log = logging.getLogger("nuggetbench.data.checks")
"""The checks' logger (one for the package: ``nuggetbench evaluate`` quiets it and renders the
findings itself)."""

SEVERITIES = ("info", "warning")


@dataclass(frozen=True)
class Finding:
    """One check result, typed: callers render it, nothing parses its text.

    Attributes:
        severity: ``"info"`` or ``"warning"``.
        kind: a stable short name (``query_overlap``, ``no_overlap``, ``tiny_overlap``,
            ``query_id_format``, ``doc_id_format``, ``id_whitespace``, ``no_judged``,
            ``few_judged``, ``run_not_in_corpus``, ``judged_missing``,
            ``subset_keeps_judged``, ``rank_disagrees``, ``constant_scores``; the evaluation adds
            ``run_only_queries`` and ``missing_queries``).
        message: one line for people.
        counts: the numbers behind the message (``{"judged": 300, "in_run": 298, ...}``).

    ``level`` and ``code`` are the older names of *severity* and *kind*.

    Raises:
        ValueError: an unknown severity.
    """

    severity: str
    kind: str
    message: str
    counts: Mapping[str, int] = field(default_factory=dict, compare=False, hash=False)

    def __post_init__(self) -> None:
        if self.severity not in SEVERITIES:
            raise ValueError(f"finding severity must be one of {SEVERITIES}, got {self.severity!r}")

    @property
    def level(self) -> str:
        return self.severity

    @property
    def code(self) -> str:
        return self.kind

    @property
    def is_warning(self) -> bool:
        return self.severity == "warning"

    def __str__(self) -> str:
        return f"[{self.severity}] {self.message}"


_UNLOGGED: ContextVar[bool] = ContextVar("nuggetbench_checks_unlogged", default=False)


@contextmanager
def unlogged() -> Iterator[None]:
    """The checks run inside return their findings without logging them (in this context
    only: other threads and tasks still log), for a caller that reports them itself
    (``nb.evaluate`` issues each warning with :func:`warnings.warn`)."""
    token = _UNLOGGED.set(True)
    try:
        yield
    finally:
        _UNLOGGED.reset(token)


def emit(findings: list[Finding]) -> list[Finding]:
    if not _UNLOGGED.get():
        for f in findings:
            log.log(logging.WARNING if f.is_warning else logging.INFO, "%s", f.message)
    return findings


__all__ = ["Finding", "SEVERITIES", "emit", "log", "unlogged"]
