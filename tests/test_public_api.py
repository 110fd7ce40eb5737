"""The public Python API: what ``dir(nuggetbench)`` shows, ``nb.evaluate`` taking what users hold,
the format-detecting readers, and experiments coming back into Python (issue 18, points 1-3)."""

from __future__ import annotations

import json
import random

import pytest

import nuggetbench as nb
from nuggetbench.errors import InputError, UnknownNameError

PUBLIC = [
    "ComparisonReport",
    "Corpus",
    "Dataset",
    "Document",
    "Experiment",
    "Qrels",
    "Queries",
    "Results",
    "Run",
    "__version__",
    "compare_runs",
    "evaluate",
    "list_datasets",
    "load_dataset",
    "load_qrels",
    "load_run",
    "parse_measure",
    "parse_retriever",
    "read_qrels",
    "read_results",
    "read_run",
    "run_experiment",
    "write_qrels",
    "write_run",
]


def test_public_api_is_pinned():
    assert dir(nb) == PUBLIC
    for name in PUBLIC:  # every name resolves
        assert getattr(nb, name) is not None
    assert not {"Any", "TYPE_CHECKING", "annotations"} & set(dir(nb))
    with pytest.raises(AttributeError):
        nb.no_such_thing  # noqa: B018


def test_one_name_one_meaning_across_packages():
    """A name two packages export is one object (``nb.read_results`` returns ``Results``; the
    report's reader of a folder's ``results.json`` as a dict is ``read_results_json``). Each
    registry's own ``register`` (a dataset entry, a measure family) is the one exception."""
    import importlib
    import pkgutil

    exported: dict[str, dict[str, object]] = {}
    for info in pkgutil.iter_modules(nb.__path__):
        if not info.ispkg or info.name == "cli":
            continue
        package = importlib.import_module(f"nuggetbench.{info.name}")
        for name in getattr(package, "__all__", ()):
            exported.setdefault(name, {})[info.name] = getattr(package, name)
    clashes = {
        name: sorted(owners)
        for name, owners in exported.items()
        if len({id(obj) for obj in owners.values()}) > 1 and name != "register"
    }
    assert clashes == {}


def _random_case(seed: int):
    rng = random.Random(seed)
    qrels, run = {}, {}
    for q in range(rng.randint(2, 8)):
        qid = f"q{q}"
        docs = [f"d{i}" for i in range(rng.randint(3, 15))]
        qrels[qid] = {
            d: rng.choice([0, 0, 1, 2]) for d in rng.sample(docs, rng.randint(1, len(docs)))
        }
        if rng.random() < 0.9:  # sometimes a judged query is missing from the run
            run[qid] = {
                d: float(rng.randint(0, 5)) for d in rng.sample(docs, rng.randint(1, len(docs)))
            }
    run["extra"] = {"dx": 1.0}
    return qrels, run


@pytest.mark.parametrize("seed", range(8))
def test_evaluate_takes_dicts_frames_records_and_ir_measures_objects(seed):
    pd = pytest.importorskip("pandas")
    ir_measures = pytest.importorskip("ir_measures")
    qrels, run = _random_case(seed)
    ref = nb.evaluate(
        nb.Qrels.from_dict(qrels), nb.Run.from_dict(run), ["nDCG@10", "AP", "P(rel=2)@5"]
    )
    from_dicts = nb.evaluate(
        qrels, run, [ir_measures.nDCG @ 10, ir_measures.AP, ir_measures.P(rel=2) @ 5]
    )
    qdf = pd.DataFrame(
        [(q, d, g) for q, docs in qrels.items() for d, g in docs.items()],
        columns=["query_id", "doc_id", "relevance"],
    )
    rdf = pd.DataFrame(
        [(q, d, s) for q, docs in run.items() for d, s in docs.items()],
        columns=["qid", "docno", "score"],  # PyTerrier's names
    )
    from_frames = nb.evaluate(qdf, rdf, "nDCG@10 AP P(rel=2)@5")
    records = list(ir_measures.util.QrelsConverter(qdf).as_namedtuple_iter())
    scored = list(
        ir_measures.util.RunConverter(
            rdf.rename(columns={"qid": "query_id", "docno": "doc_id"})
        ).as_namedtuple_iter()
    )
    from_records = nb.evaluate(records, scored, ["nDCG@10", "AP", "P(rel=2)@5"])
    for res in (from_dicts, from_frames, from_records):
        assert res.query_ids == ref.query_ids
        for (m, value), key in zip(ref.means.items(), ["nDCG@10", "AP", "P(rel=2)@5"]):
            assert res.mean(key) == pytest.approx(value, abs=1e-12), m
    # ir_measures averages over the queries of the run only: compare on those
    common = set(run) & set(qrels)
    sub_q, sub_r = {q: qrels[q] for q in common}, {q: run[q] for q in common}
    sub = nb.evaluate(sub_q, sub_r, ["nDCG@10", "AP"])
    expected = ir_measures.calc_aggregate([ir_measures.nDCG @ 10, ir_measures.AP], sub_q, sub_r)
    assert sub.mean("nDCG@10") == pytest.approx(expected[ir_measures.nDCG @ 10], abs=1e-9)
    assert sub.mean("AP") == pytest.approx(expected[ir_measures.AP], abs=1e-9)


def test_evaluate_default_measures_and_clear_errors():
    qrels = {"q1": {"d1": 1, "d2": 0}}
    run = {"q1": ["d2", "d1"]}  # a ranked list, best first
    res = nb.evaluate(qrels, run)
    assert res.measures == ["nDCG@10", "R@100", "RR@10", "AP"]
    assert res.mean("RR@10") == pytest.approx(0.5)
    with pytest.raises(InputError, match="cannot use a int"):
        nb.evaluate(3, run)
    with pytest.raises(InputError, match="needs a score column"):
        pd = pytest.importorskip("pandas")
        nb.evaluate(qrels, pd.DataFrame({"query_id": ["q1"], "doc_id": ["d1"]}))
    with pytest.raises(InputError, match="not an integer"):
        nb.evaluate({"q1": {"d1": 0.5}}, run)
    with pytest.raises(InputError, match="not to"):
        nb.evaluate({"q1": [("d1", 1)]}, run)
    with pytest.raises(InputError, match="neither a file"):
        nb.evaluate("no/such-thing", run)
    with pytest.raises(InputError, match="ir_measures measure"):
        nb.evaluate(qrels, run, [object()])


def test_readers_detect_the_format(tmp_path):
    trec = tmp_path / "q.txt"
    trec.write_text("q1 0 d1 1\nq1 0 d2 0\n")
    beir = tmp_path / "test.tsv"
    beir.write_text("query-id\tcorpus-id\tscore\r\nq1\td1\t1\r\nq1\td2\t0\r\n")
    js = tmp_path / "q.json"
    js.write_text(json.dumps({"q1": {"d1": 1, "d2": 0}}))
    for path in (trec, beir, js):
        assert nb.read_qrels(path).to_dict() == {"q1": {"d1": 1, "d2": 0}}
        assert nb.load_qrels(path).to_dict() == {"q1": {"d1": 1, "d2": 0}}  # the older name
    nd = tmp_path / "qrels.ndeval.txt"
    nd.write_text("1 1 d1 1\n1 2 d1 1\n1 2 d2 1\n")
    qr = nb.read_qrels(nd, name="div")
    assert qr.nuggets is not None and qr.name == "div"
    assert qr.to_dict() == {"1": {"d1": 2, "d2": 1}}
    run_trec = tmp_path / "r.trec"
    run_trec.write_text("q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 1.0 t\n")
    run_json = tmp_path / "r.json"
    run_json.write_text(json.dumps({"q1": {"d1": 2.0, "d2": 1.0}}))
    for path in (run_trec, run_json):
        assert nb.read_run(path).doc_ids("q1") == ["d1", "d2"]
        assert nb.load_run(path).doc_ids("q1") == ["d1", "d2"]
    with pytest.raises(InputError, match="does not exist"):
        nb.read_qrels(tmp_path / "missing.txt")
    with pytest.raises(InputError, match="load_dataset"):
        nb.read_qrels(tmp_path)


def test_read_qrels_reads_the_beir_file_of_the_readme(shared_data):
    qrels = nb.read_qrels(shared_data / "beir" / "scifact" / "qrels" / "test.tsv")
    assert len(qrels) == 300 and qrels.n_judgments == 339


def test_evaluate_takes_a_dataset_and_a_dataset_id(tmp_path, monkeypatch):
    folder = tmp_path / "ds"
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text(
        "\n".join(json.dumps({"_id": f"d{i}", "title": "", "text": f"doc {i}"}) for i in range(3))
    )
    (folder / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "doc"}))
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    run = {"q1": {"d0": 3.0, "d1": 2.0}}
    ds = nb.load_dataset(str(folder))
    by_value = nb.evaluate(ds, run)
    by_path = nb.evaluate(str(folder), run)
    assert by_value.measures == list(ds.default_measures)
    assert by_value.means == by_path.means
    assert by_value.mean("RR@10") == pytest.approx(0.5)


def _experiment(tmp_path):
    from nuggetbench.data import InMemoryCorpus, Queries
    from nuggetbench.datasets import Dataset

    docs = [nb.Document(f"d{i}", f"apple banana {'cherry ' * (i % 3)} word{i}") for i in range(12)]
    queries = Queries({"q1": "cherry", "q2": "banana word3", "q3": "word5 apple"})
    qrels = nb.Qrels.from_dict(
        {"q1": {"d2": 1, "d5": 1}, "q2": {"d3": 2}, "q3": {"d5": 1, "d1": 0}}
    )
    ds = Dataset(
        id="toy",
        corpus=InMemoryCorpus(docs),
        queries=queries,
        qrels=qrels,
        split="test",
        default_measures=("nDCG@10",),
    )
    return nb.run_experiment(
        ds,
        ["bm25", "bm25:k1=0.5,b=0.3"],
        measures=["nDCG@10", "RR@10"],
        outdir=tmp_path / "out",
        cache_runs=False,
    )


def test_experiment_load_to_pandas_repr_and_read_results(tmp_path):
    exp = _experiment(tmp_path)
    back = nb.Experiment.load(tmp_path / "out")
    assert list(back.systems) == list(exp.systems)
    assert back.measures == exp.measures and back.profile == exp.profile and back.k == exp.k
    for name, s in exp.systems.items():
        assert back.systems[name].results.means == pytest.approx(s.results.means)
        assert back.systems[name].run == s.run
    text = repr(back)
    assert (
        text.startswith("<Experiment 'toy': 2 system(s) x 2 measure(s), 3 queries")
        and len(text) < 300
    )
    df = back.to_pandas()
    assert list(df.columns) == ["system", "query_id", "measure", "value"]
    assert len(df) == 2 * 2 * 3
    means = df.groupby(["system", "measure"]).value.mean()
    assert means[("bm25", "nDCG@10")] == pytest.approx(exp.systems["bm25"].results.mean("nDCG@10"))
    # one system's results from the experiment file
    res = nb.read_results(tmp_path / "out" / "results.json", system="bm25")
    assert res.means == pytest.approx(exp.systems["bm25"].results.means)
    with pytest.raises(UnknownNameError, match="2 systems"):
        nb.read_results(tmp_path / "out")
    with pytest.raises(InputError, match="not an experiment"):
        single = tmp_path / "single.json"
        res.to_json(single)
        nb.Experiment.load(single)


def test_evaluate_takes_ranx_objects():
    ranx = pytest.importorskip("ranx")
    qrels = {"q1": {"d1": 1, "d2": 2}, "q2": {"d3": 1}}
    run = {"q1": {"d1": 0.9, "d2": 0.5, "d9": 0.7}, "q2": {"d3": 0.2, "d4": 0.3}}
    ours = nb.evaluate(ranx.Qrels(qrels), ranx.Run(run), ["nDCG@10", "RR"])
    assert ours.means == nb.evaluate(qrels, run, ["nDCG@10", "RR"]).means
    ref = ranx.evaluate(ranx.Qrels(qrels), ranx.Run(run), ["ndcg@10", "mrr"])
    assert ours.mean("RR") == pytest.approx(ref["mrr"])
