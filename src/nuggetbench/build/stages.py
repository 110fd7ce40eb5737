"""The stages of a build, as methods of :class:`~.pipeline.Builder` (see :mod:`.pipeline`).

Each stage method computes its key from its parameters and its inputs' keys, and either loads its
earlier output or computes it (``Builder._stage``), returning the value later stages read.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from .._atomic import atomic_write
from ..errors import InputError
from ..llm.prompts import load_prompt
from .manifest import build_manifest, tree_stamp
from .store import stage_key


class StageMixin:
    """The stage methods; :class:`~.pipeline.Builder` supplies ``plan``, ``store``, ``keys``,
    ``report``, ``client()``, ``_bar()``, ``_usage()`` and ``_stage()``."""

    plan: Any
    store: Any
    keys: dict[str, str]
    report: Any
    show_progress: bool

    def questions(self, target: str | None = None):
        """Read the questions (:mod:`.questions`); rows: one question each."""
        from .questions import Question, read_questions

        spec = self.plan.questions
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
            return [Question.from_dict(r) for r in self.store.rows("questions")]

        return self._stage(
            "questions", stage_key("questions", params), compute, load, target=target
        )

    def corpus(self, target: str | None = None):
        """Prepare the repositories and chunk them (:mod:`.collect`); returns the chunk corpus."""
        from .collect import collect_corpus
        from .repos import prepare_repo

        repos = [prepare_repo(r, self.plan.workdir) for r in self.plan.repos]
        options = self.plan.corpus
        params = {
            "repos": [
                {**r.describe(), "tree": tree_stamp(r.root) if r.dirty or not r.commit else None}
                for r in repos
            ],
            "options": options.describe(),
        }

        def compute():
            from .collect import CorpusStats

            stats = CorpusStats()

            rows = (
                {"_id": doc.doc_id, "title": doc.title, "text": doc.text, **doc.metadata}
                for doc in collect_corpus(repos, options, stats, show_progress=self.show_progress)
            )

            def info():  # the figures are complete once the rows are written
                return {
                    "stats": stats.as_dict(),
                    "repos": [r.describe() for r in repos],
                    "summary": {"chunks": stats.chunks, "files_seen": stats.files_seen},
                }

            return None, rows, info

        self._stage("corpus", stage_key("corpus", params), compute, lambda: None, target=target)
        self._values["repos"] = repos
        from ..data import JsonlCorpus

        return JsonlCorpus(self.store.rows_path("corpus"), name=self.plan.name)

    def nuggets(self, questions, target: str | None = None):
        """Generate each question's nuggets (:mod:`.nuggets`)."""
        from .nuggets import STAGE, NuggetResult, generate_nuggets

        opts = self.plan.nuggets
        prompt = load_prompt("nuggets", opts.prompt_version)
        params = {"options": asdict(opts), "model": self.plan.llm.model, "prompt": prompt.sha256}

        def compute():
            with self._bar(len(questions), "nuggets") as step:
                result = generate_nuggets(self.client(), questions, opts, progress=step)
            n = sum(len(v) for v in result.nuggets.values())
            info = {
                "usage": self._usage(STAGE),
                "failed": result.failed,
                "summary": {
                    "nuggets": n,
                    "questions_with_nuggets": len(result.nuggets),
                    "failed": len(result.failed),
                },
            }
            return result, result.as_rows(), info

        def load():
            return NuggetResult.from_rows(list(self.store.rows("nuggets")))

        return self._stage(
            "nuggets",
            stage_key("nuggets", params, [self.keys["questions"]]),
            compute,
            load,
            target=target,
        )

    def pool(self, questions, nuggets, corpus, target: str | None = None):
        """Rewrite (sub-questions, HyDE), retrieve, fuse and pool (:mod:`.pooling`); ``{qid: [doc ids]}``."""
        from ..retrieval.querygen import generate_hyde, generate_subquestions
        from .pooling import build_pool

        popts, ropts = self.plan.pooling, self.plan.rewrite
        prompts = {
            n: load_prompt(n, getattr(ropts, f"{n}_version")).sha256 for n in ("subq", "hyde")
        }
        params = {
            "pooling": asdict(popts),
            "rewrite": asdict(ropts),
            "model": self.plan.llm.model,
            "prompts": prompts,
        }
        inputs = [self.keys["questions"], self.keys["nuggets"], self.keys["corpus"]]
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
            if "subq" in popts.techniques:
                with self._bar(len(todo), "sub-questions") as step:
                    subq, _ = generate_subquestions(self.client(), qtext, ropts, progress=step)
                texts["subq"] = {q: "\n".join(v) for q, v in subq.items()}
            if "hyde" in popts.techniques:
                with self._bar(len(todo), "hyde") as step:
                    hyde = generate_hyde(self.client(), qtext, ropts, progress=step)
                texts["hyde"] = hyde
            texts["answer"] = {q.question_id: q.answer for q in todo}
            texts["nuggets"] = {
                q.question_id: "\n".join(nuggets.nuggets[q.question_id]) for q in todo
            }
            texts["question"] = qtext
            result = build_pool(corpus, texts, popts, show_progress=self.show_progress)
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
            info = {"usage": self._usage("subq", "hyde"), "summary": result.sizes()}
            return {r["query_id"]: r["pool"] for r in rows}, rows, info

        def load():
            return {r["query_id"]: r["pool"] for r in self.store.rows("pool")}

        return self._stage("pool", stage_key("pool", params, inputs), compute, load, target=target)

    def judge(self, questions, nuggets, pool, corpus, target: str | None = None):
        """Judge every (nugget, pooled chunk) pair (:mod:`.judge`)."""
        from .judge import STAGE, JudgeItem, JudgeResult, judge_pool

        opts = self.plan.judge
        prompt = load_prompt("judge", opts.prompt_version)
        params = {"options": asdict(opts), "model": self.plan.llm.model, "prompt": prompt.sha256}
        inputs = [self.keys["pool"], self.keys["nuggets"], self.keys["corpus"]]

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
            with self._bar(n_batches, "judging") as step:
                result = judge_pool(self.client(), items, corpus, opts, progress=step)
            info = {"usage": self._usage(STAGE), "summary": result.counts()}
            return result, result.as_rows(), info

        def load():
            return JudgeResult.from_rows(list(self.store.rows("judge")))

        return self._stage(
            "judge", stage_key("judge", params, inputs), compute, load, target=target
        )

    def export(self, questions, nuggets, judgments, corpus, target: str | None = None):
        """Filter the questions and write the benchmark folder (:mod:`.export`); returns the filter report."""
        from .export import filter_questions, query_rows, write_benchmark

        opts = self.plan.filter
        inputs = [
            self.keys["judge"],
            self.keys["questions"],
            self.keys["nuggets"],
            self.keys["corpus"],
        ]

        def compute():
            kept, freport = filter_questions(questions, nuggets, judgments, opts)
            rows = query_rows(kept, nuggets, judgments)
            manifest = build_manifest(self.plan, self.store, self.keys, freport)
            write_benchmark(self.plan.output, rows, corpus.iter_documents(), manifest)
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

        missing = not (self.plan.output / "manifest.json").is_file()
        return self._stage(
            "export",
            stage_key("export", asdict(opts), inputs),
            compute,
            lambda: next(self.store.rows("export")),
            target=target,
            force=missing,
        )

    def calibrate(self, judgments, target: str | None = None):
        """Score the nuggets and the judge against the plan's human labels (:mod:`.calibration`)."""
        from .calibration import calibrate, read_labels

        labels = self.plan.calibration_labels
        if labels is None:
            self.report.stages["calibrate"] = {
                "status": "skipped",
                "reason": "no [calibration] labels in the plan",
            }
            return None
        nug, missing, support = read_labels(labels)
        result = calibrate(nug, missing, support, judgments.verdicts)
        with atomic_write(self.plan.output / "calibration.json") as fh:
            fh.write(json.dumps(result, indent=2, sort_keys=True, default=str) + "\n")
        self.report.stages["calibrate"] = {
            "status": "ran",
            "file": str(self.plan.output / "calibration.json"),
        }
        return result
