"""Bad input is a ValueError (or TypeError for a wrong kind of table) whose message names the column or
argument; engine errors keep the engine's message."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import mgjoin
from conftest import gpu_count

K = np.arange(4, dtype=np.int64)


def join(left, right, **kw):
    kw.setdefault("on", "k")
    kw.setdefault("gpus", 0)
    return mgjoin.join(left, right, **kw)


def test_a_missing_key_column_is_named():
    with pytest.raises(ValueError, match=r"right table has no column 'k' \(its columns: x\)"):
        join({"k": K}, {"x": K})


def test_keys_that_cannot_be_compared_are_refused_by_the_engine_with_its_message():
    with pytest.raises(ValueError, match=r"key columns 'k' \(left table, int64\) and 'k' \(right table, float64\) cannot be compared"):
        join({"k": K}, {"k": K.astype(np.float64)})
    with pytest.raises(ValueError, match="cannot be compared"):
        join({"k": K.astype(bool)}, {"k": K.astype(np.uint8)})


def test_temporal_keys_join_their_own_type_only():
    with pytest.raises(ValueError, match="key types differ"):
        join(pa.table({"k": pa.array([1], pa.timestamp("s"))}), pa.table({"k": pa.array([1], pa.timestamp("ms"))}))


def test_a_full_outer_join_of_uint64_and_signed_keys_has_no_key_type():
    with pytest.raises(ValueError, match="full outer join's key column"):
        join({"k": K.astype(np.uint64)}, {"k": K}, how="full")
    assert join({"k": K.astype(np.uint64)}, {"k": K}, how="full", output="count") == 4


def test_unsupported_key_types_are_named():
    with pytest.raises(ValueError, match=r"left key column 'k': unsupported type object"):
        join({"k": np.array([1, 2, 3, 4], dtype=object)}, {"k": K})
    with pytest.raises(ValueError, match=r"right key column 'k': unsupported type list<item: int64>"):
        join({"k": K}, pa.table({"k": pa.array([[1], [2], [3], [4]])}))
    with pytest.raises(ValueError, match=r"key types differ: left column 'k' is string, right column 'k' is int64"):
        join({"k": np.array(["a", "b", "c", "d"])}, {"k": K})  # strings are keys, of strings only
    with pytest.raises(ValueError, match=r"right key column 'k': unsupported type"):
        join({"k": K}, {"k": K.astype(np.float16)})
    with pytest.raises(ValueError, match=r"left column 'c': cannot be read as an Arrow array"):
        join({"k": K, "c": np.array([object(), 1, "x", None], dtype=object)}, {"k": K})


def test_strided_and_multidimensional_arrays_are_refused_not_copied():
    with pytest.raises(ValueError, match=r"left key column 'k': not contiguous"):
        join({"k": np.arange(8)[::2]}, {"k": K})
    with pytest.raises(ValueError, match=r"right column 'v': has 2 dimensions"):
        join({"k": K}, {"k": K, "v": np.zeros((4, 2))})


def test_columns_of_different_lengths_are_named():
    with pytest.raises(ValueError, match="v"):
        join({"k": K, "v": np.arange(3)}, {"k": K})


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="how 'sideways': expected inner, left, right, full .* right_anti"):
        join({"k": K}, {"k": K}, how="sideways")
    with pytest.raises(ValueError, match="to='excel'"):
        join({"k": K}, {"k": K}, to="excel")
    with pytest.raises(ValueError, match="suffixes="):
        join({"k": K}, {"k": K}, suffixes="_x")
    with pytest.raises(ValueError, match="output='arrow'"):
        join({"k": K}, {"k": K}, output="arrow")
    with pytest.raises(ValueError, match="strategy 'fast'"):
        join({"k": K}, {"k": K}, strategy="fast")
    with pytest.raises(ValueError, match="gpu_memory_limit '8X'"):
        join({"k": K}, {"k": K}, gpu_memory_limit="8X")
    with pytest.raises(ValueError, match="gpus=-2"):
        join({"k": K}, {"k": K}, gpus=-2)
    with pytest.raises(ValueError, match="give the key column"):
        mgjoin.join({"k": K}, {"k": K})
    with pytest.raises(ValueError, match="left_on names 2"):
        mgjoin.join({"k": K}, {"k": K}, left_on=["k", "k"], right_on="k")
    with pytest.raises(ValueError, match="no column 'nope'"):
        join({"k": K}, {"k": K}, left_columns=["nope"])
    with pytest.raises(ValueError, match="progress="):
        join({"k": K}, {"k": K}, progress="yes")


def test_a_table_of_the_wrong_kind_is_a_type_error():
    with pytest.raises(TypeError, match="left table: expected a pyarrow.Table, .* the Arrow PyCapsule interface"):
        join([1, 2, 3], {"k": K})


def test_duplicate_and_non_string_column_names():
    with pytest.raises(ValueError, match="column names must be strings"):
        join(pd.DataFrame({"k": K, 0: K}), {"k": K}, on="k")
    with pytest.raises(ValueError, match="the column name 'v' appears more than once"):
        join(pd.DataFrame([[0, 1, 2]] * 4, columns=["k", "v", "v"]), {"k": K})
    # Columns the join does not use are not looked at.
    assert join(pd.DataFrame([[0, 1, 2]] * 4, columns=["k", "v", "v"]), {"k": K}, left_columns=[]).num_rows == 4
    assert join(pd.DataFrame({"k": K, 0: K}), {"k": K}, left_columns=[]).column_names == ["k"]


@pytest.mark.parametrize("key", [pa.array(["x", "y"]), pa.array([1, 2])])
def test_a_key_column_named_twice_is_refused_before_it_is_read(key):
    left = pa.table({"a": key})
    right = pa.table({"b": key, "c": key.take([1, 0])})
    with pytest.raises(ValueError, match="^left_on names 'a' twice$"):
        join(left, right, on=None, left_on=["a", "a"], right_on=["b", "c"])
    with pytest.raises(ValueError, match="^right_on names 'b' twice$"):
        join(right, right, on=None, left_on=["b", "c"], right_on=["b", "b"], how="right_semi")
    with pytest.raises(ValueError, match="^on names 'a' twice$"):
        join(left, left, on=["a", "a"])


def test_a_missing_gpu_is_an_error_naming_the_argument():
    with pytest.raises(ValueError, match=r"^gpus: (GPU 64 does not exist|GPUs were asked for but no CUDA GPU)"):
        mgjoin.join({"k": K}, {"k": K}, on="k", gpus=[64])


def test_gpu_error_is_a_runtime_error():
    assert issubclass(mgjoin.GpuError, RuntimeError)
    assert mgjoin.GpuError.__module__ == "mgjoin"


def test_an_engine_needs_gpus():
    with pytest.raises(ValueError, match="CPU path, which needs no Engine"):
        mgjoin.Engine(gpus=0)
    if gpu_count() == 0:
        with pytest.raises(ValueError, match="no CUDA GPU"):
            mgjoin.Engine()
