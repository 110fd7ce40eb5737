"""bm25s' private functions, reached only through ``nuggetbench.text.bm25s_private``: they must
exist in the installed bm25s, which must lie in the tested range, and they must still give the
numbers of a ``bm25s.BM25`` index (a change in bm25s fails here, loudly, before a score changes)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

bm25s = pytest.importorskip("bm25s")

from nuggetbench.text import bm25s_private  # noqa: E402


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", text)[:3])


def test_installed_bm25s_is_in_the_tested_range_and_pinned():
    low, high = re.fullmatch(r">=([\d.]+),<([\d.]+)", bm25s_private.TESTED).groups()
    assert _version(low) <= _version(bm25s.__version__) < _version(high)
    pyproject = (Path(__file__).resolve().parents[1] / "pyproject.toml").read_text()
    assert f'"bm25s{bm25s_private.TESTED}"' in pyproject


def test_private_api_names_exist():
    api = bm25s_private.private_api()
    assert "the" in {w.lower() for w in api.infer_stopwords("en")}
    for fn in (api.build_idf_array, api.select_idf_scorer, api.select_tfc_scorer):
        assert callable(fn)


def test_a_missing_private_function_is_a_loud_error(monkeypatch):
    import bm25s.scoring

    monkeypatch.delattr(bm25s.scoring, "_select_tfc_scorer")
    with pytest.raises(ImportError, match="tested with bm25s"):
        bm25s_private.private_api()


@pytest.mark.parametrize("method", ["lucene", "robertson", "atire"])
def test_private_scoring_gives_bm25s_index_scores(method):
    rng = np.random.default_rng(3)
    vocab = [f"w{i}" for i in range(40)]
    corpus = [" ".join(rng.choice(vocab, int(rng.integers(3, 25)))) for _ in range(60)]
    tokens = bm25s.tokenize(corpus, stopwords=None, show_progress=False)
    index = bm25s.BM25(method=method, k1=1.2, b=0.7)
    index.index(tokens, show_progress=False)
    # the same scores from the private pieces: idf(t) * tfc(tf, |d|) with global statistics
    api = bm25s_private.private_api()
    n_vocab = len(tokens.vocab)
    df = np.zeros(n_vocab, dtype=np.int64)
    lens = np.array([len(ids) for ids in tokens.ids])
    for ids in tokens.ids:
        df[np.unique(ids)] += 1
    idf = api.build_idf_array(
        doc_frequencies={t: int(c) for t, c in enumerate(df)},
        n_docs=len(corpus),
        compute_idf_fn=api.select_idf_scorer(method),
        dtype="float32",
    )
    avg = np.float64(lens.sum()) / np.float64(len(corpus))
    for d, ids in enumerate(tokens.ids):
        terms, counts = np.unique(ids, return_counts=True)
        tfc = api.select_tfc_scorer(method)(
            tf_array=counts.astype(np.float32), l_d=lens[d], l_avg=avg, k1=1.2, b=0.7, delta=0.5
        )
        ours = (idf[terms] * tfc).astype(np.float32)
        theirs = np.array(
            [
                index.scores["data"][index.scores["indptr"][t] : index.scores["indptr"][t + 1]][
                    index.scores["indices"][
                        index.scores["indptr"][t] : index.scores["indptr"][t + 1]
                    ]
                    == d
                ][0]
                for t in terms
            ],
            dtype=np.float32,
        )
        np.testing.assert_array_equal(ours, theirs)
