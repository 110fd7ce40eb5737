"""Corpus collection: walking git repositories, skips by reason, symlinks, chunking, clones."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from build_fixtures import REPO_A, git_repo
from nuggetbench.builder.collect import CorpusOptions, CorpusStats, collect_corpus
from nuggetbench.builder.repos import RepoSource, prepare_repo
from nuggetbench.corpus.code import chunk_code, count_tokens, make_counter
from nuggetbench.errors import InputError

SECRET = "TOP-SECRET-OUTSIDE-CONTENT"


def collect(repo, **options):
    stats = CorpusStats()
    docs = list(collect_corpus([repo], CorpusOptions(**options), stats))
    return docs, stats


def test_walk_skips_by_reason_and_counts_add_up(tmp_path):
    files = dict(REPO_A)
    files.update(
        {
            ".hidden/x.py": "x = 1\n",
            ".env": "A=1\n",
            "big.txt": "word " * 400,
            "song.mp3": b"ID3",
            "blob.bin2": b"\x00\x01\x02binary",
            "notes.txt": "",
            "latin1.txt": "caf\xe9".encode("latin-1"),
            "data/more.json": "{}",
            "vendor/lib.py": "y = 2\n",
        }
    )
    repo = prepare_repo(
        RepoSource("a", path=str(git_repo(tmp_path / "a", files))), tmp_path / "work"
    )
    assert repo.commit and len(repo.commit) == 40 and not repo.dirty
    docs, stats = collect(repo, max_file_bytes=1000, exclude=("vendor/*",))
    st = stats.as_dict()
    assert st["skipped"] == {
        "audio-video": 1,
        "binary": 2,
        "data": 2,
        "empty": 1,
        "excluded": 1,
        "hidden": 3,
        "image": 1,
        "too-large": 1,
    }
    assert st["files_seen"] == st["files_chunked"] + st["files_skipped"]
    assert {d.metadata["path"] for d in docs} == {"README.md", "widgets/frobnicate.py"}
    for d in docs:
        raw = (repo.root / d.metadata["path"]).read_bytes()
        start, end = d.metadata["start_byte"], d.metadata["end_byte"]
        assert d.doc_id == f"a/{d.metadata['path']}_{start}_{end}"
        assert d.text == f"a/{d.metadata['path']}\n\n" + raw[start:end].decode()
        assert d.metadata["commit"] == repo.commit
        assert d.metadata["url"].startswith("file://")


def test_symlinks_are_never_followed_out_of_the_repository(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text(f"# Secret\n\n{SECRET}\n")
    root = git_repo(tmp_path / "r", {"ok.md": "# Fine\n\nInside text.\n"})
    os.symlink(outside / "secret.md", root / "leak.md")
    os.symlink(outside, root / "leakdir")
    os.symlink(root / "ok.md", root / "alias.md")
    repo = prepare_repo(RepoSource("r", path=str(root)), tmp_path / "work")
    docs, stats = collect(repo)
    assert [d.metadata["path"] for d in docs] == ["ok.md"]
    assert all(SECRET not in d.text for d in docs)
    assert stats.skipped == {"hidden": 1, "symlink": 1, "symlink-outside": 2}


def test_code_is_chunked_by_syntax_within_the_budget(tmp_path):
    funcs = "\n\n".join(f"def f{i}(x):\n    y = x + {i}\n    return y * {i}\n" for i in range(30))
    root = git_repo(tmp_path / "c", {"mod.py": "import os\n\n" + funcs})
    repo = prepare_repo(RepoSource("c", path=str(root)), tmp_path / "w")
    docs, _ = collect(repo, max_tokens=64)
    assert len(docs) > 3
    raw = (root / "mod.py").read_bytes()
    for d in docs:
        assert count_tokens(d.text) <= 64  # the path header is inside the budget
        body = raw[d.metadata["start_byte"] : d.metadata["end_byte"]].decode()
        # whole top-level definitions: every chunk starts at a 'def' or the import
        assert body.startswith(("def f", "import os")), body[:20]
    # chunks tile the definitions in order, without overlap
    spans = [(d.metadata["start_byte"], d.metadata["end_byte"]) for d in docs]
    assert spans == sorted(spans) and all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))
    covered = b"".join(raw[s:e] for s, e in spans)
    assert covered.count(b"def f") == 30


def test_oversized_leaf_is_split_and_prose_packed(tmp_path):
    long_string = "x = '" + "word " * 300 + "'\n"
    prose = "\n\n".join(f"Paragraph {i} " + "text " * 20 for i in range(10))
    root = git_repo(
        tmp_path / "p",
        {"long.py": long_string, "doc.md": prose, "caf\u00e9.md": "Caf\u00e9 cr\u00e8me " * 50},
    )
    repo = prepare_repo(RepoSource("p", path=str(root)), tmp_path / "w")
    docs, _ = collect(repo, max_tokens=60)
    for d in docs:
        assert count_tokens(d.text) <= 60
        raw = (root / d.metadata["path"]).read_bytes()
        assert d.text.endswith(raw[d.metadata["start_byte"] : d.metadata["end_byte"]].decode())
    kinds = {d.metadata["path"]: d.metadata["chunker"] for d in docs}
    assert kinds["doc.md"] == "prose" and kinds["long.py"] == "code:python"
    # prose chunks start at paragraph starts
    assert all(
        d.text.split("\n\n", 1)[1].startswith("Paragraph")
        for d in docs
        if d.metadata["path"] == "doc.md"
    )


def test_notebooks_are_chunked_by_cells(tmp_path):
    nb = {
        "cells": [
            {
                "cell_type": "markdown",
                "id": "c1",
                "metadata": {},
                "source": "# Title\n\nSome prose.",
            },
            {
                "cell_type": "code",
                "id": "c2",
                "metadata": {},
                "execution_count": 1,
                "outputs": [],
                "source": "print('hello')",
            },
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    root = git_repo(tmp_path / "n", {"demo.ipynb": json.dumps(nb)})
    docs, _ = collect(prepare_repo(RepoSource("n", path=str(root)), tmp_path / "w"))
    assert len(docs) == 1 and docs[0].metadata["chunker"] == "notebook"
    assert "```python\nprint('hello')\n```" in docs[0].text and "Some prose." in docs[0].text


def test_token_counter_hand_case():
    # regex tokens: 'def', 'f', '(', 'x', ')', ':', 'return', 'x' -> 8
    assert count_tokens("def f(x): return x") == 8
    assert count_tokens("a b  c", "whitespace") == 3
    text = "def f(x):\n    return x\n"
    counter = make_counter("regex")(text, text.encode())
    spans = chunk_code(text.encode(), "python", counter, 100)
    assert [(s.start, s.end) for s in spans] == [(0, len(text) - 1)]


def test_missing_path_and_clone_from_a_file_url(tmp_path):
    with pytest.raises(InputError, match="does not exist; fix \\[\\[repos\\]\\] path"):
        prepare_repo(RepoSource("x", path=str(tmp_path / "nope")), tmp_path / "w")
    origin = git_repo(tmp_path / "origin", {"a.md": "# A\n\nText.\n"})
    (origin / "b.md").write_text("# B\n\nMore.\n")
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }
    subprocess.run(["git", "add", "-A"], cwd=origin, check=True, env=env)
    subprocess.run(["git", "commit", "-qm", "second"], cwd=origin, check=True, env=env)
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=origin, capture_output=True, text=True
    ).stdout.strip()
    repo = prepare_repo(RepoSource("cloned", url=origin.as_uri()), tmp_path / "w")
    assert repo.commit == head and repo.root == (tmp_path / "w" / "repos" / "cloned").resolve()
    depth = subprocess.run(
        ["git", "rev-list", "--count", "HEAD"], cwd=repo.root, capture_output=True, text=True
    )
    assert depth.stdout.strip() == "1"  # shallow
    docs, _ = collect(repo)
    assert sorted(d.metadata["path"] for d in docs) == ["a.md", "b.md"]
    again = prepare_repo(
        RepoSource("cloned", url=origin.as_uri()), tmp_path / "w"
    )  # reused, not re-cloned
    assert again.commit == head
    with pytest.raises(InputError, match="git clone of .* failed"):
        prepare_repo(RepoSource("bad", url=(tmp_path / "missing").as_uri()), tmp_path / "w")


def test_repo_source_validation():
    with pytest.raises(InputError, match="exactly one of path"):
        RepoSource("a")
    with pytest.raises(InputError, match="repository name"):
        RepoSource("a/b", path="x")
