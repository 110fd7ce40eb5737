"""Downloads end: an overall deadline and a stalled-transfer check (issue 13, case 14).

A loopback HTTP server trickles its body (a few bytes at a time), goes silent after the headers,
or sends quickly but too much; each download must end within its limits with a
:class:`DownloadError` that names the folder (or file) to fill by hand, and leave nothing behind.
"""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from nuggetbench.datasets import beir, load_dataset
from nuggetbench.datasets.download import download_file
from nuggetbench.errors import DownloadError


class SlowServer:
    """``/trickle``: *piece* bytes every *every* seconds; ``/silent``: headers, then nothing;
    ``/fast``: 4 KiB every 10 ms of a 100 MB body. Every body is announced with its length."""

    def __init__(self, *, piece: int = 1, every: float = 0.05):
        self.stop = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802
                size = 100_000_000
                self.send_response(200)
                self.send_header("Content-Length", str(size))
                self.end_headers()
                self.wfile.flush()
                step, pause = {
                    "/trickle": (piece, every),
                    "/fast": (4096, 0.01),
                }.get(self.path.rsplit(".", 1)[0].replace("/beir/scifact", "/trickle"), (0, 0.05))
                try:
                    while not outer.stop.is_set():
                        if step:
                            self.wfile.write(b"x" * step)
                            self.wfile.flush()
                        outer.stop.wait(pause)
                except OSError:  # the client gave up
                    pass

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture()
def slow():
    srv = SlowServer()
    yield srv
    srv.close()


def timed(fn):
    start = time.monotonic()
    with pytest.raises(DownloadError) as info:
        fn()
    return time.monotonic() - start, str(info.value)


def test_a_trickling_server_is_stopped_by_the_stall_check(slow, tmp_path):
    dest = tmp_path / "f.zip"
    elapsed, msg = timed(
        lambda: download_file(f"{slow.url}/trickle", dest, stall=0.5, deadline=30, min_rate=1024)
    )
    assert elapsed < 5
    assert "stalled" in msg and "less than 1024 bytes/s" in msg and str(dest) in msg
    assert list(tmp_path.iterdir()) == []  # the partial file is gone


def test_a_silent_server_times_out_within_the_stall_window(slow, tmp_path):
    dest = tmp_path / "f.zip"
    elapsed, msg = timed(lambda: download_file(f"{slow.url}/silent", dest, stall=0.5))
    assert elapsed < 5 and "timed out" in msg and str(dest) in msg
    assert list(tmp_path.iterdir()) == []


def test_a_steady_but_endless_transfer_meets_the_deadline(slow, tmp_path):
    dest = tmp_path / "f.zip"
    elapsed, msg = timed(
        lambda: download_file(f"{slow.url}/fast", dest, stall=0.3, deadline=1.0, min_rate=1024)
    )
    assert 0.9 < elapsed < 6
    assert "did not finish within the deadline of 1 s" in msg and "of 100000000" in msg
    assert list(tmp_path.iterdir()) == []


def test_the_dataset_error_names_the_folder_to_fill(slow, monkeypatch, _isolated_home):
    monkeypatch.setattr(beir, "BASE_URL", f"{slow.url}/beir")
    monkeypatch.delenv("NUGGETBENCH_OFFLINE", raising=False)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("NUGGETBENCH_DOWNLOAD_STALL", "0.5")
    elapsed, msg = timed(lambda: load_dataset("beir/scifact"))
    assert elapsed < 10 and "stalled" in msg
    assert f"fill the folder {_isolated_home / 'beir' / 'scifact'} by hand" in msg
    leftovers = (
        list((_isolated_home / "beir").rglob("*")) if (_isolated_home / "beir").exists() else []
    )
    assert leftovers == []


def test_bad_limits_in_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("NUGGETBENCH_DOWNLOAD_DEADLINE", "soon")
    with pytest.raises(DownloadError, match="NUGGETBENCH_DOWNLOAD_DEADLINE='soon' is not a number"):
        download_file("http://127.0.0.1:9/x", tmp_path / "x")
