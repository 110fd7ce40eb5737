"""Nugget-level support judgments: does a pooled chunk support a nugget? (FreshStack, step 3)

For each question the pooled chunks are sent in batches of up to ``batch_size`` (20), each batch
with all of the question's nuggets, in a chain-of-thought prompt (``prompts/judge.v1.txt``) asking
for a structured verdict per (nugget, chunk) pair: ``{"judgments": [{"nugget", "chunk",
"reasoning", "supported"}]}``. Nuggets and chunks carry short local ids (``n1``, ``c1``) in the
prompt. Pairs missing from an answer (a malformed, truncated or partial answer) are re-asked in a
new request that lists only the missing pairs (with only the nuggets and chunks they involve),
for up to ``max_rounds`` rounds in all; pairs still missing are reported as unjudged and left out
of the qrels (neither relevant nor non-relevant), and the stage reports them as failures.

Failures are never cached as results: when a batch still has unjudged pairs after every round, the
answers of that batch that did not give every pair they were asked for are removed from the LLM
cache (:meth:`~nuggetbench.llm.client.LLMClient.forget`), so a later run re-sends exactly those
requests; answers that settled their pairs stay cached.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from nuggetbench.data import Corpus
from nuggetbench.llm.client import ChatRequest, LLMClient
from nuggetbench.llm.jsonout import InvalidAnswer, parse_judgments
from nuggetbench.llm.prompts import chat_request, load_prompt, sampling

STAGE = "judge"


@dataclass(frozen=True)
class JudgeOptions:
    """``batch_size`` chunks per call, ``max_rounds`` (first ask + re-asks), sampling, prompt
    version, and ``max_chunk_chars`` (longer chunks are cut in the prompt; ``None``: never)."""

    batch_size: int = 20
    max_rounds: int = 3
    temperature: float = 0.0
    max_tokens: int = 8192
    prompt_version: str = "v1"
    max_chunk_chars: int | None = None


@dataclass(frozen=True)
class JudgeItem:
    """One question to judge: its text, nuggets ``[(nugget_id, text)]`` and pooled chunk ids."""

    query_id: str
    question: str
    nuggets: tuple[tuple[str, str], ...]
    pool: tuple[str, ...]


@dataclass
class JudgeResult:
    """``verdicts``: ``{qid: {(nugget_id, doc_id): (supported, reasoning)}}``; ``unjudged``:
    ``{qid: [(nugget_id, doc_id), ...]}`` pairs with no usable verdict after every round;
    ``problems``: ``{why: number of answers}`` of the answers that left pairs unjudged (not saved
    in the rows: a stage with unjudged pairs is not recorded)."""

    verdicts: dict[str, dict[tuple[str, str], tuple[bool, str]]] = field(default_factory=dict)
    unjudged: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    rounds: int = 0
    reasked_pairs: int = 0
    problems: Counter[str] = field(default_factory=Counter)

    def as_rows(self) -> list[dict[str, Any]]:
        rows = []
        for q, pairs in self.verdicts.items():
            rows.append(
                {
                    "query_id": q,
                    "judgments": [
                        {"nugget_id": n, "doc_id": d, "supported": s, "reasoning": r}
                        for (n, d), (s, r) in pairs.items()
                    ],
                    "unjudged": [list(p) for p in self.unjudged.get(q, [])],
                }
            )
        return rows

    @classmethod
    def from_rows(cls, rows: Sequence[dict[str, Any]]) -> JudgeResult:
        out = cls()
        for row in rows:
            out.verdicts[row["query_id"]] = {
                (j["nugget_id"], j["doc_id"]): (bool(j["supported"]), j.get("reasoning", ""))
                for j in row["judgments"]
            }
            if row.get("unjudged"):
                out.unjudged[row["query_id"]] = [tuple(p) for p in row["unjudged"]]
        return out

    def counts(self) -> dict[str, int]:
        judged = sum(len(v) for v in self.verdicts.values())
        supported = sum(1 for v in self.verdicts.values() for s, _ in v.values() if s)
        return {
            "judged_pairs": judged,
            "supported_pairs": supported,
            "unjudged_pairs": sum(len(v) for v in self.unjudged.values()),
            "reasked_pairs": self.reasked_pairs,
            "rounds": self.rounds,
        }


@dataclass(frozen=True)
class _Batch:
    item: JudgeItem
    index: int
    chunks: tuple[str, ...]  # doc ids, local ids c1.. in this order


def _render(
    batch: _Batch,
    corpus: Corpus,
    options: JudgeOptions,
    pairs: list[tuple[str, str]] | None,
    round_no: int,
) -> ChatRequest:
    prompt = load_prompt(STAGE, options.prompt_version)
    item = batch.item
    n_local = {nid: f"n{i + 1}" for i, (nid, _) in enumerate(item.nuggets)}
    c_local = {did: f"c{i + 1}" for i, did in enumerate(batch.chunks)}
    want_n = {n for n, _ in pairs} if pairs else set(n_local)
    want_c = {d for _, d in pairs} if pairs else set(c_local)
    nug_text = "\n".join(
        f'<nugget id="{n_local[nid]}">\n{text}\n</nugget>'
        for nid, text in item.nuggets
        if nid in want_n
    )
    chunk_parts = []
    for did in batch.chunks:
        if did not in want_c:
            continue
        text = corpus[did].full_text
        if options.max_chunk_chars is not None and len(text) > options.max_chunk_chars:
            text = text[: options.max_chunk_chars] + "\n[... cut ...]"
        chunk_parts.append(f'<chunk id="{c_local[did]}">\n{text}\n</chunk>')
    if pairs:
        pair_list = " ".join(f"{n_local[n]}:{c_local[d]}" for n, d in pairs)
        pairs_block = (
            f"\nThis is attempt {round_no + 1}: judge only these pairs (nugget:chunk), which an "
            f"earlier answer missed:\n<pairs>\n{pair_list}\n</pairs>\n"
        )
        note = " listed under <pairs>"
    else:
        pairs_block, note = "", ""
    values = {
        "question": item.question,
        "nuggets": nug_text,
        "chunks": "\n\n".join(chunk_parts),
        "pairs": pairs_block,
        "pairs_note": note,
    }
    return chat_request(prompt, values, **sampling(options))


def _batches(items: Sequence[JudgeItem], size: int) -> list[_Batch]:
    out = []
    for item in items:
        if not item.nuggets:
            continue
        for b, start in enumerate(range(0, len(item.pool), size)):
            out.append(_Batch(item, b, tuple(item.pool[start : start + size])))
    return out


def _settle(
    batch: Any, text: str, asked: list[tuple[str, str]] | None, result: JudgeResult
) -> tuple[list[tuple[str, str]], str | None]:
    """Record the verdicts of one answer on *batch* (*asked*: the pairs asked again, ``None``
    for every pair) into *result*; ``(pairs still without a verdict, why)``."""
    wanted = asked or [(nid, did) for nid, _ in batch.item.nuggets for did in batch.chunks]
    n_global = {f"n{k + 1}": nid for k, (nid, _) in enumerate(batch.item.nuggets)}
    c_global = {f"c{k + 1}": did for k, did in enumerate(batch.chunks)}
    why = None
    try:
        parsed = parse_judgments(text)
    except InvalidAnswer as exc:
        parsed, why = [], str(exc)
    got: dict[tuple[str, str], tuple[bool, str]] = {}
    for n, c, supported, reasoning in parsed:
        pair = (n_global.get(n), c_global.get(c))
        if pair[0] is not None and pair[1] is not None and pair not in got:
            got[pair] = (supported, reasoning)
    store = result.verdicts[batch.item.query_id]
    missing = []
    for pair in wanted:
        if pair in got:
            store[pair] = got[pair]
        else:
            missing.append(pair)
    if missing:
        why = why or f"the answer gave no usable verdict for {len(missing)} pair(s)"
    return missing, why


def _canonical_order(result: JudgeResult, items: Sequence[Any]) -> None:
    """Each query's verdicts in nugget declaration order, then pool order."""
    for item in items:
        store = result.verdicts[item.query_id]
        rank = {d: k for k, d in enumerate(item.pool)}
        nrank = {n: k for k, (n, _) in enumerate(item.nuggets)}
        result.verdicts[item.query_id] = dict(
            sorted(store.items(), key=lambda kv: (nrank[kv[0][0]], rank[kv[0][1]]))
        )


def judge_pool(
    client: LLMClient,
    items: Sequence[JudgeItem],
    corpus: Corpus,
    options: JudgeOptions = JudgeOptions(),
    *,
    progress: Callable[[int], None] | None = None,
) -> JudgeResult:
    """Judge every (nugget, pooled chunk) pair of every question.

    Args:
        client: the LLM client.
        items: the questions with their nuggets and pools.
        corpus: the chunks (texts shown to the judge).
        options: :class:`JudgeOptions`.
        progress: advanced once per batch when its first answer arrives.
        The batches left with unjudged pairs count as failed in the progress bars
        (:meth:`~nuggetbench.llm.cache.UsageLedger.note_unusable`).

    Returns:
        :class:`JudgeResult`; pairs in question, batch, nugget, chunk order.

    Raises:
        LLMError / BudgetError: from the client (answers so far are cached).
    """
    batches = _batches(items, options.batch_size)
    result = JudgeResult()
    for item in items:
        result.verdicts.setdefault(item.query_id, {})
    pending: dict[int, list[tuple[str, str]] | None] = dict.fromkeys(
        range(len(batches))
    )  # None: all pairs
    unsettled: dict[int, list[tuple[str, str]]] = {}  # batch -> [(answer key, why)]
    for round_no in range(options.max_rounds):
        if not pending:
            break
        result.rounds = round_no + 1
        order = sorted(pending)
        requests = [_render(batches[i], corpus, options, pending[i], round_no) for i in order]
        answers = client.complete_many(requests, progress=progress if round_no == 0 else None)
        still: dict[int, list[tuple[str, str]]] = {}
        for i, answer in zip(order, answers):
            missing, why = _settle(batches[i], answer.text, pending[i], result)
            if missing:
                still[i] = missing
                unsettled.setdefault(i, []).append((answer.key, why))
                if round_no + 1 < options.max_rounds:
                    result.reasked_pairs += len(missing)
        pending = still  # type: ignore[assignment]
    forget = []
    for i, missing in pending.items():
        if missing:
            client.ledger.note_unusable(STAGE)
            result.unjudged.setdefault(batches[i].item.query_id, []).extend(missing)
            for key, why in unsettled.get(i, []):
                forget.append(key)
                result.problems[why] += 1
    client.forget(forget)
    _canonical_order(result, items)
    return result


__all__ = ["JudgeOptions", "JudgeItem", "JudgeResult", "judge_pool", "STAGE"]
