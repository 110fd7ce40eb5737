"""The runtime holds its weight without touching the process: no import hook, no allocator or
signal switch from library code, and the pyarrow conversions that avoid pandas give pyarrow's
own values. The race this replaced: a probe that made pandas unimportable while a reader thread
on the careful path (comment lines) imported it (trec_eval 10.0's comment test files)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

SRC = Path(__file__).resolve().parents[1] / "src"


def test_library_code_changes_no_process_wide_state():
    patterns = {
        "sys.meta_path": re.compile(r"sys\.meta_path"),
        "sys.path_hooks": re.compile(r"sys\.path_hooks"),
        "signal.signal": re.compile(r"signal\.signal\("),
        "set_memory_pool": re.compile(r"set_memory_pool"),
        "os.environ write": re.compile(
            r"os\.environ\[[^]]+\]\s*=|os\.environ\.(setdefault|update)\("
        ),
        "sys.setrecursionlimit": re.compile(r"sys\.set\w+\("),
        "multiprocessing start method": re.compile(r"set_start_method\("),
        "numba's thread count": re.compile(r"set_num_threads\("),
    }
    # Pyserini's JVM is one per process by its design: pyjnius reads JAVA_HOME when it starts it
    allowed = {("lucene.py", "os.environ write")}
    found = []
    for path in sorted((SRC / "nuggetbench").rglob("*.py")):
        if path.name == "_runtime.py":
            continue  # prefer_system_allocator, called by the console entry only
        text = path.read_text()
        for what, pattern in patterns.items():
            if pattern.search(text) and (path.name, what) not in allowed:
                found.append(f"{path.relative_to(SRC)}: {what}")
    assert found == []


def test_only_the_console_entry_asks_for_the_allocator():
    users = [
        str(p.relative_to(SRC))
        for p in sorted((SRC / "nuggetbench").rglob("*.py"))
        if "prefer_system_allocator()" in p.read_text() and p.name != "_runtime.py"
    ]
    assert users == ["nuggetbench/_entry.py"]


@pytest.mark.parametrize("seed", range(3))
def test_conversions_equal_pyarrows(seed):
    pa = pytest.importorskip("pyarrow")
    from nuggetbench.data import arrow

    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 300))
    for values in (
        rng.integers(-(2**40), 2**40, n),
        rng.integers(0, 200, n).astype(np.int32),
        rng.random(n),
        rng.random(n) < 0.5,
        rng.integers(0, 2**63, n, dtype=np.uint64),
    ):
        got = arrow.from_numpy(values)
        assert got.equals(pa.array(values))
        back = arrow.to_numpy(got)
        assert back.dtype == values.dtype and np.array_equal(back, values)
        if n > 3:  # a slice: the offset is honoured
            part = got.slice(2, n - 3)
            assert np.array_equal(arrow.to_numpy(part), values[2 : n - 1])
    ids = np.array(
        [f"d{i}" if i % 3 else f"\u00e9\U0010ff80{i}" for i in rng.integers(0, 10**6, n)],
        dtype=object,
    )
    strings = arrow.strings(ids)
    assert strings.equals(pa.array(ids, type=pa.string()))
    assert arrow.to_numpy(strings).tolist() == ids.tolist()
    with pytest.raises(TypeError):
        arrow.strings(["a", 3])
    with pytest.raises(UnicodeEncodeError):
        arrow.strings(["a", "\ud800"])


COMMENT_FILES = ("qrels.comment.test", "results.comment.test")


def _comment_files(shared_data: Path) -> tuple[Path, Path]:
    folder = shared_data / "trec_eval10"
    paths = tuple(folder / name for name in COMMENT_FILES)
    if not all(p.is_file() for p in paths):
        pytest.skip("trec_eval 10.0's comment test files are not in ../shared/data/trec_eval10")
    return paths


def test_comment_files_evaluate_every_time_from_the_console(shared_data):
    qrels, results = _comment_files(shared_data)
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    outputs = set()
    for _ in range(8):
        done = subprocess.run(
            [sys.executable, "-m", "nuggetbench", "evaluate", str(qrels), str(results), "-m", "AP"],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        outputs.add(done.stdout)
    assert len(outputs) == 1


def test_comment_files_evaluate_from_threads_in_a_fresh_process(shared_data):
    """Four threads evaluate the comment files at once in a process where nothing imported
    pandas yet (the reader threads import it on the careful path while the fast paths run)."""
    qrels, results = _comment_files(shared_data)
    script = f"""
import sys, threading
from nuggetbench.evaluation import evaluate_dataset
out, errors = [], []
def work():
    try:
        ev = evaluate_dataset({str(qrels)!r}, {str(results)!r}, measures=["AP", "nDCG@10"])
        out.append(ev.results.means["AP"])
    except BaseException as exc:
        errors.append(repr(exc))
threads = [threading.Thread(target=work) for _ in range(4)]
[t.start() for t in threads]
[t.join() for t in threads]
assert not errors, errors
assert len(out) == 4 and len(set(out)) == 1, out
print("OK", out[0])
"""
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    for _ in range(3):
        done = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300
        )
        assert done.returncode == 0, done.stderr[-3000:]
        assert done.stdout.startswith("OK")


def test_comment_files_in_process_threads(shared_data):
    from nuggetbench.evaluation import evaluate_dataset

    qrels, results = _comment_files(shared_data)
    values, errors = [], []

    def work():
        try:
            values.append(
                evaluate_dataset(str(qrels), str(results), measures=["AP"]).results.means["AP"]
            )
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(repr(exc))

    threads = [threading.Thread(target=work) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and len(set(values)) == 1 and len(values) == 6


def test_a_registry_looked_up_from_threads_waits_for_its_providers(tmp_path, monkeypatch):
    """A thread that looks a name up while another imports the providers waits for the import
    (it used to see the provider marked loaded and report an unknown name: 'unknown measure AP'
    in 1 of 30 processes evaluating from 4 threads)."""
    from nuggetbench.plugins import Registry

    registry = Registry("thing", providers=["slow_provider_for_test"])
    (tmp_path / "slow_provider_for_test.py").write_text(
        "import time, nuggetbench.plugins as p\ntime.sleep(0.3)\nREGISTRY = None\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    original = Registry.load_providers

    def load_and_register(self):
        original(self)
        self.register("x", 42)

    monkeypatch.setattr(Registry, "load_providers", load_and_register)
    found, errors = [], []

    def work():
        try:
            found.append(registry.lookup("x"))
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(repr(exc))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and found == [42] * 4


def _square_plus(offset):  # a process_map factory (module level: the workers import it)
    def square(x):
        if x == "boom":
            raise ValueError("no square for boom")
        if x == "die":
            os._exit(3)
        print("noise on stdout")  # must not corrupt the results
        return x * x + offset

    return square


def test_process_map_keeps_order_and_reports_failures(tmp_path, monkeypatch):
    from nuggetbench import _runtime

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parent))
    target = "test_runtime:_square_plus"
    assert list(_runtime.process_map(target, (1,), range(20), 3, ahead=1)) == [
        x * x + 1 for x in range(20)
    ]
    with pytest.raises(RuntimeError, match="no square for boom"):
        list(_runtime.process_map(target, (0,), [1, "boom", 3], 2))
    with pytest.raises(ChildProcessError, match="exit status 3"):
        list(_runtime.process_map(target, (0,), [1, 2, "die", 4], 2))
    # a consumer that stops early ends the workers (no process left behind)
    gen = _runtime.process_map(target, (0,), range(1000), 2)
    assert next(gen) == 0
    gen.close()
