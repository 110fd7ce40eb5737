"""BEIR downloads against a local HTTP server on 127.0.0.1: verify, extract safely, install atomically."""

from __future__ import annotations

import hashlib
import io
import json
import os
import stat
import threading
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from nuggetbench.datasets import beir, fetch, load_dataset
from nuggetbench.datasets.download import safe_extract_zip
from nuggetbench.errors import ChecksumError, DownloadError, UnsafeArchiveError


def beir_zip(top: str, *, extra: dict | None = None, forums: tuple[str, ...] = ()) -> bytes:
    """An official-layout zip: ``<top>/corpus.jsonl``... (or ``<top>/<forum>/...``)."""
    buf = io.BytesIO()
    files = {
        "corpus.jsonl": "".join(
            json.dumps({"_id": d, "title": "", "text": t}) + "\n"
            for d, t in (("d1", "alpha"), ("d2", "beta"))
        ),
        "queries.jsonl": json.dumps({"_id": "q1", "text": "alpha"}) + "\n",
        "qrels/test.tsv": "query-id\tcorpus-id\tscore\r\nq1\td1\t1\r\n",
    }
    with zipfile.ZipFile(buf, "w") as zf:
        for prefix in [f"{top}/{f}" for f in forums] or [top]:
            for name, content in files.items():
                zf.writestr(f"{prefix}/{name}", content)
        for name, content in (extra or {}).items():
            if isinstance(content, zipfile.ZipInfo):
                zf.writestr(content, "target")
            else:
                zf.writestr(name, content)
    return buf.getvalue()


class Server:
    """Serves ``files`` (path -> bytes); ``truncate`` paths announce more bytes than they send."""

    def __init__(self):
        self.files: dict[str, bytes] = {}
        self.truncate: set[str] = set()
        self.requests: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802
                outer.requests.append(self.path)
                body = outer.files.get(self.path)
                if body is None:
                    self.send_error(404)
                    return
                self.send_response(200)
                if self.path in outer.truncate:
                    self.send_header("Content-Length", str(len(body) + 1000))
                    self.end_headers()
                    self.wfile.write(body[: len(body) // 2])
                    self.wfile.flush()
                    self.close_connection = True
                    return
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/beir"
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self.thread.start()

    def add(self, name: str, body: bytes, monkeypatch, *, md5: str | None = None):
        self.files[f"/beir/{name}.zip"] = body
        monkeypatch.setitem(beir.MD5, name, md5 or hashlib.md5(body).hexdigest())

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server(monkeypatch):
    srv = Server()
    monkeypatch.setattr(beir, "BASE_URL", srv.url)
    monkeypatch.delenv("NUGGETBENCH_OFFLINE", raising=False)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    yield srv
    srv.close()


def leftovers(root):
    """Every path under ``root/beir`` (temporary files included)."""
    base = root / "beir"
    return sorted(str(p.relative_to(root)) for p in base.rglob("*")) if base.exists() else []


def test_download_verify_extract_and_reuse(server, monkeypatch, _isolated_home):
    server.add("scifact", beir_zip("scifact"), monkeypatch)
    ds = load_dataset("beir/scifact")
    assert len(ds.corpus) == 2 and ds.qrels.to_dict() == {"q1": {"d1": 1}}
    folder = _isolated_home / "beir" / "scifact"
    assert ds.metadata["source"] == str(folder)
    assert leftovers(_isolated_home) == [
        "beir/scifact",
        "beir/scifact/corpus.jsonl",
        "beir/scifact/qrels",
        "beir/scifact/qrels/test.tsv",
        "beir/scifact/queries.jsonl",
    ]
    assert server.requests == ["/beir/scifact.zip"]
    load_dataset("beir/scifact")  # on disk now: no second request
    assert fetch("beir/scifact") == folder
    assert server.requests == ["/beir/scifact.zip"]


def test_fetch_downloads_only(server, monkeypatch, _isolated_home):
    server.add("nfcorpus", beir_zip("nfcorpus"), monkeypatch)
    path = fetch("beir/nfcorpus")
    assert path == _isolated_home / "beir" / "nfcorpus" and (path / "corpus.jsonl").exists()


def test_checksum_mismatch_keeps_nothing(server, monkeypatch, _isolated_home):
    server.add("fiqa", beir_zip("fiqa"), monkeypatch, md5="0" * 32)
    with pytest.raises(ChecksumError) as exc:
        load_dataset("beir/fiqa")
    assert "0" * 32 in str(exc.value) and "fiqa" in str(exc.value)
    assert leftovers(_isolated_home) == []


def test_truncated_download_keeps_nothing(server, monkeypatch, _isolated_home):
    body = beir_zip("nq")
    server.add("nq", body, monkeypatch)
    server.truncate.add("/beir/nq.zip")
    with pytest.raises(DownloadError) as exc:
        load_dataset("beir/nq")
    assert str(_isolated_home / "beir" / "nq") in str(exc.value)
    assert leftovers(_isolated_home) == []


def test_truncated_without_length_is_caught_by_the_checksum(server, monkeypatch, _isolated_home):
    body = beir_zip("nq")
    server.add("nq", body[: len(body) // 2], monkeypatch, md5=hashlib.md5(body).hexdigest())
    with pytest.raises(ChecksumError):
        load_dataset("beir/nq")
    assert leftovers(_isolated_home) == []


def test_network_failure_names_the_folder(server, monkeypatch, _isolated_home):
    # 404: the server has no such file
    with pytest.raises(DownloadError) as exc:
        load_dataset("beir/quora")
    assert str(_isolated_home / "beir" / "quora") in str(exc.value)
    # connection refused: nothing listens on the port any more
    server.close()
    with pytest.raises(DownloadError):
        load_dataset("beir/quora")
    assert leftovers(_isolated_home) == []


@pytest.mark.parametrize(
    "member", ["../evil.txt", "/abs/evil.txt", "scifact/../../evil.txt", "C:/evil.txt"]
)
def test_zip_slip_members_are_refused(server, monkeypatch, _isolated_home, member):
    server.add("scifact", beir_zip("scifact", extra={member: "pwned"}), monkeypatch)
    with pytest.raises(UnsafeArchiveError) as exc:
        load_dataset("beir/scifact")
    assert member in str(exc.value)
    assert leftovers(_isolated_home) == []
    assert not (_isolated_home.parent / "evil.txt").exists()


def test_symlink_member_is_refused(tmp_path):
    link = zipfile.ZipInfo("scifact/link")
    link.external_attr = (stat.S_IFLNK | 0o777) << 16
    archive = tmp_path / "a.zip"
    archive.write_bytes(beir_zip("scifact", extra={"link": link}))
    with pytest.raises(UnsafeArchiveError):
        safe_extract_zip(archive, tmp_path / "out")
    assert not (tmp_path / "out" / "scifact").exists()  # checked before anything is written


def test_cqadupstack_forum_comes_from_the_one_archive(server, monkeypatch, _isolated_home):
    server.add("cqadupstack", beir_zip("cqadupstack", forums=("android", "gis")), monkeypatch)
    ds = load_dataset("beir/cqadupstack/gis")
    assert ds.metadata["source"] == str(_isolated_home / "beir" / "cqadupstack" / "gis")
    assert load_dataset("beir/cqadupstack/android").id == "beir/cqadupstack/android"
    assert server.requests == ["/beir/cqadupstack.zip"]


def test_archive_without_the_official_layout(server, monkeypatch, _isolated_home):
    server.add("scidocs", beir_zip("other"), monkeypatch)
    with pytest.raises(Exception) as exc:
        load_dataset("beir/scidocs")
    assert "scidocs" in str(exc.value)
    assert leftovers(_isolated_home) == []
    assert not os.path.exists(_isolated_home / "beir" / "scidocs")
