"""`import nuggetbench` and `nuggetbench --help` must not import heavy libraries."""

from __future__ import annotations

import subprocess
import sys

HEAVY = [
    "torch",
    "sentence_transformers",
    "transformers",
    "bm25s",
    "datasets",
    "scipy",
    "pandas",
    "numba",
    "openai",
]


def _loaded_after(code: str) -> set[str]:
    script = code + "\nimport sys, json\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    import json

    return set(json.loads(out.stdout.strip().splitlines()[-1]))


def test_import_is_light():
    mods = _loaded_after("import nuggetbench")
    assert not {m for m in HEAVY if m in mods}


def test_help_is_light():
    code = (
        "import sys\nfrom nuggetbench.cli import cli\n"
        "try:\n    cli.main(args=['--help'], prog_name='nuggetbench', standalone_mode=False)\n"
        "except SystemExit:\n    pass\n"
    )
    mods = _loaded_after(code)
    assert not {m for m in HEAVY if m in mods}


def test_console_script_and_module_help():
    out = subprocess.run(
        [sys.executable, "-m", "nuggetbench", "--help"], capture_output=True, text=True
    )
    assert out.returncode == 0
    for cmd in ("run", "evaluate", "datasets", "measures"):
        assert cmd in out.stdout
