"""``irds:<id>`` datasets through ir_datasets (issue 28, item 1).

Datasets are registered in ir_datasets from local files (no network): a tiny synthetic one that
always runs, and SciFact from ``../shared/data`` (skipped when absent), both compared with the
same data read through the BEIR-folder route. The CLI is driven in-process (``CliRunner``), so it
sees the datasets registered by the test process.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from click.testing import CliRunner

from nuggetbench import load_dataset, run_experiment
from nuggetbench.cli import cli
from nuggetbench.datasets import dataset_info, is_dataset_id
from nuggetbench.datasets.irds import IrdsCorpus, to_document
from nuggetbench.errors import DownloadError, UnknownNameError

if importlib.util.find_spec("ir_datasets") is None:
    pytest.skip("ir_datasets is not installed (the irds extra)", allow_module_level=True)
ir_datasets: Any = None  # imported by _irds_home, once its home is a temporary folder

DOCS = {
    "d1": ("Cats", "the cat sat on the mat"),
    "d2": ("", "dogs bark loudly at night"),
    "d3": ("Pets", "cats and dogs are friendly pets"),
    "d4": ("Fish", "goldfish swim in a bowl of water"),
    "d5": ("", "a cat chased a dog across the yard"),
}
QUERIES = {"q1": "cat mat", "q2": "dogs bark", "q3": "fish water", "q9": "never judged"}
QRELS = [("q1", "d1", 2), ("q1", "d5", 1), ("q2", "d2", 1), ("q2", "d3", 1), ("q3", "d4", 1)]


class TitleDoc(NamedTuple):
    doc_id: str
    title: str
    text: str

    def default_text(self):
        return f"{self.title} {self.text}"


def _unique(prefix: str) -> str:
    return f"nbtest-{prefix}-{uuid.uuid4().hex[:8]}"


def _write_irds_files(folder: Path, docs, queries, qrels, *, titles: bool) -> dict[str, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = {k: folder / n for k, n in (("docs", "docs.tsv"), ("q", "q.tsv"), ("r", "qrels"))}
    with open(paths["docs"], "w", encoding="utf-8") as fh:
        for did, (title, text) in docs.items():
            flat = " ".join(f"{title} {text}".split()) if not titles else " ".join(text.split())
            fh.write(
                f"{did}\t{' '.join(title.split())}\t{flat}\n" if titles else f"{did}\t{flat}\n"
            )
    with open(paths["q"], "w", encoding="utf-8") as fh:
        fh.writelines(f"{qid}\t{' '.join(text.split())}\n" for qid, text in queries.items())
    with open(paths["r"], "w", encoding="utf-8") as fh:
        fh.writelines(f"{q} 0 {d} {r}\n" for q, d, r in qrels)
    return paths


def _write_beir_folder(folder: Path, docs, queries, qrels) -> Path:
    (folder / "qrels").mkdir(parents=True, exist_ok=True)
    with open(folder / "corpus.jsonl", "w", encoding="utf-8") as fh:
        for did, (title, text) in docs.items():
            fh.write(json.dumps({"_id": did, "title": title, "text": text}) + "\n")
    with open(folder / "queries.jsonl", "w", encoding="utf-8") as fh:
        fh.writelines(json.dumps({"_id": q, "text": t}) + "\n" for q, t in queries.items())
    with open(folder / "qrels" / "test.tsv", "w", encoding="utf-8") as fh:
        fh.write("query-id\tcorpus-id\tscore\n")
        fh.writelines(f"{q}\t{d}\t{r}\n" for q, d, r in qrels)
    return folder


def _register_tiny(tmp_path: Path, *, titles: bool = True) -> str:
    from ir_datasets.formats import TrecQrels, TsvDocs, TsvQueries
    from ir_datasets.util import LocalDownload

    paths = _write_irds_files(tmp_path / "irds", DOCS, QUERIES, QRELS, titles=titles)
    name = _unique("tiny")
    if titles:  # a document type with a title, as BEIR's in ir_datasets
        ds = ir_datasets.Dataset(
            TsvDocs(LocalDownload(paths["docs"]), doc_cls=TitleDoc),
            TsvQueries(LocalDownload(paths["q"])),
            TrecQrels(LocalDownload(paths["r"]), {}),
        )
    else:
        ds = ir_datasets.create_dataset(
            docs_tsv=str(paths["docs"]), queries_tsv=str(paths["q"]), qrels_trec=str(paths["r"])
        )
    ir_datasets.registry.register(name, ds)
    return f"irds:{name}"


@pytest.fixture(autouse=True)
def _irds_home(tmp_path, monkeypatch):
    """ir_datasets fixes its folders (and writes version files there) when first imported and
    loaded: its home is a temporary folder before that, never the user's ~/.ir_datasets."""
    global ir_datasets
    monkeypatch.setenv("IR_DATASETS_HOME", str(tmp_path / "ir_datasets_home"))
    import ir_datasets


def test_a_registered_dataset_loads_streamed_with_titles_and_judged_queries(tmp_path):
    did = _register_tiny(tmp_path)
    assert is_dataset_id(did)
    ds = load_dataset(did)
    assert isinstance(ds.corpus, IrdsCorpus)
    assert sorted(ds.queries) == ["q1", "q2", "q3"]  # q9 has no judgments
    assert ds.queries["q2"] == "dogs bark"
    assert ds.qrels.n_judgments == len(QRELS)
    assert len(ds.corpus) == 5 and list(ds.corpus) == list(DOCS)
    assert ds.corpus["d3"].title == "Pets" and ds.corpus["d3"].text == DOCS["d3"][1]
    assert ds.corpus.texts(["d1", "d2"]) == ["Cats the cat sat on the mat", DOCS["d2"][1]]
    with pytest.raises(KeyError):
        ds.corpus["nope"]
    docs = list(ds.corpus.iter_documents())
    assert [(d.doc_id, d.title, d.text) for d in docs] == [(k, *v) for k, v in DOCS.items()]
    assert ds.metadata["ir_datasets_id"] == did.removeprefix("irds:")


def test_same_ndcg_as_the_beir_folder_route(tmp_path):
    did = _register_tiny(tmp_path)
    folder = _write_beir_folder(tmp_path / "beir", DOCS, QUERIES, QRELS)
    a = run_experiment(load_dataset(did), ["bm25"], measures=["nDCG@10"], cache_runs=False)
    b = run_experiment(load_dataset(folder), ["bm25"], measures=["nDCG@10"], cache_runs=False)
    ra, rb = a.systems["bm25"].results, b.systems["bm25"].results
    assert ra.values("nDCG@10") == pytest.approx(rb.values("nDCG@10"))
    assert 0 < ra.mean("nDCG@10") < 1  # a real ranking, not a degenerate one


def test_fingerprint_is_declared_and_follows_the_files(tmp_path):
    did = _register_tiny(tmp_path, titles=False)  # ir_datasets.create_dataset
    first = load_dataset(did)
    again = load_dataset(did)
    assert first.fingerprint() == again.fingerprint()
    assert first.corpus.fingerprint() == again.corpus.fingerprint()
    docs = tmp_path / "irds" / "docs.tsv"
    docs.write_text(docs.read_text() + "d6\tone more document\n")
    assert load_dataset(did).corpus.fingerprint() != first.corpus.fingerprint()


def test_an_edited_docs_file_is_read_as_it_is_now(tmp_path, caplog):
    """ir_datasets builds ``docs.tsv.pklz4/`` on the first lookup and reads it ever after (also
    for docs_iter and the count): an edited file was scored on its old texts while the
    fingerprint named the new file. The stale store is cleared, so texts, ids, count, a BM25
    run and the fingerprint all follow the file."""
    did = _register_tiny(tmp_path, titles=False)  # ir_datasets.create_dataset
    first = load_dataset(did)
    assert first.corpus["d1"].text.endswith("the cat sat on the mat")  # builds the store
    store = tmp_path / "irds" / "docs.tsv.pklz4"
    assert store.is_dir()
    now = time.time_ns()  # file times tick coarsely: the store built 10 s ago, the edit 5 s ago
    for f in store.iterdir():
        os.utime(f, ns=(now - 10**10, now - 10**10))
    docs = tmp_path / "irds" / "docs.tsv"
    lines = docs.read_text().splitlines()
    lines[0] = "d1\tparrots talk all day"
    docs.write_text("\n".join([*lines, "d6\tthe cat sat on the mat"]) + "\n")
    os.utime(docs, ns=(now - 5 * 10**9, now - 5 * 10**9))
    with caplog.at_level("WARNING"):
        again = load_dataset(did)
    assert "older than" in caplog.text and "docs.tsv" in caplog.text
    assert again.corpus["d1"].text == "parrots talk all day"
    assert [d.doc_id for d in again.corpus.iter_documents()][-1] == "d6"
    assert len(again.corpus) == len(DOCS) + 1
    assert again.fingerprint() != first.fingerprint()
    result = run_experiment(again, ["bm25"], measures=["nDCG@10"], cache_runs=False)
    run = result.systems["bm25"].run
    top = run.arrays()[2][run.arrays()[1][0]]  # q1 "cat mat": the cat sentence moved to d6
    assert top == "d6"
    with caplog.at_level("WARNING"):
        caplog.clear()
        load_dataset(did)  # the rebuilt store is current: not cleared again
    assert "older than" not in caplog.text


def test_ir_datasets_home_naming_a_file_is_blamed_on_it(tmp_path):
    """Before: "File exists [errno 17] ... choose another folder (-o, NUGGETBENCH_HOME)". In a
    fresh process (ir_datasets fixes its folders on first use)."""
    afile = tmp_path / "not-a-folder"
    afile.write_text("")
    (tmp_path / "run").write_text("1 Q0 d1 1 2.0 t\n")
    src = str(Path(__file__).resolve().parents[1] / "src")
    env = {**os.environ, "IR_DATASETS_HOME": str(afile), "PYTHONPATH": src}
    proc = subprocess.run(
        [sys.executable, "-m", "nuggetbench", "evaluate", "irds:beir/scifact/test"]
        + [str(tmp_path / "run")],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert f"IR_DATASETS_HOME={afile} is a file, not a folder" in proc.stderr
    assert "irds:beir/scifact/test" in proc.stderr and "NUGGETBENCH_HOME" not in proc.stderr


def test_document_types_map_to_title_and_text():
    from ir_datasets.formats import GenericDoc

    class BodyDoc(NamedTuple):
        doc_id: str
        url: str
        title: str
        body: str

    class MarkupOnly(NamedTuple):
        doc_id: str
        marked_up_doc: str

        def default_text(self):
            return "from default_text"

    assert to_document(GenericDoc("a", "t")).text == "t"
    body = to_document(BodyDoc("b", "http://x", "T", "the body"))
    assert (body.title, body.text) == ("T", "the body")
    assert to_document(MarkupOnly("c", "<p>x</p>")).text == "from default_text"


def test_unknown_id_names_the_nearest_and_the_catalogue(tmp_path):
    did = _register_tiny(tmp_path)
    with pytest.raises(UnknownNameError) as err:
        load_dataset(did[:-1])
    assert did.removeprefix("irds:") in str(err.value) and "ir-datasets.com" in str(err.value)
    with pytest.raises(UnknownNameError, match="irds:<id>"):
        load_dataset("irds:")


def _register_remote(tmp_path: Path) -> tuple[str, Path]:
    """Documents to download from a loopback port nothing listens on."""
    from ir_datasets.formats import TrecQrels, TsvDocs, TsvQueries
    from ir_datasets.util import LocalDownload
    from ir_datasets.util.download import Download, RequestsDownload

    paths = _write_irds_files(tmp_path / "irds", DOCS, QUERIES, QRELS, titles=False)
    target = tmp_path / "ir_datasets_home" / "remote" / "docs.tsv"
    dl = Download(
        [RequestsDownload("http://127.0.0.1:9/docs.tsv")], expected_md5="0" * 32, cache_path=target
    )
    name = _unique("remote")
    ir_datasets.registry.register(
        name,
        ir_datasets.Dataset(
            TsvDocs(dl),
            TsvQueries(LocalDownload(paths["q"])),
            TrecQrels(LocalDownload(paths["r"]), {}),
        ),
    )
    return f"irds:{name}", target


def test_offline_names_what_to_download_and_where(tmp_path):
    did, target = _register_remote(tmp_path)  # NUGGETBENCH_OFFLINE=1 (conftest)
    ds = load_dataset(did)  # judgments and queries are on disk; documents are read later
    with pytest.raises(DownloadError) as err:
        run_experiment(ds, ["bm25"], cache_runs=False)
    text = str(err.value)
    assert did in text and "NUGGETBENCH_OFFLINE=1" in text
    assert "http://127.0.0.1:9/docs.tsv" in text and "0" * 32 in text and str(target) in text
    facts = dataset_info(did)
    assert facts["on_disk"] is False and any(str(target) in f for f in facts["source_files"])


def test_a_failed_download_names_what_to_download(tmp_path, monkeypatch):
    monkeypatch.delenv("NUGGETBENCH_OFFLINE")
    monkeypatch.delenv("HF_HUB_OFFLINE")  # also read as "offline" by nuggetbench.home
    monkeypatch.setenv("IR_DATASETS_DL_TRIES", "1")
    did, target = _register_remote(tmp_path)
    ds = load_dataset(did)  # queries and judgments are local; documents are read later
    with pytest.raises(DownloadError) as err:
        next(ds.corpus.iter_documents())
    assert did in str(err.value) and str(target) in str(err.value)
    assert "http://127.0.0.1:9/docs.tsv" in str(err.value)


def test_cli_commands_take_irds_ids_in_process(tmp_path):
    """run, evaluate, compare, report, datasets info/list: the registered dataset is seen by the
    in-process CLI (a CLI subprocess would not see it; catalogue ids need no registration)."""
    did = _register_tiny(tmp_path)
    runner = CliRunner(env={"COLUMNS": "200"})
    out = tmp_path / "out"
    specs = ["bm25", "bm25:k1=0.5,b=0.3"]
    res = runner.invoke(cli, ["run", did, "-r", specs[0], "-r", specs[1], "-o", str(out)])
    assert res.exit_code == 0, res.output
    runs = sorted((out / "runs").glob("*.trec"))
    assert len(runs) == 2
    res = runner.invoke(cli, ["evaluate", did, str(runs[0]), "-m", "nDCG@10", "--format", "json"])
    assert res.exit_code == 0, res.output
    scored = json.loads(res.stdout)
    direct = run_experiment(load_dataset(did), ["bm25"], measures=["nDCG@10"], cache_runs=False)
    mean = direct.systems["bm25"].results.mean("nDCG@10")
    assert f"{mean:.4f}" in json.dumps(scored) or pytest.approx(mean) in _numbers(scored)
    res = runner.invoke(cli, ["compare", did, *map(str, runs), "-m", "nDCG@10"])
    assert res.exit_code == 0, res.output
    res = runner.invoke(cli, ["report", str(out), "-o", str(tmp_path / "report.html")])
    assert res.exit_code == 0, res.output
    assert did in (tmp_path / "report.html").read_text(encoding="utf-8")
    res = runner.invoke(cli, ["datasets", "info", did, "--format", "json"])
    assert json.loads(res.stdout)["family"] == "irds"
    listing = runner.invoke(cli, ["datasets", "list"]).output
    assert "irds:<id>" in listing and "https://ir-datasets.com/" in listing


def _numbers(value) -> list[float]:
    if isinstance(value, dict):
        return [x for v in value.values() for x in _numbers(v)]
    if isinstance(value, list):
        return [x for v in value for x in _numbers(v)]
    return [float(value)] if isinstance(value, (int, float)) else []


def test_evaluate_dataset_takes_an_irds_id(tmp_path):
    from nuggetbench.evaluation import evaluate_dataset

    did = _register_tiny(tmp_path)
    exp = run_experiment(did, ["bm25"], measures=["nDCG@10"], outdir=tmp_path / "o")
    run_file = next((tmp_path / "o" / "runs").glob("*.trec"))
    res = evaluate_dataset(did, run_file, measures=["nDCG@10"])
    assert res.results.mean("nDCG@10") == pytest.approx(exp.systems["bm25"].results.mean("nDCG@10"))


def test_ir_datasets_is_imported_only_for_irds_ids():
    code = (
        "import sys; import nuggetbench; from click.testing import CliRunner; "
        "from nuggetbench.cli import cli; r = CliRunner().invoke(cli, ['datasets', 'list']); "
        "assert r.exit_code == 0 and 'irds:' in r.output, r.output; "
        "CliRunner().invoke(cli, ['run', '--help']); CliRunner().invoke(cli, ['--help']); "
        "assert 'ir_datasets' not in sys.modules"
    )
    src = str(Path(__file__).resolve().parents[1] / "src")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120, env=env)


def test_scifact_through_irds_equals_the_beir_folder(shared_data, tmp_path):
    from nuggetbench.data import read_beir_folder

    folder = shared_data / "beir" / "scifact"
    corpus, queries, qrels = read_beir_folder(folder, split="test")
    docs = {d.doc_id: (d.title, d.text) for d in corpus.iter_documents()}
    qids, starts, docids, rels = qrels.arrays()
    triples = [
        (qids[i], docids[j], int(rels[j]))
        for i in range(len(qids))
        for j in range(starts[i], starts[i + 1])
    ]
    paths = _write_irds_files(tmp_path / "irds", docs, dict(queries), triples, titles=False)
    name = _unique("scifact")
    ir_datasets.registry.register(
        name,
        ir_datasets.create_dataset(
            docs_tsv=str(paths["docs"]), queries_tsv=str(paths["q"]), qrels_trec=str(paths["r"])
        ),
    )
    via_irds = run_experiment(f"irds:{name}", ["bm25"], measures=["nDCG@10"], cache_runs=False)
    via_beir = run_experiment(
        load_dataset(folder), ["bm25"], measures=["nDCG@10"], cache_runs=False
    )
    a, b = via_irds.systems["bm25"].results, via_beir.systems["bm25"].results
    assert len(a.values("nDCG@10")) == 300
    assert a.values("nDCG@10") == pytest.approx(b.values("nDCG@10"), abs=1e-12)
    assert a.mean("nDCG@10") == pytest.approx(b.mean("nDCG@10"), abs=1e-12)
    assert 0.5 < a.mean("nDCG@10") < 0.8
    print(f"SciFact BM25 nDCG@10: irds {a.mean('nDCG@10'):.4f}, beir {b.mean('nDCG@10'):.4f}")


@pytest.fixture()
def loopback(tmp_path):
    """A local HTTP server over ``tmp_path / "www"``; yields ``(folder, base_url)``."""
    import functools
    import http.server
    import threading

    www = tmp_path / "www"
    www.mkdir()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(www))
    handler.log_message = lambda *a, **k: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield www, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _register_served(tmp_path: Path, url: str, md5: str) -> tuple[str, Path]:
    from ir_datasets.formats import TrecQrels, TsvDocs, TsvQueries
    from ir_datasets.util import LocalDownload
    from ir_datasets.util.download import Download, RequestsDownload

    paths = _write_irds_files(tmp_path / "irds", DOCS, QUERIES, QRELS, titles=False)
    name = _unique("served")
    target = tmp_path / "ir_datasets_home" / name / "docs.tsv"
    dl = Download([RequestsDownload(url)], expected_md5=md5, cache_path=target)
    ir_datasets.registry.register(
        name,
        ir_datasets.Dataset(
            TsvDocs(dl),
            TsvQueries(LocalDownload(paths["q"])),
            TrecQrels(LocalDownload(paths["r"]), {}),
        ),
    )
    return f"irds:{name}", target


def test_fetch_downloads_through_ir_datasets_with_its_md5(tmp_path, loopback, monkeypatch):
    import hashlib

    from nuggetbench.datasets import ensure_local
    from nuggetbench.errors import ChecksumError

    monkeypatch.delenv("NUGGETBENCH_OFFLINE")
    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.setenv("IR_DATASETS_DL_TRIES", "1")
    www, base = loopback
    body = "".join(f"{d}\t{t} {x}\n" for d, (t, x) in DOCS.items()).encode()
    (www / "docs.tsv").write_bytes(body)
    did, target = _register_served(tmp_path, f"{base}/docs.tsv", hashlib.md5(body).hexdigest())
    assert dataset_info(did)["on_disk"] is False
    ensure_local(did)  # what `nuggetbench datasets fetch` calls
    assert target.read_bytes() == body and dataset_info(did)["on_disk"] is True
    assert [d.doc_id for d in load_dataset(did).corpus.iter_documents()] == list(DOCS)
    bad, bad_target = _register_served(tmp_path, f"{base}/docs.tsv", "f" * 32)
    with pytest.raises(ChecksumError) as err:
        ensure_local(bad)
    assert str(bad_target) in str(err.value) and not bad_target.exists()


class Topic(NamedTuple):
    query_id: str
    title: str
    description: str

    def default_text(self):
        return self.title


def test_topics_use_their_title_or_the_named_field(tmp_path):
    from ir_datasets.formats import TrecQrels, TsvDocs, TsvQueries
    from ir_datasets.util import LocalDownload

    paths = _write_irds_files(tmp_path / "irds", DOCS, {}, QRELS, titles=False)
    topics = tmp_path / "irds" / "topics.tsv"
    topics.write_text("q1\tcat mat\tWhere did the cat sit?\nq2\tdogs\tWhat do dogs do at night?\n")
    name = _unique("topics")
    ir_datasets.registry.register(
        name,
        ir_datasets.Dataset(
            TsvDocs(LocalDownload(paths["docs"])),
            TsvQueries(LocalDownload(topics), query_cls=Topic),
            TrecQrels(LocalDownload(paths["r"]), {}),
        ),
    )
    assert dict(load_dataset(f"irds:{name}").queries) == {"q1": "cat mat", "q2": "dogs"}
    described = load_dataset(f"irds:{name}", query_field="description").queries
    assert described["q2"] == "What do dogs do at night?"
    with pytest.raises(UnknownNameError, match="description"):
        load_dataset(f"irds:{name}", query_field="desc")
    res = CliRunner().invoke(
        cli,
        [
            "run",
            f"irds:{name}",
            "-r",
            "bm25",
            "-O",
            "query_field=description",
            "-o",
            str(tmp_path / "o"),
        ],
    )
    assert res.exit_code == 0, res.output
    assert "q3" not in load_dataset(f"irds:{name}").queries  # judged but without a topic


def test_scoring_a_run_needs_no_documents(tmp_path):
    from nuggetbench.evaluation import evaluate_dataset

    did, target = _register_remote(tmp_path)  # offline, documents not downloaded
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 d1 1 2.0 r\nq1 Q0 d2 2 1.0 r\nq2 Q0 d2 1 1.0 r\nq3 Q0 d9 1 1.0 r\n")
    ev = evaluate_dataset(did, run, measures=["nDCG@10"])
    by_file = evaluate_dataset(tmp_path / "irds" / "qrels", run, measures=["nDCG@10"])
    assert ev.results.values("nDCG@10") == by_file.results.values("nDCG@10")
    assert 0 < ev.results.values("nDCG@10")["q1"] < 1 and ev.results.values("nDCG@10")["q3"] == 0
    assert not target.exists()
    with pytest.raises(DownloadError, match="download=False"):
        next(iter(load_dataset(did, download=False).corpus))


def test_catalogue_ids_are_described_offline_from_ir_datasets_declarations(tmp_path):
    did = "irds:msmarco-passage/trec-dl-2019/judged"
    facts = dataset_info(did)  # ir_datasets' packaged metadata: no download
    assert facts["counts"]["docs"] == 8841823 and facts["counts"]["queries"] == 43
    assert facts["default_measures"] == ["nDCG@10", "RR(rel=2)", "AP(rel=2)"]
    assert facts["on_disk"] is False and facts["catalogue"].endswith("#" + did[5:])
    with pytest.raises(DownloadError) as err:  # NUGGETBENCH_OFFLINE=1: refused before any try
        load_dataset(did)
    text = str(err.value)
    assert did in text and "https://trec.nist.gov/data/deep/2019qrels-pass.txt" in text
    # where ir_datasets expects it (its home as it was when ir_datasets was imported)
    assert (
        "2f4be390198da108f6845c822e5ada14" in text and "/msmarco-passage/trec-dl-2019/qrels" in text
    )
    assert dataset_info("irds:beir/arguana")["remove_self_hits"] is True
    assert dataset_info("irds:beir/scifact/test")["remove_self_hits"] is False


def test_an_unknown_plain_id_points_at_the_irds_prefix():
    with pytest.raises(UnknownNameError, match=r"irds:<id>"):
        load_dataset("msmarco-passage/trec-dl-2019/judged")
