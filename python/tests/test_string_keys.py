"""String and binary keys (issue 44, item 2), which join() turns into codes of a dictionary both sides
share: every join kind and output form against references that are not mgjoin, a Python dict join
(conftest.reference_maps, with SQL's nulls) and DuckDB where it is installed, on random strings (the seed is
in pytest's header: MGJOIN_TEST_SEED=N replays it) and adversarial ones (one value, empty strings, long
shared prefixes), in every layout a key comes in (string, large_string, string_view, binary, large_binary,
binary_view, NumPy S and U, pandas object and str columns, categories, sliced and chunked arrays), alone
and in composite keys; the output's key columns are checked value by value and type by type."""
from __future__ import annotations

import re
from decimal import Decimal

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import mgjoin
from conftest import as_pairs, duckdb_maps, reference_maps, where  # noqa: F401 (a fixture)

try:
    import duckdb  # noqa: F401 (the second reference, where installed)

    HAVE_DUCKDB = True
except ImportError:
    HAVE_DUCKDB = False

HOWS = ["inner", "left", "right", "full", "semi", "anti", "right_semi", "right_anti"]
LETTERS = list("abcdefghijklmnopqrstuvwxyz0123456789") + ["é", "ß", "中", "\U0001f600"]


def random_strings(rng, count, low=16, high=32, prefix=""):
    """`count` distinct random strings of low..high characters after `prefix`."""
    out: set[str] = set()
    while len(out) < count:
        out.add(prefix + "".join(rng.choice(LETTERS, rng.integers(low, high + 1))))
    return sorted(out)


def drawn(rng, pool, n, low, high, null_share=0.0):
    """n values drawn from pool[low:high] (duplicates, and matches where the two sides' ranges overlap),
    null_share of them null."""
    picks = [pool[i] for i in rng.integers(low, high, n)]
    return [None if r < null_share else v for v, r in zip(picks, rng.random(n))]


def values(column):
    """An input key column's values as Python objects, None for a null."""
    if isinstance(column, np.ndarray):
        return column.tolist()
    if isinstance(column, pd.Series):
        return [None if v is None or v is pd.NA or (isinstance(v, float) and v != v) else v for v in column.tolist()]
    return column.to_pylist()


def arrow_type(column):
    """The type mgjoin outputs an input key column as: its own, as pyarrow reads NumPy and pandas ones
    (NumPy S as binary, U as string)."""
    return column.type if isinstance(column, (pa.Array, pa.ChunkedArray)) else pa.array(column).type


def for_duckdb(column):
    """An input key column as one pyarrow array of a type DuckDB reads: views as their large types,
    dictionaries decoded, fixed_size_binary as binary."""
    array = pa.array(column) if not isinstance(column, (pa.Array, pa.ChunkedArray)) else column
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks() if array.num_chunks else pa.array([], array.type)
    t = array.type
    if pa.types.is_dictionary(t):
        array, t = array.cast(t.value_type), t.value_type
    if str(t) == "string_view":
        return array.cast(pa.large_string())
    if str(t) == "binary_view" or pa.types.is_fixed_size_binary(t):
        return array.cast(pa.large_binary())
    return array


def _object_column(items):
    column = np.empty(len(items), dtype=object)
    column[:] = items
    return column


def reference(left_keys, right_keys, how, nulls_equal=False):
    """The dict join's maps, with SQL's nulls: a row with a null component matches nothing (a value of
    its own), unless nulls_equal, where None equals None."""
    sides = []
    for keys in (left_keys, right_keys):
        columns = [values(k) for k in keys]
        if not nulls_equal:
            rows = [any(c[i] is None for c in columns) for i in range(len(columns[0]))]
            columns = [[object() if null else v for v, null in zip(c, rows)] for c in columns]
        sides.append([_object_column(c) for c in columns])
    return reference_maps(sides[0], sides[1], how)


def pairs(maps):
    left_rows, right_rows = maps
    return as_pairs(right_rows, None) if left_rows is None else as_pairs(left_rows, right_rows)


def shared_type(left, right):
    """The output type of a key both sides share: theirs; where theirs differ, their values' type where
    that is one (a category of strings and strings: string), else the large one."""
    if left == right:
        return left
    left, right = (t.value_type if pa.types.is_dictionary(t) else t for t in (left, right))
    if left == right and str(left) not in ("string_view", "binary_view"):
        return left
    return pa.large_string() if left in (pa.string(), pa.large_string(), pa.string_view()) else pa.large_binary()


def check(left_keys, right_keys, how, where, nulls_equal=False, same_names=True, duck=True):
    """The join of tables of these key columns and their row numbers, as gather maps, a count and a
    table, against the dict reference and DuckDB (unless duck=False); the table's key columns hold the
    input's values at the rows, of the input's types."""
    names = [f"k{i}" for i in range(len(left_keys))]
    right_names = names if same_names else [f"r{i}" for i in range(len(right_keys))]
    left = dict(zip(names, left_keys), lrn=np.arange(len(left_keys[0])))
    right = dict(zip(right_names, right_keys), rrn=np.arange(len(right_keys[0])))
    on = dict(left_on=names, right_on=right_names, how=how, nulls_equal=nulls_equal, **where)
    want = reference(left_keys, right_keys, how, nulls_equal)
    if HAVE_DUCKDB and duck:
        duck = duckdb_maps([for_duckdb(k) for k in left_keys], [for_duckdb(k) for k in right_keys], how, nulls_equal)
        assert pairs(duck) == pairs(want), "the references differ"
    got = mgjoin.join(left, right, output="gather_maps", **on)
    assert pairs(got) == pairs(want), how
    assert mgjoin.join(left, right, output="count", **on) == len(want[0] if want[0] is not None else want[1])

    table = mgjoin.join(left, right, **on)
    rows = {name: np.asarray(table.column(name).fill_null(-1).to_numpy(), dtype=np.int64)
            for name in ("lrn", "rrn") if name in table.column_names}
    maps = (rows.get("lrn"), rows.get("rrn"))
    assert pairs(maps) == pairs(want), how
    shared = same_names and how not in ("semi", "anti", "right_semi", "right_anti")
    for side, side_names, keys, rn in ((0, names, left_keys, "lrn"), (1, right_names, right_keys, "rrn")):
        if rn not in rows or (side == 1 and shared):
            continue
        for i, name in enumerate(side_names):
            want_type = arrow_type(keys[i])
            own_values = values(keys[i])
            want_values = [own_values[r] if r >= 0 else None for r in rows[rn]]
            if shared:  # one column: the left value where the left row is there, else the right one
                want_type = shared_type(want_type, arrow_type(right_keys[i]))
                right_values = values(right_keys[i])
                want_values = [v if r >= 0 else right_values[s] for v, r, s in zip(want_values, rows[rn], rows["rrn"])]
            assert table.schema.field(name).type == want_type, name
            assert table.column(name).to_pylist() == want_values, name


# --- Random and adversarial strings ---------------------------------------------------------------


@pytest.mark.parametrize("same_names", [True, False], ids=["on", "left_on-right_on"])
@pytest.mark.parametrize("how", HOWS)
def test_random_strings_join_as_the_references_do(rng, where, how, same_names):
    pool = random_strings(rng, 600)
    left = pa.array(drawn(rng, pool, 2000, 0, 400))
    right = pa.array(drawn(rng, pool, 1500, 200, 600))
    check([left], [right], how, where, same_names=same_names)


ADVERSARIAL = {
    "one value on both sides": (["x" * 24] * 300, ["x" * 24] * 40),
    "empty strings": (["", "", "a", "", "b", "ab"] * 30, ["", "b", "", "c"] * 20),
    "long shared prefixes": ([f"{'p' * 200}{i % 37}" for i in range(400)], [f"{'p' * 200}{i % 53}" for i in range(300)]),
    "prefixes of each other": (["a" * (i % 40) for i in range(200)], ["a" * (i % 25 + 20) for i in range(120)]),
    "differing in the last byte": ([f"{'q' * 31}{chr(65 + i % 20)}" for i in range(250)],
                                   [f"{'q' * 31}{chr(75 + i % 20)}" for i in range(250)]),
    "no match": (["left"] * 50, ["right"] * 50),
}


@pytest.mark.parametrize("case", ADVERSARIAL)
@pytest.mark.parametrize("how", HOWS)
def test_adversarial_strings(where, how, case):
    left, right = ADVERSARIAL[case]
    check([pa.array(left)], [pa.array(right)], how, where)


def test_random_binary_with_nul_bytes(rng, where):
    pool = sorted({bytes(rng.integers(0, 4, rng.integers(0, 24)).astype(np.uint8)) for _ in range(500)})
    left = pa.array(drawn(rng, pool, 800, 0, len(pool) * 2 // 3), pa.binary())
    right = pa.array(drawn(rng, pool, 700, len(pool) // 3, len(pool)), pa.large_binary())
    for how in HOWS:
        check([left], [right], how, where)


# --- Null keys -------------------------------------------------------------------------------------


@pytest.mark.parametrize("nulls_equal", [False, True])
@pytest.mark.parametrize("how", HOWS)
def test_null_string_keys_follow_sql(rng, where, how, nulls_equal):
    pool = random_strings(rng, 80, 0, 20)
    left = pa.array(drawn(rng, pool, 400, 0, 60, null_share=0.15))
    right = pa.array(drawn(rng, pool, 300, 30, 80, null_share=0.15), pa.string_view())
    check([left], [right], how, where, nulls_equal=nulls_equal)


def test_null_keys_inner_drops_them_nulls_equal_matches_them_left_and_full_keep_them(where):
    left = pa.table({"k": pa.array(["a", None, "b", None]), "v": [1, 2, 3, 4]})
    right = pa.table({"k": pa.array([None, "a", "c"]), "w": [10, 20, 30]})
    rows = lambda t: sorted(map(repr, t.to_pylist()))  # noqa: E731
    assert rows(mgjoin.join(left, right, on="k", **where)) == rows(pa.table({"k": ["a"], "v": [1], "w": [20]}))
    assert mgjoin.join(left, right, on="k", nulls_equal=True, output="count", **where) == 3
    got = mgjoin.join(left, right, on="k", how="full", **where)
    assert got.schema.field("k").type == pa.string()
    assert rows(got) == sorted(map(repr, [{"k": "a", "v": 1, "w": 20}, {"k": None, "v": 2, "w": None},
                                          {"k": "b", "v": 3, "w": None}, {"k": None, "v": 4, "w": None},
                                          {"k": None, "v": None, "w": 10}, {"k": "c", "v": None, "w": 30}]))
    got = mgjoin.join(left, right, on="k", how="left", nulls_equal=True, **where)
    assert rows(got) == sorted(map(repr, [{"k": "a", "v": 1, "w": 20}, {"k": None, "v": 2, "w": 10},
                                          {"k": "b", "v": 3, "w": None}, {"k": None, "v": 4, "w": 10}]))


# --- Layouts ---------------------------------------------------------------------------------------


def layouts(strings):
    """The same values in each layout a key may come in, by name."""
    text = pa.array(strings)
    data = pa.array([None if s is None else s.encode() for s in strings], pa.binary())
    out = {
        "string": text, "large_string": text.cast(pa.large_string()), "string_view": text.cast(pa.string_view()),
        "binary": data, "large_binary": data.cast(pa.large_binary()), "binary_view": data.cast(pa.binary_view()),
        "category": text.dictionary_encode(),
    }
    if None not in strings:
        out.update({
            "numpy U": np.array(strings), "numpy S": np.array([s.encode() for s in strings]),
            "pandas object": pd.Series(strings, dtype=object), "pandas str": pd.Series(strings, dtype="string"),
            "pandas category": pd.Series(strings, dtype="category"),
        })
    return out


TEXT = ["string", "large_string", "string_view", "category", "numpy U", "pandas object", "pandas str",
        "pandas category"]
BINARY = ["binary", "large_binary", "binary_view", "numpy S"]


@pytest.mark.parametrize("left_layout,right_layout", [(t, t) for t in TEXT + BINARY] + [
    ("string", "large_string"), ("string_view", "string"), ("numpy U", "pandas object"), ("category", "string"),
    ("pandas str", "numpy U"), ("binary", "large_binary"), ("numpy S", "binary_view"), ("binary_view", "binary")])
@pytest.mark.parametrize("how", ["full", "right_anti"])
def test_every_layout_joins_and_keeps_its_type(rng, where, how, left_layout, right_layout):
    pool = random_strings(rng, 50, 1, 20)
    left = layouts(drawn(rng, pool, 300, 0, 35))[left_layout]
    right = layouts(drawn(rng, pool, 200, 15, 50))[right_layout]
    check([left], [right], how, where)
    check([left], [right], how, where, same_names=False)


def test_sliced_arrays_join_from_their_offsets(rng, where):
    pool = random_strings(rng, 40, 0, 30)
    left = pa.array(drawn(rng, pool, 500, 0, 30, null_share=0.1))
    right = pa.array(drawn(rng, pool, 400, 10, 40, null_share=0.1), pa.large_string())
    for how in HOWS:
        check([left.slice(37, 300)], [right.slice(101, 250)], how, where)
        check([left.cast(pa.string_view()).slice(3, 400)], [right.slice(0, 11)], how, where, nulls_equal=True)


def test_chunked_arrays_of_several_chunks(rng, where):
    pool = random_strings(rng, 60, 0, 25)
    chunks = [pa.array(drawn(rng, pool, n, 0, 40, null_share=0.1), pa.string()) for n in (100, 0, 250, 7)]
    left = pa.chunked_array(chunks)
    right = pa.chunked_array([pa.array(drawn(rng, pool, n, 20, 60), pa.large_string()) for n in (90, 130)])
    for how in HOWS:
        check([left], [right], how, where)
        check([left.slice(50, 260)], [right], how, where)  # a slice across chunks
    check([pa.chunked_array(chunks, pa.string()).cast(pa.string_view())], [right], "full", where)
    table = mgjoin.join(pa.table({"k": left}), pa.table({"k": right}), on="k", how="left", **where)
    assert table.schema.field("k").type == pa.large_string()


def test_one_side_empty_and_both(rng, where):
    full = pa.array(drawn(rng, random_strings(rng, 20), 100, 0, 20, null_share=0.1))
    empty = pa.array([], pa.string())
    nulls = pa.array([None, None], pa.string())
    for how in HOWS:
        for left, right in ((full, empty), (empty, full), (nulls, full)):
            check([left], [right], how, where)
    check([empty], [empty], "full", where)
    check([nulls], [full], "full", where, nulls_equal=True)


def test_a_pandas_frame_with_an_object_key_column(where):
    left = pd.DataFrame({"name": ["ann", "bob", "ann", "cy", None], "v": [1, 2, 3, 4, 5]})
    right = pd.DataFrame({"name": pd.Series(["bob", "ann", "dee"], dtype=object), "w": [0.5, 1.5, 2.5]})
    got = mgjoin.join(left, right, on="name", how="left", to="pandas", **where)
    want = left.merge(right, on="name", how="left")
    key = lambda f: sorted(map(repr, f.astype(object).where(f.notna(), None).values.tolist()))  # noqa: E731
    assert key(got) == key(want)


# --- Composite keys --------------------------------------------------------------------------------


@pytest.mark.parametrize("how", HOWS)
def test_composite_string_and_int64_keys(rng, where, how):
    pool = random_strings(rng, 30, 0, 24)
    ints = rng.integers(-2**62, 2**62, 4)
    left = [pa.array(drawn(rng, pool, 600, 0, 20, null_share=0.05)), ints[rng.integers(0, 3, 600)]]
    right = [pa.array(drawn(rng, pool, 500, 10, 30, null_share=0.05), pa.string_view()),
             pa.array(ints[rng.integers(1, 4, 500)])]
    check(left, right, how, where)
    check(left, right, how, where, nulls_equal=True, same_names=False)


@pytest.mark.parametrize("how", HOWS)
def test_composite_keys_of_two_strings(rng, where, how):
    pool = random_strings(rng, 12, 0, 10)
    left = [pa.array(drawn(rng, pool, 500, 0, 8, null_share=0.05)), pa.array(drawn(rng, pool, 500, 4, 12))]
    right = [pa.array(drawn(rng, pool, 400, 2, 10)), pa.array(drawn(rng, pool, 400, 0, 12, null_share=0.05), pa.large_string())]
    check(left, right, how, where)
    check(left, right, how, where, nulls_equal=True)
    assert mgjoin.join(dict(k0=left[0], k1=left[1]), dict(k0=right[0], k1=right[1].cast(pa.string())), on=["k0", "k1"],
                       output="count", **where) == len(reference(left, right, "inner")[0])


# --- Other types through a dictionary ----------------------------------------------------------------


@pytest.mark.parametrize("how", HOWS)
def test_decimal128_and_256_and_odd_fixed_size_binary_keys(rng, where, how):
    decimals = [Decimal(int(i)).scaleb(-3) for i in rng.integers(-10**12, 10**12, 40)]
    odd = [bytes([i, 0, i % 3]) for i in range(40)]
    wide = [bytes(16 - len(str(i))) + str(i).encode() for i in range(40)]
    for pool, t in ((decimals, pa.decimal128(20, 3)), (decimals, pa.decimal256(50, 3)), (odd, pa.binary(3)),
                    (wide, pa.binary(16))):
        left = pa.array(drawn(rng, pool, 300, 0, 30, null_share=0.1), t)
        right = pa.array(drawn(rng, pool, 200, 10, 40, null_share=0.1), t)
        check([left], [right], how, where, duck=t.bit_width <= 128)  # DuckDB has no decimal256


def test_decimals_of_one_scale_join_across_widths(where):
    left = pa.table({"k": pa.array([Decimal("1.25"), Decimal("-7.50"), None, Decimal("3.00")], pa.decimal128(30, 2))})
    right = pa.table({"k": pa.array([Decimal("1.25"), Decimal("3.00"), Decimal("9.99")], pa.decimal64(10, 2)),
                      "w": [1, 2, 3]})
    got = mgjoin.join(left, right, on="k", how="full", **where)
    assert got.schema.field("k").type == pa.decimal128(30, 2)
    assert sorted(map(repr, got.to_pylist())) == sorted(map(repr, [
        {"k": Decimal("1.25"), "w": 1}, {"k": Decimal("3.00"), "w": 2}, {"k": Decimal("-7.50"), "w": None},
        {"k": None, "w": None}, {"k": Decimal("9.99"), "w": 3}]))
    got = mgjoin.join(right, left, left_on="k", right_on="k", how="semi", **where)
    assert got.schema.field("k").type == pa.decimal64(10, 2) and got.column("w").to_pylist() == [1, 2]


DECIMAL_PAIRS = [(pa.decimal128(12, 3), pa.decimal128(30, 3)), (pa.decimal64(15, 3), pa.decimal128(38, 3)),
                 (pa.decimal256(45, 3), pa.decimal128(20, 3)), (pa.decimal32(9, 3), pa.decimal256(40, 3))]


@pytest.mark.parametrize("how", ["inner", "full", "semi", "anti"])
@pytest.mark.parametrize("left_type,right_type", DECIMAL_PAIRS, ids=lambda t: str(t))
def test_decimals_of_one_scale_and_different_precisions_join_as_the_references_do(rng, where, how, left_type,
                                                                                   right_type):
    """The CLI's rule too: one scale joins whatever the precisions (values at the narrower one's full
    precision included), against the dict reference and DuckDB (decimal128 on both sides)."""
    digits = min(left_type.precision, right_type.precision) - 3
    extremes = [Decimal("9" * digits + ".999"), Decimal("-" + "9" * digits + ".999"), Decimal("0.001")]
    pool = extremes + [Decimal(int(i)).scaleb(-3) for i in rng.integers(-10**min(digits, 9), 10**min(digits, 9), 40)]
    left = pa.array(drawn(rng, pool, 120, 0, 30, null_share=0.1), left_type)
    right = pa.array(drawn(rng, pool, 90, 0, len(pool), null_share=0.1), right_type)
    duck = pa.types.is_decimal128(left_type) and pa.types.is_decimal128(right_type)
    check([left], [right], how, where, same_names=False, duck=duck)
    got = mgjoin.join({"k": left}, {"k": right}, on="k", how="full", **where)
    precision = max(left_type.precision, right_type.precision)
    assert got.schema.field("k").type == (pa.decimal128 if precision <= 38 else pa.decimal256)(precision, 3)


def test_int64_codes_past_the_int32_dictionary_limit(rng, where, monkeypatch):
    from mgjoin import _dictionary_keys

    monkeypatch.setattr(_dictionary_keys, "INT32_CODES", 7)  # a dictionary of more values takes int64 codes
    pool = random_strings(rng, 40, 0, 12)
    left = pa.array(drawn(rng, pool, 300, 0, 30, null_share=0.1))
    right = pa.array(drawn(rng, pool, 200, 10, 40, null_share=0.1))
    for how in HOWS:
        check([left], [right], how, where)
        check([left, rng.integers(0, 2, 300)], [right, rng.integers(0, 2, 200)], how, where, nulls_equal=True)


def test_chunked_string_keys_and_payloads_are_not_combined(rng, where, monkeypatch):
    from mgjoin import _tables

    combined = []
    one_chunk = _tables._one_chunk
    monkeypatch.setattr(_tables, "_one_chunk", lambda pa_, array: combined.append(array.type) or one_chunk(pa_, array))
    pool = random_strings(rng, 40, 0, 12)
    left_keys = drawn(rng, pool, 300, 0, 30, null_share=0.1)
    right_keys = drawn(rng, pool, 200, 10, 40)
    payload = drawn(rng, pool, 300, 0, 40, null_share=0.1)
    parts = (0, 90, 90, 210, 300)  # an empty chunk among them

    def chunked(values, typ, bounds):
        return pa.chunked_array([pa.array(values[a:b], typ) for a, b in zip(bounds, bounds[1:])], typ)

    left = pa.table({"k": left_keys, "s": payload, "v": np.arange(300)})
    right = pa.table({"k": pa.array(right_keys, pa.large_string()), "w": np.arange(200)})
    left_chunked = pa.table({"k": chunked(left_keys, pa.string(), parts), "s": chunked(payload, pa.string(), parts),
                             "v": chunked(np.arange(300), pa.int64(), parts)})
    right_chunked = pa.table({"k": chunked(right_keys, pa.large_string(), (0, 120, 200)), "w": np.arange(200)})
    for how in HOWS:
        want = mgjoin.join(left, right, on="k", how=how, **where)
        combined.clear()
        got = mgjoin.join(left_chunked, right_chunked, on="k", how=how, **where)
        assert got.schema == want.schema, how
        # The same rows: on several GPUs the order of rows of one key follows the chunks' arrival (s23,
        # 2 H200s: the inner join's first two rows of key 'h2p' came swapped), so compare them as multisets.
        assert sorted(map(repr, got.to_pylist())) == sorted(map(repr, want.to_pylist())), how
        assert all(pa.types.is_integer(t) for t in combined), combined  # the int64 payload only, never strings


def test_the_dictionary_is_of_the_large_types_and_decodes_to_the_inputs(monkeypatch):
    from mgjoin import _dictionary_keys, _tables

    for small, large in ((pa.string(), pa.large_string()), (pa.binary(), pa.large_binary())):
        for types in ([small, small], [small, large], [pa.dictionary(pa.int32(), small), small]):
            assert _dictionary_keys._value_type(types) == large
        left = _tables.Column(None, arrow=pa.chunked_array([pa.array([b"a", b"bb", None], small)] * 2))
        right = _tables.Column(None, arrow=pa.array([b"bb", b"ccc"], small))
        meta = ({"k": left}, {"k": right})
        _dictionary_keys.encode_keys((["k"], ["k"]), meta, ({}, {}))
        assert meta[0]["k"].dictionary.type == large
        # An output of 32-bit offsets past OFFSET32_BYTES is chunks of the input's type, each within it.
        monkeypatch.setattr(_dictionary_keys, "OFFSET32_BYTES", 4)
        codes = pa.array(meta[0]["k"].values, mask=~meta[0]["k"].valid)
        want = pa.array([b"a", b"bb", None] * 2, small).to_pylist()
        out = _dictionary_keys.decoded(meta[0]["k"], codes)
        assert out.type == small and isinstance(out, pa.ChunkedArray)
        assert out.to_pylist() == want
        assert all(len(c.buffers()[2] or b"") <= 4 for c in out.chunks if c.null_count < len(c)), out
        monkeypatch.setattr(_dictionary_keys, "OFFSET32_BYTES", 2**31 - 1)
        out = _dictionary_keys.decoded(meta[0]["k"], codes)
        assert out.type == small and isinstance(out, pa.Array) and out.to_pylist() == want


def test_lowered_offset_limit_joins_as_the_references_do(rng, where, monkeypatch):
    from mgjoin import _dictionary_keys

    monkeypatch.setattr(_dictionary_keys, "OFFSET32_BYTES", 50)  # decoded string keys as chunks of 50 bytes at most
    pool = random_strings(rng, 40, 0, 12)
    left = pa.array(drawn(rng, pool, 300, 0, 30, null_share=0.1))
    right = pa.array(drawn(rng, pool, 200, 10, 40, null_share=0.1))
    for how in HOWS:
        check([left], [right], how, where)
        check([left], [right], how, where, nulls_equal=True, same_names=False)


# --- Errors ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("left,right,why", [
    (pa.array(["a"]), pa.array([b"a"]), ": string and binary keys do not compare (cast one side)"),
    (pa.array(["a"], pa.string_view()), pa.array([b"a"], pa.large_binary()), ": string and binary keys do not compare"),
    (pa.array(["a"]).dictionary_encode(), pa.array([b"a"]), ": string and binary keys do not compare"),
    (pa.array(["a"]), pa.array([b"abc"], pa.binary(3)), ": string and binary keys do not compare"),
    (pa.array(["a"]), pa.array([1]), ""), (pa.array([1], pa.int32()), pa.array(["a"], pa.large_string()), ""),
    (pa.array([b"abc"], pa.binary(3)), pa.array([b"abc"]), ""), (pa.array([b"abc"], pa.binary(3)), pa.array([b"abcd"], pa.binary(4)), ""),
    (pa.array([Decimal("1.5")], pa.decimal128(20, 1)), pa.array([Decimal("1.50")], pa.decimal128(20, 2)),
     ": decimals of different scales"),
    (pa.array([Decimal("1.5")], pa.decimal256(40, 1)), pa.array(["1.5"]), ""),
    (pa.array([Decimal("1.50")], pa.decimal32(9, 2)), pa.array([Decimal("1.500")], pa.decimal256(40, 3)),
     ": decimals of different scales (cast one side to the other's)"),
    (pa.array([Decimal("1.50")], pa.decimal128(10, 2)), pa.array([Decimal("1.5")], pa.decimal64(12, 1)),
     ": decimals of different scales"),
])
def test_keys_of_kinds_that_do_not_compare_name_both_columns(left, right, why):
    message = f"key types differ: left column 'a' is {left.type}, right column 'b' is {right.type}{why}"
    with pytest.raises(ValueError, match="^" + re.escape(message)):
        mgjoin.join({"a": left}, {"b": right}, left_on="a", right_on="b", gpus=0)


def test_numpy_and_pandas_strings_against_numbers_are_refused():
    with pytest.raises(ValueError, match=r"^key types differ: left column 'k' is string, right column 'k' is int64$"):
        mgjoin.join({"k": np.array(["1", "2"])}, {"k": np.array([1, 2])}, on="k", gpus=0)
    with pytest.raises(ValueError, match=r"^key types differ: left column 'k' is float64, right column 'k' is binary$"):
        mgjoin.join({"k": np.array([1.0])}, {"k": np.array([b"1"])}, on="k", gpus=0)
    with pytest.raises(ValueError, match=r"key types differ: left column 'k' is large_string, right column 'k' is binary: string and"):
        mgjoin.join(pd.DataFrame({"k": ["a"]}), {"k": np.array([b"a"])}, on="k", gpus=0)


def test_a_parquet_file_whose_string_key_reads_back_as_a_dictionary(tmp_path, where):
    import pyarrow.parquet as pq

    keys = pa.array(["north", "south", None, "east", "north", "west"])
    pq.write_table(pa.table({"region": keys.dictionary_encode(), "v": np.arange(6)}), tmp_path / "t.parquet")
    right = {"region": pa.array(["south", "north", "up"], pa.large_string()), "w": np.array([1, 2, 3])}
    got = mgjoin.join(tmp_path / "t.parquet", right, on="region", how="left", **where)
    assert pa.types.is_dictionary(pq.read_table(tmp_path / "t.parquet").schema.field("region").type)
    assert got.schema.field("region").type == pa.large_string()  # a category of strings and strings
    assert sorted(map(repr, got.to_pylist())) == sorted(map(repr, [
        {"region": "north", "v": 0, "w": 2}, {"region": "south", "v": 1, "w": 1}, {"region": None, "v": 2, "w": None},
        {"region": "east", "v": 3, "w": None}, {"region": "north", "v": 4, "w": 2}, {"region": "west", "v": 5, "w": None}]))
    semi = mgjoin.join(tmp_path / "t.parquet", right, on="region", how="semi", **where)
    assert semi.schema.field("region").type == pq.read_table(tmp_path / "t.parquet").schema.field("region").type
    assert semi.column("v").to_pylist() == [0, 1, 4]


@pytest.mark.parametrize("how", ["inner", "left", "full", "semi", "anti"])
def test_polars_frames_whose_strings_come_as_string_view(rng, where, how):
    pl = pytest.importorskip("polars")
    pool = random_strings(rng, 30, 0, 20)
    left = pl.DataFrame({"k": drawn(rng, pool, 200, 0, 20, null_share=0.1), "v": np.arange(200)})
    right = pl.DataFrame({"k": drawn(rng, pool, 150, 10, 30, null_share=0.1), "w": np.arange(150)})
    got = mgjoin.join(left, right, on="k", how=how, to="polars", **where)
    options = {"coalesce": True} if how == "full" else {}
    want = left.join(right, on="k", how=how, **options)
    key = lambda frame: sorted(map(repr, frame.rows()))  # noqa: E731
    assert got.columns == want.columns and key(got) == key(want)
