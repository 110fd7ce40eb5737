"""The restricted unpickler: plain data loads, anything that would run code is refused unexecuted."""

from __future__ import annotations

import io
import os
import pickle
import pickletools

import numpy as np
import pytest

from nuggetbench.data.formats.safepickle import safe_load, safe_loads, to_builtin
from nuggetbench.errors import FormatError


class _WritesFile:
    """Unpickling this with plain pickle would create a file (via builtins.open)."""

    def __init__(self, target):
        self.target = str(target)

    def __reduce__(self):
        return (open, (self.target, "w"))


class _RunsShell:
    def __init__(self, target):
        self.target = str(target)

    def __reduce__(self):
        return (os.system, (f"touch {self.target}",))


class Point:  # a plain user class: refused as well
    def __init__(self):
        self.x = 1


@pytest.mark.parametrize("protocol", [0, 2, 4, 5])
def test_plain_data_round_trips(protocol):
    value = {
        "query": {"q1": "text", "q2": "more"},
        "qrel": {"q1": {"d1": 1, "d2": 0}},
        "misc": [1.5, -3, True, None, b"raw", (1, 2), {3, 4}, frozenset({"a"}), 2 + 3j, 10**30],
    }
    assert safe_loads(pickle.dumps(value, protocol=protocol)) == value


def test_numpy_scalars_load_like_birco_ids():
    value = {
        np.str_("q_unique_1"): [np.str_("d1"), "d2"],
        "n": np.int64(7),
        "f": np.float32(0.25),
        "b": np.bool_(True),
    }
    data = pickle.dumps(value, protocol=4)
    loaded = safe_loads(data)
    assert loaded == value
    assert type(next(iter(loaded))) is np.str_
    plain = to_builtin(loaded)
    assert type(next(iter(plain))) is str and type(plain["n"]) is int


@pytest.mark.parametrize("protocol", [0, 2, 4])
def test_reduce_that_would_write_a_file_is_refused_and_nothing_is_written(tmp_path, protocol):
    target = tmp_path / "pwned.txt"
    data = pickle.dumps({"ok": [1, 2], "evil": _WritesFile(target)}, protocol=protocol)
    assert b"open" in data  # the pickle really names builtins.open / io.open
    path = tmp_path / "bad.pickle"
    path.write_bytes(data)
    with pytest.raises(FormatError) as err:
        safe_load(path)
    assert not target.exists()
    assert (
        str(path) in str(err.value)
        and "open" in str(err.value)
        and "nothing was executed" in str(err.value)
    )


def test_os_system_is_refused(tmp_path):
    target = tmp_path / "touched"
    path = tmp_path / "shell.pickle"
    path.write_bytes(pickle.dumps([_RunsShell(target)]))
    with pytest.raises(FormatError, match=r"(posix|os|nt)\.system"):
        safe_load(path)
    assert not target.exists()


def test_classes_functions_and_arrays_are_refused(tmp_path):
    for obj, name in [(Point(), "Point"), (len, "len"), (np.arange(3), "numpy")]:
        with pytest.raises(FormatError, match=name):
            safe_loads(pickle.dumps(obj), source="x.pickle")


def test_numpy_object_dtype_scalar_is_refused():
    # hand-built: numpy.core.multiarray.scalar(numpy.dtype('O'), ...) must not be constructed
    data = (
        b"\x80\x04\x8c\x15numpy.core.multiarray\x94\x8c\x06scalar\x94\x93\x94"
        b"\x8c\x05numpy\x94\x8c\x05dtype\x94\x93\x94\x8c\x02O8\x94\x89\x88\x87\x94R\x94"
        b"C\x08AAAAAAAA\x94\x86\x94R\x94."
    )
    pickletools.dis(data, out=io.StringIO())  # a well-formed pickle
    with pytest.raises(FormatError, match="not a plain scalar|not allowed"):
        safe_loads(data)


def test_truncated_or_garbage_is_a_format_error(tmp_path):
    good = pickle.dumps({"a": [1, 2, 3]})
    with pytest.raises(FormatError, match="not a valid data pickle"):
        safe_loads(good[:-3], source="cut.pickle")
    with pytest.raises(FormatError):
        safe_loads(b"hello world")


def test_real_birco_pickles_load(shared_data):
    root = shared_data / "birco"
    if not root.is_dir():
        pytest.skip("no BIRCO data")
    for path in sorted(root.glob("*/test_set.pickle")) + sorted(root.glob("*/ranks/*.pickle")):
        obj = safe_load(path)
        assert isinstance(obj, dict) and obj
