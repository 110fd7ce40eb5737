"""``nuggetbench --help`` is printed from stored text without importing click
(:mod:`nuggetbench._entry`); the text must be exactly what click renders."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from nuggetbench import _entry
from nuggetbench.cli import cli

SLOW = "from nuggetbench.cli import main; main()"


def _run(args: list[str], columns: int) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": str(columns)}
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, env=env, check=False
    )


def test_stored_texts_are_what_click_renders_now():
    stored = _entry.read_help_file(_entry.HELP_FILE)
    fresh = _entry.help_texts()
    assert sorted(fresh, key=int) == [str(w) for w in range(50, 99)]
    assert stored == fresh, "the top-level help changed: python -m nuggetbench._entry --write-help"
    assert cli.context_settings["max_content_width"] == _entry.MAX_CONTENT_WIDTH


@pytest.mark.parametrize("columns", [30, 80, 99, 100, 250])
@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_fast_path_prints_what_click_prints(columns, flag):
    fast = _run(["-m", "nuggetbench", flag], columns)
    slow = _run(["-c", SLOW, flag], columns)
    assert fast.returncode == slow.returncode == 0
    assert fast.stdout == slow.stdout and fast.stderr == slow.stderr == ""
    assert "Usage: nuggetbench [OPTIONS] COMMAND" in fast.stdout


def test_fast_path_imports_no_click():
    code = (
        "import sys; from nuggetbench._entry import main; main(['--help']); "
        "sys.stderr.write(str(sorted(m for m in sys.modules if m.startswith(('click', 'numpy')))))"
    )
    done = _run(["-c", code], 80)
    assert done.returncode == 0 and done.stderr == "[]"
    assert "Commands:" in done.stdout


def test_other_command_lines_go_to_click(capsys):
    with pytest.raises(SystemExit) as exc:
        _entry.main(["--no-such-option"])
    assert exc.value.code == 2
    assert "No such option" in capsys.readouterr().err
    _entry.main(["--version"])
    assert "nuggetbench, version" in capsys.readouterr().out


def test_without_the_stored_file_click_renders_the_help(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(_entry, "HELP_FILE", str(tmp_path / "missing.txt"))
    assert _entry.stored_help(78) is None
    monkeypatch.setenv("COLUMNS", "80")
    _entry.main(["--help"])
    assert capsys.readouterr().out == _entry.help_texts()["78"] + "\n"


def test_write_help_is_atomic_and_round_trips(tmp_path):
    path = tmp_path / "help.txt"
    _entry.write_help(str(path))
    assert _entry.read_help_file(str(path)) == _entry.help_texts()
    assert [p.name for p in tmp_path.iterdir()] == ["help.txt"]
    path.write_text("78\0text")  # cut short
    with pytest.raises(ValueError):
        _entry.read_help_file(str(path))


@pytest.mark.parametrize("columns", ["", "abc", "0", "-3", "120", "51"])
def test_terminal_columns_is_shutils(columns, monkeypatch):
    import shutil

    if columns:
        monkeypatch.setenv("COLUMNS", columns)
    else:
        monkeypatch.delenv("COLUMNS", raising=False)
    assert _entry.terminal_columns() == shutil.get_terminal_size().columns
