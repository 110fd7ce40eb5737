"""LLM rerankers over any OpenAI-compatible endpoint: listwise (RankGPT) and pointwise (graded).

Specs (options in parentheses, or after a colon like any retriever)::

    bm25 >> llm_listwise(model=M, k=100, window=20, step=10)
    dense:X >> llm_pointwise(model=M, k=50, scale=0-3)

* **Listwise** (:class:`LLMListwise`): RankGPT's sliding window (Sun et al., 2023, "Is ChatGPT
  Good at Search? Investigating Large Language Models as Re-Ranking Agents"). The top ``k`` of
  the first stage are reranked by windows of ``window`` passages moving up by ``step``, bottom
  first (:func:`~nuggetbench.llm.rankout.sliding_windows`, the schedule of castorini's rank_llm);
  the model answers a permutation ``[3] > [1] > ...``. An answer that is a partial or repeated
  permutation (``[3] > [1]`` for a window of 10; an id repeated or naming no passage) is repaired
  as castorini's rank_llm repairs it, without asking again
  (:func:`~nuggetbench.llm.rankout.parse_permutation`: repeated and unknown ids dropped, the
  passages left out appended in their incoming order): the window is counted ``repaired`` and its
  answer stays cached, like any answer used. Only an answer that ranks no passage of the window
  (prose, or ids that all name no passage) is re-asked, up to ``max_repairs`` times (counted
  ``reasked``); when none of its answers ranks a passage, the window keeps its incoming order (as
  rank_llm does), is counted ``failed``, its answers are removed from the LLM cache and the run is
  not stored in the run cache (a later run asks again). The windows of all queries at the same
  step are sent together (``concurrency`` in flight). The reranked run scores the final order
  ``k, k-1, ..., 1``.
* **Pointwise** (:class:`LLMPointwise`): one request per (query, passage) asking for a grade on
  ``scale`` (``0-3``). When the endpoint returns log-probabilities the score is the expected grade
  over the first answer token (:func:`~nuggetbench.llm.rankout.expected_grade`), else the grade
  read from the answer; an answer with no grade on the scale is re-asked ``max_repairs`` times,
  then scored as the scale's lowest grade and counted (``unparsed``), and its answers are removed
  from the cache (as :func:`~nuggetbench.llm.asking.ask_validated` does with failures), so a
  later run asks again. Equal grades keep the first stage's order: the score is
  ``round(grade, 6) + (n - i) / (n + 1) * 1e-7`` for the first-stage position ``i`` of ``n``,
  an addition below the grades' resolution.

Both put the task objective (BIRCO's ``+O``; ``run --with-objective``) into the system prompt,
cut each passage to ``passage_tokens`` tokens of ``tokenizer``, and send every request through
:class:`~nuggetbench.llm.client.LLMClient`: answers cached by content in
``<home>/cache/llm/cache.sqlite`` (a re-run sends nothing; a killed run resumes without
repeating an answered request), retries on 429 / 5xx / timeouts, bounded concurrency. Requests,
tokens, cost and repairs are recorded in the run's metadata (``results.json``). The endpoint comes
from ``base_url`` or ``NUGGETBENCH_LLM_BASE_URL``; the key from the variable named by
``api_key_env``; neither appears in the retriever's name.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

from nuggetbench.data import Corpus, Queries, Run
from nuggetbench.errors import InputError
from nuggetbench.llm.client import ENV_MODEL, ChatRequest, ChatResult, LLMClient
from nuggetbench.llm.jsonout import InvalidAnswer
from nuggetbench.llm.prompts import chat_request, load_prompt
from nuggetbench.llm.rankout import (
    expected_grade,
    parse_answer_grade,
    parse_permutation,
    parse_scale,
    sliding_windows,
)
from nuggetbench.progress import Meter
from nuggetbench.retrieval.compose.pipeline import Composable
from nuggetbench.retrieval.models.topk import with_empty_queries
from nuggetbench.retrieval.options import LLMListwiseOptions, LLMPointwiseOptions
from nuggetbench.retrieval.protocols import check_k
from nuggetbench.retrieval.rerankers.endpoint import (
    asked_params,
    check_endpoint,
    endpoint_client,
    endpoint_identity,
    endpoint_model,
    shown_options,
)
from nuggetbench.text.tokenizers import check_tokenizer_name, load_tokenizer

log = logging.getLogger(__name__)

__all__ = ["LLMListwise", "LLMPointwise", "truncate_tokens"]


def truncate_tokens(text: str, tokenizer: Any, budget: int) -> str:
    """*text* with runs of white space made single spaces, cut after its *budget*-th token
    (the exact character slice the first *budget* tokens of *tokenizer* cover)."""
    text = " ".join(text.split())
    offsets = tokenizer.offsets(text)
    return text if len(offsets) <= budget else text[: int(offsets[budget - 1][1])]


class _LLMReranker(Composable):
    """What both LLM rerankers share: options, name, identity, the client and the run."""

    KIND = ""
    PROMPT = ""
    OPTIONS: type[LLMListwiseOptions | LLMPointwiseOptions]
    uses_objective = True

    def __init__(self, options: Any = None, /, **kwargs: Any):
        self.options = options if options is not None else self.OPTIONS(**kwargs)
        check_endpoint(self.options, self.KIND)  # never quotes a value shaped like a key
        check_tokenizer_name(self.options.tokenizer)
        self.prompt = load_prompt(self.PROMPT)
        self.depth = int(self.options.k)
        self.params = asked_params(self.options)
        self.name = f"{self.KIND}({','.join(shown_options(self.options))})"

    def model(self) -> str:
        """The model in effect: the ``model`` option, else ``NUGGETBENCH_LLM_MODEL``."""
        return endpoint_model(self.options)

    def identity(self) -> dict[str, Any] | None:
        """What the reranked runs depend on: kind, the endpoint and model in effect (the
        endpoint normalised, credentials removed: :func:`~nuggetbench.llm.secrets.endpoint_id`),
        options and prompt file hash (not the key or concurrency). ``None`` with ``cache=false``:
        the runs are then never served from the run cache."""
        if not self.options.cache:
            return None
        return {
            "reranker": self.KIND,
            **endpoint_identity(self.options),
            "params": self.params,
            "prompt": self.prompt.sha256,
        }

    def client(self) -> LLMClient:
        """A client for the endpoint of the options and the environment.

        Raises:
            InputError: no model is named.
        """
        if not self.model():
            raise InputError(
                f"{self.name} needs an LLM: write {self.KIND}(model=NAME) or set {ENV_MODEL} "
                "(and NUGGETBENCH_LLM_BASE_URL for a local server)"
            )
        return endpoint_client(self.options, self.model())

    def _meter(self, total: int, unit: str, client: LLMClient, show: bool) -> Meter:
        """The progress of the requests: a bar (or log lines) over *total* windows or pairs,
        followed by the requests sent, cached and failed and the running cost."""
        return Meter(self.KIND, total, unit, show=show, stats=client.ledger.brief)

    def _system_objective(self, objective: str | None) -> str:
        return f"\nThe task's objective: {objective.strip()}" if objective else ""

    def _params(self) -> dict[str, Any]:
        return {"temperature": self.options.temperature, "max_tokens": self.options.max_tokens}

    def _candidates(self, queries: Queries, run: Run, corpus: Corpus, k: int) -> dict:
        """``{qid: [(doc id, passage shown), ...]}`` of the top *k* of each query of *run*."""
        tokenizer = load_tokenizer(self.options.tokenizer)
        budget = self.options.passage_tokens
        out = {}
        for q in queries:
            if q not in run:
                continue
            ids = [str(d) for d in run.doc_ids(q)[:k]]
            texts = corpus.texts(ids, with_title=self.options.with_title)
            out[q] = [(d, truncate_tokens(t, tokenizer, budget)) for d, t in zip(ids, texts)]
        return out

    def _run(
        self, queries: Queries, run: Run, k: int, ranked: dict, client: LLMClient, counts: dict
    ) -> Run:
        """The run of ``{qid: [(doc, score), ...]}`` with usage and repairs in its metadata."""
        q_col = [q for q, docs in ranked.items() for _ in docs]
        d_col = [d for docs in ranked.values() for d, _ in docs]
        s_col = [s for docs in ranked.values() for _, s in docs]
        usage = client.ledger.summary().get(self.KIND, {})
        out = Run(
            q_col,
            d_col,
            s_col,
            name=f"{run.name} >> {self.name}" if run.name else self.name,
            metadata={
                "reranker": self.name,
                "first_stage": run.name,
                "depth": k,
                "llm": {
                    "model": client.settings.model,
                    "prompt": self.prompt.version,
                    **usage,
                    **counts,
                },
            },
        )
        missing = sorted(set(queries) - set(out.query_ids))
        return with_empty_queries(out, missing) if missing else out

    def rerank(
        self,
        queries: Queries,
        run: Run,
        corpus: Corpus,
        k: int,
        *,
        show_progress: bool = False,
        objective: str | None = None,
    ) -> Run:
        """Rerank the top *k* candidates of each query of *run* with the LLM (Reranker protocol).

        Args:
            queries: ``query_id -> text`` (queries absent from *run* get no entries).
            run: first-stage run.
            corpus: documents of the run.
            k: candidates per query (the pipeline passes the ``k`` option).
            show_progress: a progress meter over the windows or pairs, with the requests sent,
                cached and failed and the running cost (:class:`~nuggetbench.progress.Meter`).
            objective: task objective, written into the system prompt.

        Returns:
            A :class:`Run` named ``<first stage> >> <reranker>`` holding the top *k* of each
            query only; ``metadata["llm"]`` holds requests, tokens, cost and repairs.

        Raises:
            InputError: no model named; LLMError / BudgetError: from the client (answers so far
                are cached); KeyError: a candidate is not in *corpus*.
        """
        k = check_k(k)
        cands = self._candidates(queries, run, corpus, k)
        client = self.client()
        try:
            ranked, counts = self._rerank(queries, cands, client, objective, show_progress)
            return self._run(queries, run, k, ranked, client, counts)
        finally:
            client.close()

    def _rerank(self, queries, cands, client, objective, show_progress) -> tuple[dict, dict]:
        raise NotImplementedError  # pragma: no cover


class LLMListwise(_LLMReranker):
    """RankGPT sliding-window listwise reranking (spec ``llm_listwise(model=M, k=100, window=20,
    step=10)``); see the module docstring.

    Raises:
        SpecError: an option of the wrong type or out of range; InputError: ``step`` outside
            ``1..window``.
    """

    KIND = "llm_listwise"
    PROMPT = "listwise"
    OPTIONS = LLMListwiseOptions

    def __init__(self, options: LLMListwiseOptions | None = None, /, **kwargs: Any):
        super().__init__(options, **kwargs)
        sliding_windows(self.depth, window=self.options.window, step=self.options.step)

    def request(self, query: str, passages: list[str], objective: str | None) -> ChatRequest:
        """The request ranking *passages* (shown as ``[1] ...``, ``[2] ...``) for *query*."""
        prompt = self.prompt
        values = {
            "objective": self._system_objective(objective),
            "num": str(len(passages)),
            "query": " ".join(query.split()),
            "passages": "\n".join(f"[{i}] {p}" for i, p in enumerate(passages, 1)),
        }
        return chat_request(prompt, values, stage=self.KIND, **self._params())

    def _rerank(self, queries, cands, client, objective, show_progress) -> tuple[dict, dict]:
        o = self.options
        order = {q: list(range(len(c))) for q, c in cands.items()}
        plans = {q: sliding_windows(len(c), window=o.window, step=o.step) for q, c in cands.items()}
        counts = dict.fromkeys(
            ("windows", "repaired", "reasked", "failed", "unknown_ids", "duplicate_ids"), 0
        )
        counts["missing_ids"] = 0
        unusable: list[str] = []  # cache keys of the answers of failed windows
        total = sum(len(p) for p in plans.values())
        with self._meter(total, "window", client, show_progress) as meter:
            for step in range(max((len(p) for p in plans.values()), default=0)):
                batch = [(q, *plans[q][step]) for q in cands if step < len(plans[q])]
                requests = [
                    self.request(queries[q], [cands[q][i][1] for i in order[q][s:e]], objective)
                    for q, s, e in batch
                ]
                results = client.complete_many(requests, progress=meter)
                perms = self._usable(client, requests, results, [e - s for _, s, e in batch])
                for (q, s, e), (perm, keys, asked) in zip(batch, perms):
                    window = order[q][s:e]
                    order[q][s:e] = [window[i] for i in perm.order]
                    counts["windows"] += 1
                    counts["reasked"] += int(asked > 1)
                    if not perm.usable:
                        counts["failed"] += 1
                        unusable += keys
                        continue
                    counts["repaired"] += int(perm.repaired)
                    counts["unknown_ids"] += perm.unknown  # what the answers used got wrong
                    counts["duplicate_ids"] += perm.duplicates
                    counts["missing_ids"] += perm.missing
        self._report(counts, unusable, client)
        ranked = {
            q: [(cands[q][i][0], float(len(idx) - r)) for r, i in enumerate(idx)]
            for q, idx in order.items()
        }
        return ranked, counts

    def _report(self, counts: dict, unusable: list[str], client: LLMClient) -> None:
        """Forget the answers of the failed windows and say what was repaired, in one line (the
        command's warning names the failures: ``run_metadata.llm.failed``)."""
        if counts["failed"]:
            client.forget(unusable)  # a later run asks again instead of replaying them
            client.ledger.note_unusable(self.KIND, counts["failed"])
        if counts["repaired"] or counts["failed"]:
            log.info(
                "%s: of %d windows, %d answered a partial or repeated ranking, repaired as "
                "rank_llm repairs it without asking again (missing passages kept in their "
                "incoming order); %d ranked no passage even after %d re-asks and keep their "
                "incoming order (not cached)",
                self.KIND,
                counts["windows"],
                counts["repaired"],
                counts["failed"],
                self.options.max_repairs,
            )

    def _usable(self, client, requests, results, sizes) -> list[tuple[Any, list[str], int]]:
        """``(permutation, answer keys, answers)`` per window: an answer is read and repaired
        as rank_llm does (:func:`~nuggetbench.llm.rankout.parse_permutation`); only one that
        ranks no passage of its window is re-asked, up to ``max_repairs`` times; when no answer
        ranks one, the last permutation (the incoming order) is returned, not usable."""
        out = []
        bad: dict[int, tuple[ChatRequest, str]] = {}
        for j, (res, n) in enumerate(zip(results, sizes)):
            perm = self._read(res, n)
            out.append((perm, [res.key], 1))
            if not perm.usable:
                bad[j] = (requests[j], res.echo())
        for _ in range(self.options.max_repairs):
            if not bad:
                break
            order = sorted(bad)
            repairs = [self._repair(*bad[j], sizes[j]) for j in order]
            for j, req, res in zip(order, repairs, client.complete_many(repairs)):
                perm = self._read(res, sizes[j])
                out[j] = (perm, [*out[j][1], res.key], out[j][2] + 1)
                if perm.usable:
                    del bad[j]
                else:
                    bad[j] = (req, res.echo())
        return out

    @staticmethod
    def _read(result: ChatResult, n: int):
        """The permutation of one answer (a reply cut at ``max_reply_chars`` ranks nothing)."""
        if result.reply_chars is not None:
            return parse_permutation("", n)
        return parse_permutation(result.text, n)

    def _repair(self, request: ChatRequest, answer: str, n: int) -> ChatRequest:
        """The repair turn: the answer that ranked no passage, then a message asking for the
        ranking of every passage."""
        example = " > ".join(f"[{i}]" for i in (2, 1, 3)[: min(n, 3)])
        turn = (
            {"role": "assistant", "content": answer},
            {
                "role": "user",
                "content": f"Your reply could not be used: it ranks none of the {n} passages. "
                f"Reply with only the ranking of all {n} passage identifiers, each once, in "
                f"the form {example} > ...",
            },
        )
        return replace(request, messages=(*request.messages, *turn))


class LLMPointwise(_LLMReranker):
    """Graded pointwise reranking (spec ``llm_pointwise(model=M, k=50, scale=0-3)``); see the
    module docstring.

    Raises:
        SpecError: an option of the wrong type or out of range; InputError: a bad ``scale``.
    """

    KIND = "llm_pointwise"
    PROMPT = "pointwise"
    OPTIONS = LLMPointwiseOptions

    def __init__(self, options: LLMPointwiseOptions | None = None, /, **kwargs: Any):
        super().__init__(options, **kwargs)
        self.scale = parse_scale(self.options.scale, where=f"{self.KIND} scale")

    def _params(self) -> dict[str, Any]:
        params = super()._params()
        if self.options.logprobs:
            params.update(logprobs=True, top_logprobs=min(20, max(5, len(self.scale.grades))))
        return params

    def request(self, query: str, passage: str, objective: str | None) -> ChatRequest:
        """The request asking for the grade of *passage* for *query*."""
        prompt = self.prompt
        values = {
            "objective": self._system_objective(objective),
            "low": str(self.scale.low),
            "high": str(self.scale.high),
            "query": " ".join(query.split()),
            "passage": passage,
        }
        return chat_request(prompt, values, stage=self.KIND, **self._params())

    def grade(self, result: ChatResult) -> tuple[float, bool]:
        """``(grade, from log-probabilities)`` of one answer.

        Raises:
            InvalidAnswer: no log-probabilities of a grade and no grade in the text; a reply cut
                at ``max_reply_chars``.
        """
        if result.reply_chars is not None:
            raise InvalidAnswer(f"the reply was {result.reply_chars:,} characters long, cut")
        top = (result.extra or {}).get("top_logprobs")
        if top:
            # the token the model chose; in answers cached without it, the likeliest alternative
            chosen = result.extra.get("token") or max(top, key=lambda pair: pair[1])[0]
            value = expected_grade(top, self.scale, chosen=chosen)
            if value is not None:
                return value, True
        return float(parse_answer_grade(result.text, self.scale)), False

    def _rerank(self, queries, cands, client, objective, show_progress) -> tuple[dict, dict]:
        pairs = [(q, i) for q, c in cands.items() for i in range(len(c))]
        requests = [self.request(queries[q], cands[q][i][1], objective) for q, i in pairs]
        with self._meter(len(pairs), "pair", client, show_progress) as meter:
            results = client.complete_many(requests, progress=meter)
        grades: list[float | None] = [None] * len(pairs)
        errors: dict[int, tuple[ChatRequest, str, str]] = {}
        counts = {
            "pairs": len(pairs),
            "expected_grades": 0,
            "repaired": 0,
            "unparsed": 0,
            "failed": 0,
        }
        chains = {j: [res.key] for j, res in enumerate(results)}
        for j, res in enumerate(results):
            try:
                grades[j], from_logprobs = self.grade(res)
                counts["expected_grades"] += int(from_logprobs)
            except InvalidAnswer as exc:
                errors[j] = (requests[j], res.echo(), str(exc))
        for _ in range(self.options.max_repairs):
            if not errors:
                break
            order = sorted(errors)
            repairs = [self._repair(*errors[j]) for j in order]
            for j, req, res in zip(order, repairs, client.complete_many(repairs)):
                chains[j].append(res.key)
                try:
                    grades[j], _ = self.grade(res)
                    counts["repaired"] += 1
                    del errors[j]
                except InvalidAnswer as exc:
                    errors[j] = (req, res.echo(), str(exc))
        if errors:
            counts["unparsed"] = counts["failed"] = len(errors)
            # unusable answers are not kept (as ask_validated): a later run asks again
            client.forget([k for j in errors for k in chains[j]])
            client.ledger.note_unusable(self.KIND, len(errors))
            log.info(  # the command's one warning names them (run_metadata.llm.failed)
                "%s: %d answers held no grade on the scale %s after %d re-asks; scored %d "
                "(their answers were dropped from the cache)",
                self.KIND,
                len(errors),
                self.scale,
                self.options.max_repairs,
                self.scale.low,
            )
        ranked: dict[str, list[tuple[str, float]]] = {q: [] for q in cands}
        for (q, i), g in zip(pairs, grades):
            n = len(cands[q])
            value = float(self.scale.low) if g is None else g
            ranked[q].append((cands[q][i][0], round(value, 6) + (n - i) / (n + 1) * 1e-7))
        return ranked, counts

    def _repair(self, request: ChatRequest, answer: str, problem: str) -> ChatRequest:
        """The repair turn: the bad answer, then a message naming the problem."""
        s = self.scale
        turn = (
            {"role": "assistant", "content": answer},
            {
                "role": "user",
                "content": f"Your reply could not be used: {problem}. Reply with only one "
                f"integer from {s.low} to {s.high}.",
            },
        )
        return replace(request, messages=(*request.messages, *turn))
