"""What a BM25 index layout reads from its retriever, and how an external engine registers.

The BM25 package reads one way (``tests/test_layering.py`` holds it): tokenization and scoring
at the bottom (:mod:`.tokens`, :mod:`.scoring`, :mod:`.topk`, this module), the index layouts
above them (:mod:`.index`: the single bm25s index; :mod:`.shard_build` and :mod:`.sharded`: the
sharded one; :mod:`.memory`: the planner between the two; :mod:`.lucene`: Lucene through
Pyserini; any other engine's module), and on top :mod:`.retriever`, which chooses among them.
No layout imports the retriever: each reads the retriever's options through :class:`Settings`.

**An external engine** (``bm25:backend=NAME``: Lucene, PISA) is one :class:`Engine` record in
its module, named in the retriever's ``ENGINES`` table; the retriever then refuses the options
the engine does not honour, checks that it is installed, and asks the record for the run's
``params``, the cache identity's engine ``versions``, and the index (:meth:`Engine.build`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from nuggetbench.data import Corpus
from nuggetbench.retrieval.protocols import IndexBase

__all__ = ["Engine", "Settings"]


class Settings(Protocol):
    """What a layout reads from the BM25 retriever that built it: its canonical ``name``, the
    ``params`` that change its results, ``options`` (the ``BM25Options``) and each option as an
    attribute (``k1``, ``b``, ``method``, ``delta``, ``stemmer``, ``stopwords``, ``analyzer``,
    ``threads``, ``backend``, ``cache``, ``fields``...), its ``tokenizer`` (a
    :class:`~.tokens.Tokenizer`), :meth:`tokenize` (queries) and :meth:`plan_meta` (what the
    memory plan adds to an index's ``meta.json``)."""

    name: str
    options: Any
    k1: float
    b: float
    method: str
    delta: float
    stemmer: str
    stopwords: str
    analyzer: str
    threads: int
    backend: str
    cache: bool
    fields: str

    @property
    def params(self) -> dict[str, Any]: ...

    @property
    def tokenizer(self) -> Any: ...

    def plan_meta(self, corpus: Corpus) -> dict[str, Any]: ...

    def tokenize(
        self, texts: list[str], *, return_ids: bool = False, show_progress: bool = False
    ) -> Any: ...


@dataclass(frozen=True)
class Engine:
    """An index layout built and searched by another engine (``bm25:backend=NAME``).

    Attributes:
        name: the ``backend`` value (``lucene``, ``pisa``).
        options: the ``BM25Options`` fields it honours; any other option that differs from its
            default is refused (one :class:`~nuggetbench.errors.SpecError` naming them all).
        available: whether the engine is installed (asked after the options are checked).
        extra: the install hint of the refusal when it is not
            (``"pip install 'nuggetbench[lucene]'"``).
        requires: what it needs, for that refusal (``"Pyserini and Java"``).
        about: what it is, for the refusal of an option (``"uses Lucene's BM25 and English
            analyzer ..."``).
        params: ``(settings) -> dict``: the options that change its results (``results.json``,
            the canonical name).
        versions: ``(settings) -> dict``: the engine's versions, part of the run cache's
            identity (another engine version does not reuse cached runs).
        build: ``(settings, corpus, *, show_progress) -> index``: the index of the corpus
            (built, or loaded from the engine's own artifact), whose ``search`` gives a Run.
        memory_note: added to the refusal of ``memory=`` (how the engine's memory is set).
        own: the options only this engine honours (Lucene's ``fields``): refused, when they
            differ from their defaults, with any other backend.
        own_values: ``(option, values)`` pairs: values of a shared option that only this engine
            has (PISA's ``terrier`` and ``lucene`` stop lists), refused with any other backend.
        check: ``(options) -> options``: validates the engine's own values of the options it
            honours (a stemmer or stop-word list of its own) and returns them, canonical;
            raises :class:`~nuggetbench.errors.SpecError`. ``None``: nothing to check.
    """

    name: str
    options: tuple[str, ...]
    available: Callable[[], bool]
    extra: str
    requires: str
    about: str
    params: Callable[[Settings], dict[str, Any]]
    versions: Callable[[Settings], dict[str, Any]]
    build: Callable[..., IndexBase]
    memory_note: str = ""
    own: tuple[str, ...] = ()
    own_values: tuple[tuple[str, tuple[str, ...]], ...] = ()
    check: Callable[[Any], Any] | None = None

    def index(self, settings: Settings, corpus: Corpus, *, show_progress: bool) -> IndexBase:
        """:attr:`build` of *corpus* with *settings*."""
        return self.build(settings, corpus, show_progress=show_progress)
