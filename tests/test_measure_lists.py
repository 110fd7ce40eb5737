"""The measure lists that callers keep: stripped keys, and trec_eval's names translated."""

import pytest

from nuggetbench.errors import NuggetbenchError
from nuggetbench.measures import measure_keys, plain_measures


def test_measure_keys_strip_and_dedupe_and_keep_trec_specs():
    assert measure_keys([" nDCG@10 ", "nDCG@10", "AP", "P.5,10"]) == ["nDCG@10", "AP", "P.5,10"]


def test_plain_measures_translate_trec_eval_names_into_ours():
    assert plain_measures(["P.5,10", "nDCG@10", "P@5"]) == ["P@5", "P@10", "nDCG@10"]
    everything = plain_measures(["all_trec"])
    assert "AP" in everything and "Bpref" in everything and len(everything) > 40


def test_plain_measures_reject_unknown_names():
    with pytest.raises(NuggetbenchError):
        plain_measures(["nDGC@10"])
