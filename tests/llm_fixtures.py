"""Small inputs for the LLM commands' tests against ``tests/llm_server.py``: one dataset, a run,
nuggets and a system's answers, all in one folder."""

from __future__ import annotations

import json
from pathlib import Path


def tiny_llm_inputs(root: Path, n_docs: int = 6) -> Path:
    """Write under *root*: ``ds/`` (a BEIR folder: query ``q1``, documents ``doc0``..., humans
    judged ``doc0`` and ``doc1``), ``a.trec`` (every document for ``q1``, ``doc0`` first),
    ``nuggets.jsonl`` (two nuggets of ``q1``) and ``sysA.jsonl`` (an answer supporting the first
    and partly the second, in the loopback server's markers). Returns the dataset folder."""
    folder = root / "ds"
    (folder / "qrels").mkdir(parents=True)
    with open(folder / "corpus.jsonl", "w") as fh:
        for j in range(n_docs):
            text = f"doc{j} cats purr loudly. Cats purr when content and calm."
            fh.write(json.dumps({"_id": f"doc{j}", "text": text}) + "\n")
    (folder / "queries.jsonl").write_text('{"_id": "q1", "text": "why do cats purr"}\n')
    (folder / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\nq1\tdoc0\t1\nq1\tdoc1\t2\n"
    )
    with open(root / "a.trec", "w") as fh:
        for j in range(n_docs):
            fh.write(f"q1 Q0 doc{j} {j + 1} {100 - j} a\n")
    nuggets = {
        "qid": "q1",
        "query": "why do cats purr",
        "nuggets": [
            {"text": "Cats purr when content", "importance": "vital"},
            {"text": "Purring is loud", "importance": "okay"},
        ],
    }
    (root / "nuggets.jsonl").write_text(json.dumps(nuggets) + "\n")
    answer = {"query_id": "q1", "answer": "+Cats purr when they are content. ~Purring is loud."}
    (root / "sysA.jsonl").write_text(json.dumps(answer) + "\n")
    return folder
