"""The peers' measures against the peers' own code, on random cases (differential tests).

* ir_measures 0.4.3 with each provider named (``cwl_eval`` for RBP, SDCG, INST, INSQ, NERR8-11,
  BPM; ``compat``; ``accuracy``; ``gdeval`` for ERR and nDCG(dcg=exp-log2); ``pytrec_eval`` for
  ``NumRet(rel=...)``, ``SetP(relative=True)``, ``IPrec@r``): per-query values at 1e-9 (gdeval
  prints 5 decimals: 5e-6), on random qrels with graded, zero and negative grades, unjudged and
  tied documents, queries missing on either side.
* ranx 0.3.21 ``ranx.evaluate`` for each metric name it takes (runs without ties, since ranx
  orders ties arbitrarily): per-query values at 1e-9.
* gdeval's own output in ``../shared/data/ndeval/expected`` (ndcg@k and err@k per topic and amean).

Each test prints how many values it compared and the largest difference.
"""

from __future__ import annotations

import csv
import shutil

import numpy as np
import pytest

from nuggetbench.data import Qrels, Run
from nuggetbench.measures import Profile, parse_measure
from nuggetbench.measures import score as evaluate

ir_measures = pytest.importorskip("ir_measures")


def _case(rng: np.random.Generator, n_queries: int, *, grades, ties: bool, docids_sorted=True):
    """Random ``(qrels, run)`` dicts: 5% of queries only judged (missing from the run), 5% only
    in the run, some judged queries without a relevant document, unjudged documents, ties."""
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for i in range(n_queries):
        qid = str(100 + i)  # numeric: gdeval wants numeric topics
        pool = [f"d{j:02d}" for j in range(int(rng.integers(1, 30)))]
        kind = rng.random()
        if kind > 0.05:
            judged = sorted(
                rng.choice(pool, size=int(rng.integers(1, len(pool) + 1)), replace=False)
            )
            qrels[qid] = {str(d): int(rng.choice(grades)) for d in judged}
        if kind < 0.95:
            n = int(rng.integers(1, len(pool) + 6))
            docs = rng.choice(
                pool + [f"u{j}" for j in range(5)], size=min(n, len(pool) + 5), replace=False
            )
            if ties:
                scores = rng.choice([-2.0, -1.0, 1.0, 2.0, 3.0, 4.5], size=len(docs))
            else:
                scores = rng.permutation(len(docs)).astype(float) + 0.5
            pairs = sorted(zip(docs, scores)) if docids_sorted else list(zip(docs, scores))
            run[qid] = {str(d): float(s) for d, s in pairs}
    return qrels, run


def _irm_values(provider, measure, qrels, run) -> dict[str, float]:
    ir_qrels = [ir_measures.Qrel(q, d, g) for q, docs in qrels.items() for d, g in docs.items()]
    ir_run = [ir_measures.ScoredDoc(q, d, s) for q, docs in run.items() for d, s in docs.items()]
    try:
        return {m.query_id: m.value for m in provider.iter_calc([measure], ir_qrels, ir_run)}
    except ZeroDivisionError:  # accuracy: a top k without a non-relevant document; per query
        out = {}
        for qid in run:
            one = [r for r in ir_run if r.query_id == qid]
            try:
                out.update(
                    {m.query_id: m.value for m in provider.iter_calc([measure], ir_qrels, one)}
                )
            except ZeroDivisionError:
                continue
        return out


def _ours(qrels, run, text: str, profile) -> dict[str, float]:
    results = evaluate(Qrels.from_dict(qrels), Run.from_dict(run), [text], profile=profile)
    return dict(zip(results.query_ids, results.per_query[text].tolist()))


#: ir_measures measure -> (provider, our profile tie order). The provider sorts each query by
#: score with Python's stable sort (cwl_eval: ties keep the input order, here doc id ascending as
#: the cases list them), compat by doc id ascending.
CWL = [  # ir_measures' RBP without rel has no provider (cwl_eval needs rel): here rel=1
    "RBP(rel=1)",
    "RBP(rel=1,p=0.5)",
    "RBP(rel=2,p=0.95)",
    "RBP(rel=1,p=0.99)",
    "SDCG(max_rel=4)@5",
    "SDCG(max_rel=2)@20",
    "SDCG(min_rel=1,max_rel=3)@10",
    "INST(max_rel=4)",
    "INST(T=2,max_rel=3)",
    "INST(T=0.5,min_rel=1,max_rel=4)",
    "INSQ(max_rel=4)",
    "INSQ(T=3,max_rel=2)",
    "NERR8(max_rel=4)@10",
    "NERR8(max_rel=2)@3",
    "NERR9(max_rel=4)@10",
    "NERR9(min_rel=1,max_rel=3)@5",
    "NERR10(max_rel=4)",
    "NERR10(p=0.5,max_rel=2)",
    "NERR11(max_rel=4)",
    "NERR11(T=2,max_rel=3)",
    "BPM(max_rel=4)@10",
    "BPM(T=2,max_rel=3)@5",
    "BPM(T=0.5,min_rel=1,max_rel=4)@20",
]
COMPAT = ["Compat", "Compat(p=0.8)", "Compat(normalize=False)", "Compat(p=0.5,normalize=False)"]
ACCURACY = ["Accuracy", "Accuracy@5", "Accuracy(rel=2)@10"]
PYTREC = ["NumRet(rel=1)", "NumRet(rel=2)", "SetP(relative=True)", "SetP(relative=True,rel=2)"]
PYTREC += ["IPrec@0.1", "IPrec@0.5", "IPrec@1", "IPrec(rel=2)@0.3", "nDCG(gains={1:3,2:9})@10"]


def _compare(names, provider, seeds, *, ties, profile, tol=1e-9, grades=None):
    grades = grades or [-2, -1, 0, 0, 0, 1, 1, 2, 3, 4]
    worst, compared = 0.0, 0
    for seed in seeds:
        rng = np.random.default_rng(seed)
        qrels, run = _case(rng, 60, grades=grades, ties=ties)
        for text in names:
            theirs = _irm_values(provider, ir_measures.parse_measure(text), qrels, run)
            ours = _ours(qrels, run, text, profile)
            assert set(theirs) <= set(ours), text
            for qid, want in theirs.items():
                got = ours[qid]
                assert got == pytest.approx(want, abs=tol), (seed, text, qid, got, want)
                worst = max(worst, abs(got - want))
                compared += 1
    return compared, worst


INPUT = Profile("test: trec_eval -c, ties in input order", tie_break="input")
ASC = Profile("test: trec_eval -c, ties by doc id ascending", tie_break="docid_asc")


@pytest.mark.parametrize("ties", [False, True])
def test_cwl_eval_measures(ties: bool) -> None:
    """ir_measures' cwl_eval provider; with ties its order is the input order (ascending doc ids
    here), which a ``tie_break="input"`` profile reproduces."""
    pytest.importorskip("cwl")
    compared, worst = _compare(CWL, ir_measures.cwl_eval, [1, 2, 3], ties=ties, profile=INPUT)
    print(f"cwl_eval ties={ties}: {len(CWL)} measures, {compared} values, max |diff| {worst:.2e}")
    assert compared > 3000


@pytest.mark.parametrize("ties", [False, True])
def test_compat_and_accuracy(ties: bool) -> None:
    """ir_measures' compat provider (ties by doc id ascending: a ``docid_asc`` profile) and its
    accuracy provider (stable sort: input order). Accuracy is compared where ir_measures gives a
    value (a query with a relevant document in the top k and a non-relevant one)."""
    compared, worst = _compare(COMPAT, ir_measures.compat, [4, 5, 6], ties=ties, profile=ASC)
    n_acc, worst_acc = _compare(ACCURACY, ir_measures.accuracy, [7, 8], ties=ties, profile=INPUT)
    print(f"compat ties={ties}: {compared} values, max |diff| {worst:.2e}")
    print(f"accuracy ties={ties}: {n_acc} values, max |diff| {worst_acc:.2e}")
    assert compared > 500 and n_acc > 150


def test_pytrec_eval_objects() -> None:
    """ir_measures objects nuggetbench refused before: ``NumRelRet`` (``NumRet(rel=1)``),
    ``SetRelP`` (``SetP(relative=True)``), ``IPrec@0.1``; trec_eval's order (doc id descending)."""
    compared, worst = _compare(
        PYTREC, ir_measures.pytrec_eval, [9, 10], ties=True, profile="trec_eval -c"
    )
    print(f"pytrec_eval objects: {compared} values, max |diff| {worst:.2e}")
    assert compared > 500


@pytest.mark.skipif(shutil.which("perl") is None, reason="gdeval is a perl script")
def test_gdeval_err_and_ndcg() -> None:
    """ir_measures' gdeval provider (its gdeval.pl, 5 decimals) on ERR@k and nDCG(exp-log2)@k;
    gdeval sorts ties by doc id descending, trec_eval's and the default profile's order."""
    names = ["ERR@5", "ERR@10", "ERR@20", "nDCG(dcg='exp-log2')@10"]
    compared, worst = _compare(
        names,
        ir_measures.gdeval,
        [11, 12],
        ties=True,
        profile="trec_eval -c",
        tol=5e-6 + 1e-12,
        grades=[-2, 0, 0, 1, 1, 2, 3, 4],
    )
    print(f"gdeval: {compared} values, max |diff| {worst:.2e} (gdeval prints 5 decimals)")
    assert compared > 300


@pytest.mark.realdata
@pytest.mark.parametrize("name", ["oracle", "partial", "random"])
@pytest.mark.parametrize(
    ("tag", "k", "profile"), [("k20", 20, "trec_eval"), ("k10c", 10, "trec_eval -c")]
)
def test_gdeval_reference_outputs(shared_data, name, tag, k, profile) -> None:
    """``gdeval [-k 10 -c] qrels run`` (expected/COMMANDS.txt): ndcg@k and err@k of every topic
    and the amean, to gdeval's 5 decimals; ``-c`` averages over every judged topic."""
    from nuggetbench.data import read_trec_qrels as read_qrels
    from nuggetbench.data import read_trec_run as read_run

    base = shared_data / "ndeval"
    qrels = read_qrels(base / "qrels" / "qrels.web.251-300.txt")
    run = read_run(base / "runs" / f"synthetic_{name}.web.251-300.run")
    keys = [f"nDCG(dcg=exp-log2)@{k}", f"ERR@{k}"]
    results = evaluate(qrels, run, keys, profile=profile)
    with open(base / "expected" / f"gdeval.{tag}.{name}.251-300.csv") as fh:
        rows = {row["topic"]: row for row in csv.DictReader(fh)}
    for key, column in zip(keys, (f"ndcg@{k}", f"err@{k}")):
        got = dict(zip(results.query_ids, results.per_query[key].tolist()))
        for topic, row in rows.items():
            if topic != "amean":
                assert got[topic] == pytest.approx(float(row[column]), abs=5e-6 + 1e-12), (
                    key,
                    topic,
                )
        assert results.means[key] == pytest.approx(float(rows["amean"][column]), abs=5e-6 + 1e-12)


def test_irm_measure_objects_are_accepted() -> None:
    """Every measure of ir_measures' registry, with each of its parameters given, parses; the
    programmatic diff of the two vocabularies is empty."""
    missing = vocabulary_gaps()
    assert missing == [], missing


def vocabulary_gaps() -> list[str]:
    """ir_measures' measures and parameters nuggetbench does not read (``[]`` when none)."""
    samples = {
        "cutoff": 5, "rel": 2, "judged_only": True, "dcg": "exp-log2", "gains": {0: 0, 1: 3},
        "recall": 0.25, "alpha": 0.3, "beta": 0.7, "p": 0.7, "T": 2.0, "min_rel": 1,
        "max_rel": 3, "normalize": False, "relative": True,
    }  # fmt: skip
    gaps = []
    for name, base in sorted(ir_measures.measures.registry.items()):
        for param in [None, *base.SUPPORTED_PARAMS]:
            kwargs = {} if param is None else {param: samples[param]}
            if "max_rel" in base.SUPPORTED_PARAMS:
                kwargs.setdefault("max_rel", 3)
            if base.SUPPORTED_PARAMS.get("cutoff") and base.SUPPORTED_PARAMS["cutoff"].required:
                kwargs.setdefault("cutoff", 5)
            if name in ("SDCG",) and param == "dcg":
                kwargs["dcg"] = "log2"
            if base.NAME in ("ERR_IA", "nERR_IA", "alpha_DCG", "alpha_nDCG", "P_IA", "StRecall"):
                kwargs.setdefault("cutoff", 5)
            measure = base(**kwargs)
            try:
                parse_measure(str(measure))
            except Exception as exc:  # noqa: BLE001 - collected, asserted empty
                gaps.append(f"{measure}: {exc}")
    return gaps


RANX_NAMES = [
    "hits", "hits@5", "hit_rate", "hit_rate@3", "precision", "precision@5", "recall-l2", "recall@10",
    "f1", "f1@5", "r-precision", "mrr", "mrr@3", "map", "map@10", "ndcg", "ndcg@5",
    "ndcg_burges", "ndcg_burges@10", "dcg@5", "dcg_burges@10", "rbp.95", "rbp.5", "rbp@8",
    "precision@5-l2", "recall@10-l2", "map-l2", "ndcg@10-l2", "ndcg_burges@5-l3", "mrr-l2",
    "hits@10-l3", "f1-l2", "r-precision-l2", "rbp.9-l2", "dcg-l2", "hit_rate@5-l2",
]  # fmt: skip


@pytest.mark.parametrize("seed", [21, 22, 23])
def test_ranx_metric_names(seed: int) -> None:
    """``ranx.evaluate(qrels, run, name, return_mean=False)`` against ``nuggetbench`` with the
    same name, per query, on runs without tied scores (ranx orders ties arbitrarily) and qrels
    with grades 0-4 (ranx's bpref counts a negative grade as judged non-relevant, trec_eval
    as unjudged). A bare ``recall`` keeps trec_eval's meaning (its list of cutoffs), so ranx's
    set recall is checked as ``recall-l2`` here."""
    ranx = pytest.importorskip("ranx")
    rng = np.random.default_rng(seed)
    qrels, run = _case(rng, 80, grades=[0, 0, 1, 1, 2, 3, 4], ties=False)
    both = sorted(set(qrels) & set(run))
    qrels = {q: qrels[q] for q in both}
    run = {q: run[q] for q in both}
    names = [*RANX_NAMES, "bpref", "bpref-l2"]
    worst, compared = 0.0, 0
    for name in names:
        if name.startswith("bpref"):  # one query at a time: ranx's batch bpref is off after a
            # query whose bpref divides by zero (no relevant or no judged non-relevant document)
            theirs = [
                ranx.evaluate(
                    ranx.Qrels({q: qrels[q]}), ranx.Run({q: run[q]}), name, return_mean=False
                )[0]
                for q in both
            ]
        else:
            theirs = ranx.evaluate(ranx.Qrels(qrels), ranx.Run(run), name, return_mean=False)
        ours = _ours(qrels, run, name, "trec_eval")
        for qid, want in zip(sorted(both), theirs):
            if name.startswith("bpref") and not np.isfinite(want):
                continue  # ranx divides by zero there (trec_eval: 0, or 1 per relevant found)
            assert ours[qid] == pytest.approx(float(want), abs=1e-9), (name, qid)
            worst = max(worst, abs(ours[qid] - float(want)))
            compared += 1
    print(f"ranx seed {seed}: {len(names)} names, {compared} values, max |diff| {worst:.2e}")
    assert compared > 2000


@pytest.mark.parametrize("seed", [31, 32])
def test_diversity_judged_only_against_pyndeval(seed: int) -> None:
    """``alpha_nDCG(judged_only=True)@k`` and the other diversity measures with ir_measures'
    ``judged_only``: pyndeval given the documents that have a subtopic judgment (what the
    provider means to do: in ir_measures 0.4.3 that branch raises TypeError, indexing a
    generator, so the run is filtered here and the measure given without it); ties by doc id
    ascending (pyndeval's order: a ``docid_asc`` profile)."""
    from nuggetbench.data import NuggetQrels

    rng = np.random.default_rng(seed)
    nug, judg, run = {}, {}, {}
    for i in range(25):
        qid = f"q{i}"
        subs = [f"{qid}_{j}" for j in range(int(rng.integers(1, 5)))]
        docs = [f"d{j}" for j in range(int(rng.integers(3, 25)))]
        nug[qid] = subs
        judg[qid] = {
            s: {str(d): int(rng.choice([0, 0, 1, 2])) for d in rng.choice(docs, 3, replace=False)}
            for s in subs
        }
        pool = docs + [f"u{j}" for j in range(6)]
        chosen = rng.choice(pool, size=int(rng.integers(1, len(pool))), replace=False)
        run[qid] = {str(d): float(rng.integers(0, 5)) for d in sorted(chosen)}
    qrels = NuggetQrels.from_dict(nug, judg).document_qrels()
    ir_qrels = [
        ir_measures.Qrel(q, d, g, s) for q in nug for s in nug[q] for d, g in judg[q][s].items()
    ]
    judged = {(r.query_id, r.doc_id) for r in ir_qrels}
    ir_run = [
        ir_measures.ScoredDoc(q, d, s)
        for q, docs in run.items()
        for d, s in docs.items()
        if (q, d) in judged
    ]
    names = [
        "alpha_nDCG(judged_only=True)@5", "alpha_nDCG(judged_only=True,alpha=0.8)@10",
        "alpha_DCG(judged_only=True)@5", "ERR_IA(judged_only=True)@10",
        "nERR_IA(judged_only=True)@5", "P_IA(judged_only=True)@5", "AP_IA(judged_only=True)",
    ]  # fmt: skip
    compared = 0
    for text in names:
        theirs = {
            m.query_id: m.value
            for m in ir_measures.pyndeval.iter_calc(
                [
                    ir_measures.parse_measure(
                        text.replace("judged_only=True,", "").replace("(judged_only=True)", "")
                    )
                ],
                ir_qrels,
                ir_run,
            )
        }

        results = evaluate(qrels, Run.from_dict(run), [text], profile=ASC)
        ours = dict(zip(results.query_ids, results.per_query[text].tolist()))
        for qid, want in theirs.items():
            assert ours[qid] == pytest.approx(want, abs=1e-9), (text, qid)
            compared += 1
    plain = evaluate(qrels, Run.from_dict(run), ["alpha_nDCG@5", names[0]], profile=ASC)
    assert not np.allclose(plain.per_query["alpha_nDCG@5"], plain.per_query[names[0]])
    print(f"pyndeval judged_only seed {seed}: {compared} values")
    assert compared >= 150


def test_spellings_and_profile_defaults() -> None:
    """ir_measures' spellings mean what they mean there; a profile's ``-l`` leaves ir_measures'
    own ``NumRet(rel=...)`` filter alone; ERR refuses grades above max_grade as gdeval does."""
    from nuggetbench.errors import InputError, UnknownNameError

    qrels = Qrels.from_dict({"q": {"a": 1, "b": 2, "c": 0, "d": 5}})
    run = Run.from_dict({"q": {"a": 3.0, "b": 2.0, "x": 1.0, "c": 0.5}})
    got = evaluate(
        qrels, run, ["nDCG(gains={1:3,2:9})", "nDCG(gains='1=3,2=9')", "nDCG(dcg=log2)", "nDCG"]
    ).means
    assert got["nDCG(gains={1:3,2:9})"] == got["nDCG(gains='1=3,2=9')"]
    assert got["nDCG(dcg=log2)"] == got["nDCG"]
    counts = evaluate(qrels, run, ["NumRet", "NumRet(rel=2)"], profile="trec_eval -l 2").means
    assert counts == {"NumRet": 4.0, "NumRet(rel=2)": 1.0}
    with pytest.raises(InputError, match="max_grade"):
        evaluate(qrels, run, ["ERR@10"])
    assert evaluate(qrels, run, ["ERR(max_grade=5)@10"]).means["ERR(max_grade=5)@10"] > 0
    with pytest.raises(UnknownNameError, match=r"nearest: 'nDCG', .*nuggetbench measures") as err:
        parse_measure("nDGC@10")
    assert "Known:" not in str(err.value) and str(err.value).count("'") == 8


def test_cli_takes_space_separated_measures(tmp_path) -> None:
    """``-m 'nDCG@10 P@5 AP'`` (ir_measures' command line idiom) is three measures."""
    from click.testing import CliRunner

    from nuggetbench.cli import cli

    (tmp_path / "q").write_text("1 0 a 1\n1 0 b 0\n2 0 c 2\n")
    (tmp_path / "r").write_text("1 Q0 a 1 2.0 x\n1 Q0 b 2 1.0 x\n2 Q0 c 1 1.0 x\n")
    args = ["evaluate", str(tmp_path / "q"), str(tmp_path / "r"), "--format", "json"]
    out = CliRunner().invoke(cli, [*args, "-m", "nDCG@10 P@5 AP", "-m", "hits@10"])
    assert out.exit_code == 0, out.output
    assert '"nDCG@10"' in out.output and '"P@5"' in out.output and '"hits@10"' in out.output
    bad = CliRunner().invoke(cli, [*args, "-m", "nDCG@10 nDGC@10"])
    assert bad.exit_code == 2 and "nearest: 'nDCG'" in bad.output
