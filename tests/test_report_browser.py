"""The HTML report in a real browser: Debian's Chromium driven by playwright.

Reports are built from real runs (SciFact BM25 vs BM25 with k1=0.9, b=0.4 and fastbook when
../shared/data is there; synthetic BEIR-layout and FreshStack-format folders always). Each test
sorts and filters the per-query table or opens a query, checks the DOM against results.json and
the run and qrels files read independently, takes a screenshot, and fails on any console error.
Skips (with the reason) where Chromium or playwright is absent.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from nuggetbench import report
from nuggetbench.corpus.spans import fix
from nuggetbench.datasets import load_dataset
from nuggetbench.experiment import run_experiment
from nuggetbench.report import compare_to_folder
from report_fixtures import (
    SIX,
    SYSTEMS,
    beir_folder,
    fastbook_root,
    freshstack_folder,
    page_data,
    read_trec,
    run_folder,
    wtl,
)

pytestmark = pytest.mark.browser
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
pytest.importorskip("matplotlib")


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.skip("Chromium is absent (apt-get install chromium); browser tests need it")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield b
        b.close()


class Page:
    """A page that records console errors and uncaught exceptions."""

    def __init__(self, browser, path: Path, width: int = 1400):
        self.page = browser.new_page(viewport={"width": width, "height": 900})
        self.errors: list[str] = []
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.goto(path.as_uri(), wait_until="load")

    def texts(self, selector: str) -> list[str]:
        return self.page.locator(selector).all_inner_texts()

    def attrs(self, selector: str, name: str) -> list[str]:
        return self.page.eval_on_selector_all(
            selector, f"els => els.map(e => e.getAttribute({name!r}))"
        )

    def view(self, name: str) -> None:
        self.page.click(f"nav a[data-view={name}]")
        self.page.wait_for_selector(f"section#{name}.on")

    def width(self) -> int:
        """The page's scroll width (CSS px): wider than the window means a horizontal scroll."""
        return self.page.evaluate("document.documentElement.scrollWidth")

    def close(self, shot: Path) -> None:
        self.page.screenshot(path=str(shot))
        assert shot.stat().st_size > 10_000
        self.page.close()
        assert self.errors == []


def _qrels_tsv(path: Path) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for line in path.read_text().splitlines()[1:]:
        q, d, g = line.strip().split("\t")
        out.setdefault(q, {})[d] = int(g)
    return out


def _depth_mark(entry: dict, measure: str) -> str:
    """The section sign the summary shows after a mean whose cutoff (``@k``) exceeds the
    deepest ranking the system's results.json records, unless it ranked whole candidate pools
    (the honest-depth rule); the recorded ``depth`` is the provenance's."""
    prov = entry.get("provenance") or {}
    depth, pool = prov.get("run_depth"), prov.get("pool_depth")
    assert entry.get("depth") == depth  # what results.json says at both places
    cut = re.search(r"@(\d+)$", measure)
    whole_pools = pool is not None and depth is not None and depth >= pool
    beyond = cut is not None and depth is not None and int(cut.group(1)) > depth
    return "\u00a7" if beyond and not whole_pools else ""


def _check_summary(pg: Page, results: dict) -> None:
    for s in results["systems"]:
        for m in results["measures"]:
            cell = pg.page.locator(f'#summary-table td[data-system="{s}"][data-measure="{m}"] b')
            entry = results["systems"][s]
            assert cell.inner_text() == f"{entry['means'][m]:.4f}" + _depth_mark(entry, m)
    if not results.get("comparison"):
        assert pg.page.locator("#wtl tbody td").count() == 0
        return
    base = results["comparison"]["baseline"]
    for s in results["systems"]:
        if s == base:
            continue
        for m in results["measures"]:
            w, t, lo = wtl(results, s, base, m)
            cell = pg.page.locator(f'#wtl td[data-system="{s}"][data-measure="{m}"]')
            assert cell.inner_text().split(" / ") == [str(w), str(t), str(lo)]


def _check_per_query(pg: Page, results: dict, system: str, baseline: str, measure: str) -> None:
    pg.view("perquery")
    pg.page.select_option("#pq-measure", measure)
    pg.page.select_option("#pq-system", system)
    qids = results["systems"][baseline]["query_ids"]
    a = results["systems"][system]["per_query"][measure]
    b = results["systems"][baseline]["per_query"][measure]
    delta = dict(zip(qids, [x - y for x, y in zip(a, b)]))
    rows = pg.page.locator("#pq-table tbody tr")
    assert rows.count() == min(len(qids), 1000)
    assert pg.page.inner_text("#pq-count") == f"{len(qids)} of {len(qids)} queries"
    # values of the shown rows
    for qid, vals in zip(pg.attrs("#pq-table tbody tr", "data-qid")[:25], _row_values(pg)[:25]):
        i = qids.index(qid)
        assert vals == [
            f"{results['systems'][s]['per_query'][measure][i]:.4f}" for s in results["systems"]
        ]
    # sort by the delta: ascending, then descending
    header = pg.page.locator(f'#pq-table th[data-sort="d:{system}"]')
    header.click()
    first = pg.attrs("#pq-table tbody tr", "data-qid")
    assert delta[first[0]] == pytest.approx(min(delta.values()))
    ordered = [delta[q] for q in first]
    assert all(y - x >= -1e-5 for x, y in zip(ordered, ordered[1:]))  # page values: 6 decimals
    header.click()
    first = pg.attrs("#pq-table tbody tr", "data-qid")
    assert delta[first[0]] == pytest.approx(max(delta.values()))
    # filter: losses only, then back, then a query id
    w, t, lo = wtl(results, system, baseline, measure)
    pg.page.select_option("#pq-outcome", "-1")
    assert rows.count() == lo
    assert all(delta[q] < 0 for q in pg.attrs("#pq-table tbody tr", "data-qid"))
    pg.page.select_option("#pq-outcome", "1")
    assert rows.count() == w
    pg.page.select_option("#pq-outcome", "")
    pg.page.fill("#pq-filter", qids[-1])
    shown = pg.attrs("#pq-table tbody tr", "data-qid")
    assert qids[-1] in shown
    pg.page.fill("#pq-filter", "")


def _row_values(pg: Page) -> list[list[str]]:
    return pg.page.eval_on_selector_all(
        "#pq-table tbody tr",
        "rows => rows.map(r => Array.from(r.querySelectorAll('td.v')).map(c => c.textContent))",
    )


def _results(folder: Path) -> dict:
    """The folder's results.json with each run file as a path from here (it records them
    relative to the folder)."""
    results = json.loads((folder / "results.json").read_text())
    for entry in results["systems"].values():
        entry["run_file"] = str(folder / entry["run_file"])  # an absolute path stays itself
    return results


def _check_query(pg: Page, results: dict, qid: str, qrels: dict, top: int = 20) -> None:
    pg.page.goto(pg.page.url.split("#")[0] + "#q=" + qid)
    pg.page.wait_for_selector("#qv .doc")
    lists = {}
    for s, entry in results["systems"].items():
        run = read_trec(entry["run_file"]).get(qid, [])[:top]
        col = f'#qv .col[data-system="{s}"]'
        ids = pg.attrs(f"{col} .doc", "data-docid")
        assert ids == [d for d, _ in run]
        unjudged = pg.page.locator(f"{col} .doc.unjudged").count()
        assert unjudged == sum(d not in qrels.get(qid, {}) for d, _ in run)
        assert pg.page.locator(f"{col} .badge.uj").count() == unjudged
        lists[s] = set(ids)
    if len(lists) == 2:
        (s1, l1), (s2, l2) = lists.items()
        shared = pg.page.locator(f'#qv .col[data-system="{s1}"] .badge.sh').count()
        assert shared == len(l1 & l2)


@pytest.mark.realdata
def test_scifact_bm25_two_parameter_settings(browser, shared_data, tmp_path, monkeypatch):
    monkeypatch.setenv("NUGGETBENCH_DATA", str(shared_data))
    systems = ["bm25", "bm25:k1=0.9,b=0.4"]
    run_experiment("beir/scifact", systems, k=100, outdir=tmp_path / "out", cache_runs=False)
    path = report.html(tmp_path / "out")
    results = _results(tmp_path / "out")
    pg = Page(browser, path)
    _check_summary(pg, results)
    for m in ("nDCG@10", "AP"):
        _check_per_query(pg, results, systems[1], systems[0], m)
    qrels = _qrels_tsv(shared_data / "beir" / "scifact" / "qrels" / "test.tsv")
    pg.page.click("#pq-table tbody tr a.qlink")
    pg.page.wait_for_selector("section#query.on #qv .doc")
    for qid in results["systems"]["bm25"]["query_ids"][:5]:
        _check_query(pg, results, qid, qrels)
    pg.view("depth")
    r100 = pg.texts('table.depth[data-family="R"] tr[data-system="bm25"] td')[-1]
    assert r100 == f"{results['systems']['bm25']['means']['R@100']:.4f}"
    pg.close(tmp_path / "scifact.png")


@pytest.mark.realdata
def test_fastbook_nuggets_and_spans(browser, shared_data, tmp_path, monkeypatch):
    monkeypatch.setenv("NUGGETBENCH_DATA", str(shared_data))
    run_experiment("fastbook", SYSTEMS, k=100, outdir=tmp_path / "out", cache_runs=False)
    path = report.html(tmp_path / "out")
    results = _results(tmp_path / "out")
    ds = load_dataset("fastbook")
    pg = Page(browser, path)
    _check_summary(pg, results)
    _check_per_query(pg, results, SYSTEMS[1], SYSTEMS[0], "AC_Recall@10")
    pg.view("nuggets")
    qids = results["systems"][SYSTEMS[0]]["query_ids"]
    with_nuggets = [q for q in qids if ds.qrels.nuggets.nuggets_of(q)]
    assert pg.page.locator("#nug-table tbody tr").count() == len(with_nuggets)
    qid = "10_1"
    pg.page.click(f'#nug-table tr[data-qid="{qid}"] a.qlink')
    pg.page.wait_for_selector("#qv table.nm")
    nugs = ds.qrels.nuggets.nuggets_of(qid)
    support = ds.qrels.nuggets.supported(qid)
    for s, entry in results["systems"].items():
        ranked = [d for d, _ in read_trec(entry["run_file"])[qid]]
        firsts = pg.texts(f'#qv table.nm td.first[data-system="{s}"]')
        for nug, shown in zip(nugs, firsts):
            hits = [r for r, d in enumerate(ranked, 1) if nug.nugget_id in support.get(d, ())]
            assert shown == (str(hits[0]) if hits else "\u2013")
    marks = pg.texts("#qv mark")
    spans = [fix(s) for n in nugs for s in n.spans]
    assert marks and all(any(m.strip() in s or s in m for s in spans) for m in marks)
    # span judging judges every passage: none is "unjudged"; the rest are judged 0
    assert pg.page.locator("#qv .doc").count() > 0
    assert pg.page.locator("#qv .badge.uj, #qv .doc.unjudged").count() == 0
    supporting = {d for d, v in support.items() if v}
    for doc, cls in zip(pg.attrs("#qv .doc", "data-docid"), pg.attrs("#qv .doc", "class")):
        assert ("rel" in cls.split()) == (doc in supporting)
    pg.close(tmp_path / "fastbook.png")


def test_freshstack_folder(browser, tmp_path):
    folder = freshstack_folder(tmp_path)
    run_folder(folder, tmp_path / "out")
    path = report.html(tmp_path / "out")
    results = _results(tmp_path / "out")
    rows = [json.loads(line) for line in (folder / "queries.jsonl").read_text().splitlines()]
    pg = Page(browser, path)
    _check_summary(pg, results)
    _check_per_query(pg, results, SYSTEMS[1], SYSTEMS[0], results["measures"][0])
    pg.view("nuggets")
    runs = {s: read_trec(e["run_file"]) for s, e in results["systems"].items()}
    expected_none = {}
    for row in rows:
        ranked = {s: {d for d, _ in r.get(row["query_id"], [])} for s, r in runs.items()}
        expected_none[row["query_id"]] = sum(
            not any(set(n["relevant_corpus_ids"]) & ranked[s] for s in runs) for n in row["nuggets"]
        )
    shown = dict(zip(pg.attrs("#nug-table tbody tr", "data-qid"), pg.texts("#nug-table td.none")))
    assert shown == {q: str(v) for q, v in expected_none.items()}
    orphan_q = next(q for q, v in expected_none.items() if v)
    pg.page.click(f'#nug-table tr[data-qid="{orphan_q}"] a.qlink')
    pg.page.wait_for_selector("#qv table.nm")
    assert pg.page.locator("#qv tr.none-found").count() == expected_none[orphan_q]
    qrels = {
        r["query_id"]: {
            **{d: 0 for n in r["nuggets"] for d in n["non_relevant_corpus_ids"]},
            **{d: 1 for n in r["nuggets"] for d in n["relevant_corpus_ids"]},
        }
        for r in rows
    }
    _check_query(pg, results, orphan_q, qrels)
    pg.close(tmp_path / "freshstack.png")


def test_beir_folder_markup_and_unknown_query(browser, tmp_path):
    folder = beir_folder(tmp_path)
    run_folder(folder, tmp_path / "out")
    path = report.html(tmp_path / "out")
    results = _results(tmp_path / "out")
    pg = Page(browser, path)
    _check_summary(pg, results)
    _check_per_query(pg, results, SYSTEMS[1], SYSTEMS[0], "nDCG@10")
    _check_query(pg, results, "q0", _qrels_tsv(folder / "qrels" / "test.tsv"))
    assert pg.page.inner_text("#qv .qtext").endswith("</script><b>bold</b>")
    assert pg.page.locator("#qv .qtext b").count() == 0
    pg.page.goto(path.as_uri() + "#q=nope")
    pg.page.wait_for_selector("text=No query nope in this report.")
    pg.close(tmp_path / "beir.png")


def test_fastbook_format_spans_highlighted(browser, tmp_path, monkeypatch):
    monkeypatch.setenv("NUGGETBENCH_DATA", str(fastbook_root(tmp_path)))
    run_experiment("fastbook", SYSTEMS, k=30, outdir=tmp_path / "out", cache_runs=False)
    path = report.html(tmp_path / "out")
    results = _results(tmp_path / "out")
    ds = load_dataset("fastbook")
    pg = Page(browser, path)
    _check_summary(pg, results)
    pg.view("nuggets")
    assert pg.page.locator("#nug-table tbody tr").count() == len(
        results["systems"]["bm25"]["query_ids"]
    )
    n_marks = 0
    for qid in results["systems"]["bm25"]["query_ids"]:
        pg.page.goto(path.as_uri() + "#q=" + qid)
        pg.page.wait_for_selector(f'#qv-id:text-is("{qid}")')
        nugs = ds.qrels.nuggets.nuggets_of(qid)
        support = ds.qrels.nuggets.supported(qid)
        shown_docs = set(pg.attrs("#qv .doc", "data-docid"))
        expected = {fix(s) for n in nugs for s in n.spans}
        # every mark is an evidence string; every supporting shown passage has its marks
        marks = pg.texts("#qv mark")
        assert set(marks) <= expected
        n_marks += len(marks)
        for doc in shown_docs & set(support):
            doc_marks = pg.texts(f'#qv .doc[data-docid="{doc}"] mark')
            assert doc_marks and set(doc_marks) <= expected
        assert pg.page.locator("#qv .badge.uj").count() == 0  # span judging judges every passage
        unsupported = [n for n in nugs if not any(n.nugget_id in v for v in support.values())]
        assert pg.page.locator("#qv tr.none-found").count() >= len(unsupported)
    assert n_marks > 0
    pg.close(tmp_path / "fastbook_synthetic.png")


def test_single_system_many_queries_show_all(browser, tmp_path):
    folder = beir_folder(tmp_path, n_queries=1100, n_docs=150)
    run_experiment(str(folder), ["bm25"], k=20, outdir=tmp_path / "out", cache_runs=False)
    path = report.html(tmp_path / "out")
    results = _results(tmp_path / "out")
    pg = Page(browser, path)
    _check_summary(pg, results)
    assert "One system" in pg.page.inner_text("#method")
    # nothing to compare: no empty win/tie/loss table, system menu, outcome filter or columns
    for absent in ("#wtl", "#pq-system", "#pq-outcome", "#qv-a", "#qv-b", "#qv-all", "sup.over"):
        assert pg.page.locator(absent).count() == 0, absent
    pg.view("query")  # opens on the median query (by the first measure), not the first one
    data = page_data(path.read_text())
    pg.page.wait_for_selector(f'#qv-id:text-is("{data["qids"][data["start"]]}")')
    assert pg.page.locator("#qv .col").count() == 1
    pg.view("perquery")
    rows = pg.page.locator("#pq-table tbody tr")
    assert rows.count() == 1000
    assert pg.page.inner_text("#pq-count") == "1100 of 1100 queries"
    pg.page.click("#pq-all")
    assert rows.count() == 1100
    pg.page.click('#pq-table th[data-sort="v:bm25"]')
    values = [float(v[0]) for v in _row_values(pg)]
    assert values == sorted(values)
    pg.page.fill("#pq-filter", "q109")  # q109, q1090..q1099
    assert sorted(pg.attrs("#pq-table tbody tr", "data-qid")) == sorted(
        ["q109"] + [f"q109{i}" for i in range(10)]
    )
    pg.close(tmp_path / "single.png")


def test_shared_document_badge_scrolls_to_the_other_column(browser, tmp_path):
    folder = beir_folder(tmp_path)
    run_folder(folder, tmp_path / "out")
    path = report.html(tmp_path / "out")
    pg = Page(browser, path)
    pg.page.set_viewport_size({"width": 1400, "height": 300})
    pg.page.goto(path.as_uri() + "#q=q1")
    pg.page.wait_for_selector("#qv .doc")
    badges = pg.page.locator(f'#qv .col[data-system="{SYSTEMS[0]}"] .badge.sh')
    last = badges.nth(badges.count() - 1)
    doc = last.get_attribute("data-doc")
    target = pg.page.locator(f'#qv .col[data-system="{SYSTEMS[1]}"] .doc[data-doc="{doc}"]')
    last.scroll_into_view_if_needed()
    last.click()
    box = target.bounding_box()
    assert 0 <= box["y"] + box["height"] / 2 <= 300  # in the viewport after the click
    last.hover()
    assert "hl" in target.get_attribute("class")
    pg.close(tmp_path / "shared.png")


def test_compare_folder_of_a_qrels_file(browser, tmp_path):
    folder = beir_folder(tmp_path)
    run_folder(folder, tmp_path / "out")
    qrels = tmp_path / "qrels.tsv"
    qrels.write_text((folder / "qrels" / "test.tsv").read_text())
    runs = sorted((tmp_path / "out" / "runs").glob("*.trec"))
    compare_to_folder(qrels, runs, tmp_path / "cmp")
    path = report.html(tmp_path / "cmp")
    results = _results(tmp_path / "cmp")
    names = list(results["systems"])
    pg = Page(browser, path)
    _check_summary(pg, results)
    _check_per_query(pg, results, names[1], names[0], "AP")
    _check_query(pg, results, "q2", _qrels_tsv(qrels))
    assert "no query or document texts" in pg.page.inner_text("#no-texts")
    pg.close(tmp_path / "compare.png")


def _ranks(run: list[tuple[str, float]]) -> dict[str, int]:
    return {d: r for r, (d, _) in enumerate(run, 1)}


def _check_side_by_side(pg: Page, results: dict, qid: str, a: str, b: str) -> None:
    """Each document of the right column names its rank in the left system's whole run and the
    move, both read from the run files."""
    pg.page.goto(pg.page.url.split("#")[0] + "#q=" + qid)
    pg.page.wait_for_selector(f'#qv-id:text-is("{qid}")')
    pg.page.uncheck("#qv-all")
    pg.page.select_option("#qv-a", a)
    pg.page.select_option("#qv-b", b)
    cols = pg.attrs("#qv .col", "data-system")
    assert cols == [a, b]
    ra = _ranks(read_trec(results["systems"][a]["run_file"]).get(qid, []))
    moves = 0
    col = f'#qv .col[data-system="{b}"]'
    for r, doc in enumerate(pg.attrs(f"{col} .doc", "data-docid"), 1):
        badge = pg.page.locator(f'{col} .doc[data-docid="{doc}"] .badge.mv[data-system="{a}"]')
        if doc not in ra:
            assert badge.inner_text().endswith("new")
            continue
        assert badge.get_attribute("data-rank") == str(ra[doc])
        assert int(badge.get_attribute("data-move")) == r - ra[doc]
        text = badge.inner_text()
        assert text.endswith(
            "="
            if r == ra[doc]
            else f"\u2191{r - ra[doc]}"
            if r > ra[doc]
            else f"\u2193{ra[doc] - r}"
        )
        moves += r != ra[doc]
    assert moves > 0  # the query was chosen where the two systems differ


def _check_judged_panel(pg: Page, results: dict, qid: str, qrels: dict) -> None:
    """The judged documents of the query, each system's rank for them from the run files."""
    judged = qrels.get(qid, {})
    assert sorted(pg.attrs("#qv-judged tbody tr", "data-docid")) == sorted(judged)
    runs = {s: _ranks(read_trec(e["run_file"]).get(qid, [])) for s, e in results["systems"].items()}
    for doc in judged:
        for s, ranks in runs.items():
            cell = pg.page.locator(f'#qv-judged tr[data-docid="{doc}"] td.rank[data-system="{s}"]')
            assert cell.inner_text() == str(ranks.get(doc, "\u2013"))


def _svg_texts_inside(pg: Page) -> None:
    """Every text of every shown chart lies inside its SVG's canvas (the viewBox)."""
    out = pg.page.evaluate(
        """() => Array.from(document.querySelectorAll('section.view.on .fig.on svg')).map(svg => {
            const c = svg.getBoundingClientRect();  // on screen, transforms (rotation) applied
            return Array.from(svg.querySelectorAll('text')).filter(t => {
                const b = t.getBoundingClientRect();
                return b.left < c.left - 0.5 || b.top < c.top - 0.5 || b.right > c.right + 0.5
                    || b.bottom > c.bottom + 0.5;
            }).map(t => t.textContent);
        })"""
    )
    assert all(not bad for bad in out), out


def test_six_long_named_systems_fit_1300px(browser, tmp_path):
    folder = beir_folder(tmp_path)
    run_experiment(str(folder), SIX, k=30, outdir=tmp_path / "out", cache_runs=False)
    path = report.html(tmp_path / "out")
    results = _results(tmp_path / "out")
    pg = Page(browser, path, width=1300)
    assert pg.page.inner_text("header h1").endswith("12 queries \u00b7 6 systems")
    for view in ("summary", "perquery", "query", "depth"):
        pg.view(view)
        assert pg.width() <= 1300, view
        _svg_texts_inside(pg)
    pg.view("query")
    pg.page.check("#qv-all")
    assert pg.page.locator("#qv .col").count() == 6
    assert pg.width() <= 1300
    # every full name is in the legend; the headers carry keys and short labels
    pg.view("perquery")
    legend = pg.page.inner_text("#perquery .legend")
    assert all(s in legend for s in SIX)
    heads = pg.texts("#pq-table thead th.num")
    assert heads[:6] == ["A", "B", "C", "D", "E", "F"]
    # query ids in natural order (q2 before q10), by default and when sorted by id
    natural = sorted(results["systems"][SIX[0]]["query_ids"], key=lambda q: int(q[1:]))
    assert pg.attrs("#pq-table tbody tr", "data-qid") == natural
    pg.page.click('#pq-table th[data-sort="qid"]')
    assert pg.attrs("#pq-table tbody tr", "data-qid") == natural
    pg.page.click('#pq-table th[data-sort="qid"]')
    assert pg.attrs("#pq-table tbody tr", "data-qid") == natural[::-1]
    # the query view: labelled scores, judged documents with every system's rank, side by side
    qrels = _qrels_tsv(folder / "qrels" / "test.tsv")
    runs = {s: read_trec(e["run_file"]) for s, e in results["systems"].items()}
    qid = next(q for q in natural if runs[SIX[0]][q][:20] != runs[SIX[1]][q][:20])
    pg.page.goto(path.as_uri() + "#q=" + qid)
    pg.page.wait_for_selector("#qv-scores")
    i = results["systems"][SIX[0]]["query_ids"].index(qid)
    for s in SIX:
        for m in results["measures"]:
            cell = f'#qv-scores td[data-system="{s}"][data-measure="{m}"]'
            assert pg.page.inner_text(cell) == f"{results['systems'][s]['per_query'][m][i]:.4f}"
    _check_judged_panel(pg, results, qid, qrels)
    _check_side_by_side(pg, results, qid, SIX[0], SIX[1])
    _check_side_by_side(pg, results, qid, SIX[5], SIX[3])
    assert pg.width() <= 1300
    pg.view("summary")
    prov = pg.page.inner_text("#provenance")
    assert "{" not in prov and prov.count("\nprofile\t") + prov.startswith("profile\t") == 1
    assert pg.page.locator("table.sysprov").count() == 6
    pg.close(tmp_path / "six.png")


@pytest.mark.realdata
def test_scifact_six_systems_fit_1300px(browser, shared_data, tmp_path, monkeypatch):
    monkeypatch.setenv("NUGGETBENCH_DATA", str(shared_data))
    run_experiment("beir/scifact", SIX, k=100, outdir=tmp_path / "out", cache_runs=False)
    path = report.html(tmp_path / "out")
    results = _results(tmp_path / "out")
    pg = Page(browser, path, width=1300)
    for view in ("summary", "perquery", "query", "depth"):
        pg.view(view)
        assert pg.width() <= 1300, view
    pg.view("perquery")
    shown = pg.attrs("#pq-table tbody tr", "data-qid")
    assert shown == sorted(results["systems"]["bm25"]["query_ids"], key=int)
    qrels = _qrels_tsv(shared_data / "beir" / "scifact" / "qrels" / "test.tsv")
    runs = {s: read_trec(e["run_file"]) for s, e in results["systems"].items()}
    qid = next(q for q in shown if runs[SIX[0]][q][:20] != runs[SIX[2]][q][:20])
    pg.page.goto(path.as_uri() + "#q=" + qid)
    pg.page.wait_for_selector("#qv-judged")
    _check_judged_panel(pg, results, qid, qrels)
    _check_side_by_side(pg, results, qid, SIX[0], SIX[2])
    pg.page.check("#qv-all")
    assert pg.width() <= 1300
    pg.close(tmp_path / "scifact6.png")


def _after(pg: Page, selector: str) -> str:
    """The ``::after`` content of the element: the sort arrow of a header."""
    return pg.page.eval_on_selector(selector, "e => getComputedStyle(e, '::after').content")


@pytest.mark.realdata
def test_scifact_rankings_that_differ_where_the_measure_ties(
    browser, shared_data, tmp_path, monkeypatch
):
    """SciFact, BM25 against k1=0.9, b=0.4: most queries tie on nDCG@10, yet the rankings
    differ. Sorting by RBO brings them up (values recomputed here from the run files); the
    headers show the sort's arrow; the query view opens on the largest difference; the query
    texts are cut at a word with an ellipsis."""
    from test_report_rankdiff import _rbo_ext, _scipy_tau

    monkeypatch.setenv("NUGGETBENCH_DATA", str(shared_data))
    systems = ["bm25", "bm25:k1=0.9,b=0.4"]
    run_experiment("beir/scifact", systems, k=1000, outdir=tmp_path / "out", cache_runs=False)
    path = report.html(tmp_path / "out")
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    qids = results["systems"]["bm25"]["query_ids"]
    pq = {s: results["systems"][s]["per_query"]["nDCG@10"] for s in systems}
    ties = [q for q, a, b in zip(qids, *pq.values()) if abs(a - b) <= 1e-9]
    runs = {s: read_trec(tmp_path / "out" / e["run_file"]) for s, e in results["systems"].items()}
    top = {s: {q: [d for d, _ in r.get(q, [])][:100] for q in qids} for s, r in runs.items()}
    rbo = {q: _rbo_ext(top["bm25"][q], top[systems[1]][q], 0.9) for q in qids}
    differ = [q for q in ties if rbo[q] < 1 - 1e-9]
    assert len(ties) > 200 and len(differ) > 100  # ties on the measure, rankings that differ
    pg = Page(browser, path, width=1300)
    pg.view("perquery")
    header = '#pq-table th[data-sort="rbo"]'
    assert "\u2195" in _after(pg, header)  # sortable, not sorted
    pg.page.click(header)
    assert "\u2191" in _after(pg, header) and "\u2195" in _after(
        pg, '#pq-table th[data-sort="qid"]'
    )
    shown = pg.attrs("#pq-table tbody tr", "data-qid")
    values = [round(rbo[q], 4) for q in shown]  # the page keeps 4 decimals
    assert values == sorted(values) and values[0] == pytest.approx(min(rbo.values()), abs=1e-4)
    cells = pg.texts("#pq-table tbody td.rbo")
    assert [float(c) for c in cells[:50]] == pytest.approx(values[:50], abs=1e-4)
    taus = pg.texts("#pq-table tbody td.tau")[:20]
    for q, t in zip(shown[:20], taus):
        assert float(t) == pytest.approx(_scipy_tau(top["bm25"][q], top[systems[1]][q]), abs=1e-4)
    assert len(set(shown[:30]) & set(differ)) >= 10  # tied on nDCG@10, found by the ranking
    pg.page.click(header)
    assert "\u2193" in _after(pg, header)
    # texts: whole words, an ellipsis where cut
    queries = {
        r["_id"]: r["text"]
        for r in map(json.loads, (shared_data / "beir/scifact/queries.jsonl").open())
    }
    for q, text in zip(pg.attrs("#pq-table tbody tr", "data-qid"), pg.texts("#pq-table td.text")):
        full = " ".join(queries[q].split())
        if text.endswith("\u2026"):
            kept = text[:-1]
            assert len(text) <= 200 and full.startswith(kept) and full[len(kept)] in " ,;:-"
        else:
            assert text == full
    pg.view("query")
    delta = {q: abs(a - b) for q, a, b in zip(qids, *pq.values())}
    opened = pg.page.inner_text("#qv-id")
    assert delta[opened] == pytest.approx(max(delta.values()))
    pg.close(tmp_path / "scifact_rbo.png")
