"""Overhead of nuggetbench's BM25 path over bare bm25s, on BEIR SciFact (test split).

nuggetbench path (what ``nuggetbench run`` calls), cold index cache::

    dataset = load_dataset("beir/scifact")
    run = parse_retriever(spec).index(dataset.corpus).search(dataset.queries, k)

bare bm25s path, the same work on the same files: read ``corpus.jsonl``, ``queries.jsonl`` and
the test qrels (to pick the judged queries), tokenize ``title + " " + text`` with the English
stemmer and stop words, index, retrieve the top *k*.

Imports are done before timing in both paths; each repetition runs both paths (alternating which
goes first) with a fresh, empty ``NUGGETBENCH_HOME`` (cold cache). Wall and CPU times are
reported; the minimum over repetitions is the least disturbed by other load. Run::

    NUGGETBENCH_DATA=/work/shared/data python benchmarks/bm25.py [--k 1000] [--repeat 5]

With ``--cli`` it times whole processes instead, interleaved, median of ``--repeat`` (at least 5):
``nuggetbench run beir/scifact -r bm25 -k K -o OUT`` with a fresh ``NUGGETBENCH_HOME`` (cold) and
again with the home of the previous cold run (warm: cached index and run), against a bare script
(``BARE_SCRIPT``: read the files, bm25s + PyStemmer, retrieve the same depth, write the TREC file,
evaluate nDCG@10 with pytrec_eval). It prints each command's median seconds, the median of the
per-round ratios to the bare script, and peak RSS (GNU time's ``%M``: ``benchmarks/_proc.py``)::

    NUGGETBENCH_DATA=/work/shared/data python benchmarks/bm25.py --cli [--repeat 5]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path


def bare_bm25s(folder: Path, k: int, k1: float, b: float) -> int:
    import bm25s
    import Stemmer

    ids, texts = [], []
    with open(folder / "corpus.jsonl", encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                obj = json.loads(line)
                ids.append(str(obj["_id"]))
                texts.append((obj.get("title") or "") + " " + obj["text"])
    judged = set()
    with open(folder / "qrels" / "test.tsv", encoding="utf-8") as fh:
        next(fh)
        for line in fh:
            if line.strip():
                judged.add(line.split("\t")[0])
    qids, qtexts = [], []
    with open(folder / "queries.jsonl", encoding="utf-8") as fh:
        for line in fh:
            obj = json.loads(line)
            if str(obj["_id"]) in judged:
                qids.append(str(obj["_id"]))
                qtexts.append(obj["text"])
    stemmer = Stemmer.Stemmer("english")
    corpus_tokens = bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False)
    model = bm25s.BM25(k1=k1, b=b, method="lucene")
    model.index(corpus_tokens, show_progress=False)
    query_tokens = bm25s.tokenize(qtexts, stopwords="en", stemmer=stemmer, show_progress=False)
    docs, scores = model.retrieve(query_tokens, corpus=ids, k=min(k, len(ids)), show_progress=False)
    return int(docs.size)


def nuggetbench_path(dataset_id: str, spec: str, k: int) -> int:
    from nuggetbench.datasets import load_dataset
    from nuggetbench.retrieval import parse_retriever

    dataset = load_dataset(dataset_id)
    run = parse_retriever(spec).index(dataset.corpus).search(dataset.queries, k)
    return run.n_entries


BARE_SCRIPT = r"""
import json, sys
from pathlib import Path
import bm25s, Stemmer, pytrec_eval
folder, k, out = Path(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3])
ids, texts = [], []
with open(folder / "corpus.jsonl", encoding="utf-8") as fh:
    for line in fh:
        if line.strip():
            obj = json.loads(line)
            ids.append(str(obj["_id"]))
            texts.append((obj.get("title") or "") + " " + obj["text"])
qrels = {}
with open(folder / "qrels" / "test.tsv", encoding="utf-8") as fh:
    next(fh)
    for line in fh:
        if line.strip():
            q, d, r = line.rstrip("\n").split("\t")
            qrels.setdefault(q, {})[d] = int(r)
qids, qtexts = [], []
with open(folder / "queries.jsonl", encoding="utf-8") as fh:
    for line in fh:
        obj = json.loads(line)
        if str(obj["_id"]) in qrels:
            qids.append(str(obj["_id"]))
            qtexts.append(obj["text"])
stemmer = Stemmer.Stemmer("english")
tokens = bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False)
model = bm25s.BM25(k1=1.5, b=0.75, method="lucene")
model.index(tokens, show_progress=False)
qtokens = bm25s.tokenize(qtexts, stopwords="en", stemmer=stemmer, show_progress=False)
docs, scores = model.retrieve(qtokens, corpus=ids, k=min(k, len(ids)), show_progress=False)
run = {}
lines = []
for q, ds, ss in zip(qids, docs.tolist(), scores.tolist()):
    run[q] = dict(zip(ds, ss))
    lines += [f"{q} Q0 {d} {r} {s!r} bm25\n" for r, (d, s) in enumerate(zip(ds, ss), 1)]
out.write_text("".join(lines))
res = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(run)
print("nDCG@10", sum(v["ndcg_cut_10"] for v in res.values()) / len(res))
"""


def _timed(command: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """Run *command*; ``(seconds, peak RSS MB)``; exits with the output tail when it fails."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _proc import timed

    seconds, peak, status, out = timed(command, env)
    if status != 0:
        raise SystemExit(f"{command[:4]} failed:\n{out[-2000:]}")
    return seconds, peak, out


def cli(dataset: str, folder: Path, k: int, repeat: int, baseline_src: Path | None = None) -> None:
    """Whole-process timings of ``nuggetbench run`` (cold and warm home) against BARE_SCRIPT."""
    import sys

    src = Path(__file__).resolve().parents[1] / "src"
    base = {
        key: v for key, v in os.environ.items() if key not in ("PYTHONPATH", "NUGGETBENCH_HOME")
    }
    names: tuple[str, ...] = (
        "bare bm25s+pytrec_eval",
        "nuggetbench run (cold)",
        "nuggetbench run (warm)",
    )
    if baseline_src is not None:
        names += ("baseline run (cold)",)
    times: dict[str, list[float]] = {n: [] for n in names}
    ratios: dict[str, list[float]] = {n: [] for n in names}
    peaks = dict.fromkeys(names, 0.0)
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(repeat):
            home = Path(tmp) / f"home{rep}"
            nb_env = {**base, "PYTHONPATH": str(src), "NUGGETBENCH_HOME": str(home)}
            rounds = {}
            for name in names:
                if name.startswith("bare"):
                    cmd = [
                        sys.executable,
                        "-c",
                        BARE_SCRIPT,
                        str(folder),
                        str(k),
                        f"{tmp}/bare.trec",
                    ]
                    env = base
                else:
                    out = (
                        Path(tmp)
                        / f"out{rep}-{name.split()[0]}-{'warm' if 'warm' in name else 'cold'}"
                    )
                    cmd = [
                        sys.executable,
                        "-m",
                        "nuggetbench",
                        "--no-progress",
                        "run",
                        dataset,
                        "-r",
                        "bm25",
                        "-k",
                        str(k),
                        "-o",
                        str(out),
                        "-m",
                        "nDCG@10",
                    ]
                    env = nb_env
                    if name.startswith("baseline"):
                        env = {
                            **base,
                            "PYTHONPATH": str(baseline_src),
                            "NUGGETBENCH_HOME": str(Path(tmp) / f"basehome{rep}"),
                        }
                seconds, peak, _ = _timed(cmd, env)
                rounds[name] = seconds
                times[name].append(seconds)
                peaks[name] = max(peaks[name], peak)
            for name in names:
                ratios[name].append(rounds[name] / rounds[names[0]])
    print(f"{dataset}, bm25, k={k}; whole process, interleaved, median of {repeat}:")
    print(f"{'command':26s} {'median s':>9s} {'ratio to bare':>14s} {'peak RSS MB':>12s}")
    for name in names:
        print(
            f"{name:26s} {statistics.median(times[name]):9.2f} "
            f"{statistics.median(ratios[name]):13.2f}x {peaks[name]:12.0f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="beir/scifact")
    parser.add_argument("--k", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--k1", type=float, default=1.5)
    parser.add_argument("--b", type=float, default=0.75)
    parser.add_argument("--cli", action="store_true", help="time whole processes")
    parser.add_argument(
        "--baseline-src", type=Path, default=None, help="--cli: also an older nuggetbench src"
    )
    args = parser.parse_args()

    from nuggetbench import home

    folder = home.find_dataset_dir(args.dataset, marker="corpus.jsonl")
    if folder is None:
        raise SystemExit(f"{args.dataset} not found; set NUGGETBENCH_DATA (e.g. /work/shared/data)")
    spec = f"bm25:k1={args.k1},b={args.b}"
    if args.cli:
        cli(args.dataset, folder, args.k, max(args.repeat, 5), args.baseline_src)
        return

    # imports and one warm-up of each path, outside the timings
    import bm25s  # noqa: F401
    import pandas  # noqa: F401
    import Stemmer  # noqa: F401

    wall: dict[str, list[float]] = {"bm25s": [], "nuggetbench": []}
    cpu: dict[str, list[float]] = {"bm25s": [], "nuggetbench": []}
    counts = {}
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(args.repeat + 1):
            os.environ["NUGGETBENCH_HOME"] = str(Path(tmp) / f"home{rep}")  # cold cache
            order = ("bm25s", "nuggetbench") if rep % 2 else ("nuggetbench", "bm25s")
            for path in order:
                gc.collect()
                w0, c0 = time.perf_counter(), time.process_time()
                if path == "bm25s":
                    counts[path] = bare_bm25s(folder, args.k, args.k1, args.b)
                else:
                    counts[path] = nuggetbench_path(args.dataset, spec, args.k)
                w1, c1 = time.perf_counter(), time.process_time()
                if rep:  # the first round is the warm-up
                    wall[path].append(w1 - w0)
                    cpu[path].append(c1 - c0)
    print(
        f"dataset {args.dataset} ({folder}), {spec}, k={args.k}, {args.repeat} repetitions, "
        f"cold index cache"
    )
    for path, label in (("bm25s", "bare bm25s "), ("nuggetbench", "nuggetbench")):
        print(
            f"{label}: wall min {min(wall[path]):.3f} s, median {statistics.median(wall[path]):.3f} s; "
            f"CPU min {min(cpu[path]):.3f} s, median {statistics.median(cpu[path]):.3f} s; "
            f"{counts[path]} results"
        )
    for what, table in (("wall min", wall), ("CPU min", cpu)):
        ratio = min(table["nuggetbench"]) / min(table["bm25s"]) - 1
        print(f"overhead ({what}): {100 * ratio:+.1f}% (target < 20%)")
    ratio = statistics.median(cpu["nuggetbench"]) / statistics.median(cpu["bm25s"]) - 1
    print(f"overhead (CPU median): {100 * ratio:+.1f}%")


if __name__ == "__main__":
    main()
