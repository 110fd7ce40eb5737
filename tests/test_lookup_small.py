"""``data._lookup`` without pyarrow: a few ids are looked up in a Python dict or set (no pandas
import), more through pandas; both give the same answers."""

from __future__ import annotations

import numpy as np
import pytest

from nuggetbench.data import lookup as _lookup


@pytest.mark.parametrize("small", [0, 10**9])
@pytest.mark.parametrize("seed", range(3))
def test_dict_and_pandas_paths_agree(small, seed, monkeypatch):
    monkeypatch.setattr(_lookup, "_use_arrow", lambda n: False)
    monkeypatch.setattr(_lookup, "SMALL", small)
    rng = np.random.default_rng(seed)
    names = ["d", "D", "é", "日本", "d\U0010ff80", "1", "01", ""]
    pool = [f"{rng.choice(names)}{i}" for i in range(400)]
    uniques = np.array(list(dict.fromkeys(pool[:300])), dtype=object)
    values = np.array([pool[i] for i in rng.integers(0, 400, 900)], dtype=object)
    lookup = {d: i for i, d in enumerate(uniques.tolist())}
    got = _lookup.index_in(values, uniques)
    assert got.dtype == np.int64
    assert got.tolist() == [lookup.get(v, -1) for v in values.tolist()]
    member = _lookup.is_in(values, uniques)
    assert member.dtype == bool and member.tolist() == [v in lookup for v in values.tolist()]
    keys = rng.integers(0, 50, 300)
    assert _lookup.is_in(keys, keys[:20]).tolist() == np.isin(keys, keys[:20]).tolist()


def test_a_few_ids_do_not_import_pandas():
    import subprocess
    import sys

    code = (
        "import sys, numpy as np\n"
        "from nuggetbench.data.lookup import index_in, is_in\n"
        "u = np.array(['a', 'b', 'c'], dtype=object)\n"
        "assert index_in(np.array(['c', 'x'], dtype=object), u).tolist() == [2, -1]\n"
        "assert is_in(np.array(['c', 'x'], dtype=object), u).tolist() == [True, False]\n"
        "assert 'pandas' not in sys.modules and 'pyarrow' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
