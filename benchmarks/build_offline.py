"""A whole benchmark build on real code and real questions, offline, against the local test server.

The source trees of installed packages (default: ``bm25s`` and ``sentence_transformers`` from this
virtualenv) are copied into temporary git repositories; the questions come from a real Stack
Exchange dump (default: the coffee site's ``Posts.xml`` in ``../shared/data``). The LLM is
``tests/llm_server.py`` (a deterministic OpenAI-compatible server on a loopback port), so the
figures measure the pipeline, not a model: corpus statistics (files seen, skipped by reason,
chunks, tokens per chunk), LLM requests per stage, pool sizes, filter counts and wall time. A second
run of the same plan shows the resume path (every stage cached, no request sent). Run::

    python benchmarks/build_offline.py [--posts PATH] [--package NAME ...] [--limit N]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))


def package_repo(name: str, target: Path) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(f"package {name!r} is not installed")
    src = Path(list(spec.submodule_search_locations)[0])
    dest = target / name
    shutil.copytree(src, dest, ignore=shutil.ignore_patterns("__pycache__"))
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "b",
        "GIT_AUTHOR_EMAIL": "b@b",
        "GIT_COMMITTER_NAME": "b",
        "GIT_COMMITTER_EMAIL": "b@b",
    }
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "snapshot"]):
        subprocess.run(["git", *args], cwd=dest, check=True, env=env)
    return dest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--posts", default=str(HERE.parent.parent / "shared/data/stackexchange/coffee/Posts.xml")
    )
    parser.add_argument("--package", action="append", default=None)
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--max-tokens", type=int, default=2048)
    args = parser.parse_args()
    packages = args.package or ["bm25s", "sentence_transformers"]

    from llm_server import LLMServer
    from nuggetbench.builder.pipeline import run_build
    from nuggetbench.builder.plan import load_plan

    with tempfile.TemporaryDirectory() as tmp, LLMServer() as server:
        tmp = Path(tmp)
        os.environ.update(
            {
                "NUGGETBENCH_HOME": str(tmp / "home"),
                "NUGGETBENCH_LLM_BASE_URL": server.base_url,
                "OPENAI_API_KEY": "sk-local-not-a-real-key",
            }
        )
        repos = [package_repo(p, tmp / "repos") for p in packages]
        limit = f"limit = {args.limit}\n" if args.limit else ""
        repo_tables = "".join(f'[[repos]]\nname = "{r.name}"\npath = "{r}"\n\n' for r in repos)
        plan_path = tmp / "plan.toml"
        plan_path.write_text(f'''name = "offline"
output = "out"
[questions]
source = "{args.posts}"
{limit}
{repo_tables}[corpus]
max_tokens = {args.max_tokens}
[llm]
model = "local-test-model"
concurrency = 4
[prices]
"local-test-model" = {{ input = 2.5, output = 10.0 }}
''')
        started = time.perf_counter()
        report = run_build(load_plan(plan_path))
        first = time.perf_counter() - started
        n_requests = len(server.log)
        started = time.perf_counter()
        again = run_build(load_plan(plan_path))
        second = time.perf_counter() - started
        manifest = json.loads((tmp / "out" / "manifest.json").read_text())
        print(
            json.dumps(
                {
                    "packages": packages,
                    "posts": args.posts,
                    "questions": report.questions
                    | {"malformed_rows": len(report.questions.get("malformed_rows", []))},
                    "top_tags": report.top_tags[:10],
                    "corpus": report.corpus_stats,
                    "stages": {
                        k: {kk: vv for kk, vv in v.items()} for k, v in report.stages.items()
                    },
                    "llm_requests_first_run": n_requests,
                    "llm_requests_second_run": len(server.log) - n_requests,
                    "second_run_statuses": {k: v["status"] for k, v in again.stages.items()},
                    "cost_total": manifest["cost"]["total"],
                    "filter": manifest["counts"]["filter"],
                    "wall_seconds": {"first_run": round(first, 2), "second_run": round(second, 2)},
                },
                indent=1,
                default=str,
            )
        )


if __name__ == "__main__":
    main()
