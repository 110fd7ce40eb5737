"""Hub datasets on a machine that cannot reach the hub fail fast, with one message naming the files
and the folder to fill; ``datasets fetch`` of what could not be fetched exits non-zero (issue 13,
case 16).

The hub is made unreachable without touching the network: ``HF_ENDPOINT`` points at a loopback
port where nothing listens, and the offline variables that the suite sets are removed, so the
code takes its "online" path and must discover by itself that the hub cannot be reached.
"""

from __future__ import annotations

import socket
import time

import pytest

from nuggetbench.cli import main
from nuggetbench.datasets import birco, ensure_local, freshstack, hub, load_dataset, registry
from nuggetbench.datasets.registry import Entry
from nuggetbench.errors import DownloadError


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture()
def no_hub(monkeypatch, _isolated_home):
    for var in ("NUGGETBENCH_OFFLINE", "HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"):
        monkeypatch.delenv(var, raising=False)
    for var in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{closed_port()}")
    monkeypatch.setattr(hub, "_PROBES", {})

    def never(*args, **kwargs):
        raise AssertionError("the hub library must not be called when the hub is unreachable")

    monkeypatch.setattr(birco, "_read_hf", never)
    return _isolated_home


def fails_fast(fn) -> str:
    start = time.monotonic()
    with pytest.raises(DownloadError) as info:
        fn()
    assert time.monotonic() - start < 5
    return str(info.value)


def test_birco_without_a_local_copy_fails_at_once(no_hub):
    msg = fails_fast(lambda: load_dataset("birco/wtb"))
    assert "the Hugging Face hub cannot be reached" in msg
    assert str(no_hub / "birco" / "wtb" / "test_set.pickle") in msg


def test_freshstack_without_a_local_copy_fails_at_once(no_hub, monkeypatch):
    def never(*args, **kwargs):
        raise AssertionError("the datasets library must not be called")

    monkeypatch.setattr(freshstack, "_write_rows", never)
    msg = fails_fast(lambda: load_dataset("freshstack/langchain"))
    assert "cannot be reached" in msg and str(no_hub / "freshstack" / "langchain") in msg
    assert "queries.jsonl" in msg and "corpus.jsonl" in msg


def test_hub_downloads_fail_at_once_naming_the_folder(no_hub):
    folder = no_hub / "miracl" / "sw"
    msg = fails_fast(
        lambda: hub.download_files(
            "miracl/miracl", ["*"], what="miracl/sw", fill_folder=folder, hint="topics and qrels"
        )
    )
    assert f"Fill the folder {folder}: topics and qrels" in msg


def test_the_probe_is_made_once_and_sees_a_listening_hub(no_hub, monkeypatch):
    assert "cannot be reached" in hub.hub_unreachable()
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()  # the kernel completes the handshake from the backlog
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{listener.getsockname()[1]}")
    assert hub.hub_unreachable() is None
    listener.close()
    assert hub.hub_unreachable() is None  # remembered for the process


def test_offline_zero_declares_the_machine_online(no_hub, monkeypatch):
    monkeypatch.setenv("NUGGETBENCH_OFFLINE", "0")
    assert hub.hub_unreachable() is None


def test_an_https_proxy_is_probed_instead(no_hub, monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", "https://huggingface.co")
    monkeypatch.setenv("HTTPS_PROXY", f"127.0.0.1:{closed_port()}")
    assert "(the HTTPS proxy) cannot be reached" in hub.hub_unreachable()


def run_cli(capsys, *args) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        main(list(args))
        raise SystemExit(0)
    out = capsys.readouterr()
    return info.value.code, out.out, out.err


def test_cli_fetch_and_run_fail_fast_with_one_message(no_hub, capsys):
    code, out, err = run_cli(capsys, "datasets", "fetch", "birco/wtb")
    assert code != 0 and "None" not in out + err
    assert "test_set.pickle" in err and err.count("error:") == 1
    start = time.monotonic()
    code, out, err = run_cli(capsys, "run", "freshstack/langchain", "-r", "bm25")
    assert code != 0 and time.monotonic() - start < 5
    assert err.count("error:") == 1 and "Retry" not in err


def test_fetch_of_a_dataset_with_no_download_and_no_copy_is_an_error(tmp_path, monkeypatch, capsys):
    module = tmp_path / "nb_nodownload.py"
    module.write_text("def load(dataset_id):\n    raise AssertionError\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(registry, "REGISTRY", list(registry.REGISTRY))
    registry.register(Entry("nodl/*", "nb_nodownload:load", ids=("nodl/one",)))
    with pytest.raises(DownloadError, match="nodl/one could not be fetched"):
        ensure_local("nodl/one")
    code, out, err = run_cli(capsys, "datasets", "fetch", "nodl/one")
    assert code != 0 and "None" not in out and "could not be fetched" in err
