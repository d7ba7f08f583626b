"""Inputs reach the engine without a copy where their layout allows, are never modified, and results
are NumPy arrays that own the engine's columns and wrap into Arrow without a copy."""
from __future__ import annotations

import gc

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import mgjoin
from mgjoin import _mgjoin
from mgjoin._tables import arrow_array
from mgjoin._tables import column_from


def test_inputs_are_never_modified(rng):
    left = {"k": rng.integers(0, 50, 1000), "v": rng.random(1000)}
    right = {"k": rng.integers(0, 50, 800), "w": rng.integers(0, 9, 800).astype(np.int8)}
    before = {side: {n: a.copy() for n, a in t.items()} for side, t in (("l", left), ("r", right))}
    for how in ("inner", "full", "semi"):
        for output in ("table", "gather_maps", "count"):
            mgjoin.join(left, right, on="k", how=how, output=output, gpus=0)
    for n, a in left.items():
        np.testing.assert_array_equal(a, before["l"][n])
    for n, a in right.items():
        np.testing.assert_array_equal(a, before["r"][n])


def test_numpy_columns_are_passed_as_they_are():
    a = np.arange(10, dtype=np.int64)
    assert column_from(a, "c").values is a


def test_arrow_columns_are_viewed_not_copied():
    array = pa.array(np.arange(100, dtype=np.int32))[10:]  # a slice: an offset into the buffer
    values = column_from(array, "c").values
    assert values.ctypes.data == array.buffers()[1].address + 10 * 4
    one_chunk = pa.chunked_array([array])
    assert column_from(one_chunk, "c").values.ctypes.data == values.ctypes.data
    with_nulls = pa.array([1, None, 3], pa.int64())
    column = column_from(with_nulls, "c")
    assert column.values.ctypes.data == with_nulls.buffers()[1].address
    assert column.valid.tolist() == [True, False, True]
    timestamps = pa.array([1, 2], pa.timestamp("ms"))
    assert column_from(timestamps, "c").values.ctypes.data == timestamps.buffers()[1].address


def test_pandas_columns_are_viewed_not_copied():
    frame = pd.DataFrame({"k": np.arange(100, dtype=np.int64), "f": np.linspace(0, 1, 100)})
    for name in frame.columns:
        assert np.shares_memory(column_from(frame[name], "c").values, frame[name].to_numpy())


def test_read_only_inputs_are_accepted():
    k = np.arange(5, dtype=np.int64)
    k.flags.writeable = False
    assert mgjoin.join({"k": k}, {"k": k}, on="k", output="count", gpus=0) == 5


def test_result_arrays_wrap_into_arrow_without_a_copy():
    left = {"k": np.array([3, 1, 2, 2], np.int64), "v": np.array([1, 2, 3, 4], np.uint32)}
    right = {"k": np.array([2, 3, 9], np.int64), "w": np.array([0.5, 1.5, 2.5])}
    res = _mgjoin.join_tables(left, right, left_on=["k"], right_on=["k"], how="full", gpus=0)
    columns = dict(res["columns"])
    for name in ("key", "r.v", "s.w"):
        arr = columns[name]
        assert arr.flags.c_contiguous and arr.flags.owndata is False  # the engine's memory, not a copy
        assert pa.array(arr).buffers()[1].address == arr.ctypes.data
        null = ~columns["s.valid"] if name.startswith("s.") else ~columns["r.valid"]
        assert arrow_array(arr, null).buffers()[1].address == arr.ctypes.data
    maps = _mgjoin.join_tables(left, right, left_on=["k"], right_on=["k"], output="maps", gpus=0)
    assert pa.array(maps["left_rows"]).buffers()[1].address == maps["left_rows"].ctypes.data


def test_result_arrays_own_their_memory():
    k = np.arange(1000, dtype=np.int64)
    left_rows, right_rows = mgjoin.join({"k": k}, {"k": k[::-1].copy()}, on="k", output="gather_maps", gpus=0)
    gc.collect()
    assert np.array_equal(np.sort(k[left_rows]), k)
    table = mgjoin.join({"k": k, "v": k * 2}, {"k": k}, on="k", gpus=0)
    del k
    gc.collect()
    assert table.column("v").to_numpy().sum() == 2 * sum(range(1000))


@pytest.mark.parametrize("how", ["inner", "left"])
def test_table_columns_are_the_engine_buffers(how):
    # The table's int columns point at the arrays the engine returned (one buffer each, no copy):
    # checked through the buffer addresses staying equal to a NumPy view of the same column.
    table = mgjoin.join({"k": np.arange(10), "v": np.arange(10.0)}, {"k": np.arange(5)}, on="k", how=how, gpus=0)
    chunk = table.column("v").chunk(0)
    view = chunk.to_numpy(zero_copy_only=True)
    assert view.ctypes.data == chunk.buffers()[1].address
