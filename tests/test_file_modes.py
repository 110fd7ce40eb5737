"""Files nuggetbench writes have the user's umask (issue 29, case 22: results, runs, qrels and
nuggets were 0600 under umask 022, as ``tempfile.mkstemp`` makes them)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from nuggetbench._atomic import atomic_write, make_temp, make_temp_dir

REPO = Path(__file__).resolve().parents[1]


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _current_umask() -> int:
    """The umask of this process, read from /proc (never set: it is process-wide)."""
    status = Path("/proc/self/status")
    if not status.exists():
        pytest.skip("no /proc/self/status to read the umask from")
    for line in status.read_text().splitlines():
        if line.startswith("Umask:"):
            return int(line.split()[1], 8)
    pytest.skip("this kernel does not report the umask")


def test_atomic_writes_and_staging_folders_get_the_users_mode(tmp_path):
    umask = _current_umask()
    target = tmp_path / "x.json"
    with atomic_write(target) as fh:
        fh.write("{}")
    assert _mode(target) == 0o666 & ~umask
    fd, name = make_temp(tmp_path, ".y.", ".tmp")
    os.close(fd)
    assert _mode(Path(name)) == 0o666 & ~umask
    assert _mode(Path(make_temp_dir(tmp_path, ".z.", ".tmp"))) == 0o777 & ~umask


@pytest.mark.skipif(os.name != "posix", reason="umask is POSIX")
@pytest.mark.parametrize("umask", ["022", "027"])
def test_run_outputs_have_the_umask_of_the_shell(tmp_path, umask):
    folder = tmp_path / "tiny"
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": f"d{i}", "text": f"word{i} cats"}) + "\n" for i in range(3))
    )
    (folder / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "cats"}) + "\n")
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    cmd = f"umask {umask} && exec {sys.executable} -m nuggetbench run {folder} -r bm25 -o {out}"
    done = subprocess.run(
        ["sh", "-c", cmd + " --no-progress"], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    want = 0o666 & ~int(umask, 8)
    files = [out / "results.json", *(out / "runs").iterdir()]
    assert len(files) >= 2
    assert {f.name: oct(_mode(f)) for f in files} == {f.name: oct(want) for f in files}
    assert _mode(out / "runs") == 0o777 & ~int(umask, 8)
