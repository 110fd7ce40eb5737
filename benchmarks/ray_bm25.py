"""BM25 on Ray vs one process: the same sharded run (``bm25:shard_docs=S``), its time and memory.

The synthetic corpus of ``benchmarks/scale.py`` (``generate``: *n* passages of about 50 words,
Zipfian vocabulary, 1,000 queries) is indexed and searched at depth 100 by

* ``local``: ``BM25(shard_docs=S)`` in one process (the single-process sharded path);
* ``ray``:   the same inside ``use_ray``: a local Ray cluster started in the child
  (``ray.init(num_cpus=W)``, no dashboard), shard scoring and shard search as Ray tasks;

each in its own subprocess with a cold ``NUGGETBENCH_HOME``, interleaved (local, ray, local,
ray, ...). Peak memory is sampled from ``/proc`` every 0.2 s: the driver's RSS and the sum of
RSS over the driver and all its descendants (Ray's GCS, raylet and workers; shared pages such as
the object store are counted once per process that maps them, so the sum overstates). The TREC
files of every repetition must be byte-identical (``cmp``). Run::

    python benchmarks/ray_bm25.py --n 1000000 --shard-docs 100000 --repeat 2
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from scale import generate  # noqa: E402

CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
engine, folder, shard_docs, out, workers = sys.argv[1:6]
shard_docs, workers = int(shard_docs), int(workers)
stages = {}
from nuggetbench.data import JsonlCorpus, Queries
from nuggetbench.data.formats.trec import write_run
from nuggetbench.retrieval import distributed
from nuggetbench.retrieval.bm25.retriever import BM25
queries = Queries(json.load(open(f"{folder}/queries.json")))
corpus = JsonlCorpus(f"{folder}/corpus.jsonl")
len(corpus)
address = None
if engine == "ray":
    import ray
    t = time.perf_counter()
    ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)
    stages["ray start"] = time.perf_counter() - t
    address = "auto"
with distributed.use_ray(address):
    t = time.perf_counter()
    index = BM25(shard_docs=shard_docs, backend="numpy").index(corpus)
    stages["index"] = time.perf_counter() - t
    built = json.load(open(index.folder / "meta.json"))["stage_seconds"]
    stages.update({f"  {k}": v for k, v in built.items()})
    t = time.perf_counter()
    run = index.search(queries, 100)
    stages["search"] = time.perf_counter() - t
write_run(run, out)
if engine == "ray":
    t = time.perf_counter()
    ray.shutdown()
    stages["ray shutdown"] = time.perf_counter() - t
stages["total"] = time.perf_counter() - t0
print("STAGES " + json.dumps(stages))
"""


def _tree_rss(root: int) -> tuple[int, int]:
    """(RSS of *root*, summed RSS of *root* and its descendants), bytes, from /proc."""
    parent: dict[int, int] = {}
    rss: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            parent[int(entry)] = int(fields[1])
            rss[int(entry)] = int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, IndexError, ValueError):
            continue
    tree = {root}
    grew = True
    while grew:
        grew = False
        for pid, ppid in parent.items():
            if ppid in tree and pid not in tree:
                tree.add(pid)
                grew = True
    return rss.get(root, 0), sum(rss.get(p, 0) for p in tree)


def run_child(engine: str, folder: Path, shard_docs: int, out: Path, workers: int) -> dict:
    home = Path(tempfile.mkdtemp(prefix=f"nb_ray_{engine}_"))
    env = dict(os.environ, NUGGETBENCH_HOME=str(home), PYTHONUNBUFFERED="1")
    cmd = [sys.executable, "-c", CHILD, engine, str(folder), str(shard_docs), str(out)]
    started = time.perf_counter()
    proc = subprocess.Popen(cmd + [str(workers)], env=env, stdout=subprocess.PIPE, text=True)
    peaks = [0, 0]

    def sample() -> None:
        while proc.poll() is None:
            driver, tree = _tree_rss(proc.pid)
            peaks[0], peaks[1] = max(peaks[0], driver), max(peaks[1], tree)
            time.sleep(0.2)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    stdout, _ = proc.communicate()
    wall = time.perf_counter() - started
    sampler.join()
    subprocess.run(["rm", "-rf", str(home)], check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{engine} failed (exit {proc.returncode})")
    stages = json.loads(stdout.split("STAGES ", 1)[1].splitlines()[0])
    return {
        "engine": engine,
        "wall_s": wall,
        "driver_peak_gb": peaks[0] / 1024**3,
        "tree_peak_gb": peaks[1] / 1024**3,
        "stages": stages,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=200_000, help="passages")
    ap.add_argument("--shard-docs", type=int, default=100_000)
    ap.add_argument("--workers", type=int, default=2, help="CPUs of the local Ray cluster")
    ap.add_argument("--repeat", type=int, default=1, help="interleaved pairs (median reported)")
    ap.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "nb_scale")
    args = ap.parse_args()
    folder = args.workdir / f"n{args.n}"
    generate(folder, args.n)
    results: dict[str, list[dict]] = {"local": [], "ray": []}
    first = None
    for rep in range(args.repeat):
        for engine in ("local", "ray"):
            out = args.workdir / f"ray_bm25_{engine}_{rep}.trec"
            res = run_child(engine, folder, args.shard_docs, out, args.workers)
            results[engine].append(res)
            print(json.dumps(res), flush=True)
            if first is None:
                first = out
            else:
                same = filecmp.cmp(first, out, shallow=False)
                print(f"cmp {first.name} {out.name}: {'identical' if same else 'DIFFERENT'}")
                if not same:
                    raise SystemExit("the runs differ")
    med = {e: statistics.median(r["wall_s"] for r in rs) for e, rs in results.items()}
    print(
        f"n={args.n} shard_docs={args.shard_docs} workers={args.workers}: local "
        f"{med['local']:.1f} s, ray {med['ray']:.1f} s, ratio ray/local "
        f"{med['ray'] / med['local']:.2f} (median of {args.repeat}); every TREC file identical"
    )


if __name__ == "__main__":
    main()
