"""The HTML report and its figures, on real runs of synthetic folders (no browser here; see
test_report_browser.py): the page's data against results.json and the run files read
independently, the errors, the CLI, and the figures."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from nuggetbench import report
from nuggetbench.cli import cli
from nuggetbench.data import Run
from nuggetbench.errors import InputError
from nuggetbench.evaluation import evaluate_dataset
from nuggetbench.experiment import run_experiment
from nuggetbench.report import outcome
from nuggetbench.report.data import MISSING, system_keys
from report_fixtures import (
    SIX,
    SYSTEMS,
    beir_folder,
    freshstack_folder,
    page_data,
    read_trec,
    run_folder,
    wtl,
)

pytest.importorskip("matplotlib")


@pytest.fixture()
def beir_out(tmp_path):
    folder = beir_folder(tmp_path)
    out = tmp_path / "out"
    run_folder(folder, out)
    return folder, out


def _qrels(folder):
    out = {}
    for line in (folder / "qrels" / "test.tsv").read_text().splitlines()[1:]:
        q, d, g = line.split("\t")
        out.setdefault(q, {})[d] = int(g)
    return out


def test_outcome_rule():
    assert outcome(0.5, 0.25) == 1 and outcome(0.25, 0.5) == -1
    assert outcome(0.3, 0.3 + 1e-12) == 0
    assert outcome(math.nan, 0.1) is None and outcome(0.1, math.nan) is None


def test_page_data_matches_results_and_runs(beir_out):
    folder, out = beir_out
    path = report.html(out)
    assert path == out / "report.html"
    html = path.read_text()
    data = page_data(html)
    results = json.loads((out / "results.json").read_text())
    assert data["systems"] == SYSTEMS and data["baseline"] == SYSTEMS[0]
    assert data["qids"] == results["systems"][SYSTEMS[0]]["query_ids"]
    qrels = _qrels(folder)
    for s in SYSTEMS:
        entry = results["systems"][s]
        for m in results["measures"]:
            assert data["pq"][s][m] == pytest.approx(entry["per_query"][m], abs=1e-6)
            codes = data["outcome"][s][m]
            w, t, lo = wtl(results, s, SYSTEMS[0], m)
            assert (codes.count(1), codes.count(0), codes.count(-1)) == (w, t, lo)
        run = read_trec(out / entry["run_file"])
        top = data["top"][s]
        for qi, q in enumerate(data["qids"]):
            expected = run.get(q, [])[:20]
            assert [data["docs"][i][0] for i in top["docs"][qi]] == [d for d, _ in expected]
            assert top["scores"][qi] == pytest.approx([sc for _, sc in expected], abs=1e-4)
            assert top["grades"][qi] == [qrels.get(q, {}).get(d) for d, _ in expected]
    grades = [g for s in SYSTEMS for row in data["top"][s]["grades"] for g in row]
    assert None in grades and any(g == 0 for g in grades)  # unjudged and judged non-relevant


def test_markup_in_texts_stays_text(beir_out):
    _, out = beir_out
    html = report.html(out).read_text()
    assert "</script><b>bold" not in html  # cannot close the data block
    data = page_data(html)
    assert data["qtext"][data["qids"].index("q0")].endswith("</script><b>bold</b>")


def test_summary_and_wtl_cells_rendered(beir_out):
    _, out = beir_out
    html = report.html(out).read_text()
    results = json.loads((out / "results.json").read_text())
    for s in SYSTEMS:
        for m in results["measures"]:
            mean = results["systems"][s]["means"][m]
            assert f'data-system="{s}" data-measure="{m}" data-mean="{mean}"' in html
    m = results["measures"][0]
    w, t, lo = wtl(results, SYSTEMS[1], SYSTEMS[0], m)
    assert f'data-measure="{m}" data-w="{w}" data-t="{t}" data-l="{lo}"' in html
    assert "paired t-test" in html and results["provenance"]["dataset_fingerprint"] in html
    assert "<svg" in html and "http://" not in html.split("<svg")[0]  # nothing fetched


def test_other_baseline_recomputes_comparison(beir_out):
    _, out = beir_out
    data = report.report_data(out, baseline=SYSTEMS[1])
    assert data.baseline == SYSTEMS[1] and data.comparison["baseline"] == SYSTEMS[1]
    results = json.loads((out / "results.json").read_text())
    m = results["measures"][0]
    assert data.wtl[SYSTEMS[0]][m] == wtl(results, SYSTEMS[0], SYSTEMS[1], m)
    with pytest.raises(InputError, match="unknown baseline"):
        report.report_data(out, baseline="nope")


def test_depth_curves_agree_with_recall_computed_here(beir_out):
    folder, out = beir_out
    results = json.loads((out / "results.json").read_text())
    data = report.report_data(out, depth=30)
    assert data.depth_k == list(range(1, 31)) and "Coverage" not in data.depth
    qrels = _qrels(folder)
    qids = results["systems"][SYSTEMS[0]]["query_ids"]
    for s in SYSTEMS:
        run = read_trec(out / results["systems"][s]["run_file"])
        for k in (1, 5, 10, 30):
            values = []
            for q in qids:
                rel = {d for d, g in qrels.get(q, {}).items() if g >= 1}
                top = {d for d, _ in run.get(q, [])[:k]}
                values.append(len(rel & top) / len(rel) if rel else 0.0)
            assert data.depth["R"][s][k - 1] == pytest.approx(np.mean(values))


def test_experiment_in_memory(tmp_path):
    folder = beir_folder(tmp_path)
    exp = run_folder(folder, tmp_path / "out")
    path = report.html(exp, tmp_path / "r.html", top=5)
    data = page_data(path.read_text())
    assert data["k"] == 5 and all(len(r) <= 5 for r in data["top"][SYSTEMS[0]]["docs"])


def test_freshstack_nuggets(tmp_path):
    folder = freshstack_folder(tmp_path)
    out = tmp_path / "out"
    run_folder(folder, out)
    data = page_data(report.html(out).read_text())
    rows = {
        json.loads(line)["query_id"]: json.loads(line)
        for line in (folder / "queries.jsonl").read_text().splitlines()
    }
    results = json.loads((out / "results.json").read_text())
    none_found = 0
    for qi, q in enumerate(data["qids"]):
        N = data["nuggets"][str(qi)]
        assert N["ids"] == [n["_id"] for n in rows[q]["nuggets"]]
        for s in SYSTEMS:
            ranked = [d for d, _ in read_trec(out / results["systems"][s]["run_file"]).get(q, [])]
            for j, nug in enumerate(rows[q]["nuggets"]):
                hits = [r for r, d in enumerate(ranked, 1) if d in nug["relevant_corpus_ids"]]
                assert N["first"][s][j] == (hits[0] if hits else None)
        none_found += sum(
            all(N["first"][s][j] is None for s in SYSTEMS) for j in range(len(N["ids"]))
        )
    assert none_found >= 1  # the orphan nuggets
    assert "Coverage" in report.report_data(out).depth


def test_errors_name_the_problem(beir_out, tmp_path):
    folder, out = beir_out
    with pytest.raises(InputError, match="no results.json"):
        report.html(tmp_path / "beirlike")
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "results.json").write_text("{\n oops")
    with pytest.raises(InputError, match="line 2"):
        report.html(bad)
    moved = tmp_path / "moved"
    shutil.copytree(out, moved)
    results = json.loads((moved / "results.json").read_text())
    for entry in results["systems"].values():
        entry["run_file"] = "/nowhere/" + entry["run_file"].rsplit("/", 1)[-1]
    (moved / "results.json").write_text(json.dumps(results))
    assert report.html(moved).is_file()  # found under runs/ beside results.json
    run_file = moved / "runs" / "bm25.trec"
    lines = run_file.read_text().splitlines(keepends=True)
    run_file.write_text("".join(lines[1:]))  # one line dropped: not the run that was scored
    with pytest.raises(InputError, match="not the one scored"):
        report.html(moved)
    run_file.unlink()
    with pytest.raises(InputError, match="run of system 'bm25' is missing"):
        report.html(moved)
    # a dataset edited since the run: grades would be wrong, so it is refused
    with open(folder / "qrels" / "test.tsv", "a") as fh:
        fh.write("q1\tghostdoc\t2\n")
    with pytest.raises(InputError, match="fingerprint"):
        report.html(out)


def test_figures_and_plots(beir_out, tmp_path):
    _, out = beir_out
    data = report.report_data(out)
    m = data.measures[0]
    fig = report.delta_figure(data, m, SYSTEMS[1])
    assert tuple(fig.get_size_inches()) == pytest.approx(report.COLUMN)
    w, t, lo = data.wtl[SYSTEMS[1]][m]
    assert f"{w} wins, {t} ties, {lo} losses" in fig.axes[0].get_title()
    sc = report.scatter_figure(data, m, SYSTEMS[0], SYSTEMS[1])
    xy = sc.axes[0].collections[0].get_offsets()
    assert len(xy) == len(data.query_ids)
    assert np.allclose(np.asarray(xy)[:, 0], data.per_query[SYSTEMS[0]][m])
    depth = report.depth_figure(data, "R")
    assert len(depth.axes[0].lines) == len(SYSTEMS)
    with pytest.raises(InputError, match="Coverage needs nugget"):
        report.depth_figure(data, "Coverage")
    with pytest.raises(InputError, match="unknown measure"):
        report.delta_figure(data, "P@7", SYSTEMS[1])
    written = report.write_plots(data, tmp_path / "plots")
    names = {p.name for p in written}
    # one multi-panel figure per measure set (not a file per measure and system), three formats
    stems = ("means", "deltas", "scatter", "depth")
    assert names == {f"{s}.{e}" for s in stems for e in ("png", "pdf", "svg")}
    png = (tmp_path / "plots" / "depth.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert (tmp_path / "plots" / "depth.pdf").read_bytes()[:5] == b"%PDF-"


def _boxes_inside_and_apart(fig) -> int:
    """Everything drawn of *fig* (each axes with its tick labels, axis labels and title, and
    the figure's legends) lies inside the canvas, and the tick labels of each axis do not
    overlap one another; returns how many texts were checked."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    box, n = fig.bbox, 0

    def inside(e, what):
        ok = e.x0 >= box.x0 - 0.5 and e.x1 <= box.x1 + 0.5
        assert ok and e.y0 >= box.y0 - 0.5 and e.y1 <= box.y1 + 0.5, what

    for ax in fig.axes:
        if not ax.get_visible():
            continue
        inside(ax.get_tightbbox(renderer), ax.get_title() or ax.get_xlabel())
        for axis in (ax.xaxis, ax.yaxis):
            lo, hi = sorted(axis.get_view_interval())
            drawn = zip(axis.get_majorticklocs(), axis.get_majorticklabels())  # in view: drawn
            ticks = [t for v, t in drawn if lo - 1e-9 <= v <= hi + 1e-9 and t.get_text()]
            ext = [t.get_window_extent(renderer) for t in ticks]
            for e, tick in zip(ext, ticks):
                inside(e, tick.get_text())
            for i, a in enumerate(ext):
                for b in ext[i + 1 :]:
                    assert not a.overlaps(b), [t.get_text() for t in ticks]
            n += len(ticks) + bool(axis.get_label_text())
    for legend in fig.legends:
        inside(legend.get_window_extent(renderer), "legend")
        n += len(legend.get_texts())
    return n


@pytest.fixture()
def six_out(tmp_path):
    folder = beir_folder(tmp_path)
    run_experiment(str(folder), SIX, k=30, outdir=tmp_path / "six", cache_runs=False)
    return tmp_path / "six"


def test_paper_figures_keep_long_labels_inside(six_out, tmp_path):
    import matplotlib.pyplot as plt

    data = report.report_data(six_out)
    for kind in ("means", "delta", "scatter", "depth"):
        fig = report.panel_figure(data, kind)
        assert _boxes_inside_and_apart(fig) > 10, kind
        if kind in (
            "delta",
            "scatter",
        ):  # a row per system against the baseline, a column per measure
            assert len(fig.axes) == (len(SIX) - 1) * len(data.measures)
        if kind == "depth":  # the legend is the figure's, outside every axes
            (legend,) = fig.legends
            fig.canvas.draw()
            lb = legend.get_window_extent()
            assert not any(lb.overlaps(ax.get_window_extent()) for ax in fig.axes)
            assert len(legend.get_texts()) == len(SIX)
        plt.close(fig)
    for fig in (
        report.means_figure(data, "nDCG@10"),
        report.depth_figure(data, "R"),
        report.delta_figure(data, "AP", SIX[5]),
        report.scatter_figure(data, "AP", SIX[0], SIX[5]),
    ):
        assert _boxes_inside_and_apart(fig) > 5
        plt.close(fig)
    with pytest.raises(InputError, match="unknown figure kind"):
        report.panel_figure(data, "pie")


def test_page_needs_no_matplotlib(six_out, tmp_path):
    """The base install has no matplotlib: the page draws its charts itself; only --plots
    asks for it."""
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['matplotlib'] = None\n"
        "from pathlib import Path\n"
        "from nuggetbench import report\n"
        "from nuggetbench.errors import InputError\n"
        f"p = report.html(Path({str(six_out)!r}), Path({str(tmp_path / 'r.html')!r}))\n"
        "assert 'matplotlib' not in sys.modules or sys.modules['matplotlib'] is None\n"
        "try:\n"
        f"    report.html(Path({str(six_out)!r}), Path({str(tmp_path / 'r2.html')!r}), plots='x')\n"
        "except InputError as e:\n"
        "    print('PLOTS:', e)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "PLOTS: figures need matplotlib" in proc.stdout
    html = (tmp_path / "r.html").read_text()
    results = json.loads((six_out / "results.json").read_text())
    n_others, n_measures = len(SIX) - 1, len(results["measures"])
    assert (
        html.count('data-kind="delta"')
        == html.count('data-kind="scatter"')
        == n_others * n_measures
    )
    assert (
        html.count('<svg xmlns="http://www.w3.org/2000/svg" viewBox=')
        >= 2 * n_others * n_measures + 1
    )
    assert "Matplotlib" not in html and "matplotlib.org" not in html  # its SVG metadata


def test_page_labels_keys_and_provenance(six_out):
    html = report.html(six_out).read_text()
    data = page_data(html)
    assert data["keys"] == ["A", "B", "C", "D", "E", "F"] == system_keys(6)
    assert system_keys(28)[25:] == ["Z", "AA", "AB"]
    assert all(len(label) <= 22 for label in data["labels"]) and data["labels"][0] == "bm25"
    assert "12 queries \u00b7 6 systems" in html and "1 systems" not in html
    prov = html[html.index('<table id="provenance"') :]
    prov = prov[: prov.index("</table>")]
    assert prov.count("<th>profile</th>") == 1 and "{" not in prov
    assert html.count('class="kv sysprov"') == 6 and "k1=0.9, b=0.4" in html


def test_query_docs_ranks_from_the_runs(six_out):
    results = json.loads((six_out / "results.json").read_text())
    data = report.report_data(six_out)
    qrels = report.load_inputs(six_out).qrels
    runs = {s: read_trec(six_out / e["run_file"]) for s, e in results["systems"].items()}
    docs = data.payload["docs"]
    for qi, q in enumerate(data.query_ids):
        entry = data.payload["qdocs"][qi]
        judged = qrels.get(q, {})
        assert sorted(docs[i][0] for i, _ in entry["j"]) == sorted(judged)
        assert [g for _, g in entry["j"]] == sorted(judged.values(), reverse=True)
        for i, ranks in entry["r"].items():
            doc = docs[int(i)][0]
            for s, r in zip(SIX, ranks):
                ranked = [d for d, _ in runs[s].get(q, [])]
                assert r == (ranked.index(doc) + 1 if doc in ranked else None)


def test_cli_report_and_run_html(beir_out, tmp_path):
    folder, out = beir_out
    res = CliRunner().invoke(
        cli, ["report", str(out), "-o", str(tmp_path / "x.html"), "--plots", str(tmp_path / "p")]
    )
    assert res.exit_code == 0, res.output
    assert (tmp_path / "x.html").is_file() and any((tmp_path / "p").glob("*.svg"))
    res = CliRunner().invoke(cli, ["report", str(out), "--baseline", "nope"])
    assert res.exit_code != 0 and "unknown baseline" in str(res.exception)
    out2 = tmp_path / "out2"
    res = CliRunner().invoke(
        cli,
        ["run", str(folder), "-r", "bm25", "-k", "10", "-o", str(out2), "--html", "--no-run-cache"],
    )
    assert res.exit_code == 0, res.output
    data = page_data((out2 / "report.html").read_text())
    assert data["systems"] == ["bm25"] and len(data["qids"]) == 12


def test_document_missing_from_corpus_is_named(beir_out):
    _, out = beir_out
    inputs = report.load_inputs(out)
    run = inputs.runs["bm25"]
    qid = run.query_ids[0]
    extra = {q: dict(run[q]) for q in run.query_ids}
    extra[qid]["ghost"] = 1e9  # ranked first
    inputs.runs["bm25"] = Run.from_dict(extra, name="bm25")
    data = report.build_report_data(inputs)
    qi = data.query_ids.index(qid)
    first = data.payload["top"]["bm25"]["docs"][qi][0]
    assert data.payload["docs"][first] == ["ghost", MISSING]
    assert data.payload["top"]["bm25"]["grades"][qi][0] is None


@pytest.mark.realdata
def test_birco_bootstrap_table_as_evaluate_prints_it(shared_data, tmp_path, monkeypatch):
    monkeypatch.setenv("NUGGETBENCH_DATA", str(shared_data))
    out = tmp_path / "out"
    run_experiment("birco/arguana", SYSTEMS, k=50, outdir=out, cache_runs=False)
    data = report.report_data(out)
    [table] = data.summaries
    results = json.loads((out / "results.json").read_text())
    for s in SYSTEMS:
        ev = evaluate_dataset("birco/arguana", out / results["systems"][s]["run_file"])
        [expected] = ev.summaries
        assert table.title == expected.title
        for label, row in expected.rows.items():
            assert table.rows[f"{s}: {label}"] == pytest.approx(row)
    html = report.html(out).read_text()
    assert table.title in html and f"{SYSTEMS[1]}: bootstrap std" in html


def test_compare_folder_of_a_dataset_and_of_a_qrels_file(beir_out, tmp_path):
    folder, out = beir_out
    runs = [str(p) for p in sorted((out / "runs").glob("*.trec"))]
    res = CliRunner().invoke(cli, ["compare", str(folder), *runs, "-o", str(tmp_path / "c1")])
    assert res.exit_code == 0, res.output
    saved = json.loads((tmp_path / "c1" / "results.json").read_text())
    ran = json.loads((out / "results.json").read_text())
    names = {p.rsplit("/", 1)[-1][: -len(".trec")]: p for p in runs}
    assert set(saved["systems"]) == set(names)
    for stem, path in names.items():
        spec = next(
            s for s, e in ran["systems"].items() if e["run_file"].endswith("/" + stem + ".trec")
        )
        for m in ran["measures"]:
            assert saved["systems"][stem]["per_query"][m] == ran["systems"][spec]["per_query"][m]
        assert saved["systems"][stem]["run_file"] == str(Path(path).resolve())
    data = page_data(report.html(tmp_path / "c1").read_text())
    assert data["hasTexts"] and data["qtext"][0]
    # a bare qrels file: no corpus, no query texts, grades still shown
    qrels = tmp_path / "qrels.tsv"
    qrels.write_text((folder / "qrels" / "test.tsv").read_text())
    res = CliRunner().invoke(
        cli, ["compare", str(qrels), *runs, "-o", str(tmp_path / "c2"), "--baseline", "2"]
    )
    assert res.exit_code == 0, res.output
    saved = json.loads((tmp_path / "c2" / "results.json").read_text())
    assert saved["dataset"] == str(qrels.resolve())
    assert saved["comparison"]["baseline"] == list(names)[1]
    data = page_data(report.html(tmp_path / "c2").read_text())
    assert not data["hasTexts"] and set(data["qtext"]) == {""}
    assert data["baseline"] == list(names)[1]
    judged = _qrels(folder)
    q = data["qids"][0]
    top = data["top"][data["systems"][0]]
    assert top["grades"][0] == [judged[q].get(data["docs"][i][0]) for i in top["docs"][0]]
    qrels.write_text(qrels.read_text() + "q1\tghostdoc\t2\n")  # edited since: refused
    with pytest.raises(InputError, match="not those"):
        report.html(tmp_path / "c2")


def test_inline_charts_stay_small_and_labelled():
    from nuggetbench.report.svg import MAX_STEPS, delta_svg, depth_svg, scatter_svg

    rng = np.random.default_rng(0)
    d = np.concatenate([rng.normal(0, 0.2, 9000), [np.nan] * 10])
    svg = delta_svg(d, "AP", "B sys", "A base")
    wins, losses = int((d > 1e-9).sum()), int((d < -1e-9).sum())
    assert f"{wins} wins, {9000 - wins - losses} ties, {losses} losses" in svg
    assert svg.count("M") <= MAX_STEPS + 1 and len(svg) < 120_000
    x, y = rng.random(9000), rng.random(9000)
    svg = scatter_svg(x, y, "AP", "A base", "B &lt;sys&gt;")
    assert 1000 < svg.count("<circle") <= 224 * 224 and "9000 queries" in svg
    assert "<sys>" not in scatter_svg(x, y, "AP", "A", "<sys>")  # labels escaped
    svg = depth_svg(list(range(1, 101)), {"A bm25": np.linspace(0, 1, 100)}, "R")
    assert svg.count("<polyline") == 1 and "mean R@k" in svg


def test_means_figure_of_a_count_measure_plots_the_total_inside_its_interval(tmp_path):
    """A count measure (num_rel_ret) is compared as a total (``compare`` scales its interval by
    the number of queries): the means figure's point is that total, inside its interval, and its
    axis says "total", not a per-query mean beside an interval of totals."""
    import matplotlib.pyplot as plt

    ds = beir_folder(tmp_path / "ds")
    out = tmp_path / "out"
    run_experiment(
        str(ds), SYSTEMS, k=30, outdir=out, cache_runs=False, measures=["num_rel_ret", "AP"]
    )
    data = report.report_data(out)
    assert "num_rel_ret" in data.comparison["totals"]
    fig = report.means_figure(data, "num_rel_ret")
    (ax,) = fig.axes
    points = ax.lines[0].get_xdata()
    for s, x in zip(data.systems, points):
        total = float(np.nansum(data.per_query[s]["num_rel_ret"]))
        assert x == pytest.approx(total)
        (e,) = [
            e
            for e in data.comparison["estimates"]
            if e["system"] == s and e["measure"] == "num_rel_ret"
        ]
        assert e["ci_low"] <= x <= e["ci_high"]
    assert ax.get_xlabel().startswith("total num_rel_ret")
    plt.close(fig)


def test_texts_cut_at_a_word_with_an_ellipsis(tmp_path):
    from nuggetbench.report.data import clip

    text = "alpha beta gamma delta epsilon"
    assert clip(text, 100) == text
    assert clip(text, 14) == "alpha beta\u2026"  # not "alpha beta ga"
    assert clip(text, 12) == "alpha beta\u2026" and len(clip(text, 12)) <= 12
    assert clip("x" * 30, 10) == "x" * 9 + "\u2026"  # one long word: cut inside it
    assert clip("ends here, then more words", 11) == "ends here\u2026"  # no dangling comma
    folder = beir_folder(tmp_path)
    out = tmp_path / "out"
    run_folder(folder, out)
    data = report.report_data(out, snippet_chars=40, query_chars=20)
    texts = [t for _, t in data.payload["docs"]] + data.payload["qtext"]
    cut = [t for t in texts if t.endswith("\u2026")]
    assert cut and all(len(t) <= 40 for t in cut)
    rows = [
        json.loads(line)
        for name in ("corpus", "queries")
        for line in (folder / f"{name}.jsonl").open()
    ]
    words = {w for r in rows for w in f"{r.get('title', '')} {r['text']}".split()}
    for t in cut:  # every word shown whole
        assert set(t[:-1].split()) <= words, t


def test_depth_curves_reach_each_runs_depth(tmp_path):
    folder = beir_folder(tmp_path, n_queries=10, n_docs=400)
    out = tmp_path / "out"
    run_experiment(str(folder), SYSTEMS, k=300, outdir=out, cache_runs=False)
    inputs = report.load_inputs(out)
    inputs.runs[SYSTEMS[1]] = inputs.runs[SYSTEMS[1]].truncate(150)  # a shallower run
    data = report.build_report_data(inputs)
    assert data.run_depths == {SYSTEMS[0]: 300, SYSTEMS[1]: 150}
    ks = data.depth_k
    assert ks[:100] == list(range(1, 101)) and ks[-1] == 300 and {150, 200} <= set(ks)
    qrels = _qrels(folder)
    qids = data.query_ids
    for s, depth in data.run_depths.items():
        run = {q: inputs.runs[s].doc_ids(q) for q in qids}
        for i, k in enumerate(ks):
            value = data.depth["R"][s][i]
            if k > depth:
                assert math.isnan(value)
                continue
            rel = {q: {d for d, g in qrels.get(q, {}).items() if g >= 1} for q in qids}
            expected = np.mean([len(rel[q] & set(run[q][:k])) / len(rel[q]) for q in qids])
            assert value == pytest.approx(expected)
    html = report.render_page(data)
    assert "k=200" in html and "k=500" not in html  # the tables stop at the deepest run
    assert "A: 300, B: 150" in html


def test_fastbook_report_names_its_ceiling_and_chunker(tmp_path, monkeypatch):
    from report_fixtures import fastbook_root

    monkeypatch.setenv("NUGGETBENCH_DATA", str(fastbook_root(tmp_path)))
    out = tmp_path / "out"
    run_experiment("fastbook", ["bm25"], k=20, outdir=out, cache_runs=False)
    from nuggetbench.datasets import load_dataset

    ds = load_dataset("fastbook")
    data = report.report_data(out)
    assert ds.notes and ds.notes[0].startswith("chunking ceiling") and ds.notes[0] in data.notes
    assert ("chunker", ds.metadata["chunker"]) in data.facts
    html = report.html(out).read_text()
    assert ds.notes[0] in html and f"<th>chunker</th><td>{ds.metadata['chunker']}</td>" in html


def test_one_system_page_has_no_comparison_parts(tmp_path):
    folder = beir_folder(tmp_path)
    out = tmp_path / "out"
    run_experiment(str(folder), ["bm25"], k=20, outdir=out, cache_runs=False)
    html = report.html(out).read_text()
    for absent in ('id="wtl"', 'id="pq-system"', 'id="pq-outcome"', 'id="qv-a"', 'id="qv-all"'):
        assert absent not in html, absent
    assert 'class="badge">baseline' not in html and "(baseline)" not in html
    assert 'id="one-system"' in html and "<sup" not in html
    data = page_data(html)
    values = np.array(data["pq"]["bm25"][data["measures"][0]], dtype=float)
    gaps = np.abs(values - np.median(values))
    assert gaps[data["start"]] == gaps.min()  # the view opens on a median query, not the first


def test_summary_marks_the_systems_each_beats(tmp_path):
    """ranx's superscripts: after each mean, the keys of the systems it significantly beats
    (every pair tested), read from the page and checked against the report's pairwise tests."""
    import random
    import re

    folder = beir_folder(tmp_path, n_queries=60, n_docs=200)
    qrels = _qrels(folder)
    rng = random.Random(1)
    docs = [f"d{i}" for i in range(200)]
    orders = {  # best: judged documents by grade first, worst: relevant ones last (or shuffled)
        "best": lambda q: sorted(docs, key=lambda d: (-qrels[q].get(d, -1), rng.random())),
        "shuffled": lambda q: rng.sample(docs, len(docs)),
        "worst": lambda q: sorted(docs, key=lambda d: (qrels[q].get(d, 0) > 0, rng.random())),
    }
    mixed = {
        n: (lambda q, o=o: o(q) if rng.random() < 0.7 else orders["shuffled"](q))
        for n, o in orders.items()
    }
    paths = []
    for name, order in mixed.items():
        lines = [
            f"{q} Q0 {d} {r} {100 - r / 10:.3f} {name}"
            for q in qrels
            for r, d in enumerate(order(q)[:50], 1)
        ]
        paths.append(tmp_path / f"{name}.trec")
        paths[-1].write_text("\n".join(lines) + "\n")
    report.compare_to_folder(folder, paths, tmp_path / "cmp", ["nDCG@10", "AP"])
    data = report.report_data(tmp_path / "cmp")
    systems = data.systems
    html = report.render_page(data)
    keys = dict(zip(systems, system_keys(3)))
    marks = 0
    for s in systems:
        for m in data.measures:
            cell = re.search(
                rf'data-system="{re.escape(s)}" data-measure="{re.escape(m)}"[^>]*>(.*?)</td>',
                html,
                re.S,
            ).group(1)
            sup = re.search(r'<sup class="over"[^>]*>(\w+)</sup>', cell)
            expected = "".join(keys[o] for o in data.pairwise.better[s][m])
            assert (sup.group(1) if sup else "") == expected
            marks += len(expected)
    assert marks > 0 and 'id="pairwise"' in html and "3 pairs per measure" in html
