"""The column writer of TREC runs (``data/_trec_write.py``) writes exactly the bytes of the
line-by-line Python writer."""

from __future__ import annotations

import gzip

import numpy as np
import pytest

from nuggetbench.data import Run, write_run
from nuggetbench.data import read_trec_run as read_run
from nuggetbench.data.formats import trec_write as _trec_write
from nuggetbench.data.formats.trec import _run_lines, format_score
from nuggetbench.data.source import encode_id_text
from nuggetbench.errors import InputError


@pytest.fixture
def columns(monkeypatch):
    """Every run (any size) goes through the column writer, in blocks of 7 lines."""
    calls = []
    original = _trec_write.run_chunks

    def spy(*args, **kwargs):
        out = original(*args, **{**kwargs, "chunk": 7})
        calls.append(out is not None)
        return out

    monkeypatch.setattr(_trec_write, "MIN_ENTRIES", 1)
    monkeypatch.setattr(_trec_write, "run_chunks", spy)
    return calls


def _python_bytes(run: Run, tag: str) -> bytes:
    return encode_id_text("".join(_run_lines(run, tag)))


def _scores(rng: np.random.Generator, n: int) -> np.ndarray:
    special = [0.0, -0.0, 1e-4, -1e-4, 9.999999999999999e-05, 1e15, -1e15, 1e15 - 1, 1e15 + 0.5]
    special += [1e16, 1e16 - 2, 9999999999999998.0, 1234567890123456.8, 1e21, 1e22, 5e-324]
    special += [np.inf, -np.inf, 3.0, 0.1, 1 / 3, 12.000000000000002, 2.5e-5, 123456.789]
    bits = rng.integers(0, 2**63, n, dtype=np.int64).view(np.float64)
    bits = bits[np.isfinite(bits)]
    return np.concatenate(
        [
            rng.uniform(-1, 1, n) * 10.0 ** rng.uniform(-12, 24, n),
            rng.normal(size=n) * 30,
            rng.integers(-(10**6), 10**6, n // 10).astype(float),
            bits,
            special,
        ]
    )


@pytest.mark.parametrize("seed", range(3))
def test_score_texts_equal_format_score(seed):
    scores = _scores(np.random.default_rng(seed), 200_000)
    assert _trec_write.score_texts(scores).to_pylist() == [format_score(x) for x in scores.tolist()]


def _random_run(rng: np.random.Generator, *, odd_ids: bool) -> Run:
    scores = _scores(rng, 300)
    scores = scores[np.isfinite(scores)]  # a TREC run cannot be read back with them
    pool = [f"d{j}" for j in range(60)] + (["dé", "日本"] if odd_ids else [])
    data = {}
    for i in range(int(rng.integers(1, 30))):
        docs = rng.choice(len(pool), int(rng.integers(1, 40)), replace=False)
        data[f"q{i}" if i % 3 else f"Q-{i}"] = {
            pool[j]: float(rng.choice(scores)) if rng.random() < 0.7 else float(rng.integers(0, 4))
            for j in docs
        }
    return Run.from_dict(data, name="a run")


@pytest.mark.parametrize("seed", range(6))
def test_column_writer_equals_python_writer(seed, tmp_path, columns):
    run = _random_run(np.random.default_rng(seed), odd_ids=seed % 2 == 1)
    path = write_run(run, tmp_path / "run.trec", tag="my tag")
    assert columns == [True]  # the column writer wrote it
    assert path.read_bytes() == _python_bytes(run, "my_tag")
    gz = write_run(run, tmp_path / "run.trec.gz")
    assert gzip.decompress(gz.read_bytes()) == _python_bytes(run, "a_run")
    assert read_run(path) == run


def test_ids_that_are_not_utf8_keep_their_bytes(tmp_path, columns):
    raw = b"q1 Q0 d\xff1 1 2.5 t\nq1 Q0 d2 2 1.25 t\n"
    (tmp_path / "in.trec").write_bytes(raw)
    run = read_run(tmp_path / "in.trec")
    assert write_run(run, tmp_path / "out.trec", tag="t").read_bytes() == raw
    assert columns == [False]  # written by the Python writer, which restores the byte


def test_unicode_ids(tmp_path, columns):
    odd = Run.from_dict({"q": {"dé": 1.5, "日本": 2.0, "x": 0.25}, "é": {"a": 1.0}}, name="ü")
    assert write_run(odd, tmp_path / "r.trec").read_bytes() == _python_bytes(odd, "ü")
    assert columns == [True]


@pytest.mark.parametrize(
    "data, bad",
    [
        ({"q1": {"ok": 2.0, "a b": 1.0}, "q2": {"": 1.0}}, "'a b'"),
        ({"q1": {"ok": 2.0}, "#q2": {"d": 1.0}}, "'#q2'"),
        ({"q 1": {"ok": 2.0}}, "'q 1'"),
        ({"q1": {"ok": 2.0, "d\x00": 1.0}}, "d"),
    ],
)
def test_bad_ids_are_named_as_before(data, bad, tmp_path, columns):
    run = Run.from_dict(data)
    with pytest.raises(InputError, match=bad):
        write_run(run, tmp_path / "run.trec")
    assert not (tmp_path / "run.trec").exists()
    assert columns == [False]


def test_ids_no_entry_uses_are_not_checked(tmp_path, columns):
    run = Run.from_dict({"q1": {"ok": 3.0, "a b": 1.0}, "q2": {"x": 1.0}}).truncate(1)
    assert "a b" in run.doc_codes()[0].tolist()  # still among the distinct ids
    path = write_run(run, tmp_path / "run.trec")
    assert columns == [True]
    assert path.read_bytes() == b"q1 Q0 ok 1 3 nuggetbench\nq2 Q0 x 1 1 nuggetbench\n"


def test_a_wrong_number_raises(monkeypatch):
    import pyarrow as pa
    import pyarrow.compute as pc

    from nuggetbench.data import arrow as _pyarrow

    real_cast = _pyarrow.compute.cast  # the kernels the writer calls

    def shifted(values, target, *args, **kwargs):
        out = real_cast(values, target, *args, **kwargs)
        if target == pa.string() and pa.types.is_floating(values.type):
            return pc.binary_replace_slice(out, 0, 1, "9")  # corrupt the first digit
        return out

    monkeypatch.setattr(_pyarrow.compute, "cast", shifted)
    with pytest.raises(AssertionError, match="reads back"):
        _trec_write.score_texts(np.array([1.25, 2.5]))
