"""Our alpha-nDCG@10/@20 against ir_measures' pyndeval provider (ndeval's C code), same runs.

Two inputs:

* ``trec-web``: the TREC Web 2014 diversity qrels (50 topics, nuggets = subtopics) and the three
  synthetic runs of ``../shared/data/ndeval`` (oracle, partial, random with many tied scores).
* ``synthetic``: a FreshStack-sized random case built from a seed (``--queries`` queries, up to 12
  nuggets each, 1000-document runs with tied scores).

Both tools start from in-memory inputs in their own format (ours: ``Qrels`` with nuggets and a
``Run``; ir_measures: ``GenericQrel(query_id, doc_id, relevance, iteration=nugget)`` and
``ScoredDoc`` lists, built before timing). Ours is ``evaluate(qrels, run, ["alpha_nDCG@10",
"alpha_nDCG@20"], profile=PYNDEVAL)``, the ``freshstack`` profile without its cut of the run to
the top 20 in file order (FreshStack's step, which pyndeval alone does not take): pyndeval's
order, score descending then doc id ascending, including the greedy ideal rankings; theirs is ``ir_measures.pyndeval.iter_calc``. Per-query values are compared
on the queries ir_measures returns (run and qrels). Reported: the largest per-query difference, the
median time of ``--repeat`` runs of each, and the ratio ir_measures / nuggetbench. Run::

    python benchmarks/diversity.py [--data ../shared/data/ndeval] [--queries 500] [--repeat 5]
"""

from __future__ import annotations

import argparse
import dataclasses
import random
import statistics
import time
from pathlib import Path

MEASURES = ["alpha_nDCG@10", "alpha_nDCG@20"]


def trec_web_cases(folder: Path):
    from nuggetbench.data import read_trec_run as read_run
    from nuggetbench.data.formats.diversity import load_nugget_qrels_file

    qrels = load_nugget_qrels_file(folder / "qrels" / "qrels.web.251-300.ndeval.txt")
    for name in ("oracle", "partial", "random"):
        yield (
            f"trec-web/{name}",
            qrels,
            read_run(folder / "runs" / f"synthetic_{name}.web.251-300.run"),
        )


def synthetic_case(n_queries: int, seed: int = 13):
    from nuggetbench.data import Nugget, NuggetQrels, Run

    rng = random.Random(seed)
    nuggets, jq, jn, jd, js = [], [], [], [], []
    rq, rd, rs = [], [], []
    for q in range(n_queries):
        qid = f"q{q}"
        docs = [f"{qid}-d{i}" for i in range(1500)]
        for j in range(rng.randint(2, 12)):
            nid = f"{qid}_{j}"
            nuggets.append(Nugget(nid, qid))
            for doc in rng.sample(docs, rng.randint(5, 60)):
                jq.append(qid)
                jn.append(nid)
                jd.append(doc)
                js.append(1 if rng.random() < 0.4 else 0)
        for doc in rng.sample(docs, 1000):
            rq.append(qid)
            rd.append(doc)
            rs.append(float(rng.randint(0, 300)))
    qrels = NuggetQrels(nuggets, jq, jn, jd, js).document_qrels(mode="count")
    return f"synthetic/{n_queries}q", qrels, Run(rq, rd, rs)


def to_ir_measures(qrels, run):
    import ir_measures

    q, n, d, s = qrels.nuggets.arrays()
    irq = [
        ir_measures.GenericQrel(a, c, int(e), b)
        for a, b, c, e in zip(q.tolist(), n.tolist(), d.tolist(), s.tolist())
    ]
    qids, starts, docs, scores = run.arrays()
    irr = []
    for i, qid in enumerate(qids.tolist()):
        a, b = int(starts[i]), int(starts[i + 1])
        irr += [
            ir_measures.ScoredDoc(qid, doc, sc)
            for doc, sc in zip(docs[a:b].tolist(), scores[a:b].tolist())
        ]
    return irq, irr


def timed(fn, repeat: int):
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return out, statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--data",
        type=Path,
        default=Path(__file__).resolve().parents[1].parent / "shared" / "data" / "ndeval",
    )
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    import ir_measures

    from nuggetbench.measures import score as evaluate
    from nuggetbench.measures.profiles import freshstack_profile

    fresh = freshstack_profile()
    pyndeval_profile = dataclasses.replace(
        fresh,
        name="pyndeval",
        options={k: v for k, v in fresh.options.items() if k != "diversity_cut"},
    )

    theirs_measures = [ir_measures.parse_measure(m) for m in MEASURES]
    cases = list(trec_web_cases(args.data)) if args.data.is_dir() else []
    cases.append(synthetic_case(args.queries))
    print(
        f"{'case':22s} {'queries':>7s} {'entries':>8s} {'max |diff|':>10s} {'ours s':>8s} {'ir_meas s':>9s} {'ratio':>6s}"
    )
    for name, qrels, run in cases:
        irq, irr = to_ir_measures(qrels, run)
        ours, t_ours = timed(
            lambda qrels=qrels, run=run: evaluate(qrels, run, MEASURES, profile=pyndeval_profile),
            args.repeat,
        )
        theirs, t_theirs = timed(
            lambda irq=irq, irr=irr: list(
                ir_measures.pyndeval.iter_calc(theirs_measures, irq, irr)
            ),
            args.repeat,
        )
        index = {q: i for i, q in enumerate(ours.query_ids)}
        worst = 0.0
        for metric in theirs:
            worst = max(
                worst,
                abs(ours.per_query[str(metric.measure)][index[metric.query_id]] - metric.value),
            )
        n_q = len({m.query_id for m in theirs})
        print(
            f"{name:22s} {n_q:7d} {run.n_entries:8d} {worst:10.1e} {t_ours:8.3f} {t_theirs:9.3f} {t_theirs / t_ours:6.2f}"
        )


if __name__ == "__main__":
    main()
