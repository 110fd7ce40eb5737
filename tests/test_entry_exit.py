"""The console entry's exit (:func:`nuggetbench._entry.leave`): exit handlers run, output is
flushed, the status is kept, and a running non-daemon thread is waited for."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SRC = str(Path(__file__).resolve().parents[1] / "src")


def _python(code: str, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": SRC}
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, timeout=120
    )


def test_leave_runs_exit_handlers_and_flushes_buffered_output():
    code = (
        "import atexit, sys\n"
        "atexit.register(lambda: print('handler ran'))\n"
        "sys.stdout.write('buffered, no newline')\n"
        "from nuggetbench._entry import leave\n"
        "leave(0)\n"
        "print('not reached')\n"
    )
    done = _python(code)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "buffered, no newlinehandler ran\n"


def test_leave_keeps_the_status_and_prints_a_message_code():
    assert _python("from nuggetbench._entry import leave; leave(3)").returncode == 3
    assert _python("from nuggetbench._entry import leave; leave(None)").returncode == 0
    done = _python("from nuggetbench._entry import leave; leave('bad input')")
    assert done.returncode == 1
    assert done.stderr == "bad input\n"


def test_leave_gives_the_status_python_s_exit_gives():
    """Out-of-range and negative codes end as Python's own exit ends them (the low 8 bits)."""
    for code in (-1, -255, 256, 257, 300):
        python = _python(f"import sys; sys.exit({code})").returncode
        assert _python(f"from nuggetbench._entry import leave; leave({code})").returncode == python


def test_leave_waits_for_a_running_non_daemon_thread(tmp_path):
    marker = tmp_path / "written"
    code = (
        "import sys, threading, time\n"
        "from pathlib import Path\n"
        "def work():\n"
        "    time.sleep(0.5)\n"
        f"    Path({str(marker)!r}).write_text('done')\n"
        "threading.Thread(target=work).start()\n"
        "from nuggetbench._entry import leave\n"
        "leave(4)\n"
    )
    done = _python(code)
    assert done.returncode == 4, done.stderr
    assert marker.read_text() == "done"


def test_the_command_line_exits_with_the_commands_status(tmp_path):
    """``python -m nuggetbench`` leaves through :func:`leave`: a bad file is status 2 with the
    error on stderr, a good evaluation status 0 with its table on stdout."""
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 1\nq1 0 d2 0\n")
    run = tmp_path / "run.txt"
    run.write_text("q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 1.0 t\n")
    env = {**os.environ, "PYTHONPATH": SRC}
    base = [sys.executable, "-m", "nuggetbench", "evaluate", str(qrels)]
    good = subprocess.run(
        [*base, str(run), "-m", "AP"], capture_output=True, text=True, env=env, timeout=120
    )
    assert good.returncode == 0, good.stderr
    assert "AP" in good.stdout and "1.0000" in good.stdout
    bad_run = tmp_path / "bad.txt"
    bad_run.write_text("q1 Q0 d1 1 notanumber t\n")
    bad = subprocess.run(
        [*base, str(bad_run), "-m", "AP"], capture_output=True, text=True, env=env, timeout=120
    )
    assert bad.returncode == 2
    assert "bad.txt" in bad.stderr and "notanumber" in bad.stderr


def _pool_after(command: str, env: dict[str, str] | None = None) -> str:
    """The pyarrow pool the fast paths use after *command* ran in a fresh process: the console
    entry (``console``) or a library caller (``library``)."""
    pytest.importorskip("pyarrow")
    code = (
        "import atexit, sys\n"
        "def report():\n"
        "    from nuggetbench.data import arrow as _pyarrow\n"
        "    pa, _ = _pyarrow.load()\n"
        "    print('POOL', pa.default_memory_pool().backend_name)\n"
        "atexit.register(report)\n"
        "from nuggetbench import _entry\n"
        f"if {command!r} == 'console':\n"
        "    sys.argv = ['nuggetbench', 'measures']\n"
        "    _entry.main()\n"
        "else:\n"
        "    _entry.main(['measures'])\n"
    )
    full = {**os.environ, "PYTHONPATH": SRC, **(env or {})}
    if env is None:
        full.pop("ARROW_DEFAULT_MEMORY_POOL", None)
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=full, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip().splitlines()[-1].split()[-1]


def test_console_command_gives_pyarrow_the_system_allocator():
    """The console process hands pyarrow's allocations to malloc (freed pages go back with
    trim_heap); a library caller keeps pyarrow's own default; ARROW_DEFAULT_MEMORY_POOL wins."""
    default = subprocess.run(
        [
            sys.executable,
            "-c",
            "import pyarrow as pa; print(pa.default_memory_pool().backend_name)",
        ],
        capture_output=True,
        text=True,
        env={k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"},
        timeout=120,
    ).stdout.strip()
    assert _pool_after("console") == "system"
    assert _pool_after("library") == default
    assert _pool_after("console", {"ARROW_DEFAULT_MEMORY_POOL": "jemalloc"}) == "jemalloc"
