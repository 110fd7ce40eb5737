"""Listwise answers are read and repaired exactly as castorini's rank_llm does (issue 37, item 2).

rank_llm cannot be installed here (it pulls vllm), so its algorithm is written out below from its
source, castorini/rank_llm at commit 1b3cabbc3564441bdcda6c6a2e92137b9faa0660:

* ``clean_ranking_response`` in ``src/rank_llm/rerank/listwise/response_utils.py``;
* ``ListwiseRankLLM._remove_duplicate`` and ``ListwiseRankLLM.receive_permutation`` in
  ``src/rank_llm/rerank/listwise/listwise_rankllm.py``.

Every random answer (brackets or not, separators, duplicates, ids naming no passage, prose,
``<think>`` blocks, superscript/circled/full-width digits, digits with no integer value) must give
the order rank_llm gives; and a whole sliding-window rerank with ``max_repairs=0`` (rank_llm never
asks again) must give rank_llm's final ranking.
"""

from __future__ import annotations

import hashlib
import random

import numpy as np

from nuggetbench.data import InMemoryCorpus, Queries, Run
from nuggetbench.llm.client import LLMClient, LLMSettings
from nuggetbench.llm.rankout import parse_permutation, sliding_windows
from nuggetbench.retrieval.rerankers.llm import LLMListwise


# --- rank_llm, as written in its source (see the module docstring) ---------------------------
def rank_llm_clean_ranking_response(response: str) -> str:
    if "</think>" in response:
        response = response.split("</think>")[-1].strip()
    fake_numbers_map = str.maketrans(
        "⁰¹²³⁴⁵⁶⁷⁸⁹₀₁₂₃₄₅₆₇₈₉①②③④⑤⑥⑦⑧⑨❶❷❸❹❺❻❼❽❾０１２３４５６７８９🄀🄁🄂🄃🄄🄅🄆🄇🄈🄉",
        "0123456789012345678912345678912345678901234567890123456789",
    )
    response = response.translate(fake_numbers_map)
    new_response = ""
    for c in response:
        if not c.isdigit():
            new_response += " "
        else:
            new_response += c
    return new_response.strip()


def rank_llm_remove_duplicate(response: list[int]) -> list[int]:
    new_response = []
    for c in response:
        if c not in new_response:
            new_response.append(c)
    return new_response


def rank_llm_receive_permutation(
    candidates: list, permutation: str, rank_start: int, rank_end: int
):
    cut_range = list(candidates[rank_start:rank_end])
    original_rank = [tt for tt in range(len(cut_range))]
    try:
        response = rank_llm_clean_ranking_response(permutation)
        response = [int(x) - 1 for x in response.split()]
        response = rank_llm_remove_duplicate(response)
        response = [ss for ss in response if ss in original_rank]
        response = response + [tt for tt in original_rank if tt not in response]
    except Exception:  # noqa: BLE001 - rank_llm's own bare fallback
        response = original_rank
    out = list(candidates)
    for j, x in enumerate(response):
        out[j + rank_start] = cut_range[x]
    return out


# --- random answers -----------------------------------------------------------------------------
_FANCY = {
    d: alts
    for d, alts in {
        "0": "⁰₀０🄀",
        "1": "¹₁①❶１🄁",
        "2": "²₂②❷２🄂",
        "3": "³₃③❸３🄃",
        "4": "⁴₄④❹４🄄",
        "5": "⁵₅⑤❺５🄅",
        "6": "⁶₆⑥❻６🄆",
        "7": "⁷₇⑦❼７🄇",
        "8": "⁸₈⑧❽８🄈",
        "9": "⁹₉⑨❾９🄉",
    }.items()
}


def random_answer(rng: random.Random, n: int) -> str:
    """A listwise answer as small models write them: partial, repeated, unknown ids, prose."""
    kind = rng.random()
    if kind < 0.08:
        return rng.choice(["I cannot rank these.", "", "All passages are equally relevant."])
    ids = list(range(1, n + 1))
    rng.shuffle(ids)
    ids = ids[: rng.randint(0, n)]  # partial (sometimes empty, sometimes full)
    for _ in range(rng.randint(0, 3)):
        if ids and rng.random() < 0.5:
            ids.insert(rng.randrange(len(ids) + 1), rng.choice(ids))  # a repeat
        else:
            ids.insert(rng.randrange(len(ids) + 1), rng.choice([0, n + 1, n + 7, 40]))  # unknown
    words = []
    for i in ids:
        digits = str(i)
        if rng.random() < 0.15:
            digits = "".join(rng.choice(_FANCY[c]) for c in digits)
        if rng.random() < 0.02:
            digits = "⑴"  # a digit with no integer value: rank_llm keeps the incoming order
        if rng.random() < 0.03:
            digits = "٣"  # an Arabic-Indic digit: int() reads it
        words.append(rng.choice(["[{}]", "{}", "[{}]", "passage {}", "({})"]).format(digits))
    text = rng.choice([" > ", ", ", " ", " >> ", "\n"]).join(words)
    if rng.random() < 0.1:
        text = f"<think>maybe [{rng.randint(1, n)}] first</think>\n{text}"
    if rng.random() < 0.1:
        text = f"Here is the ranking: {text}. Done."
    return text


def test_random_answers_give_rank_llms_order():
    rng = random.Random(37)
    usable = unusable = 0
    for _ in range(5000):
        n = rng.randint(1, 25)
        text = random_answer(rng, n)
        expected = rank_llm_receive_permutation(list(range(n)), text, 0, n)
        perm = parse_permutation(text, n)
        assert list(perm.order) == expected, text
        # the counts: what rank_llm dropped and appended
        try:
            ids = [int(x) - 1 for x in rank_llm_clean_ranking_response(text).split()]
        except ValueError:
            assert (perm.named, perm.missing) == (0, n) and not perm.usable
            unusable += 1
            continue
        distinct = rank_llm_remove_duplicate(ids)
        known = [i for i in distinct if 0 <= i < n]
        assert perm.duplicates == len(ids) - len(distinct)
        assert perm.unknown == len(distinct) - len(known)
        assert perm.missing == n - len(known) and perm.named == len(known)
        assert perm.usable == bool(known) and perm.repaired == (
            list(known) != ids or len(known) < n
        )
        usable += perm.usable
        unusable += not perm.usable
    assert usable > 3000 and unusable > 200  # both kinds were drawn


def _answer_for(passages: tuple[str, ...]) -> str:
    """A random answer fixed by the passages a window shows (the same for the reference)."""
    seed = int(hashlib.sha256("\x1f".join(passages).encode()).hexdigest()[:12], 16)
    return random_answer(random.Random(seed), len(passages))


def test_a_whole_rerank_gives_rank_llms_ranking(tmp_path, monkeypatch):
    """A sliding-window rerank of random answers, with ``max_repairs=0`` (rank_llm asks once),
    ranks every query as rank_llm's ``receive_permutation`` over the same windows does."""
    rng = random.Random(5)
    texts = {f"d{i:02d}": f"passage {i} about topic {rng.randint(0, 9)}" for i in range(30)}
    corpus = InMemoryCorpus.from_dict(texts)
    queries = Queries({f"q{j}": f"query {j}" for j in range(6)})
    qcol, dcol, scol = [], [], []
    first: dict[str, list[str]] = {}
    for q in queries:
        docs = rng.sample(sorted(texts), rng.randint(5, 30))
        first[q] = docs
        qcol += [q] * len(docs)
        dcol += docs
        scol += list(np.arange(len(docs), 0, -1.0))
    run = Run(qcol, dcol, np.array(scol))

    def transport(body):
        prompt = body["messages"][1]["content"]
        shown = tuple(
            line.split("] ", 1)[1]
            for line in prompt.splitlines()
            if line[:1] == "[" and "] " in line
        )
        return _answer_for(shown), 10, 5

    monkeypatch.setattr(
        LLMListwise,
        "client",
        lambda self: LLMClient(LLMSettings(model="m"), tmp_path / "c.sqlite", transport=transport),
    )
    window, step, k = 8, 3, 20
    rr = LLMListwise(model="m", window=window, step=step, k=k, max_repairs=0)
    out = rr.rerank(queries, run, corpus, k)
    for q, docs in first.items():
        ranking = docs[:k]
        for start, end in sliding_windows(len(ranking), window=window, step=step):
            shown = tuple(texts[d] for d in ranking[start:end])
            ranking = rank_llm_receive_permutation(ranking, _answer_for(shown), start, end)
        assert list(out.doc_ids(q)) == ranking, q
    llm = out.metadata["llm"]
    assert llm["reasked"] == 0 and llm["repaired"] > 0 and llm["windows"] >= 15
