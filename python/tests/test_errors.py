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


def test_a_key_column_with_nulls_is_refused():
    with pytest.raises(ValueError, match=r"left key column 'k': has 1 null"):
        join(pa.table({"k": pa.array([1, None, 3])}), {"k": K})


def test_float_and_bool_keys_are_refused_by_the_engine_with_its_message():
    with pytest.raises(ValueError, match="k"):
        join({"k": K.astype(np.float64)}, {"k": K.astype(np.float64)})


def test_key_types_must_match():
    with pytest.raises(ValueError, match="type"):
        join({"k": K.astype(np.int32)}, {"k": K})
    with pytest.raises(ValueError, match="key types differ"):
        join(pa.table({"k": pa.array([1], pa.timestamp("s"))}), pa.table({"k": pa.array([1], pa.timestamp("ms"))}))


def test_unsupported_column_types_are_named():
    with pytest.raises(ValueError, match=r"left column 's': unsupported type"):
        join({"k": K, "s": np.array(["a", "b", "c", "d"])}, {"k": K})
    with pytest.raises(ValueError, match=r"left column 's': unsupported type string"):
        join(pa.table({"k": K, "s": pa.array(["a", "b", "c", "d"])}), {"k": K})
    with pytest.raises(ValueError, match=r"right column 'h': unsupported type"):
        join({"k": K}, {"k": K, "h": K.astype(np.float16)})


def test_strided_and_multidimensional_arrays_are_refused_not_copied():
    with pytest.raises(ValueError, match=r"left key column 'k': not contiguous"):
        join({"k": np.arange(8)[::2]}, {"k": K})
    with pytest.raises(ValueError, match=r"right column 'v': has 2 dimensions"):
        join({"k": K}, {"k": K, "v": np.zeros((4, 2))})


def test_columns_of_different_lengths_are_named():
    with pytest.raises(ValueError, match="v"):
        join({"k": K, "v": np.arange(3)}, {"k": K})


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="how 'sideways'"):
        join({"k": K}, {"k": K}, how="sideways")
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
    with pytest.raises(TypeError, match="left table: expected a pyarrow.Table"):
        join([1, 2, 3], {"k": K})


def test_duplicate_and_non_string_column_names():
    with pytest.raises(ValueError, match="column names must be strings"):
        join(pd.DataFrame({0: K}), {"k": K}, on="k")


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
