"""Lucene (``bm25:backend=lucene``) at scale: wall time per stage, peak RSS with the JVM, queries/s.

Uses ``benchmarks/scale.py``'s synthetic corpus (``generate``: ~50-word passages over a Zipfian
vocabulary, 1,000 queries of 2-6 words), then runs, in a child process under ``/usr/bin/time -f
%M`` (peak RSS of the process, the in-process JVM included):

1. start the JVM and import Pyserini (:func:`nuggetbench.retrieval.bm25.lucene.pyserini_api`), with
   ``-Xmx`` from ``--heap`` (``NUGGETBENCH_LUCENE_HEAP``);
2. ``BM25(backend="lucene", k1=0.9, b=0.4, threads=T).index(JsonlCorpus)`` into a cold home
   (the corpus id index, the fingerprint's SHA-256 and Lucene's indexing, reported apart);
3. ``index.search(queries, 100)``: queries/s.

It prints one JSON object: stages (s), queries/s, peak RSS (GB), the JVM's committed and maximum
heap, and the index's size on disk. Run::

    python benchmarks/lucene_scale.py --n 1000000 [--heap 4g] [--threads 2] [--workdir /tmp/nb_scale]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scale import generate  # noqa: E402  (the corpus generator shared with scale.py)

CHILD = r"""
import json, sys, time, os
from pathlib import Path
folder, threads, k = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
stages = {}
t = time.perf_counter()
from nuggetbench.retrieval import lucene
api = lucene.pyserini_api()
stages["jvm start + pyserini import"] = time.perf_counter() - t
from nuggetbench.data import JsonlCorpus, Queries
from nuggetbench.retrieval.bm25.retriever import BM25
corpus = JsonlCorpus(f"{folder}/corpus.jsonl")
t = time.perf_counter()
n = len(corpus)
stages["corpus id index"] = time.perf_counter() - t
t = time.perf_counter()
corpus.fingerprint()
stages["corpus fingerprint"] = time.perf_counter() - t
t = time.perf_counter()
index = BM25(backend="lucene", k1=0.9, b=0.4, threads=threads).index(corpus, show_progress=True)
stages["lucene index"] = time.perf_counter() - t
queries = Queries(json.load(open(f"{folder}/queries.json")))
t = time.perf_counter()
run = index.search(queries, k)
stages["search"] = time.perf_counter() - t
from jnius import autoclass
rt = autoclass("java.lang.Runtime").getRuntime()
size = sum(p.stat().st_size for p in Path(index.path).rglob("*") if p.is_file())
print("RESULT " + json.dumps({
    "docs": n, "indexed": len(index), "stages_s": stages,
    "queries_per_s": len(queries) / stages["search"], "run_entries": len(run.arrays()[2]),
    "jvm_heap_committed_gb": rt.totalMemory() / 1024**3, "jvm_heap_max_gb": rt.maxMemory() / 1024**3,
    "index_gb": size / 1024**3, "java": api.java_version, "pyserini": api.pyserini_version,
}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--heap", default="4g", help="JVM -Xmx (NUGGETBENCH_LUCENE_HEAP)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--k", type=int, default=100)
    parser.add_argument("--workdir", default=os.path.join(tempfile.gettempdir(), "nb_scale"))
    args = parser.parse_args()
    folder = Path(args.workdir) / f"n{args.n}"
    t = time.perf_counter()
    generate(folder, args.n)
    print(f"corpus ready in {time.perf_counter() - t:.1f} s: {folder}", file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="nb_lucene_home_") as home:
        env = {**os.environ, "NUGGETBENCH_HOME": home, "NUGGETBENCH_LUCENE_HEAP": args.heap}
        cmd = ["/usr/bin/time", "-f", "MAXRSS_KB %M", sys.executable, "-c", CHILD]
        cmd += [str(folder), str(args.threads), str(args.k)]
        t = time.perf_counter()
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
        wall = time.perf_counter() - t
    if proc.returncode:
        raise SystemExit(f"the child failed:\n{proc.stderr[-3000:]}")
    result = json.loads(next(x for x in proc.stdout.splitlines() if x.startswith("RESULT "))[7:])
    rss_kb = int(next(x for x in proc.stderr.splitlines() if x.startswith("MAXRSS_KB")).split()[1])
    result.update(wall_s=wall, peak_rss_gb=rss_kb / 1024**2, heap=args.heap, threads=args.threads)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
