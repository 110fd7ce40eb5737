"""Comparisons that travel (issue 37, item 7): ``compare FOLDER_A FOLDER_B -o OUT`` saved as a
folder that ``Experiment.load`` and ``report`` (with figures) read; labels that name their folder
and legends with the full names; ``nb.compare_runs`` taking what ``nb.evaluate`` takes, with a
short repr; ``report`` of a folder whose dataset (or runs) is not there: the numbers-only views
and a note of what is missing. Synthetic data: always run."""

from __future__ import annotations

import json
import shutil

import pandas as pd
import pytest
from click.testing import CliRunner

import nuggetbench as nb
from nuggetbench import Experiment, report
from nuggetbench.cli import cli, main
from nuggetbench.datasets import load_dataset
from nuggetbench.errors import InputError
from nuggetbench.experiment import run_experiment
from nuggetbench.report import compare_folders
from nuggetbench.spec import short_label
from report_fixtures import beir_folder, fastbook_root

LONG = "bm25:method=robertson,stopwords=none"


@pytest.fixture
def beir_runs(tmp_path):
    """Two output folders on one BEIR-layout dataset: A (two systems, one with a long spec)
    and B (one system)."""
    data = beir_folder(tmp_path / "data")
    run_experiment(str(data), ["bm25:k1=0.9,b=0.4", LONG], outdir=tmp_path / "A", cache_runs=False)
    run_experiment(str(data), ["bm25"], outdir=tmp_path / "B", cache_runs=False)
    return tmp_path


@pytest.fixture
def chunkings(tmp_path, monkeypatch):
    """Two output folders of bm25 on a synthetic fastbook, chunked two ways (other data)."""
    monkeypatch.setenv("NUGGETBENCH_DATA", str(fastbook_root(tmp_path)))
    for name, options in (("FA", {}), ("FB", {"chunker": "paragraphs"})):
        run_experiment(load_dataset("fastbook", **options), ["bm25"], outdir=tmp_path / name)
    return tmp_path


def test_compare_folders_to_a_folder_that_loads_and_reports_whole(beir_runs):
    a, b, out = beir_runs / "A", beir_runs / "B", beir_runs / "AB"
    res = CliRunner().invoke(cli, ["compare", str(a), str(b), "-o", str(out), "--resamples", "200"])
    assert res.exit_code == 0, res.output
    said = " ".join(res.output.split())  # stderr lines wrap at the console's width
    assert f"folders: A = {a.resolve()}; B = {b.resolve()}" in said  # the rows' FOLDER/
    saved = json.loads((out / "results.json").read_text())
    assert saved["provenance"]["made_by"] == "nuggetbench compare"
    assert set(saved["provenance"]["folders"]) == {"A", "B"}
    assert saved["systems"]["A/" + LONG]["folder"] == "A"
    exp = Experiment.load(out)  # refused before: int(None) of the comparison's k
    assert list(exp.systems) == ["A/bm25:k1=0.9,b=0.4", f"A/{LONG}", "B/bm25"]
    assert exp.k == 1000 and exp.baseline == "A/bm25:k1=0.9,b=0.4"
    assert all(s.run is not None for s in exp.systems.values())  # read where `run` wrote them
    direct = compare_folders([a, b], n_resamples=200)
    for e in direct.estimates:  # the saved values are the comparison's
        assert exp.means()[e.system][e.measure] == pytest.approx(e.mean)
    assert exp.comparison(n_resamples=200).to_dict()["estimates"] == direct.to_dict()["estimates"]
    data = report.report_data(out, partial=True)  # one dataset: the whole report
    assert not data.missing and data.depth and data.payload["top"]["B/bm25"]["docs"][0]
    figs = beir_runs / "figs"
    done = CliRunner().invoke(cli, ["report", str(out), "--plots", str(figs)])
    assert done.exit_code == 0, done.output
    assert {p.stem for p in figs.iterdir()} == {"means", "deltas", "scatter", "depth"}
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "Numbers only" not in page.split("<script")[0]


def test_compare_of_two_chunkings_reports_its_numbers_and_says_why_only_them(chunkings):
    """The fastbook chunking comparison: its folders hold other data, so the saved comparison
    is reported from its numbers, with a banner naming each folder's options."""
    out = chunkings / "chunks"
    compare_folders([chunkings / "FA", chunkings / "FB"], outdir=out, n_resamples=200)
    saved = json.loads((out / "results.json").read_text())
    assert saved["provenance"]["dataset_fingerprint"] is None  # two data: no one fingerprint
    assert saved["provenance"]["folders"]["FB"]["dataset_options"] == {"chunker": "paragraphs"}
    exp = Experiment.load(out)
    assert list(exp.systems) == ["FA/bm25", "FB/bm25"]
    figs = chunkings / "figs"
    res = CliRunner().invoke(cli, ["report", str(out), "--plots", str(figs)])
    assert res.exit_code == 0, res.output
    assert "numbers only: the systems were scored on different data" in res.output
    assert "FB: -O chunker=paragraphs" in res.output
    assert {p.stem for p in figs.iterdir()} == {"means", "deltas", "scatter"}  # no depth curves
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "Numbers only." in page and "No depth curves" in page
    data = report.report_data(out, partial=True)
    means = {s: exp.means()[s] for s in exp.systems}
    for s in data.systems:  # the summary is the saved numbers
        for m in data.measures:
            assert data.results["systems"][s]["means"][m] == pytest.approx(means[s][m])
    assert data.comparison["baseline"] == "FA/bm25" and data.wtl["FB/bm25"]
    with pytest.raises(InputError):  # the library's default: every input or an error
        report.report_data(out)


def test_report_without_the_dataset_shows_the_numbers_and_what_is_missing(beir_runs, capsys):
    """A colleague without the data: the folder's results.json holds every number."""
    moved = beir_runs / "colleague" / "A"
    shutil.copytree(beir_runs / "A", moved)
    shutil.move(beir_runs / "data", beir_runs / "elsewhere")  # the dataset is not there
    assert not main(["report", str(moved), "--plots", str(moved / "figs")])  # exit 0
    err = capsys.readouterr().err
    assert "numbers only: the dataset" in err and "could not be loaded here" in err
    page = (moved / "report.html").read_text(encoding="utf-8")
    saved = json.loads((moved / "results.json").read_text())
    mean = saved["systems"][LONG]["means"]["nDCG@10"]
    assert f"{mean:.4f}" in page and "Numbers only." in page
    data = report.report_data(moved, partial=True)
    assert data.depth == {} and data.payload["hasTexts"] is False
    assert "query texts, documents, judgments" in data.payload["missing"]
    assert sorted(p.stem for p in (moved / "figs").iterdir())[0] == "deltas"
    shutil.move(beir_runs / "elsewhere", beir_runs / "data")  # data back, runs gone
    shutil.rmtree(moved / "runs")
    data = report.report_data(moved, partial=True)
    assert len(data.missing) == 1 and "the run files of" in data.missing[0]
    assert data.payload["qtext"][0]  # the dataset is there: the query texts are shown
    qrels = beir_runs / "data" / "beirlike" / "qrels" / "test.tsv"
    qrels.write_text(qrels.read_text() + "q1\td79\t2\n")  # other data than scored: refused
    with pytest.raises(InputError, match="fingerprint"):
        report.report_data(moved, partial=True)


def test_rows_name_their_folder_and_legends_give_full_names(beir_runs):
    assert short_label(f"A/{LONG}").startswith("A/bm25:")  # was cut to 'bm25:method=rob…'
    assert short_label("dense:/home/me/models/e5-small-v2") == "dense:e5-small-v2"
    for width in (80, 60):
        res = CliRunner(env={"COLUMNS": str(width)}).invoke(
            cli, ["compare", str(beir_runs / "A"), str(beir_runs / "B"), "--resamples", "100"]
        )
        assert res.exit_code == 0, res.output
        lines = res.stdout.splitlines()
        assert all(len(line) <= width for line in lines)
        assert f"= A/{LONG}" in res.stdout  # the legend gives the full name, unfolded
        rows = [line for line in lines if line.startswith(("│", "┃"))]
        assert not any(LONG in row for row in rows)  # the table cells hold the short label
        assert any("A/bm25:" in row or " S2 " in row for row in rows)


def test_compare_runs_takes_what_evaluate_takes(tmp_path):
    qrels = {"q1": {"d1": 1, "d2": 0}, "q2": {"d3": 2}, "q3": {"d1": 1}}
    a = {"q1": {"d1": 2.0, "d2": 1.0}, "q2": {"d3": 1.0, "d1": 0.5}, "q3": {"d2": 1.0}}
    b = {"q1": {"d2": 2.0, "d1": 1.0}, "q2": {"d1": 1.0, "d3": 0.5}, "q3": {"d1": 1.0}}
    qrels_file = tmp_path / "qrels.txt"
    qrels_file.write_text(
        "".join(f"{q} 0 {d} {g}\n" for q, ds in qrels.items() for d, g in ds.items())
    )
    files = {}
    for name, run in (("a", a), ("b", b)):
        files[name] = tmp_path / f"{name}.trec"
        ranked = {q: sorted(ds.items(), key=lambda x: -x[1]) for q, ds in run.items()}
        files[name].write_text(
            "".join(f"{q} Q0 {d} {r} {s} {name}\n" for q, ds in ranked.items() for r, (d, s) in enumerate(ds, 1))
        )  # fmt: skip
    frame = lambda run: pd.DataFrame(  # noqa: E731
        [(q, d, s) for q, ds in run.items() for d, s in ds.items()],
        columns=["query_id", "doc_id", "score"],
    )
    opts = {"n_resamples": 200}
    reference = nb.compare_runs(nb.read_qrels(qrels_file), {"a": nb.read_run(files["a"]), "b": nb.read_run(files["b"])}, ["nDCG@10", "RR"], **opts)  # fmt: skip
    for q, runs in (
        (str(qrels_file), {k: str(v) for k, v in files.items()}),  # AttributeError before
        (qrels, {"a": a, "b": b}),
        (qrels, {"a": frame(a), "b": frame(b)}),
        (qrels_file, [files["a"], files["b"]]),  # a list: named by the files' stems
    ):
        got = nb.compare_runs(q, runs, ["nDCG@10", "RR"], **opts)
        assert got.systems == ["a", "b"]
        assert got.to_dict()["estimates"] == reference.to_dict()["estimates"]
        assert got.to_dict()["differences"] == reference.to_dict()["differences"]
    assert nb.evaluate(qrels, a, "nDCG@10").means["nDCG@10"] == pytest.approx(
        reference.estimate("a", "nDCG@10").mean
    )
    text = repr(reference)
    assert len(text) < 300 and "q1" not in text and "2 systems (baseline 'a')" in text
    with pytest.raises(InputError, match="several runs"):
        nb.compare_runs(qrels, str(files["a"]))
