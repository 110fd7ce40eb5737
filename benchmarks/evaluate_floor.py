"""Benchmark: ``nuggetbench evaluate`` against its floor, whole processes, at 10k x 100 and 10k x 1,000.

The **floor** is what evaluating costs without nuggetbench around it: a Python process that
imports numpy and pyarrow only, reads the run and the qrels with ``pyarrow.csv`` (space-separated
TREC files, as ``benchmarks/measures.py`` writes them), factorises the ids with pyarrow
(``dictionary_encode``, ``index_in``), ranks each query's entries (score descending, doc id
descending: trec_eval's order), joins the grades and computes nDCG@10, AP, R@100 and RR with the
vectorised numpy kernels nuggetbench's families use (``measures/trec/adhoc.py``: per-query
``bincount`` sums over the ranked entries), then prints the four means. No checks, no CLI, no
``Run``/``Qrels`` objects; numpy arrays are viewed from arrow buffers (pyarrow's ``to_numpy``
imports pandas, 0.2-0.8 s, which nuggetbench avoids too).

``evaluate`` is ``python -m nuggetbench evaluate QRELS RUN -m nDCG@10 -m AP -m R@100 -m RR``
(this checkout's ``src``; ``--baseline-src DIR`` adds another tree's, e.g. ``/work/main/src``).
Each command runs in its own process under GNU time (peak RSS ``%M``, CPU ``%U + %S``), the
commands interleaved (``floor, evaluate, baseline, floor, ...``) ``--repeat`` times; the script
prints per size each command's median wall time, median CPU time, the median of its per-round
ratio to the floor, and its peak RSS, with the 1-minute load average of every round. Before
timing, the floor's means are checked against ``evaluate --format json`` (1e-9)::

    python benchmarks/evaluate_floor.py --repeat 5 [--depths 100,1000] [--baseline-src /work/main/src]

Files are generated once per size into ``--workdir`` (``benchmarks/measures.py``'s generator:
10,000 queries, about 50 judgments each, scores rounded to 4 decimals so some tie, file order
not rank order). Only ratios on the same machine mean anything; on a shared machine compare the
CPU columns too. The children keep compiled modules under ``WORKDIR/pycache``
(``PYTHONPYCACHEPREFIX``, ``PYTHONDONTWRITEBYTECODE`` unset), as an installed package has them;
the means check runs first, so every timed run finds them.
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

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/measures.py

MEASURES = ("nDCG@10", "AP", "R@100", "RR")

FLOOR = r"""
import sys, time
T0 = time.perf_counter()
import numpy as np
import pyarrow as pa
import pyarrow.csv as csv
import pyarrow.compute as pc

def view(array):  # numpy view of a primitive arrow array without nulls (no pandas import)
    array = array.combine_chunks() if isinstance(array, pa.ChunkedArray) else array
    dtype = {pa.int32(): np.int32, pa.int64(): np.int64, pa.float64(): np.float64}[array.type]
    return np.frombuffer(array.buffers()[1], dtype=dtype)[array.offset: array.offset + len(array)]

def read(path, names, types):
    return csv.read_csv(
        path,
        read_options=csv.ReadOptions(column_names=names, block_size=1 << 24),
        parse_options=csv.ParseOptions(delimiter=" "),
        convert_options=csv.ConvertOptions(column_types=types, include_columns=list(types)),
    )

stages = {}
t = time.perf_counter()
qrels = read(sys.argv[1], ["q", "it", "d", "g"], {"q": pa.string(), "d": pa.string(), "g": pa.int64()})
run = read(sys.argv[2], ["q", "q0", "d", "r", "s", "t"], {"q": pa.string(), "d": pa.string(), "s": pa.float64()})
stages["read"] = time.perf_counter() - t

t = time.perf_counter()
# the evaluated queries: the judged ones, sorted by id (trec_eval -c)
qenc = pc.dictionary_encode(qrels["q"].combine_chunks())
order = pc.sort_indices(qenc.dictionary)
qids = pc.take(qenc.dictionary, order)
qrank = np.empty(len(qids), np.int64)
qrank[view(order.cast(pa.int64()))] = np.arange(len(qids))
jq = qrank[view(qenc.indices)]
jg = view(qrels["g"])
nq = len(qids)
rq = view(pc.fill_null(pc.index_in(run["q"].combine_chunks(), value_set=qids), -1))
denc = pc.dictionary_encode(run["d"].combine_chunks())
docs, dcodes = denc.dictionary, view(denc.indices)
jd = view(pc.fill_null(pc.index_in(qrels["d"].combine_chunks(), value_set=docs), -1))
s = view(run["s"])
stages["factorise"] = time.perf_counter() - t

t = time.perf_counter()
keep = rq >= 0
if not keep.all():
    rq, dcodes, s = rq[keep], dcodes[keep], s[keep]
n = len(s)
bounds = np.flatnonzero(np.diff(rq)) + 1
blocks = np.concatenate([[0], bounds, [n]])
width = np.diff(blocks)
if len(np.unique(rq[blocks[:-1]])) == len(width) and (width == width[0]).all():
    rows = np.argsort(rq[blocks[:-1]], kind="stable")  # contiguous queries of one depth
    within = np.argsort((-s).reshape(len(width), width[0]), axis=1)[rows]
    order = (within + blocks[:-1][rows][:, None]).reshape(-1)
else:
    order = np.lexsort((-s, rq))
q, d, s = rq[order].astype(np.int64), dcodes[order], s[order]
tie = (q[1:] == q[:-1]) & (s[1:] == s[:-1])  # equal scores: doc id descending
if tie.any():
    member = np.zeros(n, bool)
    member[:-1] |= tie
    member[1:] |= tie
    pos = np.flatnonzero(member)
    cont = np.zeros(len(pos), bool)
    cont[1:] = tie[pos[1:] - 1]
    group = np.cumsum(~cont)
    involved, inverse = np.unique(d[pos], return_inverse=True)
    names = np.array(docs.take(pa.Array.from_buffers(pa.int64(), len(involved), [None, pa.py_buffer(involved.astype(np.int64))])).to_pylist(), dtype=object)
    srank = np.empty(len(involved), np.int64)
    srank[np.argsort(names, kind="stable")] = np.arange(len(involved))
    within = np.lexsort((-srank[inverse.reshape(-1)], group))
    perm = np.arange(n)
    perm[pos] = pos[within]
    q, d, s = q[perm], d[perm], s[perm]
qstarts = np.searchsorted(q, np.arange(nq + 1))
rank = np.arange(n) - qstarts[q]
stages["rank"] = time.perf_counter() - t

t = time.perf_counter()
# grades of the ranked entries (-1: not judged): a document judged for one query is looked up
# in a table, the others through sorted (query, doc) keys
grade = np.full(n, -1, np.int64)
jk = jd >= 0
jq2, jd2, jg2 = jq[jk], jd[jk], jg[jk]
nj = np.bincount(jd2, minlength=len(docs))
single = nj[jd2] == 1
doc_query = np.full(len(docs), -1, np.int64)
doc_query[jd2[single]] = jq2[single]
doc_grade = np.zeros(len(docs), np.int64)
doc_grade[jd2[single]] = jg2[single]
hit = doc_query[d] == q
grade[hit] = doc_grade[d[hit]]
if not single.all():
    keys = jq2[~single] * len(docs) + jd2[~single]
    o = np.argsort(keys)
    keys, mg = keys[o], jg2[~single][o]
    cand = np.flatnonzero(nj[d] > 1)
    ek = q[cand] * len(docs) + d[cand]
    p = np.minimum(np.searchsorted(keys, ek), len(keys) - 1)
    f = keys[p] == ek
    grade[cand[f]] = mg[p[f]]
stages["join"] = time.perf_counter() - t

t = time.perf_counter()
R = np.bincount(jq[jg >= 1], minlength=nq).astype(np.float64)
def div(a, b):
    out = np.zeros(nq)
    np.divide(a, b, out=out, where=b > 0)
    return out
rel = grade >= 1
rq_, rr_ = q[rel], rank[rel]
first_rel = np.searchsorted(rq_, np.arange(nq + 1))
nth = np.arange(len(rq_)) - first_rel[rq_] + 1
ap = div(np.bincount(rq_, weights=nth / (rr_ + 1.0), minlength=nq), R)
rr = np.zeros(nq)
f1 = nth == 1
rr[rq_[f1]] = 1.0 / (rr_[f1] + 1.0)
r100 = div(np.bincount(rq_[rr_ < 100], minlength=nq).astype(np.float64), R)
top = (rank < 10) & (grade > 0)
dcg = np.bincount(q[top], weights=grade[top] / np.log2(rank[top] + 2.0), minlength=nq)
pos = jg > 0
iq, ig = jq[pos], jg[pos]
io = np.lexsort((-ig, iq))
iq, ig = iq[io], ig[io].astype(np.float64)
irank = np.arange(len(iq)) - np.searchsorted(iq, np.arange(nq + 1))[iq]
it = irank < 10
idcg = np.bincount(iq[it], weights=ig[it] / np.log2(irank[it] + 2.0), minlength=nq)
ndcg = div(dcg, idcg)
stages["kernels"] = time.perf_counter() - t
means = {"nDCG@10": ndcg.mean(), "AP": ap.mean(), "R@100": r100.mean(), "RR": rr.mean()}
print(" ".join(f"{k}={float(v)!r}" for k, v in means.items()))
stages["whole"] = time.perf_counter() - T0
sys.stderr.write("STAGES " + " ".join(f"{k}={v:.3f}" for k, v in stages.items()) + "\n")
"""


def _time_command(command: list[str], env: dict[str, str]) -> dict:
    """Run *command* under GNU time: wall and CPU seconds, peak RSS (MB), output."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as out:
        start = time.perf_counter()
        proc = subprocess.run(
            ["/usr/bin/time", "-q", "-f", "%M %U %S", "-o", out.name, *command],
            env=env,
            capture_output=True,
            text=True,
        )
        wall = time.perf_counter() - start
        peak_kb, user, system = out.read().split()[-3:]
    if proc.returncode != 0:
        raise SystemExit(
            f"{' '.join(command[:4])} failed ({proc.returncode}):\n{proc.stderr[-2000:]}"
        )
    return {
        "wall": wall,
        "cpu": float(user) + float(system),
        "rss_mb": int(peak_kb) / 1024,
        "stdout": proc.stdout,
        "stderr": proc.stderr,
    }


def _commands(
    qrels: Path, run: Path, baseline: Path | None, pycache: Path
) -> dict[str, tuple[list, dict]]:
    # compiled modules kept (outside the trees), as an installed package has them: with
    # PYTHONDONTWRITEBYTECODE and a source tree, every run compiled ~85 modules (~0.3 s CPU)
    drop = ("PYTHONPATH", "PYTHONDONTWRITEBYTECODE")
    base = {k: v for k, v in os.environ.items() if k not in drop}
    base.setdefault("PYTHONPYCACHEPREFIX", str(pycache))
    src = Path(__file__).resolve().parents[1] / "src"
    measures = [x for m in MEASURES for x in ("-m", m)]
    evaluate = [sys.executable, "-m", "nuggetbench", "evaluate", str(qrels), str(run), *measures]
    out = {
        "floor": ([sys.executable, "-c", FLOOR, str(qrels), str(run)], base),
        "evaluate": (evaluate, {**base, "PYTHONPATH": str(src)}),
    }
    if baseline is not None:
        out["evaluate (baseline)"] = (evaluate, {**base, "PYTHONPATH": str(baseline)})
    return out


def _check_means(commands: dict[str, tuple[list, dict]]) -> None:
    """The floor's means equal every evaluate's (``--format json``), to 1e-9."""
    floor = _time_command(*commands["floor"])["stdout"].split()
    want = {k: float(v) for k, v in (item.split("=") for item in floor)}
    for name, (command, env) in commands.items():
        if name == "floor":
            continue
        got = json.loads(_time_command([*command, "--format", "json"], env)["stdout"])
        worst = max(abs(float(got[m]) - want[m]) for m in MEASURES)
        if worst > 1e-9:
            raise SystemExit(f"{name}'s means {got} differ from the floor's {want} ({worst:.2g})")
    print("  means: floor = evaluate (1e-9): " + ", ".join(f"{m} {want[m]:.4f}" for m in MEASURES))


def bench(folder: Path, repeat: int, baseline: Path | None) -> None:
    qrels, run = folder / "qrels.txt", folder / "run.txt"
    commands = _commands(qrels, run, baseline, folder.parent / "pycache")
    _check_means(commands)
    rows: dict[str, list[dict]] = {name: [] for name in commands}
    loads = []
    for _ in range(repeat):
        loads.append(os.getloadavg()[0])
        for name, (command, env) in commands.items():
            rows[name].append(_time_command(command, env))
    stages = [r["stderr"].split("STAGES ", 1)[1].strip() for r in rows["floor"]]
    print(f"  load (1 min) at each round: {', '.join(f'{x:.1f}' for x in loads)}")
    print(f"  floor's stages, last round: {stages[-1]}")
    print(
        f"  {'command':20s} {'wall s':>7s} {'cpu s':>7s} {'wall/floor':>11s} {'cpu/floor':>10s}"
        f" {'peak RSS MB':>12s}"
    )
    for name in commands:
        mine = rows[name]
        wall_ratio = statistics.median(m["wall"] / f["wall"] for m, f in zip(mine, rows["floor"]))
        cpu_ratio = statistics.median(m["cpu"] / f["cpu"] for m, f in zip(mine, rows["floor"]))
        print(
            f"  {name:20s} {statistics.median(m['wall'] for m in mine):7.2f} "
            f"{statistics.median(m['cpu'] for m in mine):7.2f} {wall_ratio:10.2f}x "
            f"{cpu_ratio:9.2f}x {max(m['rss_mb'] for m in mine):12.0f}"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--depths", default="100,1000", help="documents per query, comma-separated")
    parser.add_argument("--repeat", type=int, default=5, help="interleaved rounds (median)")
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "nb_floor")
    parser.add_argument("--baseline-src", type=Path, default=None, help="another nuggetbench src")
    args = parser.parse_args(argv)
    from measures import generate

    for depth in (int(x) for x in args.depths.split(",")):
        folder = args.workdir / f"q{args.queries}_d{depth}"
        if not ((folder / "run.txt").exists() and (folder / "qrels.txt").exists()):
            generate(folder, n_queries=args.queries, depth=depth)
        print(f"{args.queries} queries x {depth}: median of {args.repeat}, interleaved")
        bench(folder, args.repeat, args.baseline_src)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
