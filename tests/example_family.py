"""A dataset family added the way docs/contributing.md shows: this module plus one registry line
(``register(Entry("tsvtest/*", "example_family:FAMILY", ids=("tsvtest/small",)))``).

A test-only layout: the folder named by ``EXAMPLE_TSV_ROOT`` holds ``<name>/docs.tsv``
(``id<TAB>text``), ``<name>/queries.tsv`` (``id<TAB>text``) and ``<name>/qrels.tsv``
(``query<TAB>doc<TAB>grade``). The family declares P@1 and SimpleRBP as its default measures, the
``trec_eval`` profile, and one loader option.
"""

from __future__ import annotations

import os
from pathlib import Path

from nuggetbench.data import Document, InMemoryCorpus, Qrels, Queries
from nuggetbench.datasets import Dataset, DatasetFamily
from nuggetbench.errors import DatasetError
from nuggetbench.spec import Param, params_table


def _rows(path: Path) -> list[list[str]]:
    return [line.rstrip("\n").split("\t") for line in path.read_text().splitlines() if line]


class TsvFamily(DatasetFamily):
    name = "tsvtest"
    pattern = "tsvtest/*"
    description = "a test-only family of TSV folders"
    default_measures = ("P@1", "SimpleRBP(p=0.5)")
    default_profile = "trec_eval"
    options = params_table(
        Param("min_grade", int, 1, "judgments below this grade are dropped", minimum=0)
    )

    def ids(self) -> tuple[str, ...]:
        return ("tsvtest/small",)

    def find(self, dataset_id: str) -> Path | None:
        folder = Path(os.environ.get("EXAMPLE_TSV_ROOT", "/nonexistent")) / dataset_id.split("/")[1]
        return folder if folder.is_dir() else None

    def load(self, dataset_id: str, *, min_grade: int = 1) -> Dataset:
        folder = self.find(dataset_id)
        if folder is None:
            raise DatasetError(f"{dataset_id}: set EXAMPLE_TSV_ROOT to the folder holding it")
        corpus = InMemoryCorpus(
            [Document(d, text, "", {}) for d, text in _rows(folder / "docs.tsv")]
        )
        queries = Queries({q: text for q, text in _rows(folder / "queries.tsv")})
        judged = [(q, d, int(g)) for q, d, g in _rows(folder / "qrels.tsv") if int(g) >= min_grade]
        qrels = Qrels.from_dict(
            {q: {d: g for qq, d, g in judged if qq == q} for q in {q for q, _, _ in judged}}
        )
        return Dataset(
            dataset_id,
            corpus,
            queries.subset(qrels.query_ids),
            qrels,
            None,
            list(self.default_measures),
            self.default_profile,
        )


FAMILY = TsvFamily()
