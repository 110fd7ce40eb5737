"""Peak memory of a sharded BM25 search alone, on an index already in a home's cache.

``benchmarks/scale.py`` builds each engine's index in a fresh home under ``--workdir`` and keeps
the home. This script opens such a cached sharded index in a child process (the corpus read as
``IndexedJsonlCorpus`` with ``--mapped``, else ``JsonlCorpus``), searches the corpus folder's
1,000 queries at k=100, and prints the child's peak RSS (GNU time's ``%M``) and its anonymous and
file-backed RSS after the search. With ``--baseline-src`` it also runs an older nuggetbench
(its ``src`` folder, e.g. from ``git archive``), interleaved, for a before/after::

    python benchmarks/bm25_search_memory.py --home /tmp/nb_scale/nb_scale_home_XXXX \\
        --folder /tmp/nb_scale/n5000000 --shard-docs 100000 --mapped [--baseline-src DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

CHILD = r"""
import json, os, resource, sys, time
folder, shard_docs, mapped = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
from nuggetbench.data import JsonlCorpus, Queries
from nuggetbench.data.formats.jsonl_index import IndexedJsonlCorpus
from nuggetbench.retrieval.bm25.retriever import BM25
def rss():
    out = {}
    for line in open("/proc/self/status"):
        if line.startswith(("RssAnon:", "RssFile:")):
            out[line[3:7].lower()] = int(line.split()[1]) / 1024**2
    return out
path = f"{folder}/corpus.jsonl"
corpus = IndexedJsonlCorpus(path) if mapped else JsonlCorpus(path)
queries = Queries(json.load(open(f"{folder}/queries.json")))
index = BM25(shard_docs=shard_docs, backend="numpy").index(corpus)
if not index.from_cache:
    raise SystemExit("the index was not in the home's cache: pass the home scale.py built it in")
t = time.perf_counter()
index.search(queries, 100)
print("RESULT " + json.dumps({"search_s": time.perf_counter() - t, **rss()}))
"""


def run(src: Path, home: Path, folder: Path, shard_docs: int, mapped: bool) -> dict:
    env = {**os.environ, "PYTHONPATH": str(src), "NUGGETBENCH_HOME": str(home)}
    cmd = ["/usr/bin/time", "-f", "MAXRSS_KB %M", sys.executable, "-c", CHILD]
    cmd += [str(folder), str(shard_docs), "1" if mapped else "0"]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{src} failed:\n{proc.stderr[-2000:]}")
    out = json.loads(proc.stdout.split("RESULT ", 1)[1].splitlines()[0])
    out["peak_mib"] = int(proc.stderr.rsplit("MAXRSS_KB ", 1)[1].split()[0]) / 1024
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--home", type=Path, required=True, help="the home holding the cached index")
    ap.add_argument("--folder", type=Path, required=True, help="corpus.jsonl and queries.json")
    ap.add_argument("--shard-docs", type=int, required=True)
    ap.add_argument("--mapped", action="store_true", help="read the corpus memory-mapped")
    ap.add_argument("--baseline-src", type=Path, default=None)
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    sources = {"nuggetbench": Path(__file__).resolve().parents[1] / "src"}
    if args.baseline_src is not None:
        sources["baseline"] = args.baseline_src
    for _ in range(args.repeat):
        for name, src in sources.items():
            r = run(src, args.home, args.folder, args.shard_docs, args.mapped)
            print(
                f"{name:12s} search {r['search_s']:6.1f} s  peak RSS {r['peak_mib']:7.1f} MiB  "
                f"after the search: anonymous {r['anon'] * 1024:6.1f} MiB, "
                f"mapped files {r['file'] * 1024:6.1f} MiB",
                flush=True,
            )


if __name__ == "__main__":
    main()
