"""Peak memory of streaming a large hub-shaped corpus into the home, and of iterating it.

A synthetic MIRACL-shaped language ``miracl/sw`` is generated (in its own process) as the hub
ships it: ``docs-<i>.jsonl.gz`` shards of ``{"docid", "title", "text"}`` lines plus dev topics
and qrels TSVs. Then, each phase in a fresh process (so that ``ru_maxrss``, the peak resident
set size, belongs to that phase alone):

* ``baseline``: Python with nuggetbench, numpy and pyarrow imported (the floor);
* ``stream``:   ``load_dataset("miracl/sw")``: streams the shards into
  ``$NUGGETBENCH_HOME/miracl/sw/corpus.jsonl`` and builds the memory-mapped index;
* ``iterate``:  reload, iterate every document (``iter_documents``), every id, and look up
  10,000 random ids;
* ``jsonl_corpus``: for comparison, ``nuggetbench.data.JsonlCorpus`` on the same file (its
  index holds Python strings and a dict).

Peak RSS (``resource.getrusage``) and the peak of Python allocations (``tracemalloc``) are
printed, with the corpus size on disk. Run::

    python benchmarks/stream_corpus.py [--n 1000000] [--workdir /tmp/nb_stream]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

WORDS = [
    f"{a}{b}"
    for a in ("ka", "li", "mo", "pe", "su", "ta", "wa", "zi")
    for b in ("ba", "de", "fu", "go", "ni", "ra", "so", "tu", "vy", "xo")
]


def generate(data: Path, n: int, shard: int = 250_000) -> None:
    """Write the synthetic hub files: ~60-word passages, 100 judged dev queries."""
    rng = random.Random(7)
    folder = data / "miracl" / "sw"
    shards = folder / "miracl-corpus-v1.0-sw"
    shards.mkdir(parents=True, exist_ok=True)
    for start in range(0, n, shard):
        path = shards / f"docs-{start // shard}.jsonl.gz"
        with gzip.open(path, "wt", encoding="utf-8", compresslevel=1) as fh:
            for i in range(start, min(n, start + shard)):
                text = " ".join(rng.choice(WORDS) for _ in range(60))
                row = {"docid": f"{i // 8}#{i % 8}", "title": f"title {i // 8}", "text": text}
                fh.write(json.dumps(row) + "\n")
    topics = folder / "miracl-v1.0-sw" / "topics"
    qrels = folder / "miracl-v1.0-sw" / "qrels"
    topics.mkdir(parents=True, exist_ok=True)
    qrels.mkdir(parents=True, exist_ok=True)
    (topics / "topics.miracl-v1.0-sw-dev.tsv").write_text(
        "".join(f"{q}\t{rng.choice(WORDS)} {rng.choice(WORDS)}\n" for q in range(100))
    )
    (qrels / "qrels.miracl-v1.0-sw-dev.tsv").write_text(
        "".join(f"{q}\tQ0\t{rng.randrange(n) // 8}#0\t{q % 2}\n" for q in range(100))
    )


def peak() -> dict:
    return {"peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}


def phase(name: str) -> dict:
    """Run inside a child process; returns the measurements of one phase."""
    import numpy  # noqa: F401
    import pandas  # noqa: F401  (the data layer imports it on first use)
    import pyarrow  # noqa: F401
    from tqdm.auto import tqdm  # noqa: F401

    import nuggetbench  # noqa: F401
    from nuggetbench.data import read_trec_qrels as read_qrels
    from nuggetbench.datasets import load_dataset
    from nuggetbench.datasets.miracl import load as _warm  # noqa: F401  (imports out of the figure)

    del read_qrels
    tracemalloc.start()
    t0 = time.perf_counter()
    out: dict = {"phase": name}
    if name == "stream":
        ds = load_dataset("miracl/sw", show_progress=False)
        out["n_docs"] = len(ds.corpus)
        out["corpus_mb"] = round(Path(ds.metadata["corpus_file"]).stat().st_size / 2**20, 1)
        index = Path(ds.metadata["corpus_file"] + ".index")
        out["index_mb"] = round(sum(p.stat().st_size for p in index.iterdir()) / 2**20, 1)
    elif name == "iterate":
        ds = load_dataset("miracl/sw")
        n = sum(1 for _ in ds.corpus.iter_documents())
        ids = sum(1 for _ in ds.corpus)
        rng = random.Random(1)
        sample = [f"{rng.randrange(n) // 8}#{rng.randrange(8)}" for _ in range(10_000)]
        hits = sum(1 for d in sample if d in ds.corpus and ds.corpus[d].doc_id == d)
        out.update(n_docs=n, n_ids=ids, lookups_found=hits)
    elif name == "jsonl_corpus":
        from nuggetbench import home
        from nuggetbench.data import JsonlCorpus

        corpus = JsonlCorpus(home.home() / "miracl" / "sw" / "corpus.jsonl")
        out["n_docs"] = len(corpus)
        out["has_first"] = "0#0" in corpus
    out["seconds"] = round(time.perf_counter() - t0, 1)
    _, traced = tracemalloc.get_traced_memory()
    out["tracemalloc_peak_mb"] = round(traced / 2**20, 1)
    out.update(peak())
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_000, help="passages to generate")
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/nb_stream"))
    ap.add_argument("--phase", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.phase:
        print(json.dumps(phase(args.phase) if args.phase != "baseline" else _baseline()))
        return
    shutil.rmtree(args.workdir, ignore_errors=True)
    data, home = args.workdir / "data", args.workdir / "home"
    t0 = time.perf_counter()
    generate(data, args.n)
    print(
        f"generated {args.n:,} passages in {time.perf_counter() - t0:.0f} s "
        f"({sum(p.stat().st_size for p in data.rglob('*.gz')) / 2**20:.0f} MB gzipped)"
    )
    env = {
        **os.environ,
        "NUGGETBENCH_HOME": str(home),
        "NUGGETBENCH_DATA": str(data),
        "NUGGETBENCH_OFFLINE": "1",
    }
    for name in ("baseline", "stream", "iterate", "jsonl_corpus"):
        res = subprocess.run(
            [sys.executable, __file__, "--phase", name],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        print(res.stdout.strip().splitlines()[-1])


def _baseline() -> dict:
    import numpy  # noqa: F401
    import pyarrow  # noqa: F401

    import nuggetbench.datasets.miracl  # noqa: F401

    return {"phase": "baseline", **peak()}


if __name__ == "__main__":
    main()
