"""Generated help has no blank descriptions: every measure family, measure parameter, profile,
retriever option, fusion option, chunker option and dataset loader option is declared with one."""

from __future__ import annotations

from click.testing import CliRunner

from nuggetbench.cli import cli
from nuggetbench.corpus import CHUNKERS
from nuggetbench.datasets import family_of, list_datasets
from nuggetbench.measures import PROFILES, all_family_names, get_family
from nuggetbench.plugins import lookup
from nuggetbench.retrieval.spec import FUSE_PARAMS, RETRIEVERS, WRAPPERS, retriever_params


def test_measure_families_and_parameters_are_described():
    blank = []
    for name in all_family_names():
        fam = get_family(name)
        if not fam.description:
            blank.append(name)
        blank += [f"{name}({p})" for p, param in fam.params.items() if not param.description]
    assert blank == []
    assert all(p.description for p in PROFILES.values())


def test_retriever_and_fusion_options_are_described():
    blank = []
    for table in (RETRIEVERS, WRAPPERS):
        for prefix in sorted(table):
            cls = lookup(table, prefix, kind="retriever")
            blank += [
                f"{prefix}:{n}" for n, p in retriever_params(cls).items() if not p.description
            ]
    blank += [f"fuse:{n}" for n, p in FUSE_PARAMS.items() if not p.description]
    assert blank == []


def test_chunker_and_loader_options_are_described():
    blank = [
        f"{k}:{n}"
        for k, cls in CHUNKERS.items()
        for n, p in cls.options.items()
        if not p.description
    ]
    families = {family_of(i) for i in list_datasets()}
    blank += [f"{f.name}:{n}" for f in families for n, p in f.options.items() if not p.description]
    assert len(families) == 6 and blank == []


def test_listing_commands_print_the_declarations():
    measures = CliRunner(env={"COLUMNS": "250"}).invoke(cli, ["measures"])
    assert measures.exit_code == 0 and "minimum grade that counts as relevant" in measures.output
    retrievers = CliRunner(env={"COLUMNS": "250"}).invoke(cli, ["retrievers"])
    assert retrievers.exit_code == 0
    assert "term-frequency saturation" in retrievers.output and "fuse(" in retrievers.output
