"""Shared fixtures: the real data folder beside the repository (skips when absent)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("NUGGETBENCH_SHARED_DATA", REPO.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """``../shared/data`` (real benchmark data); tests using it skip when it is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip("../shared/data is absent (real-data checks run only beside it)")
    return SHARED_DATA


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory, monkeypatch):
    """Every test gets its own NUGGETBENCH_HOME and no NUGGETBENCH_DATA unless it sets one."""
    home = tmp_path_factory.mktemp("nb_home")
    monkeypatch.setenv("NUGGETBENCH_HOME", str(home))
    monkeypatch.delenv("NUGGETBENCH_DATA", raising=False)
    monkeypatch.setenv("NUGGETBENCH_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    yield home
