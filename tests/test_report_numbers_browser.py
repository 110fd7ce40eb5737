"""The numbers-only report (issue 37, item 7) in a real browser: a folder whose dataset is not
on this machine opens with its banner, its per-query table and a query view that says why it
shows no documents; no console error. Skips where Chromium or playwright is absent."""

from __future__ import annotations

import json
import shutil

import pytest

from nuggetbench import report
from report_fixtures import beir_folder, run_folder
from test_report_browser import CHROMIUM, Page

pytestmark = pytest.mark.browser
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")


@pytest.fixture(scope="module")
def browser():
    from pathlib import Path

    if not Path(CHROMIUM).exists():
        pytest.skip("Chromium is absent (apt-get install chromium); browser tests need it")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield b
        b.close()


def test_numbers_only_report_opens_every_view(browser, tmp_path):
    out = tmp_path / "out"
    run_folder(beir_folder(tmp_path / "data"), out)
    shutil.move(tmp_path / "data", tmp_path / "gone")  # the colleague has no dataset
    path = report.html(out, partial=True)
    results = json.loads((out / "results.json").read_text())
    pg = Page(browser, path)
    assert "Numbers only." in pg.texts("main")[0]
    pg.view("perquery")
    rows = pg.page.locator("#pq-table tbody tr").count()
    assert rows == len(next(iter(results["systems"].values()))["query_ids"])
    pg.view("query")
    assert pg.texts("#no-texts")[0].startswith("Numbers only: the dataset")
    assert pg.page.locator("#qv-scores tbody tr").count() == len(results["measures"])
    assert pg.page.locator("#qv .cols, #qv-judged").count() == 0  # nothing to show there
    pg.view("depth")
    assert "No depth curves" in pg.texts("#depth")[0]
    pg.close(tmp_path / "numbers-only.png")
