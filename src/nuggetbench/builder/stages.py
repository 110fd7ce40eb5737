"""The stages of a build, as plain functions over values (see :mod:`.pipeline`).

Each stage takes the :class:`~.pipeline.Builder` (the plan, the stage store, the LLM client, the
report) and the values of the stages it reads, computes its key from its parameters and its
inputs' keys, and either loads its earlier output or computes it (``Builder.stage``), returning
the value later stages read.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from nuggetbench._atomic import atomic_write
from nuggetbench.builder.calibration import calibrate as calibrate_judge
from nuggetbench.builder.calibration import read_labels
from nuggetbench.builder.collect import CorpusStats, collect_corpus
from nuggetbench.builder.export import filter_questions, query_rows, write_benchmark
from nuggetbench.builder.manifest import build_manifest, tree_stamp
from nuggetbench.builder.plan import Plan
from nuggetbench.builder.pooling import build_pool
from nuggetbench.builder.questions import Question, read_questions
from nuggetbench.builder.repos import PreparedRepo, prepare_repo
from nuggetbench.builder.store import stage_key
from nuggetbench.data import JsonlCorpus
from nuggetbench.errors import InputError
from nuggetbench.judging.answer_nuggets import STAGE as NUGGETS_STAGE
from nuggetbench.judging.answer_nuggets import NuggetResult, generate_nuggets
from nuggetbench.judging.support import STAGE as JUDGE_STAGE
from nuggetbench.judging.support import JudgeItem, JudgeResult, judge_pool
from nuggetbench.llm.prompts import load_prompt
from nuggetbench.retrieval.rerankers.querygen import generate_hyde, generate_subquestions

if TYPE_CHECKING:  # pragma: no cover
    from nuggetbench.builder.pipeline import Builder


def failures(
    reasons: Iterable[str], total: int, unit: str, *, count: int | None = None
) -> dict[str, Any]:
    """A stage's failure record: ``{"count", "of", "unit", "reasons": {why: n}}``; *count*
    defaults to the number of *reasons* (one per failed item)."""
    why = Counter(reasons)
    n = sum(why.values()) if count is None else count
    return {"count": n, "of": total, "unit": unit, "reasons": dict(why.most_common())}


STAGES = ("questions", "corpus", "nuggets", "pool", "judge", "export", "calibrate")
#: The stages each stage reads.
NEEDS = {
    "questions": (),
    "corpus": (),
    "nuggets": ("questions",),
    "pool": ("questions", "corpus", "nuggets"),
    "judge": ("pool",),
    "export": ("judge",),
    "calibrate": ("judge",),
}


def closure(stage: str) -> set[str]:
    """*stage* and every stage it reads, directly or not."""
    out, todo = set(), [stage]
    while todo:
        s = todo.pop()
        if s not in out:
            out.add(s)
            todo.extend(NEEDS[s])
    return out


# --- the stage keys: what a stage's output depends on (also read by ``build --check``) ---------
def questions_key(plan: Plan) -> str:
    """The questions stage's key: the source file (path, size, time), its format and filter.

    Raises:
        InputError: the source file does not exist.
    """
    spec = plan.questions
    if not spec.source.is_file():
        raise InputError(
            f"[questions] source {spec.source} does not exist; fix the path in the plan"
        )
    st = spec.source.stat()
    params = {
        "source": str(spec.source),
        "size": st.st_size,
        "mtime_ns": st.st_mtime_ns,
        "format": spec.format,
        "filter": asdict(spec.filter),
        "on_error": spec.on_error,
        "top_k": spec.top_k,
    }
    return stage_key("questions", params)


def corpus_key(plan: Plan, repos: list[PreparedRepo]) -> str:
    """The corpus stage's key: each repository's commit (or its tree's stamp when it has none,
    or uncommitted changes) and the chunking options."""
    params = {
        "repos": [
            {**r.describe(), "tree": tree_stamp(r.root) if r.dirty or not r.commit else None}
            for r in repos
        ],
        "options": plan.corpus.describe(),
    }
    return stage_key("corpus", params)


def answered_by(plan: Plan) -> dict[str, str]:
    """The key fields naming who answers a stage's requests: the endpoint (normalised,
    credentials removed) and the model."""
    return {"endpoint": plan.llm.endpoint_id(), "model": plan.llm.model}


def nuggets_key(plan: Plan, keys: dict[str, str]) -> str:
    """The nuggets stage's key: its options, who answers, the prompt; the questions' key."""
    opts = plan.nuggets
    prompt = load_prompt("nuggets", opts.prompt_version)
    params = {"options": asdict(opts), **answered_by(plan), "prompt": prompt.sha256}
    return stage_key("nuggets", params, [keys["questions"]])


def pool_key(plan: Plan, keys: dict[str, str]) -> str:
    """The pool stage's key: pooling and rewrite options, who answers, the rewrite prompts; the
    questions', nuggets' and corpus' keys."""
    popts, ropts = plan.pooling, plan.rewrite
    prompts = {n: load_prompt(n, getattr(ropts, f"{n}_version")).sha256 for n in ("subq", "hyde")}
    params = {
        "pooling": asdict(popts),
        "rewrite": asdict(ropts),
        **answered_by(plan),
        "prompts": prompts,
    }
    inputs = [keys["questions"], keys["nuggets"], keys["corpus"]]
    return stage_key("pool", params, inputs)


def judge_key(plan: Plan, keys: dict[str, str]) -> str:
    """The judge stage's key: its options, who answers, the prompt; the pool's, nuggets' and
    corpus' keys."""
    opts = plan.judge
    prompt = load_prompt("judge", opts.prompt_version)
    params = {"options": asdict(opts), **answered_by(plan), "prompt": prompt.sha256}
    return stage_key("judge", params, [keys["pool"], keys["nuggets"], keys["corpus"]])


def export_key(plan: Plan, keys: dict[str, str]) -> str:
    """The export stage's key: the filter; the judge's, questions', nuggets' and corpus' keys."""
    inputs = [keys["judge"], keys["questions"], keys["nuggets"], keys["corpus"]]
    return stage_key("export", asdict(plan.filter), inputs)


#: The stages whose requests go to the model when they run (the pool's only with the
#: ``subq`` or ``hyde`` technique: :func:`calls_model`).
MODEL_STAGES = ("nuggets", "pool", "judge")
#: The pooling techniques that ask the model (query rewriting).
MODEL_TECHNIQUES = ("subq", "hyde")


def calls_model(plan: Plan, stage: str) -> bool:
    """Whether running *stage* of *plan* sends requests to the model."""
    if stage == "pool":
        return any(t in MODEL_TECHNIQUES for t in plan.pooling.techniques)
    return stage in MODEL_STAGES


# --- the stages ---------------------------------------------------------------------------------
def questions(b: Builder, target: str | None = None):
    """Read the questions (:mod:`.questions`); rows: one question each."""
    spec = b.plan.questions
    key = questions_key(b.plan)

    def compute():
        qs, rep = read_questions(
            spec.source,
            spec.filter,
            format=spec.format,
            on_error=spec.on_error,
            top_k=spec.top_k,
        )
        info = {
            "report": rep.as_dict(),
            "summary": {"kept": rep.kept, "malformed_rows": len(rep.malformed)},
        }
        return qs, [q.as_dict() for q in qs], info

    def load():
        return [Question.from_dict(r) for r in b.store.rows("questions")]

    return b.stage("questions", key, compute, load, target=target)


def corpus(b: Builder, target: str | None = None):
    """Prepare the repositories and chunk them (:mod:`.collect`); returns the chunk corpus."""
    repos = [prepare_repo(r, b.plan.workdir) for r in b.plan.repos]
    options = b.plan.corpus

    def compute():
        stats = CorpusStats()

        rows = (
            {"_id": doc.doc_id, "title": doc.title, "text": doc.text, **doc.metadata}
            for doc in collect_corpus(repos, options, stats, show_progress=b.show_progress)
        )

        def info():  # the figures are complete once the rows are written
            return {
                "stats": stats.as_dict(),
                "repos": [r.describe() for r in repos],
                "summary": {"chunks": stats.chunks, "files_seen": stats.files_seen},
            }

        return None, rows, info

    b.stage("corpus", corpus_key(b.plan, repos), compute, lambda: None, target=target)
    b.values["repos"] = repos
    return JsonlCorpus(b.store.rows_path("corpus"), name=b.plan.name)


def nuggets(b: Builder, questions, target: str | None = None):
    """Generate each question's nuggets (:mod:`.nuggets`)."""
    opts = b.plan.nuggets

    def compute():
        with b.progress(len(questions), "nuggets") as step:
            result = generate_nuggets(b.client(), questions, opts, progress=step)
        n = sum(len(v) for v in result.nuggets.values())
        info = {
            "usage": b.usage(NUGGETS_STAGE),
            "failed": result.failed,
            "failures": failures(result.failed.values(), len(questions), "questions"),
            "summary": {
                "nuggets": n,
                "questions_with_nuggets": len(result.nuggets),
                "failed": len(result.failed),
            },
        }
        return result, result.as_rows(), info

    def load():
        return NuggetResult.from_rows(list(b.store.rows("nuggets")))

    return b.stage("nuggets", nuggets_key(b.plan, b.keys), compute, load, target=target)


def pool(b: Builder, questions, nuggets, corpus, target: str | None = None):
    """Rewrite (sub-questions, HyDE), retrieve, fuse and pool (:mod:`.pooling`); ``{qid: [doc ids]}``."""
    popts, ropts = b.plan.pooling, b.plan.rewrite
    todo = [q for q in questions if nuggets.nuggets.get(q.question_id)]
    if len(corpus) == 0:
        raise InputError(
            "the corpus has no chunks: every file of the [[repos]] was skipped; check the "
            "repository paths and the [corpus] skip lists (see the corpus statistics)"
        )

    def compute():
        qtext = {q.question_id: f"{q.title}\n\n{q.body}" for q in todo}
        texts: dict[str, dict[str, str]] = {}
        subq: dict[str, list[str]] = {}
        hyde: dict[str, str] = {}
        bad: dict[str, str] = {}
        if "subq" in popts.techniques:
            with b.progress(len(todo), "sub-questions") as step:
                subq, bad = generate_subquestions(b.client(), qtext, ropts, progress=step)
            texts["subq"] = {q: "\n".join(v) for q, v in subq.items()}
        if "hyde" in popts.techniques:
            with b.progress(len(todo), "hyde") as step:
                hyde = generate_hyde(b.client(), qtext, ropts, progress=step)
            texts["hyde"] = hyde
        texts["answer"] = {q.question_id: q.answer for q in todo}
        texts["nuggets"] = {q.question_id: "\n".join(nuggets.nuggets[q.question_id]) for q in todo}
        texts["question"] = qtext
        result = build_pool(corpus, texts, popts, show_progress=b.show_progress)
        rows = [
            {
                "query_id": q,
                "pool": result.pool[q],
                "by_technique": {
                    t: result.by_technique.get(t, {}).get(q, []) for t in popts.techniques
                },
                "subquestions": subq.get(q, []),
                "hyde": hyde.get(q, ""),
            }
            for q in result.pool
        ]
        info = {
            "usage": b.usage("subq", "hyde"),
            "failures": failures(bad.values(), len(todo), "sub-question requests"),
            "summary": result.sizes(),
        }
        return {r["query_id"]: r["pool"] for r in rows}, rows, info

    def load():
        return {r["query_id"]: r["pool"] for r in b.store.rows("pool")}

    return b.stage("pool", pool_key(b.plan, b.keys), compute, load, target=target)


def judge(b: Builder, questions, nuggets, pool, corpus, target: str | None = None):
    """Judge every (nugget, pooled chunk) pair (:mod:`.judge`)."""
    opts = b.plan.judge

    def compute():
        items = [
            JudgeItem(
                q.question_id,
                f"{q.title}\n\n{q.body}",
                tuple(zip(nuggets.nugget_ids(q.question_id), nuggets.nuggets[q.question_id])),
                tuple(pool.get(q.question_id, ())),
            )
            for q in questions
            if nuggets.nuggets.get(q.question_id)
        ]
        n_batches = sum(-(-len(i.pool) // opts.batch_size) for i in items)
        with b.progress(n_batches, "judging", "batches") as step:
            result = judge_pool(b.client(), items, corpus, opts, progress=step)
        counts = result.counts()
        info = {
            "usage": b.usage(JUDGE_STAGE),
            "failures": failures(
                result.problems.elements(),
                counts["judged_pairs"] + counts["unjudged_pairs"],
                "(nugget, chunk) pairs",
                count=counts["unjudged_pairs"],
            ),
            "summary": counts,
        }
        return result, result.as_rows(), info

    def load():
        return JudgeResult.from_rows(list(b.store.rows("judge")))

    return b.stage("judge", judge_key(b.plan, b.keys), compute, load, target=target)


def export(b: Builder, questions, nuggets, judgments, corpus, target: str | None = None):
    """Filter the questions and write the benchmark folder (:mod:`.export`); returns the filter report."""
    opts = b.plan.filter

    def compute():
        kept, freport = filter_questions(questions, nuggets, judgments, opts)
        rows = query_rows(kept, nuggets, judgments)
        manifest = build_manifest(b.plan, b.store, b.keys, freport)
        write_benchmark(b.plan.output, rows, corpus.iter_documents(), manifest)
        return (
            freport,
            [freport],
            {
                "summary": {
                    k: freport[k]
                    for k in (
                        "kept",
                        "no_supported_nugget",
                        "any_unsupported_nugget",
                        "no_nuggets",
                    )
                }
            },
        )

    missing = not (b.plan.output / "manifest.json").is_file()
    return b.stage(
        "export",
        export_key(b.plan, b.keys),
        compute,
        lambda: next(b.store.rows("export")),
        target=target,
        force=missing,
    )


def calibrate(b: Builder, judgments, target: str | None = None):
    """Score the nuggets and the judge against the plan's human labels (:mod:`.calibration`)."""
    labels = b.plan.calibration_labels
    if labels is None:
        b.report.stages["calibrate"] = {
            "status": "skipped",
            "reason": "no [calibration] labels in the plan",
        }
        return None
    nug, missing, support = read_labels(labels)
    result = calibrate_judge(
        nug, missing, support, judgments.verdicts, formula=b.plan.calibration_formula
    )
    with atomic_write(b.plan.output / "calibration.json") as fh:
        fh.write(json.dumps(result, indent=2, sort_keys=True, default=str) + "\n")
    b.report.stages["calibrate"] = {
        "status": "ran",
        "file": str(b.plan.output / "calibration.json"),
    }
    return result
