"""mgjoin.join on the CPU path (gpus=0): every input kind, join kind and output form, checked against a
reference join by a Python dict."""
from __future__ import annotations

import time

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.feather as feather
import pyarrow.parquet as pq
import pytest

import mgjoin
from conftest import as_pairs, reference_maps

HOWS = ["inner", "left", "right", "full", "semi", "anti"]


def tables(rng, n_left=300, n_right=200, key_range=120):
    """Two tables with duplicate keys on both sides and keys that match nothing."""
    left = {
        "k": rng.integers(0, key_range, n_left).astype(np.int64),
        "a": rng.integers(-1000, 1000, n_left).astype(np.int32),
        "f": rng.random(n_left),
    }
    right = {
        "k": rng.integers(key_range // 3, key_range + key_range // 3, n_right).astype(np.int64),
        "b": rng.integers(0, 255, n_right).astype(np.uint8),
    }
    return left, right


def expected_table(left, right, how, left_keys=("k",), right_keys=("k",), suffixes=("_x", "_y")):
    """The reference output as a dict of lists (None for nulls), in the reference's row order, named as
    pandas names a merge's columns: the left table's columns (a key of the same name on both sides once,
    its value from whichever side has the row), then the right table's, suffixes where both sides output
    a name."""
    lr, rr = reference_maps([left[k] for k in left_keys], [right[k] for k in right_keys], how)
    right_too = rr is not None
    shared = {lk: rk for lk, rk in zip(left_keys, right_keys) if lk == rk} if right_too else {}
    left_out = {}
    for c in left:
        if c in shared:
            left_out[c] = [left[c][i].item() if i >= 0 else right[c][j].item() for i, j in zip(lr, rr)]
        else:
            left_out[c] = [left[c][i].item() if i >= 0 else None for i in lr]
    right_out = {c: [right[c][j].item() if j >= 0 else None for j in rr] for c in right if c not in shared} if right_too else {}
    both = set(left_out) & set(right_out)
    out = {(c + suffixes[0] if c in both else c): v for c, v in left_out.items()}
    out.update({(c + suffixes[1] if c in both else c): v for c, v in right_out.items()})
    return out


def rows_of(columns: dict):
    """Sorted rows of a dict of columns (order-free comparison); None sorts before numbers."""
    names = sorted(columns)
    return sorted(zip(*[columns[n] for n in names]), key=lambda r: [(v is not None, v) for v in r])


@pytest.mark.parametrize("how", HOWS)
def test_every_join_kind_as_a_table_matches_the_reference(rng, how):
    left, right = tables(rng)
    got = mgjoin.join(left, right, on="k", how=how, gpus=0)
    want = expected_table(left, right, how)
    assert got.column_names == list(want)
    assert rows_of(got.to_pydict()) == rows_of(want)


@pytest.mark.parametrize("how", HOWS)
def test_every_join_kind_as_gather_maps_matches_the_reference(rng, how):
    left, right = tables(rng)
    left_rows, right_rows = mgjoin.join(left, right, on="k", how=how, output="gather_maps", gpus=0)
    assert left_rows.dtype == np.int64
    want = reference_maps([left["k"]], [right["k"]], how)
    if how in ("semi", "anti"):
        assert right_rows is None
        assert left_rows.tolist() == want[0]  # left table order
    else:
        assert right_rows.dtype == np.int64
        assert as_pairs(left_rows, right_rows) == as_pairs(*want)


@pytest.mark.parametrize("how", HOWS)
def test_every_join_kind_counts_its_rows(rng, how):
    left, right = tables(rng)
    count = mgjoin.join(left, right, on="k", how=how, output="count", gpus=0)
    assert isinstance(count, int)
    assert count == len(reference_maps([left["k"]], [right["k"]], how)[0])


def test_the_readme_example():
    left = {"k": np.array([1, 2, 2, 5]), "v": np.array([10, 20, 21, 50])}
    right = {"k": np.array([2, 5, 7]), "w": np.array([200, 500, 700])}
    assert mgjoin.join(left, right, on="k", gpus=0).to_pydict() == {
        "k": [2, 2, 5], "v": [20, 21, 50], "w": [200, 200, 500]}
    full = mgjoin.join(left, right, on="k", how="full", gpus=0)
    assert full.to_pydict() == {"k": [2, 2, 5, 1, 7], "v": [20, 21, 50, 10, None], "w": [200, 200, 500, None, 700]}


def test_pandas_dataframes_join_like_dicts_of_arrays(rng):
    left, right = tables(rng)
    got = mgjoin.join(pd.DataFrame(left), pd.DataFrame(right), on="k", how="left", gpus=0)
    assert rows_of(got.to_pydict()) == rows_of(expected_table(left, right, "left"))


def test_pandas_nullable_and_datetime_columns(rng):
    left = pd.DataFrame({"k": [1, 2, 3], "v": pd.array([1, None, 3], dtype="Int64"),
                         "t": pd.to_datetime(["2024-01-01", "2024-01-02", "2024-01-03"])})
    right = pd.DataFrame({"k": [2, 3, 3]})
    got = mgjoin.join(left, right, on="k", gpus=0)
    assert got.schema.field("t").type == pa.from_numpy_dtype(left["t"].dtype)  # ns, or us from pandas 3
    assert rows_of({n: got.column(n).to_pylist() for n in ("k", "v")}) == [(2, None), (3, 3), (3, 3)]
    assert got.column("t").to_pylist()[0] == pd.Timestamp("2024-01-02").to_pydatetime()


def test_pyarrow_tables_and_chunked_columns(rng):
    left, right = tables(rng)
    lt = pa.table(left)
    # several chunks: combined (a copy); one chunk: zero-copy
    chunked = pa.Table.from_batches(lt.to_batches(max_chunksize=64))
    assert chunked.column("k").num_chunks > 1
    for table in (lt, chunked):
        got = mgjoin.join(table, pa.table(right), on="k", how="full", gpus=0)
        assert rows_of(got.to_pydict()) == rows_of(expected_table(left, right, "full"))


def test_parquet_round_trip_through_a_file(rng, tmp_path):
    left, right = tables(rng)
    pq.write_table(pa.table(left), tmp_path / "a.parquet", row_group_size=100)  # several row groups
    pq.write_table(pa.table(right), tmp_path / "b.parquet")
    got = mgjoin.join(pq.read_table(tmp_path / "a.parquet"), pq.read_table(tmp_path / "b.parquet"), on="k", gpus=0)
    assert rows_of(got.to_pydict()) == rows_of(expected_table(left, right, "inner"))
    pq.write_table(got, tmp_path / "out.parquet")  # the output writes as it is
    assert pq.read_table(tmp_path / "out.parquet").equals(got)


def test_arrow_ipc_files(rng, tmp_path):
    left, right = tables(rng)
    feather.write_feather(pa.table(left), tmp_path / "a.arrow")
    feather.write_feather(pa.table(right), tmp_path / "b.arrow", compression="uncompressed")
    got = mgjoin.join(feather.read_table(tmp_path / "a.arrow"), feather.read_table(tmp_path / "b.arrow"),
                      on="k", how="right", gpus=0)
    assert rows_of(got.to_pydict()) == rows_of(expected_table(left, right, "right"))


@pytest.mark.parametrize("how", HOWS)
def test_composite_keys(rng, how):
    n, m = 400, 300
    left = {"year": rng.integers(2000, 2004, n).astype(np.int16), "id": rng.integers(-20, 20, n).astype(np.int32),
            "v": rng.random(n)}
    right = {"y": rng.integers(2001, 2005, m).astype(np.int16), "i": rng.integers(-20, 20, m).astype(np.int32),
             "w": rng.integers(0, 9, m).astype(np.uint16)}
    got = mgjoin.join(left, right, left_on=["year", "id"], right_on=["y", "i"], how=how, gpus=0)
    want = expected_table(left, right, how, ("year", "id"), ("y", "i"))
    assert got.column_names == list(want) == ["year", "id", "v"] + (["y", "i", "w"] if how not in ("semi", "anti") else [])
    assert rows_of(got.to_pydict()) == rows_of(want)
    assert got.schema.field("year").type == pa.int16()


def test_outer_joins_have_nulls_where_a_side_is_missing():
    left = {"k": np.array([1, 2], np.int32), "v": np.array([1.5, 2.5], np.float32)}
    right = {"k": np.array([2, 3], np.int32), "ok": np.array([True, False])}
    got = mgjoin.join(left, right, on="k", how="full", gpus=0)
    assert got.column_names == ["k", "v", "ok"]  # no validity columns: they are the nulls
    assert got.to_pydict() == {"k": [2, 1, 3], "v": [2.5, 1.5, None], "ok": [True, None, False]}
    assert got.column("v").null_count == 1


def test_payload_nulls_survive_the_join():
    left = pa.table({"k": pa.array([1, 2, 3]), "v": pa.array([10, None, 30], pa.int32())})
    right = pa.table({"k": pa.array([1, 2, 4]), "w": pa.array([None, 2.0, 4.0])})
    got = mgjoin.join(left, right, on="k", how="full", gpus=0)
    assert rows_of(got.to_pydict()) == rows_of(
        {"k": [1, 2, 3, 4], "v": [10, None, 30, None], "w": [None, 2.0, None, 4.0]})
    assert got.column_names == ["k", "v", "w"]


def test_temporal_keys_and_payloads_keep_their_types():
    left = pa.table({"t": pa.array([1, 2, 3], pa.timestamp("us")), "d": pa.array([10, 20, 30], pa.date32())})
    right = pa.table({"t": pa.array([3, 1], pa.timestamp("us")), "dur": pa.array([5, 6], pa.duration("s"))})
    got = mgjoin.join(left, right, on="t", gpus=0)
    assert got.schema.field("t").type == pa.timestamp("us")
    assert got.schema.field("d").type == pa.date32()
    assert got.schema.field("dur").type == pa.duration("s")
    assert sorted(got.column("d").cast(pa.int32()).to_pylist()) == [10, 30]


def test_chosen_payload_columns_in_their_order(rng):
    left, right = tables(rng)
    got = mgjoin.join(left, right, on="k", left_columns=["f", "a"], right_columns=[], gpus=0)
    assert got.column_names == ["k", "f", "a"]  # the key first, then the chosen columns in their order


def test_semi_and_anti_joins_output_left_columns_only(rng):
    left, right = tables(rng)
    for how in ("semi", "anti"):
        assert mgjoin.join(left, right, on="k", how=how, gpus=0).column_names == ["k", "a", "f"]


def test_empty_tables():
    empty = {"k": np.array([], np.int64), "v": np.array([], np.float64)}
    some = {"k": np.array([1, 2], np.int64), "v": np.array([1.0, 2.0])}
    assert mgjoin.join(empty, some, on="k", gpus=0).num_rows == 0
    assert mgjoin.join(some, empty, on="k", how="left", gpus=0).to_pydict() == {
        "k": [1, 2], "v_x": [1.0, 2.0], "v_y": [None, None]}
    assert mgjoin.join(empty, empty, on="k", output="count", gpus=0) == 0
    left_rows, right_rows = mgjoin.join(empty, some, on="k", how="left", output="gather_maps", gpus=0)
    assert left_rows.dtype == right_rows.dtype == np.int64 and len(left_rows) == len(right_rows) == 0


def test_info_reports_the_run(rng):
    left, right = tables(rng)
    info = {}
    mgjoin.join(left, right, on="k", gpus=0, info=info)
    assert info["executor"].startswith("CPU")
    assert info["count"] > 0 and info["seconds"] >= info["join_seconds"] >= 0
    assert {p["name"] for p in info["phases"]} >= {"sort", "join"}
    mgjoin.join(left, right, on="k", how="left", gpus=0, info=info)  # late materialization: gathers said
    assert info["materialization"] == "late" and info["gathers"] == "gathers: CPU (no GPU)"
    mgjoin.join(left, right, on="k", how="left", gpus=0, gather_on="cpu", info=info)
    assert info["gathers"] == "gathers: CPU (asked for)"
    with pytest.raises(ValueError, match="gather_on 'disk': expected auto, cpu or gpus"):
        mgjoin.join(left, right, on="k", gpus=0, gather_on="disk")


def test_progress_reports_reach_a_callable_and_the_bar(rng, capsys):
    left, right = tables(rng)
    seen = []
    mgjoin.join(left, right, on="k", gpus=0, progress=lambda phase, fraction: seen.append((phase, fraction)))
    assert seen and all(0 <= f <= 1 for _, f in seen)
    assert seen[-1][1] == 1.0
    mgjoin.join(left, right, on="k", gpus=0, progress=True)  # tqdm's bar, or the stderr line
    # A join shorter than half a second leaves no trace on stderr.
    assert capsys.readouterr().err == ""


def test_the_bar_shows_a_long_join_once_with_its_phase(capsys, monkeypatch):
    from mgjoin import _progress

    clock = [100.0]
    monkeypatch.setattr(_progress.time, "monotonic", lambda: clock[0])
    with _progress.progress_callback(True) as bar:
        bar("sort", 0.25)
        clock[0] += 1.0
        time.sleep(0.6)  # tqdm's own clock decides its delay
        bar("sort", 0.5)
    err = capsys.readouterr().err
    assert "mgjoin sort" in err or "mgjoin: sort" in err, err
    assert ": :" not in err, err


def test_an_error_in_the_progress_callable_stops_the_join(rng):
    left, right = tables(rng)

    def fail(phase, fraction):
        raise ZeroDivisionError("from the callback")

    with pytest.raises(ZeroDivisionError, match="from the callback"):
        mgjoin.join(left, right, on="k", gpus=0, progress=fail)
    assert mgjoin.join(left, right, on="k", gpus=0, output="count") > 0  # the module is still usable
