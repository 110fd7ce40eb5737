"""Benchmark: where the time of ``nuggetbench evaluate`` goes, stage by stage, before and after.

Runs ``nuggetbench evaluate QRELS RUN -m nDCG@10 -m AP -m R@100 -m RR`` (or ``-m all_trec``) in
a child process for each source tree given (this checkout's ``src``, and ``--baseline-src`` if
given), with the main stages' functions wrapped by a timer, and prints one column per tree:

- ``imports``: from the start of the child to the command's first stage (interpreter, click,
  numpy, pyarrow, nuggetbench);
- ``sniff qrels``, ``read qrels``, ``read run``, ``checks``, ``measures``, ``print``: the time
  spent inside those functions (``data.diversity_io.sniff_nugget_qrels``,
  ``data.trec.read_qrels``, ``data.trec.read_run_owned`` or ``read_run``,
  ``measures.checks.check_findings``, ``measures.evaluate.evaluate_quietly`` (``evaluate`` in an
  older tree), ``cli.evaluate._render``); a stage that runs in a thread beside another (the run
  file is read while the judgments load, the measures are computed while the checks run) is
  marked ``(thread)``: its time overlaps the others';
- ``exit``: from the end of the command to the end of the process (the interpreter's teardown);
- ``whole``: the wall time of the child, as ``time`` measures it.

Each tree is run ``--repeat`` times, interleaved, and the median of each stage is printed::

    python benchmarks/evaluate_stages.py --folder /tmp/nbb100 --repeat 5 --baseline-src /tmp/base/src

The folder holds ``qrels.txt`` and ``run.txt`` (``benchmarks/measures.py --folder DIR`` writes
them). Only ratios on the same machine mean anything.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

STAGES = {
    "sniff qrels": ("nuggetbench.data.formats.diversity", "sniff_nugget_qrels"),
    "read qrels": ("nuggetbench.data.formats.trec", "read_qrels"),
    "read run": ("nuggetbench.data.formats.trec", "read_run_owned"),
    "checks": ("nuggetbench.data.checks", "check_findings"),
    "measures": ("nuggetbench.measures.compute", "evaluate_quietly"),
    "print": ("nuggetbench.cli.evaluate", "_render"),
}

CHILD = r"""
import importlib, json, os, sys, threading, time
T0 = time.perf_counter()
STAGES = json.loads(sys.argv[1])
spent, first, threads = {}, [], set()
def wrap(module, name, label):
    mod = importlib.import_module(module)
    older = {"read_run_owned": "read_run", "evaluate_quietly": "evaluate"}
    if not hasattr(mod, name) and name in older:  # an older tree
        name = older[name]
    original = getattr(mod, name, None)
    if original is None:
        return
    def timed(*args, **kwargs):
        start = time.perf_counter()
        first.append(start)
        if threading.current_thread() is not threading.main_thread():
            threads.add(label)
        try:
            return original(*args, **kwargs)
        finally:
            spent[label] = spent.get(label, 0.0) + time.perf_counter() - start
    setattr(mod, name, timed)
    for other in list(sys.modules.values()):  # names imported with "from ... import"
        if other is not None and other is not mod and getattr(other, name, None) is original:
            setattr(other, name, timed)
import nuggetbench.cli, nuggetbench.evaluation, nuggetbench.cli.evaluate
for label, (module, name) in STAGES.items():
    wrap(module, name, label)
def report():
    end = time.perf_counter()
    out = {"imports": min(first) - T0 if first else 0.0, **spent, "_threads": sorted(threads)}
    out["_end"] = time.time()
    sys.stderr.write("STAGES " + json.dumps(out) + "\n")
    sys.stderr.flush()
import atexit
atexit.register(report)
sys.argv = ["nuggetbench", *sys.argv[2:]]
try:
    from nuggetbench._entry import main  # the console script's entry point
except ImportError:  # an older tree
    from nuggetbench.cli import main
main()
"""


def run_once(src: Path, args: list[str]) -> dict[str, float]:
    """One child run over the tree *src*: ``{stage: seconds}`` plus ``exit`` and ``whole``."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(src)
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(STAGES), *args],
        capture_output=True,
        text=True,
        env=env,
    )
    whole = time.perf_counter() - start
    ended = time.time()
    if done.returncode != 0:
        raise SystemExit(f"{src} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    line = next(x for x in done.stderr.splitlines() if x.startswith("STAGES "))
    stages = json.loads(line[len("STAGES ") :])
    stages["exit"] = max(ended - stages.pop("_end"), 0.0)
    stages["whole"] = whole
    return stages


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--folder", type=Path, required=True, help="holds qrels.txt and run.txt")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--baseline-src", type=Path, default=None)
    parser.add_argument("--all-trec", action="store_true", help="-m all_trec --format trec_eval")
    args = parser.parse_args(argv)
    measures = ["-m", "nDCG@10", "-m", "AP", "-m", "R@100", "-m", "RR"]
    if args.all_trec:
        measures = ["-m", "all_trec", "--format", "trec_eval"]
    command = ["evaluate", str(args.folder / "qrels.txt"), str(args.folder / "run.txt"), *measures]
    trees = {"nuggetbench": Path(__file__).resolve().parents[1] / "src"}
    if args.baseline_src is not None:
        trees["baseline"] = args.baseline_src.resolve()
    runs: dict[str, list[dict]] = {name: [] for name in trees}
    for _ in range(args.repeat):
        for name, src in trees.items():
            runs[name].append(run_once(src, command))
    labels = ["imports", *STAGES, "exit", "whole"]
    print(f"nuggetbench {' '.join(command)}: median of {args.repeat}, seconds")
    print(f"{'stage':16s}" + "".join(f"{name:>16s}" for name in trees))
    for label in labels:
        cells = []
        for name in trees:
            values = [r.get(label, 0.0) for r in runs[name]]
            thread = any(label in r.get("_threads", []) for r in runs[name])
            cells.append(f"{statistics.median(values):7.2f}" + (" (thread)" if thread else " " * 9))
        print(f"{label:16s}" + "".join(f"{c:>16s}" for c in cells))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
