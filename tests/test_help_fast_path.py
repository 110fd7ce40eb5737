"""``nuggetbench --help`` is click's own help (no stored copy to keep in step), and the console
entry hands every command line to click."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from nuggetbench import _entry
from nuggetbench.cli import cli


def _run(args: list[str], columns: int) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": str(columns)}
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, env=env, check=False
    )


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_help_is_what_click_renders(flag):
    import click

    done = _run(["-m", "nuggetbench", flag], 80)
    assert done.returncode == 0 and done.stderr == ""
    ctx = click.Context(cli, info_name="nuggetbench", terminal_width=78, **cli.context_settings)
    assert done.stdout == cli.get_help(ctx) + "\n"
    assert "Usage: nuggetbench [OPTIONS] COMMAND" in done.stdout


def test_other_command_lines_go_to_click(capsys):
    with pytest.raises(SystemExit) as exc:
        _entry.main(["--no-such-option"])
    assert exc.value.code == 2
    assert "No such option" in capsys.readouterr().err
    _entry.main(["--version"])
    assert "nuggetbench, version" in capsys.readouterr().out
