"""Readable at 80 columns (issue 18, point 6): name= labels, short labels for long specs (full
spec in the provenance), intervals never split, a stacked layout when the terminal is narrow."""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner

from nuggetbench import Experiment
from nuggetbench.cli import cli
from nuggetbench.compare import compare
from nuggetbench.errors import InputError, SpecError
from nuggetbench.experiment import system_labels
from nuggetbench.retrieval import parse_retriever
from nuggetbench.retrieval.spec import short_label, split_label

CI = re.compile(r"\[-?\d+\.\d{4}, -?\d+\.\d{4}\]")


@pytest.mark.parametrize(
    ("spec", "rest", "label"),
    [
        ("bm25", "bm25", None),
        ("bm25:k1=0.9,b=0.4,name=tuned", "bm25:k1=0.9,b=0.4", "tuned"),
        ("bm25:name=x", "bm25", "x"),
        ("bm25 >> rerank:M,name=ce@100", "bm25 >> rerank:M@100", "ce"),
        (
            "fuse(bm25, dense:M; method=rrf, name=hybrid)",
            "fuse(bm25, dense:M; method=rrf)",
            "hybrid",
        ),
        ("hyde(bm25; name='h y')", "hyde(bm25)", "h y"),
        ("fuse(bm25:name=inner, dense:M)", "fuse(bm25:name=inner, dense:M)", None),
    ],
)
def test_every_spec_takes_a_name(spec, rest, label):
    assert split_label(spec) == (rest, label)


def test_a_named_spec_parses_as_the_unnamed_one():
    named = parse_retriever("bm25:k1=0.9,b=0.4,name=tuned")
    assert named.name == parse_retriever("bm25:k1=0.9,b=0.4").name and named.label == "tuned"
    with pytest.raises(SpecError, match="name= needs a label"):
        split_label("bm25:name=")


def test_short_labels():
    assert short_label("bm25:k1=0.9,b=0.4") == "bm25:k1=0.9,b=0.4"
    assert short_label("dense:/home/me/models/e5-small-v2") == "dense:e5-small-v2"
    long = short_label("fuse(bm25:k1=0.9,b=0.4, dense:/models/e5; method=rrf, k=60)")
    assert len(long) == 24 and "\u2026" in long
    specs = ["dense:/data/a/models/model", "dense:/data/b/models/model"]
    assert system_labels(specs) == specs  # results keep the full spec; tables shorten it
    assert system_labels(["bm25:name=x", "x"]) == ["x", "x#2"]
    with pytest.raises(InputError, match="same name"):
        system_labels(["bm25:name=x", "bm25:k1=1,name=x"])


def _report():
    qids = [f"q{i}" for i in range(30)]
    values = {
        "dense:/home/me/models/a-rather-long-model-name,batch_size=64": [
            i % 3 / 3 for i in range(30)
        ],
        "pyserini": [i % 4 / 4 for i in range(30)],
        "dense": [i % 5 / 5 for i in range(30)],
    }
    return compare(
        {n: {m: v for m in ("nDCG@10", "R@100", "RR@10", "AP")} for n, v in values.items()},
        query_ids=qids,
        n_resamples=100,
    )


@pytest.mark.parametrize("width", [60, 80, 100, 200])
def test_intervals_never_split_and_lines_fit(width):
    from rich.console import Console

    rep = _report()
    console = Console(width=width, record=True, color_system=None)
    console.print(rep.to_rich(width=width))
    text = console.export_text()
    assert max(len(line) for line in text.splitlines()) <= width
    full = "dense:/home/me/models/a-rather-long-model-name,batch_size=64"
    legend = [line for line in text.splitlines() if "models/a-rather-long" in line]
    assert "\u2026" in text and legend  # shortened in the table, the full name in a legend
    assert all("\u2502" not in line and "\u2503" not in line for line in legend)  # not in a cell
    assert full in "".join(line.strip() for line in text.splitlines())  # whole (or folded)
    found = CI.findall(text)
    assert len(found) == len(rep.systems) * len(rep.measures)  # every interval whole, none split
    stacked = width < 120
    assert (text.count("mean [95% CI]") == 4) is stacked


def test_run_labels_and_provenance(tmp_path):
    folder = tmp_path / "ds"
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text(
        "\n".join(
            json.dumps({"_id": f"d{i}", "title": "", "text": f"word{i} common"}) for i in range(6)
        )
    )
    (folder / "queries.jsonl").write_text(
        json.dumps({"_id": "q1", "text": "word1"})
        + "\n"
        + json.dumps({"_id": "q2", "text": "word2"})
    )
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t1\n")
    out = CliRunner(env={"COLUMNS": "80"}).invoke(
        cli,
        [
            "run",
            str(folder),
            "-r",
            "bm25",
            "-r",
            "bm25:preset=bm25s,name=defaults",
            "-o",
            str(tmp_path / "o"),
        ],
    )
    assert out.exit_code == 0, out.output
    assert max(len(line) for line in out.stdout.splitlines()) <= 80
    exp = Experiment.load(tmp_path / "o")
    assert list(exp.systems) == ["bm25", "defaults"]
    assert exp.provenance["systems"]["defaults"] == "bm25:preset=bm25s,name=defaults"
    assert exp.systems["defaults"].run.metadata["retriever"] == "bm25:preset=bm25s,name=defaults"
    assert (tmp_path / "o" / "runs" / "defaults.trec").exists()


def test_retrievers_listing_documents_name():
    out = CliRunner(env={"COLUMNS": "200"}).invoke(cli, ["retrievers"])
    assert out.exit_code == 0 and "name=LABEL" in out.output
