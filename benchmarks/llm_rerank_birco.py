"""LLM rerankers on BIRCO's pools against the loopback test server (an oracle and a noisy one).

For each BIRCO split found under ``<data>/birco/<name>/test_set.pickle``, starts the
OpenAI-compatible test server of ``tests/llm_server.py`` on a loopback port, whose hidden relevance
is the split's own qrels grade of each passage shown (an oracle), and runs through
``run_experiment`` (``--with-objective``, run cache off, a fresh ``NUGGETBENCH_HOME``):

* a random first stage (``shuffle``: each pool in a seeded random order) and ``bm25``;
* ``FIRST >> llm_listwise(model=..., k=100, window=20, step=10)`` and
  ``FIRST >> llm_pointwise(model=..., k=100, scale=0-3)``;

once with the oracle (model name ``oracle``) and once with a noisy server (model ``noisy``:
Gaussian noise of standard deviation ``--noise`` on the grades, ``--malformed`` of the first
answers malformed). Each reranked system is then run again: every answer comes from the LLM cache,
and the number of requests the server saw during that re-run is printed (it must be 0). Prints a
Markdown table: nDCG@10 (birco profile, x100), requests, prompt/answer tokens, repairs. Run::

    python benchmarks/llm_rerank_birco.py [--data ../shared/data] [--datasets wtb arguana]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]


class ShuffleRetriever:
    """A random first stage: each query's pool in a seeded random order."""

    def __init__(self, options=None, /, seed: int = 0):
        self.seed = seed
        self.name = f"shuffle:seed={seed}"
        self.params = {"seed": seed}

    def index(self, corpus, *, show_progress=False):
        return self

    def search(self, queries, k, *, doc_filter=None, show_progress=False, objective=None):
        from nuggetbench.data import Run

        rng = np.random.default_rng(self.seed)
        q_col, d_col, s_col = [], [], []
        for q in queries:
            docs = sorted(doc_filter[q])
            rng.shuffle(docs)
            docs = docs[:k]
            q_col += [q] * len(docs)
            d_col += docs
            s_col += list(range(len(docs), 0, -1))
        return Run(q_col, d_col, np.asarray(s_col, float), name=self.name)


def oracle_relevance(ds, passage_tokens: int = 300):
    """``(query text, passage shown) -> qrels grade``: the passage is found by its exact text as
    the reranker shows it (whitespace-normalised, cut to *passage_tokens* whitespace tokens) among
    the query's pool. Returns the function and the number of pool passages whose shown text equals
    another's with a different grade (the oracle then answers the higher grade)."""
    from nuggetbench.retrieval.rerankers.llm import truncate_tokens
    from nuggetbench.text.tokenizers import load_tokenizer

    tok = load_tokenizer("whitespace")
    by_query: dict[str, dict[str, float]] = {}
    clashes = 0
    qrels = ds.qrels.to_dict()
    for qid in ds.queries:
        table: dict[str, float] = {}
        for doc, grade in qrels.get(qid, {}).items():
            k = truncate_tokens(ds.corpus[doc].text, tok, passage_tokens)
            if k in table and table[k] != grade:
                clashes += 1
            table[k] = max(table.get(k, 0.0), float(grade))
        by_query[" ".join(ds.queries[qid].split())] = table

    def relevance(query: str, passage: str) -> float:
        return by_query.get(" ".join(query.split()), {}).get(passage, 0.0)

    return relevance, clashes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(REPO.parent / "shared" / "data"))
    parser.add_argument("--datasets", nargs="*", default=None)
    parser.add_argument("--noise", type=float, default=0.8)
    parser.add_argument("--malformed", type=float, default=0.2)
    parser.add_argument("--pointwise", nargs="*", default=None, help="datasets for pointwise")
    args = parser.parse_args()
    os.environ["NUGGETBENCH_DATA"] = args.data
    home = tempfile.mkdtemp(prefix="nb_llm_rerank_")
    os.environ["NUGGETBENCH_HOME"] = home
    sys.path.insert(0, str(REPO / "tests"))

    from llm_server import LLMServer
    from nuggetbench.datasets import load_dataset
    from nuggetbench.experiment import run_experiment
    from nuggetbench.retrieval import register_retriever

    register_retriever("shuffle", ShuffleRetriever)
    names = args.datasets or sorted(
        p.parent.name for p in Path(args.data, "birco").glob("*/test_set.pickle")
    )
    print(
        "| dataset | server | system | nDCG@10 | requests | prompt tok | answer tok | "
        "repaired | re-run requests | seconds |"
    )
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|")
    with LLMServer() as server:
        os.environ["NUGGETBENCH_LLM_BASE_URL"] = server.base_url
        for name in names:
            ds = load_dataset(f"birco/{name}")
            server.relevance, clashes = oracle_relevance(ds)
            if clashes:
                print(f"<!-- {name}: {clashes} pool passages have the text of another grade -->")
            for setting, noise, malformed in (
                ("oracle", 0.0, 0.0),
                ("noisy", args.noise, args.malformed),
            ):
                server.noise, server.malformed = noise, malformed
                specs = ["shuffle", "bm25"]
                for first in ("shuffle", "bm25"):
                    specs.append(
                        f"{first} >> llm_listwise(model={setting}, k=100, window=20, step=10, no_api_key=true)"
                    )
                    if args.pointwise is None or name in args.pointwise:
                        specs.append(
                            f"{first} >> llm_pointwise(model={setting}, k=100, no_api_key=true)"
                        )
                for spec in specs:
                    _one(ds, spec, setting, server, run_experiment, name)


def _one(ds, spec, setting, server, run_experiment, name) -> None:
    with tempfile.TemporaryDirectory() as out:
        before = len(server.log)
        t0 = time.perf_counter()
        exp = run_experiment(
            ds,
            [spec],
            measures=["nDCG@10"],
            k=100,
            outdir=Path(out) / "first",
            cache_runs=False,
            with_objective=True,
        )
        seconds = time.perf_counter() - t0
        sent = len(server.log) - before
        system = exp.system(spec)
        llm = system.run.metadata.get("llm")
        rerun = "-"
        if llm:
            before = len(server.log)
            run_experiment(
                ds,
                [spec],
                measures=["nDCG@10"],
                k=100,
                outdir=Path(out) / "rerun",
                cache_runs=False,
                with_objective=True,
            )
            rerun = str(len(server.log) - before)
    ndcg = system.results.means["nDCG@10"]
    if not llm:
        print(f"| {name} | {setting} | {spec} | {ndcg:.2f} | - | - | - | - | - | {seconds:.1f} |")
        return
    print(
        f"| {name} | {setting} | {spec} | {ndcg:.2f} | {sent} (paid {llm['paid_calls']}) | "
        f"{llm['prompt_tokens']} | {llm['completion_tokens']} | {llm['repaired']} | {rerun} | "
        f"{seconds:.1f} |",
        flush=True,
    )


if __name__ == "__main__":
    main()
