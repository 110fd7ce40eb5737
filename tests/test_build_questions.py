"""Reading questions: Posts.xml rows (both tag formats), JSONL, filters, HTML to text, tags."""

from __future__ import annotations

import json

import pytest

from build_fixtures import POSTS, posts_xml, row
from nuggetbench.builder.htmltext import html_to_text
from nuggetbench.builder.posts_xml import read_posts_xml
from nuggetbench.builder.questions import QuestionFilter, parse_tags, read_questions
from nuggetbench.errors import FormatError, InputError


@pytest.fixture()
def dump(tmp_path):
    path = tmp_path / "Posts.xml"
    path.write_text(posts_xml(POSTS), encoding="utf-8")
    return path


def test_reads_questions_with_accepted_answers_and_reports_malformed_rows(dump):
    qs, rep = read_posts_xml(dump)
    assert [q.question_id for q in qs] == ["1", "3", "7", "9"]
    # 10 rows in the fixture, one malformed (row 6, an unescaped '&')
    assert (rep.rows, rep.questions, rep.answers, rep.with_accepted, rep.kept) == (10, 5, 4, 4, 4)
    assert len(rep.malformed) == 1
    bad = rep.malformed[0]
    # declaration on line 1, <posts> on line 2, the 6th row on line 8; the parser stops just after
    # its bare '&' (character 44 of the line)
    line = dump.read_text(encoding="utf-8-sig").splitlines()[7]
    assert bad["line"] == 8 and bad["column"] in (line.index("&") + 1, line.index("&") + 2)
    assert "not well-formed" in bad["error"]
    q1 = qs[0]
    assert q1.title == "How do I frobnicate a widget?"
    assert q1.tags == ("widgets", "python")
    assert qs[1].tags == ("turbine", "config")  # the |a|b| format
    assert q1.answer_id == "2" and q1.score == 5 and q1.date.startswith("2023-03-01")
    assert "```\nfrobnicate(w, level=5)\n```" in q1.answer


def test_malformed_row_can_raise_with_its_position(dump):
    with pytest.raises(FormatError) as info:
        read_posts_xml(dump, on_error="raise")
    assert (
        info.value.line == 8
        and "column 45" in str(info.value)
        and "on_error='skip'" in str(info.value)
    )


def test_answer_before_its_question_is_found_by_a_second_pass(tmp_path):
    rows = [
        row(Id=20, PostTypeId=2, ParentId=21, Body="<p>Early answer text here.</p>"),
        row(
            Id=21,
            PostTypeId=1,
            AcceptedAnswerId=20,
            CreationDate="2024-01-01T00:00:00",
            Title="Late question",
            Body="<p>Q</p>",
            Tags="|a|",
        ),
    ]
    path = tmp_path / "Posts.xml"
    path.write_text(posts_xml(rows), encoding="utf-8")
    qs, rep = read_posts_xml(path)
    assert [q.answer for q in qs] == ["Early answer text here."]
    assert rep.accepted_answer_missing == 0


def test_accepted_answer_absent_from_the_dump_is_counted(tmp_path):
    rows = [
        row(
            Id=1,
            PostTypeId=1,
            AcceptedAnswerId=99,
            CreationDate="2024-01-01T00:00:00",
            Title="T",
            Body="B",
        )
    ]
    path = tmp_path / "Posts.xml"
    path.write_text(posts_xml(rows), encoding="utf-8")
    qs, rep = read_posts_xml(path)
    assert qs == [] and rep.accepted_answer_missing == 1


def test_filters_by_tag_date_score_and_limit(dump):
    qs, rep = read_posts_xml(dump, QuestionFilter(tags=("widgets",)))
    assert [q.question_id for q in qs] == ["1", "9"] and rep.dropped_by_tags == 2
    qs, _ = read_posts_xml(dump, QuestionFilter(tags=("widgets", "turbine"), tags_mode="all"))
    assert [q.question_id for q in qs] == ["9"]
    qs, rep = read_posts_xml(dump, QuestionFilter(since="2023-04-01", until="2023-07-01"))
    assert [q.question_id for q in qs] == ["3", "7"] and rep.dropped_by_date == 2
    qs, rep = read_posts_xml(dump, QuestionFilter(min_score=2))
    assert [q.question_id for q in qs] == ["1", "3", "9"] and rep.dropped_by_score == 1
    qs, _ = read_posts_xml(dump, QuestionFilter(limit=2))
    assert [q.question_id for q in qs] == ["1", "3"]
    with pytest.raises(InputError, match="not an ISO date"):
        QuestionFilter(since="March 2023")


def test_co_occurring_tags_are_counted_among_in_scope_questions(dump):
    _, rep = read_posts_xml(dump, QuestionFilter(tags=("widgets",)))
    # in scope: questions 1 (widgets, python), 5 (widgets), 9 (widgets, turbine); the filter tag is excluded
    assert dict(rep.top_tags) == {"python": 1, "turbine": 1}
    _, rep = read_posts_xml(dump, top_k=1)
    assert rep.top_tags == [("widgets", 3)]


def test_parse_tags_both_formats():
    assert parse_tags("&lt;a&gt;&lt;b-c&gt;") == ("a", "b-c")  # escaped twice (a JSONL export)
    assert parse_tags("<python><pandas-2.0>") == ("python", "pandas-2.0")
    assert parse_tags("|python|pandas-2.0|") == ("python", "pandas-2.0")
    assert parse_tags(["a", " b "]) == ("a", "b")
    assert parse_tags("") == ()


def test_html_to_text_keeps_code_blocks():
    text = html_to_text(
        "<p>Use <code>x[0]</code> &amp; more:</p><pre><code>def f():\n    return {1: 2}\n</code></pre>"
        "<ul><li>one</li><li>two</li></ul><h2>Head</h2><p>a<br>b</p>"
    )
    assert (
        text
        == "Use `x[0]` & more:\n\n```\ndef f():\n    return {1: 2}\n```\n\n- one\n- two\n\n## Head\n\na\nb"
    )


def test_jsonl_questions(tmp_path):
    path = tmp_path / "q.jsonl"
    lines = [
        json.dumps(
            {
                "id": 1,
                "title": "T1",
                "body": "<p>B <code>c</code></p>",
                "answer": "Plain answer.",
                "tags": ["x", "y"],
                "date": "2023-02-01",
            }
        ),
        "{not json",
        json.dumps(
            {"id": 2, "title": "T2", "body": "b", "answer": "", "tags": "|x|", "date": "2023-02-01"}
        ),
        json.dumps(
            {
                "id": 3,
                "title": "T3",
                "body": "b",
                "answer": "A3",
                "tags": "<z>",
                "date": "2022-01-01",
            }
        ),
    ]
    path.write_text("\n".join(lines) + "\n")
    qs, rep = read_questions(path, QuestionFilter(since="2023-01-01"))
    assert [q.question_id for q in qs] == ["1"]
    assert qs[0].body == "B `c`" and qs[0].answer == "Plain answer."
    assert rep.malformed[0]["line"] == 2 and rep.dropped_by_date == 1 and rep.with_accepted == 2
    with pytest.raises(FormatError, match="line 2"):
        read_questions(path, on_error="raise")


def test_missing_file_and_unknown_format(tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        read_questions(tmp_path / "nope.xml")
    other = tmp_path / "q.txt"
    other.write_text("x")
    with pytest.raises(InputError, match="set \\[questions\\] format"):
        read_questions(other)


@pytest.mark.realdata
@pytest.mark.parametrize(
    "site,questions,accepted,answers",
    [("coffee", 225, 105, 327), ("datascience-meta", 257, 83, 341)],
)
def test_real_dumps(shared_data, site, questions, accepted, answers):
    path = shared_data / "stackexchange" / site / "Posts.xml"
    if not path.is_file():
        pytest.skip(f"{path} is absent")
    qs, rep = read_posts_xml(path)
    assert (rep.questions, rep.with_accepted, rep.answers) == (questions, accepted, answers)
    assert len(qs) == accepted and not rep.malformed and rep.accepted_answer_missing == 0
    assert all(q.answer.strip() and q.title.strip() and q.tags for q in qs)
    assert all("<p>" not in q.body for q in qs)
