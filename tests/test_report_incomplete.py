"""The HTML report of an interrupted output folder (``results.json`` with no ``finished``
time, or fewer systems than its provenance names) carries a warning banner at the top."""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner

from nuggetbench import report
from nuggetbench.cli import cli
from report_fixtures import SYSTEMS, beir_folder, run_folder

pytest.importorskip("matplotlib")

BANNER = re.compile(r'<p class="incomplete" role="alert" id="incomplete">(.*?)</p>', re.S)


@pytest.fixture()
def out(tmp_path):
    folder = beir_folder(tmp_path)
    out = tmp_path / "out"
    run_folder(folder, out)
    return out


def _edit(out, change) -> None:
    path = out / "results.json"
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def _banner(html: str) -> str | None:
    found = BANNER.search(html)
    return found.group(1) if found else None


def test_a_complete_folder_has_no_banner(out):
    assert "finished" in json.loads((out / "results.json").read_text())["provenance"]
    html = report.html(out).read_text()
    assert _banner(html) is None and "incomplete experiment" not in html


def test_no_finished_time_shows_the_banner_above_the_summary(out):
    _edit(out, lambda d: d["provenance"].pop("finished"))
    html = report.html(out).read_text()
    text = _banner(html)
    assert text is not None
    assert f"incomplete experiment: {len(SYSTEMS)} of {len(SYSTEMS)} systems" in text
    assert "interrupted" in text and "--overwrite" in text
    assert html.index('id="incomplete"') < html.index('id="summary"')


def test_a_missing_system_is_named_in_the_banner(out):
    def drop_last(data):
        data["provenance"].pop("finished")
        data["systems"].pop(SYSTEMS[-1])
        data.pop("comparison", None)

    _edit(out, drop_last)
    res = CliRunner().invoke(cli, ["report", str(out)])
    assert res.exit_code == 0, res.output
    text = _banner((out / "report.html").read_text())
    assert text is not None
    assert f"1 of 2 systems (missing: {SYSTEMS[-1]})" in " ".join(text.split())
