"""Reproduction: evaluate trec_eval 10.0's comment test files from several threads at once in fresh
processes, against an older ``src`` too, and count the processes in which an evaluation raised.

The comment files send the run reader to the careful path, which imports pandas; the older tree
made pandas unimportable during a pyarrow probe in another thread (``sys.meta_path``), so some
processes died with ``ImportError: pandas is not needed by nuggetbench's pyarrow fast paths``.

Usage::

    python benchmarks/comment_race.py [--processes 40] [--threads 4] [--baseline-src DIR]
        [--folder ../shared/data/trec_eval10]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
FOLDER = Path(__file__).resolve().parents[2] / "shared" / "data" / "trec_eval10"

SCRIPT = """
import sys, threading
from nuggetbench.evaluation import evaluate_dataset
errors = []
def work():
    try:
        evaluate_dataset("qrels.comment.test", "results.comment.test", measures=["AP", "nDCG@10"])
    except BaseException as exc:
        errors.append(repr(exc)[:160])
threads = [threading.Thread(target=work) for _ in range(int(sys.argv[1]))]
[t.start() for t in threads]
[t.join() for t in threads]
print(len(errors), errors[0] if errors else "")
"""


def count(src: Path, folder: Path, processes: int, threads: int) -> tuple[int, str]:
    """``(processes with an error, the first error)``."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    failed, first = 0, ""
    for _ in range(processes):
        done = subprocess.run(
            [sys.executable, "-c", SCRIPT, str(threads)],
            cwd=folder,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        n, _, error = done.stdout.strip().partition(" ")
        if done.returncode or n != "0":
            failed += 1
            first = first or error or done.stderr[-200:]
    return failed, first


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--processes", type=int, default=40)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--baseline-src", type=Path, default=None)
    parser.add_argument("--folder", type=Path, default=FOLDER)
    args = parser.parse_args(argv)
    trees = {"nuggetbench": SRC}
    if args.baseline_src is not None:
        trees["nuggetbench (baseline)"] = args.baseline_src
    for name, src in trees.items():
        failed, first = count(src, args.folder, args.processes, args.threads)
        print(f"{name:24s} {failed} of {args.processes} processes raised  {first}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
