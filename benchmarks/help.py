"""Benchmark: wall time of ``nuggetbench --help`` (the whole process), interleaved with an older
``src`` and a bare ``python -c pass``; prints each one's median of ``--repeat`` runs.

Usage::

    python benchmarks/help.py [--repeat 21] [--baseline-src DIR]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"


def _time(cmd: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=21)
    parser.add_argument("--baseline-src", type=Path, default=None)
    args = parser.parse_args(argv)
    base = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    commands = {
        "nuggetbench --help": (
            [sys.executable, "-m", "nuggetbench", "--help"],
            {**base, "PYTHONPATH": str(SRC)},
        ),
        "python -c pass": ([sys.executable, "-c", "pass"], base),
    }
    if args.baseline_src is not None:
        commands["--help (baseline)"] = (
            [sys.executable, "-m", "nuggetbench", "--help"],
            {**base, "PYTHONPATH": str(args.baseline_src)},
        )
    times: dict[str, list[float]] = {k: [] for k in commands}
    for _ in range(args.repeat):
        for name, (cmd, env) in commands.items():
            times[name].append(_time(cmd, env))
    for name, values in times.items():
        print(f"{name:22s} median {statistics.median(values) * 1000:6.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
