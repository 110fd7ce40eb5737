"""``read_beir_qrels`` builds its qrels from codes (``Qrels._from_codes``, no pandas): the same
qrels, and the same errors, as the column constructor gives for the same lines."""

from __future__ import annotations

import numpy as np
import pytest

from nuggetbench.data import Qrels
from nuggetbench.data.formats.beir import read_beir_qrels
from nuggetbench.errors import DuplicateError

IDS = ["1", "01", "10", "2", "a", "B", "é", "日本", "x-y", "q\U0010ff90", "d.5", "Z"]


def _same(a: Qrels, b: Qrels) -> None:
    for x, y in zip(a.arrays(), b.arrays()):
        assert np.asarray(x).tolist() == np.asarray(y).tolist()
    assert a.to_dict() == b.to_dict()


@pytest.mark.parametrize("seed", range(8))
def test_same_qrels_as_the_constructor(seed, tmp_path):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 300))
    q = [str(rng.choice(IDS)) + str(rng.integers(0, 3)) for _ in range(n)]
    d = [str(rng.choice(IDS)) + str(rng.integers(0, 20)) for _ in range(n)]
    r = [int(rng.integers(-1, 4)) for _ in range(n)]
    seen: dict[tuple[str, str], int] = {}
    rows = []
    for a, b, g in zip(q, d, r):  # repeat a pair only with its grade (a conflict is an error)
        g = seen.setdefault((a, b), g)
        rows.append((a, b, g))
    text = "query-id\tcorpus-id\tscore\n" + "".join(f"{a}\t{b}\t{g}\n" for a, b, g in rows)
    path = tmp_path / "test.tsv"
    path.write_bytes(text.encode("utf-8").replace("\U0010ff90".encode(), b"\xff"))
    got = read_beir_qrels(path)
    want = Qrels(*_columns(rows))
    _same(got, want)
    assert got.name == "test.tsv" and got.metadata == {"source": str(path)}


def _columns(rows):
    fix = lambda s: s.replace("\U0010ff90", "\U0010ffff")  # noqa: E731 - the byte 0xff
    return [fix(a) for a, _, _ in rows], [fix(b) for _, b, _ in rows], [g for _, _, g in rows]


def test_a_conflicting_pair_is_named_as_before(tmp_path):
    path = tmp_path / "test.tsv"
    path.write_text("query-id\tcorpus-id\tscore\nq2\td1\t1\nq1\td9\t2\nq1\td9\t0\n")
    with pytest.raises(DuplicateError) as got:
        read_beir_qrels(path)
    with pytest.raises(DuplicateError) as want:
        Qrels(["q2", "q1", "q1"], ["d1", "d9", "d9"], [1, 2, 0], source=str(path))
    assert str(got.value) == str(want.value) and got.value.key == ("q1", "d9")


def test_empty_qrels(tmp_path):
    path = tmp_path / "test.tsv"
    path.write_text("query-id\tcorpus-id\tscore\n")
    assert len(read_beir_qrels(path)) == 0
