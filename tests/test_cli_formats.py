"""One ``--format`` everywhere (issue 18, point 5): the same seven choices on ``run``, ``evaluate``
and ``compare``, each carrying the same values as the JSON output."""

from __future__ import annotations

import csv
import io
import json

import pytest
from click.testing import CliRunner

from nuggetbench.cli import cli

FORMATS = ["table", "json", "jsonl", "csv", "tsv", "markdown", "latex"]


@pytest.fixture()
def files(tmp_path):
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("1 0 a 1\n1 0 b 0\n2 0 c 1\n2 0 d 2\n3 0 e 1\n")
    run1 = tmp_path / "one.trec"
    run1.write_text("1 Q0 a 1 2.0 t\n1 Q0 b 2 1.0 t\n2 Q0 d 1 3.0 t\n3 Q0 x 1 1.0 t\n")
    run2 = tmp_path / "two.trec"
    run2.write_text("1 Q0 b 1 2.0 t\n1 Q0 a 2 1.0 t\n2 Q0 c 1 3.0 t\n3 Q0 e 1 1.0 t\n")
    return qrels, run1, run2


@pytest.mark.parametrize("command", ["run", "evaluate", "compare"])
def test_every_command_offers_the_same_formats(command):
    out = CliRunner(env={"COLUMNS": "200"}).invoke(cli, [command, "--help"])
    assert out.exit_code == 0
    assert "[table|json|jsonl|csv|tsv|markdown|latex" in out.output.replace("\n", "")


def test_evaluate_formats_carry_the_same_values(files):
    qrels, run1, _ = files
    args = ["evaluate", str(qrels), str(run1), "-m", "P@1", "-m", "NumRet", "--per-query"]
    js = json.loads(CliRunner().invoke(cli, [*args, "--format", "json"]).stdout)
    for fmt in ("jsonl", "csv"):
        text = CliRunner().invoke(cli, [*args, "--format", fmt]).stdout
        if fmt == "jsonl":
            records = [json.loads(line) for line in text.splitlines()]
        else:
            records = list(csv.DictReader(io.StringIO(text)))
        got = {(r["query"], r["measure"]): float(r["value"]) for r in records}
        for m in ("P@1", "NumRet"):
            # the mean's query is null (jsonl) / empty (csv): no id can take it (issue 29, case 16)
            assert got[(None if fmt == "jsonl" else "", m)] == pytest.approx(js[m])
            for q, v in js["per_query"][m].items():
                assert got[(q, m)] == pytest.approx(v)
    md = CliRunner().invoke(cli, [*args, "--format", "markdown"]).stdout
    assert "| query | P@1 | NumRet |" in md
    assert "| 1 | 1.0000 | 2 |" in md  # fixed decimals per measure, counts as integers
    tex = CliRunner().invoke(cli, [*args, "--format", "latex"]).stdout
    assert r"\begin{tabular}" in tex and "1.0000 & 2" in tex
    table = CliRunner(env={"COLUMNS": "120"}).invoke(cli, [*args]).stdout
    assert "query" in table.splitlines()[2] or "query" in table  # the per-query column is "query"
    assert "1.0000" in table and "0.6667" in table


def test_compare_and_run_formats_carry_differences_and_p_values(files):
    qrels, run1, run2 = files
    args = ["compare", str(qrels), str(run1), str(run2), "-m", "P@1", "--resamples", "200"]
    js = json.loads(CliRunner().invoke(cli, [*args, "--format", "json"]).stdout)
    diff = js["differences"][0]
    for fmt in ("jsonl", "csv", "tsv"):
        text = CliRunner().invoke(cli, [*args, "--format", fmt]).stdout
        if fmt == "jsonl":
            rows = [json.loads(line) for line in text.splitlines()]
        else:
            rows = list(csv.DictReader(io.StringIO(text), delimiter="\t" if fmt == "tsv" else ","))
        two = next(r for r in rows if r["system"] == "two")
        assert float(two["diff"]) == pytest.approx(diff["diff"])
        assert float(two["p_adjusted"]) == pytest.approx(diff["p_adjusted"])
    tex = CliRunner().invoke(cli, [*args, "--format", "latex"]).stdout
    md = CliRunner().invoke(cli, [*args, "--format", "markdown"]).stdout
    sign = f"{diff['diff']:+.4f}"
    assert sign in tex and sign in md  # LaTeX no longer drops the differences
    assert "$p=" in tex or "$p<" in tex


# --- point 7: options global where they are global, one name everywhere ------------------------


def test_verbose_and_no_progress_before_or_after_the_command(files):
    qrels, run1, _ = files
    for args in (
        ["-v", "--no-progress", "evaluate", str(qrels), str(run1), "-m", "P@1"],
        ["evaluate", str(qrels), str(run1), "-m", "P@1", "-v", "--no-progress"],
    ):
        out = CliRunner().invoke(cli, [*args, "--format", "json"])
        assert out.exit_code == 0, out.output
        shown = json.loads(out.stdout)
        assert shown.pop("averaged")["queries"] == 3
        assert shown == {"P@1": pytest.approx(2 / 3)}
    for command in ("run", "evaluate", "compare", "chunk", "build", "measures", "retrievers"):
        text = CliRunner(env={"COLUMNS": "200"}).invoke(cli, [command, "--help"]).output
        assert "--verbose" in text and "--no-progress" in text, command
    sub = CliRunner(env={"COLUMNS": "200"}).invoke(cli, ["datasets", "list", "--help"]).output
    assert "--no-progress" in sub


def test_measures_by_option_or_position_and_hidden_old_spellings(files, tmp_path):
    qrels, run1, _ = files
    by_option = CliRunner().invoke(
        cli, ["evaluate", str(qrels), str(run1), "-m", "P@1", "--format", "json"]
    )
    by_position = CliRunner().invoke(
        cli, ["evaluate", str(qrels), str(run1), "P@1", "--format", "json"]
    )
    assert json.loads(by_option.stdout) == json.loads(by_position.stdout)
    help_text = CliRunner(env={"COLUMNS": "200"}).invoke(cli, ["run", "--help"]).output
    assert "--no-cache" in help_text and "--output" in help_text
    assert "--no-run-cache" not in help_text and "--outdir" not in help_text  # hidden aliases


@pytest.fixture()
def folder(tmp_path):
    folder = tmp_path / "ds"
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text(
        "\n".join(
            json.dumps({"_id": f"d{i}", "title": "", "text": f"word{i} common thing{i % 3}"})
            for i in range(8)
        )
    )
    (folder / "queries.jsonl").write_text(
        "\n".join(json.dumps({"_id": f"q{i}", "text": f"word{i} thing{i % 3}"}) for i in range(4))
    )
    (folder / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"q{i}\td{i}\t1\n" for i in range(4))
    )
    return folder


@pytest.mark.parametrize("systems", [["bm25"], ["bm25", "bm25:k1=0.2,b=0.1"]])
def test_run_formats_carry_the_same_means(folder, tmp_path, systems):
    args = ["run", str(folder), *(x for s in systems for x in ("-r", s)), "-m", "RR", "-m", "P@1"]
    outs = {}
    for i, fmt in enumerate(FORMATS):
        out = CliRunner(env={"COLUMNS": "200"}).invoke(
            cli, [*args, "--format", fmt, "-o", str(tmp_path / f"o{i}")]
        )
        assert out.exit_code == 0, (fmt, out.output)
        outs[fmt] = out.stdout
    means = json.loads(outs["json"])["results"]
    mean_key = "mean"
    for fmt in ("jsonl", "csv", "tsv"):
        if fmt == "jsonl":
            rows = [json.loads(line) for line in outs[fmt].splitlines()]
        else:
            rows = list(
                csv.DictReader(io.StringIO(outs[fmt]), delimiter="\t" if fmt == "tsv" else ",")
            )
        got = {(r["system"], r["measure"]): float(r[mean_key]) for r in rows}
        for s, values in means.items():
            for m, v in values.items():
                assert got[(s, m)] == pytest.approx(v)
    for fmt in ("markdown", "latex", "table"):
        for values in means.values():
            assert f"{values['RR']:.4f}" in outs[fmt]


def test_verbose_after_the_command_sets_the_log_level(files):
    import logging

    qrels, run1, _ = files
    root = logging.getLogger()
    before = root.level
    try:
        out = CliRunner().invoke(cli, ["evaluate", str(qrels), str(run1), "-m", "P@1", "-vv"])
        assert out.exit_code == 0 and root.level == logging.DEBUG
        out = CliRunner().invoke(cli, ["-v", "evaluate", str(qrels), str(run1), "-m", "P@1"])
        assert out.exit_code == 0 and root.level == logging.INFO
    finally:
        root.setLevel(before)


@pytest.mark.parametrize("name", ["all", "mean", "**mean**"])
def test_a_query_named_like_the_aggregate_keeps_its_row_in_every_format(tmp_path, name):
    """Issue 29, cases 6 and 16: a query named ``all`` lost its row (the mean took it)."""
    qrels = tmp_path / "qrels.txt"
    qrels.write_text(f"{name} 0 a 1\n{name} 0 b 1\nz 0 c 1\nz 0 d 1\n")
    run = tmp_path / "run.trec"
    run.write_text(f"{name} Q0 a 1 2.0 t\n{name} Q0 x 2 1.0 t\nz Q0 c 1 1.0 t\nz Q0 d 2 0.5 t\n")
    args = ["evaluate", str(qrels), str(run), "-m", "P@2", "--per-query"]
    own, mean = 0.5, 0.75  # the query's own P@2 and the mean over it and z (1.0)

    def out(fmt, cols="200"):
        r = CliRunner(env={"COLUMNS": cols}).invoke(cli, [*args, "--format", fmt])
        assert r.exit_code == 0, r.output
        return r.stdout

    js = json.loads(out("json"))
    assert js["P@2"] == pytest.approx(mean) and js["per_query"]["P@2"][name] == pytest.approx(own)
    for fmt in ("jsonl", "csv"):
        text = out(fmt)
        if fmt == "jsonl":
            records = [json.loads(line) for line in text.splitlines()]
        else:
            records = list(csv.DictReader(io.StringIO(text)))
        got = {r["query"]: float(r["value"]) for r in records}
        assert got[name] == pytest.approx(own) and got[None if fmt == "jsonl" else ""] == mean
        assert len(records) == 3
    md = out("markdown")
    shown = name.replace("*", "\\*")
    assert f"| {shown} | 0.5000 |" in md and "| **mean** | 0.7500 |" in md
    assert md.count("**mean**") == 1
    tex = out("latex")
    assert r"\textbf{mean} & 0.7500" in tex and "0.5000" in tex
    table = out("table")
    assert "0.5000" in table and "0.7500" in table and name in table
    trec = out("trec_eval")
    assert f"P@2                   \t{name}\t0.5000" in trec and "\tall\t0.7500" in trec
    tsv = [line.split("\t") for line in out("tsv").splitlines()]
    rows = [(m, q, float(v)) for m, q, v in tsv]
    assert ("P@2", name, 0.5) in rows  # and the mean last, as trec_eval -q prints it
    assert rows[-1] == ("P@2", "all", 0.75)
