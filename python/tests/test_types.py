"""Columns of every Arrow type (issue 42, item 1): as payloads through each join kind, with nulls, sliced and
chunked, each keeping its type; dates, times, timestamps, decimals and fixed_size_binary as keys; the types
and key pairs that are refused. The reference rows come from DuckDB's join of the keys and the inputs'
own values (to_pylist), never from mgjoin."""
from __future__ import annotations

import re
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest

import mgjoin
from conftest import duckdb_maps, where  # noqa: F401 (a fixture)

duckdb = pytest.importorskip("duckdb")

HOWS = ["inner", "left", "right", "full", "semi", "anti", "right_semi", "right_anti"]

# Every payload type: those the engine carries as integers of their width, and those pyarrow gathers.
TYPES = [
    pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint16(), pa.uint32(), pa.uint64(),
    pa.float16(), pa.float32(), pa.float64(), pa.bool_(),
    pa.date32(), pa.date64(), pa.time32("s"), pa.time32("ms"), pa.time64("us"), pa.time64("ns"),
    pa.timestamp("s"), pa.timestamp("ms"), pa.timestamp("us", tz="UTC"), pa.timestamp("ns", tz="Europe/Paris"),
    pa.duration("s"), pa.duration("ns"),
    pa.decimal32(7, 2), pa.decimal64(15, 3), pa.decimal128(20, 4), pa.decimal256(40, 5),
    pa.binary(1), pa.binary(2), pa.binary(4), pa.binary(8), pa.binary(3), pa.binary(16),
    pa.string(), pa.large_string(), pa.string_view(), pa.binary(), pa.large_binary(), pa.binary_view(),
    pa.dictionary(pa.int32(), pa.string()), pa.list_(pa.int32()), pa.struct([("a", pa.int16())]),
]

_DAY_MS = 86_400_000
_UNIT = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}


def values_of(rng, t, n, null_share=0.15):
    """n random values of type t, null_share of them null, strings with empty ones among them."""
    null = rng.random(n) < null_share
    ints = rng.integers(-50_000, 50_000, n)
    if pa.types.is_integer(t):
        info = np.iinfo(t.to_pandas_dtype())
        return pa.array(rng.integers(info.min, info.max, n, endpoint=True, dtype=t.to_pandas_dtype()), t, mask=null)
    if pa.types.is_floating(t):
        return pa.array((rng.random(n) * 100 - 50).astype(t.to_pandas_dtype()), t, mask=null)
    if pa.types.is_boolean(t):
        return pa.array(rng.random(n) < 0.5, t, mask=null)
    if t == pa.date32():
        return pa.array(ints.astype(np.int32), pa.int32(), mask=null).view(t)
    if t == pa.date64():
        return pa.array(ints * _DAY_MS, pa.int64(), mask=null).view(t)
    if pa.types.is_time(t):  # within a day
        day = 86_400 * _UNIT[t.unit]
        storage = pa.int32() if t.bit_width == 32 else pa.int64()
        step = 1000 if t.unit == "ns" else 1  # datetime.time, as to_pandas gives them, holds microseconds
        return pa.array(rng.integers(0, day // step, n) * step, storage, mask=null).view(t)
    if pa.types.is_timestamp(t) or pa.types.is_duration(t):
        return pa.array(rng.integers(-10**9, 10**9, n) * _UNIT[t.unit], pa.int64(), mask=null).view(t)
    if pa.types.is_decimal(t):
        if t.bit_width <= 64:
            limit = 10 ** t.precision - 1
            return pa.array(rng.integers(-limit, limit, n, endpoint=True), getattr(pa, f"int{t.bit_width}")(),
                            mask=null).view(t)
        return pa.array([None if z else Decimal(int(v)).scaleb(-t.scale) * 7 for v, z in zip(ints, null)], t)
    if pa.types.is_fixed_size_binary(t):
        return pa.array([None if z else rng.bytes(t.byte_width) for z in null], t)
    words = ["", "a", "bb", "ccc", "a longer string of more than twelve bytes", "ünïcödé"]
    text = [None if z else words[i % len(words)] + str(i % 7) * (i % 3) for i, z in enumerate(null)]
    if pa.types.is_dictionary(t):
        return pa.array(text).dictionary_encode()
    if pa.types.is_list(t):
        return pa.array([None if z else [int(v), int(v) + 1] for v, z in zip(ints, null)], t)
    if pa.types.is_struct(t):
        return pa.array([None if z else {"a": int(v) % 1000} for v, z in zip(ints, null)], t)
    if t in (pa.binary(), pa.large_binary(), pa.binary_view()):
        return pa.array([None if s is None else s.encode() for s in text], t)
    return pa.array(text, t)


def typed_tables(rng, n_left=160, n_right=120, key_range=60, key_nulls=0.0):
    """Two tables of an int64 key (key_nulls of it null) and a column of every type each (l0.. and r0..):
    the left one sliced from a longer one (its arrays start at an offset), the right one in two chunks."""
    pad = 5
    left = {"k": pa.array(rng.integers(0, key_range, n_left + pad), mask=rng.random(n_left + pad) < key_nulls)}
    left.update({f"l{i}": values_of(rng, t, n_left + pad) for i, t in enumerate(TYPES)})
    right = {"k": pa.array(rng.integers(key_range // 3, key_range + key_range // 3, n_right),
                           mask=rng.random(n_right) < key_nulls)}
    right.update({f"r{i}": values_of(rng, t, n_right) for i, t in enumerate(TYPES)})
    left_table = pa.table(left).slice(pad - 2, n_left)
    right_table = pa.Table.from_batches(pa.table(right).to_batches(max_chunksize=n_right // 2 + 1))
    return left_table, right_table


def expected_rows(left, right, maps, key="k"):
    """The rows of the output by the gather maps, from the tables' own Python values (None where a side
    is missing; a key of both sides' name from whichever side has the row), sorted by their repr."""
    lr, rr = maps
    sides = [(left, lr), (right, rr)] if lr is not None and rr is not None else [(left, lr) if lr is not None else (right, rr)]
    both = len(sides) == 2
    columns = []
    for side, (table, rows) in enumerate(sides):
        for name in table.column_names:
            if name == key and both and side == 1:
                continue
            values = table.column(name).to_pylist()
            if name == key and both:
                other = right.column(key).to_pylist()
                columns.append([values[i] if i >= 0 else other[j] for i, j in zip(lr, rr)])
            else:
                columns.append([values[i] if i >= 0 else None for i in rows])
    return sorted(map(repr, zip(*columns)))


def got_rows(table):
    return sorted(map(repr, zip(*[table.column(n).to_pylist() for n in table.column_names])))


@pytest.mark.parametrize("key_nulls", [0.0, 0.1])
@pytest.mark.parametrize("how", HOWS)
def test_every_type_as_payload_through_each_join_kind(rng, where, how, key_nulls):
    left, right = typed_tables(rng, key_nulls=key_nulls)  # null keys: the columns gathered by the maps
    got = mgjoin.join(left, right, on="k", how=how, **where)
    maps = duckdb_maps([left.column("k")], [right.column("k")], how)
    assert got_rows(got) == expected_rows(left, right, maps)
    inputs = {f.name: f.type for t in (left, right) for f in t.schema}
    for field in got.schema:
        assert field.type == inputs[field.name], field.name


@pytest.mark.parametrize("t", [pa.string(), pa.binary()])
def test_a_take_past_the_offsets_limit_is_chunks_of_its_type(rng, t):
    # What a string or binary output past 2 GiB becomes (the test below joins one): pieces of consecutive
    # rows each within the limit (64 bytes here; the longest value has 43), of the input's type, the values
    # pyarrow's own take gives. Chunked input, nulls, empty values and null (missing-row) indices.
    from mgjoin._tables import take_in_pieces

    array = pa.chunked_array([values_of(rng, t, 70), values_of(rng, t, 50)])
    rows = rng.integers(0, len(array), 300)
    indices = pa.array(rows, mask=rng.random(300) < 0.1)
    got = take_in_pieces(array, indices, 64)
    assert got.type == t and got.num_chunks > 10
    assert got.to_pylist() == array.take(indices).to_pylist()
    for chunk in got.chunks:
        offsets = np.frombuffer(chunk.buffers()[1], np.int32, len(chunk) + 1, chunk.offset * 4)
        assert offsets[-1] - offsets[0] <= 64 or len(chunk) == 1


def test_a_take_goes_in_pieces_only_where_its_bound_may_pass_the_offsets_limit():
    # The bound is the longest value times the rows taken (pyarrow 25's take wraps its offsets past 2 GiB
    # instead of refusing): 10-byte values, 2^27 rows may hold 1.34e9 bytes (under 2^31 - 1), 2^28 rows 2.7e9.
    from mgjoin import _tables

    ten = pa.array(["x" * 10, None, ""])
    assert not _tables._may_pass_offsets(ten, 2**27)
    assert _tables._may_pass_offsets(ten, 2**28)
    assert not _tables._may_pass_offsets(pa.array([None, None], pa.string()), 2**40)
    assert not _tables._may_pass_offsets(pa.array([], pa.binary()), 2**40)
    got = _tables.take(ten, pa.array([2, 0, 0, 1]))
    assert isinstance(got, pa.Array) and got.to_pylist() == ["", "x" * 10, "x" * 10, None]


def test_a_string_output_past_two_gib_keeps_its_type(where):
    # One left row of a 1 MiB string meets 2100 right rows: 2.05 GiB of output values, past what one
    # string array (32-bit offsets) holds. pyarrow's own take of it fails ("overflowed binary array capacity").
    big = "x" * (1 << 20)
    left = pa.table({"k": pa.array([1, 2], pa.int64()), "s": pa.array([big, None], pa.string())})
    right = pa.table({"k": pa.array([1] * 2100 + [2], pa.int64()), "v": pa.array(np.arange(2101))})
    got = mgjoin.join(left, right, on="k", **where)
    column = got.column("s")
    assert got.num_rows == 2101 and column.type == pa.string() and column.num_chunks >= 2
    assert column.null_count == 1
    lengths = np.concatenate([np.diff(np.frombuffer(c.buffers()[1], np.int32, len(c) + 1, c.offset * 4)) for c in column.chunks])
    assert sorted(lengths.tolist()) == [0] + [1 << 20] * 2100
    assert all(c[0].as_py() in (big, None) for c in column.chunks)
    assert sorted(got.column("v").to_pylist()) == list(range(2101))


def test_types_are_kept_through_gather_maps_of_the_same_join(rng):
    left, right = typed_tables(rng, 40, 30, 20)
    lr, rr = mgjoin.join(left, right, on="k", how="full", output="gather_maps", gpus=0)
    want = duckdb_maps([left.column("k")], [right.column("k")], "full")
    assert sorted(zip(lr.tolist(), rr.tolist())) == sorted(zip(want[0].tolist(), want[1].tolist()))


def test_payloads_only_some_columns_chosen_and_numpy_float16(rng, where):
    left = {"k": np.arange(6), "h": np.array([0.5, -1, 2, np.inf, np.nan, 3], dtype=np.float16)}
    right = pa.table({"k": [5, 1, 1, 9], "s": pa.array(["", None, "x", "y"], pa.large_string()),
                      "d": pa.array([1, 2, None, 4], pa.int64()).view(pa.decimal64(12, 2))})
    got = mgjoin.join(left, right, on="k", how="left", right_columns=["s"], **where)
    assert got.schema.field("h").type == pa.float16() and got.schema.field("s").type == pa.large_string()
    assert got.column_names == ["k", "h", "s"]
    assert got_rows(got) == sorted(map(repr, [(0, 0.5, None), (1, -1.0, None), (1, -1.0, "x"), (2, 2.0, None),
                                               (3, np.inf, None), (4, np.nan, None), (5, 3.0, "")]))


def test_sliced_arrays_keep_their_offsets(rng, where):
    base = pa.array([f"s{i}" if i % 4 else "" for i in range(20)], pa.string())
    nums = pa.array([i if i % 3 else None for i in range(20)], pa.int32()).view(pa.date32())
    left = pa.table({"k": pa.array(np.arange(20) % 5), "s": base, "d": nums}).slice(7, 9)
    right = pa.table({"k": pa.array([1, 2, 3, 3])}).slice(1)
    got = mgjoin.join(left, right, on="k", **where)
    maps = duckdb_maps([left.column("k")], [right.column("k")], "inner")
    assert got_rows(got) == expected_rows(left, right, maps)


@pytest.mark.parametrize("key_type", [
    pa.date32(), pa.date64(), pa.time32("ms"), pa.time64("ns"), pa.timestamp("ms"), pa.timestamp("us", tz="UTC"),
    pa.duration("s"), pa.decimal32(9, 2), pa.decimal64(18, 4), pa.binary(4), pa.binary(8)])
@pytest.mark.parametrize("how", ["inner", "full", "anti"])
def test_dates_timestamps_and_decimals_as_keys(rng, where, key_type, how):
    n, m = 200, 150
    left_key = values_of(rng, key_type, n)
    right_key = pa.concat_arrays([left_key.slice(0, m // 2), values_of(rng, key_type, m - m // 2)])
    left = pa.table({"k": left_key, "v": pa.array(np.arange(n))})
    right = pa.table({"k": right_key, "w": pa.array(np.arange(m) * 10)})
    got = mgjoin.join(left, right, on="k", how=how, **where)
    assert got.schema.field("k").type == key_type

    def storage(array):  # DuckDB compares the keys by their integers (equal values, equal integers)
        return array.cast(pa.binary()) if pa.types.is_fixed_size_binary(key_type) else \
            array.view(getattr(pa, f"int{key_type.bit_width}")())

    maps = duckdb_maps([storage(left_key)], [storage(right_key)], how)
    assert got_rows(got) == expected_rows(left, right, maps)


def test_decimal_keys_of_one_scale_join_whatever_their_precision(where):
    left = pa.table({"k": pa.array([100, 250, -5, None], pa.int32()).view(pa.decimal32(5, 2))})
    right = pa.table({"k": pa.array([250, 7, -5], pa.int64()).view(pa.decimal64(17, 2)), "w": [1, 2, 3]})
    got = mgjoin.join(left, right, on="k", how="full", **where)
    assert got.schema.field("k").type == pa.decimal64(17, 2)
    assert got_rows(got) == sorted(map(repr, [(Decimal("2.50"), 1), (Decimal("-0.05"), 3), (Decimal("1.00"), None),
                                               (None, None), (Decimal("0.07"), 2)]))


@pytest.mark.parametrize("left_type,right_type,why", [
    (pa.timestamp("s"), pa.timestamp("ms"), ""), (pa.timestamp("us"), pa.timestamp("us", tz="UTC"), ""),
    (pa.timestamp("us", tz="UTC"), pa.timestamp("us", tz="Europe/Paris"), ""), (pa.date32(), pa.date64(), ""),
    (pa.decimal64(12, 2), pa.decimal64(12, 3), "decimals of different scales"),
    (pa.string(), pa.binary(), "string and binary keys do not compare"),
    (pa.large_string(), pa.binary(4), "string and binary keys do not compare"),
    (pa.binary(4), pa.binary(8), ""), (pa.date32(), pa.int32(), "")])
def test_keys_that_do_not_compare_name_both_columns(left_type, right_type, why):
    left = pa.table({"a": pa.array([], left_type)})
    right = pa.table({"b": pa.array([], right_type)})
    message = f"key types differ: left column 'a' is {left_type}, right column 'b' is {right_type}"
    with pytest.raises(ValueError, match=re.escape(message) + ".*" + why):
        mgjoin.join(left, right, left_on="a", right_on="b", gpus=0)


@pytest.mark.parametrize("key_type", [pa.float16(), pa.list_(pa.int8()), pa.dictionary(pa.int32(), pa.int64()),
                                      pa.struct([("a", pa.int16())])])
def test_keys_of_types_the_engine_cannot_compare_are_named(key_type):
    table = pa.table({"k": pa.array([], key_type)})
    with pytest.raises(ValueError, match=re.escape(f"left key column 'k': unsupported type {key_type}")):
        mgjoin.join(table, table, on="k", gpus=0)


def test_a_payload_of_a_type_pyarrow_cannot_gather_is_named_before_the_join():
    ree = pa.RunEndEncodedArray.from_arrays(pa.array([2, 3], pa.int32()), pa.array([7, 8]))
    left = pa.table({"k": pa.array([1, 2, 3]), "r": ree})
    with pytest.raises(ValueError, match=r"left column 'r': unsupported type run_end_encoded"):
        mgjoin.join(left, {"k": np.array([1])}, on="k", gpus=0)
    # unused, it is never looked at
    assert mgjoin.join(left, {"k": np.array([1])}, on="k", left_columns=[], gpus=0).column_names == ["k"]


def test_the_result_converts_to_pandas(rng):
    left, right = typed_tables(rng, 30, 20, 10)
    frame = mgjoin.join(left, right, on="k", how="left", gpus=0, to="pandas")
    assert len(frame.columns) == 1 + 2 * len(TYPES)
