"""Every documented option of every command, run once on tiny synthetic data (issue 29, case 1).

The commands and their options come from click's own introspection, so an option added later is
run here too: it needs either a value below, a value its type gives (a flag, a choice, a number), or
an entry in ``SKIPPED`` with the reason. LLM commands talk to the loopback server of
``llm_server.py``. A run passes when it exits 0, or, for the few combinations listed in
``REFUSED``, when it fails with a one-line error (exit 2) instead of a traceback.
"""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from nbformat import v4, write

from build_fixtures import make_inputs, write_plan
from llm_server import LLMServer
from nuggetbench.cli import cli
from nuggetbench.errors import NuggetbenchError

# options run without a value of their own or not at all, with the reason
SKIPPED = {
    ("run", "--ray"): "needs a Ray cluster (covered by tests/test_ray.py when ray is installed)",
    ("reproduce", "--ray"): "needs a Ray cluster (as run --ray)",
}
# (command, option) -> a clean refusal (exit 2, one line) is the documented answer on this data
REFUSED = {
    ("run", "--chunker"): "the tiny BEIR folder is not built from notebooks",
    ("run", "--query-field"): "the tiny BEIR folder has no answers or nuggets",
    ("run", "--append"): "--append needs an experiment already in the folder",
    ("run", "--with-objective"): "the tiny BEIR folder has no objective",
    ("datasets fetch", None): "offline (as every test): nothing can be fetched",
    ("evaluate", "--corpus"): "a passage corpus applies to span-judged datasets given by id",
}


def _commands() -> list[tuple[str, click.Command]]:
    ctx = click.Context(cli)
    found = []

    def walk(cmd: click.Command, path: list[str]) -> None:
        if isinstance(cmd, click.Group):
            for name in cmd.list_commands(ctx):
                walk(cmd.get_command(ctx, name), [*path, name])
        else:
            found.append((" ".join(path), cmd))

    walk(cli, [])
    return found


def _cases() -> list[tuple[str, str]]:
    cases = []
    for name, cmd in _commands():
        for param in cmd.params:
            if getattr(param, "hidden", False):
                continue  # old spellings: not documented
            label = param.opts[0] if isinstance(param, click.Option) else param.name
            cases.append((name, label))
    return cases


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """The tiny inputs every command needs, built once; yields (paths, server)."""
    root = tmp_path_factory.mktemp("every_flag")
    beir = root / "tiny"
    (beir / "qrels").mkdir(parents=True)
    docs = {"d1": "cats purr and sleep", "d2": "dogs bark at night", "d3": "birds sing songs"}
    with open(beir / "corpus.jsonl", "w") as fh:
        for did, text in docs.items():
            fh.write(json.dumps({"_id": did, "title": "", "text": text}) + "\n")
    with open(beir / "queries.jsonl", "w") as fh:
        fh.write(json.dumps({"_id": "q1", "text": "why do cats purr"}) + "\n")
        fh.write(json.dumps({"_id": "q2", "text": "birds that sing"}) + "\n")
    (beir / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td3\t2\n")
    qrels = root / "qrels.txt"
    qrels.write_text("q1 0 d1 1\nq2 0 d3 2\nq1 0 d2 0\n")
    (root / "zscores.txt").write_text("q1 AP 0.5 0.2\nq2 AP 0.4 0.1\n")
    runs = []
    for i, order in enumerate((["d1", "d2", "d3"], ["d2", "d3", "d1"])):
        path = root / f"r{i}.trec"
        path.write_text(
            "".join(
                f"{q} Q0 {d} {r + 1} {3 - r} sys{i}\n"
                for q in ("q1", "q2")
                for r, d in enumerate(order)
            )
        )
        runs.append(path)
    nuggets = root / "nuggets.jsonl"
    answers = []
    with open(nuggets, "w") as fh:
        for q in ("q1", "q2"):
            ns = [{"text": f"Fact{q} is vital", "importance": "vital"}]
            fh.write(json.dumps({"qid": q, "query": f"what about {q}?", "nuggets": ns}) + "\n")
    for s in ("A", "B"):
        path = root / f"{s}.jsonl"
        path.write_text(
            "".join(
                json.dumps({"qid": q, "answer": f"+Fact{q} holds."}) + "\n" for q in ("q1", "q2")
            )
        )
        answers.append(path)
    nb = v4.new_notebook(cells=[v4.new_markdown_cell("# Title\n\nSome words about cats.")])
    notebook = root / "01_cats.ipynb"
    write(nb, str(notebook))
    plan = write_plan(root / "plan", make_inputs(root / "inputs"))
    recipe = _recipe(root, beir)
    paths = dict(
        beir=beir,
        qrels=qrels,
        runs=runs,
        nuggets=nuggets,
        answers=answers,
        notebook=notebook,
        plan=plan,
        recipe=recipe,
        root=root,
    )
    with LLMServer(hang_seconds=5) as server:
        yield paths, server


def _recipe(root: Path, beir: Path) -> Path:
    """A recipe of plain BM25 on the tiny folder, its value the one ``run`` gives (so
    ``reproduce`` exits 0)."""
    from nuggetbench.experiment import run_experiment

    exp = run_experiment(str(beir), ["bm25"], measures=["nDCG@10"], profile="trec_eval -c")
    value = round(exp.means()["bm25"]["nDCG@10"], 4)
    path = root / "tiny-bm25.toml"
    path.write_text(
        f"""schema = 1
name = "tiny-bm25"
title = "BM25 on the tiny folder"
description = "Plain BM25, its value as nuggetbench run gives it."
profile = "trec_eval -c"
measures = ["nDCG@10"]

[source]
kind = "results"
name = "nuggetbench run on the same folder"
url = "https://example.org/tiny"
precision = 4

[[datasets]]
id = "{beir}"
label = "tiny"

[[conditions]]
name = "bm25"
title = "BM25 defaults"
retriever = "bm25"

[[expected]]
condition = "bm25"
dataset = "{beir}"
values = {{ "nDCG@10" = {value} }}
"""
    )
    return path


def _base(command: str, p: dict, out: Path) -> list[str]:
    """A working invocation of *command*; one option is added to it per case."""
    runs = [str(r) for r in p["runs"]]
    return {
        "run": ["run", str(p["beir"]), "-r", "bm25", "-m", "nDCG@10", "-o", str(out)],
        "evaluate": ["evaluate", str(p["qrels"]), runs[0], "-m", "AP"],
        "trec_eval": ["trec_eval", str(p["qrels"]), runs[0]],
        "compare": ["compare", str(p["qrels"]), *runs, "-m", "AP", "--resamples", "50"],
        "judge": ["judge", str(p["beir"]), runs[0], "--model", "m", "--depth", "2", "-o", str(out)],
        "answers": ["answers", str(p["nuggets"]), *map(str, p["answers"]), "--model", "m"],
        "nuggets": ["nuggets", str(p["beir"]), "--model", "m", "-o", str(out / "n.jsonl")],
        "report": ["report", str(p["root"] / "exp")],
        "chunk": ["chunk", str(p["notebook"]), "-o", str(out / "c.jsonl")],
        "build": ["build", str(p["plan"]), "--check"],
        "datasets info": ["datasets", "info", str(p["beir"])],
        "datasets fetch": ["datasets", "fetch", "beir/scifact"],
        "cache clear": ["cache", "clear", "-y"],
        "reproduce": ["reproduce", str(p["recipe"])],
    }.get(command, command.split())


def _value(command: str, label: str, param: click.Parameter, p: dict, out: Path) -> list[str]:
    """The arguments that exercise *param* once (empty: the base invocation already does)."""
    if not isinstance(param, click.Option):
        return []  # positional arguments are part of every base invocation
    given = {
        "--profile": "trec_eval",
        "--split": "test",
        "-O": "remove_self_hits=false",
        "-m": "AP",
        "-r": "bm25:k1=0.9",
        "--baseline": {"run": "bm25", "report": "bm25", "answers": "A"}.get(command, "1"),
        "--base-url": "",  # filled with the server's address by the caller
        "--api-key-env": "NB_TEST_KEY",
        "--price": "1,2",
        "--older-than": "30d",
        "--stop-at": "## Questionnaire",
        "-c": "paragraphs" if command == "chunk" else None,
        "-o": str(out / ("o.jsonl" if command in ("nuggets", "chunk") else "o")),
        "--plots": str(out / "plots"),
        "--corpus": str(p["beir"] / "corpus.jsonl"),
        "--chunker": "paragraphs",
        "--model": f"org/m={out}" if command == "reproduce" else "m",
        "--condition": "bm25",
        "--dataset": "tiny",
        "--report": str(out / "r.html"),
        "--seed": "3",
        "-l": "1",
        "--alpha": "0.1",
        "--cells": "mean,dagger",
        "-R": "qrels_jg",  # its second column read as judgment groups (all 0 here)
        "-Z": str(p["root"] / "zscores.txt"),
        "--ci": "0.9",
        "--stage": "corpus",  # build --check: a stage that reads no other (issue 37: checked)
        "--queries": "q1",  # judged (and answered) in every input here
    }.get(label)
    if param.is_flag or param.count:
        return [label]
    if label == "-Z" and command != "trec_eval":  # z-scores are a trec_eval text option
        return [label, given, "--format", "trec_eval"]
    if label == "--query-seed":  # the seed of --sample-queries
        return [label, "2", "--sample-queries", "1"]
    if given is None:
        if isinstance(param.type, click.Choice):
            given = param.type.choices[-1]
        elif isinstance(param.type, click.FloatRange):
            given = str((param.type.min or 0) + 30)
        elif isinstance(param.type, (click.IntRange, click.types.IntParamType)):
            low = getattr(param.type, "min", None)
            given = str(max(1, low or 0) + 1)
        else:
            raise AssertionError(f"no test value for {command} {label}: add one to _value()")
    return [label, given]


def _param(command: str, label: str) -> click.Parameter:
    cmd = dict(_commands())[command]
    return next(
        q for q in cmd.params if (q.opts[0] if isinstance(q, click.Option) else q.name) == label
    )


@pytest.mark.parametrize(("command", "label"), _cases(), ids=lambda x: x.replace(" ", "_"))
def test_every_documented_option_runs_once(command, label, world, tmp_path, monkeypatch):
    if (command, label) in SKIPPED:
        pytest.skip(SKIPPED[(command, label)])
    p, server = world
    monkeypatch.setenv("NUGGETBENCH_LLM_BASE_URL", server.base_url)
    monkeypatch.setenv("NB_TEST_KEY", "test-key-not-secret")
    monkeypatch.setenv("OPENAI_API_KEY", "test-key-not-secret")
    if command == "report" and not (p["root"] / "exp" / "results.json").exists():
        made = CliRunner().invoke(
            cli,
            [
                "run",
                str(p["beir"]),
                "-r",
                "bm25",
                "-r",
                "bm25:k1=0.9",
                "-m",
                "AP",
                "-o",
                str(p["root"] / "exp"),
                "--no-progress",
            ],
        )
        assert made.exit_code == 0, made.output
    out = tmp_path / "out"
    out.mkdir()
    param = _param(command, label)
    extra = _value(command, label, param, p, out)
    if label == "--base-url":
        extra = [label, server.base_url]
    if label == "--no-api-key":
        monkeypatch.delenv("OPENAI_API_KEY")
    args = _base(command, p, out)
    if label == "-o" and "-o" in args:  # its own value replaces the base's
        i = args.index("-o")
        del args[i : i + 2]
    result = CliRunner().invoke(cli, [*args, *extra])
    exc = result.exception
    if isinstance(exc, NuggetbenchError) or (
        isinstance(exc, SystemExit) and result.exit_code not in (0, None)
    ):
        refused = (command, label) in REFUSED or (command, None) in REFUSED
        assert refused and "Traceback" not in result.output, (
            f"{command} {label}: exit {result.exit_code}: {result.output[-800:]} {exc!r}"
        )
        return
    assert exc is None or isinstance(exc, SystemExit), (
        f"{command} {' '.join(extra)}: {type(exc).__name__}: {exc}\n{result.output[-800:]}"
    )
    assert result.exit_code == 0, result.output[-800:]
