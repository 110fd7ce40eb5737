"""Coverage@k / AC_Recall@k / AC_MRR@k on hand-made cases, and against a plain re-statement of the
fastbook author's published scoring loops (modified_recall / modified_mrr) on random cases."""

from __future__ import annotations

import random

import numpy as np
import pytest
from ftfy import fix_text

from nuggetbench.corpus import judge_spans
from nuggetbench.data import Document, InMemoryCorpus, Nugget, Run
from nuggetbench.errors import InputError
from nuggetbench.measures import parse_measure
from nuggetbench.measures.context import EvalContext
from nuggetbench.measures.coverage import ACMRR, Coverage, ac_mrr_values, coverage_values
from nuggetbench.measures.registry import get_family


def ctx_for(nuggets, corpus, run):
    nq = judge_spans(nuggets, corpus).qrels
    return EvalContext(nq.document_qrels(mode="binary"), run, "fastbook")


def values(measure: str, ctx) -> list[float]:
    m = parse_measure(measure)
    return get_family(m.family).compute(ctx, m).tolist()


def ranked(lists: dict[str, list[str]]) -> Run:
    return Run.from_ranked_lists(lists)


# passages: "Birds sing at dawn" is split across p2|p3; p4 holds mojibake of a curly apostrophe
CORPUS = InMemoryCorpus(
    [
        Document("p1", "Cats sleep a lot."),
        Document("p2", "Dogs bark at night. Birds sing"),
        Document("p3", "at dawn. Fish swim in schools."),
        Document("p4", "It don\u00e2\u20ac\u2122t matter."),
        Document("p5", "Nothing here."),
    ]
)


def test_span_only_in_second_passage():
    nugs = [Nugget("a.1", "a", spans=("Dogs bark",)), Nugget("a.2", "a", spans=("Cats sleep",))]
    ctx = ctx_for(nugs, CORPUS, ranked({"a": ["p1", "p2", "p5"]}))
    assert values("AC_MRR@10", ctx) == [0.5]  # deepest first-supporting rank is 2
    assert values("AC_MRR@1", ctx) == [0.0]  # a.1 unsupported within the top 1
    assert values("Coverage@1", ctx) == [0.5]
    assert values("AC_Recall@2", ctx) == [1.0]


def test_empty_context_makes_mrr_zero_and_counts_in_coverage():
    nugs = [Nugget("b.1", "b", spans=("Cats sleep",)), Nugget("b.2", "b", spans=())]
    ctx = ctx_for(nugs, CORPUS, ranked({"b": ["p1", "p2", "p3", "p4", "p5"]}))
    assert values("AC_MRR@10", ctx) == [0.0]
    assert values("Coverage@10", ctx) == [0.5]


def test_span_split_across_two_chunks_is_never_found():
    nugs = [
        Nugget("c.1", "c", spans=("Birds sing at dawn",)),
        Nugget("c.2", "c", spans=("Fish swim",)),
    ]
    ctx = ctx_for(nugs, CORPUS, ranked({"c": ["p2", "p3"]}))
    assert values("Coverage@10", ctx) == [0.5]
    assert values("AC_MRR@10", ctx) == [0.0]


def test_ftfy_repaired_characters():
    nugs = [Nugget("d.1", "d", spans=("It don\u2019t matter",))]  # curly quote vs mojibake
    ctx = ctx_for(nugs, CORPUS, ranked({"d": ["p5", "p1", "p4"]}))
    assert values("AC_MRR@10", ctx) == [pytest.approx(1 / 3)]
    assert values("Coverage@2", ctx) == [0.0]


def test_first_supporting_passage_counts_and_missing_queries():
    # e.1's spans are in p1 and p3; its first supporting rank is 1 (p1), e.2's is 3 (p3)
    nugs = [
        Nugget("e.1", "e", spans=("Cats", "Fish")),
        Nugget("e.2", "e", spans=("schools",)),
        Nugget("f.1", "f", spans=("Cats",)),
    ]
    run = ranked({"e": ["p1", "p5", "p3"]})  # f is not in the run
    ctx = ctx_for(nugs, CORPUS, run)
    assert ctx.query_ids.tolist() == ["e", "f"]
    assert values("AC_MRR@10", ctx) == [pytest.approx(1 / 3), 0.0]
    assert values("Coverage@2", ctx) == [0.5, 0.0]


def test_drop_flags():
    nugs = [
        Nugget(
            "g.1",
            "g",
            spans=("Cats",),
            metadata={"explicit_context": True, "extraneous_answer": False},
        ),
        Nugget(
            "g.2",
            "g",
            spans=("Fish",),
            metadata={"explicit_context": True, "extraneous_answer": True},
        ),
        Nugget(
            "g.3",
            "g",
            spans=(),
            metadata={"explicit_context": "false", "extraneous_answer": "false"},
        ),
    ]
    ctx = ctx_for(nugs, CORPUS, ranked({"g": ["p1", "p3"]}))
    assert values("Coverage@10", ctx) == [pytest.approx(2 / 3)]
    assert values("Coverage(drop_implicit=True)@10", ctx) == [1.0]
    assert values("Coverage(drop_extraneous=True)@10", ctx) == [0.5]
    assert values("AC_MRR(drop_implicit=True)@10", ctx) == [0.5]
    assert values("AC_MRR(drop_implicit=True,drop_extraneous=True)@10", ctx) == [1.0]
    # every nugget dropped: the query scores 0
    only = [Nugget("h.1", "h", spans=("Cats",), metadata={"extraneous_answer": True})]
    ctx2 = ctx_for(only, CORPUS, ranked({"h": ["p1"]}))
    assert values("Coverage(drop_extraneous=True)@10", ctx2) == [0.0]
    assert values("AC_MRR(drop_extraneous=True)@10", ctx2) == [0.0]


def test_spelling_and_aliases():
    assert str(parse_measure("AC_Recall@10")) == "Coverage@10"
    assert str(parse_measure("AC_MRR@10")) == "AC_MRR@10"
    assert isinstance(get_family("AC_Recall"), Coverage) and isinstance(get_family("AC_MRR"), ACMRR)


def test_needs_nugget_qrels():
    from nuggetbench.data import Qrels

    ctx = EvalContext(Qrels(["q"], ["d"], [1]), ranked({"q": ["d"]}))
    with pytest.raises(InputError, match="nugget-level"):
        values("Coverage@5", ctx)


def test_value_helpers_with_queries_without_nuggets():
    n = np.array([0, 2, 0, 1])
    first = np.array([1.0, np.inf, 3.0])
    assert coverage_values(n, first).tolist() == [0.0, 0.5, 0.0, 1.0]
    assert ac_mrr_values(n, first).tolist() == [0.0, 0.0, 0.0, pytest.approx(1 / 3)]


# --- agreement with the author's scoring loops ------------------------------------------------
def author_recall(components, passages, cutoff):
    """Re-statement of fastbook-benchmark's modified_recall (Bakshi, 2024)."""
    found = []
    for ctxs in components:
        found.append(any(any(fix_text(c) in fix_text(p) for c in ctxs) for p in passages[:cutoff]))
    return sum(found) / len(found)


def author_mrr(components, passages, cutoff):
    """Re-statement of fastbook-benchmark's modified_mrr (Bakshi, 2024)."""
    highest = 0
    for ctxs in components:
        for rank, p in enumerate(passages[:cutoff], start=1):
            if any(fix_text(c) in fix_text(p) for c in ctxs):
                highest = max(highest, rank)
                break
        else:
            return 0.0
    return 1.0 / highest if highest else 0.0


@pytest.mark.parametrize("seed", range(5))
def test_agrees_with_the_author_on_random_cases(seed):
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(30)]
    docs = [Document(f"d{i:02d}", " ".join(rng.choice(words) for _ in range(8))) for i in range(25)]
    corpus = InMemoryCorpus(docs)
    nuggets, comps, lists = [], {}, {}
    for q in range(12):
        qid = f"q{q}"
        comps[qid] = []
        for c in range(rng.randint(1, 4)):
            spans = []
            for _ in range(rng.randint(0, 2)):
                src = rng.choice(docs).text.split()
                i = rng.randrange(len(src) - 1)
                spans.append(" ".join(src[i : i + rng.randint(1, 2)]))
            nuggets.append(Nugget(f"{qid}.{c}", qid, spans=tuple(spans)))
            comps[qid].append(spans)
        lists[qid] = rng.sample([d.doc_id for d in docs], rng.randint(1, 15))
    ctx = ctx_for(nuggets, corpus, ranked(lists))
    assert ctx.query_ids.tolist() == sorted(comps)
    text = {d.doc_id: d.text for d in docs}
    for k in (1, 3, 10):
        ours_r = values(f"Coverage@{k}", ctx)
        ours_m = values(f"AC_MRR@{k}", ctx)
        for i, qid in enumerate(ctx.query_ids):
            passages = [text[d] for d in lists[qid]]
            assert ours_r[i] == pytest.approx(author_recall(comps[qid], passages, k)), (qid, k)
            assert ours_m[i] == pytest.approx(author_mrr(comps[qid], passages, k)), (qid, k)


def test_evaluate_with_the_fastbook_profile():
    from nuggetbench.measures import score as evaluate

    nugs = [
        Nugget("a.1", "a", spans=("Cats",)),
        Nugget("a.2", "a", spans=("Dogs bark",)),
        Nugget("z.1", "z", spans=("Birds sing at dawn",)),
    ]  # z: no passage supports it
    qrels = judge_spans(nugs, CORPUS).qrels.document_qrels(mode="binary")
    assert "z" not in qrels  # no document-level judgment at all ...
    run = ranked({"a": ["p5", "p2", "p1"], "z": ["p2", "p3"]})
    res = evaluate(qrels, run, ["AC_MRR@10", "AC_Recall@10", "Coverage@2"], profile="fastbook")
    assert res.query_ids == ["a", "z"]  # ... yet the query is averaged, as the author does
    assert res.values("AC_MRR@10") == {"a": pytest.approx(1 / 3), "z": 0.0}
    assert res.values("AC_Recall@10") == {"a": 1.0, "z": 0.0}
    assert res.values("Coverage@2") == {"a": 0.5, "z": 0.0}
    assert res.mean("AC_MRR@10") == pytest.approx(1 / 6)


def test_fastbook_profile_found_in_a_fresh_process():
    import subprocess
    import sys

    code = (
        "from nuggetbench.measures import get_profile, parse_measure;"
        "print(get_profile('fastbook').name, parse_measure('AC_Recall@5'))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["fastbook", "Coverage@5"]


@pytest.mark.parametrize("profile", ["fastbook", "freshstack"])
def test_selected_query_without_document_judgments_is_not_reported_as_ignored(profile):
    """A query the profile averages (it has nuggets) but that has no document-level judgment is
    scored, so it must not be listed among the run-only queries "ignored"; and a selected query
    absent from the run is scored 0, so it must be listed among the missing ones."""
    from nuggetbench.data import NuggetQrels
    from nuggetbench.measures import score as evaluate

    nuggets = NuggetQrels.from_dict(
        {"a": ["a.1"], "z": ["z.1"], "m": ["m.1"], "u": ["u.1"]},
        {"a": {"a.1": {"d1": 1}}, "m": {"m.1": {"d9": 1}}},
    )  # z and u: nuggets without any judgment; m and u: absent from the run
    qrels = nuggets.document_qrels()
    run = Run.from_dict({"a": {"d1": 1.0}, "z": {"d2": 1.0}, "extra": {"d3": 1.0}})
    res = evaluate(qrels, run, ["Coverage@5"], profile=profile)
    assert res.query_ids == ["a", "m", "u", "z"]
    assert res.values("Coverage@5") == {"a": 1.0, "m": 0.0, "u": 0.0, "z": 0.0}
    assert res.run_only_queries == ["extra"]  # z was evaluated, not ignored
    assert res.missing_queries == ["m", "u"]  # both scored on an empty ranking
