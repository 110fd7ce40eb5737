"""The table of ``benchmarks/scale.py``: medians per engine, ratios, the load at each round.

The scale table, for whatever engines ran (plain ``bm25`` is the ``default`` engine; ``lucene``
and ``pisa`` the others): wall time of the whole process, index time, search time, queries/s,
peak RSS (the ``/usr/bin/time`` peak of the engine's process and, beside it, the peak of the sum
over its process tree, worker processes included, sampled every 0.1 s), the CPU seconds of the
tree (user + system, workers included: steadier than the wall on a shared machine), and the
ratios of
``default`` to each other engine, beside the issue's goals. Also the tree-RSS sampler and the
load reader the runs use.
"""

from __future__ import annotations

import os
import statistics
import threading
import time
from pathlib import Path

INDEX = "index (tokenize+score+save)"


def load_average() -> str:
    """``/proc/loadavg``'s 1-, 5- and 15-minute loads (``"?"`` where it cannot be read)."""
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def _children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(x) for x in text.split()]


def _rss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def tree_rss_kib(pid: int) -> int:
    """The resident memory of *pid* and all its descendants, summed (KiB; pages shared between
    them, such as libraries, count once per process: an upper bound)."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        total += _rss_kib(p)
        todo += _children(p)
    return total


class TreePeak:
    """Samples :func:`tree_rss_kib` of a process every *every* seconds in a thread; ``peak``
    is the largest sum seen (KiB)."""

    def __init__(self, pid: int, every: float = 0.1):
        self.pid, self.every, self.peak = pid, every, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, tree_rss_kib(self.pid))
            time.sleep(self.every)

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        return self.peak


GOALS = {
    "lucene": "goal: wall <= 0.8, search q/s >= 1",
    "pisa": "goal: index <= 1.5",
}


def _medians(rows: list[dict]) -> dict[str, float]:
    def med(values):
        values = [v for v in values if v == v]  # no NaN
        return statistics.median(values) if values else float("nan")

    return {
        "wall": med(r["wall_s"] for r in rows),
        "cpu": med(r.get("cpu_s", float("nan")) for r in rows),
        "index": med(r["stages"].get(INDEX, float("nan")) for r in rows),
        "search": med(r["stages"].get("search", float("nan")) for r in rows),
        "peak": med(r["peak_rss_gb"] for r in rows),
        "tree": med(r.get("tree_rss_gb", float("nan")) for r in rows),
        "n": len(rows),
    }


def print_table(rows: list[dict], engines: list[str], n_docs: int, n_queries: int) -> None:
    """The medians of every engine as a Markdown table, the load of every round, and the
    ratios of ``default`` (plain ``bm25``) to the other engines."""
    med = {e: _medians([r for r in rows if r["engine"] == e]) for e in engines}
    print(f"\n### {n_docs:,} passages, {n_queries:,} queries (medians of the rounds)\n")
    print(
        "| engine | wall | index | search | queries/s | peak RSS (process) | peak RSS (tree) "
        "| CPU (user+sys) |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for e in engines:
        m = med[e]
        qps = n_queries / m["search"] if m["search"] == m["search"] and m["search"] else 0
        print(
            f"| {e} | {m['wall']:.1f} s | {m['index']:.1f} s | {m['search']:.2f} s | "
            f"{qps:,.0f} | {m['peak']:.2f} GB | {m['tree']:.2f} GB | {m['cpu']:.1f} s |"
        )
    loads = [f"{r['engine']} [{r['repeat'] + 1}] {r.get('load', '?')}" for r in rows]
    print("\nload (1/5/15 min) before each run: " + "; ".join(loads))
    if "default" not in med:
        return
    d = med["default"]
    for other in engines:
        if other == "default":
            continue
        o = med[other]
        print(
            f"default / {other}: wall {d['wall'] / o['wall']:.2f}, index "
            f"{d['index'] / o['index']:.2f}, search q/s {o['search'] / d['search']:.2f}, "
            f"peak RSS {d['peak'] / o['peak']:.2f} (tree {d['tree'] / o['tree']:.2f})"
            + (f"   [{GOALS[other]}]" if other in GOALS else "")
        )


def cpus() -> str:
    """The CPUs this process may use, for the table's heading."""
    try:
        return f"{len(os.sched_getaffinity(0))} usable CPUs"
    except (AttributeError, OSError):
        return f"{os.cpu_count()} CPUs"
