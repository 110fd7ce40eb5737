"""The listings and help as a new user reads them: ``measures`` (order, filter, profiles),
``retrievers`` (how each spec is written), ``run --help`` (the dataset's judgments),
``cache clear KIND`` (the kinds), comparison footers (the terminal's width) and one number for one
mean in ``run --format json``."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.console import Console

from nuggetbench.cli import cli
from nuggetbench.compare import compare
from nuggetbench.measures import PROFILES, all_family_names, get_family
from nuggetbench.store import CACHE_KINDS
from report_fixtures import beir_folder

SRC = Path(__file__).resolve().parents[1] / "src" / "nuggetbench"


def _invoke(*args: str, width: int = 100):
    return CliRunner(env={"COLUMNS": str(width)}).invoke(cli, list(args))


def _heads(output: str) -> list[str]:
    """The family names heading the entries of ``measures`` (lines starting in column 0)."""
    return [
        line.split()[0]
        for line in output.splitlines()
        if line and not line[0].isspace() and not line.startswith("profiles (")
    ]


def test_measures_in_alphabetical_order_any_case():
    res = _invoke("measures")
    assert res.exit_code == 0, res.output
    heads = _heads(res.output)
    assert heads == sorted(all_family_names(), key=str.casefold)
    assert heads.index("alpha_nDCG") < heads.index("AP") < heads.index("nDCG")


def test_measures_profiles_each_name_on_its_own_line():
    res = _invoke("measures", width=80)
    lines = res.output.splitlines()
    at = lines.index("profiles (--profile NAME):")
    for name, prof in PROFILES.items():
        i = lines.index(f"  {name}", at)  # the name alone, then the description below it
        following = lines[i + 1]
        assert following.startswith("    ") and not following.startswith("     ")
        assert prof.description.split()[0] in following
        assert all(len(line) <= 80 for line in lines)


def test_measures_filter_matches_names_and_prefixes_not_substrings():
    out = _invoke("measures", "trec").output
    heads = _heads(out)
    assert heads == ["TrecRBP", "TrecRBPResid"]  # not G (alias trec_G), StRecall (strec)
    shown = re.findall(r"^  (\S.*)$", out.split("profiles (--profile NAME):")[1], re.M)
    assert shown == [n for n in PROFILES if n.lower().startswith("trec")] and shown
    assert _heads(_invoke("measures", "ndcg").output) == ["nDCG", "NDCGRel"]
    assert _heads(_invoke("measures", "MAP").output) == ["AP"]  # an alias, any case
    res = _invoke("measures", "nosuch")
    assert res.exit_code == 2 and "no measure family or profile matches 'nosuch'" in res.output
    for family in all_family_names():  # every family is found by its own name
        assert family in _heads(_invoke("measures", family).output)
        assert get_family(family).name == family


def test_retrievers_head_the_syntax_each_spec_is_written_in():
    out = _invoke("retrievers").output
    assert "\nllm_listwise(OPTION=VALUE, ...)\n" in out
    assert "\nllm_pointwise(OPTION=VALUE, ...)\n" in out
    assert "llm_listwise:OPTION" not in out
    assert out.startswith("retrievers (-r SPEC):\n\nbm25:OPTION=VALUE,...\n")


def test_run_help_speaks_of_the_datasets_judgments():
    out = _invoke("run", "--help").output
    flat = " ".join(out.split())
    assert "qrels file" not in flat and "shared/data" not in flat
    assert "judgments" in flat and "nuggetbench run beir/scifact -r bm25" in flat
    # evaluate and compare still take a qrels file and say so
    assert "for a qrels file" in " ".join(_invoke("compare", "--help").output.split())


def test_cache_clear_of_an_unknown_kind_names_the_kinds():
    res = _invoke("cache", "clear", "nosuchkind", "-y")
    assert res.exit_code == 2
    assert "no cache kind 'nosuchkind'; the kinds are bm25, chunks, embeddings/colbert" in (
        " ".join(res.output.split())
    )
    for command in ("list", "size"):
        assert _invoke("cache", command, "nosuchkind").exit_code == 2
    res = _invoke("cache", "clear", "lucene", "-y")  # a kind with nothing cached
    assert res.exit_code == 0 and "nothing to clear: no cache entries of kind lucene" in res.output
    assert _invoke("cache", "clear", "embeddings", "-y").exit_code == 0  # a prefix of kinds


def test_every_cache_kind_written_is_listed():
    written = set()
    for path in SRC.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        written |= set(re.findall(r'Artifact\(\s*"([\w/-]+)"', text))
        written |= set(re.findall(r'cache_dir\("([\w/-]+)"\)', text))
    assert written and written <= set(CACHE_KINDS), written - set(CACHE_KINDS)


def test_comparison_footer_wraps_at_the_terminals_width():
    qids = [f"q{i}" for i in range(20)]
    rep = compare(
        {n: {"AP": [((i * k) % 7) / 7 for i in range(20)]} for n, k in (("a", 1), ("b", 3))},
        query_ids=qids,
        n_resamples=100,
    )
    console = Console(width=200, record=True, color_system=None)
    console.print(rep.to_rich(width=200))
    lines = console.export_text().splitlines()
    table = max(len(line) for line in lines if line.startswith(("┃", "│", "┏", "└")))
    footer = [line for line in lines if "bootstrap CI" in line]
    assert len(footer) == 1 and len(footer[0].rstrip()) > table  # one line, past the table


@pytest.mark.parametrize("fmt", ["json"])
def test_run_json_gives_each_mean_once(tmp_path, fmt):
    folder = beir_folder(tmp_path, n_queries=40, n_docs=120)
    args = ["run", str(folder), "-r", "bm25", "-r", "bm25:k1=0.9,b=0.4", "-k", "50"]
    res = _invoke(*args, "-o", str(tmp_path / "out"), "--format", fmt, "--no-run-cache")
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    for e in data["comparison"]["estimates"]:
        assert e["mean"] == data["results"][e["system"]][e["measure"]]  # the same digits
