"""Benchmark: nuggetbench vs pytrec_eval on a large run (reading the files + evaluating).

Generates (seeded) a qrels file and a run of 10,000 queries x 1,000 documents as TREC files in a
temporary folder, then times

(a) nuggetbench: ``read_qrels`` + ``read_run`` + ``evaluate(nDCG@10 AP R@100 RR)``;
(b) pytrec_eval: ``parse_qrel`` + ``parse_run`` + ``RelevanceEvaluator(...).evaluate``;

run interleaved (a, b, a, b, ...) ``--repeat`` times; prints the best time of each, their ratio
and the median of the per-round ratios, and checks that the means agree (1e-9).

Usage::

    python benchmarks/measures.py [--queries 10000] [--depth 1000] [--repeat 1] [--folder DIR]

With ``--whole-process`` it times whole processes instead, as a user does: ``nuggetbench evaluate``
(the CLI, imports, reading, checks, evaluating, printing) against a pytrec_eval script (import,
parse, evaluate, print the means) and ``python -m ir_measures``, run interleaved (A, B, C, A, B, C,
...) ``--repeat`` times (default 5 there); it prints each command's median seconds, its median ratio
to nuggetbench's time in the same round, and its peak RSS (GNU time's ``%M`` of that
child: ``benchmarks/_proc.py``)::

    python benchmarks/measures.py --whole-process --depth 100 --repeat 5 [--baseline-src DIR]

``--judged 15`` gives the sparse workload (about 15 judged documents a query: 150k qrels lines
at 10k queries) instead of the dense one (50).

``--baseline-src`` adds an older nuggetbench (its ``src`` folder, e.g. from ``git archive``) as a
peer, for before/after ratios on this noisy machine.

Needs the dev extra (pytrec-eval-terrier). Imports of both libraries happen before timing.
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/_proc.py

MEASURES = {"nDCG@10": "ndcg_cut_10", "AP": "map", "R@100": "recall_100", "RR": "recip_rank"}


def _write_table(path: Path, columns: dict[str, np.ndarray]) -> None:
    """Space-separated lines without header or quoting."""
    try:
        import pyarrow as pa
        import pyarrow.csv as pcsv
    except ImportError:  # pragma: no cover
        import pandas as pd

        pd.DataFrame(columns).to_csv(path, sep=" ", header=False, index=False)
        return
    table = pa.table(columns)
    pcsv.write_csv(
        table,
        path,
        write_options=pcsv.WriteOptions(include_header=False, delimiter=" ", quoting_style="none"),
    )


def generate(
    folder: Path,
    *,
    n_queries: int = 10_000,
    depth: int = 1_000,
    n_docs: int = 1_000_000,
    judged: int = 50,
    seed: int = 0,
) -> tuple[Path, Path]:
    """Write ``qrels.txt`` and ``run.txt`` into *folder*; returns their paths.

    Each query retrieves *depth* distinct documents (of *n_docs*) with scores rounded to 4
    decimals (so some tie); it has about *judged* judgments with grades 0-3, half of them on
    documents of its top 100, half on random documents.
    """
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    doc_names = np.char.add("D", np.char.zfill(np.arange(n_docs).astype(str), 7)).astype(object)
    qids = np.arange(1, n_queries + 1).astype(str).astype(object)
    # distinct documents per query: a random offset walk over a shuffled collection
    perm = rng.permutation(n_docs)
    starts = rng.integers(0, n_docs, n_queries)
    steps = rng.integers(1, 7, (n_queries, depth)).cumsum(axis=1)
    docs = perm[(starts[:, None] + steps) % n_docs]
    scores = np.round(np.sort(rng.random((n_queries, depth)) * 30.0, axis=1)[:, ::-1], 4)
    shuffle = rng.permuted(
        np.tile(np.arange(depth), (n_queries, 1)), axis=1
    )  # file order != rank order
    docs = np.take_along_axis(docs, shuffle, axis=1)
    scores = np.take_along_axis(scores, shuffle, axis=1)
    ranks = np.tile(np.arange(1, depth + 1), n_queries)
    _write_table(
        folder / "run.txt",
        {
            "q": np.repeat(qids, depth),
            "q0": np.full(n_queries * depth, "Q0", dtype=object),
            "d": doc_names[docs.ravel()],
            "r": ranks,
            "s": scores.ravel(),
            "t": np.full(n_queries * depth, "bench", dtype=object),
        },
    )
    top_k = min(100, depth)
    best = np.take_along_axis(docs, np.argsort(-scores, axis=1)[:, :top_k], axis=1)
    half = judged // 2
    top = np.take_along_axis(best, rng.integers(0, top_k, (n_queries, half)), axis=1)
    rand = rng.integers(0, n_docs, (n_queries, judged - half))
    jd = np.concatenate([top, rand], axis=1)
    jq = np.repeat(np.arange(n_queries), judged)
    jd = jd.ravel()
    key = jq.astype(np.int64) * n_docs + jd
    _, first = np.unique(key, return_index=True)
    first.sort()
    _write_table(
        folder / "qrels.txt",
        {
            "q": qids[jq[first]],
            "it": np.zeros(len(first), dtype=np.int64),
            "d": doc_names[jd[first]],
            "g": rng.integers(0, 4, len(first)),
        },
    )
    return folder / "qrels.txt", folder / "run.txt"


def run_nuggetbench(qrels_path: Path, run_path: Path) -> tuple[float, dict[str, float]]:
    from nuggetbench.data import read_trec_qrels as read_qrels
    from nuggetbench.data import read_trec_run as read_run
    from nuggetbench.measures import score as evaluate

    start = time.perf_counter()
    qrels = read_qrels(qrels_path)
    run = read_run(run_path)
    results = evaluate(qrels, run, list(MEASURES), profile="trec_eval")
    seconds = time.perf_counter() - start
    return seconds, {m: results.mean(m) for m in MEASURES}


def run_pytrec_eval(qrels_path: Path, run_path: Path) -> tuple[float, dict[str, float]]:
    import pytrec_eval

    start = time.perf_counter()
    with open(qrels_path) as fh:
        qrels = pytrec_eval.parse_qrel(fh)
    with open(run_path) as fh:
        run = pytrec_eval.parse_run(fh)
    evaluator = pytrec_eval.RelevanceEvaluator(
        qrels, {"ndcg_cut.10", "map", "recall.100", "recip_rank"}
    )
    per_query = evaluator.evaluate(run)
    seconds = time.perf_counter() - start
    means = {
        m: float(np.mean([v[name] for v in per_query.values()])) for m, name in MEASURES.items()
    }
    return seconds, means


def _warm_up(folder: Path) -> None:
    """Import everything both sides use (pandas, pyarrow, pytrec_eval) outside the timings."""
    small = folder / "warmup"
    qrels_path, run_path = generate(small, n_queries=20, depth=50, n_docs=5_000, judged=10, seed=1)
    run_nuggetbench(qrels_path, run_path)
    run_pytrec_eval(qrels_path, run_path)


PYTREC_SCRIPT = """
import sys, pytrec_eval
with open(sys.argv[1]) as fh:
    qrels = pytrec_eval.parse_qrel(fh)
with open(sys.argv[2]) as fh:
    run = pytrec_eval.parse_run(fh)
ev = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "map", "recall.100", "recip_rank"})
res = ev.evaluate(run)
for name in ("ndcg_cut_10", "map", "recall_100", "recip_rank"):
    print(name, sum(v[name] for v in res.values()) / len(res))
"""


def _timed(command: list[str], env: dict[str, str]) -> tuple[float, float, int, str]:
    """Run *command*; ``(seconds, peak RSS in MB, exit status, stdout+stderr tail)``."""
    from _proc import timed

    seconds, peak, status, out = timed(command, env)
    return seconds, peak, status, out[-400:]


PYTREC_ALL_SCRIPT = """
import sys, pytrec_eval
with open(sys.argv[1]) as fh:
    qrels = pytrec_eval.parse_qrel(fh)
with open(sys.argv[2]) as fh:
    run = pytrec_eval.parse_run(fh)
ev = pytrec_eval.RelevanceEvaluator(qrels, pytrec_eval.supported_measures)
res = ev.evaluate(run)
names = sorted(next(iter(res.values())))
for name in names:
    print(name, sum(v[name] for v in res.values()) / len(res))
"""


def whole_process(
    qrels_path: Path,
    run_path: Path,
    *,
    repeat: int,
    baseline_src: Path | None,
    all_trec: bool = False,
    ir_measures: bool = True,
) -> list[str]:
    """Interleaved whole-process timings; returns the printed lines. With *all_trec*:
    ``nuggetbench evaluate -m all_trec --format trec_eval`` against a pytrec_eval script
    evaluating and printing ``pytrec_eval.supported_measures`` (ir_measures left out)."""
    import os
    import statistics

    python = sys.executable
    src = Path(__file__).resolve().parents[1] / "src"
    measures = ["-m", "nDCG@10", "-m", "AP", "-m", "R@100", "-m", "RR"]
    if all_trec:
        measures = ["-m", "all_trec", "--format", "trec_eval"]
    base_env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    nb_cmd = [python, "-m", "nuggetbench", "evaluate", str(qrels_path), str(run_path), *measures]
    script = PYTREC_ALL_SCRIPT if all_trec else PYTREC_SCRIPT
    commands: dict[str, tuple[list[str], dict[str, str]]] = {
        "nuggetbench": (nb_cmd, {**base_env, "PYTHONPATH": str(src)}),
        "pytrec_eval script": (
            [python, "-c", script, str(qrels_path), str(run_path)],
            base_env,
        ),
        "ir_measures": (
            [
                python,
                "-m",
                "ir_measures",
                str(qrels_path),
                str(run_path),
                "nDCG@10 AP R@100 RR",
                "--provider",
                "pytrec_eval",
            ],
            base_env,
        ),
    }
    if all_trec or not ir_measures:
        del commands["ir_measures"]
    if baseline_src is not None:
        commands["nuggetbench (baseline)"] = (nb_cmd, {**base_env, "PYTHONPATH": str(baseline_src)})
    times: dict[str, list[float]] = {k: [] for k in commands}
    ratios: dict[str, list[float]] = {k: [] for k in commands}
    peaks: dict[str, float] = {k: 0.0 for k in commands}
    for _ in range(repeat):
        this_round = {}
        for name, (cmd, env) in commands.items():
            seconds, peak, status, tail = _timed(cmd, env)
            if status != 0:
                raise SystemExit(f"{name} failed ({status}):\n{tail}")
            this_round[name] = seconds
            times[name].append(seconds)
            peaks[name] = max(peaks[name], peak)
        for name in commands:
            ratios[name].append(this_round["nuggetbench"] / this_round[name])
    lines = [f"{'command':24s} {'median s':>9s} {'nuggetbench / it':>17s} {'peak RSS MB':>12s}"]
    for name in commands:
        lines.append(
            f"{name:24s} {statistics.median(times[name]):9.2f} "
            f"{statistics.median(ratios[name]):16.2f}x {peaks[name]:12.0f}"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--depth", type=int, default=1_000)
    parser.add_argument(
        "--repeat", type=int, default=1, help="rounds (interleaved; best and median ratio)"
    )
    parser.add_argument(
        "--judged",
        type=int,
        default=50,
        help="judgments a query (about; 15 gives the sparse workload: 150k qrels lines at 10k queries)",
    )
    parser.add_argument(
        "--no-ir-measures", action="store_true", help="with --whole-process: leave ir_measures out"
    )
    parser.add_argument("--folder", type=Path, default=None, help="keep the files here")
    parser.add_argument("--whole-process", action="store_true", help="time whole processes")
    parser.add_argument(
        "--baseline-src", type=Path, default=None, help="an older nuggetbench src folder"
    )
    parser.add_argument(
        "--all-trec",
        action="store_true",
        help="with --whole-process: -m all_trec --format trec_eval against pytrec_eval's "
        "supported_measures",
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="nb-bench-") as tmp:
        folder = args.folder or Path(tmp)
        start = time.perf_counter()
        if (folder / "run.txt").exists() and (folder / "qrels.txt").exists():
            qrels_path, run_path = folder / "qrels.txt", folder / "run.txt"
            print(f"using the files in {folder}")
        else:
            qrels_path, run_path = generate(
                folder, n_queries=args.queries, depth=args.depth, judged=args.judged
            )
        with open(run_path, "rb") as fh:  # the files found may have another shape
            n_lines = sum(block.count(b"\n") for block in iter(lambda: fh.read(1 << 24), b""))
        print(
            f"{n_lines} run lines ({time.perf_counter() - start:.1f} s; "
            f"{run_path.stat().st_size / 1e6:.0f} MB run, {qrels_path.stat().st_size / 1e6:.1f} MB qrels)"
        )
        if args.whole_process:
            repeat = max(args.repeat, 5) if args.repeat == 1 else args.repeat
            print(f"whole process, interleaved, median of {repeat}:")
            for line in whole_process(
                qrels_path,
                run_path,
                repeat=repeat,
                baseline_src=args.baseline_src,
                all_trec=args.all_trec,
                ir_measures=not args.no_ir_measures,
            ):
                print(line)
            return 0
        _warm_up(folder)
        rounds = []  # interleaved (nuggetbench, pytrec_eval), as the machine's load drifts
        rss_ours = 0.0
        for _ in range(args.repeat):
            rounds.append((run_nuggetbench(qrels_path, run_path), None))
            rss_ours = max(rss_ours, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
            rounds[-1] = (rounds[-1][0], run_pytrec_eval(qrels_path, run_path))
        ours = min((r[0] for r in rounds), key=lambda r: r[0])
        theirs = min((r[1] for r in rounds), key=lambda r: r[0])
        ratios = sorted(r[1][0] / r[0][0] for r in rounds)
    print(f"nuggetbench  read + evaluate: {ours[0]:6.2f} s   (peak RSS so far {rss_ours:.0f} MB)")
    print(f"pytrec_eval  parse + evaluate: {theirs[0]:6.2f} s")
    print(f"ratio pytrec_eval / nuggetbench: {theirs[0] / ours[0]:.2f}x (best of each)")
    if len(ratios) > 1:
        listed = " ".join(f"{x:.2f}" for x in ratios)
        print(f"ratio per round, interleaved: median {ratios[len(ratios) // 2]:.2f}x ({listed})")
    worst = max(abs(ours[1][m] - theirs[1][m]) for m in MEASURES)
    for m in MEASURES:
        print(f"  {m:8s} nuggetbench {ours[1][m]:.6f}  pytrec_eval {theirs[1][m]:.6f}")
    if worst > 1e-9:
        print(f"MEANS DIFFER (max difference {worst:.3g})")
        return 1
    print(f"means agree (max difference {worst:.1e})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
