"""``bm25:memory=SIZE``: the BM25 index layout chosen from a memory budget.

The budget is the peak resident memory (RSS) of the process that builds and searches the
index. At index time the peak of the single bm25s index is estimated from the corpus (its number
of documents and its size in bytes); if it fits the budget, the single index is built (the very
index, and run, of plain ``bm25``); otherwise the sharded index
(:mod:`nuggetbench.retrieval.bm25.sharded`) with the largest ``shard_docs`` whose estimated peak
fits (rounded down to a multiple of 1,000 documents when that still fits); if no shard size fits,
a :class:`~nuggetbench.errors.SpecError` names the smallest budget that would.

**Plain ``bm25``** (no ``memory=``, no ``shard_docs``; methods ``lucene``, ``robertson``,
``atire``) is planned the same way under a default budget (:func:`plan_default`):
:data:`DEFAULT_BUDGET` (2 GiB), or half of :func:`available_memory` when that is less. A corpus
whose single index is estimated under it keeps the single index (up to about 180 MB of
``corpus.jsonl``, some 600,000 passages of 300 bytes); a larger one gets the sharded index with
the largest shards that fit, exactly what ``bm25:memory=2G`` builds. Why 2 GiB and not all the
free memory: beyond that size the sharded build is not slower than the single one but bounded
(2M synthetic passages: the single index peaked at 5,144 MB in 179 s, ``memory=2G`` at 953 MB in
126 s, the same run), so a larger budget would only cost memory. Where nothing fits (a machine
with little free memory), the cheapest layout is taken with a warning rather than an error: the
default never refuses a corpus. The run is the same whatever the layout (both indexes cut ties
at the k-th score by doc id), so the choice changes memory and time, never results.

**Corpus size.** ``corpus_bytes`` is the size of the corpus as BEIR JSON lines: for a file-backed
corpus (``JsonlCorpus``, ``IndexedJsonlCorpus``) the file's size (``stat``, nothing read); for
any other corpus the mean over its first :data:`SAMPLE_DOCS` documents of ``title + " " + text``
in UTF-8 plus the id plus :data:`LINE_OVERHEAD` bytes of JSON framing, times the number of
documents. The number of documents is ``len(corpus)`` (a ``JsonlCorpus`` builds its id index,
which indexing builds anyway).

**Cost model** (bytes; *B* = corpus bytes, *n* = documents, *S* = ``shard_docs``)::

    single  = base + single_per_byte * B
    sharded = base + per_doc * n + max(sharded_per_shard_byte * S * B / n,
                                       sharded_search_base + sharded_per_shard * ceil(n / S)
                                       + sharded_search_per_byte * S * B / n)

``per_doc`` depends on how the corpus holds its ids: ``sharded_per_doc_mapped`` for an
``IndexedJsonlCorpus`` (ids and line offsets in memory-mapped arrays: what ``read_beir_folder``
gives for a ``corpus.jsonl`` of 256 MiB or more), ``sharded_per_doc`` for any other corpus
(``JsonlCorpus`` keeps every id in a Python list and a dict; an ``InMemoryCorpus`` its documents).
The sharded peak is the larger of the build's (one chunk's texts and token lists, one shard's
COO arrays: grows with the shard) and the search's (each shard's ``indptr`` over the vocabulary
and up to *k* candidates per query and shard held until the merge: grows with the number of
shards; and the pages of the shard being searched that the queries read, about one byte a corpus
byte of that shard: the search maps one shard at a time and unmaps it when done). So shards
cannot be made arbitrarily small: the least sharded peak is where the two cross
(:meth:`CostModel.cheapest_shard`), and a budget below it is refused.

Calibrated with ``benchmarks/scale.py`` (synthetic passages of 35-65 words from a Zipfian
vocabulary of 200,000 word forms, 302 bytes a ``corpus.jsonl`` line; the whole process's peak RSS
from ``/usr/bin/time``: build from a cold store with the numpy backend, then 1,000 queries at
k=100 and the run written; 2-core machine, 26-27 Nov 2026). Peak RSS in MiB, estimate of
:data:`COST_MODEL` beside it; ids ``list`` = ``JsonlCorpus`` (engines ``single``, ``sharded``),
``mmap`` = ``IndexedJsonlCorpus`` built cold in the process (engines ``sharded-mm``, ``memory``):

==============================================================  =====  =======  ========  =====
command (``python benchmarks/scale.py``)                        ids    peak     estimate  ratio
==============================================================  =====  =======  ========  =====
``--n 200000 --engines single``                                 list   655.2    765       1.17
``--n 100000 --engines single``                                 list   408.3    462       1.13
``--n 1000000 --engines single``                                list   2,540    3,191     1.26
``--n 200000 --engines sharded --shard-docs 100000``            list   589.6    737       1.25
``--n 200000 --engines sharded --shard-docs 50000``             list   426.8    470       1.10
``--n 200000 --engines sharded --shard-docs 20000``             list   306.0    330       1.08
``--n 200000 --engines sharded --shard-docs 6000``              list   342.3    362       1.06
``--n 200000 --engines sharded --shard-docs 2000``              list   427.1    460       1.08
``--n 100000 --engines sharded --shard-docs 20000``             list   281.0    301       1.07
``--n 1000000 --engines sharded --shard-docs 100000``           list   768      913       1.19
``--n 1000000 --engines sharded-mm --shard-docs 100000``        mmap   631.5    740       1.17
``--n 5000000 --engines sharded-mm --shard-docs 100000``        mmap   651.7    925       1.42
``--n 8800000 --engines memory --memory 8G`` (1,423,000)        mmap   4,802    8,189     1.71
``--n 1000000 --engines sharded-mm --shard-docs 200000``        mmap   954      1,274     1.34
``--n 1000000 --engines memory --memory 1.5G`` (164,000)        mmap   993      1,082     1.09
``--n 2000000 --engines default,memory --memory 2G`` (335,000)  mmap   1,397    2,044     1.46
the imports alone (``BM25``, ``JsonlCorpus``)                          114.8
==============================================================  =====  =======  ========  =====

(corpora of 30.2 MB, 60.4 MB, 0.30 GB, 0.61 GB, 1.52 GB and 2.67 GB; the 8.8M and 2M runs' shard
sizes, in brackets, were chosen by this model (the 2M row: the highest of six runs, plain
``bm25`` and ``memory=2G`` alternately, ``--repeat 3``); peaks printed in GiB are times 1,024;
``tests/test_bm25_memory.py`` holds the same table and checks every estimate against it.) The
sharded rows were measured on 27 Nov 2026 with the search mapping one shard at a time, except the
last two, which are build-bound and were measured the day before (the search's change does not
move a build-bound peak: the 1M ``sharded-mm`` row was 632 MiB before it and 631.5 after).
Where the peak falls: the scale script prints the peak through the build and the anonymous and
file-backed RSS at the end; at 1M passages with shards of 100,000 the peak is the build's, and
0.11 GiB of mapped files remain at the end (0.41 GiB when the search kept every shard mapped);
at 5M the whole run now peaks at 651.7 MiB (1,946 MiB before), in the build.

Fitted: single, 8.55 bytes a corpus byte above 162 MiB (the 100,000- and 200,000-passage
corpora; at 1M the line gives 2,630 MiB, 4% above the measured peak). Sharded: the build, 11.45
bytes a byte of one shard between 50,000 and 100,000 at 200,000 passages and 11.15 between
100,000 and 200,000 at 1M, but 16.8 to cover the ``memory=1.5G`` run at 1M (993 MiB at 164,000,
above the 954 MiB that 200,000 gave); the reader and the index's ids, 40 bytes a document with
mapped ids and 195 with a list and a dict (two 5M runs differed by 747 MiB, the two 1M runs by
136 MiB); the search, 1.30 MiB a shard and 92 MiB of constant (shards of 2,000 against 6,000
documents at 200,000 passages) and 1.0 byte a corpus byte of the mapped shard. :data:`COST_MODEL`
rounds each figure up by about 10-15% (single: the earlier 23%), so every estimate above is 6-71%
over the measured peak. The build's 18.5 bytes a shard byte errs most on large shards: the 8.8M
run's shards of 1,423,000 documents (432 MB of corpus each) took about 10.3 bytes a shard byte
(4.69 GiB in all), so ``memory=8G`` there peaked at 4.69 GiB.

Before the search mapped one shard at a time, the pages of every shard it had read stayed in the
RSS (about one byte a corpus byte): a search alone over 5M passages (shards of 100,000) peaked
at 1,962 MiB and now at 394 MiB, over 8.8M (shards of 459,000) at about 3 GiB and now at 505 MiB
(``benchmarks/bm25_search_memory.py`` on a warm index, 27 Nov 2026). 33 million passages of 300 bytes (MIRACL
English) with mapped ids now fit ``memory=8G`` (shards of about 1.2M documents, estimate 8.0 GiB;
the least budget is about 2.2 GiB); with ids in a list and a dict the per-document cost alone is
about 7 GiB.

Not modelled: a vocabulary much larger than 200,000 forms (the vocabulary dict and each shard's
``indptr`` grow with it), passages far from 300 bytes, and searches far from 1,000 queries at
k=100 (*Q* queries at depth *k* hold about ``12 * Q * k`` bytes of candidates a shard: 7,000
queries at k=1,000 add 84 MB a shard); leave headroom for those.
"""

from __future__ import annotations

import logging
import math
import re
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from nuggetbench.data import Corpus, JsonlCorpus
from nuggetbench.data.formats.jsonl_index import IndexedJsonlCorpus
from nuggetbench.errors import SpecError

__all__ = [
    "COST_MODEL",
    "CostModel",
    "DEFAULT_BUDGET",
    "MemoryPlan",
    "available_memory",
    "default_budget",
    "format_size",
    "parse_size",
    "plan_default",
    "plan_memory",
]

log = logging.getLogger(__name__)

KIB = 1024
MIB = 1024**2
GIB = 1024**3

#: documents read to estimate the size of a corpus that is not a file
SAMPLE_DOCS = 2000
#: bytes of a BEIR JSON line beyond the id and the text (``{"_id": "", "title": "", "text": ""}``)
LINE_OVERHEAD = 40

#: the budget of plain ``bm25`` (no ``memory=``), unless half the available memory is less
DEFAULT_BUDGET = 2 * GIB
#: the share of the available memory that plain ``bm25`` may plan for
AVAILABLE_SHARE = 0.5

_UNITS = {"": 1, "k": KIB, "m": MIB, "g": GIB, "t": 1024**4}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*([kmgt]?)(i?b)?\s*$", re.IGNORECASE)
_EXAMPLE = "e.g. memory=4G, memory=800M, memory=1.5GiB, or a number of bytes"


def parse_size(value: Any, *, name: str = "memory") -> int:
    """A size in bytes from ``4G``, ``800M``, ``512KiB``, ``1.5g``, ``1048576`` (an int or a
    string); K, M, G, T (with or without ``iB``/``B``) are powers of 1024, case-insensitive.

    Raises:
        SpecError: not a size, or not positive (names the option and gives an example).
    """
    if isinstance(value, bool):
        match = None
    elif isinstance(value, int):
        if value > 0:
            return value
        match = None
    else:
        match = _SIZE.match(str(value))
    if match is None:
        raise SpecError(
            f"bm25: option {name!r} takes a memory size, got {name}={value}; {_EXAMPLE} "
            "(K, M, G are powers of 1024)"
        )
    number, unit = float(match.group(1)), match.group(2).lower()
    size = int(number * _UNITS[unit])
    if size <= 0:
        raise SpecError(f"bm25: {name}={value} is not a positive size; {_EXAMPLE}")
    return size


def format_size(n: float, *, up: bool = False) -> str:
    """*n* bytes as a spec size (``300``, ``64K``, ``512M``, ``1.3G``); rounded up (to the next
    KiB or MiB, or the next tenth of a GiB) when *up*, else to the nearest."""
    rnd = math.ceil if up else round
    if n < MIB:
        return f"{max(int(rnd(n / KIB)), 1)}K" if n >= KIB else str(max(int(rnd(n)), 1))
    if n < GIB:
        return f"{max(int(rnd(n / MIB)), 1)}M"
    tenths = rnd(n / GIB * 10)
    return f"{tenths // 10}G" if tenths % 10 == 0 else f"{tenths / 10:.1f}G"


@dataclass(frozen=True)
class CostModel:
    """The constants of the peak-memory model (see the module docstring).

    Attributes:
        base: bytes of the interpreter, numpy, bm25s and nuggetbench, and the constant part of
            an index.
        single_per_byte: peak bytes of the single index per corpus byte.
        sharded_per_doc: peak bytes of the sharded index per corpus document, whatever the
            shard size, when the corpus keeps its ids in Python objects (``JsonlCorpus``: a
            list and a dict; an ``InMemoryCorpus``), plus the ids the index writes.
        sharded_per_doc_mapped: the same when the ids are memory-mapped
            (``IndexedJsonlCorpus``: only the pages of its id and offset arrays that are read).
        sharded_per_shard_byte: peak bytes per corpus byte of one shard (the build: one chunk's
            texts and token lists, one shard's COO arrays).
        sharded_search_base: the search's constant bytes (the queries, the vocabulary).
        sharded_per_shard: the search's bytes per shard (each shard's ``indptr`` over the
            vocabulary; up to *k* candidates per query and shard until the merge).
        sharded_search_per_byte: the search's bytes per corpus byte of one shard: the pages
            of the shard being searched (scores and document numbers, about one byte a corpus
            byte) that the queries read, which count in the RSS while the shard is mapped (the
            search maps one shard at a time).
        min_shard_docs: the smallest shard the planner uses (fewer only for a smaller corpus).
        round_to: ``shard_docs`` is rounded down to a multiple of this (when above it and the
            rounded size still fits), so a slightly different corpus keeps the same layout.
    """

    base: int
    single_per_byte: float
    sharded_per_doc: float
    sharded_per_shard_byte: float
    sharded_search_base: int = 0
    sharded_per_shard: int = 0
    sharded_per_doc_mapped: float | None = None
    sharded_search_per_byte: float = 0.0
    min_shard_docs: int = 1000
    round_to: int = 1000

    def single(self, n_docs: int, corpus_bytes: int) -> int:
        """Estimated peak bytes of the single index."""
        return int(self.base + self.single_per_byte * corpus_bytes)

    def _build(self, n_docs: int, corpus_bytes: int, shard_docs: int) -> float:
        return self.sharded_per_shard_byte * corpus_bytes / max(n_docs, 1) * shard_docs

    def _search(self, n_docs: int, corpus_bytes: int, shard_docs: int) -> float:
        shards = math.ceil(n_docs / shard_docs)
        # the search maps one shard at a time: its pages, not the whole index's
        mapped = self.sharded_search_per_byte * corpus_bytes * min(shard_docs, n_docs) / n_docs
        return self.sharded_search_base + self.sharded_per_shard * shards + mapped

    def per_doc(self, mapped_ids: bool = False) -> float:
        """Bytes per document of the corpus reader and the index's ids: ``sharded_per_doc``, or
        ``sharded_per_doc_mapped`` (when set) for a corpus with memory-mapped ids."""
        if mapped_ids and self.sharded_per_doc_mapped is not None:
            return self.sharded_per_doc_mapped
        return self.sharded_per_doc

    def sharded(
        self, n_docs: int, corpus_bytes: int, shard_docs: int, *, mapped_ids: bool = False
    ) -> int:
        """Estimated peak bytes of the sharded index with shards of *shard_docs* documents;
        *mapped_ids*: the corpus keeps its ids memory-mapped (``IndexedJsonlCorpus``)."""
        shard_docs = max(min(shard_docs, n_docs), 1)
        build = self._build(n_docs, corpus_bytes, shard_docs)
        search = self._search(n_docs, corpus_bytes, shard_docs)
        return int(self.base + self.per_doc(mapped_ids) * n_docs + max(build, search))

    def cheapest_shard(self, n_docs: int, corpus_bytes: int) -> int:
        """The shard size of the smallest sharded estimate, within ``[min_shard_docs, n_docs]``:
        the build's part grows with the shard size, the search's shrinks with it, so the least
        peak is where they cross (found by bisection)."""
        lo = min(self.min_shard_docs, n_docs)
        hi = n_docs
        if lo < 1:
            return 1
        while lo < hi:  # the smallest size whose build part reaches the search part
            mid = (lo + hi) // 2
            if self._build(n_docs, corpus_bytes, mid) >= self._search(n_docs, corpus_bytes, mid):
                hi = mid
            else:
                lo = mid + 1
        near = {max(lo - 1, min(self.min_shard_docs, n_docs)), lo}
        return min(sorted(near), key=lambda c: self.sharded(n_docs, corpus_bytes, c))


#: The calibrated model (measurements and fits in the module docstring): fitted -> used.
COST_MODEL = CostModel(
    base=160 * MIB,  # imports 115 MiB; the single index's intercept 162 MiB
    single_per_byte=10.5,  # 8.55
    sharded_per_doc=230.0,  # 195 (ids in a list and a dict)
    sharded_per_doc_mapped=48.0,  # 40 (ids memory-mapped)
    sharded_per_shard_byte=18.5,  # 16.8 (11.2-11.5 between runs of one corpus size)
    sharded_search_base=105 * MIB,  # 92 MiB
    sharded_per_shard=3 * MIB // 2,  # 1.30 MiB (1,000 queries at k=100)
    sharded_search_per_byte=1.1,  # 1.0 (one shard's scores and document numbers, mapped)
)


@dataclass(frozen=True)
class MemoryPlan:
    """The layout chosen for a budget: ``engine`` ``single`` or ``sharded`` with ``shard_docs``
    (0 for single), the ``estimate`` of its peak in bytes, the single index's estimate, the
    ``budget``, and the corpus figures the estimates came from (``ids_mapped``: the corpus
    keeps its ids memory-mapped, an ``IndexedJsonlCorpus``)."""

    engine: str
    shard_docs: int
    estimate: int
    single_estimate: int
    budget: int
    n_docs: int
    corpus_bytes: int
    corpus_bytes_from: str
    ids_mapped: bool = False
    chosen_by: str = "memory="
    available: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def describe(self) -> str:
        what = "the single index"
        if self.engine == "sharded":
            what = f"the sharded index, shard_docs={self.shard_docs}"
        budget = f"memory={format_size(self.budget)}"
        if self.chosen_by == "default":
            free = "unknown" if self.available is None else format_size(self.available)
            budget = f"default budget {format_size(self.budget)} (available memory {free})"
        return (
            f"bm25 {budget}: {what} (estimated peak "
            f"{format_size(self.estimate)}; single index {format_size(self.single_estimate)}; "
            f"{self.n_docs} documents, {format_size(self.corpus_bytes)} from {self.corpus_bytes_from}"
            f"{', ids memory-mapped' if self.ids_mapped else ''})"
        )


def corpus_bytes(corpus: Corpus, n_docs: int) -> tuple[int, str]:
    """The size of *corpus* as BEIR JSON lines and where it came from (``file size`` or
    ``a sample of N documents``)."""
    if isinstance(corpus, JsonlCorpus):
        try:
            return Path(corpus.path).stat().st_size, "file size"
        except OSError:
            pass
    total = seen = 0
    for doc in corpus.iter_documents():
        total += len(doc.full_text.encode("utf-8")) + len(doc.doc_id.encode("utf-8"))
        total += LINE_OVERHEAD
        seen += 1
        if seen >= SAMPLE_DOCS:
            break
    if seen == 0:
        return 0, "an empty corpus"
    if seen >= n_docs:
        return total, f"all {seen} documents"
    return int(math.ceil(total / seen * n_docs)), f"a sample of {seen} documents"


def available_memory() -> int | None:
    """Bytes this process could still use: ``MemAvailable`` of ``/proc/meminfo``, or less when a
    cgroup (v2 ``memory.max``, v1 ``memory.limit_in_bytes``) limits the process further; ``None``
    where neither can be read (not Linux)."""
    found: list[int] = []
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    found.append(int(line.split()[1]) * KIB)
    except (OSError, ValueError, IndexError):
        pass
    for limit, usage in (
        ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
        (
            "/sys/fs/cgroup/memory/memory.limit_in_bytes",
            "/sys/fs/cgroup/memory/memory.usage_in_bytes",
        ),
    ):
        try:
            cap = Path(limit).read_text().strip()
            if cap != "max" and int(cap) < 1 << 60:
                found.append(max(int(cap) - int(Path(usage).read_text().strip()), 0))
                break
        except (OSError, ValueError):
            continue
    return min(found) if found else None


def default_budget(available: int | None) -> int:
    """The budget of plain ``bm25``: :data:`DEFAULT_BUDGET` (2 GiB), or :data:`AVAILABLE_SHARE`
    of *available* bytes when that is less (``None``: unknown, the 2 GiB)."""
    if available is None:
        return DEFAULT_BUDGET
    return max(min(DEFAULT_BUDGET, int(available * AVAILABLE_SHARE)), 1)


def plan_default(
    corpus: Corpus, *, available: int | None = None, model: CostModel | None = None
) -> MemoryPlan:
    """The layout of plain ``bm25`` for *corpus*: :func:`plan_memory` under
    :func:`default_budget` of *available* bytes (``None``: :func:`available_memory` now), so a
    corpus whose single index would peak above 2 GiB (about 180 MB of ``corpus.jsonl``, 600,000
    passages of 300 bytes) or above half the free memory is sharded. Never refuses: when no
    layout fits, the cheapest one is taken (logged as a warning)."""
    free = available_memory() if available is None else available
    budget = default_budget(free)
    plan = plan_memory(corpus, budget, model, cheapest_if_none_fits=True)
    if plan.estimate > budget:
        log.warning(
            "bm25: no index layout fits the default budget %s (%s available); using the cheapest, "
            "estimated at %s; set bm25:memory=SIZE to choose",
            format_size(budget),
            "unknown" if free is None else format_size(free),
            format_size(plan.estimate),
        )
    return replace(plan, chosen_by="default", available=free)


def plan_memory(
    corpus: Corpus,
    budget: int,
    model: CostModel | None = None,
    *,
    cheapest_if_none_fits: bool = False,
) -> MemoryPlan:
    """The index layout for *corpus* within *budget* bytes (see the module docstring).

    Raises:
        SpecError: neither the single index nor any shard size fits (the message names the
            smallest budget that would: the cheapest layout's estimate), unless
            *cheapest_if_none_fits*: then the layout of the least estimate is returned.
    """
    model = model or COST_MODEL
    n = len(corpus)
    size, source = corpus_bytes(corpus, n)
    mapped = isinstance(corpus, IndexedJsonlCorpus)
    single = model.single(n, size)
    common = {
        "single_estimate": single,
        "budget": budget,
        "n_docs": n,
        "corpus_bytes": size,
        "corpus_bytes_from": source,
        "ids_mapped": mapped,
    }
    if single <= budget or n == 0:
        return MemoryPlan("single", 0, single, **common)
    low = model.cheapest_shard(n, size)
    need = model.sharded(n, size, low, mapped_ids=mapped)
    if need > budget and cheapest_if_none_fits:
        if single <= need:
            return MemoryPlan("single", 0, single, **common)
        return MemoryPlan("sharded", low, need, **common)
    if need > budget:
        raise SpecError(
            f"bm25: memory={format_size(budget)} is too small for this corpus ({n} documents, "
            f"{format_size(size)}): the single index needs about {format_size(single)}, the "
            f"sharded index at least {format_size(need)} (shards of {low} documents); "
            f"use memory={format_size(min(need, single), up=True)} or more"
        )

    def fits(shard_docs: int) -> bool:
        return model.sharded(n, size, shard_docs, mapped_ids=mapped) <= budget

    # the largest fitting shard (fewest shards, fastest search): the estimate grows with the
    # shard size above `low`, so bisect between `low` (fits) and n
    lo, hi = low, n
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid - 1)
    shard_docs = lo
    rounded = shard_docs - shard_docs % model.round_to
    if shard_docs > model.round_to and rounded >= low and fits(rounded):
        shard_docs = rounded
    estimate = model.sharded(n, size, shard_docs, mapped_ids=mapped)
    return MemoryPlan("sharded", shard_docs, estimate, **common)
