"""``Run.fingerprint`` factorises its doc codes with numpy: the same values as pandas.factorize,
so fingerprints recorded before stay valid."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from nuggetbench.data.columns import _factorize_ints


@pytest.mark.parametrize("seed", range(5))
def test_factorize_ints_equals_pandas(seed):
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, int(rng.integers(1, 500)), int(rng.integers(0, 3000)))
    got = _factorize_ints(codes)
    want = pd.factorize(codes)
    assert got[0].tolist() == want[0].tolist() and got[1].tolist() == want[1].tolist()


def test_fingerprint_is_the_one_computed_with_pandas():
    from nuggetbench.data import Run

    run = Run.from_dict({"q1": {"b": 2.0, "a": 2.0, "c": 1.0}, "q2": {"c": 3.5, "z": 0.5}})
    assert run.fingerprint() == "03e0bf1a46b5dc9a"
