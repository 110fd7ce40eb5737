"""README (issue 18, point 14): the two commands unchanged, and how to pick CPU or CUDA PyTorch."""

from __future__ import annotations

from pathlib import Path

README = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")


def test_the_two_commands_are_unchanged():
    assert (
        'pip install -e ".[fast]" && NUGGETBENCH_DATA=../shared/data nuggetbench run beir/scifact '
        "-r bm25:k1=0.9,b=0.4 -r bm25:k1=1.5,b=0.75" in README
    )
    assert (
        'pip install torch==2.13.0 && pip install -e ".[dev]" && python -m pytest -n 2 -q' in README
    )


def test_readme_says_which_torch_build_and_how_to_choose():
    assert "2.13.0+cpu" in README and "CUDA build" in README
    assert "--index-url https://download.pytorch.org/whl/cpu" in README
    assert "torch.cuda.is_available()" in README
