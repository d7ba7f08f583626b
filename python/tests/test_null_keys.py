"""Null keys as SQL joins them (issue 43, item 4): a null key matches nothing (``=``), or with
``nulls_equal=True`` matches the other side's nulls (``IS NOT DISTINCT FROM``, per component of a composite
key); outer joins keep such rows unmatched and anti joins keep them, as DuckDB does. DuckDB is the
reference."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import mgjoin
from conftest import duckdb_maps, where  # noqa: F401 (a fixture)

duckdb = pytest.importorskip("duckdb")

HOWS = ["inner", "left", "right", "full", "semi", "anti", "right_semi", "right_anti"]


def nullable(rng, n, low, high, dtype=np.int64, null_share=0.2):
    return pa.array(rng.integers(low, high, n).astype(dtype), mask=rng.random(n) < null_share)


def pairs(maps):
    left_rows, right_rows = maps
    if left_rows is None or right_rows is None:
        return sorted((left_rows if right_rows is None else right_rows).tolist())
    return sorted(zip(left_rows.tolist(), right_rows.tolist()))


def check_row_order(maps, how):
    """The engine's order: the pairs, then an outer join's unmatched left rows, then its unmatched right
    rows, each in table order; semi and anti joins in table order."""
    left_rows, right_rows = maps
    if left_rows is None or right_rows is None:
        rows = left_rows if right_rows is None else right_rows
        assert np.all(np.diff(rows) > 0)
        return
    section = np.where(right_rows < 0, 1, np.where(left_rows < 0, 2, 0))
    assert np.all(np.diff(section) >= 0)
    assert np.all(np.diff(left_rows[section == 1]) > 0) and np.all(np.diff(right_rows[section == 2]) > 0)


@pytest.mark.parametrize("nulls_equal", [False, True])
@pytest.mark.parametrize("how", HOWS)
def test_null_keys_join_as_in_duckdb(rng, where, how, nulls_equal):
    left = pa.table({"k": nullable(rng, 300, 0, 40), "v": pa.array(np.arange(300))})
    right = pa.table({"k": nullable(rng, 200, 20, 60, np.int32), "w": pa.array(rng.random(200))})
    maps = mgjoin.join(left, right, on="k", how=how, output="gather_maps", nulls_equal=nulls_equal, **where)
    want = duckdb_maps([left.column("k")], [right.column("k")], how, nulls_equal)
    assert pairs(maps) == pairs(want)
    check_row_order(maps, how)
    assert mgjoin.join(left, right, on="k", how=how, output="count", nulls_equal=nulls_equal, **where) == \
        len(want[0] if want[0] is not None else want[1])


@pytest.mark.parametrize("nulls_equal", [False, True])
@pytest.mark.parametrize("how", ["inner", "left", "right", "full", "anti", "right_semi"])
def test_null_keys_as_tables_with_the_key_from_the_side_that_has_the_row(rng, where, how, nulls_equal):
    left = pa.table({"k": nullable(rng, 120, 0, 30), "v": pa.array([f"v{i}" if i % 5 else "" for i in range(120)]),
                     "d": pa.array(rng.integers(0, 10**6, 120), mask=rng.random(120) < 0.3).cast(pa.int32()).view(pa.date32())})
    right = pa.table({"k": nullable(rng, 90, 10, 40, np.int32), "w": pa.array(rng.random(90))})
    got = mgjoin.join(left, right, on="k", how=how, nulls_equal=nulls_equal, **where)
    lr, rr = duckdb_maps([left.column("k")], [right.column("k")], how, nulls_equal)
    con = {}
    if lr is not None:
        con.update({c: [left.column(c)[i].as_py() if i >= 0 else None for i in lr] for c in left.column_names})
    if rr is not None:
        right_values = {c: [right.column(c)[j].as_py() if j >= 0 else None for j in rr] for c in right.column_names}
        if lr is not None:  # one key column: the left value where the left row is there, else the right one
            right_values["k"] = [a if i >= 0 else b for a, b, i in zip(con["k"], right_values["k"], lr)]
        con.update(right_values)
    assert sorted(got.column_names) == sorted(con)
    assert sorted(map(repr, zip(*[got.column(c).to_pylist() for c in sorted(con)]))) == \
        sorted(map(repr, zip(*[con[c] for c in sorted(con)])))
    if how not in ("anti", "right_semi"):
        assert got.schema.field("k").type == pa.int64()  # int64 joined with int32
    assert got.schema.field("d" if "d" in con else "w").type == (pa.date32() if "d" in con else pa.float64())


@pytest.mark.parametrize("nulls_equal", [False, True])
@pytest.mark.parametrize("how", HOWS)
def test_composite_keys_with_nulls_in_any_component(rng, where, how, nulls_equal):
    n, m = 300, 240
    left = [nullable(rng, n, 0, 4, np.int16), nullable(rng, n, 0, 6, np.int32, 0.15)]
    right = [nullable(rng, m, 1, 5, np.int16), nullable(rng, m, 0, 6, np.uint8, 0.15)]
    lt = pa.table({"a": left[0], "b": left[1], "v": pa.array(np.arange(n))})
    rt = pa.table({"x": right[0], "y": right[1]}).slice(0)
    maps = mgjoin.join(lt, rt, left_on=["a", "b"], right_on=["x", "y"], how=how, output="gather_maps",
                       nulls_equal=nulls_equal, **where)
    want = duckdb_maps(left, right, how, nulls_equal)
    assert pairs(maps) == pairs(want)
    check_row_order(maps, how)
    table = mgjoin.join(lt, rt, left_on=["a", "b"], right_on=["x", "y"], how=how, nulls_equal=nulls_equal, **where)
    assert table.num_rows == len(maps[0] if maps[0] is not None else maps[1])


def test_shared_composite_key_components_coalesce_per_component(where):
    left = pa.table({"a": pa.array([1, None, 2, None], pa.int8()), "b": pa.array([None, 5, 6, None], pa.int32())})
    right = pa.table({"a": pa.array([None, 2, None], pa.int8()), "b": pa.array([5, 6, None], pa.int32()),
                      "w": [10, 20, 30]})
    got = mgjoin.join(left, right, on=["a", "b"], how="full", **where)
    assert sorted(map(repr, zip(*got.to_pydict().values()))) == sorted(map(repr, [
        (2, 6, 20), (1, None, None), (None, 5, None), (None, None, None), (None, 5, 10), (None, None, 30)]))
    got = mgjoin.join(left, right, on=["a", "b"], how="full", nulls_equal=True, **where)
    assert sorted(map(repr, zip(*got.to_pydict().values()))) == sorted(map(repr, [
        (2, 6, 20), (1, None, None), (None, 5, 10), (None, None, 30)]))


def test_anti_joins_keep_rows_with_null_keys_as_duckdb_does(where):
    left = pa.table({"k": pa.array([1, None, 2])})
    right = pa.table({"k": pa.array([1, None])})
    assert mgjoin.join(left, right, on="k", how="anti", **where).column("k").to_pylist() == [None, 2]
    assert mgjoin.join(left, right, on="k", how="anti", nulls_equal=True, **where).column("k").to_pylist() == [2]
    assert mgjoin.join(left, right, on="k", how="semi", **where).column("k").to_pylist() == [1]
    assert mgjoin.join(left, right, on="k", how="semi", nulls_equal=True, **where).column("k").to_pylist() == [1, None]


def test_nullable_keys_from_pandas_numpy_and_polars(where):
    left = pd.DataFrame({"k": pd.array([1, None, 3, None], dtype="Int64"), "v": [1.0, 2.0, 3.0, 4.0]})
    right = {"k": np.ma.masked_array([3, 1, 7], mask=[False, False, True])}
    got = mgjoin.join(left, right, on="k", how="left", **where)
    assert sorted(map(repr, zip(*got.to_pydict().values()))) == sorted(map(repr, [
        (1, 1.0), (None, 2.0), (3, 3.0), (None, 4.0)]))
    assert mgjoin.join(left, right, on="k", how="inner", nulls_equal=True, output="count", **where) == 4
    pl = pytest.importorskip("polars")
    frame = pl.DataFrame({"k": [1, None, 3]})
    assert sorted(mgjoin.join(frame, frame, on="k", how="inner", to="polars", **where)["k"].to_list()) == [1, 3]


def test_a_side_whose_keys_are_all_null(where):
    left = pa.table({"k": pa.array([None, None], pa.int64()), "v": [1, 2]})
    right = pa.table({"k": pa.array([None, 4], pa.int64())})
    assert mgjoin.join(left, right, on="k", **where).num_rows == 0
    assert mgjoin.join(left, right, on="k", how="full", **where).num_rows == 4
    assert mgjoin.join(left, right, on="k", nulls_equal=True, **where).to_pydict() == {"k": [None, None], "v": [1, 2]}


def test_nulls_equal_must_be_a_bool():
    with pytest.raises(ValueError, match="nulls_equal='yes'"):
        mgjoin.join({"k": np.arange(3)}, {"k": np.arange(3)}, on="k", nulls_equal="yes", gpus=0)


def test_nat_is_null_in_numpy_and_pandas_datetime_columns(where):
    stamps = np.array(["2024-01-01", "NaT", "2024-01-03"], dtype="datetime64[ns]")
    left = pd.DataFrame({"t": stamps, "v": [1, 2, 3]})
    right = {"t": np.array(["NaT", "2024-01-03"], dtype="datetime64[ns]"), "d": np.array([1, "NaT"], "timedelta64[s]")}
    got = mgjoin.join(left, right, on="t", how="left", **where)
    assert got.schema.field("t").type == pa.timestamp("ns") and got.schema.field("d").type == pa.duration("s")
    assert sorted(map(repr, zip(*got.to_pydict().values()))) == sorted(map(repr, zip(
        *pa.table({"t": stamps, "v": [1, 2, 3], "d": pa.array([None, None, None], pa.duration("s"))}).to_pydict().values())))
    assert mgjoin.join(left, right, on="t", nulls_equal=True, output="count", **where) == 2
