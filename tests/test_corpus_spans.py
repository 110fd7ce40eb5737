"""Evidence-span judging and the chunking ceiling, on hand-made passages."""

from __future__ import annotations

import pytest

from nuggetbench.corpus import judge_spans
from nuggetbench.corpus.spans import _min_cover
from nuggetbench.data import Document, InMemoryCorpus, Nugget

SOURCE = (
    "Cats sleep a lot. Dogs bark at night. Birds sing at dawn. "
    "Fish swim in schools. It don\u2019t matter."
)


def corpus() -> InMemoryCorpus:
    # the source cut in four passages; "Birds sing at dawn" straddles p2|p3
    return InMemoryCorpus(
        [
            Document("p1", "Cats sleep a lot. Dogs bark"),
            Document("p2", "at night. Birds sing"),
            Document("p3", "at dawn. Fish swim in schools."),
            Document("p4", "It don\u00e2\u20ac\u2122t matter."),  # mojibake of a curly apostrophe
        ]
    )


def nuggets():
    return [
        Nugget("q1.1", "q1", spans=("Cats sleep",)),  # p1
        Nugget("q1.2", "q1", spans=("Unicorns fly", "Dogs bark at night")),  # split p1|p2
        Nugget("q2.1", "q2", spans=("Birds sing at dawn",)),  # split p2|p3
        Nugget("q2.2", "q2", spans=()),  # empty context
        Nugget("q3.1", "q3", spans=("Fish swim",)),  # p3 only
        Nugget("q3.2", "q3", spans=("It don't matter",)),  # ftfy on both sides
        Nugget("q3.3", "q3", spans=("at night", "  ")),  # p2; blank span ignored
    ]


def test_supporting_passages():
    judged = judge_spans(nuggets(), corpus(), source_texts=[SOURCE])
    nq = judged.qrels
    assert nq.supported("q1") == {"p1": {"q1.1"}}
    assert nq.supported("q2") == {}
    assert nq.supported("q3") == {"p3": {"q3.1"}, "p4": {"q3.2"}, "p2": {"q3.3"}}
    assert nq.n_nuggets == 7  # unsupported nuggets stay declared (Coverage's denominator)


def test_ceiling_counts_by_hand():
    c = judge_spans(nuggets(), corpus(), source_texts=[SOURCE]).ceiling
    # spans: Cats, Unicorns, Dogs..., Birds..., Fish, don't, at night  (the blank one ignored)
    assert c.n_spans == 7
    assert c.n_spans_found == 4  # Cats, Fish, don't, at night
    assert c.n_spans_split == 2  # Dogs bark at night, Birds sing at dawn
    assert c.n_spans_absent == 1  # Unicorns fly
    assert c.n_spans_unknown == 0
    assert c.n_nuggets_empty == 1
    assert c.n_nuggets_unreachable == 3  # q1.2, q2.1, q2.2
    assert c.n_queries_complete == 1  # q3 only
    assert c.coverage == pytest.approx((1 / 2 + 0 / 2 + 3 / 3) / 3)
    # q3 needs p2, p3 and p4 (each supports a different nugget): best AC_MRR 1/3 for q3
    assert c.mrr == pytest.approx((0 + 0 + 1 / 3) / 3)
    assert c.mrr_at(2) == 0.0 and c.mrr_at(3) == pytest.approx(1 / 9)
    reasons = {(m.nugget_id, m.reason) for m in c.missing}
    assert reasons == {("q1.2", "absent"), ("q1.2", "split"), ("q2.1", "split")}
    assert "4/7 spans" in str(c)


def test_without_sources_the_reason_is_unknown():
    c = judge_spans(nuggets(), corpus()).ceiling
    assert c.n_spans_unknown == 3 and c.n_spans_split == 0 and c.n_spans_absent == 0


def test_doc_filter_restricts_judging():
    nq = judge_spans(nuggets(), corpus(), doc_filter={"q3": {"p3"}}).qrels
    assert nq.supported("q3") == {"p3": {"q3.1"}}
    assert nq.supported("q1") == {"p1": {"q1.1"}}  # unlisted queries are unrestricted


def test_min_cover():
    a, b, c = 0b001, 0b010, 0b100
    assert _min_cover([a | b, b | c, a], 0b111) == (2, True)
    assert _min_cover([a, b, c], 0b111) == (3, True)
    assert _min_cover([a | b | c, a], 0b111) == (1, True)


def test_several_passages_contain_a_span():
    docs = InMemoryCorpus(
        [Document("d1", "alpha beta"), Document("d2", "beta gamma"), Document("d3", "gamma")]
    )
    nq = judge_spans([Nugget("n", "q", spans=("beta",))], docs).qrels
    assert sorted(nq.supported("q")) == ["d1", "d2"]
