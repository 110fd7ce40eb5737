"""The measure lists that callers keep: stripped keys, and trec_eval's names translated."""

import pytest

from nuggetbench.errors import NuggetbenchError
from nuggetbench.measures import measure_keys, plain_measures


def test_measure_keys_strip_and_dedupe_and_keep_trec_specs():
    assert measure_keys([" nDCG@10 ", "nDCG@10", "AP", "P.5,10"]) == ["nDCG@10", "AP", "P.5,10"]


def test_plain_measures_expand_trec_eval_groups_to_its_printed_names():
    # issue 30 (one vocabulary): the names evaluate prints, each read back as a measure
    assert plain_measures(["P.5,10", "nDCG@10", "P@5"]) == ["P_5", "P_10", "nDCG@10", "P@5"]
    everything = plain_measures(["all_trec"])
    assert "map" in everything and "iprec_at_recall_0.00" in everything and len(everything) > 40
    assert measure_keys(everything) == everything  # every printed name reads back


def test_plain_measures_reject_unknown_names():
    with pytest.raises(NuggetbenchError):
        plain_measures(["nDGC@10"])
