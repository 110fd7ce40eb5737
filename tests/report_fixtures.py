"""Synthetic output folders for the report tests: a BEIR-layout folder and a FreshStack-format
folder, each run with two BM25 variants by ``run_experiment`` (real runs, real results.json)."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import nbformat
from nbformat import v4

from nuggetbench.experiment import run_experiment

SYSTEMS = ["bm25", "bm25:k1=0.9,b=0.4"]
#: Six systems with long spec names (the report must fit 1,300 px and abbreviate them).
SIX = [
    "bm25",
    "bm25:k1=0.9,b=0.4,method=robertson,stemmer=porter",
    "bm25:k1=1.2,b=0.75,method=atire,stopwords=none",
    "bm25:k1=2.0,b=0.9,method=bm25+,delta=1.0,stemmer=none",
    "bm25:k1=0.6,b=0.3,method=bm25l,delta=0.5",
    "fuse(bm25, bm25:k1=0.9,b=0.4,method=robertson,stemmer=porter; method=rrf)",
]
VOCAB = [
    "owl",
    "river",
    "stone",
    "forest",
    "night",
    "mouse",
    "honey",
    "bee",
    "nest",
    "tree",
    "wing",
    "song",
    "light",
    "winter",
    "summer",
    "seed",
    "flower",
    "field",
    "hunt",
    "fly",
    "moon",
    "rain",
    "wind",
    "leaf",
    "branch",
    "root",
    "water",
    "sun",
    "cloud",
    "snow",
    "hill",
    "valley",
    "lake",
    "fish",
    "reed",
    "grass",
    "path",
    "bridge",
    "village",
    "farm",
    "mill",
    "wheat",
    "barn",
    "fox",
    "hare",
    "deer",
    "wolf",
    "bear",
    "oak",
    "pine",
    "ash",
    "elm",
    "willow",
    "moss",
    "fern",
    "feather",
    "egg",
    "hive",
    "wax",
    "pollen",
    "nectar",
    "dawn",
    "dusk",
]


def _text(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(VOCAB) for _ in range(n))


def beir_folder(root: Path, *, n_queries: int = 12, n_docs: int = 80, seed: int = 3) -> Path:
    """corpus.jsonl, queries.jsonl, qrels/test.tsv; graded qrels (0, 1, 2) on some documents
    (the rest unjudged); one query text holds markup that must stay text in the page."""
    rng = random.Random(seed)
    folder = root / "beirlike"
    (folder / "qrels").mkdir(parents=True)
    docs = [{"_id": f"d{i}", "title": f"doc {i}", "text": _text(rng, 30)} for i in range(n_docs)]
    (folder / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    queries, qrels = [], ["query-id\tcorpus-id\tscore"]
    for q in range(n_queries):
        judged = rng.sample(range(n_docs), 6)
        grades = [rng.choice((0, 1, 1, 2)) for _ in judged]
        source = docs[judged[grades.index(max(grades))]]["text"].split()  # words of a relevant doc
        text = " ".join(rng.sample(source, 3)) + " " + _text(rng, 2)
        text += " </script><b>bold</b>" if q == 0 else ""
        queries.append({"_id": f"q{q}", "text": text})
        qrels += [f"q{q}\td{d}\t{g}" for d, g in zip(judged, grades)]
    (folder / "queries.jsonl").write_text("".join(json.dumps(r) + "\n" for r in queries))
    (folder / "qrels" / "test.tsv").write_text("\n".join(qrels) + "\n")
    return folder


def freshstack_folder(root: Path, *, n_queries: int = 8, n_docs: int = 60, seed: int = 5) -> Path:
    """queries.jsonl (with nuggets and their relevant/non-relevant corpus ids) + corpus.jsonl.
    Each query has 3 nuggets; the last nugget of every third query is supported only by a
    document no query text matches, so some nuggets are found by no system."""
    rng = random.Random(seed)
    folder = root / "freshlike"
    folder.mkdir(parents=True)
    corpus = [{"_id": f"c{i}", "title": f"f{i}.py", "text": _text(rng, 25)} for i in range(n_docs)]
    corpus.append({"_id": "orphan", "title": "x.md", "text": "zzz qqq"})
    rows = []
    for q in range(n_queries):
        nuggets = []
        for j in range(3):
            rel = rng.sample(range(n_docs), 3)
            ids = ["orphan"] if (q % 3 == 0 and j == 2) else [f"c{d}" for d in rel]
            nuggets.append(
                {
                    "_id": f"{q}_{j}",
                    "text": f"fact {j} of {q}",
                    "relevant_corpus_ids": ids,
                    "non_relevant_corpus_ids": [
                        f"c{rng.choice([d for d in range(n_docs) if d not in rel])}"
                    ],
                }
            )
        rows.append(
            {
                "query_id": str(q),
                "query_title": _text(rng, 3),
                "query_text": _text(rng, 5),
                "answer_text": "a",
                "nuggets": nuggets,
            }
        )
    (folder / "queries.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (folder / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in corpus))
    return folder


def fastbook_root(root: Path, *, seed: int = 7) -> Path:
    """A data root holding ``fastbook/`` in the benchmark's format with invented notebooks and
    questions: each chapter notebook has paragraphs of generated prose, each question answer
    components whose evidence strings are sentences of its chapter (one component has none).
    Set ``NUGGETBENCH_DATA`` to the returned folder."""
    rng = random.Random(seed)
    folder = root / "fbdata" / "fastbook"
    (folder / "notebooks").mkdir(parents=True)
    questions = []
    for chapter, name in ((1, "01_owls"), (2, "02_bees")):
        sentences = [_text(rng, 9).capitalize() + "." for _ in range(40)]
        cells = [v4.new_markdown_cell(f"# Chapter {chapter}")]
        for i in range(0, 40, 4):
            cells.append(v4.new_markdown_cell(" ".join(sentences[i : i + 4])))
        nb = v4.new_notebook()
        nb.cells = cells
        nbformat.write(nb, str(folder / "notebooks" / f"{name}.ipynb"))
        for number in range(1, 6):
            evidence = rng.sample(sentences, 2)
            components = [
                {
                    "answer_component": f"component {j + 1}",
                    "scoring_type": "simple",
                    "context": [e] if not (number == 5 and j == 1) else [],
                    "explicit_context": "true",
                    "extraneous_answer": "false",
                }
                for j, e in enumerate(evidence)
            ]
            questions.append(
                {
                    "chapter": chapter,
                    "question_number": number,
                    "question_text": " ".join(evidence[0].split()[:5]) + "?",
                    "gold_standard_answer": "...",
                    "answer_context": components,
                    "question_context": [],
                }
            )
    (folder / "fastbook-benchmark.json").write_text(json.dumps({"questions": questions}))
    return folder.parent


def run_folder(dataset: str | Path, outdir: Path, k: int = 30):
    """``run_experiment`` with the two BM25 variants; returns the Experiment."""
    return run_experiment(str(dataset), SYSTEMS, k=k, outdir=outdir, cache_runs=False)


def page_data(html: str) -> dict:
    """The JSON block a report page carries."""
    m = re.search(r'<script type="application/json" id="data">(.*?)</script>', html, re.S)
    assert m, "no data block"
    return json.loads(m.group(1))


def read_trec(path: str | Path) -> dict[str, list[tuple[str, float]]]:
    """A TREC run read independently of nuggetbench: ranked by score desc, doc id desc."""
    out: dict[str, list[tuple[str, float]]] = {}
    for line in Path(path).read_text().splitlines():
        q, _, d, _, s, _ = line.split()
        out.setdefault(q, []).append((d, float(s)))
    return {q: sorted(v, key=lambda x: (-x[1], _neg(x[0]))) for q, v in out.items()}


def _neg(s: str) -> tuple:
    return tuple(-ord(c) for c in s) + (1,)


def wtl(results: dict, system: str, baseline: str, measure: str) -> tuple[int, int, int]:
    """Wins, ties, losses from results.json alone (tie: |d| <= 1e-9)."""
    a = results["systems"][system]["per_query"][measure]
    b = results["systems"][baseline]["per_query"][measure]
    d = [x - y for x, y in zip(a, b) if x is not None and y is not None]
    return (
        sum(x > 1e-9 for x in d),
        sum(abs(x) <= 1e-9 for x in d),
        sum(x < -1e-9 for x in d),
    )
