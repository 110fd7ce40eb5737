"""BM25 search backends on 1, 2 (and more) cores: what ``backend=auto`` should choose.

The single index of ``benchmarks/scale.py``'s synthetic corpus (*n* passages) is built once into
a home under ``--workdir``; then each backend searches the 1,000 queries at k=100 in its own
process pinned to the given cores (``taskset -c``), loading the index from the cache, rounds
interleaved (``a b c a b c ...``), and the median search time per (cores, backend) is printed
with the load before every run. ``--src`` compares code trees (e.g. main's ``src`` against this
one's: the index cache is shared, its key being the same). Run::

    python benchmarks/bm25_backends.py --n 100000 --cores 0 0,1 --repeat 3
    python benchmarks/bm25_backends.py --n 100000 --src /work/main/src,src --backends numpy,numba
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import scale_table  # noqa: E402
from scale import generate  # noqa: E402

CHILD = r"""
import json, sys, time
folder, spec, k = sys.argv[1], sys.argv[2], int(sys.argv[3])
from nuggetbench.data import JsonlCorpus, Queries
from nuggetbench.retrieval.spec import parse_retriever
corpus = JsonlCorpus(f"{folder}/corpus.jsonl")
queries = Queries(json.load(open(f"{folder}/queries.json")))
t = time.perf_counter()
index = parse_retriever(spec).index(corpus)
loaded = time.perf_counter() - t
t = time.perf_counter()
run = index.search(queries, k)
search = time.perf_counter() - t
print("RESULT " + json.dumps({"index": loaded, "search": search, "lines": len(run),
    "backend": run.metadata.get("backend"), "cached": run.metadata.get("index_from_cache")}))
"""


def child(src: str, folder: Path, spec: str, cores: str, home: Path) -> dict:
    env = dict(os.environ, NUGGETBENCH_HOME=str(home), PYTHONPATH=str(Path(src).resolve()))
    cmd = ["taskset", "-c", cores, sys.executable, "-c", CHILD, str(folder), spec, "100"]
    load = scale_table.load_average()
    started = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    if proc.returncode != 0:  # recorded, not fatal: a backend may fail on some cores
        error = proc.stderr.strip().splitlines()[-1][:200]
        print(f"{spec} on cores {cores} FAILED: {error}", flush=True)
        return {"search": float("nan"), "backend": "FAILED: " + error, "cached": True, "load": load}
    out = json.loads(proc.stdout.split("RESULT ", 1)[1].splitlines()[0])
    return {**out, "wall": wall, "load": load}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "nb_scale")
    ap.add_argument("--cores", nargs="+", default=["0", "0,1"], help="taskset CPU lists")
    ap.add_argument("--backends", default="numpy,numba,auto")
    ap.add_argument("--src", default="src", help="code trees, comma-separated")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    folder = args.workdir / f"n{args.n}"
    generate(folder, args.n)
    home = Path(tempfile.mkdtemp(prefix="nb_backends_home_", dir=args.workdir))
    srcs = args.src.split(",")
    build = child(srcs[-1], folder, "bm25:memory=64G", ",".join(args.cores), home)
    print(f"index built in {build['index']:.1f} s (cores {','.join(args.cores)})")
    for src in srcs:  # each tree compiles its kernel (or loads numba's cache) before timing
        child(src, folder, "bm25:memory=64G,backend=numba", args.cores[-1], home)
    results: dict[tuple[str, str, str], list[dict]] = {}
    for _ in range(args.repeat):
        for cores in args.cores:
            for src in srcs:
                for backend in args.backends.split(","):
                    spec = f"bm25:memory=64G,backend={backend}"
                    row = child(src, folder, spec, cores, home)
                    assert row["cached"], "the index should come from the cache"
                    results.setdefault((cores, src, backend), []).append(row)
                    print(
                        f"cores {cores:5s} {src:20s} {backend:6s} search {row['search']:6.2f} s "
                        f"({row['backend']}), load {row.get('load')}",
                        flush=True,
                    )
    print(f"\n### search, {args.n:,} passages, 1,000 queries, k=100: medians of {args.repeat}\n")
    print("| cores | code | backend | chosen | search | queries/s | loads |")
    print("|---|---|---|---|---|---|---|")
    for (cores, src, backend), rows in results.items():
        med = statistics.median(r["search"] for r in rows)
        loads = "; ".join(r.get("load", "? ").split()[0] for r in rows)
        print(
            f"| {cores} | {src} | {backend} | {rows[0]['backend']} | {med:.2f} s | "
            f"{1000 / med:,.0f} | {loads} |"
        )


if __name__ == "__main__":
    main()
