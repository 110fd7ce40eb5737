"""Whole-process timing for the benchmark scripts: wall seconds and the child's own peak RSS.

``os.wait4``'s ``ru_maxrss`` is not the child's own peak on Linux: a forked child starts with the
parent's resident pages, and exec keeps that high-water mark, so every child of a parent holding
hundreds of MB reports at least that. The peak is therefore read from GNU time (``/usr/bin/time
-f %M``, the exec'd command's maximum resident set in KiB), which the small ``time`` process forks
itself; without GNU time it falls back to ``wait4`` and says so.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time

GNU_TIME = "/usr/bin/time" if os.path.exists("/usr/bin/time") else shutil.which("time")


def timed(command: list[str], env: dict[str, str]) -> tuple[float, float, int, str]:
    """Run *command* with *env*: ``(wall seconds, peak RSS in MB, exit status, stdout+stderr)``.

    The peak RSS is the command's own (GNU time's ``%M``); ``nan`` when GNU time is missing
    and ``wait4`` would report the parent's pages (see the module docstring)."""
    with tempfile.NamedTemporaryFile("r", suffix=".rss") as rss:
        wrapped = [GNU_TIME, "-q", "-f", "%M", "-o", rss.name, *command] if GNU_TIME else command
        start = time.perf_counter()
        proc = subprocess.run(wrapped, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        seconds = time.perf_counter() - start
        text = rss.read().strip().splitlines() if GNU_TIME else []
    peak = int(text[-1]) / 1024 if text and text[-1].isdigit() else float("nan")
    return seconds, peak, proc.returncode, proc.stdout.decode(errors="replace")
