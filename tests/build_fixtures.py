"""Synthetic inputs for the builder tests: a Stack Exchange dump, git repositories, a plan."""

from __future__ import annotations

import html
import os
import subprocess
from pathlib import Path

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.org",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.org",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git_repo(path: Path, files: dict[str, str | bytes]) -> Path:
    """Create *path* with *files* and commit them (``git init`` in a temp folder)."""
    path.mkdir(parents=True, exist_ok=True)
    for rel, content in files.items():
        p = path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            p.write_bytes(content)
        else:
            p.write_text(content, encoding="utf-8")
    env = {**os.environ, **GIT_ENV}
    subprocess.run(["git", "init", "-q"], cwd=path, check=True, env=env)
    subprocess.run(["git", "add", "-A"], cwd=path, check=True, env=env)
    subprocess.run(["git", "commit", "-qm", "init"], cwd=path, check=True, env=env)
    return path


def row(**attrs) -> str:
    """One Posts.xml row, attributes escaped as the dump does (newlines as &#xA;)."""
    parts = [
        f'{k}="{html.escape(str(v), quote=True).replace(chr(10), "&#xA;")}"'
        for k, v in attrs.items()
    ]
    return "  <row " + " ".join(parts) + " />"


def posts_xml(rows: list[str]) -> str:
    return (
        '\ufeff<?xml version="1.0" encoding="utf-8"?>\n<posts>\n' + "\n".join(rows) + "\n</posts>\n"
    )


REPO_A = {
    "widgets/frobnicate.py": (
        "import os\n\n\n"
        "def frobnicate(widget, level=3):\n"
        '    """Frobnicate a widget: the level parameter controls the intensity of frobnication."""\n'
        "    return widget * level\n\n\n"
        "class Gizmo:\n"
        "    def spin(self):\n"
        '        """Spin the gizmo clockwise using the turbine."""\n'
        "        return 'spin'\n"
    ),
    "README.md": "# Widgets\n\nThe frobnicate function accepts a level parameter controlling intensity.\n\n"
    "Install widgets with pip install widgets.\n",
    "data/table.csv": "a,b\n1,2\n",
    "logo.png": b"\x89PNG\r\n\x1a\n\x00\x00",
}
REPO_B = {
    "docs/guide.md": "# Guide\n\nConfigure the turbine with the spin_rate option in config.toml.\n\n"
    "The gizmo spins clockwise by default.\n",
    "src/turbine.js": "function spinRate(config) {\n  // spin_rate option from config.toml\n"
    "  return config.spin_rate || 10;\n}\n\nmodule.exports = { spinRate };\n",
}


def qa_rows(
    qid: int, day: str, *, answer: str, answer_score: int, answer_time: str = "12:00", **question
) -> list[str]:
    """Question *qid* (asked on *day* at 10:00; its ``Score``, ``Title``, ``Body`` and ``Tags`` in
    *question*) and its accepted answer *answer*, id *qid* + 1."""
    asked, answered = f"{day}T10:00:00.000", f"{day}T{answer_time}:00.000"
    head = row(Id=qid, PostTypeId=1, AcceptedAnswerId=qid + 1, CreationDate=asked, **question)
    reply = row(
        Id=qid + 1,
        PostTypeId=2,
        ParentId=qid,
        CreationDate=answered,
        Score=answer_score,
        Body=answer,
    )
    return [head, reply]


POSTS = [
    *qa_rows(
        1,
        "2023-03-01",
        Score=5,
        Title="How do I frobnicate a widget?",
        Body="<p>I need to frobnicate my widget with more intensity.</p>",
        Tags="<widgets><python>",
        answer="<p>Call the frobnicate function with the level parameter controlling intensity.</p>"
        "<pre><code>frobnicate(w, level=5)\n</code></pre><p>Install widgets with pip install widgets first.</p>",
        answer_score=3,
        answer_time="11:00",
    ),
    *qa_rows(
        3,
        "2023-04-01",
        Score=2,
        Title="Turbine spin rate?",
        Body="<p>How do I change how fast the turbine spins?</p>",
        Tags="|turbine|config|",
        answer="<p>Configure the turbine with the spin_rate option in config.toml file.</p>"
        "<p>The gizmo spins clockwise by default.</p>",
        answer_score=1,
    ),
    row(
        Id=5,
        PostTypeId=1,
        CreationDate="2023-05-01T10:00:00.000",
        Score=0,
        Title="No accepted answer",
        Body="<p>?</p>",
        Tags="<widgets>",
    ),
    '  <row Id="6" PostTypeId="1" Title="broken & row" />',
    *qa_rows(
        7,
        "2023-06-01",
        Score=1,
        Title="Quantum pancakes?",
        Body="<p>Do pancakes tunnel?</p>",
        Tags="<cooking>",
        answer="<p>Pancakes exhibit marvellous quantum tunnelling behaviour sometimes.</p>",
        answer_score=1,
    ),
    *qa_rows(
        9,
        "2023-07-01",
        Score=4,
        Title="Frobnicate and spin together?",
        Body="<p>Can a widget frobnicate while the gizmo spins?</p>",
        Tags="<widgets><turbine>",
        answer="<p>The frobnicate function accepts a level parameter controlling intensity.</p>"
        "<p>The gizmo spins clockwise by default.</p><p>Pancakes are unrelated to turbines entirely.</p>",
        answer_score=2,
    ),
]


def make_inputs(root: Path) -> dict[str, Path]:
    """Write the dump and the two repositories under *root*; return their paths."""
    root.mkdir(parents=True, exist_ok=True)
    posts = root / "Posts.xml"
    posts.write_text(posts_xml(POSTS), encoding="utf-8")
    return {
        "posts": posts,
        "repo_a": git_repo(root / "repo_a", REPO_A),
        "repo_b": git_repo(root / "repo_b", REPO_B),
    }


def write_plan(folder: Path, inputs: dict[str, Path], *, extra: str = "", llm: str = "") -> Path:
    """A plan in *folder* using absolute input paths and output ``out``."""
    folder.mkdir(parents=True, exist_ok=True)
    plan = folder / "plan.toml"
    plan.write_text(
        f'''name = "synthetic"
output = "out"

[questions]
source = "{inputs["posts"]}"

[[repos]]
name = "repo_a"
path = "{inputs["repo_a"]}"

[[repos]]
name = "repo_b"
path = "{inputs["repo_b"]}"

[llm]
model = "test-model"
concurrency = 1
timeout = 5
backoff = 0.01
max_retries = 2
{llm}
[judge]
batch_size = 2

[prices]
"test-model" = {{ input = 1.0, output = 2.0 }}
{extra}
''',
        encoding="utf-8",
    )
    return plan
